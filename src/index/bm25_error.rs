//! The BM25 index's errors, and what an edge should make of each.
//! Must not: hide a full disk behind tantivy's words (`Bm25Index` turns
//! one into [`Bm25Error::DiskFull`] naming its directory).

use std::path::PathBuf;

use tantivy::TantivyError;
use thiserror::Error;

/// What went wrong in the BM25 index, and what to do about it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Bm25Error {
    /// The directory could not be created or opened.
    #[error("cannot open the BM25 index directory {path}: {source}; check it exists and is writable, or delete it and run `jarvis kb reindex`")]
    Open {
        /// The index directory.
        path: PathBuf,
        /// The underlying cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The index on disk has another schema (an older or newer Jarvis).
    #[error(
        "the BM25 index at {path} was built with a different schema ({detail}); run `jarvis kb reindex` to rebuild it"
    )]
    SchemaMismatch {
        /// The index directory.
        path: PathBuf,
        /// Tantivy's description of the mismatch.
        detail: String,
    },
    /// Another writer holds the index lock.
    #[error("the BM25 index at {path} is locked by another writer; only one Jarvis process may own the data directory, so stop the other one (`jarvis serve` / `jarvis sync`) and retry")]
    Locked {
        /// The index directory.
        path: PathBuf,
    },
    /// The commit payload is not a sequence number.
    #[error("the BM25 index commit payload {payload:?} is not a sequence number, so the index is damaged; run `jarvis kb reindex`")]
    BadPayload {
        /// The payload found.
        payload: String,
    },
    /// A write ran out of disk space.
    #[error("the disk holding the BM25 index ({}) is full — {}", path.display(), crate::error_kind::DISK_FULL_FIX)]
    DiskFull {
        /// The index directory.
        path: PathBuf,
    },
    /// Any other tantivy failure.
    #[error("BM25 index failed while trying to {action}: {source}; if it persists, run `jarvis kb doctor`")]
    Tantivy {
        /// What the index was doing.
        action: &'static str,
        /// The underlying tantivy error.
        #[source]
        source: TantivyError,
    },
}

impl Bm25Error {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            Bm25Error::Open { .. } | Bm25Error::DiskFull { .. } => ErrorKind::Unavailable,
            Bm25Error::SchemaMismatch { .. } | Bm25Error::Locked { .. } => ErrorKind::Conflict,
            Bm25Error::BadPayload { .. } | Bm25Error::Tantivy { .. } => ErrorKind::Internal,
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, Bm25Error>;

pub(super) fn tantivy_err(action: &'static str) -> impl FnOnce(TantivyError) -> Bm25Error {
    move |source| Bm25Error::Tantivy { action, source }
}
