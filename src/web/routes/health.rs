//! `GET /health` (for scripts and the service manager) and `GET /info` (the
//! header: the viewed session's model — and whether its server answers —
//! and spend; per session, re-read on every switch).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::app::llm::llm_settings;
use crate::llm::is_cloud_provider;
use crate::web::error::{ApiResult, Query};
use crate::web::routes::sessions::{blocking, queried, SessionQuery};
use crate::web::state::{lock, WebState};

pub fn routes() -> Router<Arc<WebState>> {
    Router::new().route("/health", get(health)).route("/info", get(info))
}

#[derive(Serialize)]
pub struct Health {
    pub ok: bool,
    pub version: &'static str,
    pub busy: usize,
    /// The vault refresh in flight (the scheduled one or a `kb
    /// index-vault` run through this server): notes looked at of all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexing: Option<Indexing>,
}

#[derive(Serialize)]
pub struct Indexing {
    pub done: usize,
    pub total: usize,
}

async fn health(State(state): State<Arc<WebState>>) -> Json<Health> {
    Json(Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION"),
        busy: state.busy().len(),
        indexing: state.app.vault_progress().map(|p| Indexing {
            done: p.done,
            total: p.total,
        }),
    })
}

#[derive(Serialize)]
pub struct Info {
    pub session_id: Option<String>,
    /// `provider:model` of the session.
    pub provider: String,
    /// `local` or `cloud`.
    pub provider_kind: &'static str,
    /// The model a router actually used, when it differs; empty otherwise.
    pub served: String,
    /// Spend so far; absent when no provider reported money.
    pub cost_usd: Option<f64>,
    pub cost_by_model: serde_json::Value,
    pub private: bool,
    pub vault: Option<String>,
    /// Whether the model answers: `ready`, `unreachable`, `not_installed`,
    /// `no_key` or `no_model` (a local server is probed, a few seconds'
    /// cache; a cloud provider only has its key checked).
    pub model_state: &'static str,
    /// One line for a person, and how to fix it when not ready.
    pub model_message: String,
    pub model_fix: Option<String>,
}

async fn info(State(state): State<Arc<WebState>>, Query(q): Query<SessionQuery>) -> ApiResult<Json<Info>> {
    blocking(move || {
        let cfg = state.app.config();
        let settings = llm_settings(&cfg);
        let vault = state.app.vault_path().map(|p| p.display().to_string());
        let (session_id, spec, served, cost, private) = match queried(&state, &q) {
            Ok((s, _)) => {
                let s = lock(&s);
                (
                    Some(s.id.clone()),
                    s.model_spec(),
                    s.served_model.clone().unwrap_or_default(),
                    s.cost.clone(),
                    s.private,
                )
            }
            Err(_) => (
                None,
                state.app.default_chat_spec(),
                String::new(),
                Default::default(),
                false,
            ),
        };
        let total: f64 = cost.values().map(|c| c.usd).sum();
        let health = state.app.model_state(&spec);
        Ok(Json(Info {
            model_state: health.state,
            model_message: health.message,
            model_fix: health.fix,
            session_id,
            provider_kind: if is_cloud_provider(&spec, &settings) {
                "cloud"
            } else {
                "local"
            },
            provider: spec,
            served,
            cost_usd: (!cost.is_empty() && total > 0.0).then_some(total),
            cost_by_model: serde_json::to_value(&cost).unwrap_or_default(),
            private,
            vault,
        }))
    })
    .await
}
