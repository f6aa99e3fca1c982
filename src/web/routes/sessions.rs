//! Sessions: `GET /sessions`, `GET /sessions/active`, `POST /sessions/new`,
//! `POST /sessions/{id}/resume|pin|rename`, `DELETE /sessions/{id}`,
//! `GET /history`, `POST /config` (the DB-only toggle).
//!
//! "Active" is only the session the browser last looked at (page-refresh
//! restore), never a lock: any number of sessions can be mid-turn, and a
//! message always lands on the session named in the request.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::chat::session::DisplayEntry;
use crate::chat::{ChatError, Session, SessionError, SessionMeta, SharedSession};
use crate::kb::Actor;
use crate::web::error::{ApiError, ApiResult, Body, Query};
use crate::web::ids::{check_id, Id};
use crate::web::routes::wire::{entry_dto, EntryDto};
use crate::web::state::{lock, WebState};

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/sessions", get(list))
        .route("/sessions/active", get(active))
        .route("/sessions/new", post(new))
        .route("/sessions/{id}/resume", post(resume))
        .route("/sessions/{id}/pin", post(pin))
        .route("/sessions/{id}/rename", post(rename))
        .route("/sessions/{id}", delete(remove))
        .route("/history", get(history))
        .route("/config", post(set_kb_only))
}

/// What the header and composer need about one session.
#[derive(Serialize)]
pub struct SessionDto {
    pub id: String,
    pub title: String,
    pub model: String,
    pub private: bool,
    pub pinned: bool,
    pub kb_only: bool,
    /// The profile's id; "" for none.
    pub profile: String,
    /// Has a file (at least one turn was saved).
    pub saved: bool,
}

pub fn session_dto(s: &Session) -> SessionDto {
    SessionDto {
        id: s.id.clone(),
        title: s.title.clone(),
        model: s.model_spec(),
        private: s.private,
        pinned: s.pinned,
        kb_only: s.kb_only,
        profile: s.profile.clone(),
        saved: !s.is_empty(),
    }
}

pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the operation failed: {e}")))?
}

/// The session `id` names: the live object when a turn runs on it, else the
/// file (refused for a private session under a cloud model), else a
/// brand-new session this server handed out. Returns whether it is busy.
pub fn resolve(state: &WebState, id: &str) -> ApiResult<(SharedSession, bool)> {
    Ok(state.chat()?.find(id)?)
}

fn make_fresh(state: &WebState) -> ApiResult<SharedSession> {
    let chat = state.chat()?;
    let s = chat.new_session(None, Some(state.default_kb_only.load(Ordering::Relaxed)))?;
    let shared = Arc::new(Mutex::new(s));
    chat.add_unsaved(shared.clone());
    Ok(shared)
}

#[derive(Serialize)]
pub struct SessionList {
    pub active: Option<String>,
    pub busy: Vec<String>,
    pub sessions: Vec<SessionMeta>,
}

async fn list(State(state): State<Arc<WebState>>) -> ApiResult<Json<SessionList>> {
    blocking(move || {
        let sessions = state.chat()?.list()?;
        Ok(Json(SessionList {
            active: state.active_id(),
            busy: state.busy(),
            sessions,
        }))
    })
    .await
}

#[derive(Serialize)]
pub struct SessionState {
    pub session: SessionDto,
    pub busy: bool,
}

/// What `GET /sessions/active` answers: the session the page last looked
/// at, or `null` when there is none (or it is gone) — the page then asks
/// for a new one with `POST /sessions/new`. A GET changes nothing.
#[derive(Serialize)]
pub struct ActiveState {
    pub session: Option<SessionDto>,
    pub busy: bool,
}

async fn active(State(state): State<Arc<WebState>>) -> ApiResult<Json<ActiveState>> {
    blocking(move || {
        if let Some(id) = state.active_id() {
            if let Ok((s, busy)) = resolve(&state, &id) {
                let dto = session_dto(&lock(&s));
                return Ok(Json(ActiveState {
                    session: Some(dto),
                    busy,
                }));
            }
        }
        Ok(Json(ActiveState {
            session: None,
            busy: false,
        }))
    })
    .await
}

async fn new(State(state): State<Arc<WebState>>) -> ApiResult<Json<SessionState>> {
    // Touches no pending confirmation: a fresh id owns none, and every
    // other session's dialogs must keep working.
    blocking(move || {
        let s = make_fresh(&state)?;
        let dto = session_dto(&lock(&s));
        state.set_active(&dto.id);
        Ok(Json(SessionState {
            session: dto,
            busy: false,
        }))
    })
    .await
}

async fn resume(State(state): State<Arc<WebState>>, Id(id): Id) -> ApiResult<Json<SessionState>> {
    blocking(move || {
        let (s, busy) = resolve(&state, &id)?;
        let busy = busy || state.is_streaming(&id);
        let dto = session_dto(&lock(&s));
        state.set_active(&id);
        Ok(Json(SessionState { session: dto, busy }))
    })
    .await
}

#[derive(Deserialize)]
pub struct PinBody {
    pub pinned: bool,
}

async fn pin(
    State(state): State<Arc<WebState>>,
    Id(id): Id,
    Body(b): Body<PinBody>,
) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        let chat = state.chat()?;
        if let Some(s) = chat.unsaved(&id) {
            if !chat.store().exists(&id)? {
                lock(&s).pinned = b.pinned;
                return Ok(Json(serde_json::json!({ "pinned": b.pinned })));
            }
        }
        chat.pin(&id, b.pinned)?;
        Ok(Json(serde_json::json!({ "pinned": b.pinned })))
    })
    .await
}

#[derive(Deserialize)]
pub struct RenameBody {
    pub title: String,
}

async fn rename(
    State(state): State<Arc<WebState>>,
    Id(id): Id,
    Body(b): Body<RenameBody>,
) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        let chat = state.chat()?;
        if b.title.trim().is_empty() {
            return Err(ApiError::not_found(
                "a title cannot be empty — type a name, or press Esc to keep the old one",
            ));
        }
        let r = chat.rename(&id, &b.title, &Actor::Web)?;
        let history = serde_json::json!({ "history_warning": r.history_warning });
        Ok(Json(serde_json::json!({ "title": r.title, "history": history })))
    })
    .await
}

async fn remove(State(state): State<Arc<WebState>>, Id(id): Id) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        if state.is_streaming(&id) {
            return Err(ChatError::Busy(id).into());
        }
        let chat = state.chat()?;
        let was_fresh = chat.unsaved(&id).is_some();
        let history_warning = match chat.delete(&id, &Actor::Web) {
            Ok(warning) => warning,
            Err(ChatError::Session(SessionError::NotFound(_))) if was_fresh => {
                chat.clear_pending_for(&id);
                None
            }
            Err(e) => return Err(e.into()),
        };
        chat.forget_unsaved(&id);
        let mut active = None;
        if state.active_id().as_deref() == Some(id.as_str()) {
            let s = make_fresh(&state)?;
            let dto = session_dto(&lock(&s));
            state.set_active(&dto.id);
            active = Some(dto);
        }
        let history = serde_json::json!({ "history_warning": history_warning });
        Ok(Json(
            serde_json::json!({ "deleted": id, "active": active, "history": history }),
        ))
    })
    .await
}

#[derive(Deserialize)]
pub struct SessionQuery {
    #[serde(default)]
    pub session_id: Option<String>,
}

/// The session a query names, or the active one.
pub fn queried(state: &WebState, q: &SessionQuery) -> ApiResult<(SharedSession, bool)> {
    let id = match q.session_id.as_deref().filter(|s| !s.is_empty()) {
        Some(id) => check_id(id)?,
        None => state
            .active_id()
            .ok_or_else(|| ApiError::not_found("no conversation is open — start a new chat"))?,
    };
    resolve(state, &id)
}

#[derive(Serialize)]
pub struct History {
    pub session_id: String,
    pub busy: bool,
    pub entries: Vec<EntryDto>,
    pub pending: Vec<crate::chat::PendingView>,
}

async fn history(State(state): State<Arc<WebState>>, Query(q): Query<SessionQuery>) -> ApiResult<Json<History>> {
    blocking(move || {
        let (s, busy) = queried(&state, &q)?;
        let (id, display): (String, Vec<DisplayEntry>) = {
            let s = lock(&s);
            (s.id.clone(), s.display.clone())
        };
        let vault = state.app.vault_path();
        let entries = display.iter().map(|e| entry_dto(e, vault.as_deref())).collect();
        let pending = state.chat()?.pending_for(&id);
        let busy = busy || state.is_streaming(&id);
        Ok(Json(History {
            session_id: id,
            busy,
            entries,
            pending,
        }))
    })
    .await
}

#[derive(Deserialize)]
pub struct KbOnlyBody {
    pub kb_only: bool,
    #[serde(default)]
    pub session_id: Option<String>,
}

async fn set_kb_only(
    State(state): State<Arc<WebState>>,
    Body(b): Body<KbOnlyBody>,
) -> ApiResult<Json<serde_json::Value>> {
    blocking(move || {
        // The default for brand-new sessions, and the addressed session's own.
        state.default_kb_only.store(b.kb_only, Ordering::Relaxed);
        let q = SessionQuery {
            session_id: b.session_id,
        };
        if q.session_id.is_some() || state.active_id().is_some() {
            let (s, _) = queried(&state, &q)?;
            state.chat()?.set_kb_only(&s, b.kb_only)?;
        }
        Ok(Json(serde_json::json!({ "kb_only": b.kb_only })))
    })
    .await
}
