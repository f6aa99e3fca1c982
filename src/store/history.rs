//! Reading the event log back: the baseline a store gets when the log
//! begins, retention of kept copies, the replay audit and the log's size.
//!
//! Owns the rule that the log describes the library: replaying its events
//! in order gives every document's [`DocState`], and [`Store::audit_log`]
//! compares that with the records the store holds. Must not: repair a
//! disagreement (the audit reports it; the events stay as written).

use std::collections::BTreeMap;

use fjall::PersistMode;
use serde::Serialize;

use super::events::{chunk_digest, corrupt, digest_hex, now, Actor, DocState, Event, EventId, EventKind, Kept};
use super::{be, doc_key, read_u64, ChunkId, LookupField, Metadata, Store, StoreError};

/// Meta key set once the baseline is written.
const LOG_STARTED: &str = "log_started";
/// Meta key set while the log's running state is the fold of its events
/// (an unfinished bulk commit unsets it: its entries were ingested in place).
pub(super) const LOGSTATE: &str = "logstate_v1";

/// One document on which the log and the store disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub key: String,
    /// What the log says (None: absent).
    pub log: Option<DocState>,
    /// What the store holds.
    pub store: Option<DocState>,
    /// The last event of this document: the one whose state the store no
    /// longer matches (None: no event ever named the document).
    pub event: Option<EventId>,
}

/// What [`Store::audit_log`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    pub events: u64,
    /// Documents the log and the store agree on.
    pub matched: u64,
    /// In the log, not (or not as the log says) in the store.
    pub missing: Vec<Mismatch>,
    /// In the store with no event that put them there.
    pub extra: Vec<Mismatch>,
    /// Differ in content or metadata.
    pub differing: Vec<Mismatch>,
    /// The log's running state is not what replaying its events gives.
    pub state_drift: u64,
    /// The earliest event a disagreement names.
    pub first_differing_event: Option<EventId>,
}

impl AuditReport {
    pub fn ok(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty() && self.differing.is_empty() && self.state_drift == 0
    }
}

/// Meta key of the [`LogSize`].
const LOG_SIZE: &str = "log_size";

/// How much the log holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LogSize {
    pub events: u64,
    /// Bytes of the events themselves.
    pub event_bytes: u64,
    /// Events whose removed chunks are still kept, and their chunks and bytes.
    pub kept_events: u64,
    pub kept_chunks: u64,
    pub kept_bytes: u64,
}

/// Per document: chunk count and digest sum, plus a content hash seen.
#[derive(Default)]
struct Live {
    chunks: u64,
    sum: u128,
    content_hash: Option<String>,
    meta: Option<Metadata>,
}

impl Live {
    fn state(&self) -> DocState {
        DocState {
            chunks: self.chunks,
            digest: digest_hex(self.sum),
            content_hash: self.content_hash.clone(),
        }
    }
}

impl Store {
    /// Every document as its records say, from one pass over the chunks.
    fn live_docs(&self) -> Result<BTreeMap<String, Live>, StoreError> {
        let mut out: BTreeMap<String, Live> = BTreeMap::new();
        for g in self.committed() {
            let (_, v) = g?.into_inner()?;
            let meta = record_meta(&v)?;
            let live = out.entry(doc_key(&meta).to_string()).or_default();
            live.chunks += 1;
            live.sum = live.sum.wrapping_add(chunk_digest(&v));
            if live.meta.is_none() {
                live.content_hash = meta.get("content_hash").and_then(|v| v.as_str()).map(str::to_string);
                live.meta = Some(meta);
            }
        }
        // An accepted memory fact is a one-chunk document to the log.
        for (key, raw) in self.accepted_fact_records()? {
            let live = out.entry(key).or_default();
            live.chunks += 1;
            live.sum = live.sum.wrapping_add(chunk_digest(&raw));
        }
        Ok(out)
    }

    /// What the store holds for one document now (None: nothing), read
    /// from its records: what an undo checks against the event's `after`.
    pub fn doc_state(&self, key: &str) -> Result<Option<DocState>, StoreError> {
        if let Some(id) = super::memory::fact_id_of(key) {
            return self.fact_state(id);
        }
        let mut ids = self.ids_by(LookupField::Source, key)?;
        ids.extend(self.ids_by(LookupField::FilePath, key)?);
        ids.sort_unstable();
        ids.dedup();
        let mut live = Live::default();
        for id in ids {
            let Some((raw, rec)) = self.get_raw(id)? else { continue };
            if doc_key(&rec.meta) == key {
                live.chunks += 1;
                live.sum = live.sum.wrapping_add(chunk_digest(&raw));
                if live.content_hash.is_none() {
                    live.content_hash = rec.meta_str("content_hash").map(str::to_string);
                }
            }
        }
        Ok((live.chunks > 0).then(|| live.state()))
    }

    /// The chunk ids of document `key` now.
    pub fn doc_ids(&self, key: &str) -> Result<Vec<ChunkId>, StoreError> {
        let mut ids = self.ids_by(LookupField::Source, key)?;
        ids.extend(self.ids_by(LookupField::FilePath, key)?);
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if self.get_bare(id)?.is_some_and(|r| doc_key(&r.meta) == key) {
                out.push(id);
            }
        }
        Ok(out)
    }

    /// Write the baseline once: a store made before the log existed gets
    /// one `present` event per document it holds, so the log describes
    /// the library from then on.
    pub(super) fn ensure_log(&self) -> Result<(), StoreError> {
        let h = self.h()?;
        if h.meta.get(LOG_STARTED)?.is_some() {
            if h.meta.get(LOGSTATE)?.is_none() {
                self.rebuild_logstate()?;
            }
            return Ok(());
        }
        let docs = self.live_docs()?;
        let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
        let mut puts = super::events::LogPuts::default();
        let mut next = self.meta_u64(super::events::NEXT_EVENT)?.max(1);
        let at = now();
        for (key, live) in &docs {
            let meta = live.meta.clone().unwrap_or_default();
            let s = |k: &str| meta.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let event = Event {
                id: next,
                at: at.clone(),
                seq: 0,
                actor: Actor::Jarvis,
                kind: EventKind::Present,
                key: key.clone(),
                title: s("title"),
                doc_type: s("doc_type"),
                private: crate::visibility::Visibility::from_stored(meta.get("visibility").and_then(|v| v.as_str()))
                    .is_private(),
                before: None,
                after: Some(live.state()),
                undo_of: None,
                fields: Metadata::new(),
                prior: Vec::new(),
                kept: Kept::Nothing,
                record: None,
            };
            puts.event(&mut b, &h, &event)?;
            next += 1;
        }
        self.grow_log_size(&mut b, &puts.size, 1)?;
        puts.insert(&mut b, &h);
        b.insert(&h.meta, super::events::NEXT_EVENT, be(next).as_slice());
        b.insert(&h.meta, LOG_STARTED, b"1".as_slice());
        b.insert(&h.meta, LOGSTATE, b"1".as_slice());
        b.commit()?;
        if !docs.is_empty() {
            tracing::info!(documents = docs.len(), "the event log began with what the store holds");
        }
        Ok(())
    }

    /// Rebuild the log's running state from its events.
    fn rebuild_logstate(&self) -> Result<(), StoreError> {
        let h = self.h()?;
        let mut fold: BTreeMap<String, Option<DocState>> = BTreeMap::new();
        self.scan_events(0, |e| {
            fold.insert(e.key, e.after);
            true
        })?;
        let stale: Vec<_> = h.logstate.iter().map(|g| g.key()).collect::<Result<_, _>>()?;
        let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
        for k in stale {
            b.remove(&h.logstate, k);
        }
        for (key, state) in &fold {
            if let Some(state) = state {
                let v = serde_json::to_vec(&(key.as_str(), state)).map_err(|e| corrupt("logstate", e))?;
                b.insert(&h.logstate, super::docs::entry_key(key), v);
            }
        }
        b.insert(&h.meta, LOGSTATE, b"1".as_slice());
        b.commit()?;
        tracing::info!(
            documents = fold.len(),
            "rebuilt the event log's running state from its events"
        );
        Ok(())
    }

    /// Drop the kept copies of events older than `keep_days` (all of them
    /// at 0): those events can no longer be undone. One seek per event
    /// with copies (not per chunk), and no reliance on ids being in time
    /// order (a clock set back). Returns how many events lost their copies.
    pub fn drop_expired_copies(&self, keep_days: u32) -> Result<usize, StoreError> {
        let h = self.h()?;
        let cutoff = time::OffsetDateTime::now_utc() - time::Duration::days(i64::from(keep_days));
        let mut expired: Vec<EventId> = Vec::new();
        let mut from = 0u64;
        loop {
            let Some(g) = h.kept.range(be(from)..).next() else {
                break;
            };
            let k = g.key()?;
            let Some(id) = k.get(..8).and_then(read_u64) else { break };
            let at = self.event(id)?.map(|e| e.at).unwrap_or_default();
            let old = time::OffsetDateTime::parse(&at, &time::format_description::well_known::Rfc3339)
                .map_or(true, |t| t < cutoff);
            if keep_days == 0 || old {
                expired.push(id);
            }
            from = id + 1;
        }
        if expired.is_empty() {
            return Ok(0);
        }
        self.writing(|| {
            let h = self.h()?;
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            let mut dropped = LogSize::default();
            for id in &expired {
                dropped.kept_events += 1;
                for g in h.kept.prefix(be(*id)) {
                    let (k, v) = g.into_inner()?;
                    // What the event counted: the record and embedding bytes.
                    dropped.kept_chunks += 1;
                    dropped.kept_bytes += v.len().saturating_sub(8) as u64;
                    b.remove(&h.kept, k);
                }
            }
            self.grow_log_size(&mut b, &dropped, -1)?;
            b.commit()?;
            Ok(())
        })?;
        tracing::info!(
            events = expired.len(),
            keep_days,
            "dropped kept copies past history.keep_days"
        );
        Ok(expired.len())
    }

    /// Replay the log from its first event and compare what it says every
    /// document holds with the store's records.
    pub fn audit_log(&self) -> Result<AuditReport, StoreError> {
        let mut replay: BTreeMap<String, (Option<DocState>, EventId)> = BTreeMap::new();
        let mut report = AuditReport::default();
        self.scan_events(0, |e| {
            report.events += 1;
            replay.insert(e.key, (e.after, e.id));
            true
        })?;
        let h = self.h()?;
        for g in h.logstate.iter() {
            let (_, v) = g.into_inner()?;
            let (key, state): (String, DocState) = serde_json::from_slice(&v).map_err(|e| corrupt("logstate", e))?;
            if replay.get(&key).and_then(|(s, _)| s.as_ref()) != Some(&state) {
                report.state_drift += 1;
            }
        }
        report.state_drift += replay
            .iter()
            .filter(|(k, (s, _))| s.is_some() && self.log_state(k).ok().flatten().is_none())
            .count() as u64;
        let mut live = self.live_docs()?;
        for (key, (state, event)) in replay {
            let found = live.remove(&key).map(|l| l.state());
            let mismatch = Mismatch {
                key,
                log: state,
                store: found,
                event: Some(event),
            };
            match (&mismatch.log, &mismatch.store) {
                (None, None) => continue,
                (a, b) if a == b => report.matched += 1,
                (Some(_), None) => report.missing.push(mismatch),
                (None, Some(_)) => report.extra.push(mismatch),
                _ => report.differing.push(mismatch),
            }
        }
        for (key, l) in live {
            report.extra.push(Mismatch {
                key,
                log: None,
                store: Some(l.state()),
                event: None,
            });
        }
        report.first_differing_event = [&report.missing, &report.extra, &report.differing]
            .into_iter()
            .flatten()
            .filter_map(|m| m.event)
            .min();
        Ok(report)
    }

    /// How big the log is: a running total kept in `meta` by every batch
    /// that writes events or drops kept copies, so `kb stats` reads one value.
    pub fn log_size(&self) -> Result<LogSize, StoreError> {
        let h = self.h()?;
        match h.meta.get(LOG_SIZE)? {
            None => Ok(LogSize::default()),
            Some(v) => serde_json::from_slice(&v).map_err(|e| corrupt(LOG_SIZE, e)),
        }
    }

    /// Add `delta` to the log's size (`sign` -1: take it away), in batch `b`.
    pub(super) fn grow_log_size(
        &self,
        b: &mut fjall::OwnedWriteBatch,
        delta: &LogSize,
        sign: i64,
    ) -> Result<(), StoreError> {
        let h = self.h()?;
        let mut size = self.log_size()?;
        for (total, d) in [
            (&mut size.events, delta.events),
            (&mut size.event_bytes, delta.event_bytes),
            (&mut size.kept_events, delta.kept_events),
            (&mut size.kept_chunks, delta.kept_chunks),
            (&mut size.kept_bytes, delta.kept_bytes),
        ] {
            *total = total.saturating_add_signed(sign * d as i64);
        }
        b.insert(
            &h.meta,
            LOG_SIZE,
            serde_json::to_vec(&size).map_err(|e| corrupt(LOG_SIZE, e))?,
        );
        Ok(())
    }
}

fn record_meta(v: &[u8]) -> Result<Metadata, StoreError> {
    #[derive(serde::Deserialize)]
    struct MetaOnly {
        meta: Metadata,
    }
    serde_json::from_slice::<MetaOnly>(v)
        .map(|m| m.meta)
        .map_err(|e| corrupt("chunks", e))
}
