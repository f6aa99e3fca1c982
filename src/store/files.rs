//! The per-file map: `file_path` → what the store holds for that file
//! (content hash, mtime, size, metadata schema, visibility, doc type).
//!
//! Owns the `files` keyspace. It is written in the SAME batch as the chunks
//! it summarises (by [`Store::commit`] and [`Store::update_metadata`]), so
//! it can never disagree with them after a crash. (A bulk commit ingests
//! its entries just before that batch; if the batch never lands, the map
//! is rebuilt from the committed chunks — see the store's module docs.) It exists so that
//! "what is indexed, and is it still current?" — the question every vault
//! refresh asks — costs one entry per file instead of a scan of every chunk:
//! a no-op refresh is then independent of how many chunks the notes have.
//! Must not: decide anything about files on disk; it only mirrors the
//! metadata the chunks were committed with.
//!
//! Stores made before the map existed get it built once, on open, from one
//! pass over the chunks (marked done by the `files_map` meta key).

use std::collections::{BTreeMap, BTreeSet};

use fjall::OwnedWriteBatch;
use serde::{Deserialize, Serialize};

use super::{ChunkId, LookupField, Metadata, Puts, Store, StoreError};

/// Meta key set once the map covers every chunk.
pub(super) const FILES_MAP: &str = "files_map";

/// What the store holds for one file, copied from its chunks' metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub doc_type: Option<String>,
    pub content_hash: Option<String>,
    /// As stored (not parsed), so a missing or misspelt value shows.
    pub visibility: Option<String>,
    pub meta_schema: Option<i64>,
    pub mtime: Option<i64>,
    pub file_size: Option<i64>,
}

impl FileEntry {
    fn from_meta(meta: &Metadata) -> FileEntry {
        let s = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let i = |k: &str| meta.get(k).and_then(|v| v.as_i64());
        FileEntry {
            doc_type: s("doc_type"),
            content_hash: s("content_hash"),
            visibility: s("visibility"),
            meta_schema: i("meta_schema"),
            mtime: i("mtime"),
            file_size: i("file_size"),
        }
    }
}

fn file_path(meta: &Metadata) -> Option<&str> {
    meta.get("file_path").and_then(|v| v.as_str())
}

/// The map changes one commit makes, gathered while the batch is built.
#[derive(Default)]
pub(super) struct FileChanges {
    /// Path → entry of a chunk written under it in this batch.
    written: BTreeMap<String, FileEntry>,
    /// Paths some chunk left (deleted, or moved to another path).
    left: BTreeSet<String>,
    /// Ids that no longer carry their old path after this batch.
    gone: BTreeSet<ChunkId>,
}

impl FileChanges {
    /// A chunk with `meta` is (re)written by this batch.
    pub(super) fn write(&mut self, meta: &Metadata) {
        if let Some(p) = file_path(meta) {
            // The first chunk written for a path stands for the file
            // (chunk 0 of a note, as the refresh used to read).
            self.written
                .entry(p.to_string())
                .or_insert_with(|| FileEntry::from_meta(meta));
        }
    }

    /// Chunk `id`, which had `old` metadata, is deleted or re-written.
    pub(super) fn leave(&mut self, id: ChunkId, old: &Metadata, new: Option<&Metadata>) {
        if let Some(p) = file_path(old) {
            if new.and_then(file_path) != Some(p) {
                self.left.insert(p.to_string());
                self.gone.insert(id);
            }
        }
    }
}

impl Store {
    /// Apply `changes` to the map: removals go into batch `b`, and the
    /// entries to write are returned in key order, for the caller to put
    /// in `b` or (a bulk commit) to ingest. A path some chunks left keeps
    /// its entry while any chunk not leaving it remains.
    pub(super) fn apply_file_changes(&self, b: &mut OwnedWriteBatch, changes: FileChanges) -> Result<Puts, StoreError> {
        let h = self.h()?;
        for p in &changes.left {
            if changes.written.contains_key(p) {
                continue;
            }
            let remains = self
                .ids_by(LookupField::FilePath, p)?
                .into_iter()
                .any(|id| !changes.gone.contains(&id));
            if !remains {
                b.remove(&h.files, p.as_bytes());
            }
        }
        // A BTreeMap of strings: already in key (byte) order.
        changes
            .written
            .into_iter()
            .map(|(p, e)| Ok((p.into_bytes(), encode(&e)?)))
            .collect()
    }

    /// Every file the store holds chunks of, by path, with its entry.
    pub fn files(&self) -> Result<Vec<(String, FileEntry)>, StoreError> {
        self.recover()?;
        let h = self.h()?;
        let mut out = Vec::new();
        for g in h.files.iter() {
            let (k, v) = g.into_inner()?;
            let path = String::from_utf8_lossy(&k).into_owned();
            let e: FileEntry = serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                id: format!("files/{path}"),
                reason: e.to_string(),
            })?;
            out.push((path, e));
        }
        Ok(out)
    }

    /// The entry of one file, if the store holds chunks of it.
    pub fn file(&self, path: &str) -> Result<Option<FileEntry>, StoreError> {
        self.recover()?;
        let h = self.h()?;
        match h.files.get(path.as_bytes())? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v).map(Some).map_err(|e| StoreError::Corrupt {
                id: format!("files/{path}"),
                reason: e.to_string(),
            }),
        }
    }

    /// Build the map from the chunks once, for a store made before it
    /// existed (or whose build was interrupted: it is rebuilt whole).
    pub(super) fn ensure_files_map(&self) -> Result<(), StoreError> {
        let h = self.h()?;
        if h.meta.get(FILES_MAP)?.is_some() {
            return Ok(());
        }
        let mut entries: BTreeMap<String, FileEntry> = BTreeMap::new();
        for rec in self.iter_chunks() {
            let rec = rec?;
            if let Some(p) = file_path(&rec.meta) {
                entries
                    .entry(p.to_string())
                    .or_insert_with(|| FileEntry::from_meta(&rec.meta));
            }
        }
        let stale: Vec<_> = h.files.iter().map(|g| g.key()).collect::<Result<_, _>>()?;
        let mut b = h.db.batch().durability(Some(fjall::PersistMode::SyncAll));
        for k in stale {
            b.remove(&h.files, k);
        }
        for (p, e) in &entries {
            b.insert(&h.files, p.as_bytes(), encode(e)?);
        }
        b.insert(&h.meta, FILES_MAP, b"1".as_slice());
        b.commit()?;
        if !entries.is_empty() {
            tracing::info!(files = entries.len(), "built the per-file map of the store");
        }
        Ok(())
    }
}

fn encode(e: &FileEntry) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(e).map_err(|err| StoreError::Corrupt {
        id: "files".into(),
        reason: err.to_string(),
    })
}
