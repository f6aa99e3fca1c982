//! The source of truth: every chunk's stored text, embedded text, metadata
//! and vector, in fjall.
//!
//! Owns: the fjall database under `rag/store/`, chunk id allocation, the
//! commit journal that derived indexes replay, store-level metadata (the
//! embedding model that built the vectors), and the one-owner lock.
//! Must not: know about tantivy, arroy, embedding or search. It is the only
//! module that imports fjall.
//!
//! Layout (keyspaces):
//! - `chunks`:  id (u64 BE) → JSON [`ChunkRecord`] (without `embed_text`)
//! - `embeds`:  generation (u32 BE) ++ id → embedded text + little-endian
//!   f32 vector. A generation is one embedding space: `reindex` writes the
//!   next generation beside the current one and [`Store::switch_generation`]
//!   flips to it in one batch, so a crash mid-reindex leaves the old one whole.
//! - `by_key`:  `s\0<source>\0<id>` and `f\0<file_path>\0<id>` → "" (lookups)
//! - `journal`: seq (u64 BE) → JSON [`JournalEntry`]
//! - `files`:   file_path → JSON [`FileEntry`] (hash, mtime, size, schema,
//!   visibility of the file's chunks; see [`files`])
//! - `docs`:    document key → JSON [`DocEntry`] (chunk counts and what
//!   `kb stats` tallies per document; see [`docs`])
//! - `meta`:    "seq", "next_id", "gen", "embed_model", … → bytes
//! - `events`, `kept`, `logstate`: the event log (see [`events`]): every
//!   change to a document as one event, the removed chunks undo restores,
//!   and what the log says each document holds.
//! - `memory`: long-term memory facts about the user and the sessions the
//!   idle extraction read (see [`memory`]); a fact's change is an event too.
//!   So is a change to a record kept in a file outside the store (a draft,
//!   a prompt, a setting, a chat session; see [`records`]).
//!
//! Every commit is one fjall write batch with `SyncAll` durability: records,
//! vectors, lookups, the per-file map, the journal entry, the events and
//! the new sequence number land together or not at all (a bulk commit keeps the
//! same promise another way, below).
//!
//! A bulk commit (at least [`StoreOptions::bulk_write_bytes`] of new
//! records) first writes its new records, vectors and lookups, and its
//! per-file and per-document entries, as sorted tables through fjall's
//! ingestion, then commits the rest (deletions, totals, journal entry,
//! `next_id`) in the batch. fjall replays its whole active journal (up to
//! 64 MB) on every open, so what a first index keeps out of the journal is
//! what keeps a one-shot command's start cheap. Atomicity is kept by one
//! rule: ids are allocated upward from `next_id`, which only the batch
//! advances, so a record or lookup at or above `next_id` belongs to a
//! commit that did not finish. No read sees one, and [`Store::open`]
//! deletes them. The map entries cannot be hidden that way (they are
//! rewritten in place), so finding such records also sends both maps back
//! to a rebuild from the committed chunks; the records are ingested first,
//! so ingested map entries never come without them.

mod bulk;
pub mod docs;
mod error;
pub mod events;
pub mod files;
mod history;
pub mod lock;
pub mod memory;
pub mod records;
mod recover;
mod update;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fjall::PersistMode;
use serde::{Deserialize, Serialize};

pub use docs::{doc_key, scalar_string, DocEntry, DocTotals};
pub use error::StoreError;
pub use events::{Actor, Cause, DocState, Event, EventId, EventKind, Kept, KeptChunk, Prior};
pub use files::FileEntry;
pub use history::{AuditReport, LogSize, Mismatch};
pub use lock::{Holder, LockError, OwnerLock};
pub use memory::{fact_id_of, fact_key, Fact, FactId, FactStatus, Provenance};
pub use records::{NewRecordEvent, RecordChange};

/// A chunk's identity. Allocated by the store from a counter that never
/// reuses a value, so an id names one chunk for the life of the index (and
/// survives `reindex`). Kept below 2^32 because arroy's item ids are u32.
pub type ChunkId = u64;

/// The store's commit sequence number: derived indexes record the last one
/// they reflect.
pub type Seq = u64;

/// Key-value pairs to write, in key order.
type Puts = Vec<(Vec<u8>, Vec<u8>)>;

/// Metadata values are flat scalars, as in the seed's schema.
pub type Metadata = BTreeMap<String, serde_json::Value>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    pub id: ChunkId,
    /// The stored (displayed) text.
    pub text: String,
    /// The text that was embedded and BM25-indexed: header + breadcrumb +
    /// text. Kept with the vector of its generation, not in this record.
    #[serde(skip)]
    pub embed_text: String,
    pub meta: Metadata,
}

impl ChunkRecord {
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(|v| v.as_str())
    }
    pub fn meta_i64(&self, key: &str) -> Option<i64> {
        self.meta.get(key).and_then(|v| v.as_i64())
    }
    /// The chunk's visibility, failing closed: missing or unknown is private.
    pub fn visibility(&self) -> crate::visibility::Visibility {
        crate::visibility::Visibility::from_stored(self.meta_str("visibility"))
    }
}

/// A chunk to add: everything but its id.
#[derive(Debug, Clone)]
pub struct NewChunk {
    pub text: String,
    pub embed_text: String,
    pub meta: Metadata,
    pub vector: Vec<f32>,
}

/// What one commit changed, for derived indexes to replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub seq: Seq,
    /// Chunks whose text and vector are new.
    pub added: Vec<ChunkId>,
    pub deleted: Vec<ChunkId>,
    /// Chunks whose metadata changed but not their text or vector.
    #[serde(default)]
    pub meta_updated: Vec<ChunkId>,
}

pub struct Store {
    /// The fjall database and its keyspaces, replaced whole when a failed
    /// write left fjall refusing writes (see `recover.rs`).
    handles: std::sync::Mutex<Option<std::sync::Arc<recover::Handles>>>,
    /// One recovery at a time.
    recovery: std::sync::Mutex<()>,
    /// A write failed: fjall may refuse every later write, and a bulk
    /// commit may have left its ingested map entries behind. Cleared by
    /// [`Store::recover`], which the next write (or map read) runs.
    damaged: std::sync::atomic::AtomicBool,
    dir: PathBuf,
    /// The current embedding generation, read once at open: `get` runs for
    /// every search hit and must not re-read it from fjall each time.
    gen: std::sync::atomic::AtomicU32,
    options: StoreOptions,
    _lock: OwnerLock,
}

/// How a [`Store`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// New records and vectors of at least this many bytes in one commit
    /// go through ingestion instead of the journal (see the module docs).
    /// One table per commit and keyspace is written, so this must stay well
    /// above a single note's size.
    pub bulk_write_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            bulk_write_bytes: 256 * 1024,
        }
    }
}

/// Memtable size at which a keyspace is flushed to a table (fjall's
/// default is 64 MiB). Every open replays the journal, inserting whatever
/// is not in a table yet back into memtables: with 64 MiB memtables a
/// store's small keyspaces (lookups, per-file map, summary, journal) never
/// flushed, and re-inserting their ~70k entries was most of a 10k-chunk
/// store's ~150 ms open. fjall keeps this per keyspace from its creation,
/// so stores made before keep their 64 MiB.
const MEMTABLE_BYTES: u64 = 256 * 1024;

const SEQ: &str = "seq";
const NEXT_ID: &str = "next_id";
const GEN: &str = "gen";

fn embed_key(gen: u32, id: ChunkId) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&gen.to_be_bytes());
    k[4..].copy_from_slice(&id.to_be_bytes());
    k
}

/// `u32 text length ++ text ++ f32s`, all little-endian.
fn encode_embed(text: &str, v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + text.len() + v.len() * 4);
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&vector_to_bytes(v));
    out
}

fn decode_embed(b: &[u8]) -> Option<(String, Vec<f32>)> {
    let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let text = std::str::from_utf8(b.get(4..4 + len)?).ok()?.to_string();
    Some((text, vector_from_bytes(b.get(4 + len..)?)))
}

fn be(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

fn read_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

fn lookup_key(kind: u8, value: &str, id: ChunkId) -> Vec<u8> {
    let mut k = Vec::with_capacity(value.len() + 11);
    k.push(kind);
    k.push(0);
    k.extend_from_slice(value.as_bytes());
    k.push(0);
    k.extend_from_slice(&be(id));
    k
}

fn lookup_prefix(kind: u8, value: &str) -> Vec<u8> {
    let mut k = vec![kind, 0];
    k.extend_from_slice(value.as_bytes());
    k.push(0);
    k
}

/// Vectors as little-endian bytes.
pub fn vector_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

pub fn vector_from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Store {
    /// Open (or create) the store in `dir`, taking the one-owner lock first.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with(dir, StoreOptions::default())
    }

    /// [`Store::open`] with explicit write options.
    pub fn open_with(dir: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        crate::paths::ensure_dir(dir, 0o700).map_err(|e| StoreError::Open {
            path: dir.into(),
            reason: e.to_string(),
        })?;
        let lock = lock::acquire(dir)?;
        let handles = recover::Handles::open(dir)?;
        let gen = handles.meta.get(GEN)?.and_then(|v| read_u64(&v)).unwrap_or(0) as u32;
        let store = Store {
            handles: std::sync::Mutex::new(Some(std::sync::Arc::new(handles))),
            recovery: std::sync::Mutex::new(()),
            damaged: std::sync::atomic::AtomicBool::new(false),
            dir: dir.to_path_buf(),
            gen: std::sync::atomic::AtomicU32::new(gen),
            options,
            _lock: lock,
        };
        store.drop_unfinished_commit()?;
        store.ensure_files_map()?;
        store.ensure_docs_map()?;
        store.ensure_log()?;
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn meta_u64(&self, key: &str) -> Result<u64, StoreError> {
        let h = self.h()?;
        Ok(h.meta.get(key)?.and_then(|v| read_u64(&v)).unwrap_or(0))
    }

    /// The last committed sequence number (0 for an empty store).
    pub fn seq(&self) -> Result<Seq, StoreError> {
        self.meta_u64(SEQ)
    }

    pub fn meta_string(&self, key: &str) -> Result<Option<String>, StoreError> {
        let h = self.h()?;
        Ok(h.meta.get(key)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    pub fn set_meta_string(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            b.insert(&h.meta, key, value.as_bytes());
            b.commit()?;
            Ok(())
        })
    }

    /// The current embedding generation.
    pub fn generation(&self) -> Result<u32, StoreError> {
        Ok(self.gen.load(std::sync::atomic::Ordering::Acquire))
    }

    /// A chunk with its embedded text from the current generation.
    pub fn get(&self, id: ChunkId) -> Result<Option<ChunkRecord>, StoreError> {
        if crate::failpoint::hit("store_get") {
            return Err(StoreError::Corrupt {
                id: id.to_string(),
                reason: "failpoint store_get".into(),
            });
        }
        let Some(mut rec) = self.get_bare(id)? else {
            return Ok(None);
        };
        if let Some((text, _)) = self.embedding(self.generation()?, id)? {
            rec.embed_text = text;
        }
        Ok(Some(rec))
    }

    /// A chunk's stored bytes (what the event log digests and keeps) and
    /// its record.
    fn get_raw(&self, id: ChunkId) -> Result<Option<(Vec<u8>, ChunkRecord)>, StoreError> {
        let h = self.h()?;
        let Some(v) = h.chunks.get(be(id))? else {
            return Ok(None);
        };
        let rec = serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
            id: id.to_string(),
            reason: e.to_string(),
        })?;
        Ok(Some((v.to_vec(), rec)))
    }

    fn get_bare(&self, id: ChunkId) -> Result<Option<ChunkRecord>, StoreError> {
        let h = self.h()?;
        match h.chunks.get(be(id))? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v).map(Some).map_err(|e| StoreError::Corrupt {
                id: id.to_string(),
                reason: e.to_string(),
            }),
        }
    }

    /// Embedded text and vector of a chunk in a generation.
    pub fn embedding(&self, gen: u32, id: ChunkId) -> Result<Option<(String, Vec<f32>)>, StoreError> {
        let h = self.h()?;
        match h.embeds.get(embed_key(gen, id))? {
            None => Ok(None),
            Some(b) => decode_embed(&b).map(Some).ok_or_else(|| StoreError::Corrupt {
                id: id.to_string(),
                reason: "bad embedding record".into(),
            }),
        }
    }

    pub fn vector(&self, id: ChunkId) -> Result<Option<Vec<f32>>, StoreError> {
        Ok(self.embedding(self.generation()?, id)?.map(|(_, v)| v))
    }

    /// Write embeddings for a generation that is not current yet (reindex).
    /// Not journaled: derived indexes for that generation are built directly.
    pub fn put_embeddings(&self, gen: u32, items: &[(ChunkId, String, Vec<f32>)]) -> Result<(), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let mut b = h.db.batch();
            for (id, text, v) in items {
                b.insert(&h.embeds, embed_key(gen, *id), encode_embed(text, v));
            }
            b.commit()?;
            Ok(())
        })
    }

    /// Make `gen` current (and record its model) in one durable batch, and
    /// bump the sequence number so derived indexes of `gen` can be stamped
    /// with it.
    pub fn switch_generation(&self, gen: u32, model: &str) -> Result<Seq, StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let seq = self.seq()? + 1;
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            b.insert(&h.meta, GEN, be(gen as u64).as_slice());
            b.insert(&h.meta, "embed_model", model.as_bytes());
            b.insert(&h.meta, SEQ, be(seq).as_slice());
            b.commit()?;
            self.gen.store(gen, std::sync::atomic::Ordering::Release);
            Ok(seq)
        })
    }

    /// Delete every embedding of a generation (after a switch, or an
    /// abandoned reindex).
    pub fn drop_generation(&self, gen: u32) -> Result<(), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let keys: Vec<_> = h
                .embeds
                .prefix(gen.to_be_bytes())
                .map(|g| g.key())
                .collect::<Result<_, _>>()?;
            for chunk in keys.chunks(10_000) {
                let mut b = h.db.batch();
                for k in chunk {
                    b.remove(&h.embeds, k.clone());
                }
                b.commit()?;
            }
            Ok(())
        })
    }

    /// Generations that have embeddings stored (normally just the current one).
    pub fn generations_present(&self) -> Result<Vec<u32>, StoreError> {
        let h = self.h()?;
        let mut out = Vec::new();
        let mut from = 0u32;
        loop {
            let Some(g) = h.embeds.range(from.to_be_bytes()..).next() else {
                break;
            };
            let k = g.key()?;
            let Some(gen) = k.get(..4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes) else {
                break;
            };
            out.push(gen);
            match gen.checked_add(1) {
                Some(n) => from = n,
                None => break,
            }
        }
        Ok(out)
    }

    /// Every chunk, in id order, without `embed_text` (see [`Store::embedding`]).
    pub fn iter_chunks(&self) -> impl Iterator<Item = Result<ChunkRecord, StoreError>> + '_ {
        self.committed().map(|g| {
            let (_, v) = g?.into_inner()?;
            serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                id: "?".into(),
                reason: e.to_string(),
            })
        })
    }

    /// [`Store::iter_chunks`] without the text: each record's `text` is
    /// empty (serde skips it unallocated), for passes that only read
    /// metadata — `kb stats`, `kb list` — and would otherwise copy every
    /// chunk's text out of the store.
    pub fn iter_chunk_meta(&self) -> impl Iterator<Item = Result<ChunkRecord, StoreError>> + '_ {
        #[derive(Deserialize)]
        struct MetaOnly {
            id: ChunkId,
            meta: Metadata,
        }
        self.committed().map(|g| {
            let (_, v) = g?.into_inner()?;
            let m: MetaOnly = serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                id: "?".into(),
                reason: e.to_string(),
            })?;
            Ok(ChunkRecord {
                id: m.id,
                text: String::new(),
                embed_text: String::new(),
                meta: m.meta,
            })
        })
    }

    /// The chunk records of finished commits: ids below `next_id` (a bulk
    /// commit's ingested records above it are not committed yet, or never
    /// will be). `next_id` unreadable reads as "everything".
    fn committed(&self) -> recover::Committed {
        let h = match self.h() {
            Ok(h) => h,
            Err(e) => return recover::Committed::Failed(Some(e)),
        };
        let iter = match self.meta_u64(NEXT_ID) {
            Ok(next) if next > 0 => h.chunks.range(..be(next)),
            _ => h.chunks.iter(),
        };
        recover::Committed::Open { _handles: h, iter }
    }

    pub fn all_ids(&self) -> Result<Vec<ChunkId>, StoreError> {
        let mut out = Vec::new();
        for g in self.committed() {
            let k = g?.key()?;
            if let Some(id) = read_u64(&k) {
                out.push(id);
            }
        }
        Ok(out)
    }

    pub fn count(&self) -> Result<usize, StoreError> {
        let mut n = 0;
        for g in self.committed() {
            g?.key()?;
            n += 1;
        }
        Ok(n)
    }

    /// Chunk ids whose `source` (kind b's') or `file_path` (b'f') equals value.
    pub fn ids_by(&self, field: LookupField, value: &str) -> Result<Vec<ChunkId>, StoreError> {
        let h = self.h()?;
        let prefix = lookup_prefix(field.tag(), value);
        // A bulk commit's lookups are ingested before its batch: ids at or
        // above `next_id` are not committed (yet).
        let next = match self.meta_u64(NEXT_ID)? {
            0 => u64::MAX,
            n => n,
        };
        let mut out = Vec::new();
        for g in h.by_key.prefix(&prefix) {
            let k = g.key()?;
            if let Some(id) = k.get(prefix.len()..).and_then(read_u64) {
                if id < next {
                    out.push(id);
                }
            }
        }
        Ok(out)
    }

    /// Journal entries with seq > `after`, oldest first.
    pub fn journal_since(&self, after: Seq) -> Result<Vec<JournalEntry>, StoreError> {
        let h = self.h()?;
        let mut out = Vec::new();
        for g in h.journal.range(be(after.saturating_add(1))..) {
            let (_, v) = g.into_inner()?;
            out.push(serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                id: "journal".into(),
                reason: e.to_string(),
            })?);
        }
        Ok(out)
    }

    /// Forget journal entries every derived index has applied.
    pub fn prune_journal(&self, upto: Seq) -> Result<(), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            let keys: Vec<_> = h
                .journal
                .range(..=be(upto))
                .map(|g| g.key())
                .collect::<Result<_, _>>()?;
            if keys.is_empty() {
                return Ok(());
            }
            let mut b = h.db.batch();
            for k in keys {
                b.remove(&h.journal, k);
            }
            b.commit()?;
            Ok(())
        })
    }

    /// The only write of chunks: delete `delete` and add `add` in one atomic,
    /// durable batch together with its journal entry and its events (one
    /// per document changed, see [`events`]). Returns the new seq and the
    /// ids given to the added chunks (in order).
    pub fn commit(
        &self,
        add: Vec<NewChunk>,
        delete: &[ChunkId],
        cause: &Cause,
    ) -> Result<(Seq, Vec<ChunkId>), StoreError> {
        self.writing(|| {
            let h = self.h()?;
            for c in &add {
                check_lookups(&c.meta)?;
            }
            let seq = self.seq()? + 1;
            let gen = self.generation()?;
            let mut next = self.meta_u64(NEXT_ID)?.max(1);
            let mut b = h.db.batch().durability(Some(PersistMode::SyncAll));
            let mut files = files::FileChanges::default();
            let mut docs = docs::DocChanges::default();
            let mut log = events::LogBatch::new(cause);
            let deleted = self.delete_in(&mut b, delete, (&mut files, &mut docs, &mut log))?;
            let mut added = Vec::with_capacity(add.len());
            let new_bytes: usize = add
                .iter()
                .map(|c| c.text.len() + c.embed_text.len() + c.vector.len() * 4)
                .sum();
            let bulk = !add.is_empty() && new_bytes >= self.options.bulk_write_bytes;
            let (mut bulk_chunks, mut bulk_embeds, mut bulk_lookups) = (Vec::new(), Vec::new(), Vec::new());
            for c in add {
                if next >= u32::MAX as u64 {
                    return Err(StoreError::IdsExhausted);
                }
                let id = next;
                next += 1;
                let rec = ChunkRecord {
                    id,
                    text: c.text,
                    embed_text: String::new(),
                    meta: c.meta,
                };
                let json = serde_json::to_vec(&rec).map_err(|e| StoreError::Corrupt {
                    id: id.to_string(),
                    reason: e.to_string(),
                })?;
                for (field, value) in lookups(&rec.meta) {
                    let k = lookup_key(field.tag(), &value, id);
                    if bulk {
                        bulk_lookups.push((k, Vec::new()));
                    } else {
                        b.insert(&h.by_key, k, b"".as_slice());
                    }
                }
                files.write(&rec.meta);
                docs.change(id, None, Some(&rec.meta));
                log.add(&json, &rec.meta);
                let embed = encode_embed(&c.embed_text, &c.vector);
                if bulk {
                    bulk_chunks.push((be(id).to_vec(), json));
                    bulk_embeds.push((embed_key(gen, id).to_vec(), embed));
                } else {
                    b.insert(&h.chunks, be(id), json);
                    b.insert(&h.embeds, embed_key(gen, id), embed);
                }
                added.push(id);
            }
            let entry = JournalEntry {
                seq,
                added: added.clone(),
                deleted,
                meta_updated: vec![],
            };
            let file_puts = self.apply_file_changes(&mut b, files)?;
            let doc_puts = self.apply_doc_changes(&mut b, docs)?;
            self.put_journal(&mut b, &entry)?;
            let log_puts = self.write_log(&mut b, log, seq)?;
            b.insert(&h.meta, NEXT_ID, be(next).as_slice());
            if !bulk {
                log_puts.insert(&mut b, &h);
                for (k, v) in file_puts {
                    b.insert(&h.files, k, v);
                }
                for (k, v) in doc_puts {
                    b.insert(&h.docs, k, v);
                }
                b.commit()?;
                return Ok((seq, added));
            }
            // Ids were allocated upward, so the record and vector lists are in
            // key order, as ingestion requires; none is visible until `next_id`
            // passes it. The records go first: an ingested map entry then
            // always comes with orphan records, which is how an open knows to
            // rebuild the maps (see `drop_unfinished_commit`).
            bulk_lookups.sort_unstable();
            bulk_lookups.dedup();
            let written = self
                .ingest(&h.chunks, bulk_chunks)
                .and_then(|()| self.ingest(&h.embeds, bulk_embeds))
                // Two lookups per chunk, and an entry per file and document,
                // were most of what a journal replay re-read after a first
                // index; the lookups too wait for `next_id` (see `ids_by`).
                .and_then(|()| self.ingest(&h.by_key, bulk_lookups))
                .and_then(|()| self.ingest(&h.files, file_puts))
                .and_then(|()| self.ingest(&h.docs, doc_puts))
                // The events too: ids at or above `next_event` are an
                // unfinished commit's, like records above `next_id`.
                .and_then(|()| self.ingest(&h.events, log_puts.events))
                .and_then(|()| self.ingest(&h.logstate, log_puts.states))
                .and_then(|()| {
                    crate::failpoint::abort_at("store_ingested");
                    if crate::failpoint::hit("store_bulk_batch") {
                        return Err(StoreError::Fjall("failpoint store_bulk_batch".into()));
                    }
                    b.commit().map_err(StoreError::from)
                });
            if let Err(e) = written {
                // The ingested map entries are visible already: put the maps
                // back to what the committed chunks say before anyone reads
                // them. Should that fail too, the next open does it.
                if let Err(repair) = self.repair_unfinished_commit() {
                    tracing::error!(error = %repair, "a failed bulk commit could not be cleaned up now; the next open of the store will");
                }
                return Err(e);
            }
            Ok((seq, added))
        })
    }

    fn put_journal(&self, b: &mut fjall::OwnedWriteBatch, entry: &JournalEntry) -> Result<(), StoreError> {
        let h = self.h()?;
        let json = serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt {
            id: "journal".into(),
            reason: e.to_string(),
        })?;
        b.insert(&h.journal, be(entry.seq), json);
        b.insert(&h.meta, SEQ, be(entry.seq).as_slice());
        Ok(())
    }

    pub fn disk_bytes(&self) -> u64 {
        self.h().map_or(0, |h| h.db.disk_space().unwrap_or(0))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupField {
    Source,
    FilePath,
}

impl LookupField {
    fn tag(self) -> u8 {
        match self {
            LookupField::Source => b's',
            LookupField::FilePath => b'f',
        }
    }
}

/// The longest `source` or `file_path` a chunk may carry: both become part
/// of a lookup key, and fjall panics on a key over 64 KiB.
pub const MAX_LOOKUP_BYTES: usize = 8192;

/// Refuse metadata whose lookup values could not be keys.
fn check_lookups(meta: &Metadata) -> Result<(), StoreError> {
    for (field, value) in lookups(meta) {
        if value.len() > MAX_LOOKUP_BYTES {
            let field = match field {
                LookupField::Source => "source",
                LookupField::FilePath => "file_path",
            };
            return Err(StoreError::LookupTooLong {
                field,
                len: value.len(),
            });
        }
    }
    Ok(())
}

fn lookups(meta: &Metadata) -> Vec<(LookupField, String)> {
    let mut out = Vec::new();
    if let Some(s) = meta.get("source").and_then(|v| v.as_str()) {
        out.push((LookupField::Source, s.to_string()));
    }
    if let Some(s) = meta.get("file_path").and_then(|v| v.as_str()) {
        out.push((LookupField::FilePath, s.to_string()));
    }
    out
}

#[cfg(test)]
mod tests;
