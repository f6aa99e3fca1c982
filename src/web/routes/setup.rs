//! The first-run panel and the set-up notices: `GET /setup` (vault, model,
//! first index), `GET /setup/ollama` (what the local Ollama has installed),
//! `POST /setup/vault`, `POST /setup/model`, `POST /setup/index` +
//! `GET /setup/index` (the first index and its progress), `POST
//! /setup/finish`; and `GET /search`, the knowledge-base search that needs
//! no model at all.
//!
//! Every change is a POST behind the guard's Host and same-origin checks.
//! A key posted here is written by the app layer and never appears in any
//! answer (the model state says only whether a key is set).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::app::setup::{IndexProgress, ModelChoice, ModelState, OllamaOffer, SetupStatus, VaultState};
use crate::kb::search::SearchRequest;
use crate::web::error::{ApiError, ApiResult, Body, Query};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

crate::web_error_from!(crate::app::setup::SetupError, crate::app::ops::OpError);

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/setup", get(status))
        .route("/setup/ollama", get(ollama))
        .route("/setup/vault", post(vault))
        .route("/setup/model", post(model))
        .route("/setup/index", get(index_progress).post(start_index))
        .route("/setup/finish", post(finish))
        .route("/search", get(search))
}

async fn status(State(state): State<Arc<WebState>>) -> ApiResult<Json<SetupStatus>> {
    blocking(move || {
        // An edited config.toml (or a `jarvis config set`) shows at once.
        state.app.reload_config_if_changed()?;
        Ok(Json(state.app.setup_status()))
    })
    .await
}

async fn ollama(State(state): State<Arc<WebState>>) -> ApiResult<Json<OllamaOffer>> {
    blocking(move || Ok(Json(state.app.ollama_offer()))).await
}

#[derive(Deserialize)]
pub struct VaultBody {
    pub path: String,
}

async fn vault(State(state): State<Arc<WebState>>, Body(b): Body<VaultBody>) -> ApiResult<Json<VaultState>> {
    blocking(move || Ok(Json(state.app.set_vault(&b.path)?))).await
}

/// The panel's model step. `kind` picks the fields that matter.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelBody {
    pub kind: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub api_key: String,
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub name: String,
}

async fn model(State(state): State<Arc<WebState>>, Body(b): Body<ModelBody>) -> ApiResult<Json<ModelState>> {
    let choice = match b.kind.as_str() {
        "ollama" => ModelChoice::Ollama { model: b.model },
        "anthropic" => ModelChoice::Anthropic {
            api_key: b.api_key,
            model: Some(b.model).filter(|m| !m.trim().is_empty()),
        },
        "openrouter" => ModelChoice::OpenRouter {
            api_key: b.api_key,
            model: b.model,
        },
        "server" => ModelChoice::Server {
            name: if b.name.trim().is_empty() {
                "local".into()
            } else {
                b.name
            },
            base_url: b.base_url,
            model: b.model,
            api_key: Some(b.api_key).filter(|k| !k.trim().is_empty()),
        },
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown kind {other:?}: use ollama, server, anthropic or openrouter"
            )))
        }
    };
    blocking(move || Ok(Json(state.app.set_model(&choice)?))).await
}

async fn start_index(State(state): State<Arc<WebState>>) -> ApiResult<Json<IndexProgress>> {
    blocking(move || {
        state.app.start_index()?;
        Ok(Json(state.app.index_progress()))
    })
    .await
}

async fn index_progress(State(state): State<Arc<WebState>>) -> Json<IndexProgress> {
    Json(state.app.index_progress())
}

async fn finish(State(state): State<Arc<WebState>>) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        state.app.finish_setup()?;
        Ok(Json(serde_json::json!({ "finished": true })))
    })
    .await
}

#[derive(Deserialize)]
pub struct SearchQuery {
    pub q: String,
    #[serde(default)]
    pub n: Option<usize>,
}

#[derive(Serialize)]
pub struct SearchHit {
    pub title: String,
    pub section: String,
    /// A note's vault path, else the document's source.
    pub key: String,
    pub doc_type: String,
    pub private: bool,
    pub snippet: String,
}

/// Hybrid search (BM25 + vectors) over everything, private notes included:
/// the page is local and no model sees the result.
async fn search(State(state): State<Arc<WebState>>, Query(q): Query<SearchQuery>) -> ApiResult<Json<Vec<SearchHit>>> {
    let query = q.q.trim().to_string();
    if query.is_empty() {
        return Err(ApiError::bad_request("type something to search for"));
    }
    let n = q.n.unwrap_or(8).clamp(1, 50);
    blocking(move || {
        let hits = state.app.search(&SearchRequest::new(query, n))?;
        Ok(Json(
            hits.iter()
                .map(|h| {
                    let r = &h.record;
                    SearchHit {
                        title: r.meta_str("title").unwrap_or("").to_string(),
                        section: r.meta_str("section").unwrap_or("").to_string(),
                        key: crate::kb::search::doc_key(r).to_string(),
                        doc_type: r.meta_str("doc_type").unwrap_or("").to_string(),
                        private: r.visibility().is_private(),
                        snippet: snippet(&r.text, 240),
                    }
                })
                .collect(),
        ))
    })
    .await
}

/// The first `max` characters of `text` on one line, cut at a word;
/// Markdown heading marks dropped (the title is shown beside it).
fn snippet(text: &str, max: usize) -> String {
    let flat: String = text
        .lines()
        .map(|l| l.trim_start().trim_start_matches('#').trim_start())
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{cut}…")
}
