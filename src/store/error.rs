//! The store's errors, and what an edge should make of each.
//! Must not: lose the cause of a fjall failure (a full disk is told apart,
//! and named with the store's directory by `Store::located`).

use std::path::PathBuf;

use super::lock::LockError;
use super::MAX_LOOKUP_BYTES;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error(transparent)]
    Locked(#[from] LockError),
    #[error("the knowledge base store at {path} could not be opened: {reason} — run `jarvis kb doctor`")]
    Open { path: PathBuf, reason: String },
    #[error("knowledge base storage error: {0} — run `jarvis kb doctor`")]
    Fjall(String),
    /// A write ran out of disk space; nothing of it was kept.
    #[error("the disk holding the knowledge base ({}) is full — {}", path.display(), crate::error_kind::DISK_FULL_FIX)]
    DiskFull { path: PathBuf },
    /// A recovery after a failed write waited too long for operations in
    /// flight to finish.
    #[error("the knowledge base store is reopening after a failed write and other operations still hold it — try again in a moment")]
    Busy,
    #[error("knowledge base record {id} is unreadable: {reason} — run `jarvis kb doctor`")]
    Corrupt { id: String, reason: String },
    #[error("a chunk's {field} is {len} bytes long; at most {MAX_LOOKUP_BYTES} are allowed — shorten it")]
    LookupTooLong { field: &'static str, len: usize },
    #[error("the knowledge base is full: no chunk ids left below 2^32")]
    IdsExhausted,
}

impl StoreError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            StoreError::Locked(e) => e.kind(),
            StoreError::Open { .. } | StoreError::Fjall(_) | StoreError::DiskFull { .. } | StoreError::Busy => {
                ErrorKind::Unavailable
            }
            StoreError::LookupTooLong { .. } => ErrorKind::User,
            StoreError::Corrupt { .. } | StoreError::IdsExhausted => ErrorKind::Internal,
        }
    }
}

impl From<fjall::Error> for StoreError {
    fn from(e: fjall::Error) -> Self {
        // The path is the store's, filled in by `Store::located`.
        if crate::error_kind::is_disk_full(&e) {
            StoreError::DiskFull { path: PathBuf::new() }
        } else if matches!(e, fjall::Error::Poisoned) {
            StoreError::Fjall(
                "it refuses writes after an earlier write or flush failed (most often a full disk); the next write reopens it"
                    .into(),
            )
        } else {
            StoreError::Fjall(e.to_string())
        }
    }
}
