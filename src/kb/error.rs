//! [`KbError`]: why a knowledge-base operation failed, with its kind.
//! Must not: carry anything but the failure (no recovery logic).

use crate::embed::EmbedError;
use crate::index::bm25::Bm25Error;
use crate::index::flat::FlatError;
use crate::index::vector::VectorError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KbError {
    /// The vectors were built by another model than the one configured.
    #[error("the knowledge base was built with embedding model `{stored}` but config names `{configured}` — run `jarvis kb reindex` to re-embed it with `{configured}` (or set rag.embed_model back)")]
    ModelMismatch { stored: String, configured: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("BM25 index: {0}")]
    Bm25(#[from] Bm25Error),
    #[error("vector index: {0}")]
    Vector(#[from] VectorError),
    #[error("exact vector index: {0}")]
    Flat(#[from] FlatError),
    #[error("embedding: {0}")]
    Embed(#[from] EmbedError),
    #[error("invalid chunking settings: {0}")]
    Chunker(#[from] crate::kb::chunker::ChunkerError),
    /// The embedding model (or ONNX Runtime) could not be loaded when a
    /// search or write first needed it; the source says which file and why.
    #[error("cannot load the embedding model: {0}")]
    EmbedderLoad(Box<dyn std::error::Error + Send + Sync>),
    /// The configured re-ranker could not be loaded when a search first
    /// re-ranked.
    #[error("cannot load the re-ranker named by rag.rerank_model: {0} — fix that directory, or clear rag.rerank_model (or search with --no-rerank)")]
    RerankerLoad(Box<dyn std::error::Error + Send + Sync>),
    #[error("stopped")]
    Cancelled,
    /// A document without a valid `visibility` was refused (a bug in the
    /// caller that built it; nothing was stored).
    #[error("refused to store a document without a valid visibility (found {}) — this is a bug in Jarvis; please report it", found.as_deref().unwrap_or("none"))]
    NoVisibility { found: Option<String> },
    /// A user error in an operation's input.
    #[error("{0}")]
    Invalid(String),
    /// No document has the key a user gave.
    #[error("{0}")]
    NotFound(String),
    /// A correction or a Library removal named an entry that is rebuilt
    /// from a file (a note from the vault, a chat from its session), so
    /// the next sync would undo the change.
    #[error("{key} is a {doc_type}; its entry comes from its own file and the next sync would undo a change made here — edit the {doc_type} itself instead")]
    FromItsFile { key: String, doc_type: String },
    /// An undo that cannot be done, with the reason (nothing was changed).
    #[error("cannot undo event {id}: {reason}")]
    UndoRefused { id: u64, reason: String },
    /// A bare undo found nothing of the user's it could undo.
    #[error("{0}")]
    NothingToUndo(String),
    /// Putting back a record kept in a file (a draft, a prompt, a setting,
    /// a session) failed; the message is the feature's own.
    #[error("{message}")]
    RecordFile {
        message: String,
        kind: crate::error_kind::ErrorKind,
    },
}

impl KbError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            KbError::ModelMismatch { .. } => ErrorKind::Conflict,
            KbError::Store(e) => e.kind(),
            KbError::Bm25(e) => e.kind(),
            KbError::Vector(e) => e.kind(),
            KbError::Flat(e) => e.kind(),
            KbError::Embed(e) => e.kind(),
            KbError::Chunker(e) => e.kind(),
            KbError::Cancelled => ErrorKind::Cancelled,
            KbError::Invalid(_) | KbError::FromItsFile { .. } => ErrorKind::User,
            KbError::NotFound(_) => ErrorKind::NotFound,
            KbError::UndoRefused { .. } | KbError::NothingToUndo(_) => ErrorKind::Conflict,
            KbError::RecordFile { kind, .. } => *kind,
            KbError::NoVisibility { .. } => ErrorKind::Internal,
            KbError::EmbedderLoad(_) | KbError::RerankerLoad(_) => ErrorKind::Unavailable,
        }
    }
}

pub type Result<T, E = KbError> = std::result::Result<T, E>;
