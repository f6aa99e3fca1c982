//! Getting the store writable again after a write failed — a full disk
//! above all — without restarting the process that owns it.
//!
//! Owns: the fjall handles ([`Handles`]) and their replacement. fjall
//! poisons its database when a journal write fails (a torn batch may end
//! the journal, and anything appended after it would be lost on recovery):
//! every later write is refused until the database is opened again, whose
//! recovery drops that torn tail. A bulk commit that failed may also have
//! left ingested map entries behind (see `bulk.rs`). So a write that fails
//! inside fjall marks the store damaged, and the next write — or read of
//! the per-file or per-document map — first reopens fjall, once no
//! operation holds the old handles, and repairs what a failed bulk commit
//! left, as an open after a crash does. A disk-full failure is reported
//! as such, naming the store's directory.
//! Must not: hold the handles' lock while an operation runs (operations
//! clone the `Arc` and let go), or give up the one-owner lock.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use super::{read_u64, Store, StoreError, GEN, MEMTABLE_BYTES};

/// How long a recovery waits for operations in flight to let go of the old
/// handles (searches take milliseconds; a long scan may hold them longer).
const REOPEN_WAIT: Duration = Duration::from_secs(10);

/// The fjall database under `rag/store/` and its keyspaces (see the
/// store's module docs for the layout).
pub(super) struct Handles {
    pub(super) db: Database,
    pub(super) chunks: Keyspace,
    pub(super) embeds: Keyspace,
    pub(super) by_key: Keyspace,
    pub(super) journal: Keyspace,
    pub(super) files: Keyspace,
    pub(super) docs: Keyspace,
    pub(super) meta: Keyspace,
    pub(super) events: Keyspace,
    pub(super) kept: Keyspace,
    pub(super) logstate: Keyspace,
    pub(super) memory: Keyspace,
}

impl Handles {
    /// Open (or create) the database of the store in `dir`.
    pub(super) fn open(dir: &Path) -> Result<Handles, StoreError> {
        let path = dir.join("store");
        let failed = |e: fjall::Error| {
            if crate::error_kind::is_disk_full(&e) {
                StoreError::DiskFull {
                    path: dir.to_path_buf(),
                }
            } else {
                StoreError::Open {
                    path: path.clone(),
                    reason: e.to_string(),
                }
            }
        };
        let db = Database::builder(&path).open().map_err(failed)?;
        let ks = |name: &str| {
            db.keyspace(name, || {
                KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES)
            })
            .map_err(failed)
        };
        Ok(Handles {
            chunks: ks("chunks")?,
            embeds: ks("embeds")?,
            by_key: ks("by_key")?,
            journal: ks("journal")?,
            files: ks("files")?,
            docs: ks("docs")?,
            meta: ks("meta")?,
            events: ks("events")?,
            kept: ks("kept")?,
            logstate: ks("logstate")?,
            memory: ks("memory")?,
            db,
        })
    }
}

impl Store {
    fn slot(&self) -> MutexGuard<'_, Option<Arc<Handles>>> {
        crate::lock::lock(&self.handles)
    }

    /// The handles, for one operation. Opens the database when a recovery
    /// could not (the disk was still full then).
    pub(super) fn h(&self) -> Result<Arc<Handles>, StoreError> {
        let mut slot = self.slot();
        if let Some(h) = slot.as_ref() {
            return Ok(h.clone());
        }
        let h = Arc::new(Handles::open(&self.dir)?);
        *slot = Some(h.clone());
        Ok(h)
    }

    /// Run one write. A failure inside fjall marks the store damaged (the
    /// next write recovers first) and a full disk is reported with the
    /// store's directory.
    pub(super) fn writing<T>(&self, write: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.recover()?;
        // fjall's background flush or compaction that ran out of disk
        // poisons the database without any write of ours failing: ask
        // before writing (flushing the journal's buffer is all it costs).
        // (Bound first: the handles must be let go before `recover`.)
        let persisted = self.h()?.db.persist(fjall::PersistMode::Buffer);
        if let Err(e) = persisted {
            tracing::warn!(dir = %self.dir.display(), error = ?e, "the store stopped taking writes after a background write failed; reopening it");
            self.damaged.store(true, Ordering::Release);
            self.recover()?;
        }
        write().map_err(|e| {
            if matches!(e, StoreError::Fjall(_) | StoreError::DiskFull { .. }) {
                self.damaged.store(true, Ordering::Release);
            }
            self.located(e)
        })
    }

    /// A disk-full error names this store's directory.
    pub(super) fn located(&self, e: StoreError) -> StoreError {
        match e {
            StoreError::DiskFull { .. } => StoreError::DiskFull { path: self.dir.clone() },
            other => other,
        }
    }

    /// After a failed write: open fjall again (dropping a torn journal
    /// tail) and undo an unfinished bulk commit, so the store is exactly
    /// its last committed state and takes writes again. A no-op when
    /// nothing failed.
    pub(super) fn recover(&self) -> Result<(), StoreError> {
        if !self.damaged.load(Ordering::Acquire) {
            return Ok(());
        }
        let _one = crate::lock::lock(&self.recovery);
        if !self.damaged.load(Ordering::Acquire) {
            return Ok(());
        }
        let deadline = Instant::now() + REOPEN_WAIT;
        loop {
            let mut slot = self.slot();
            // Only the slot holds the handles: no operation is in flight,
            // and none can start while the slot is locked.
            if slot.as_ref().is_none_or(|h| Arc::strong_count(h) == 1) {
                // fjall's directory lock goes with the last handle.
                drop(slot.take());
                let h = Arc::new(Handles::open(&self.dir).map_err(|e| self.located(e))?);
                let gen = h.meta.get(GEN)?.and_then(|v| read_u64(&v)).unwrap_or(0) as u32;
                self.gen.store(gen, Ordering::Release);
                *slot = Some(h);
                break;
            }
            drop(slot);
            if Instant::now() >= deadline {
                return Err(StoreError::Busy);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.repair_unfinished_commit().map_err(|e| self.located(e))?;
        self.damaged.store(false, Ordering::Release);
        tracing::info!(dir = %self.dir.display(), "the knowledge base store was reopened after a failed write");
        Ok(())
    }
}

/// An iteration over committed chunk records that holds the handles it
/// reads from, so no recovery swaps them underneath it.
pub(super) enum Committed {
    Open { _handles: Arc<Handles>, iter: fjall::Iter },
    Failed(Option<StoreError>),
}

impl Iterator for Committed {
    type Item = Result<fjall::Guard, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Committed::Open { iter, .. } => iter.next().map(Ok),
            Committed::Failed(e) => e.take().map(Err),
        }
    }
}
