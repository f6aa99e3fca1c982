//! The drafts routes: the editor's whole server side.
//!
//! `GET /drafts`, `GET /drafts/{id}/file`, `GET /drafts/{id}/version`,
//! `POST /drafts/new`, `POST /drafts/save`, `POST /drafts/keep`,
//! `POST /drafts/restore`, `DELETE /drafts/{id}`, `POST /preview`,
//! `POST /compile`, `POST /export`, `POST /apply-edit`,
//! `POST /discard-edit`, `GET /proposals`, `POST /proposals/discard-all`,
//! `POST /reveal`. (`drafts_pages.rs` draws the pages of the build
//! `/compile` and `/export` hold.)
//!
//! Human-only by construction: no chat tool reaches these routes. The only
//! write of an agent's change is `/apply-edit` with its one-shot token.
//! An applied edit, a restore and a delete go through `App` so they land
//! in the history (`app::records`); the answer carries `history` (the
//! event, or the warning that it could not be recorded).
//! Every path is built by `drafts::resolve_in_draft`; a build runs in the
//! sandbox and answers 200 with the PDF or 422 with the log.
//! Must not: build a path itself, or send a proposal's whole new text (the
//! browser needs the hunks only).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::app::ops::OpError;
use crate::app::AppError;
use crate::drafts::compile::{BuildResult, Toolchain};
use crate::drafts::proposals::Proposal;
use crate::drafts::{render, retention, versions, DraftsError, DraftsHandle, Visibility};
use crate::kb::Actor;
use crate::web::error::{ApiError, ApiResult, Body, Query};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

crate::web_error_from!(DraftsError);
crate::web_error_from!(crate::app::cite::DraftBuildError);

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/drafts", get(list))
        .route("/drafts/{id}/file", get(file))
        .route("/drafts/{id}/version", get(version))
        .route("/drafts/{id}", delete(remove))
        .route("/drafts/new", post(new))
        .route("/drafts/save", post(save))
        .route("/drafts/keep", post(keep))
        .route("/drafts/restore", post(restore))
        .route("/preview", post(preview))
        .route("/compile", post(compile_tex))
        .route("/export", post(export_md))
        .route("/apply-edit", post(apply_edit))
        .route("/discard-edit", post(discard_edit))
        .route("/proposals", get(proposals))
        .route("/proposals/discard-all", post(discard_all))
        .route("/reveal", post(reveal))
}

fn drafts(state: &WebState) -> ApiResult<DraftsHandle> {
    Ok(state.app.drafts()?)
}

async fn run<T: Send + 'static>(
    state: &Arc<WebState>,
    f: impl FnOnce(DraftsHandle) -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    let d = drafts(state)?;
    blocking(move || f(d)).await
}

async fn list(State(state): State<Arc<WebState>>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let retention_days = d.workspace.settings().retention_days;
        let list = d.workspace.list_drafts()?;
        let tools = Toolchain::detect(&d.workspace);
        let pending = d.proposals.pending(None);
        Ok(Json(json!({
            "drafts": list,
            "retention_days": retention_days,
            "latex": tools.latex,
            "pandoc": tools.pandoc,
            "pending": pending.iter().map(|p| json!({"draft_id": p.draft_id, "filename": p.filename, "token": p.token})).collect::<Vec<_>>(),
        })))
    })
    .await
}

#[derive(Deserialize)]
struct FileQuery {
    name: Option<String>,
    version: Option<String>,
}

async fn file(
    State(state): State<Arc<WebState>>,
    Path(id): Path<String>,
    Query(q): Query<FileQuery>,
) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let meta = d.workspace.meta(&id)?;
        let name = q.name.unwrap_or(meta.main_file.clone());
        let f = d.workspace.read_file(&id, &name)?;
        let versions = versions::list_versions(&d.workspace, &id, &name)?;
        Ok(Json(json!({
            "draft_id": id,
            "filename": name,
            "text": f.text,
            "hash": f.hash,
            "visibility": meta.visibility,
            "title": meta.title,
            "keep": meta.keep,
            "versions": versions,
        })))
    })
    .await
}

async fn version(
    State(state): State<Arc<WebState>>,
    Path(id): Path<String>,
    Query(q): Query<FileQuery>,
) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let name = q.name.ok_or_else(|| ApiError::bad_request("`name` is required"))?;
        let v = q
            .version
            .ok_or_else(|| ApiError::bad_request("`version` is required"))?;
        let text = versions::read_version(&d.workspace, &id, &name, &v)?;
        Ok(Json(
            json!({ "draft_id": id, "filename": name, "version": v, "text": text }),
        ))
    })
    .await
}

#[derive(Deserialize)]
struct NewBody {
    filename: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    draft_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    private: bool,
}

async fn new(State(state): State<Arc<WebState>>, Body(b): Body<NewBody>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let text = b.text.unwrap_or_default();
        match b.draft_id {
            Some(id) => {
                let f = d.workspace.add_draft_file(&id, &b.filename, &text)?;
                Ok(Json(json!({ "draft_id": id, "filename": f.filename, "hash": f.hash })))
            }
            None => {
                let vis = if b.private {
                    Visibility::Private
                } else {
                    Visibility::Public
                };
                let meta = d
                    .workspace
                    .create_draft(b.title.as_deref().unwrap_or(""), &b.filename, &text, vis, None)?;
                Ok(Json(
                    json!({ "draft_id": meta.id, "filename": meta.main_file, "meta": meta }),
                ))
            }
        }
    })
    .await
}

#[derive(Deserialize)]
struct SaveBody {
    draft_id: String,
    filename: String,
    text: String,
    #[serde(default)]
    expect_hash: Option<String>,
}

async fn save(State(state): State<Arc<WebState>>, Body(b): Body<SaveBody>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let hash = d
            .workspace
            .save_draft_file(&b.draft_id, &b.filename, &b.text, b.expect_hash.as_deref())?;
        Ok(Json(json!({ "hash": hash })))
    })
    .await
}

#[derive(Deserialize)]
struct KeepBody {
    draft_id: String,
    keep: bool,
}

async fn keep(State(state): State<Arc<WebState>>, Body(b): Body<KeepBody>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        Ok(Json(json!({ "meta": d.workspace.set_keep(&b.draft_id, b.keep)? })))
    })
    .await
}

#[derive(Deserialize)]
struct RestoreBody {
    draft_id: String,
    filename: String,
    version: String,
}

async fn restore(State(state): State<Arc<WebState>>, Body(b): Body<RestoreBody>) -> ApiResult<Json<Value>> {
    let app = Arc::clone(&state.app);
    blocking(move || {
        let (hash, recorded) = app.draft_restore(&b.draft_id, &b.filename, &b.version, &Actor::Web)?;
        Ok(Json(json!({ "hash": hash, "history": recorded })))
    })
    .await
}

async fn remove(State(state): State<Arc<WebState>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let app = Arc::clone(&state.app);
    blocking(move || {
        let (dropped, recorded) = app.draft_delete(&id, &Actor::Web)?;
        Ok(Json(
            json!({ "deleted": id, "proposals_dropped": dropped, "history": recorded }),
        ))
    })
    .await
}

#[derive(Deserialize)]
struct FileRef {
    draft_id: String,
    #[serde(alias = "file")]
    filename: String,
}

async fn preview(State(state): State<Arc<WebState>>, Body(b): Body<FileRef>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let f = d.workspace.read_file(&b.draft_id, &b.filename)?;
        if !b.filename.to_lowercase().ends_with(".md") {
            return Err(ApiError::bad_request(
                "only Markdown files have an HTML preview; compile a .tex",
            ));
        }
        Ok(Json(
            json!({ "html": render::markdown_to_html(&f.text), "hash": f.hash }),
        ))
    })
    .await
}

/// 200 with the PDF (and `x-build-id`, under which its pages can be
/// drawn: the build is held for `/drafts/{id}/page`), or 422 with the log.
fn pdf_response(d: &DraftsHandle, b: &FileRef, r: BuildResult) -> ApiResult<Response> {
    match r {
        BuildResult::Pdf { pdf, elapsed_ms } => {
            let build = d.builds.put(&b.draft_id, &b.filename, &pdf)?;
            Ok((
                [
                    (header::CONTENT_TYPE, "application/pdf".to_string()),
                    (header::HeaderName::from_static("x-build-ms"), elapsed_ms.to_string()),
                    (header::HeaderName::from_static("x-build-id"), build),
                ],
                pdf,
            )
                .into_response())
        }
        BuildResult::Failed { ending, log, .. } => Err(ApiError::unprocessable(ending, log)),
    }
}

async fn compile_tex(State(state): State<Arc<WebState>>, Body(b): Body<FileRef>) -> ApiResult<Response> {
    let shutdown = state.shutdown.clone();
    let app = Arc::clone(&state.app);
    run(&state, move |d| {
        let stop = move || shutdown.is_cancelled();
        let r = app.compile_draft(&b.draft_id, &b.filename, Some(&stop))?;
        pdf_response(&d, &b, r)
    })
    .await
}

async fn export_md(State(state): State<Arc<WebState>>, Body(b): Body<FileRef>) -> ApiResult<Response> {
    let shutdown = state.shutdown.clone();
    let app = Arc::clone(&state.app);
    run(&state, move |d| {
        let stop = move || shutdown.is_cancelled();
        let r = app.export_draft(&b.draft_id, &b.filename, Some(&stop))?;
        pdf_response(&d, &b, r)
    })
    .await
}

#[derive(Deserialize)]
struct ApplyBody {
    token: String,
    #[serde(alias = "accepted")]
    indices: Vec<usize>,
}

async fn apply_edit(State(state): State<Arc<WebState>>, Body(b): Body<ApplyBody>) -> ApiResult<Json<Value>> {
    let app = Arc::clone(&state.app);
    blocking(move || {
        let (applied, recorded) = app.draft_apply(&b.token, &b.indices).map_err(|e| match e {
            // An unknown or used token is a bad request; a moved file is
            // a conflict (the kind says so).
            OpError::App(AppError::Drafts(DraftsError::NoProposal)) => ApiError::bad_request(e.to_string()),
            other => other.into(),
        })?;
        Ok(Json(json!({ "applied": applied, "history": recorded })))
    })
    .await
}

#[derive(Deserialize)]
struct TokenBody {
    token: String,
}

async fn discard_edit(State(state): State<Arc<WebState>>, Body(b): Body<TokenBody>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        Ok(Json(json!({ "discarded": d.proposals.discard(&b.token) })))
    })
    .await
}

/// A pending suggestion in the shape the `edit_proposal` event carries.
#[derive(Serialize)]
pub struct ProposalView<'a> {
    pub token: &'a str,
    pub draft_id: &'a str,
    pub filename: &'a str,
    pub base_hash: &'a str,
    pub hunks: &'a [crate::drafts::hunks::Hunk],
}

pub fn proposal_view(p: &Proposal) -> ProposalView<'_> {
    ProposalView {
        token: &p.token,
        draft_id: &p.draft_id,
        filename: &p.filename,
        base_hash: &p.base_hash,
        hunks: &p.hunks,
    }
}

async fn proposals(State(state): State<Arc<WebState>>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let pending = d.proposals.pending(None);
        Ok(Json(
            json!({ "proposals": pending.iter().map(proposal_view).collect::<Vec<_>>() }),
        ))
    })
    .await
}

async fn discard_all(State(state): State<Arc<WebState>>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        let n = d
            .proposals
            .pending(None)
            .iter()
            .filter(|p| d.proposals.discard(&p.token))
            .count();
        Ok(Json(json!({ "discarded": n })))
    })
    .await
}

async fn reveal(State(state): State<Arc<WebState>>, Body(b): Body<FileRef>) -> ApiResult<Json<Value>> {
    run(&state, move |d| {
        retention::reveal(&d.workspace, &b.draft_id, Some(&b.filename))?;
        let dir = d.workspace.draft_dir(&b.draft_id)?;
        Ok(Json(json!({ "revealed": true, "path": dir })))
    })
    .await
}
