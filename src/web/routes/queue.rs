//! Follow-ups of a conversation: the queue of messages typed while a turn
//! runs (`GET /queue?session_id=`, `POST /queue` with an `op`: add, edit,
//! remove, move, steer — "send now" —, hold, clear) and asking again
//! (`POST /sessions/{id}/rewind`: the last question and answer taken back
//! for Regenerate or an edited question; the page then sends it).
//!
//! Parse, call, render: the queue lives in the chat agent; the next queued
//! message is started by `POST /chat` naming it (`queued`), so two tabs
//! cannot both run it. Every change is a POST behind the same Host/Origin
//! guard as every route.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;

use crate::chat::queue::{Queue, QueueOp};
use crate::web::error::{ApiResult, Body, Query};
use crate::web::ids::{check_id, Id};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/queue", get(show).post(change))
        .route("/sessions/{id}/rewind", post(rewind))
}

#[derive(Deserialize)]
pub struct SessionQuery {
    pub session_id: String,
}

async fn show(State(state): State<Arc<WebState>>, Query(q): Query<SessionQuery>) -> ApiResult<Json<Queue>> {
    let id = check_id(&q.session_id)?;
    let chat = state.chat()?;
    blocking(move || Ok(Json(chat.queue(&id)))).await
}

#[derive(Deserialize)]
pub struct ChangeBody {
    pub session_id: String,
    #[serde(flatten)]
    pub op: QueueOp,
}

async fn change(State(state): State<Arc<WebState>>, Body(b): Body<ChangeBody>) -> ApiResult<Json<Queue>> {
    let id = check_id(&b.session_id)?;
    let chat = state.chat()?;
    blocking(move || Ok(Json(chat.queue_apply(&id, b.op)?))).await
}

async fn rewind(State(state): State<Arc<WebState>>, Id(id): Id) -> ApiResult<Json<serde_json::Value>> {
    if state.is_streaming(&id) {
        return Err(crate::chat::ChatError::Busy(id).into());
    }
    let chat = state.chat()?;
    blocking(move || {
        let question = chat.rewind_last(&id)?;
        Ok(Json(serde_json::json!({ "question": question })))
    })
    .await
}
