//! The history's events of chat sessions: created (the first exchange
//! saved), renamed, deleted, turned private.
//!
//! Same rule as every record kept in a file (`store::records`): the
//! session file is the truth and is written first; the event is appended
//! right after, and an append that fails is logged as an error and handed
//! back as a warning for the person who made the change — never
//! swallowed. The key is `chat:ID` (`session:ID` is the indexed chat's
//! document key, whose own events the history index writes).
//! What can be undone, and why not: a rename (its previous title is in the
//! event); never a turn to private (a session that saw private notes stays
//! private, or a cloud model could read them); never a deletion (the file
//! and its indexed exchanges are gone — Jarvis keeps no copy of a chat);
//! a creation is undone by deleting the chat, which is the human's alone.
//! Must not: write a session file (`session`, `agent` do), or put a chat's
//! text in the log (titles only, and a private chat's events are private).

use crate::kb::{Actor, EventKind, Kb, NewRecordEvent, RecordChange};

/// The log key of chat session `id`.
pub fn key(id: &str) -> String {
    format!("chat:{id}")
}

/// Append `new` by `by`; a failure is logged and returned as what to tell
/// the person who made the change.
pub(crate) fn record(kb: &Kb, new: NewRecordEvent, by: &Actor) -> Option<String> {
    let kind = new.kind.as_str();
    match kb.record_event(new, by) {
        Ok(_) => None,
        Err(e) => {
            tracing::error!(kind, error = %e, "a chat was changed but the history could not record it");
            Some(format!(
                "the chat was changed, but the history could not record it ({e}) — `jarvis kb doctor` checks the store"
            ))
        }
    }
}

fn event(kind: EventKind, id: &str, title: &str, private: bool, change: RecordChange) -> NewRecordEvent {
    NewRecordEvent {
        kind,
        key: key(id),
        title: title.to_string(),
        doc_type: "session".into(),
        private,
        change,
        kept_text: None,
    }
}

/// A session's first exchange was saved.
pub(crate) fn created(id: &str, title: &str, private: bool) -> NewRecordEvent {
    event(
        EventKind::SessionCreated,
        id,
        title,
        private,
        RecordChange {
            detail: "its first exchange saved".into(),
            not_undoable: Some(
                "a chat is taken back by deleting it, which only you do (the bin beside it in the sidebar)".into(),
            ),
            ..RecordChange::default()
        },
    )
}

/// A session's title changed from `before` to `after`.
pub(crate) fn renamed(id: &str, before: &str, after: &str, private: bool) -> NewRecordEvent {
    event(
        EventKind::SessionRenamed,
        id,
        after,
        private,
        RecordChange {
            inverse_is_default: false,
            detail: format!("from \"{before}\""),
            after: Some(after.to_string()),
            inverse: Some(before.to_string()),
            not_undoable: None,
        },
    )
}

/// A session was deleted, with its indexed exchanges.
pub(crate) fn deleted(id: &str, title: &str, private: bool) -> NewRecordEvent {
    event(
        EventKind::SessionDeleted,
        id,
        title,
        private,
        RecordChange {
            detail: "its file and its exchanges in the library".into(),
            not_undoable: Some(
                "a deleted chat's file and its indexed exchanges are gone; Jarvis keeps no copy of a chat".into(),
            ),
            ..RecordChange::default()
        },
    )
}

/// A session read a private note and is private from now on.
pub(crate) fn turned_private(id: &str, title: &str) -> NewRecordEvent {
    event(
        EventKind::SessionPrivate,
        id,
        title,
        true,
        RecordChange {
            detail: "it read a private note; its exchanges are private from now on".into(),
            not_undoable: Some("a chat that read a private note stays private, so no cloud model ever reads it".into()),
            ..RecordChange::default()
        },
    )
}

/// Record that session `s` was created (its first exchange just saved) by
/// `by` (None: Jarvis itself). A failure is logged: the turn goes on.
pub(crate) fn record_created(kb: &Kb, s: &super::Session, by: Option<&Actor>) {
    let by = by.cloned().unwrap_or(Actor::Jarvis);
    record(kb, created(&s.id, &s.title, s.private), &by);
}

/// Record that session `id` turned private during a turn: the agent's
/// doing (no confirmation asked). A failure is logged: the turn goes on.
pub(crate) fn record_turned_private(kb: &Kb, id: &str, title: &str) {
    let agent = Actor::Agent {
        session: id.to_string(),
        token: None,
    };
    record(kb, turned_private(id, title), &agent);
}
