//! The Memory view's routes: `GET /memory` (every fact, proposals first),
//! `POST /memory/{id}/accept` (with the user's edit, if any), `POST
//! /memory/{id}/edit`, `POST /memory/{id}/reject` and `POST
//! /memory/{id}/forget`.
//!
//! Human-only by construction, like the Timeline: no chat tool calls these
//! routes (the agent proposes through `remember` and forgets through
//! `memory_forget`). Parses, calls `App` and renders; must not decide what
//! a fact may say (that is `memory`'s). A change made here is the web
//! user's (`Actor::Web`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::kb::Actor;
use crate::memory::Fact;
use crate::memory::FactDraft;
use crate::web::error::{ApiError, ApiResult, Body};

crate::web_error_from!(crate::memory::MemoryError);
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/memory", get(list))
        .route("/memory/{id}/accept", post(accept))
        .route("/memory/{id}/edit", post(edit))
        .route("/memory/{id}/reject", post(reject))
        .route("/memory/{id}/forget", post(forget))
}

#[derive(Serialize)]
pub struct MemoryList {
    /// Waiting for the user's review, newest first.
    pub pending: Vec<Fact>,
    /// In use, newest change first.
    pub accepted: Vec<Fact>,
}

/// An edit: what the user typed (a field left out keeps its value).
#[derive(Deserialize, Default)]
pub struct EditBody {
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

impl EditBody {
    fn draft(&self, f: &Fact) -> Option<FactDraft> {
        if self.category.is_none() && self.key.is_none() && self.text.is_none() {
            return None;
        }
        Some(FactDraft::new(
            self.category.as_deref().unwrap_or(&f.category),
            self.key.as_deref().unwrap_or(&f.key),
            self.text.as_deref().unwrap_or(&f.text),
        ))
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the operation failed: {e}")))?
}

fn id_of(s: &str) -> ApiResult<u64> {
    s.parse()
        .map_err(|_| ApiError::bad_request(format!("`{s}` is not a memory fact id (a number)")))
}

async fn list(State(state): State<Arc<WebState>>) -> ApiResult<Json<MemoryList>> {
    let app = Arc::clone(&state.app);
    blocking(move || {
        let (accepted, pending) = app.memory_list()?.into_iter().partition(Fact::accepted);
        Ok(Json(MemoryList { pending, accepted }))
    })
    .await
}

async fn accept(
    State(state): State<Arc<WebState>>,
    Path(id): Path<String>,
    Body(b): Body<EditBody>,
) -> ApiResult<Json<Fact>> {
    let id = id_of(&id)?;
    let app = Arc::clone(&state.app);
    blocking(move || {
        let held = app.memory_list()?.into_iter().find(|f| f.id == id);
        let draft = held.as_ref().and_then(|f| b.draft(f));
        Ok(Json(app.memory_accept(id, draft.as_ref(), &Actor::Web)?))
    })
    .await
}

async fn edit(
    State(state): State<Arc<WebState>>,
    Path(id): Path<String>,
    Body(b): Body<EditBody>,
) -> ApiResult<Json<Fact>> {
    let id = id_of(&id)?;
    let app = Arc::clone(&state.app);
    blocking(move || {
        let f = app
            .memory_list()?
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| ApiError::not_found(format!("no memory fact {id}")))?;
        let Some(d) = b.draft(&f) else {
            return Ok(Json(f));
        };
        Ok(Json(app.memory_edit(id, &d, &Actor::Web)?))
    })
    .await
}

async fn reject(State(state): State<Arc<WebState>>, Path(id): Path<String>) -> ApiResult<Json<serde_json::Value>> {
    let id = id_of(&id)?;
    let app = Arc::clone(&state.app);
    blocking(move || {
        app.memory_reject(id)?;
        Ok(Json(serde_json::json!({ "rejected": id })))
    })
    .await
}

async fn forget(State(state): State<Arc<WebState>>, Path(id): Path<String>) -> ApiResult<Json<serde_json::Value>> {
    let id = id_of(&id)?;
    let app = Arc::clone(&state.app);
    blocking(move || {
        // The forgetting's event: the toast's Undo sends it to `/timeline/undo`.
        let (_, event) = app.memory_forget(id, &Actor::Web)?;
        Ok(Json(serde_json::json!({ "forgotten": id, "event": event })))
    })
    .await
}
