//! `GET /health` (for scripts and the service manager) and `GET /info` (the
//! header: the viewed session's model and spend).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new().route("/health", get(health))
}

#[derive(Serialize)]
pub struct Health {
    pub ok: bool,
    pub version: &'static str,
    pub busy: usize,
}

async fn health(State(state): State<Arc<WebState>>) -> Json<Health> {
    Json(Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
        busy: state.busy().len(),
    })
}
