//! Events of records kept in files outside the store: a draft file's
//! applied edit or restored version, a deleted draft, an edited prompt or
//! setting, a chat session created, renamed, deleted or made private.
//!
//! Owns [`RecordChange`] (what such an event says changed, the state the
//! record was left in, and the inverse captured when it was written) and
//! [`Store::record_event`], which appends one such event — with, for a
//! prompt, its previous text as a kept copy — in one durable batch.
//!
//! The file is the truth for these records, and a file and a fjall batch
//! cannot be written atomically together. So the rule is: the file write
//! happens first and is what counts; the event is appended right after it
//! succeeds. A crash between the two loses the event, never the change,
//! and an append that fails is logged and reported to the person who made
//! the change (the caller's duty; see `app::records`) — it is never
//! swallowed. These events have no `before`/`after` [`DocState`]: the
//! replay audit checks the store's own contents, not files it does not
//! hold.
//! Must not: write or read the files themselves (the features own them),
//! decide whether an event can be undone (`kb::undo` with the app's help),
//! or keep a record's text beyond what undo needs (only a prompt's
//! previous text, until `history.keep_days`).
//!
//! [`DocState`]: super::DocState

use fjall::PersistMode;
use serde::{Deserialize, Serialize};

use super::events::{kept_key, now, Cause, Event, EventId, EventKind, Kept, KeptChunk, LogPuts, NEXT_EVENT};
use super::{be, Metadata, Store, StoreError};

/// What a record event changed, and how it is taken back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RecordChange {
    /// One line for a person: what changed ("2 of 3 suggested changes to
    /// chapter.md", "from \"Old\" to \"New\"").
    pub detail: String,
    /// What the record holds after the change, to tell whether something
    /// changed it since: a draft file's content hash, a session's title, a
    /// setting's value as written, a prompt's content hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The inverse state, captured when the change was written: the saved
    /// version of a draft file holding its text from before, a session's
    /// previous title, a setting's previous value. (A prompt's previous
    /// text is a kept copy instead: it can be long.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inverse: Option<String>,
    /// Why this change cannot be undone at all, when that was clear when it
    /// was written (a deleted draft's files are gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_undoable: Option<String>,
    /// The inverse is a setting's default, not a value the user had
    /// written: undo removes the key from the file rather than pin the
    /// default there (so a later default still reaches the user).
    #[serde(default, skip_serializing_if = "is_false")]
    pub inverse_is_default: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A record event to append: everything but its id, time and actor.
#[derive(Debug, Clone)]
pub struct NewRecordEvent {
    pub kind: EventKind,
    /// `draft:ID/FILE`, `draft:ID`, `prompt:NAME`, `setting:KEY`,
    /// `session:ID`: an undo is refused while a later event has the same key.
    pub key: String,
    pub title: String,
    /// `draft`, `prompt`, `setting` or `session`.
    pub doc_type: String,
    /// Kept from a cloud model's view of the log.
    pub private: bool,
    pub change: RecordChange,
    /// The previous text to keep for undo (a prompt's), if any; kept only
    /// when the cause keeps copies.
    pub kept_text: Option<Vec<u8>>,
}

impl Store {
    /// Append one record event by `cause` (whose `undo_of` marks an undo),
    /// with its kept copy, in one durable batch. Returns its id.
    pub fn record_event(&self, new: NewRecordEvent, cause: &Cause) -> Result<EventId, StoreError> {
        if !new.kind.is_record() {
            return Err(super::events::corrupt(
                "events",
                format!("{} is not an event of a record kept in a file", new.kind.as_str()),
            ));
        }
        self.writing(|| {
            let h = self.h()?;
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            let id = self.meta_u64(NEXT_EVENT)?.max(1);
            let kept = match &new.kept_text {
                None => Kept::Nothing,
                Some(_) if !cause.keep_copies => Kept::Off,
                Some(text) => {
                    let copy = KeptChunk {
                        id: 0,
                        gen: 0,
                        record: text.clone(),
                        embed: Vec::new(),
                    };
                    b.insert(&h.kept, kept_key(id, 0), copy.encode());
                    Kept::Copies {
                        chunks: 1,
                        bytes: text.len() as u64,
                        gen: 0,
                    }
                }
            };
            let event = Event {
                id,
                at: now(),
                seq: self.seq()?,
                actor: cause.actor.clone(),
                kind: new.kind,
                key: new.key,
                title: new.title,
                doc_type: new.doc_type,
                private: new.private,
                before: None,
                after: None,
                undo_of: cause.undo_of,
                fields: Metadata::new(),
                prior: Vec::new(),
                kept,
                record: Some(new.change),
            };
            let mut puts = LogPuts::default();
            puts.event(&mut b, &h, &event)?;
            self.grow_log_size(&mut b, &puts.size, 1)?;
            puts.insert(&mut b, &h);
            b.insert(&h.meta, NEXT_EVENT, be(id + 1).as_slice());
            b.commit()?;
            Ok(id)
        })
    }
}
