//! Profiles and custom commands: `GET /profiles`, `POST
//! /sessions/{id}/profile` (the picker of a conversation that has not
//! started), `GET /commands`, `POST /commands/save|delete|preview`.
//!
//! Parse, call, render: the files and their rules are the chat's
//! (`chat::profiles`, `chat::commands`); a name from the page is checked
//! there before any path is built, and only the commands folder is ever
//! written.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::chat::commands::{self, Command, BUILTINS};
use crate::chat::profiles::Catalogue;
use crate::chat::ChatError;
use crate::web::error::{ApiError, ApiResult, Body};
use crate::web::ids::Id;
use crate::web::routes::sessions::{blocking, resolve, session_dto, SessionDto};
use crate::web::state::{lock, WebState};

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/profiles", get(profiles))
        .route("/sessions/{id}/profile", post(set_profile))
        .route("/commands", get(list_commands))
        .route("/commands/save", post(save_command))
        .route("/commands/delete", post(delete_command))
        .route("/commands/preview", post(preview))
}

async fn profiles(State(state): State<Arc<WebState>>) -> ApiResult<Json<Catalogue>> {
    blocking(move || Ok(Json(state.chat()?.profiles()))).await
}

#[derive(Deserialize)]
pub struct ProfileBody {
    /// A profile id, or "" for none.
    pub profile: String,
}

async fn set_profile(
    State(state): State<Arc<WebState>>,
    Id(id): Id,
    Body(b): Body<ProfileBody>,
) -> ApiResult<Json<SessionDto>> {
    blocking(move || {
        let (s, busy) = resolve(&state, &id)?;
        if busy || state.is_streaming(&id) {
            return Err(ChatError::Busy(id).into());
        }
        if !lock(&s).display.is_empty() {
            return Err(ApiError::conflict(
                "a conversation's profile is chosen before it starts — start a new chat for another profile (the assistant can switch it with switch_profile)",
            ));
        }
        state.chat()?.set_profile(&s, b.profile.trim())?;
        let dto = session_dto(&lock(&s));
        Ok(Json(dto))
    })
    .await
}

#[derive(Serialize)]
pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
}

#[derive(Serialize)]
pub struct Commands {
    pub commands: Vec<Command>,
    /// Handled by the page (and shadowing files of the same name).
    pub builtins: Vec<Builtin>,
}

async fn list_commands(State(state): State<Arc<WebState>>) -> ApiResult<Json<Commands>> {
    blocking(move || {
        let commands = commands::list(state.app.home()).map_err(ChatError::from)?;
        Ok(Json(Commands {
            commands,
            builtins: BUILTINS
                .iter()
                .map(|&(name, description)| Builtin { name, description })
                .collect(),
        }))
    })
    .await
}

#[derive(Deserialize)]
pub struct SaveBody {
    pub command: Command,
    /// The name it is edited from; absent for a new one or a duplicate.
    #[serde(default)]
    pub previous: Option<String>,
}

async fn save_command(State(state): State<Arc<WebState>>, Body(b): Body<SaveBody>) -> ApiResult<Json<Command>> {
    blocking(move || {
        let saved = commands::save(state.app.home(), &b.command, b.previous.as_deref()).map_err(ChatError::from)?;
        Ok(Json(saved))
    })
    .await
}

#[derive(Deserialize)]
pub struct NameBody {
    pub name: String,
}

async fn delete_command(
    State(state): State<Arc<WebState>>,
    Body(b): Body<NameBody>,
) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        commands::delete(state.app.home(), &b.name).map_err(ChatError::from)?;
        Ok(Json(json!({ "deleted": b.name })))
    })
    .await
}

#[derive(Deserialize)]
pub struct PreviewBody {
    pub template: String,
    #[serde(default)]
    pub args: String,
}

/// The expansion the model would be sent, for the dialog's live preview
/// (the same code the turn runs).
async fn preview(Body(b): Body<PreviewBody>) -> ApiResult<Json<serde_json::Value>> {
    Ok(Json(json!({ "prompt": commands::expand(&b.template, &b.args) })))
}
