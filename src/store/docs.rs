//! The per-document summary: document key → what the store holds for that
//! document (its chunk count, chunk count per `doc_type`, and the few
//! fields of its first chunk that `kb stats` tallies).
//!
//! Owns the `docs` keyspace and the rule that names a document
//! ([`doc_key`]). Like the per-file map it is written in the SAME batch as
//! the chunks it summarises, so it can never disagree with them after a
//! crash (a bulk commit ingests the entries just before; the totals are
//! always in the batch). It exists so that `kb stats` reads one value, the
//! [`DocTotals`], instead of decoding every chunk (at 10k chunks that pass
//! was ~120 ms of a 50 ms budget). Must not: hold text, or anything a
//! search needs.
//!
//! Stores made before the summary existed get it built once, on open, from
//! one pass over the chunks (marked done by the `docs_map` meta key).

use std::collections::{BTreeMap, BTreeSet};

use fjall::OwnedWriteBatch;
use serde::{Deserialize, Serialize};

use super::{ChunkId, LookupField, Metadata, Puts, Store, StoreError};
use crate::doc_type::DocType;

impl super::ChunkRecord {
    /// Whether this chunk's stored `doc_type` is `t`.
    pub fn is(&self, t: DocType) -> bool {
        self.meta_str("doc_type") == Some(t.as_str())
    }
}

/// Meta key set once the summary covers every chunk.
pub(super) const DOCS_MAP: &str = "docs_map_v2";

/// The key a chunk's document is known by: a note by its `file_path`
/// (every note's `source` is `"local"`), anything else by its `source`,
/// else its `file_path`, else `""`.
pub fn doc_key(meta: &Metadata) -> &str {
    let s = |k: &str| meta.get(k).and_then(|v| v.as_str());
    match (s("doc_type"), s("file_path")) {
        (Some("note"), Some(p)) => p,
        _ => s("source").or(s("file_path")).unwrap_or(""),
    }
}

/// A metadata value as one string: strings as they are, other scalars in
/// their JSON form.
pub fn scalar_string(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `docs` keyspace's key for a document. fjall refuses an empty key
/// and one over 64 KiB, and a document key can be either (chunks with no
/// source, a hostile source URL), so it is tagged, and hashed when long;
/// the entry itself carries the document key.
pub(super) fn entry_key(key: &str) -> Vec<u8> {
    use sha2::Digest;
    if key.len() <= 1024 {
        let mut k = Vec::with_capacity(key.len() + 1);
        k.push(b'd');
        k.extend_from_slice(key.as_bytes());
        k
    } else {
        let mut k = vec![b'h'];
        k.extend_from_slice(&sha2::Sha256::digest(key.as_bytes()));
        k
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    key: String,
    #[serde(flatten)]
    entry: DocEntry,
}

/// What the store holds for one document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocEntry {
    /// `doc_type` of the document's first (lowest-id) chunk, `""` if none.
    pub doc_type: String,
    pub chunks: u64,
    /// Chunks per `doc_type` value (chunks without one are not counted).
    pub chunks_by_type: BTreeMap<String, u64>,
    /// `category` and `status` of the first chunk, as [`scalar_string`].
    pub category: Option<String>,
    pub status: Option<String>,
    /// A paper with a private chunk that is not private by the vault's
    /// rule (a PDF in a private folder): papers are otherwise public, so
    /// this predates that invariant and `kb stats` warns about it.
    pub legacy_private_paper: bool,
}

fn is_private(meta: &Metadata) -> bool {
    crate::visibility::Visibility::from_stored(meta.get("visibility").and_then(|v| v.as_str())).is_private()
}

impl DocEntry {
    /// The summary of a document from its chunks, in id order.
    fn from_chunks<'a>(chunks: impl IntoIterator<Item = &'a Metadata>) -> Option<DocEntry> {
        let mut it = chunks.into_iter().peekable();
        let first = *it.peek()?;
        let mut e = DocEntry {
            doc_type: first.get("doc_type").map(scalar_string).unwrap_or_default(),
            category: first.get("category").map(scalar_string),
            status: first.get("status").map(scalar_string),
            ..DocEntry::default()
        };
        for m in it {
            e.chunks += 1;
            if let Some(t) = m.get("doc_type") {
                *e.chunks_by_type.entry(scalar_string(t)).or_default() += 1;
            }
            if m.get("doc_type").and_then(|v| v.as_str()) == Some(DocType::Paper.as_str())
                && is_private(m)
                && m.get(crate::visibility::PRIVATE_REASON_KEY).and_then(|v| v.as_str())
                    != Some(crate::visibility::PRIVATE_FOLDER_REASON)
            {
                e.legacy_private_paper = true;
            }
        }
        Some(e)
    }
}

/// The sums of every document's [`DocEntry`], kept as one meta value so
/// `kb stats` reads one entry however many documents there are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocTotals {
    pub documents: u64,
    pub chunks: u64,
    /// Documents per `doc_type` of their first chunk.
    pub docs_by_type: BTreeMap<String, u64>,
    pub chunks_by_type: BTreeMap<String, u64>,
    /// Documents per `category` / `status` of their first chunk.
    pub categories: BTreeMap<String, u64>,
    pub statuses: BTreeMap<String, u64>,
    /// Keys of documents with `legacy_private_paper` set.
    pub legacy_private_papers: Vec<String>,
}

impl DocTotals {
    /// Add (`sign` 1) or take away (`sign` -1) one document.
    fn apply(&mut self, key: &str, e: &DocEntry, sign: i64) {
        fn bump(m: &mut BTreeMap<String, u64>, k: &str, by: i64) {
            let v = m.entry(k.to_string()).or_default();
            *v = v.saturating_add_signed(by);
            if *v == 0 {
                m.remove(k);
            }
        }
        let by = |n: u64| sign * n as i64;
        self.documents = self.documents.saturating_add_signed(sign);
        self.chunks = self.chunks.saturating_add_signed(by(e.chunks));
        bump(&mut self.docs_by_type, &e.doc_type, sign);
        for (t, n) in &e.chunks_by_type {
            bump(&mut self.chunks_by_type, t, by(*n));
        }
        if let Some(c) = &e.category {
            bump(&mut self.categories, c, sign);
        }
        if let Some(st) = &e.status {
            bump(&mut self.statuses, st, sign);
        }
        if e.legacy_private_paper {
            self.legacy_private_papers.retain(|k| k != key);
            if sign > 0 {
                self.legacy_private_papers.push(key.to_string());
                self.legacy_private_papers.sort();
            }
        }
    }
}

/// Meta key of the [`DocTotals`].
const DOC_TOTALS: &str = "doc_totals";

/// The chunk changes one batch makes, gathered while it is built: id →
/// its metadata after the batch (`None`: deleted).
#[derive(Default)]
pub(super) struct DocChanges {
    after: BTreeMap<ChunkId, Option<Metadata>>,
    keys: BTreeSet<String>,
}

impl DocChanges {
    /// Chunk `id` leaves its document (`old`) and, unless deleted, joins
    /// the one its `new` metadata names.
    pub(super) fn change(&mut self, id: ChunkId, old: Option<&Metadata>, new: Option<&Metadata>) {
        if let Some(m) = old {
            self.keys.insert(doc_key(m).to_string());
        }
        if let Some(m) = new {
            self.keys.insert(doc_key(m).to_string());
        }
        self.after.insert(id, new.cloned());
    }
}

impl Store {
    /// Rewrite the summary of every document `changes` touches, from that
    /// document's chunks as they will be after batch `b`: removals and the
    /// totals go into `b`, and the entries to write are returned in key
    /// order, for the caller to put in `b` or (a bulk commit) to ingest.
    pub(super) fn apply_doc_changes(&self, b: &mut OwnedWriteBatch, changes: DocChanges) -> Result<Puts, StoreError> {
        let h = self.h()?;
        let mut puts = Puts::new();
        if changes.keys.is_empty() {
            return Ok(puts);
        }
        let mut totals = self.doc_totals()?;
        for key in &changes.keys {
            let mut ids = BTreeSet::new();
            if key.is_empty() {
                // Chunks with neither source nor file_path have no lookup;
                // they are rare enough (hand-made records) to scan for.
                ids.extend(self.all_ids()?);
            } else {
                ids.extend(self.ids_by(LookupField::Source, key)?);
                ids.extend(self.ids_by(LookupField::FilePath, key)?);
            }
            ids.extend(
                changes
                    .after
                    .iter()
                    .filter(|(_, m)| m.as_ref().is_some_and(|m| doc_key(m) == key))
                    .map(|(id, _)| *id),
            );
            let mut metas = Vec::with_capacity(ids.len());
            for id in ids {
                let meta = match changes.after.get(&id) {
                    Some(None) => continue,
                    Some(Some(m)) => m.clone(),
                    None => match self.get_bare(id)? {
                        Some(rec) => rec.meta,
                        None => continue,
                    },
                };
                if doc_key(&meta) == key {
                    metas.push(meta);
                }
            }
            if let Some(old) = self.doc(key)? {
                totals.apply(key, &old, -1);
            }
            match DocEntry::from_chunks(&metas) {
                Some(e) => {
                    totals.apply(key, &e, 1);
                    puts.push((entry_key(key), encode(key, e)?));
                }
                None => b.remove(&h.docs, entry_key(key)),
            }
        }
        b.insert(&h.meta, DOC_TOTALS, encode_totals(&totals)?);
        // Tagged and hashed keys do not sort like the document keys.
        puts.sort_unstable_by(|x, y| x.0.cmp(&y.0));
        Ok(puts)
    }

    fn doc(&self, key: &str) -> Result<Option<DocEntry>, StoreError> {
        let h = self.h()?;
        match h.docs.get(entry_key(key))? {
            None => Ok(None),
            Some(v) => serde_json::from_slice::<Stored>(&v)
                .map(|s| Some(s.entry))
                .map_err(|e| StoreError::Corrupt {
                    id: format!("docs/{key}"),
                    reason: e.to_string(),
                }),
        }
    }

    /// What every document's summary adds up to.
    pub fn doc_totals(&self) -> Result<DocTotals, StoreError> {
        self.recover()?;
        let h = self.h()?;
        match h.meta.get(DOC_TOTALS)? {
            None => Ok(DocTotals::default()),
            Some(v) => serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                id: DOC_TOTALS.into(),
                reason: e.to_string(),
            }),
        }
    }

    /// Every document the store holds, by key, with its summary.
    pub fn docs(&self) -> Result<Vec<(String, DocEntry)>, StoreError> {
        self.recover()?;
        let h = self.h()?;
        let mut out = Vec::new();
        for g in h.docs.iter() {
            let (k, v) = g.into_inner()?;
            let e: Stored = serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                id: format!("docs/{}", String::from_utf8_lossy(&k)),
                reason: e.to_string(),
            })?;
            out.push((e.key, e.entry));
        }
        // By document key (the keyspace's own order puts hashed keys last).
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Build the summary from the chunks once, for a store made before it
    /// existed (or whose build was interrupted: it is rebuilt whole).
    pub(super) fn ensure_docs_map(&self) -> Result<(), StoreError> {
        let h = self.h()?;
        if h.meta.get(DOCS_MAP)?.is_some() {
            return Ok(());
        }
        let mut by_doc: BTreeMap<String, Vec<Metadata>> = BTreeMap::new();
        for rec in self.iter_chunk_meta() {
            let rec = rec?;
            by_doc.entry(doc_key(&rec.meta).to_string()).or_default().push(rec.meta);
        }
        let stale: Vec<_> = h.docs.iter().map(|g| g.key()).collect::<Result<_, _>>()?;
        let mut b = h.db.batch().durability(Some(fjall::PersistMode::SyncAll));
        for k in stale {
            b.remove(&h.docs, k);
        }
        let mut totals = DocTotals::default();
        for (k, metas) in by_doc.iter() {
            if let Some(e) = DocEntry::from_chunks(metas) {
                totals.apply(k, &e, 1);
                b.insert(&h.docs, entry_key(k), encode(k, e)?);
            }
        }
        b.insert(&h.meta, DOC_TOTALS, encode_totals(&totals)?);
        b.insert(&h.meta, DOCS_MAP, b"1".as_slice());
        b.commit()?;
        if !by_doc.is_empty() {
            tracing::info!(documents = by_doc.len(), "built the per-document summary of the store");
        }
        Ok(())
    }
}

fn encode_totals(t: &DocTotals) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(t).map_err(|err| StoreError::Corrupt {
        id: DOC_TOTALS.into(),
        reason: err.to_string(),
    })
}

pub(super) fn encode(key: &str, entry: DocEntry) -> Result<Vec<u8>, StoreError> {
    let stored = Stored {
        key: key.to_string(),
        entry,
    };
    serde_json::to_vec(&stored).map_err(|err| StoreError::Corrupt {
        id: "docs".into(),
        reason: err.to_string(),
    })
}

#[cfg(test)]
mod tests;
