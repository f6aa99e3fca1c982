//! Per-process web state: what the server must remember between requests.
//!
//! Owns: the allowed Host values (fixed once the port is bound), the
//! viewed session, brand-new sessions that have no file yet, the default
//! knowledge-source mode for new sessions, and one entry per turn streaming
//! right now (its stop switch and the sender of its SSE stream, so
//! `/chat/stop` can end the stream itself without waiting for the worker).
//! Must not: persist anything, or decide chat semantics: the running-turn
//! registry, rollback and pending confirmations belong to the chat agent;
//! this only mirrors what the HTTP side needs. A restart forgets it all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::mpsc::UnboundedSender;

use crate::app::App;
use crate::cancel::Cancel;
use crate::chat::{ChatAgent, SharedSession};

use super::error::ApiError;
use super::security::allowed_hosts;

/// How many unsaved new sessions are remembered (each "New chat" click makes
/// one; only the newest few can still receive a first message).
const FRESH_KEEP: usize = 32;

/// One SSE frame's payload, already JSON.
pub type Frame = serde_json::Value;

/// One turn streaming to a browser.
pub struct Streaming {
    pub turn_id: u64,
    pub cancel: Cancel,
    pub tx: UnboundedSender<Frame>,
}

pub struct WebState {
    pub app: Arc<App>,
    pub allowed_hosts: Vec<String>,
    pub shutdown: Cancel,
    pub default_kb_only: AtomicBool,
    active: Mutex<Option<String>>,
    fresh: Mutex<Vec<SharedSession>>,
    streaming: Mutex<HashMap<String, Streaming>>,
    next_turn: AtomicU64,
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WebState {
    pub fn new(app: Arc<App>, port: u16, shutdown: Cancel) -> Self {
        WebState {
            app,
            allowed_hosts: allowed_hosts(port),
            shutdown,
            default_kb_only: AtomicBool::new(true),
            active: Mutex::new(None),
            fresh: Mutex::new(Vec::new()),
            streaming: Mutex::new(HashMap::new()),
            next_turn: AtomicU64::new(1),
        }
    }

    pub fn chat(&self) -> Result<Arc<ChatAgent>, ApiError> {
        Ok(self.app.chat()?)
    }

    pub fn active_id(&self) -> Option<String> {
        lock(&self.active).clone()
    }

    pub fn set_active(&self, id: &str) {
        *lock(&self.active) = Some(id.to_string());
    }

    /// Remember a brand-new session (no file until its first turn).
    pub fn add_fresh(&self, s: SharedSession) {
        let mut fresh = lock(&self.fresh);
        fresh.push(s);
        let n = fresh.len();
        if n > FRESH_KEEP {
            fresh.drain(..n - FRESH_KEEP);
        }
    }

    pub fn fresh(&self, id: &str) -> Option<SharedSession> {
        lock(&self.fresh).iter().find(|s| lock(s).id == id).cloned()
    }

    pub fn forget_fresh(&self, id: &str) {
        lock(&self.fresh).retain(|s| lock(s).id != id);
    }

    /// Sessions mid-turn: the agent's registry plus turns this server has
    /// accepted whose worker has not registered yet.
    pub fn busy(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.streaming).keys().cloned().collect();
        if let Ok(chat) = self.chat() {
            v.extend(chat.busy());
        }
        v.sort();
        v.dedup();
        v
    }

    pub fn is_streaming(&self, id: &str) -> bool {
        lock(&self.streaming).contains_key(id)
    }

    /// Register a streaming turn; `None` when one is already registered.
    pub fn start_stream(&self, id: &str, tx: UnboundedSender<Frame>) -> Option<(u64, Cancel)> {
        let mut streaming = lock(&self.streaming);
        if streaming.contains_key(id) {
            return None;
        }
        let turn_id = self.next_turn.fetch_add(1, Ordering::Relaxed);
        let cancel = Cancel::new();
        streaming.insert(
            id.to_string(),
            Streaming {
                turn_id,
                cancel: cancel.clone(),
                tx,
            },
        );
        Some((turn_id, cancel))
    }

    /// Deregister only if the registered turn is still `turn_id`.
    pub fn end_stream(&self, id: &str, turn_id: u64) {
        let mut streaming = lock(&self.streaming);
        if streaming.get(id).is_some_and(|s| s.turn_id == turn_id) {
            streaming.remove(id);
        }
    }

    /// Take the streaming turn of `id` out of the registry.
    pub fn take_stream(&self, id: &str) -> Option<Streaming> {
        lock(&self.streaming).remove(id)
    }

    /// Shutdown: stop every live turn (each closes its upstream connection)
    /// and end its stream. Returns the sessions that were mid-turn.
    pub fn cancel_all_turns(&self) -> Vec<String> {
        let all: Vec<(String, Streaming)> = lock(&self.streaming).drain().collect();
        let mut ids = Vec::new();
        for (id, s) in all {
            s.cancel.cancel();
            let _ =
                s.tx.send(serde_json::json!({ "type": "stopped", "session_id": id, "reason": "shutdown" }));
            ids.push(id);
        }
        ids
    }
}

/// Resolves once `cancel` is stopped.
pub async fn stopped(cancel: &Cancel) {
    cancel.cancelled().await;
}
