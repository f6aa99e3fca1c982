//! Long-term memory facts about the user, in the `memory` keyspace, and
//! the events their changes write into the log.
//!
//! Owns the persisted form of a fact ([`Fact`], [`Provenance`]) and the one
//! write of facts ([`Store::write_fact`]): a fact's record and, when an
//! accepted fact appears, changes or goes, its event (`memory_accepted`,
//! `memory_edited`, `memory_forgotten`) land in ONE durable batch, so the
//! log and the facts cannot disagree after a crash. A forgotten or edited
//! fact's previous record is kept (like a removed chunk, in `kept`, until
//! `history.keep_days`) so an undo can put it back.
//! Must not: decide what a fact may say, who may accept one or what is
//! shown to which model (that is `memory`), or keep a fact's text anywhere
//! but its record and the kept copy undo needs (an event's title is the
//! fact's category and key, never its text).
//!
//! Layout of `memory`:
//! - `f` ++ fact id (u64 BE) → JSON [`Fact`]
//! - `x` ++ session id → RFC 3339 time the idle-session extraction read it
//!
//! A fact is a one-chunk document to the log: its key is `memory:<id>`,
//! its state one chunk whose digest is that of its stored record, so the
//! replay audit checks facts as it checks documents.

use fjall::PersistMode;
use serde::{Deserialize, Serialize};

use super::events::{chunk_digest, corrupt, digest_hex, kept_key, now, Cause, DocState, Event, EventId, EventKind};
use super::events::{Kept, KeptChunk, LogPuts, NEXT_EVENT};
use super::{be, Metadata, Store, StoreError};

/// A fact's id: allocated from `next_fact`, never reused.
pub type FactId = u64;

/// Meta key: the next fact id to give.
const NEXT_FACT: &str = "next_fact";

/// The `doc_type` of a fact's events.
pub const FACT_DOC_TYPE: &str = "memory";

/// The log key of fact `id`.
pub fn fact_key(id: FactId) -> String {
    format!("memory:{id}")
}

/// The fact id a log key names, if it names one.
pub fn fact_id_of(key: &str) -> Option<FactId> {
    key.strip_prefix("memory:")?.parse().ok()
}

/// Whether a fact waits for the user or is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactStatus {
    /// Proposed (by the agent, an extraction pass); never shown to a model.
    Pending,
    /// Accepted by the user (or by `memory.auto_accept`).
    Accepted,
}

/// Where a fact came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// `remember` (the agent during a turn), `extraction` (the idle-session
    /// pass), `import` (a Markdown file), `user` (typed in by hand).
    pub origin: String,
    /// The chat session it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The message of that session (0-based index in what the session
    /// shows) it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<u64>,
    /// When it was learned (RFC 3339, UTC).
    pub at: String,
    /// The source was private (a private session, or unknown): the fact is
    /// private, and never reaches a cloud model.
    pub private: bool,
}

/// Nothing known about the source: private, as anything unknown is.
impl Default for Provenance {
    fn default() -> Self {
        Provenance {
            origin: String::new(),
            session: None,
            message: None,
            at: String::new(),
            private: true,
        }
    }
}

/// One fact about the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub id: FactId,
    /// A broad group: `preference`, `project`, `person`, `work`, …
    pub category: String,
    /// A short name within the category (`editor`, `thesis`).
    pub key: String,
    /// The statement, one or two sentences.
    pub text: String,
    pub status: FactStatus,
    pub source: Provenance,
    /// Last change (RFC 3339, UTC).
    pub updated: String,
}

impl Fact {
    pub fn accepted(&self) -> bool {
        self.status == FactStatus::Accepted
    }

    pub fn private(&self) -> bool {
        self.source.private
    }

    /// What the log calls it: its category and key, never its text.
    pub fn title(&self) -> String {
        format!("{}: {}", self.category, self.key)
    }
}

fn fact_db_key(id: FactId) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = b'f';
    k[1..].copy_from_slice(&be(id));
    k
}

fn extracted_key(session: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(session.len() + 1);
    k.push(b'x');
    k.extend_from_slice(session.as_bytes());
    k
}

fn decode_fact(v: &[u8]) -> Result<Fact, StoreError> {
    serde_json::from_slice(v).map_err(|e| corrupt("memory", e))
}

/// An accepted fact's state in the log: one chunk, its record's digest.
fn state_of(raw: &[u8]) -> DocState {
    DocState {
        chunks: 1,
        digest: digest_hex(chunk_digest(raw)),
        content_hash: None,
    }
}

impl Store {
    /// Every fact, pending and accepted, in id order.
    pub fn facts(&self) -> Result<Vec<Fact>, StoreError> {
        let h = self.h()?;
        let mut out = Vec::new();
        for g in h.memory.prefix(b"f") {
            let (_, v) = g.into_inner()?;
            out.push(decode_fact(&v)?);
        }
        Ok(out)
    }

    /// Every accepted fact's stored record, keyed as the log keys it: what
    /// the replay audit compares with the log.
    pub(super) fn accepted_fact_records(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let h = self.h()?;
        let mut out = Vec::new();
        for g in h.memory.prefix(b"f") {
            let (_, v) = g.into_inner()?;
            let f = decode_fact(&v)?;
            if f.accepted() {
                out.push((fact_key(f.id), v.to_vec()));
            }
        }
        Ok(out)
    }

    pub fn fact(&self, id: FactId) -> Result<Option<Fact>, StoreError> {
        self.fact_raw(id)?.map(|v| decode_fact(&v)).transpose()
    }

    fn fact_raw(&self, id: FactId) -> Result<Option<Vec<u8>>, StoreError> {
        let h = self.h()?;
        Ok(h.memory.get(fact_db_key(id))?.map(|v| v.to_vec()))
    }

    /// What the store holds for fact `id`, as the log states it (None: no
    /// accepted fact).
    pub fn fact_state(&self, id: FactId) -> Result<Option<DocState>, StoreError> {
        Ok(match self.fact_raw(id)? {
            Some(raw) if decode_fact(&raw)?.accepted() => Some(state_of(&raw)),
            _ => None,
        })
    }

    /// Write `fact` (a new one when its id is 0: it gets the next id), in
    /// one durable batch with its event when an accepted fact appears or
    /// changes. Returns the fact as stored and its event, if any.
    pub fn put_fact(&self, mut fact: Fact, cause: &Cause) -> Result<(Fact, Option<EventId>), StoreError> {
        self.writing(|| {
            if fact.id == 0 {
                fact.id = self.meta_u64(NEXT_FACT)?.max(1);
            }
            let raw = serde_json::to_vec(&fact).map_err(|e| corrupt("memory", e))?;
            let event = self.write_fact(fact.id, Some(raw), cause)?;
            Ok((fact, event))
        })
    }

    /// Delete fact `id`: a pending one is simply gone (a rejection, no
    /// event); an accepted one is forgotten, with its event and (when
    /// copies are kept) its record kept for undo. Returns the event.
    pub fn delete_fact(&self, id: FactId, cause: &Cause) -> Result<Option<EventId>, StoreError> {
        self.writing(|| self.write_fact(id, None, cause))
    }

    /// Put fact `id`'s stored bytes back as they were (`None`: delete it):
    /// an undo's restore, byte for byte, so the log's digest matches again.
    pub fn restore_fact(&self, id: FactId, raw: Option<Vec<u8>>, cause: &Cause) -> Result<Option<EventId>, StoreError> {
        if let Some(r) = &raw {
            if decode_fact(r)?.id != id {
                return Err(corrupt("kept", format!("the kept record is not fact {id}")));
            }
        }
        self.writing(|| self.write_fact(id, raw, cause))
    }

    /// The one write of a fact: its record (or its removal), the next id,
    /// and the event, in one batch.
    fn write_fact(&self, id: FactId, new: Option<Vec<u8>>, cause: &Cause) -> Result<Option<EventId>, StoreError> {
        let h = self.h()?;
        let old = self.fact_raw(id)?;
        let old_fact = old.as_deref().map(decode_fact).transpose()?;
        let new_fact = new.as_deref().map(decode_fact).transpose()?;
        let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
        match &new {
            Some(raw) => b.insert(&h.memory, fact_db_key(id), raw.as_slice()),
            None => b.remove(&h.memory, fact_db_key(id)),
        }
        let next_fact = self.meta_u64(NEXT_FACT)?.max(1);
        if id >= next_fact {
            b.insert(&h.meta, NEXT_FACT, be(id + 1).as_slice());
        }
        let was = old_fact.as_ref().is_some_and(Fact::accepted);
        let is = new_fact.as_ref().is_some_and(Fact::accepted);
        let mut written = None;
        // The replay audit's tests change a fact behind the log's back.
        if (was || is) && !crate::failpoint::hit("log_skipped") {
            let key = fact_key(id);
            let before = self.log_state(&key)?;
            let after = new.as_deref().filter(|_| is).map(state_of);
            let kind = match (was, is) {
                (false, _) => EventKind::MemoryAccepted,
                (true, true) => EventKind::MemoryEdited,
                (true, false) => EventKind::MemoryForgotten,
            };
            let event_id = self.meta_u64(NEXT_EVENT)?.max(1);
            let mut kept = Kept::Nothing;
            if let (true, Some(raw)) = (was, old.as_ref()) {
                kept = if cause.keep_copies {
                    let copy = KeptChunk {
                        id,
                        gen: 0,
                        record: raw.clone(),
                        embed: Vec::new(),
                    };
                    b.insert(&h.kept, kept_key(event_id, id), copy.encode());
                    Kept::Copies {
                        chunks: 1,
                        bytes: raw.len() as u64,
                        gen: 0,
                    }
                } else {
                    Kept::Off
                };
            }
            let shown = new_fact.as_ref().filter(|_| is).or(old_fact.as_ref());
            let event = Event {
                id: event_id,
                at: now(),
                seq: self.seq()?,
                actor: cause.actor.clone(),
                kind,
                key,
                title: shown.map(Fact::title).unwrap_or_default(),
                doc_type: FACT_DOC_TYPE.into(),
                private: shown.is_none_or(Fact::private),
                before,
                after,
                undo_of: cause.undo_of,
                fields: Metadata::new(),
                prior: Vec::new(),
                kept,
                record: None,
            };
            let mut puts = LogPuts::default();
            puts.event(&mut b, &h, &event)?;
            self.grow_log_size(&mut b, &puts.size, 1)?;
            puts.insert(&mut b, &h);
            b.insert(&h.meta, NEXT_EVENT, be(event_id + 1).as_slice());
            written = Some(event_id);
        }
        b.commit()?;
        Ok(written)
    }

    /// When the idle-session extraction read session `id`, if it did.
    pub fn extracted_at(&self, session: &str) -> Result<Option<String>, StoreError> {
        let h = self.h()?;
        Ok(h.memory
            .get(extracted_key(session))?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Record that the idle-session extraction read session `id`.
    pub fn mark_extracted(&self, session: &str) -> Result<(), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            b.insert(&h.memory, extracted_key(session), now().as_bytes());
            b.commit()?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests;
