//! The model picker: `GET /models` (the catalogue from config, plus the
//! models the configured Ollama server has installed — one short request
//! to it) and `POST /model` (switch one session from its next
//! turn: 409 mid-turn or private → cloud, 400 for an unknown provider or
//! missing credentials).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::app::llm::model_catalogue;
use crate::chat::ChatError;
use crate::llm::CatalogueEntry;
use crate::web::error::{ApiResult, Body, Query};
use crate::web::ids::check_id;
use crate::web::routes::sessions::{blocking, queried, resolve, SessionQuery};
use crate::web::state::{lock, WebState};

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/models", get(models))
        .route("/model", post(switch))
}

#[derive(Serialize)]
pub struct Models {
    pub current: String,
    pub private: bool,
    pub models: Vec<CatalogueEntry>,
    /// Why Ollama's installed models are not in the list, when they are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ollama_note: Option<String>,
}

async fn models(State(state): State<Arc<WebState>>, Query(q): Query<SessionQuery>) -> ApiResult<Json<Models>> {
    blocking(move || {
        // Re-read: a hand-edited [models] table shows without a restart.
        state.app.reload_config()?;
        let cfg = state.app.config();
        let (current, private) = match queried(&state, &q) {
            Ok((s, _)) => {
                let s = lock(&s);
                (s.model_spec(), s.private)
            }
            Err(_) => (state.app.default_chat_spec(), false),
        };
        let (models, ollama_note) = model_catalogue(&cfg, &current);
        Ok(Json(Models {
            current,
            private,
            models,
            ollama_note,
        }))
    })
    .await
}

#[derive(Deserialize)]
pub struct SwitchBody {
    pub session_id: String,
    pub spec: String,
}

async fn switch(State(state): State<Arc<WebState>>, Body(b): Body<SwitchBody>) -> ApiResult<Json<serde_json::Value>> {
    let id = check_id(&b.session_id)?;
    blocking(move || {
        if state.is_streaming(&id) {
            return Err(ChatError::Busy(id).into());
        }
        state.app.reload_config()?;
        let (s, busy) = resolve(&state, &id)?;
        if busy {
            return Err(ChatError::Busy(id).into());
        }
        let spec = state.chat()?.switch_model(&s, b.spec.trim())?;
        Ok(Json(serde_json::json!({ "spec": spec })))
    })
    .await
}
