//! The source viewer: `GET /source` (one document as the viewer shows it —
//! a note as safe HTML with the passage's lines and heading, a PDF's page
//! reference, a chat exchange, or the passage alone) and `GET /source/page`
//! (one page of a local PDF as a PNG).
//!
//! Parses, calls `App` (`source_doc`, `source_pdf`, `render_pdf_page`) or
//! the chat agent (a session's exchange), and renders. The key and chunk
//! id are only looked up in the store: every path read comes from what the
//! store recorded (a note inside the vault, a PDF's own file), never from
//! the request. The page is local (the Host/Origin guard holds for every
//! route), so private documents are shown to it, as the Library shows them.
//! Must not: build a path, read a file itself, or draw in this process.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::app::pdf_isolated::clamp_width;
use crate::app::source::{heading_title, SourceDoc};
use crate::web::error::{ApiError, ApiResult, Query};
use crate::web::ids::check_id;
use crate::web::markdown::to_html_lines;
use crate::web::routes::sessions::{blocking, resolve};
use crate::web::routes::wire::{entry_dto, obsidian_href};
use crate::web::state::{lock, WebState};

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/source", get(source))
        .route("/source/page", get(page))
}

/// The longest key accepted (a URL or a path; longer is not one of ours).
const MAX_KEY: usize = 4096;

#[derive(Deserialize)]
struct SourceQuery {
    key: String,
    #[serde(default)]
    chunk: Option<u64>,
}

fn check_key(key: &str) -> ApiResult<()> {
    if key.trim().is_empty() || key.len() > MAX_KEY || key.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "`key` must name a document as the Library lists it (a note's path, a paper's source)",
        ));
    }
    Ok(())
}

/// The cited passage as the viewer lists it.
#[derive(Serialize)]
struct Passage {
    chunk_id: u64,
    text: String,
    section: String,
    page: Option<i64>,
    annotation: Option<String>,
    /// An annotation's boxes on its page (`[left, top, right, bottom]`,
    /// fractions of the page), for the outline on the page picture.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rects: Vec<[f32; 4]>,
}

#[derive(Serialize)]
struct SourceView {
    key: String,
    title: String,
    doc_type: String,
    /// How the viewer shows it: `note`, `pdf`, `chat` or `text`.
    view: &'static str,
    private: bool,
    /// "Open in Obsidian" at the heading, or a paper's URL.
    href: Option<String>,
    passage: Option<Passage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pdf: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chat: Option<Value>,
}

async fn source(State(state): State<Arc<WebState>>, Query(q): Query<SourceQuery>) -> ApiResult<Json<SourceView>> {
    check_key(&q.key)?;
    blocking(move || {
        let found = state.app.source_doc(&q.key, q.chunk)?;
        view(&state, found)
    })
    .await
    .map(Json)
}

fn view(state: &WebState, s: SourceDoc) -> ApiResult<SourceView> {
    let vault = state.app.vault_path();
    let passage = s.chunk.as_ref().map(|c| Passage {
        chunk_id: c.id,
        text: c.text.clone(),
        section: c.meta_str("section").unwrap_or("").to_string(),
        page: c.meta_i64("page"),
        annotation: c.meta_str("annotation_kind").map(str::to_string),
        rects: crate::app::source::passage_rects(c),
    });
    let mut v = SourceView {
        key: s.doc.key.clone(),
        title: s.doc.title.clone(),
        doc_type: s.doc.doc_type.clone(),
        view: "text",
        private: s.doc.visibility.is_private(),
        href: None,
        passage,
        note: None,
        pdf: None,
        chat: None,
    };
    if let Some(n) = &s.note {
        let heading = n
            .heading_line
            .and_then(|i| n.text.lines().nth(i))
            .and_then(heading_title)
            .filter(|h| !h.is_empty());
        v.view = "note";
        v.href = vault
            .as_deref()
            .and_then(|vault| obsidian_href(vault, s.doc.file_path.as_deref().unwrap_or(&s.doc.key), heading));
        v.note = Some(json!({
            "html": to_html_lines(&n.text),
            "heading": heading,
            "heading_line": n.heading_line,
            "passage_lines": n.passage_lines.map(|(a, b)| [a, b]),
            "cut": n.cut,
        }));
    } else if s.pdf {
        v.view = "pdf";
        let page = v.passage.as_ref().and_then(|p| p.page).filter(|p| *p >= 1).unwrap_or(1);
        v.pdf = Some(json!({ "page": page }));
    } else if let Some(id) = s.doc.source.strip_prefix("session:") {
        v.view = "chat";
        let exchange = s
            .chunk
            .as_ref()
            .and_then(|c| c.meta_i64("exchange"))
            .and_then(|n| usize::try_from(n).ok());
        v.chat = Some(chat_exchange(state, &check_id(id)?, exchange, vault.as_deref())?);
    }
    if v.href.is_none() && (s.doc.source.starts_with("https://") || s.doc.source.starts_with("http://")) {
        v.href = Some(s.doc.source.clone());
    }
    Ok(v)
}

/// The exchange `exchange` of session `id` (every exchange when none is
/// named), as the conversation shows entries.
fn chat_exchange(
    state: &WebState,
    id: &str,
    exchange: Option<usize>,
    vault: Option<&std::path::Path>,
) -> ApiResult<Value> {
    let (session, _) = resolve(state, id)?;
    let s = lock(&session);
    let pairs = s.exchanges();
    let chosen: Vec<_> = match exchange {
        Some(i) => pairs.get(i).into_iter().copied().collect(),
        None => pairs,
    };
    let entries: Vec<_> = chosen
        .iter()
        .flat_map(|(u, a)| [entry_dto(u, vault), entry_dto(a, vault)])
        .collect();
    Ok(json!({
        "session_id": s.id,
        "title": s.title,
        "exchange": exchange,
        "entries": entries,
    }))
}

#[derive(Deserialize)]
struct PageQuery {
    key: String,
    n: u32,
    #[serde(default)]
    width: Option<u32>,
}

/// One page drawn at a time: each draw is a PDFium child.
static DRAWING: Mutex<()> = Mutex::new(());

async fn page(State(state): State<Arc<WebState>>, Query(q): Query<PageQuery>) -> ApiResult<Response> {
    check_key(&q.key)?;
    if q.n == 0 {
        return Err(ApiError::bad_request("pages are numbered from 1"));
    }
    // Steps of 100 px, as the drafts preview draws them.
    let width = clamp_width(clamp_width(q.width.unwrap_or(900)).div_ceil(100) * 100);
    let img = blocking(move || {
        let path = state.app.source_pdf(&q.key)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "document.pdf".into());
        let _one_at_a_time = crate::lock::lock(&DRAWING);
        Ok(state.app.render_pdf_page(&path, &name, q.n, width)?)
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png".to_string()),
            (header::CACHE_CONTROL, "private, max-age=300".to_string()),
            (header::HeaderName::from_static("x-pages"), img.pages.to_string()),
        ],
        img.png,
    )
        .into_response())
}
