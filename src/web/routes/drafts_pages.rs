//! The compiled PDF's pages as pictures: `GET /drafts/{id}/pages` (how
//! many, and the first one's size) and `GET /drafts/{id}/page` (one page
//! as a PNG).
//!
//! Chromium shows no PDF inside a frame sandboxed to nothing, and that
//! sandbox is not negotiable for a document the model may have written, so
//! the preview shows pictures the server drew instead. A page is drawn by
//! the PDF worker child (through `App::render_pdf_page`), off the async
//! runtime, one at a time, within `pdf`'s page and size caps, from the build
//! `/compile` or `/export` just held (`x-build-id`).
//! Must not: build a path (the draft id and file name are validated by the
//! drafts workspace before a build is looked up), or draw in this process.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::pdf_isolated::{clamp_width, MAX_RENDER_PAGES};
use crate::drafts::builds::{Build, DrawnPage};
use crate::web::error::{ApiError, ApiResult, Query};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

crate::web_error_from!(crate::app::pdf_isolated::IsolatedPdfError);

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/drafts/{id}/pages", get(pages))
        .route("/drafts/{id}/page", get(page))
}

#[derive(Deserialize)]
struct PageQuery {
    name: String,
    build: String,
    #[serde(default)]
    n: Option<u32>,
    #[serde(default)]
    width: Option<u32>,
}

/// Widths are drawn in steps of 100 px, so a pane resized by a few pixels
/// reuses the pictures it has.
fn width_of(q: &PageQuery) -> u32 {
    let w = clamp_width(q.width.unwrap_or(1000));
    clamp_width(w.div_ceil(100) * 100)
}

/// Draw (or reuse) page `n` of the build `q` names.
fn drawn(state: &WebState, id: &str, q: &PageQuery, n: u32) -> ApiResult<(Arc<Build>, Arc<DrawnPage>)> {
    let d = state.app.drafts()?;
    // The id and name go through the workspace's containment policy first:
    // an unvalidated pair never reaches a lookup, let alone a path.
    d.workspace.resolve(id, &q.name)?;
    let build = d.builds.get(id, &q.name, &q.build)?;
    if let Some(count) = build.page_count().filter(|c| n > *c) {
        return Err(ApiError::not_found(format!(
            "there is no page {n}; the PDF has {count}"
        )));
    }
    let width = width_of(q);
    if let Some(p) = build.page(n, width) {
        return Ok((build, p));
    }
    let _one_at_a_time = d.builds.drawing();
    if let Some(p) = build.page(n, width) {
        return Ok((build, p));
    }
    let pdf_name = q.name.rsplit_once('.').map_or(q.name.as_str(), |(s, _)| s).to_string() + ".pdf";
    let img = state.app.render_pdf_page(build.path(), &pdf_name, n, width)?;
    let p = build.keep_page(
        n,
        width,
        img.pages,
        DrawnPage {
            png: img.png,
            width: img.width,
            height: img.height,
        },
    );
    Ok((build, p))
}

async fn pages(
    State(state): State<Arc<WebState>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Json<Value>> {
    blocking(move || {
        let (build, first) = drawn(&state, &id, &q, 1)?;
        let count = build.page_count().unwrap_or(1);
        Ok(Json(json!({
            "build": build.id,
            "pages": count,
            "drawable": count.min(MAX_RENDER_PAGES),
            "width": first.width,
            "height": first.height,
            "bytes": build.bytes,
        })))
    })
    .await
}

async fn page(
    State(state): State<Arc<WebState>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> ApiResult<Response> {
    let n =
        q.n.ok_or_else(|| ApiError::bad_request("`n` (the page number, from 1) is required"))?;
    if n == 0 {
        return Err(ApiError::bad_request("pages are numbered from 1"));
    }
    let (_, p) = blocking(move || drawn(&state, &id, &q, n)).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/png".to_string()),
            // The URL names the build by its content hash: the same URL is
            // always the same picture.
            (header::CACHE_CONTROL, "private, max-age=3600".to_string()),
        ],
        p.png.clone(),
    )
        .into_response())
}
