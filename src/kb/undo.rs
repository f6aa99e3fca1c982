//! Undo that appends, the timeline and the replay audit, over the store's
//! event log (`store::events`).
//!
//! Owns the rules of undo: which event can be undone, the reason when one
//! cannot, and that an undo is itself a new event (`undo_of` names the
//! event it reverts) — the log is never rewritten. Restoring a removed or
//! replaced document puts its kept chunks and vectors back verbatim, so
//! nothing is embedded and no model or network is asked; a metadata edit is
//! reverted from the previous values its event carries.
//! A record kept in a file (a draft, a prompt, a setting, a chat session;
//! `store::records`) is out of this module's reach: its events go to the
//! [`RecordUndo`] the app passes in, which says whether one can be undone
//! and does it — the rules about later events and retention stay here.
//! Must not: undo a change to a document rebuilt from a file (a vault
//! note, an indexed chat: the file is the truth, and the next sync would
//! undo the undo), undo past a later change to the same document, or call
//! a model.

use serde::Serialize;

use crate::store::{
    Actor, AuditReport, ChunkRecord, Event, EventId, EventKind, FactId, Kept, KeptChunk, LogSize, Metadata,
};

use super::{Kb, KbError, Result};

/// What an undo does to the library.
enum Plan {
    /// Put each group's previous metadata back.
    Meta(Vec<(Vec<u64>, Metadata)>),
    /// Remove what the event added.
    Remove(Vec<u64>),
    /// Put the kept chunks back, removing what is there now.
    Restore(Vec<KeptChunk>, Vec<u64>),
    /// Put a memory fact's kept record back (None: forget it again).
    Fact(FactId, Option<Vec<u8>>),
    /// A record kept in a file: the [`RecordUndo`] does it.
    Record,
}

/// Undoes the events of records kept in files (`EventKind::is_record`),
/// which the app reaches and the knowledge base does not.
pub trait RecordUndo {
    /// Why event `e` cannot be undone now (None: it can). Called only when
    /// no later event has its key and its kept copy (if any) is in retention.
    fn check(&self, e: &Event) -> Result<Option<String>>;
    /// Undo `e`: write the file back and append the undo's event with
    /// `cause` (whose `undo_of` is `e`). Returns one line for a person.
    fn undo(&self, e: &Event, cause: &crate::store::Cause) -> Result<String>;
}

/// No file records within reach (the knowledge base on its own: tests,
/// the crash harness).
pub struct NoRecords;

impl RecordUndo for NoRecords {
    fn check(&self, _: &Event) -> Result<Option<String>> {
        Ok(Some(
            "it changed a file outside the knowledge base, which only the app can put back — use `jarvis undo` or the web app's Timeline".into(),
        ))
    }

    fn undo(&self, e: &Event, _: &crate::store::Cause) -> Result<String> {
        Err(KbError::UndoRefused {
            id: e.id,
            reason: "only the app can undo a change to a file".into(),
        })
    }
}

/// What [`Kb::undo`] did.
#[derive(Debug, Clone, Serialize)]
pub struct Undone {
    /// The event undone.
    pub of: Event,
    /// The new event that records the undo.
    pub event: Option<EventId>,
    /// One line for a person.
    pub summary: String,
}

/// Which events [`Kb::timeline`] lists.
#[derive(Debug, Clone, Default)]
pub struct LogQuery {
    /// Only events at or after this RFC 3339 time (a date works too).
    pub since: Option<String>,
    /// Only this actor kind: cli, web, agent, job, jarvis (`user` means
    /// cli, web and a confirmed agent).
    pub actor: Option<String>,
    /// Only this kind: an [`EventKind`]'s name (`added`, `draft_restored`,
    /// …), or `undo` for undos.
    pub kind: Option<String>,
    /// Leave out private documents' events (a cloud model's view).
    pub public_only: bool,
    pub limit: usize,
}

/// What a kind filter may name: every [`EventKind`], and `undo`.
pub fn kind_filters() -> Vec<&'static str> {
    EventKind::ALL.iter().map(|k| k.as_str()).chain(["undo"]).collect()
}

/// One row of the timeline: an event and whether it can be undone now.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineRow {
    #[serde(flatten)]
    pub event: Event,
    pub undoable: bool,
    /// Why not, when it cannot be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

fn name(e: &Event) -> String {
    if e.title.is_empty() {
        e.key.clone()
    } else {
        format!("\"{}\"", e.title)
    }
}

fn matches(q: &LogQuery, e: &Event) -> bool {
    let actor_ok = match q.actor.as_deref() {
        None => true,
        Some("user") => e.actor.is_user(),
        Some(a) => e.actor.kind() == a,
    };
    let kind_ok = match q.kind.as_deref() {
        None => true,
        Some("undo") => e.undo_of.is_some(),
        Some(k) => e.kind.as_str() == k,
    };
    actor_ok && kind_ok && !(q.public_only && e.private)
}

impl Kb {
    /// [`Kb::timeline_with`] with no file records within reach.
    pub fn timeline(&self, q: &LogQuery) -> Result<Vec<TimelineRow>> {
        self.timeline_with(q, &NoRecords)
    }

    /// [`Kb::undo_with`] with no file records within reach.
    pub fn undo(&self, id: Option<EventId>, actor: &Actor) -> Result<Undone> {
        self.undo_with(id, actor, &NoRecords)
    }

    /// Events newest first, filtered, each with whether it can be undone
    /// (`files` answers for records kept in files).
    pub fn timeline_with(&self, q: &LogQuery, files: &dyn RecordUndo) -> Result<Vec<TimelineRow>> {
        let mut later = std::collections::BTreeMap::new();
        let mut rows = Vec::new();
        let mut failed = None;
        self.store.scan_events_rev(|e| {
            if q.since.as_deref().is_some_and(|s| e.at.as_str() < s) {
                return false;
            }
            if matches(q, &e) {
                let why_not = match later.get(&e.key) {
                    Some(&n) => Some(conflict_reason(&e, n)),
                    None => match self.plan(&e, files) {
                        Ok(_) => None,
                        Err(KbError::UndoRefused { reason, .. }) => Some(reason),
                        Err(other) => {
                            failed = Some(other);
                            return false;
                        }
                    },
                };
                rows.push(TimelineRow {
                    undoable: why_not.is_none(),
                    why_not,
                    event: e.clone(),
                });
            }
            later.entry(e.key).or_insert(e.id);
            q.limit == 0 || rows.len() < q.limit
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }

    /// Undo event `id`, or with none the newest change a person made (or
    /// confirmed) that can be undone. The undo is a new event; refused with
    /// the reason when a later change to the document conflicts, the kept
    /// copies are gone, or the document is rebuilt from its file. `files`
    /// undoes changes to records kept in files.
    pub fn undo_with(&self, id: Option<EventId>, actor: &Actor, files: &dyn RecordUndo) -> Result<Undone> {
        self.check_model()?;
        let _w = self.write_lock();
        let (event, plan) = match id {
            Some(id) => {
                let e = self
                    .store
                    .event(id)?
                    .ok_or_else(|| KbError::NotFound(format!("no event {id} — `jarvis log` lists the events")))?;
                if let Some(n) = self.later_event(&e)? {
                    return Err(KbError::UndoRefused {
                        id,
                        reason: conflict_reason(&e, n),
                    });
                }
                let plan = self.plan(&e, files)?;
                (e, plan)
            }
            None => self.last_undoable(files)?,
        };
        let mut cause = self.cause(actor);
        cause.undo_of = Some(event.id);
        let summary = match plan {
            Plan::Record => files.undo(&event, &cause)?,
            Plan::Meta(groups) => {
                let refs: Vec<(&[u64], &Metadata)> = groups.iter().map(|(i, f)| (i.as_slice(), f)).collect();
                self.update_metadata_locked(&refs, &cause)?;
                format!("put back the metadata event {} changed on {}", event.id, name(&event))
            }
            Plan::Remove(ids) => {
                self.settle_locked()?;
                let (seq, _) = self.store.restore(Vec::new(), &ids, &cause)?;
                self.apply_to_indexes(seq, &ids, Vec::new())?;
                format!(
                    "removed {} again ({} chunks), as before event {}",
                    name(&event),
                    ids.len(),
                    event.id
                )
            }
            Plan::Fact(fact, raw) => {
                let back = raw.is_some();
                self.store.restore_fact(fact, raw, &cause)?;
                if back {
                    format!(
                        "put back the memory fact {} as it was before event {}",
                        name(&event),
                        event.id
                    )
                } else {
                    format!(
                        "forgot the memory fact {} again, as before event {}",
                        name(&event),
                        event.id
                    )
                }
            }
            Plan::Restore(mut kept, ids) => {
                self.settle_locked()?;
                self.keep_cite_keys_unique(&mut kept, &ids)?;
                let n = kept.len();
                let (seq, restored) = self.store.restore(kept, &ids, &cause)?;
                self.apply_to_indexes(seq, &ids, restored)?;
                format!(
                    "restored {} ({n} chunks with their vectors, nothing re-embedded), as before event {}",
                    name(&event),
                    event.id
                )
            }
        };
        let mut new = None;
        self.store.scan_events_rev(|e| {
            if e.undo_of == Some(event.id) {
                new = Some(e.id);
            }
            new.is_none() && e.id > event.id
        })?;
        if let Err(e) = self.store.drop_expired_copies(self.settings.keep_days) {
            tracing::warn!(error = %e, "could not drop kept copies past history.keep_days yet");
        }
        Ok(Undone {
            of: event,
            event: new,
            summary,
        })
    }

    /// The newest event by a person that can be undone now.
    fn last_undoable(&self, files: &dyn RecordUndo) -> Result<(Event, Plan)> {
        let mut later = std::collections::BTreeSet::new();
        let mut found = None;
        let mut first_refusal: Option<KbError> = None;
        let mut failed = None;
        self.store.scan_events_rev(|e| {
            let fresh = later.insert(e.key.clone());
            if !fresh || !e.actor.is_user() || e.undo_of.is_some() {
                return true;
            }
            match self.plan(&e, files) {
                Ok(plan) => {
                    found = Some((e, plan));
                    false
                }
                Err(r @ KbError::UndoRefused { .. }) => {
                    first_refusal.get_or_insert(r);
                    true
                }
                Err(other) => {
                    failed = Some(other);
                    false
                }
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        found.ok_or_else(|| match first_refusal {
            Some(KbError::UndoRefused { id, reason }) => KbError::NothingToUndo(format!(
                "nothing to undo: your last change (event {id}) cannot be undone: {reason}"
            )),
            _ => KbError::NothingToUndo(
                "nothing to undo: no change of yours is in the log — `jarvis log` lists every event".into(),
            ),
        })
    }

    /// The first event after `e` on the same document.
    fn later_event(&self, e: &Event) -> Result<Option<EventId>> {
        let mut found = None;
        self.store.scan_events(e.id + 1, |later| {
            if later.key == e.key {
                found = Some(later.id);
            }
            found.is_none()
        })?;
        Ok(found)
    }

    /// How event `e` would be undone now, or why it cannot be (assuming
    /// no later event touched its document; the callers check that).
    fn plan(&self, e: &Event, files: &dyn RecordUndo) -> Result<Plan> {
        let refuse = |reason: String| KbError::UndoRefused { id: e.id, reason };
        if e.kind.is_record() {
            return self.plan_record(e, files);
        }
        if e.kind == EventKind::Present {
            return Err(refuse(format!(
                "it only records that {} was in the library when the log began; there is no change to undo",
                name(e)
            )));
        }
        // A note or an indexed chat is rebuilt from its file by the next
        // sync, whatever an undo here did: the file is the truth.
        if crate::store::events::from_file(&e.doc_type) {
            return Err(refuse(from_file_reason(e)));
        }
        if self.store.doc_state(&e.key)? != e.after {
            return Err(refuse(format!(
                "{} is no longer what event {} left in the library — `jarvis kb audit` shows what differs",
                name(e),
                e.id
            )));
        }
        if e.kind.is_memory() {
            return self.plan_fact(e);
        }
        if e.kind == EventKind::MetadataSet {
            if e.prior.is_empty() {
                return Err(refuse(format!(
                    "it records chunks that joined {} by an edit of another document's metadata; undo that edit (the event beside it in `jarvis log`)",
                    name(e)
                )));
            }
            return Ok(Plan::Meta(
                e.prior.iter().map(|p| (p.ids.clone(), p.fields.clone())).collect(),
            ));
        }
        let current = self.store.doc_ids(&e.key)?;
        if e.before.is_none() {
            return Ok(Plan::Remove(current));
        }
        match e.kept {
            Kept::Copies { chunks, gen, .. } => {
                let keep_days = self.settings.keep_days;
                if keep_days == 0 {
                    return Err(refuse(format!(
                        "kept copies are off (history.keep_days = 0), so {} cannot be restored without adding it again",
                        name(e)
                    )));
                }
                if age_days(&e.at) >= i64::from(keep_days) {
                    return Err(refuse(format!(
                        "it is past retention: event {} is {} days old and removed chunks are kept for history.keep_days = {keep_days} days; add {} again instead",
                        e.id,
                        age_days(&e.at),
                        name(e)
                    )));
                }
                let kept = self.store.kept_chunks(e.id)?;
                if kept.is_empty() {
                    return Err(refuse(format!(
                        "its kept copies were dropped after history.keep_days ({keep_days} days); add {} again instead",
                        name(e)
                    )));
                }
                if kept.len() as u64 != chunks {
                    return Err(refuse(format!(
                        "only {} of its {chunks} kept chunks are there — `jarvis kb audit`",
                        kept.len()
                    )));
                }
                if gen != self.store.generation()? {
                    return Err(refuse(format!(
                        "the library was re-indexed since, so the kept vectors are from another embedding; add {} again instead",
                        name(e)
                    )));
                }
                Ok(Plan::Restore(kept, current))
            }
            Kept::FromFile => Err(refuse(from_file_reason(e))),
            Kept::Off => Err(refuse(format!(
                "nothing was kept when it was written (history.keep_days was 0); add {} again instead",
                name(e)
            ))),
            Kept::Nothing => Err(refuse("it kept nothing to restore".to_string())),
        }
    }

    /// How a memory fact's event is undone: an acceptance by forgetting the
    /// fact, an edit or a forgetting by putting back the record it kept.
    fn plan_fact(&self, e: &Event) -> Result<Plan> {
        let refuse = |reason: String| KbError::UndoRefused { id: e.id, reason };
        let Some(id) = crate::store::fact_id_of(&e.key) else {
            return Err(refuse(format!("{} names no memory fact", e.key)));
        };
        if e.before.is_none() {
            return Ok(Plan::Fact(id, None));
        }
        let keep_days = self.settings.keep_days;
        match e.kept {
            Kept::Copies { .. } if keep_days == 0 || age_days(&e.at) >= i64::from(keep_days) => Err(refuse(format!(
                "it is past retention: the previous text of {} was kept for history.keep_days = {keep_days} days; tell Jarvis the fact again instead",
                name(e)
            ))),
            Kept::Copies { .. } => match self.store.kept_chunks(e.id)?.into_iter().next() {
                Some(k) => Ok(Plan::Fact(id, Some(k.record))),
                None => Err(refuse(format!(
                    "the previous text of {} was dropped after history.keep_days ({keep_days} days); tell Jarvis the fact again instead",
                    name(e)
                ))),
            },
            _ => Err(refuse(format!(
                "nothing was kept when it was written (history.keep_days was 0); tell Jarvis the fact {} again instead",
                name(e)
            ))),
        }
    }

    /// Whether a record kept in a file can be undone: what its event said
    /// when it was written, the retention of a kept copy, then the app.
    fn plan_record(&self, e: &Event, files: &dyn RecordUndo) -> Result<Plan> {
        let refuse = |reason: String| KbError::UndoRefused { id: e.id, reason };
        if let Some(why) = e.record.as_ref().and_then(|r| r.not_undoable.clone()) {
            return Err(refuse(why));
        }
        let keep_days = self.settings.keep_days;
        match e.kept {
            Kept::Copies { .. } if keep_days == 0 || age_days(&e.at) >= i64::from(keep_days) => {
                return Err(refuse(format!(
                    "it is past retention: the previous text was kept for history.keep_days = {keep_days} days"
                )))
            }
            Kept::Copies { .. } if self.store.kept_chunks(e.id)?.is_empty() => {
                return Err(refuse(format!(
                    "the previous text was dropped after history.keep_days ({keep_days} days)"
                )))
            }
            Kept::Off => {
                return Err(refuse(
                    "nothing was kept when it was written (history.keep_days was 0)".into(),
                ))
            }
            _ => {}
        }
        match files.check(e)? {
            Some(why) => Err(refuse(why)),
            None => Ok(Plan::Record),
        }
    }

    /// A restored paper keeps its citation key unless another paper took
    /// it since; then it gets the next free one, as a new paper would, so
    /// no two papers share a key. Only a re-keyed record is rewritten: the
    /// others go back byte for byte.
    fn keep_cite_keys_unique(&self, kept: &mut [KeptChunk], delete: &[u64]) -> Result<()> {
        use crate::kb::cite::CITE_KEY;
        let unreadable = |e: serde_json::Error| crate::store::StoreError::Corrupt {
            id: "kept".into(),
            reason: e.to_string(),
        };
        let mut records: Vec<ChunkRecord> = kept
            .iter()
            .map(|k| serde_json::from_slice(&k.record).map_err(unreadable))
            .collect::<std::result::Result<_, _>>()?;
        let mut staged: Vec<crate::store::NewChunk> = records
            .iter()
            .map(|r| crate::store::NewChunk {
                text: String::new(),
                embed_text: String::new(),
                meta: r.meta.clone(),
                vector: Vec::new(),
            })
            .collect();
        self.stamp_cite_keys(&mut staged, delete)?;
        for ((k, r), s) in kept.iter_mut().zip(records.iter_mut()).zip(staged) {
            if r.meta.get(CITE_KEY) != s.meta.get(CITE_KEY) {
                r.meta = s.meta;
                k.record = serde_json::to_vec(r).map_err(unreadable)?;
            }
        }
        Ok(())
    }

    /// Drop the kept copies older than `history.keep_days` (the daily
    /// `history_gc` job; opening the store and each undo do it too).
    /// Returns how many events lost theirs, and the days in effect.
    pub fn expire_kept_copies(&self) -> Result<(usize, u32)> {
        let _w = self.write_lock();
        let keep_days = self.settings.keep_days;
        Ok((self.store.drop_expired_copies(keep_days)?, keep_days))
    }

    /// Append the event of a change `actor` made to a record kept in a
    /// file, right after the file was written (see `store::records`).
    pub fn record_event(&self, new: crate::store::NewRecordEvent, actor: &Actor) -> Result<EventId> {
        let _w = self.write_lock();
        Ok(self.store.record_event(new, &self.cause(actor))?)
    }

    /// The same from inside [`RecordUndo::undo`], which runs under the
    /// write lock an undo holds; `cause` names the event undone.
    pub fn record_undo_event(&self, new: crate::store::NewRecordEvent, cause: &crate::store::Cause) -> Result<EventId> {
        Ok(self.store.record_event(new, cause)?)
    }

    /// The newest event of document `key`.
    pub fn last_event_of(&self, key: &str) -> Result<Option<EventId>> {
        let mut found = None;
        self.store.scan_events_rev(|e| {
            if e.key == key {
                found = Some(e.id);
            }
            found.is_none()
        })?;
        Ok(found)
    }

    /// Replay the log and compare it with the store.
    pub fn audit(&self) -> Result<AuditReport> {
        // No commit between reading the log and reading the records.
        let _w = self.write_lock();
        Ok(self.store.audit_log()?)
    }

    /// How big the log and its kept copies are.
    pub fn log_size(&self) -> Result<LogSize> {
        Ok(self.store.log_size()?)
    }
}

/// Why an event of a document rebuilt from its file cannot be undone here.
fn from_file_reason(e: &Event) -> String {
    format!(
        "{} is a {} rebuilt from its file ({}): the file is the truth, so change the file (or bring it back from your vault's history or trash) and the next sync follows; nothing was kept here",
        name(e),
        if e.doc_type.is_empty() { "document" } else { &e.doc_type },
        e.key
    )
}

/// Why `e` cannot be undone when event `later` changed its document since.
fn conflict_reason(e: &Event, later: EventId) -> String {
    let again = matches!(e.kind, EventKind::Removed);
    format!(
        "{} {} since (event {later}); undo that first, or change it by hand",
        name(e),
        if again { "was added again or changed" } else { "changed" }
    )
}

/// Whole days since an RFC 3339 time (an unreadable one counts as old).
fn age_days(at: &str) -> i64 {
    match time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339) {
        Ok(t) => (time::OffsetDateTime::now_utc() - t).whole_days(),
        Err(_) => i64::MAX,
    }
}

#[cfg(test)]
mod tests;
