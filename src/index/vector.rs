//! The persistent vector index: arroy (random-projection trees, cosine
//! distance) in an LMDB environment via heed.
//!
//! Owns one LMDB environment directory holding two databases: `vectors`
//! (arroy's items and trees) and `meta` (dimensions and the store sequence
//! number the index reflects). This is the only module that imports arroy or
//! heed, so a later swap to hannoy stays local.
//!
//! It must not decide what is visible: a filtered search receives the
//! bitmap of allowed chunk ids from the caller and hands it to arroy as
//! `candidates`, so vectors outside the pool are never compared with the
//! query at all.
//!
//! # Ids
//! Arroy item ids are `u32`. Rather than keep a `ChunkId ↔ u32` table that
//! could drift from the store, the chunk id *is* the item id: the store
//! allocates chunk ids below 2³² (see [`ChunkId`]) and [`VectorIndex::add`]
//! rejects larger ones. Candidate bitmaps are therefore just sets of chunk ids.
//!
//! # Durability
//! [`VectorIndex::add`], [`VectorIndex::delete`] and [`VectorIndex::clear`]
//! only stage changes in memory. [`VectorIndex::commit`] applies them, runs
//! arroy's incremental build (only changed items are re-inserted into the
//! trees), and records the sequence number in `meta`, all in one LMDB write
//! transaction: after a crash the environment is either wholly before or
//! wholly after the commit. Adding an existing id replaces its vector and
//! deleting a missing id is a no-op, so the store can replay its journal.
//!
//! # Sizes and speed
//! The environment reserves [`MAP_SIZE`] (16 GiB) of *virtual* address
//! space; the file only grows as data is written (about 1.5 KiB per 384-d
//! vector plus trees). Search effort is [`SearchParams::oversampling`]; see
//! its docs for the measured recall/latency trade-off.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use arroy::distances::Cosine;
use arroy::{Reader, Writer};
use heed::types::{Bytes, Str};
use heed::{CommitOrAbort, Env, EnvOpenOptions, WithoutTls};
use rand_arroy::rngs::StdRng;
use rand_arroy::SeedableRng;
use roaring::RoaringBitmap;
use thiserror::Error;

use super::ChunkId;

/// Dimensions of the bundled all-MiniLM-L6-v2 embeddings.
pub const DEFAULT_DIMENSIONS: usize = 384;
/// Virtual address space reserved for the LMDB map. LMDB needs a fixed upper
/// bound; 16 GiB holds millions of 384-d chunks and costs no disk or RAM
/// until used.
pub const MAP_SIZE: usize = 16 * 1024 * 1024 * 1024;

const ARROY_INDEX: u16 = 0;
const KEY_DIMENSIONS: &str = "dimensions";
const KEY_SEQ: &str = "committed_seq";
/// Fixed seed so that rebuilding from the same inputs gives the same trees.
const TREE_SEED: u64 = 0x6a61_7276_6973;

type ArroyDb = arroy::Database<'static, Cosine>;
type MetaDb = heed::Database<'static, Str, Bytes>;

/// What went wrong in the vector index, and what to do about it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VectorError {
    /// The directory or LMDB environment could not be opened.
    #[error("cannot open the vector index at {path}: {source}; check it exists and is writable, or delete it and run `jarvis kb reindex`")]
    Open {
        /// The index directory.
        path: PathBuf,
        /// The underlying cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The index holds vectors of another size (another embedding model).
    #[error("the vector index at {path} holds {stored}-dimensional vectors but {requested} were requested; the embedding model changed, so run `jarvis kb reindex`")]
    DimensionMismatch {
        /// The index directory.
        path: PathBuf,
        /// Dimensions recorded in the index.
        stored: usize,
        /// Dimensions asked for.
        requested: usize,
    },
    /// A vector passed in has the wrong length.
    #[error("vector for {what} has {got} dimensions, expected {expected}; the embedder and the index disagree, so run `jarvis kb reindex`")]
    WrongLength {
        /// Which vector (a chunk id or "the query").
        what: String,
        /// Its length.
        got: usize,
        /// The index's dimensions.
        expected: usize,
    },
    /// A vector is all zeros or holds NaN/infinity, so it has no direction.
    #[error("vector for {what} is zero or not finite and has no cosine direction; this is an embedder bug, please report it")]
    Degenerate {
        /// Which vector.
        what: String,
    },
    /// The chunk id does not fit an arroy item id.
    #[error("chunk id {0} is above 4294967295 and cannot be stored in the vector index; the store must allocate chunk ids below 2^32")]
    IdOutOfRange(ChunkId),
    /// Metadata in the index could not be decoded.
    #[error("the vector index metadata key {key:?} is damaged; run `jarvis kb reindex`")]
    BadMetadata {
        /// The metadata key.
        key: &'static str,
    },
    /// A cancellable commit was cancelled; nothing was written.
    #[error("vector index build cancelled; nothing was written and the staged changes are kept")]
    Cancelled,
    /// Any other LMDB or arroy failure.
    #[error("vector index failed while trying to {action}: {source}; if it persists, run `jarvis kb doctor`")]
    Engine {
        /// What the index was doing.
        action: &'static str,
        /// The underlying error.
        #[source]
        source: arroy::Error,
    },
}

impl VectorError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            VectorError::Open { .. } => ErrorKind::Unavailable,
            VectorError::DimensionMismatch { .. } => ErrorKind::Conflict,
            VectorError::Cancelled => ErrorKind::Cancelled,
            VectorError::WrongLength { .. }
            | VectorError::Degenerate { .. }
            | VectorError::IdOutOfRange(_)
            | VectorError::BadMetadata { .. }
            | VectorError::Engine { .. } => ErrorKind::Internal,
        }
    }
}

type Result<T> = std::result::Result<T, VectorError>;

fn engine(action: &'static str) -> impl FnOnce(arroy::Error) -> VectorError {
    move |source| VectorError::Engine { action, source }
}

fn lmdb(action: &'static str) -> impl FnOnce(heed::Error) -> VectorError {
    move |e| VectorError::Engine {
        action,
        source: arroy::Error::Heed(e),
    }
}

/// How hard a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchParams {
    /// Multiplies arroy's default search budget (`count × number of trees`
    /// leaf items visited, where `count` is what the caller asks for — the
    /// knowledge base asks for 50 for its dense leg). Higher means better
    /// recall and slower queries. The default, 16, with [`DEFAULT_TREES`]
    /// (64) keeps the budget of arroy's own ~129 trees at 8 that SciFact's
    /// hybrid nDCG@10 (0.7207) was measured with: at 64 trees and 8 it fell
    /// to 0.7194, under the 0.72 floor. At equal budget fewer trees cost
    /// about the same per query (SciFact, real vectors: 129 trees × 8 →
    /// recall@10 0.999 in 4.9 ms; 32 × 32 → 0.999 in 4.6 ms; 16 × 32 →
    /// 0.999 in 3.9 ms), so the saving is in build time and index size.
    /// `cargo xtask bench kb --sweep` prints the whole trade-off. Filtered searches over less than half
    /// the index are exact whatever this is: arroy then scores the
    /// candidates directly instead of walking trees.
    pub oversampling: NonZeroUsize,
    /// Searches ask arroy for at least this many neighbours (then truncate),
    /// so tiny limits still get a reasonable search budget.
    pub min_count: usize,
}

impl Default for SearchParams {
    fn default() -> Self {
        Self {
            oversampling: NonZeroUsize::new(16).unwrap_or(NonZeroUsize::MIN),
            min_count: 10,
        }
    }
}

/// Trees the index keeps once it holds more vectors than fit one tree leaf
/// (see [`BuildParams::n_trees`]).
///
/// Left to itself arroy adds trees until their nodes outnumber the items;
/// with leaves of up to `dims` items that is ~100–130 trees at *any* size
/// (129 for SciFact's 5,183 vectors, 96 at 100k), which costs build time on
/// every commit and index size for little recall. Measured with `cargo
/// xtask bench kb` (release, busy 2-core machine), recall@10 against exact
/// search at the product's search settings (count 50, oversampling 8):
///
/// | vectors | trees | recall@10 | p50 / p95 ms | index |
/// |---|---|---|---|---|
/// | SciFact 5,183 real | auto (129) | 0.999 | 4.9 / 9.2 | 40.5 MiB |
/// | SciFact 5,183 real | 32 | 0.991 | 2.2 / 2.7 | 22.6 MiB |
/// | SciFact 5,183 real | 16 | 0.976 | 1.7 / 2.6 | 21.4 MiB |
/// | 100k synthetic | auto (96) | 0.601 | 25.7 / 45.5 | 750 MiB |
/// | 100k synthetic | 64 | 0.533 | 12.7 / 17.3 | 500 MiB |
/// | 100k synthetic | 32 | 0.420 | 12.9 / 19.8 | 447 MiB |
///
/// At 100k, 64 trees at oversampling 8 beat 96 trees at oversampling 4
/// (0.481 at 16.5 / 26.6 ms) and 32 trees at 8, so 64 is on the measured
/// front; no arroy setting reaches the 0.95 goal on the synthetic 100k set
/// within 20 ms (see docs/design/knowledge-base.md). The shipped oversampling is
/// 16, not 8 (see [`SearchParams::oversampling`]).
pub const DEFAULT_TREES: usize = 64;

/// How the trees are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuildParams {
    /// Number of random-projection trees. `None` is the shipped rule: one
    /// tree while every vector fits a single leaf (any more would be copies
    /// of it), else [`DEFAULT_TREES`]. arroy adds or drops trees at the next
    /// commit when the number changes.
    pub n_trees: Option<NonZeroUsize>,
}

impl BuildParams {
    /// Trees to build for an index of `items` vectors of `dims` dimensions.
    pub fn trees_for(&self, items: u64, dims: usize) -> usize {
        match self.n_trees {
            Some(n) => n.get(),
            // arroy keeps up to `dims` items in one leaf.
            None if items <= dims as u64 => 1,
            None => DEFAULT_TREES,
        }
    }
}

/// Where the vector index's bytes go (`bench kb` prints it; see
/// [`VectorIndex::space`]). Payload sizes are what arroy stores per entry;
/// the page counts are LMDB's, so the difference is page overhead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceReport {
    /// Stored vectors and their payload bytes (vector + norm + tag).
    pub items: u64,
    pub item_bytes: u64,
    /// Tree split planes (one dimension-sized normal each) and their bytes.
    pub split_nodes: u64,
    pub split_bytes: u64,
    /// Tree leaves (a bitmap of up to `dims` item ids each) and their bytes.
    pub descendant_nodes: u64,
    pub descendant_bytes: u64,
    /// LMDB page size.
    pub page_size: u64,
    /// Pages holding the vectors database (branch + leaf + overflow).
    pub data_pages: u64,
    /// Pages in the file (the high-water mark; the rest are free pages left
    /// by earlier commits, which LMDB reuses but never returns).
    pub file_pages: u64,
}

/// Changes staged since the last commit.
#[derive(Debug, Default)]
struct Pending {
    clear: bool,
    /// item id → new vector, or `None` for a deletion. Later calls win.
    ops: BTreeMap<u32, Option<Vec<f32>>>,
}

/// A persistent cosine-similarity index of chunk embeddings.
pub struct VectorIndex {
    path: PathBuf,
    env: Env<WithoutTls>,
    vectors: ArroyDb,
    meta: MetaDb,
    dims: usize,
    pending: Pending,
    params: SearchParams,
    build: BuildParams,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("path", &self.path)
            .field("dims", &self.dims)
            .finish_non_exhaustive()
    }
}

impl VectorIndex {
    /// Opens the index in `dir` for `dims`-dimensional vectors, creating it
    /// if needed. Fails with [`VectorError::DimensionMismatch`] if it holds
    /// vectors of another size.
    pub fn open_or_create(dir: &Path, dims: usize) -> Result<Self> {
        let open_err = |source: Box<dyn std::error::Error + Send + Sync>| VectorError::Open {
            path: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(Box::new(e)))?;
        let mut options = EnvOpenOptions::new().read_txn_without_tls();
        options.map_size(MAP_SIZE).max_dbs(4);
        // SAFETY: LMDB requires that the environment's files are not
        // modified or truncated behind its back and that one process does
        // not open the same environment with conflicting options. The data
        // directory has a single owning process (the store's lock), and this
        // module is the only code that opens this directory.
        #[allow(unsafe_code)]
        let env = unsafe { options.open(dir) }.map_err(|e| open_err(Box::new(e)))?;

        let wtxn = env.write_txn().map_err(lmdb("start a transaction"))?;
        let (vectors, meta): (ArroyDb, MetaDb) = env
            .create_databases_and_commit(wtxn, |dbo, wtxn| -> heed::Result<_> {
                let vectors = dbo.create_database(wtxn, Some("vectors"))?;
                let meta = dbo.create_database(wtxn, Some("meta"))?;
                Ok(CommitOrAbort::<_, ()>::Commit((vectors, meta)))
            })
            .map_err(lmdb("create the databases"))?
            .commit()
            .ok_or_else(|| open_err("database creation was aborted".into()))?;

        let index = Self {
            path: dir.to_owned(),
            env,
            vectors,
            meta,
            dims,
            pending: Pending::default(),
            params: SearchParams::default(),
            build: BuildParams::default(),
        };
        match index.read_u64(KEY_DIMENSIONS)? {
            Some(stored) if stored as usize != dims => {
                return Err(VectorError::DimensionMismatch {
                    path: dir.to_owned(),
                    stored: stored as usize,
                    requested: dims,
                })
            }
            Some(_) => {}
            None => {
                let mut wtxn = index.env.write_txn().map_err(lmdb("start a transaction"))?;
                index
                    .meta
                    .put(&mut wtxn, KEY_DIMENSIONS, &(dims as u64).to_be_bytes())
                    .map_err(lmdb("record dimensions"))?;
                wtxn.commit().map_err(lmdb("record dimensions"))?;
            }
        }
        tracing::debug!(path = %dir.display(), dims, "opened vector index");
        Ok(index)
    }

    /// The vectors' dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Current search effort.
    pub fn search_params(&self) -> SearchParams {
        self.params
    }

    /// Changes search effort for later searches.
    pub fn set_search_params(&mut self, params: SearchParams) {
        self.params = params;
    }

    /// Changes how later commits build the trees.
    pub fn set_build_params(&mut self, build: BuildParams) {
        self.build = build;
    }

    /// Number of trees in the committed index (0 when nothing was built).
    pub fn n_trees(&self) -> Result<usize> {
        let rtxn = self.env.read_txn().map_err(lmdb("start a read"))?;
        Ok(self.open_reader(&rtxn)?.map_or(0, |r| r.n_trees()))
    }

    /// Stages vectors for the next commit; an id already present is replaced.
    pub fn add(&mut self, items: &[(ChunkId, Vec<f32>)]) -> Result<()> {
        // Validate everything first so a bad item stages nothing.
        let mut staged = Vec::with_capacity(items.len());
        for (id, v) in items {
            let item = id.as_item_id().ok_or(VectorError::IdOutOfRange(*id))?;
            self.check_vector(v, || format!("chunk {id}"))?;
            staged.push((item, v.clone()));
        }
        for (item, v) in staged {
            self.pending.ops.insert(item, Some(v));
        }
        Ok(())
    }

    /// Stages deletion of `ids`; ids not in the index are ignored.
    pub fn delete(&mut self, ids: &[ChunkId]) {
        for id in ids {
            // An id that cannot be an item id can never have been added.
            if let Some(item) = id.as_item_id() {
                self.pending.ops.insert(item, None);
            }
        }
    }

    /// Stages removal of every vector (a full rebuild starts here).
    pub fn clear(&mut self) {
        self.pending = Pending {
            clear: true,
            ops: BTreeMap::new(),
        };
    }

    /// Drops every staged change.
    pub fn discard_uncommitted(&mut self) {
        self.pending = Pending::default();
    }

    /// Number of staged (uncommitted) item changes.
    pub fn pending_len(&self) -> usize {
        self.pending.ops.len()
    }

    /// Applies the staged changes, rebuilds the trees incrementally and
    /// records `seq`, all in one LMDB transaction. Never cancelled midway.
    pub fn commit(&mut self, seq: u64) -> Result<()> {
        self.commit_inner(seq, None)
    }

    /// Like [`VectorIndex::commit`], but `cancel` is polled during the tree
    /// build (the long part of a large rebuild). Cancelling aborts the whole
    /// transaction: nothing is written, the previous commit stays intact and
    /// the staged changes are kept, and [`VectorError::Cancelled`] is returned.
    pub fn commit_cancellable(&mut self, seq: u64, cancel: &(dyn Fn() -> bool + Sync)) -> Result<()> {
        self.commit_inner(seq, Some(cancel))
    }

    fn commit_inner(&mut self, seq: u64, cancel: Option<&(dyn Fn() -> bool + Sync)>) -> Result<()> {
        let started = std::time::Instant::now();
        let mut wtxn = self.env.write_txn().map_err(lmdb("start a transaction"))?;
        // About the size the index will have after this commit, for the tree
        // rule (read before staging: a reader refuses an unbuilt index).
        let before = if self.pending.clear {
            0
        } else {
            self.open_reader(&wtxn)?.map_or(0, |r| r.n_items())
        };
        let added = self.pending.ops.values().filter(|v| v.is_some()).count() as u64;
        let removed = self.pending.ops.len() as u64 - added;
        let items = (before + added).saturating_sub(removed);
        let writer = Writer::<Cosine>::new(self.vectors, ARROY_INDEX, self.dims);
        if self.pending.clear {
            writer.clear(&mut wtxn).map_err(engine("clear the vectors"))?;
        }
        for (&item, op) in &self.pending.ops {
            match op {
                Some(v) => writer.add_item(&mut wtxn, item, v).map_err(engine("add a vector"))?,
                None => {
                    writer.del_item(&mut wtxn, item).map_err(engine("delete a vector"))?;
                }
            }
        }
        let mut rng = StdRng::seed_from_u64(TREE_SEED ^ seq);
        let mut builder = writer.builder(&mut rng);
        builder.n_trees(self.build.trees_for(items, self.dims));
        if let Some(cancel) = cancel {
            builder.cancel(cancel);
        }
        match builder.build(&mut wtxn) {
            Ok(()) => {}
            // Dropping `wtxn` aborts the transaction: nothing was written.
            Err(arroy::Error::BuildCancelled) => return Err(VectorError::Cancelled),
            Err(e) => return Err(engine("build the trees")(e)),
        }
        self.meta
            .put(&mut wtxn, KEY_SEQ, &seq.to_be_bytes())
            .map_err(lmdb("record the sequence number"))?;
        wtxn.commit().map_err(lmdb("commit"))?;
        let changed = self.pending.ops.len();
        self.pending = Pending::default();
        tracing::debug!(seq, changed, elapsed = ?started.elapsed(), "vector index committed");
        Ok(())
    }

    /// The sequence number recorded by the last commit, or `None` if the
    /// index was never committed.
    pub fn committed_seq(&self) -> Result<Option<u64>> {
        self.read_u64(KEY_SEQ)
    }

    /// Number of committed vectors.
    pub fn len(&self) -> Result<u64> {
        let rtxn = self.env.read_txn().map_err(lmdb("start a read"))?;
        Ok(self.open_reader(&rtxn)?.map_or(0, |r| r.n_items()))
    }

    /// True when no vector is committed.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Every committed chunk id (for consistency checks).
    pub fn all_ids(&self) -> Result<RoaringBitmap> {
        let rtxn = self.env.read_txn().map_err(lmdb("start a read"))?;
        Ok(self
            .open_reader(&rtxn)?
            .map_or_else(RoaringBitmap::new, |r| r.item_ids().clone()))
    }

    /// Bytes the LMDB file occupies on disk.
    pub fn disk_size(&self) -> Result<u64> {
        self.env.real_disk_size().map_err(lmdb("measure the index"))
    }

    /// Counts where the index's bytes go: vectors, tree split planes, tree
    /// leaves, and LMDB pages in use versus in the file. Reads every entry,
    /// so it is for benchmarks and diagnostics, not for every call.
    pub fn space(&self) -> Result<SpaceReport> {
        // arroy's key: index (u16 BE), mode (u8: 2 = tree node, 3 = item),
        // item (u32 BE), padding; a tree node's value starts with its tag
        // (1 = descendants, 2 = split plane).
        const MODE_TREE: u8 = 2;
        const MODE_ITEM: u8 = 3;
        const TAG_DESCENDANTS: u8 = 1;
        const TAG_SPLIT: u8 = 2;
        let rtxn = self.env.read_txn().map_err(lmdb("start a read"))?;
        let raw = self.vectors.remap_types::<Bytes, Bytes>();
        let mut r = SpaceReport::default();
        for entry in raw.iter(&rtxn).map_err(lmdb("read the index"))? {
            let (key, value) = entry.map_err(lmdb("read the index"))?;
            let len = value.len() as u64;
            match (key.get(2), value.first()) {
                (Some(&MODE_ITEM), _) => {
                    r.items += 1;
                    r.item_bytes += len;
                }
                (Some(&MODE_TREE), Some(&TAG_SPLIT)) => {
                    r.split_nodes += 1;
                    r.split_bytes += len;
                }
                (Some(&MODE_TREE), Some(&TAG_DESCENDANTS)) => {
                    r.descendant_nodes += 1;
                    r.descendant_bytes += len;
                }
                _ => {}
            }
        }
        let stat = raw.stat(&rtxn).map_err(lmdb("read the index statistics"))?;
        r.page_size = u64::from(stat.page_size);
        r.data_pages = (stat.branch_pages + stat.leaf_pages + stat.overflow_pages) as u64;
        r.file_pages = self.disk_size()? / r.page_size.max(1);
        Ok(r)
    }

    /// The `limit` committed chunks most similar to `query`, best first, as
    /// cosine similarities in `[-1, 1]`. With `candidates`, only those chunk
    /// ids are considered (arroy never reads other vectors); an empty
    /// bitmap allows nothing.
    pub fn search(
        &self,
        query: &[f32],
        candidates: Option<&RoaringBitmap>,
        limit: usize,
    ) -> Result<Vec<(ChunkId, f32)>> {
        self.check_vector(query, || "the query".to_owned())?;
        if limit == 0 || candidates.is_some_and(RoaringBitmap::is_empty) {
            return Ok(Vec::new());
        }
        let rtxn = self.env.read_txn().map_err(lmdb("start a read"))?;
        let Some(reader) = self.open_reader(&rtxn)? else {
            return Ok(Vec::new());
        };
        let mut q = reader.nns(limit.max(self.params.min_count));
        q.oversampling(self.params.oversampling);
        if let Some(c) = candidates {
            q.candidates(c);
        }
        let hits = q.by_vector(&rtxn, query).map_err(engine("search"))?;
        // Arroy's cosine distance is (1 - cos) / 2.
        Ok(hits
            .into_iter()
            .take(limit)
            .map(|(item, d)| (ChunkId::from(item), 1.0 - 2.0 * d))
            .collect())
    }

    /// A reader, or `None` when nothing was ever built.
    fn open_reader<'t>(&self, rtxn: &'t heed::RoTxn<'t, WithoutTls>) -> Result<Option<Reader<'t, Cosine>>> {
        match Reader::open(rtxn, ARROY_INDEX, self.vectors) {
            Ok(r) => Ok(Some(r)),
            Err(arroy::Error::MissingMetadata(_)) => Ok(None),
            Err(e) => Err(engine("open a reader")(e)),
        }
    }

    fn read_u64(&self, key: &'static str) -> Result<Option<u64>> {
        let rtxn = self.env.read_txn().map_err(lmdb("start a read"))?;
        match self.meta.get(&rtxn, key).map_err(lmdb("read metadata"))? {
            None => Ok(None),
            Some(bytes) => {
                let arr: [u8; 8] = bytes.try_into().map_err(|_| VectorError::BadMetadata { key })?;
                Ok(Some(u64::from_be_bytes(arr)))
            }
        }
    }

    fn check_vector(&self, v: &[f32], what: impl Fn() -> String) -> Result<()> {
        if v.len() != self.dims {
            return Err(VectorError::WrongLength {
                what: what(),
                got: v.len(),
                expected: self.dims,
            });
        }
        let finite = v.iter().all(|x| x.is_finite());
        if !finite || v.iter().all(|&x| x == 0.0) {
            return Err(VectorError::Degenerate { what: what() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
