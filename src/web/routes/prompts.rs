//! The prompts editor: `GET /prompts`, `GET /prompts/{name}`,
//! `POST /prompts/{name}`, `POST /prompts/{name}/reset`.
//!
//! Human-only by construction: no chat tool reaches these routes (editing
//! the agent's own instructions must not be something an injected
//! instruction can do). An edit applies to the next call; nothing caches.
//! A save or reset is the web user's change in the history, undoable from
//! the Timeline (`app::records`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::app::records::Recorded;
use crate::kb::Actor;
use crate::prompts;
use crate::web::error::{ApiError, ApiResult, Body};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/prompts", get(list))
        .route("/prompts/{name}", get(one).post(save))
        .route("/prompts/{name}/reset", post(reset))
}

/// Title and description per shipped prompt, for the editor.
fn describe(name: &str) -> (&'static str, &'static str) {
    match name {
        prompts::SYSTEM => (
            "Chat assistant",
            "The assistant's standing instructions. Jarvis appends its fixed safety rules, the DB-only mode and your response style after it.",
        ),
        prompts::PAPER_SUMMARY => ("Paper summary", "The ~1000-word summary written when a paper is added in summary mode ({title} is replaced)."),
        prompts::DIGEST_SCORE => ("Digest scoring", "How the weekly digest scores new papers. Fill in your research context."),
        prompts::PDF_METADATA => ("PDF metadata", "Title and authors extraction for local PDFs ({text} is replaced by the first pages)."),
        _ => ("Prompt", ""),
    }
}

/// `system` and `system.md` both name `system.md`; nothing else does.
fn canonical(name: &str) -> ApiResult<String> {
    let n = if name.ends_with(".md") {
        name.to_string()
    } else {
        format!("{name}.md")
    };
    if prompts::names().contains(&n) {
        Ok(n)
    } else {
        Err(ApiError::not_found(format!(
            "no prompt named {name:?} — the prompts are: {}",
            prompts::names().join(", ")
        )))
    }
}

#[derive(Serialize)]
pub struct PromptInfo {
    pub name: String,
    pub title: &'static str,
    pub description: &'static str,
    pub differs: bool,
}

#[derive(Serialize)]
pub struct PromptText {
    pub name: String,
    pub text: String,
    pub differs: bool,
    /// A save's or reset's event in the history (or why it is missing).
    #[serde(skip_serializing_if = "is_unrecorded")]
    pub history: Recorded,
}

fn is_unrecorded(r: &Recorded) -> bool {
    r.event.is_none() && r.history_warning.is_none()
}

fn differs(text: &str, name: &str) -> bool {
    prompts::default_of(name).is_some_and(|d| d != text)
}

async fn list(State(state): State<Arc<WebState>>) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        let mut out = Vec::new();
        let mut names = prompts::names();
        // The chat prompt first: it is the one people edit.
        names.sort_by_key(|n| (n != prompts::SYSTEM, n.clone()));
        for name in names {
            let text = prompts::load(state.app.home(), &name)?;
            let (title, description) = describe(&name);
            out.push(PromptInfo {
                differs: differs(&text, &name),
                name,
                title,
                description,
            });
        }
        Ok(Json(serde_json::json!({ "prompts": out })))
    })
    .await
}

async fn one(State(state): State<Arc<WebState>>, Path(name): Path<String>) -> ApiResult<Json<PromptText>> {
    let name = canonical(&name)?;
    blocking(move || {
        let text = prompts::load(state.app.home(), &name)?;
        Ok(Json(PromptText {
            differs: differs(&text, &name),
            name,
            text,
            history: Recorded::default(),
        }))
    })
    .await
}

#[derive(Deserialize)]
pub struct SaveBody {
    pub text: String,
}

async fn save(
    State(state): State<Arc<WebState>>,
    Path(name): Path<String>,
    Body(b): Body<SaveBody>,
) -> ApiResult<Json<PromptText>> {
    let name = canonical(&name)?;
    blocking(move || {
        let history = state.app.prompt_save(&name, &b.text, &Actor::Web)?;
        Ok(Json(PromptText {
            differs: differs(&b.text, &name),
            name,
            text: b.text,
            history,
        }))
    })
    .await
}

async fn reset(State(state): State<Arc<WebState>>, Path(name): Path<String>) -> ApiResult<Json<PromptText>> {
    let name = canonical(&name)?;
    blocking(move || {
        let (text, history) = state.app.prompt_reset(&name, &Actor::Web)?;
        Ok(Json(PromptText {
            differs: false,
            name,
            text,
            history,
        }))
    })
    .await
}
