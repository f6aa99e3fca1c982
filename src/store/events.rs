//! The event log: every change to the store's documents is one event, in
//! an append-only keyspace, written in the SAME batch as the change (so a
//! crash leaves both or neither).
//!
//! Owns the `events`, `kept` and `logstate` keyspaces, the event schema
//! ([`Event`], [`Actor`], [`DocState`], [`Kept`]) and [`LogBatch`], which a
//! commit fills while it builds its batch and turns into events at the end.
//! Must not: decide whether an event may be undone (that is
//! `kb::undo`), rewrite an event once written, or keep a document's text
//! anywhere but in the kept copies undo needs.
//!
//! Layout:
//! - `events`:   event id (u64 BE) → JSON [`Event`]. Ids come from the
//!   `next_event` meta value, which only the batch that writes the event
//!   advances, so they are monotonic and never reused.
//! - `kept`:     event id ++ chunk id (both u64 BE) → a removed chunk's
//!   stored record and its embedding, verbatim (see [`KeptChunk`]): the
//!   inverse state an undo restores, captured when the change was written,
//!   never reconstructed. Dropped after `history.keep_days`.
//! - `logstate`: document key (tagged like the `docs` keyspace) → what the
//!   log says the document holds now ([`DocState`]): the fold of every
//!   event so far, kept so an event's `before` costs one read.
//!
//! A document's state is its chunk count and a digest: the wrapping sum of
//! the first 128 bits of the sha256 of each chunk's stored record bytes
//! (which hold its id, text and metadata). A sum, so a commit moves it by
//! what it removes and adds without reading the document's other chunks,
//! and the replay audit can recompute it from the live records.

use std::collections::BTreeMap;

use fjall::OwnedWriteBatch;
use serde::{Deserialize, Serialize};

use super::{be, ChunkId, Metadata, Seq, Store, StoreError};
use crate::doc_type::DocType;

/// An event's id: monotonic, never reused.
pub type EventId = u64;

/// Meta key: the next event id to give.
pub(super) const NEXT_EVENT: &str = "next_event";

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Actor {
    /// The user, at the command line.
    Cli,
    /// The user, in the web app.
    Web,
    /// The chat agent in `session`; `token` is the confirmation the human
    /// answered (none for a change that needs no confirmation, such as a
    /// metadata correction).
    Agent { session: String, token: Option<String> },
    /// A job (`vault_refresh`, `pdf_scan`, `digest`) or Jarvis's own
    /// upkeep of derived entries (`chat_index`).
    Job { job: String },
    /// Jarvis itself: the baseline written when the log began, and its
    /// own upkeep (citation keys given to papers stored before them).
    Jarvis,
}

impl Actor {
    /// A job by name.
    pub fn job(name: &str) -> Actor {
        Actor::Job { job: name.to_string() }
    }

    /// Whether a person made (or confirmed) this change: what a bare
    /// `jarvis undo` looks for.
    pub fn is_user(&self) -> bool {
        matches!(self, Actor::Cli | Actor::Web | Actor::Agent { token: Some(_), .. })
    }

    /// The word `jarvis log --actor` filters on: cli, web, agent, job, jarvis.
    pub fn kind(&self) -> &'static str {
        match self {
            Actor::Cli => "cli",
            Actor::Web => "web",
            Actor::Agent { .. } => "agent",
            Actor::Job { .. } => "job",
            Actor::Jarvis => "jarvis",
        }
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Actor::Cli => f.write_str("you (command line)"),
            Actor::Web => f.write_str("you (web app)"),
            Actor::Agent {
                session,
                token: Some(t),
            } => {
                write!(f, "the agent in chat {session}, after your confirmation {t}")
            }
            Actor::Agent { session, token: None } => write!(f, "the agent in chat {session}"),
            Actor::Job { job } => write!(f, "job {job}"),
            Actor::Jarvis => f.write_str("Jarvis"),
        }
    }
}

/// Why a write happens: who, whether removed chunks are kept for undo, and
/// which event it undoes, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub actor: Actor,
    /// Keep removed and replaced chunks (with their vectors) for undo
    /// (`history.keep_days` > 0). Never for documents rebuilt from a file.
    pub keep_copies: bool,
    pub undo_of: Option<EventId>,
}

impl Cause {
    pub fn new(actor: Actor, keep_copies: bool) -> Cause {
        Cause {
            actor,
            keep_copies,
            undo_of: None,
        }
    }
}

/// What an event did to its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The document was in the store when the log began (no change).
    Present,
    Added,
    /// New content under the same key (the old chunks went in the same commit).
    Replaced,
    Removed,
    /// Metadata only: no text or vector changed.
    MetadataSet,
    /// A memory fact was accepted (see `store::memory`).
    MemoryAccepted,
    /// An accepted memory fact's text, category or key changed.
    MemoryEdited,
    /// An accepted memory fact was forgotten.
    MemoryForgotten,
    /// Suggested changes to a draft file were applied (see `store::records`
    /// for these file-kept records' events).
    DraftEditApplied,
    /// A draft file was put back to one of its saved versions.
    DraftRestored,
    /// A whole draft was deleted (by the user, or the retention sweep).
    DraftDeleted,
    /// A prompt file was edited or reset to the shipped text.
    PromptEdited,
    /// A setting in `config.toml` was written.
    SettingEdited,
    /// A chat session was created.
    SessionCreated,
    /// A chat session's title changed.
    SessionRenamed,
    /// A chat session was deleted.
    SessionDeleted,
    /// A chat session was made private.
    SessionPrivate,
}

impl EventKind {
    /// Every kind, in the order a filter lists them.
    pub const ALL: [EventKind; 17] = [
        EventKind::Added,
        EventKind::Replaced,
        EventKind::Removed,
        EventKind::MetadataSet,
        EventKind::Present,
        EventKind::MemoryAccepted,
        EventKind::MemoryEdited,
        EventKind::MemoryForgotten,
        EventKind::DraftEditApplied,
        EventKind::DraftRestored,
        EventKind::DraftDeleted,
        EventKind::PromptEdited,
        EventKind::SettingEdited,
        EventKind::SessionCreated,
        EventKind::SessionRenamed,
        EventKind::SessionDeleted,
        EventKind::SessionPrivate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Present => "present",
            EventKind::Added => "added",
            EventKind::Replaced => "replaced",
            EventKind::Removed => "removed",
            EventKind::MetadataSet => "metadata_set",
            EventKind::MemoryAccepted => "memory_accepted",
            EventKind::MemoryEdited => "memory_edited",
            EventKind::MemoryForgotten => "memory_forgotten",
            EventKind::DraftEditApplied => "draft_edit_applied",
            EventKind::DraftRestored => "draft_restored",
            EventKind::DraftDeleted => "draft_deleted",
            EventKind::PromptEdited => "prompt_edited",
            EventKind::SettingEdited => "setting_edited",
            EventKind::SessionCreated => "session_created",
            EventKind::SessionRenamed => "session_renamed",
            EventKind::SessionDeleted => "session_deleted",
            EventKind::SessionPrivate => "session_private",
        }
    }

    /// An event of a record kept in a file (a draft, a prompt, a setting, a
    /// chat session), not of the store's contents: the replay audit leaves
    /// it out, and only the app can undo it (see `store::records`).
    pub fn is_record(self) -> bool {
        !matches!(
            self,
            EventKind::Present
                | EventKind::Added
                | EventKind::Replaced
                | EventKind::Removed
                | EventKind::MetadataSet
                | EventKind::MemoryAccepted
                | EventKind::MemoryEdited
                | EventKind::MemoryForgotten
        )
    }

    /// An event of a memory fact, not a document.
    pub fn is_memory(self) -> bool {
        matches!(
            self,
            EventKind::MemoryAccepted | EventKind::MemoryEdited | EventKind::MemoryForgotten
        )
    }
}

/// What a document holds: its chunk count and the digest of their records
/// (see the module docs), and the `content_hash` its chunks carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocState {
    pub chunks: u64,
    pub digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

/// What an event kept so that it can be undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Kept {
    /// Nothing needed keeping: an add, or a metadata edit (whose inverse,
    /// the previous values, is in the event itself).
    Nothing,
    /// The removed chunks' records and vectors (of embedding generation
    /// `gen`), `bytes` in all, in the `kept` keyspace until retention
    /// drops them.
    Copies { chunks: u64, bytes: u64, gen: u32 },
    /// Not kept: the document is rebuilt from its file (a vault note, an
    /// indexed chat), so the file is the truth.
    FromFile,
    /// Not kept: `history.keep_days` was 0.
    Off,
}

/// Previous values of a metadata edit's fields on some chunks (`null`:
/// the field was absent). Chunks with the same previous values share one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prior {
    pub ids: Vec<ChunkId>,
    pub fields: Metadata,
}

/// One change to one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    /// RFC 3339, UTC.
    pub at: String,
    /// The store commit that made the change (0: the baseline).
    pub seq: Seq,
    pub actor: Actor,
    pub kind: EventKind,
    /// The document's key (see `store::doc_key`).
    pub key: String,
    pub title: String,
    pub doc_type: String,
    /// Whether the document is private: a reader under a cloud model must
    /// leave such an event out.
    pub private: bool,
    pub before: Option<DocState>,
    pub after: Option<DocState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_of: Option<EventId>,
    /// A metadata edit's new values.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub fields: Metadata,
    /// A metadata edit's inverse.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prior: Vec<Prior>,
    pub kept: Kept,
    /// What changed in a record kept in a file, and how to take it back
    /// (only on the kinds [`EventKind::is_record`] names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<super::records::RecordChange>,
}

/// The entries a commit's events add, in key order (see [`Store::write_log`]).
#[derive(Default)]
pub(super) struct LogPuts {
    pub(super) events: super::Puts,
    pub(super) states: super::Puts,
    /// What the events add to the log's size.
    pub(super) size: super::LogSize,
}

impl LogPuts {
    /// Add `event`, and move the log's running state to its `after` (a
    /// removal goes straight into `b`).
    pub(super) fn event(
        &mut self,
        b: &mut OwnedWriteBatch,
        h: &super::recover::Handles,
        event: &Event,
    ) -> Result<(), StoreError> {
        let json = encode(event)?;
        self.size.events += 1;
        self.size.event_bytes += json.len() as u64;
        if let Kept::Copies { chunks, bytes, .. } = event.kept {
            self.size.kept_events += 1;
            self.size.kept_chunks += chunks;
            self.size.kept_bytes += bytes;
        }
        self.events.push((be(event.id).to_vec(), json));
        let k = super::docs::entry_key(&event.key);
        match &event.after {
            Some(state) => self.states.push((k, encode(&(event.key.as_str(), state))?)),
            None => b.remove(&h.logstate, k),
        }
        Ok(())
    }

    /// Put everything into `b` (a commit that is not bulk).
    pub(super) fn insert(self, b: &mut OwnedWriteBatch, h: &super::recover::Handles) {
        for (k, v) in self.events {
            b.insert(&h.events, k, v);
        }
        for (k, v) in self.states {
            b.insert(&h.logstate, k, v);
        }
    }
}

/// A kept chunk: its record and embedding exactly as they were stored.
#[derive(Debug, Clone)]
pub struct KeptChunk {
    pub id: ChunkId,
    pub gen: u32,
    pub record: Vec<u8>,
    pub embed: Vec<u8>,
}

impl KeptChunk {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.record.len() + self.embed.len());
        out.extend_from_slice(&self.gen.to_le_bytes());
        out.extend_from_slice(&(self.record.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.record);
        out.extend_from_slice(&self.embed);
        out
    }

    pub(super) fn decode(id: ChunkId, b: &[u8]) -> Option<KeptChunk> {
        let gen = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
        let len = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
        Some(KeptChunk {
            id,
            gen,
            record: b.get(8..8 + len)?.to_vec(),
            embed: b.get(8 + len..)?.to_vec(),
        })
    }
}

pub(super) fn kept_key(event: EventId, chunk: ChunkId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&be(event));
    k[8..].copy_from_slice(&be(chunk));
    k
}

/// The digest term of one stored chunk record.
pub(super) fn chunk_digest(record: &[u8]) -> u128 {
    use sha2::Digest;
    let d = sha2::Sha256::digest(record);
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    u128::from_be_bytes(b)
}

pub(super) fn digest_hex(sum: u128) -> String {
    format!("{sum:032x}")
}

fn digest_of(state: Option<&DocState>) -> u128 {
    state
        .and_then(|s| u128::from_str_radix(&s.digest, 16).ok())
        .unwrap_or(0)
}

/// Whether a document of this type is rebuilt from a file, so that its
/// file, not a kept copy, is what brings it back.
pub fn from_file(doc_type: &str) -> bool {
    DocType::Note.is(doc_type) || DocType::Chat.is(doc_type)
}

/// One document's share of a commit.
#[derive(Default)]
struct Delta {
    removed: u64,
    added: u64,
    minus: u128,
    plus: u128,
    /// Metadata of a chunk after the change (else before it), for the
    /// event's title, type and visibility.
    after_meta: Option<Metadata>,
    before_meta: Option<Metadata>,
    content_hash: Option<String>,
    kept: Vec<KeptChunk>,
    not_kept: Option<Kept>,
    meta_only: bool,
    prior: Vec<Prior>,
}

/// The events a commit will write, gathered while its batch is built.
pub(super) struct LogBatch<'a> {
    cause: &'a Cause,
    docs: BTreeMap<String, Delta>,
    fields: Metadata,
}

fn key_of(meta: &Metadata) -> String {
    super::doc_key(meta).to_string()
}

fn meta_str<'m>(meta: &'m Metadata, k: &str) -> Option<&'m str> {
    meta.get(k).and_then(|v| v.as_str())
}

impl<'a> LogBatch<'a> {
    pub(super) fn new(cause: &'a Cause) -> LogBatch<'a> {
        LogBatch {
            cause,
            docs: BTreeMap::new(),
            fields: Metadata::new(),
        }
    }

    /// Whether removing a chunk with `meta` keeps a copy of it.
    pub(super) fn keeps(&self, meta: &Metadata) -> bool {
        self.cause.keep_copies && !from_file(meta_str(meta, "doc_type").unwrap_or(""))
    }

    /// Chunk `id` (stored as `record`, with `meta`) is deleted; `embed` is
    /// its embedding, given when [`LogBatch::keeps`] said so.
    pub(super) fn remove(&mut self, id: ChunkId, record: &[u8], meta: &Metadata, embed: Option<(u32, Vec<u8>)>) {
        let not_kept = if !self.cause.keep_copies {
            Kept::Off
        } else {
            Kept::FromFile
        };
        let d = self.docs.entry(key_of(meta)).or_default();
        d.removed += 1;
        d.minus = d.minus.wrapping_add(chunk_digest(record));
        d.before_meta.get_or_insert_with(|| meta.clone());
        match embed {
            Some((gen, embed)) => d.kept.push(KeptChunk {
                id,
                gen,
                record: record.to_vec(),
                embed,
            }),
            None => d.not_kept = Some(not_kept),
        }
    }

    /// A chunk is added, stored as `record`.
    pub(super) fn add(&mut self, record: &[u8], meta: &Metadata) {
        let d = self.docs.entry(key_of(meta)).or_default();
        d.added += 1;
        d.plus = d.plus.wrapping_add(chunk_digest(record));
        if d.after_meta.is_none() {
            d.content_hash = meta_str(meta, "content_hash").map(str::to_string);
            d.after_meta = Some(meta.clone());
        }
    }

    /// Chunk `id`'s metadata changes from `old` to `new` (its records
    /// before and after), setting `fields`.
    pub(super) fn update(&mut self, id: ChunkId, old: (&[u8], &Metadata), new: (&[u8], &Metadata), fields: &Metadata) {
        let prior: Metadata = fields
            .keys()
            .map(|k| (k.clone(), old.1.get(k).cloned().unwrap_or(serde_json::Value::Null)))
            .collect();
        for (k, v) in fields {
            self.fields.insert(k.clone(), v.clone());
        }
        let from = self.docs.entry(key_of(old.1)).or_default();
        from.meta_only = true;
        from.removed += 1;
        from.minus = from.minus.wrapping_add(chunk_digest(old.0));
        from.before_meta.get_or_insert_with(|| old.1.clone());
        match from.prior.iter_mut().find(|p| p.fields == prior) {
            Some(p) => p.ids.push(id),
            None => from.prior.push(Prior {
                ids: vec![id],
                fields: prior,
            }),
        }
        let to = self.docs.entry(key_of(new.1)).or_default();
        to.meta_only = true;
        to.added += 1;
        to.plus = to.plus.wrapping_add(chunk_digest(new.0));
        if to.after_meta.is_none() {
            to.content_hash = meta_str(new.1, "content_hash").map(str::to_string);
            to.after_meta = Some(new.1.clone());
        }
    }
}

impl Store {
    /// Turn what a commit gathered into its events: one event per
    /// document it changed. The kept copies, the running state's removals
    /// and the next event id go into batch `b`; the events and running
    /// state entries are returned, for the caller to put in `b` or (a bulk
    /// commit) to ingest — an event at or above `next_event` is not
    /// committed, like a record at or above `next_id`.
    pub(super) fn write_log(
        &self,
        b: &mut OwnedWriteBatch,
        log: LogBatch<'_>,
        seq: Seq,
    ) -> Result<LogPuts, StoreError> {
        let mut puts = LogPuts::default();
        // The replay audit's tests change the store behind the log's back.
        if crate::failpoint::hit("log_skipped") {
            return Ok(puts);
        }
        let h = self.h()?;
        let mut next = self.meta_u64(NEXT_EVENT)?.max(1);
        let at = now();
        let fields = log.fields;
        for (key, d) in log.docs {
            let before = self.log_state(&key)?;
            let chunks = before
                .as_ref()
                .map_or(0, |s| s.chunks)
                .saturating_sub(d.removed)
                .saturating_add(d.added);
            let sum = digest_of(before.as_ref()).wrapping_sub(d.minus).wrapping_add(d.plus);
            let after = (chunks > 0).then(|| DocState {
                chunks,
                digest: digest_hex(sum),
                content_hash: d
                    .content_hash
                    .clone()
                    .or_else(|| before.as_ref().and_then(|s| s.content_hash.clone())),
            });
            let kind = match (&before, &after, d.meta_only) {
                (None, None, _) => continue,
                (_, _, true) => EventKind::MetadataSet,
                (None, Some(_), false) => EventKind::Added,
                (Some(_), None, false) => EventKind::Removed,
                (Some(_), Some(_), false) => EventKind::Replaced,
            };
            let meta = d.after_meta.as_ref().or(d.before_meta.as_ref());
            let s = |k: &str| meta.and_then(|m| meta_str(m, k)).unwrap_or("").to_string();
            let private =
                meta.is_none_or(|m| crate::visibility::Visibility::from_stored(meta_str(m, "visibility")).is_private());
            let kept = if d.meta_only || d.removed == 0 {
                Kept::Nothing
            } else if let Some(why) = d.not_kept.filter(|_| d.kept.is_empty()) {
                why
            } else {
                let bytes = d.kept.iter().map(|k| (k.record.len() + k.embed.len()) as u64).sum();
                Kept::Copies {
                    chunks: d.kept.len() as u64,
                    bytes,
                    gen: d.kept.first().map_or(0, |k| k.gen),
                }
            };
            let id = next;
            next += 1;
            if matches!(kept, Kept::Copies { .. }) {
                for k in &d.kept {
                    b.insert(&h.kept, kept_key(id, k.id), k.encode());
                }
            }
            let event = Event {
                id,
                at: at.clone(),
                seq,
                actor: log.cause.actor.clone(),
                kind,
                title: s("title"),
                doc_type: s("doc_type"),
                private,
                before,
                after,
                undo_of: log.cause.undo_of,
                fields: if d.meta_only { fields.clone() } else { Metadata::new() },
                prior: d.prior,
                kept,
                key,
                record: None,
            };
            puts.event(b, &h, &event)?;
        }
        b.insert(&h.meta, NEXT_EVENT, be(next).as_slice());
        self.grow_log_size(b, &puts.size, 1)?;
        // One event per document, so each key once; tagged and hashed keys
        // do not sort like the document keys.
        puts.states.sort_unstable_by(|x, y| x.0.cmp(&y.0));
        Ok(puts)
    }

    /// What the log says document `key` holds now.
    pub fn log_state(&self, key: &str) -> Result<Option<DocState>, StoreError> {
        let h = self.h()?;
        match h.logstate.get(super::docs::entry_key(key))? {
            None => Ok(None),
            Some(v) => serde_json::from_slice::<(String, DocState)>(&v)
                .map(|(_, s)| Some(s))
                .map_err(|e| corrupt("logstate", e)),
        }
    }

    /// One event.
    pub fn event(&self, id: EventId) -> Result<Option<Event>, StoreError> {
        let h = self.h()?;
        if id >= self.meta_u64(NEXT_EVENT)? {
            return Ok(None);
        }
        match h.events.get(be(id))? {
            None => Ok(None),
            Some(v) => decode(&v).map(Some),
        }
    }

    /// Events with ids in `from..`, oldest first, as long as `keep` says
    /// to go on (it sees each event and returns false to stop).
    pub fn scan_events(&self, from: EventId, mut keep: impl FnMut(Event) -> bool) -> Result<(), StoreError> {
        let h = self.h()?;
        // A bulk commit's ingested events are not committed before its
        // batch advances `next_event`.
        let next = self.meta_u64(NEXT_EVENT)?;
        if from >= next {
            return Ok(());
        }
        for g in h.events.range(be(from)..be(next)) {
            let (_, v) = g.into_inner()?;
            if !keep(decode(&v)?) {
                break;
            }
        }
        Ok(())
    }

    /// Events newest first, as long as `keep` says to go on.
    pub fn scan_events_rev(&self, mut keep: impl FnMut(Event) -> bool) -> Result<(), StoreError> {
        let h = self.h()?;
        let next = self.meta_u64(NEXT_EVENT)?;
        for g in h.events.range(..be(next)).rev() {
            let (_, v) = g.into_inner()?;
            if !keep(decode(&v)?) {
                break;
            }
        }
        Ok(())
    }

    /// The chunks event `id` kept, in id order (empty once retention
    /// dropped them).
    pub fn kept_chunks(&self, id: EventId) -> Result<Vec<KeptChunk>, StoreError> {
        let h = self.h()?;
        let mut out = Vec::new();
        for g in h.kept.prefix(be(id)) {
            let (k, v) = g.into_inner()?;
            let chunk = k.get(8..).and_then(super::read_u64);
            match chunk.and_then(|c| KeptChunk::decode(c, &v)) {
                Some(c) => out.push(c),
                None => return Err(corrupt("kept", format!("event {id} has an unreadable kept chunk"))),
            }
        }
        Ok(out)
    }
}

impl Store {
    /// Rewrite event `id`'s time: how the tests reach an event past
    /// retention without waiting for it.
    #[cfg(test)]
    pub(crate) fn backdate_event(&self, id: EventId, at: &str) -> Result<(), StoreError> {
        let h = self.h()?;
        let mut e = self.event(id)?.ok_or_else(|| corrupt("events", "no such event"))?;
        e.at = at.to_string();
        h.events.insert(be(id), encode(&e)?)?;
        Ok(())
    }
}

pub(super) fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(super) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        id: what.into(),
        reason: e.to_string(),
    }
}

fn encode(v: &impl Serialize) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(v).map_err(|e| corrupt("events", e))
}

fn decode(v: &[u8]) -> Result<Event, StoreError> {
    serde_json::from_slice(v).map_err(|e| corrupt("events", e))
}

#[cfg(test)]
mod tests;
