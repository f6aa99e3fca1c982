//! The JSON shapes `jarvis kb … --json` prints. Lower layers return plain
//! Rust types; these edge-side structs fix the wire shape, so a field
//! renamed in `kb` or `ingest` cannot silently change what scripts read.

use serde::Serialize;

use crate::ingest::paper::AddReport;
use crate::ingest::vault::VaultReport;
use crate::kb::maintain::{Agreement, DiskUsage, ReindexReport};
use crate::kb::ops::DocumentSummary;

/// One row of `kb list --json`.
#[derive(Debug, Serialize)]
pub struct Document {
    pub key: String,
    pub title: String,
    pub doc_type: String,
    pub visibility: String,
    pub source: String,
    pub file_path: Option<String>,
    pub chunks: usize,
    pub date_added: String,
    pub meta: std::collections::BTreeMap<String, serde_json::Value>,
}

impl From<&DocumentSummary> for Document {
    fn from(d: &DocumentSummary) -> Self {
        Document {
            key: d.key.clone(),
            title: d.title.clone(),
            doc_type: d.doc_type.clone(),
            visibility: d.visibility.to_string(),
            source: d.source.clone(),
            file_path: d.file_path.clone(),
            chunks: d.chunks,
            date_added: d.date_added.clone(),
            meta: d.meta.clone(),
        }
    }
}

/// `kb stats --json` → `disk_bytes`.
#[derive(Debug, Serialize)]
pub struct Disk {
    pub store_bytes: u64,
    pub bm25_bytes: u64,
    pub vector_bytes: u64,
    pub exact_bytes: u64,
}

impl From<&DiskUsage> for Disk {
    fn from(u: &DiskUsage) -> Self {
        Disk {
            store_bytes: u.store_bytes,
            bm25_bytes: u.bm25_bytes,
            vector_bytes: u.vector_bytes,
            exact_bytes: u.exact_bytes,
        }
    }
}

/// `kb reindex --json`.
#[derive(Debug, Serialize)]
pub struct Reindex {
    pub chunks: usize,
    pub headers_added: usize,
    pub model: String,
    pub generation: u32,
}

impl From<&ReindexReport> for Reindex {
    fn from(r: &ReindexReport) -> Self {
        Reindex {
            chunks: r.chunks,
            headers_added: r.headers_added,
            model: r.model.clone(),
            generation: r.generation,
        }
    }
}

/// `kb doctor --json` → `agreement`.
#[derive(Debug, Serialize)]
pub struct Agree {
    pub store_seq: u64,
    pub bm25_seq: Option<u64>,
    pub vector_seq: Option<u64>,
    pub trees: bool,
    pub store_chunks: usize,
    pub bm25_docs: usize,
    pub vector_items: usize,
    pub missing_in_bm25: usize,
    pub missing_in_vectors: usize,
    pub orphans_in_bm25: usize,
    pub orphans_in_vectors: usize,
    pub exact_seq: Option<u64>,
    pub exact_items: usize,
    pub missing_in_exact: usize,
    pub orphans_in_exact: usize,
    pub stale_in_exact: usize,
}

impl From<&Agreement> for Agree {
    fn from(a: &Agreement) -> Self {
        Agree {
            store_seq: a.store_seq,
            bm25_seq: a.bm25_seq,
            vector_seq: a.vector_seq,
            trees: a.trees,
            store_chunks: a.store_chunks,
            bm25_docs: a.bm25_docs,
            vector_items: a.vector_items,
            missing_in_bm25: a.missing_in_bm25,
            missing_in_vectors: a.missing_in_vectors,
            orphans_in_bm25: a.orphans_in_bm25,
            orphans_in_vectors: a.orphans_in_vectors,
            exact_seq: a.exact_seq,
            exact_items: a.exact_items,
            missing_in_exact: a.missing_in_exact,
            orphans_in_exact: a.orphans_in_exact,
            stale_in_exact: a.stale_in_exact,
        }
    }
}

/// `kb index-vault --json`.
#[derive(Debug, Serialize)]
pub struct Vault {
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub deleted: Vec<String>,
    pub unchanged: usize,
    pub reclassified: Vec<String>,
    pub restamped: usize,
    pub skipped: Vec<(String, String)>,
    pub warnings: Vec<(String, String)>,
}

impl From<&VaultReport> for Vault {
    fn from(r: &VaultReport) -> Self {
        Vault {
            added: r.added.clone(),
            updated: r.updated.clone(),
            deleted: r.deleted.clone(),
            unchanged: r.unchanged,
            reclassified: r.reclassified.clone(),
            restamped: r.restamped,
            skipped: r.skipped.clone(),
            warnings: r.warnings.clone(),
        }
    }
}

/// `kb add --json`.
#[derive(Debug, Serialize)]
pub struct Added {
    pub source: String,
    pub title: String,
    pub authors: String,
    pub doi: Option<String>,
    pub body_chunks: usize,
    pub annotation_chunks: usize,
    pub figure_chunks: usize,
    pub replaced: bool,
    pub skipped: Option<String>,
    /// `public`, or `private` for a PDF in one of the vault's private folders.
    pub visibility: &'static str,
    pub warnings: Vec<String>,
}

impl From<&AddReport> for Added {
    fn from(r: &AddReport) -> Self {
        Added {
            source: r.source.clone(),
            title: r.title.clone(),
            authors: r.authors.clone(),
            doi: r.doi.clone(),
            body_chunks: r.body_chunks,
            annotation_chunks: r.annotation_chunks,
            figure_chunks: r.figure_chunks,
            replaced: r.replaced,
            skipped: r.skipped.clone(),
            visibility: if r.private { "private" } else { "public" },
            warnings: r.warnings.clone(),
        }
    }
}
