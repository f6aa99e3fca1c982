//! The Library: `GET /documents`, `POST /documents/meta`,
//! `POST /documents/remove`.
//!
//! Human-only by construction: no chat tool calls these routes, so the
//! model cannot reach them. Parses, calls `App` (`list`, `set_meta`,
//! `remove_own_entry`) and renders rows; must not decide what may be
//! edited — that rule (papers and digests, never notes) is
//! `Kb::own_entry`'s. Removal deletes database entries only — no code
//! path here (or below) touches a file.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::doc_type::DocKind;
use crate::index::Filter;
use crate::kb::ops::DocumentSummary;
use crate::kb::Actor;
use crate::web::error::{ApiError, ApiResult, Body, Query};
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/documents", get(list))
        .route("/documents/meta", post(meta))
        .route("/documents/remove", post(remove))
}

/// The fixed line every removal states.
pub const INVARIANT: &str = "Database entry only — files on disk are never touched by jarvis";

#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

/// One Library row. Papers and notes carry different identifying fields;
/// the table's columns follow the kind.
#[derive(Serialize)]
pub struct DocumentRow {
    pub key: String,
    pub title: String,
    pub doc_type: String,
    pub private: bool,
    pub source: String,
    pub file_path: Option<String>,
    pub chunks: usize,
    pub date_added: String,
    pub authors: String,
    pub doi: String,
    pub category: String,
    pub status: String,
    pub entity: String,
    pub event_date: String,
    pub tags: Vec<String>,
    /// Where the filter's words occur in the document's text, when the row
    /// was found by its text rather than its title or path.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub found: String,
}

fn meta_str(d: &DocumentSummary, k: &str) -> String {
    d.meta.get(k).map(crate::kb::scalar_string).unwrap_or_default()
}

impl From<DocumentSummary> for DocumentRow {
    fn from(d: DocumentSummary) -> Self {
        let tags = d
            .meta
            .get("tags")
            .map(|v| match v {
                serde_json::Value::Array(a) => a.iter().map(crate::kb::scalar_string).collect(),
                other => crate::kb::split_tags(&crate::kb::scalar_string(other)),
            })
            .unwrap_or_default();
        DocumentRow {
            authors: meta_str(&d, "authors"),
            doi: meta_str(&d, "doi"),
            category: meta_str(&d, "category"),
            status: meta_str(&d, "status"),
            entity: meta_str(&d, "entity"),
            event_date: meta_str(&d, "event_date"),
            tags,
            found: String::new(),
            private: d.visibility.is_private(),
            key: d.key,
            title: d.title,
            doc_type: d.doc_type,
            source: d.source,
            file_path: d.file_path,
            chunks: d.chunks,
            date_added: d.date_added,
        }
    }
}

#[derive(Serialize)]
pub struct DocumentList {
    pub kind: &'static str,
    pub documents: Vec<DocumentRow>,
    /// Why the text itself could not be searched (the titles still were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_search: Option<String>,
}

/// How many passages the text filter looks through.
const TEXT_HITS: usize = 60;

/// Documents whose text holds `needle` (case-insensitive), with the words
/// around it: the search's passages, kept only where the words really
/// occur (a semantic neighbour is not a filter match).
fn text_matches(app: &crate::app::App, needle: &str) -> Result<std::collections::HashMap<String, String>, String> {
    let mut out = std::collections::HashMap::new();
    if needle.chars().count() < 2 {
        return Ok(out);
    }
    let hits = app
        .search(&crate::kb::search::SearchRequest::new(needle, TEXT_HITS))
        .map_err(|e| e.to_string())?;
    let lower = needle.to_lowercase();
    for h in hits {
        let key = crate::kb::search::doc_key(&h.record).to_string();
        if out.contains_key(&key) {
            continue;
        }
        if let Some(around) = around(&h.record.text, &lower, 90) {
            out.insert(key, around);
        }
    }
    Ok(out)
}

/// The words around the first occurrence of `lower` in `text`, on one
/// line, Markdown heading marks dropped.
fn around(text: &str, lower: &str, reach: usize) -> Option<String> {
    let flat = text
        .lines()
        .map(|l| l.trim_start().trim_start_matches('#'))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ");
    let chars: Vec<char> = flat.chars().collect();
    let low: Vec<char> = flat.to_lowercase().chars().collect();
    let needle: Vec<char> = lower.chars().collect();
    // Lower-casing can change a string's length (rare letters): search
    // only when it did not, so positions line up.
    if low.len() != chars.len() || needle.is_empty() {
        return None;
    }
    let at = low.windows(needle.len()).position(|w| w == needle.as_slice())?;
    let start = at.saturating_sub(reach);
    let end = (at + needle.len() + reach).min(chars.len());
    Some(chars[start..end].iter().collect())
}

/// At most this many rows per listing (a Library of thousands of papers
/// still answers quickly; search narrows it).
const LIST_LIMIT: usize = 2000;

fn matches(row: &DocumentRow, q: &str) -> bool {
    if q.is_empty() {
        return true;
    }
    let q = q.to_lowercase();
    [
        &row.title,
        &row.source,
        &row.authors,
        &row.doi,
        &row.category,
        &row.entity,
        &row.status,
    ]
    .iter()
    .any(|f| f.to_lowercase().contains(&q))
        || row.file_path.as_deref().is_some_and(|p| p.to_lowercase().contains(&q))
        || row.tags.iter().any(|t| t.to_lowercase().contains(&q))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the operation failed: {e}")))?
}

async fn list(State(state): State<Arc<WebState>>, Query(q): Query<ListQuery>) -> ApiResult<Json<DocumentList>> {
    let kind =
        DocKind::parse(q.kind.as_deref().unwrap_or("papers")).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let doc_types = kind.type_names();
    let kind = kind.as_str();
    let app = Arc::clone(&state.app);
    let filter = Filter {
        doc_types,
        category: q.category.filter(|s| !s.is_empty()),
        status: q.status.filter(|s| !s.is_empty()),
        ..Filter::default()
    };
    let needle = q.q.unwrap_or_default().trim().to_string();
    let (documents, text_search) = blocking(move || {
        let docs = app.list(&filter, usize::MAX)?;
        let (found, problem) = match text_matches(&app, &needle) {
            Ok(f) => (f, None),
            Err(e) => (Default::default(), Some(e)),
        };
        let rows = docs
            .into_iter()
            .map(DocumentRow::from)
            .filter_map(|mut r| {
                if let Some(f) = found.get(&r.key) {
                    r.found = f.clone();
                    return Some(r);
                }
                matches(&r, &needle).then_some(r)
            })
            .take(LIST_LIMIT)
            .collect();
        Ok((rows, problem))
    })
    .await?;
    Ok(Json(DocumentList {
        kind,
        documents,
        text_search,
    }))
}

#[derive(Deserialize)]
pub struct MetaBody {
    pub source: String,
    pub title: Option<String>,
    pub authors: Option<String>,
    pub doi: Option<String>,
}

#[derive(Serialize)]
pub struct MetaResult {
    pub document: DocumentRow,
    pub chunks: usize,
}

async fn meta(State(state): State<Arc<WebState>>, Body(b): Body<MetaBody>) -> ApiResult<Json<MetaResult>> {
    if b.title.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ApiError::bad_request("a paper's title cannot be empty"));
    }
    let app = Arc::clone(&state.app);
    blocking(move || {
        let trim = |o: &Option<String>| o.as_deref().map(str::trim).map(str::to_string);
        let (t, a, d) = (trim(&b.title), trim(&b.authors), trim(&b.doi));
        let chunks = app.set_meta(&b.source, t.as_deref(), a.as_deref(), d.as_deref(), &Actor::Web)?;
        let document = app.document_summary(&b.source)?.into();
        Ok(Json(MetaResult { document, chunks }))
    })
    .await
}

#[derive(Deserialize)]
pub struct RemoveBody {
    pub source: String,
}

#[derive(Serialize)]
pub struct RemoveResult {
    pub removed_chunks: usize,
    pub message: String,
    /// The removal's event: the toast's Undo sends it to `POST /timeline/undo`.
    pub event: Option<u64>,
}

async fn remove(State(state): State<Arc<WebState>>, Body(b): Body<RemoveBody>) -> ApiResult<Json<RemoveResult>> {
    let app = Arc::clone(&state.app);
    blocking(move || {
        let crate::app::ops::Removed {
            doc: preview,
            chunks: n,
            event,
        } = app.remove_own_entry(&b.source, &Actor::Web)?;
        let path = preview.file_path.clone().unwrap_or_else(|| "no local file".into());
        tracing::info!(source = %b.source, chunks = n, "removed from the Library");
        Ok(Json(RemoveResult {
            removed_chunks: n,
            event,
            message: format!(
                "Removed {n} chunks of \"{}\". {INVARIANT}: {path}. No files were touched.",
                preview.title
            ),
        }))
    })
    .await
}
