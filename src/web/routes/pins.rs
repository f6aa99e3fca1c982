//! Pinned context: `GET /pins` and `POST /pins` with an `op` (add, edit,
//! remove, pause). What a turn makes of them — the budget, a private note
//! left out under a cloud model — is the chat's (`chat::pins`).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};

use crate::chat::pins::{PinOp, Pinned};
use crate::web::error::{ApiResult, Body};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new().route("/pins", get(show).post(change))
}

async fn show(State(state): State<Arc<WebState>>) -> ApiResult<Json<Pinned>> {
    let chat = state.chat()?;
    blocking(move || Ok(Json(chat.pinned()))).await
}

async fn change(State(state): State<Arc<WebState>>, Body(op): Body<PinOp>) -> ApiResult<Json<Pinned>> {
    let chat = state.chat()?;
    blocking(move || Ok(Json(chat.pins_apply(op)?))).await
}
