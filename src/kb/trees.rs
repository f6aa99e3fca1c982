//! arroy above the crossover: when the library outgrows
//! `rag.exact_scan_max`, random-projection trees are built once, on a
//! background thread, and then pick the dense leg's candidates (which the
//! exact f32 re-score still ranks). Below it no trees exist at all.
//!
//! Owns the build thread and the hand-over of its result. The thread reads
//! vectors from the store (truth) as of a sequence number `S`, builds the
//! trees (cancellable), then replays the journal past `S` until it has
//! caught up with the store, and hands the index back. Searches keep
//! answering from the exact scan meanwhile; the index is installed under
//! the indexes lock when it is at least as new as the other indexes (any
//! search may do that), or after a journal replay (a commit, which holds
//! the write lock, does that).
//!
//! Must not: block a search on the build, or install trees that lag the
//! other indexes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::index::flat::FlatIndex;
use crate::index::vector::{VectorError, VectorIndex};
use crate::index::ChunkId;
use crate::store::{JournalEntry, Seq, Store};

use super::{Indexes, Kb, KbError, KbSettings, Result};

/// A finished build: the index, the store sequence it reflects, and the
/// generation it was built for.
pub(crate) struct Built {
    index: VectorIndex,
    seq: Seq,
    gen: u32,
}

/// Where the background build stands.
#[derive(Default)]
pub(crate) struct TreeSlot {
    handle: Option<JoinHandle<Result<Built>>>,
    /// A finished build that could not be installed yet (it lags the
    /// indexes and only a commit may replay the gap).
    ready: Option<Built>,
    cancel: Arc<AtomicBool>,
    /// A build failed: not retried until the knowledge base is reopened
    /// (a disk-full build would otherwise restart on every commit).
    failed: bool,
}

impl TreeSlot {
    /// Stops a running build and waits for it (the LMDB transaction is
    /// aborted, nothing half-built is kept).
    pub(crate) fn stop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.ready = None;
        self.cancel = Arc::new(AtomicBool::new(false));
    }
}

impl Drop for TreeSlot {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Which path the dense leg takes, for `kb stats` (its `dense_search`,
/// pinned in `cli/kb/tests.rs`) and the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DensePath {
    /// Every vector is scanned (int8) and re-scored exactly.
    Exact,
    /// Over the crossover, trees are being built; the exact scan answers.
    ExactWhileTreesBuild,
    /// arroy picks candidates; the exact re-score ranks them.
    Trees,
}

impl Kb {
    /// The dense leg's current path.
    pub fn dense_path(&self) -> DensePath {
        let ix = self.indexes();
        let over = ix.flat.as_ref().is_some_and(|f| f.len() > self.settings.exact_scan_max);
        let building = {
            let slot = super::lock(&self.trees);
            slot.handle.is_some() || slot.ready.is_some()
        };
        match (over, ix.vectors.is_some()) {
            (true, true) => DensePath::Trees,
            (true, false) if building => DensePath::ExactWhileTreesBuild,
            _ => DensePath::Exact,
        }
    }

    /// Starts the background build when the library is over the crossover
    /// and has no trees (nor a build under way). The caller holds the
    /// indexes lock.
    pub(crate) fn maybe_start_trees(&self, ix: &Indexes) {
        let Some(flat) = ix.flat.as_ref() else { return };
        if ix.vectors.is_some() || flat.len() <= self.settings.exact_scan_max {
            return;
        }
        let mut slot = super::lock(&self.trees);
        if slot.handle.is_some() || slot.ready.is_some() || slot.failed {
            return;
        }
        let gen = match self.store.generation() {
            Ok(g) => g,
            Err(e) => {
                tracing::warn!(error = %e, "cannot start building the vector trees");
                return;
            }
        };
        let dir = super::index_dir(self.store.dir(), gen).join("vectors");
        let store = Arc::clone(&self.store);
        let cancel = Arc::clone(&slot.cancel);
        let dims = self.spec.dims;
        tracing::info!(
            chunks = flat.len(),
            exact_scan_max = self.settings.exact_scan_max,
            "the library passed rag.exact_scan_max: building vector trees in the background"
        );
        let spawned = std::thread::Builder::new()
            .name("vector-trees".into())
            .spawn(move || build(&store, &dir, dims, gen, &cancel));
        match spawned {
            Ok(h) => slot.handle = Some(h),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the vector-tree thread");
                slot.failed = true;
            }
        }
    }

    /// Installs a finished build into `ix` if it is as new as the other
    /// indexes; with `can_replay` (the caller holds the write lock) a
    /// lagging one is first brought up by replaying the journal.
    pub(crate) fn install_trees(&self, ix: &mut Indexes, can_replay: bool) -> Result<()> {
        let mut slot = super::lock(&self.trees);
        if slot.handle.as_ref().is_some_and(JoinHandle::is_finished) {
            let h = slot.handle.take();
            match h.map(JoinHandle::join) {
                Some(Ok(Ok(built))) => slot.ready = Some(built),
                Some(Ok(Err(KbError::Cancelled))) | None => {}
                Some(Ok(Err(e))) => {
                    tracing::warn!(error = %e, "building the vector trees failed; the exact scan keeps answering (reopen to retry)");
                    slot.failed = true;
                }
                Some(Err(_)) => {
                    tracing::warn!("the vector-tree thread panicked; the exact scan keeps answering");
                    slot.failed = true;
                }
            }
        }
        let Some(built) = slot.ready.take() else { return Ok(()) };
        let Some(target) = ix.flat.as_ref().and_then(|f| f.committed_seq()) else {
            return Ok(());
        };
        if built.gen != self.store.generation()? {
            return Ok(()); // a reindex switched generations: stale, dropped
        }
        let mut built = built;
        if built.seq < target {
            if !can_replay {
                slot.ready = Some(built);
                return Ok(());
            }
            match self.replay_plan(built.seq, target)? {
                Some(entries) => {
                    replay(&self.store, &mut built.index, &entries)?;
                    built.index.commit(target)?;
                }
                None => return Ok(()), // journal gone: the next check rebuilds
            }
        }
        tracing::info!(seq = target, "vector trees ready; arroy now picks the dense candidates");
        ix.vectors = Some(built.index);
        Ok(())
    }
}

/// Opens the arroy trees in `dir` if they exist and are wanted: none are
/// kept for a library at or below `exact_scan_max` (a tenth below it, so a
/// library hovering at the line is not rebuilt at every open), and trees
/// that never committed (a build killed midway) are removed. Missing trees
/// over the line are built in the background after the catch-up.
pub(crate) fn open(dir: &Path, dims: usize, flat: &FlatIndex, settings: &KbSettings) -> Result<Option<VectorIndex>> {
    if !dir.exists() {
        return Ok(None);
    }
    let floor = settings.exact_scan_max - settings.exact_scan_max / 10;
    // A distrusted exact copy (emptied at open) says nothing about size.
    let keep = flat.committed_seq().is_none() || flat.len() > floor;
    if keep {
        // Dimensions that do not match are treated like no trees at all.
        if let Ok(v) = VectorIndex::open_or_create(dir, dims) {
            if v.committed_seq()?.is_some() {
                return Ok(Some(v));
            }
        }
    } else {
        tracing::info!(path = %dir.display(), chunks = flat.len(), "the library is under rag.exact_scan_max: removing the vector trees");
    }
    std::fs::remove_dir_all(dir).map_err(|e| {
        KbError::Vector(VectorError::Open {
            path: dir.to_path_buf(),
            source: Box::new(e),
        })
    })?;
    Ok(None)
}

/// Deletes then re-adds every id the entries touched, from the store.
pub(crate) fn replay(store: &Store, v: &mut VectorIndex, entries: &[JournalEntry]) -> Result<()> {
    let touched = super::net_touched(entries, false);
    v.delete(&touched.iter().map(|&i| ChunkId(i)).collect::<Vec<_>>());
    let mut items = Vec::new();
    for id in touched {
        if let Some(vec) = store.vector(id)? {
            items.push((ChunkId(id), vec));
        }
    }
    v.add(&items)?;
    Ok(())
}

/// The background build (see the module docs).
fn build(store: &Store, dir: &Path, dims: usize, gen: u32, cancel: &AtomicBool) -> Result<Built> {
    let started = std::time::Instant::now();
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| KbError::Invalid(format!("cannot clear {}: {e}", dir.display())))?;
    }
    let mut index = VectorIndex::open_or_create(dir, dims)?;
    let mut seq = store.seq()?;
    let mut batch = Vec::with_capacity(1000);
    for id in store.all_ids()? {
        if cancel.load(Ordering::Relaxed) {
            return Err(KbError::Cancelled);
        }
        if let Some(v) = store.vector(id)? {
            batch.push((ChunkId(id), v));
        }
        if batch.len() >= 1000 {
            index.add(&batch)?;
            batch.clear();
        }
    }
    index.add(&batch)?;
    index
        .commit_cancellable(seq, &|| cancel.load(Ordering::Relaxed))
        .map_err(|e| match e {
            VectorError::Cancelled => KbError::Cancelled,
            e => e.into(),
        })?;
    // Catch up with what was committed during the build (a few rounds at
    // most: each is much shorter than the build).
    for _ in 0..8 {
        let target = store.seq()?;
        if target == seq || cancel.load(Ordering::Relaxed) {
            break;
        }
        let entries = store.journal_since(seq)?;
        let contiguous = entries.iter().enumerate().all(|(i, e)| e.seq == seq + 1 + i as u64);
        let Some(last) = entries.last().map(|e| e.seq).filter(|_| contiguous) else {
            break;
        };
        replay(store, &mut index, &entries)?;
        index.commit(last)?;
        seq = last;
    }
    tracing::info!(
        seq,
        ms = started.elapsed().as_millis() as u64,
        "vector trees built in the background"
    );
    Ok(Built { index, seq, gen })
}
