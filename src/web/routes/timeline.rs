//! The Timeline: `GET /timeline` (the event log, newest first, each event
//! with whether it can be undone now and why not) and `POST
//! /timeline/undo` (the Timeline's and the removal toast's Undo).
//!
//! Human-only by construction, like the Library: no chat tool calls these
//! routes. Parses, calls `App` (`timeline`, `undo`) and renders; must not
//! decide what can be undone — that is `kb::undo`'s. An undo made here is
//! the web user's (`Actor::Web`), and is itself an event.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::kb::undo::{LogQuery, TimelineRow};
use crate::kb::Actor;
use crate::web::error::{ApiError, ApiResult, Body, Query};
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/timeline", get(list))
        .route("/timeline/undo", post(undo))
}

#[derive(Deserialize)]
pub struct HistoryQuery {
    /// user, cli, web, agent, job or jarvis.
    #[serde(default)]
    pub actor: Option<String>,
    /// An event kind's name (`kb::undo::kind_filters`) or undo.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One Timeline row: the event, whether it can be undone, and who made it
/// in words (the same words `jarvis log` prints).
#[derive(Serialize)]
pub struct HistoryRow {
    #[serde(flatten)]
    pub row: TimelineRow,
    pub actor_label: String,
}

#[derive(Serialize)]
pub struct History {
    pub events: Vec<HistoryRow>,
}

/// At most this many events per page (the newest).
const LIMIT: usize = 300;

const ACTORS: &[&str] = &["user", "cli", "web", "agent", "job", "jarvis"];

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the operation failed: {e}")))?
}

fn one_of(v: Option<String>, allowed: &[&str], what: &str) -> ApiResult<Option<String>> {
    match v.filter(|s| !s.is_empty()) {
        Some(s) if !allowed.contains(&s.as_str()) => Err(ApiError::bad_request(format!(
            "unknown {what} `{s}` — use {}",
            allowed.join(", ")
        ))),
        other => Ok(other),
    }
}

async fn list(State(state): State<Arc<WebState>>, Query(q): Query<HistoryQuery>) -> ApiResult<Json<History>> {
    let query = LogQuery {
        since: None,
        actor: one_of(q.actor, ACTORS, "actor")?,
        kind: one_of(q.kind, &crate::kb::undo::kind_filters(), "kind")?,
        // The page is the user's own: private documents' events are theirs.
        public_only: false,
        limit: q.limit.unwrap_or(LIMIT).clamp(1, LIMIT),
    };
    let app = Arc::clone(&state.app);
    let events = blocking(move || {
        Ok(app
            .timeline(&query)?
            .into_iter()
            .map(|row| HistoryRow {
                actor_label: row.event.actor.to_string(),
                row,
            })
            .collect())
    })
    .await?;
    Ok(Json(History { events }))
}

#[derive(Deserialize)]
pub struct UndoBody {
    /// The event to undo; none: the newest change of the user's that can be.
    #[serde(default)]
    pub event: Option<u64>,
}

#[derive(Serialize)]
pub struct UndoResult {
    /// The event undone.
    pub undone: u64,
    /// The undo's own event.
    pub event: Option<u64>,
    pub message: String,
}

async fn undo(State(state): State<Arc<WebState>>, Body(b): Body<UndoBody>) -> ApiResult<Json<UndoResult>> {
    let app = Arc::clone(&state.app);
    blocking(move || {
        let done = app.undo(b.event, &Actor::Web)?;
        tracing::info!(undone = done.of.id, event = ?done.event, "undo from the web app");
        let mut message = done.summary.clone();
        if let Some(first) = message.get(..1) {
            message = first.to_uppercase() + &message[1..];
        }
        Ok(Json(UndoResult {
            undone: done.of.id,
            event: done.event,
            message: format!("{message}."),
        }))
    })
    .await
}
