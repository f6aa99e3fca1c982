//! A turn: `POST /chat` (streams the agent's events as SSE), `POST
//! /chat/stop`, `POST /confirm-action`.
//!
//! Parse, call, stream: the chat registers the turn (`begin_turn`) before
//! it runs on a blocking thread; its events go through a channel to the
//! response stream, in the web's wire form (`wire::event_json`).
//! `/chat/stop` flips the turn's switch (closing any model request in
//! flight), pushes `stopped` into that same channel — so the browser's
//! stream ends at once, whatever the worker is doing — and then has the
//! agent roll the turn back under its commit lock (`ChatAgent::stop`, the
//! one rollback path). It never waits for the worker to notice.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::StreamExt;

use crate::chat::ChatError;
use crate::web::error::{ApiError, ApiResult, Body};
use crate::web::ids::check_id;
use crate::web::routes::sessions::blocking;
use crate::web::routes::wire::{event_json, is_terminal};
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/chat", post(chat))
        .route("/chat/stop", post(stop))
        .route("/confirm-action", post(confirm))
}

/// The longest message accepted (the body limit caps it anyway).
const MESSAGE_MAX: usize = 100_000;

#[derive(Deserialize)]
pub struct ChatBody {
    pub message: String,
    pub session_id: String,
    /// The draft file open in the editor, so "this file" means it.
    #[serde(default)]
    pub open_file: Option<OpenFileBody>,
    /// Run this queued message (its text is the queue's, not `message`).
    #[serde(default)]
    pub queued: Option<String>,
    /// Research this message (the composer's Research switch): a report
    /// in a new draft, waiting as a suggested change.
    #[serde(default)]
    pub research: bool,
}

#[derive(Deserialize)]
pub struct OpenFileBody {
    pub draft_id: String,
    pub filename: String,
}

async fn chat(State(state): State<Arc<WebState>>, Body(b): Body<ChatBody>) -> ApiResult<Response> {
    let id = check_id(&b.session_id)?;
    let message = b.message.trim().to_string();
    // A queued message's text is the queue's, checked when it was queued.
    if message.is_empty() && b.queued.is_none() {
        return Err(ChatError::EmptyMessage.into());
    }
    if message.chars().count() > MESSAGE_MAX {
        return Err(ApiError::bad_request(format!(
            "the message is too long; keep it under {MESSAGE_MAX} characters"
        )));
    }
    let context = crate::chat::TurnContext {
        open_file: match b.open_file {
            Some(f) => Some(open_file(&state, f)?),
            None => None,
        },
        research: b.research.then_some(crate::chat::research::ReportDelivery::Suggest),
        by: Some(crate::kb::Actor::Web),
        ..Default::default()
    };
    // A stream still open on this session (its turn's last frames not yet
    // drained) is the web's own business; the chat refuses a running turn.
    if state.is_streaming(&id) {
        return Err(ChatError::Busy(id).into());
    }
    let chat = state.chat()?;
    let rid = id.clone();
    // Registered with the chat before the worker starts, so a second /chat
    // racing in is refused and a stop arriving at once finds the turn.
    let queued = b.queued;
    let (turn, message) = blocking(move || {
        let turn = chat.begin_turn_in(&rid)?;
        // Taken only once the turn is registered: a refused turn leaves
        // the message queued. (Dropping `turn` on an error lets it go.)
        let message = match queued {
            Some(item) => chat.queue_take(&rid, &item)?.text,
            None => message,
        };
        Ok((turn, message))
    })
    .await?;
    let turn_id = turn.generation();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    state.start_stream(&id, turn_id, tx.clone());
    state.set_active(&id);
    let vault = state.app.vault_path();
    let worker_state = state.clone();
    let worker_id = id.clone();
    tokio::task::spawn_blocking(move || {
        // The browser may have gone (switched tabs, closed): the turn
        // still completes and is saved.
        let sink = |ev: crate::chat::ChatEvent| {
            let _ = tx.send(event_json(&ev, vault.as_deref()));
        };
        if let Err(e) = turn.run(&message, &context, &sink) {
            if !matches!(e, ChatError::Cancelled) {
                tracing::warn!(session = %worker_id, error = %e, "turn failed");
            }
        }
        worker_state.end_stream(&worker_id, turn_id);
        // Dropping `tx` here ends the stream if no terminal event did.
    });
    let mut ended = false;
    let events = UnboundedReceiverStream::new(rx)
        .take_while(move |v| {
            // Pass the first terminal event, then stop.
            let keep = !ended;
            ended = ended || is_terminal(v);
            keep
        })
        .map(|v| Ok::<Event, Infallible>(Event::default().data(v.to_string())));
    let sse = Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)));
    let mut resp = sse.into_response();
    resp.headers_mut()
        .insert("x-accel-buffering", axum::http::HeaderValue::from_static("no"));
    Ok(resp)
}

/// The open file's id and name through the drafts containment rules (a
/// hostile pair is a 400 before anything else); whether it still exists is
/// the turn's question.
fn open_file(state: &WebState, f: OpenFileBody) -> ApiResult<crate::chat::OpenFile> {
    crate::drafts::workspace::check_name(&f.filename, &state.app.drafts()?.workspace.settings().extensions)?;
    if !crate::drafts::workspace::valid_id(&f.draft_id) {
        return Err(crate::drafts::DraftsError::BadId { id: f.draft_id }.into());
    }
    Ok(crate::chat::OpenFile {
        draft_id: f.draft_id,
        filename: f.filename,
    })
}

#[derive(Deserialize)]
pub struct StopBody {
    pub session_id: String,
}

#[derive(Serialize)]
pub struct StopResult {
    pub stopped: bool,
    pub rolled_back: bool,
}

async fn stop(State(state): State<Arc<WebState>>, Body(b): Body<StopBody>) -> ApiResult<Json<StopResult>> {
    let id = check_id(&b.session_id)?;
    let chat = state.chat()?;
    // The switch first (it closes the model request), then the browser is
    // freed — before any lock is taken.
    let ticket = match chat.begin_stop(&id) {
        Ok(t) => Some(t),
        // The turn already ended (its reply stands); its stream may not have.
        Err(ChatError::NotRunning(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let streaming = state.take_stream(&id);
    if ticket.is_none() && streaming.is_none() {
        return Err(ChatError::NotRunning(id).into());
    }
    if let Some(s) = &streaming {
        let _ = s.tx.send(json!({ "type": "stopped", "session_id": id }));
    }
    // The rollback may wait on the commit lock (a worker mid-save): off the
    // event loop.
    let rolled_back = match ticket {
        Some(t) => blocking(move || Ok(chat.finish_stop(t)?.rolled_back)).await?,
        None => false,
    };
    tracing::info!(session = %id, rolled_back, "turn stopped");
    Ok(Json(StopResult {
        stopped: true,
        rolled_back,
    }))
}

#[derive(Deserialize)]
pub struct ConfirmBody {
    pub token: String,
    pub confirmed: bool,
}

async fn confirm(State(state): State<Arc<WebState>>, Body(b): Body<ConfirmBody>) -> ApiResult<Json<serde_json::Value>> {
    if b.token.len() > 128 {
        return Err(ChatError::UnknownToken.into());
    }
    let chat = state.chat()?;
    let message = blocking(move || Ok(chat.confirm_action(&b.token, b.confirmed)?)).await?;
    Ok(Json(json!({ "message": message, "confirmed": b.confirmed })))
}
