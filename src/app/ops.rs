//! Knowledge-base operations every edge shares: search, listing, counts,
//! schema, metadata corrections and removal. Each opens the shared
//! [`Kb`](crate::kb::Kb) through the [`App`] and returns plain types; the
//! edges decide how to show them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::index::Filter;
use crate::kb::eval::{EvalOptions, EvalReport, EvalSet};
use crate::kb::maintain::DiskUsage;
use crate::kb::ops::{DocumentPage, DocumentRef, DocumentSummary};
use crate::kb::search::{DocHit, Hit, SearchRequest};
use crate::kb::{Actor, KbError};

use super::{App, AppError};

/// Why a knowledge-base operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// The application could not provide the knowledge base.
    #[error(transparent)]
    App(#[from] AppError),
    /// The knowledge base refused or failed.
    #[error(transparent)]
    Kb(#[from] KbError),
    /// `schema KEY` named a key no chunk carries.
    #[error("no chunk carries the metadata key `{key}`{hint} — `jarvis kb schema` lists every key")]
    UnknownKey { key: String, hint: String },
    /// The embedding model could not be prepared (looked up or fetched).
    #[error(transparent)]
    Model(Box<super::kb::OpenError>),
    /// Doctor's probe child could not be run.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    /// A setting could not be written.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Long-term memory refused or failed.
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    /// The idle-session memory extraction failed.
    #[error(transparent)]
    Extract(#[from] crate::memory::extract::ExtractError),
    /// A prompt could not be read or written.
    #[error(transparent)]
    Prompt(#[from] crate::prompts::PromptError),
}

impl OpError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            OpError::App(e) => e.kind(),
            OpError::Kb(e) => e.kind(),
            OpError::UnknownKey { .. } => ErrorKind::NotFound,
            OpError::Model(e) => e.kind(),
            OpError::Sandbox(e) => e.kind(),
            OpError::Config(e) => e.kind(),
            OpError::Memory(e) => e.kind(),
            OpError::Extract(e) => e.kind(),
            OpError::Prompt(e) => e.kind(),
        }
    }
}

/// What `kb stats` reports.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Documents and chunks, by type, category and status, and the papers
    /// stored private (kept by the store with every commit).
    pub totals: crate::store::DocTotals,
    pub configured_model: String,
    pub recorded_model: Option<String>,
    /// The model-guard message when the vectors were built by another model.
    pub mismatch: Option<String>,
    pub usage: DiskUsage,
    /// How the dense leg searches right now (exact scan or arroy's trees).
    pub dense: crate::kb::trees::DensePath,
    /// The event log: its events and the removed chunks kept for undo.
    pub history: crate::store::LogSize,
}

/// What doctor's search probe saw.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    pub chunks: usize,
    pub documents: usize,
    pub hits: usize,
    pub search_ms: u64,
}

pub use crate::sandbox::{ChildOutcome, Ending};

/// What [`App::remove_own_entry`] removed.
#[derive(Debug, Clone)]
pub struct Removed {
    pub doc: DocumentRef,
    pub chunks: usize,
    /// The removal's event, for an Undo offered right after it.
    pub event: Option<crate::kb::EventId>,
}

impl App {
    /// Hybrid search.
    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Hit>, OpError> {
        Ok(self.kb()?.search(req)?)
    }

    /// Hybrid search grouped by document (best passage per document).
    pub fn search_documents(&self, req: &SearchRequest) -> Result<Vec<DocHit>, OpError> {
        Ok(self.kb()?.search_documents(req)?)
    }

    /// Run a retrieval evaluation set against the knowledge base.
    pub fn evaluate(
        &self,
        set: &EvalSet,
        opts: &EvalOptions,
        progress: &dyn Fn(usize, usize),
        cancel: &crate::cancel::Cancel,
    ) -> Result<EvalReport, OpError> {
        Ok(self.kb()?.evaluate(set, opts, progress, cancel)?)
    }

    /// Every fusion of [`crate::kb::tune::grid`] on one set; the best is
    /// reported, not applied.
    pub fn tune(
        &self,
        set: &EvalSet,
        opts: &EvalOptions,
        progress: &dyn Fn(usize, usize),
        cancel: &crate::cancel::Cancel,
    ) -> Result<crate::kb::tune::TuneReport, OpError> {
        Ok(self.kb()?.tune(set, opts, progress, cancel)?)
    }

    /// Write a fusion to the configuration (`rag.fusion`,
    /// `rag.dense_weight`) and use it from the next search on.
    pub fn apply_fusion(&self, fusion: &str, dense_weight: u32) -> Result<(), OpError> {
        crate::config::write::set_value(&self.home, "rag.fusion", fusion, &*self.env)?;
        crate::config::write::set_value(&self.home, "rag.dense_weight", &dense_weight.to_string(), &*self.env)?;
        self.reload_config()?;
        self.kb()?.set_fusion(crate::kb::search::Fusion::from_settings(
            fusion,
            i64::from(dense_weight),
        ));
        Ok(())
    }

    /// Doctor's probe: open, count, and search with words the index holds
    /// (so both legs have work to do), re-ranking off.
    pub fn probe_search(&self) -> Result<ProbeReport, OpError> {
        let kb = self.kb()?;
        let chunks = kb.count()?;
        let documents = kb.count_unique_documents()?;
        let query = match kb.store().iter_chunks().next() {
            Some(rec) => rec
                .map_err(KbError::from)?
                .text
                .split_whitespace()
                .take(8)
                .collect::<Vec<_>>()
                .join(" "),
            None => "knowledge base probe".to_string(),
        };
        let start = std::time::Instant::now();
        let mut req = SearchRequest::new(query, 3);
        req.rerank = false;
        let hits = kb.search(&req)?.len();
        Ok(ProbeReport {
            chunks,
            documents,
            hits,
            search_ms: start.elapsed().as_millis() as u64,
        })
    }

    /// Run `jarvis kb __probe` in a child process (so a native crash in
    /// opening or searching becomes a diagnosis). Call it while this
    /// process does not hold the knowledge base.
    pub fn probe_in_child(&self, timeout: std::time::Duration) -> Result<ChildOutcome, crate::sandbox::SandboxError> {
        crate::sandbox::run_self(&["kb", "__probe"], timeout)
    }

    /// Documents matching `filter`, newest first.
    pub fn list(&self, filter: &Filter, limit: usize) -> Result<Vec<DocumentSummary>, OpError> {
        Ok(self.kb()?.list_documents(filter, limit)?)
    }

    /// One page of the document `key` names (a paper's source or a note's
    /// file path), with the document it resolved to and whether *any* chunk
    /// of the whole document — not only this page — is private (failing
    /// closed: a chunk without a valid visibility counts as private). A
    /// source several documents share (notes all have `source = "local"`) is
    /// refused rather than read as one.
    pub fn read_document(&self, key: &str, page: usize) -> Result<(DocumentRef, DocumentPage, bool), OpError> {
        let kb = self.kb()?;
        let doc = kb.find_document(key)?;
        let first = kb.get_document_chunks(key, page)?;
        let mut private = first.chunks.iter().any(|c| c.visibility().is_private());
        for p in (1..=first.pages).filter(|p| *p != first.page) {
            if private {
                break;
            }
            private = kb
                .get_document_chunks(key, p)?
                .chunks
                .iter()
                .any(|c| c.visibility().is_private());
        }
        Ok((doc, first, private))
    }

    pub fn stats(&self) -> Result<Stats, OpError> {
        let kb = self.kb()?;
        Ok(Stats {
            totals: kb.overview()?,
            configured_model: kb.model_id(),
            recorded_model: kb.store().meta_string("embed_model").map_err(KbError::from)?,
            mismatch: kb.check_model().err().map(|e| e.to_string()),
            usage: kb.disk_usage()?,
            dense: kb.dense_path(),
            history: kb.log_size()?,
        })
    }

    /// Every metadata key with its chunk count.
    pub fn schema_keys(&self) -> Result<BTreeMap<String, usize>, OpError> {
        Ok(self.kb()?.metadata_key_counts()?)
    }

    /// One key's distinct values with chunk counts; an unknown key is an
    /// error with a "did you mean" when a close key exists.
    pub fn schema_values(&self, key: &str) -> Result<BTreeMap<String, usize>, OpError> {
        let kb = self.kb()?;
        let values = kb.metadata_value_counts(key)?;
        if !values.is_empty() {
            return Ok(values);
        }
        let keys = kb.metadata_key_counts()?;
        let hint = keys
            .keys()
            .map(|k| (strsim::jaro_winkler(k, key), k))
            .filter(|(s, _)| *s > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| format!(" (did you mean `{k}`?)"))
            .unwrap_or_default();
        Err(OpError::UnknownKey {
            key: key.to_string(),
            hint,
        })
    }

    /// Correct a paper's title, authors or DOI (metadata only). Returns the
    /// number of chunks changed.
    pub fn set_meta(
        &self,
        source: &str,
        title: Option<&str>,
        authors: Option<&str>,
        doi: Option<&str>,
        actor: &Actor,
    ) -> Result<usize, OpError> {
        let kb = self.kb()?;
        // Resolve the key first: notes all share `source = "local"`, and a
        // note's title comes from the note itself (`Kb::own_entry`).
        kb.own_entry(source)?;
        Ok(kb.update_paper_metadata(source, title, authors, doi, actor)?)
    }

    /// The listing row of the one document whose source is `source`.
    pub fn document_summary(&self, source: &str) -> Result<DocumentSummary, OpError> {
        let filter = Filter {
            source: Some(source.to_string()),
            ..Filter::default()
        };
        self.list(&filter, 2)?
            .into_iter()
            .find(|d| d.source == source)
            .ok_or_else(|| {
                KbError::NotFound(format!("no document has source {source:?} — list the documents again")).into()
            })
    }

    /// Remove a paper's or digest's entry from the Library (the web's
    /// removal, scoped like corrections by `Kb::own_entry`): database
    /// entries only, the local file is never touched.
    pub fn remove_own_entry(&self, source: &str, actor: &Actor) -> Result<Removed, OpError> {
        let kb = self.kb()?;
        let doc = kb.own_entry(source)?;
        let chunks = kb.remove_document(&doc, actor)?;
        let event = kb.last_event_of(&doc.key)?;
        Ok(Removed { doc, chunks, event })
    }

    /// The document a `remove` would delete, and the local file it came
    /// from (never touched). Refuses under a model mismatch, as the removal
    /// itself would.
    pub fn removal_preview(&self, key: &str) -> Result<(DocumentRef, Option<PathBuf>), OpError> {
        let kb = self.kb()?;
        kb.check_model()?;
        let doc = kb.find_document(key)?;
        let local = self.local_path(&doc);
        Ok((doc, local))
    }

    /// Remove one document's database entry; returns the chunks removed.
    pub fn remove(&self, doc: &DocumentRef, actor: &Actor) -> Result<usize, OpError> {
        Ok(self.kb()?.remove_document(doc, actor)?)
    }

    /// The local file a document came from, as a full path: notes store a
    /// vault-relative path, local PDFs an absolute one.
    fn local_path(&self, p: &DocumentRef) -> Option<PathBuf> {
        let fp = p.file_path.as_deref().filter(|f| !f.is_empty())?;
        let path = PathBuf::from(fp);
        if path.is_absolute() {
            return Some(path);
        }
        Some(match self.config().path("vault.path") {
            Some(vault) => vault.join(path),
            None => path,
        })
    }
}
