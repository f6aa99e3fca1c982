//! Per-process web state: what the server must remember between requests.
//!
//! Owns: the allowed Host values (fixed once the port is bound), the
//! viewed session, the default knowledge-source mode for new sessions, and
//! one entry per turn streaming right now: session id → the sender of its
//! SSE stream, so `/chat/stop` can end the stream itself without waiting
//! for the worker.
//! Must not: persist anything, or decide chat semantics: the running-turn
//! registry (with each turn's stop switch), the unsaved new sessions,
//! rollback and pending confirmations belong to the chat agent. A restart
//! forgets it all.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use crate::app::App;
use crate::cancel::Cancel;
use crate::chat::{ChatAgent, StopTicket};

use super::error::ApiError;
use super::security::allowed_hosts;

/// One SSE frame's payload, already JSON.
pub type Frame = serde_json::Value;

/// One turn streaming to a browser: which registration (the chat's turn
/// generation) and where its frames go.
pub struct Streaming {
    pub turn_id: u64,
    pub tx: UnboundedSender<Frame>,
}

pub struct WebState {
    pub app: Arc<App>,
    pub allowed_hosts: Vec<String>,
    pub shutdown: Cancel,
    pub default_kb_only: AtomicBool,
    active: Mutex<Option<String>>,
    streaming: Mutex<HashMap<String, Streaming>>,
}

pub use crate::lock::lock;

impl WebState {
    pub fn new(app: Arc<App>, port: u16, shutdown: Cancel) -> Self {
        WebState {
            app,
            allowed_hosts: allowed_hosts(port),
            shutdown,
            default_kb_only: AtomicBool::new(true),
            active: Mutex::new(None),
            streaming: Mutex::new(HashMap::new()),
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

    /// Sessions mid-turn (the chat's registry).
    pub fn busy(&self) -> Vec<String> {
        self.chat().map(|c| c.busy()).unwrap_or_default()
    }

    pub fn is_streaming(&self, id: &str) -> bool {
        lock(&self.streaming).contains_key(id)
    }

    /// Send turn `turn_id`'s frames for `id` to `tx` (a finished turn's
    /// entry not yet ended is replaced: its worker is past its events).
    pub fn start_stream(&self, id: &str, turn_id: u64, tx: UnboundedSender<Frame>) {
        lock(&self.streaming).insert(id.to_string(), Streaming { turn_id, tx });
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
    /// and end its stream. Returns the stops still to be rolled back.
    pub fn cancel_all_turns(&self) -> Vec<StopTicket> {
        let all: Vec<(String, Streaming)> = lock(&self.streaming).drain().collect();
        let chat = self.chat().ok();
        let mut tickets = Vec::new();
        for (id, s) in all {
            if let Some(t) = chat.as_ref().and_then(|c| c.begin_stop(&id).ok()) {
                tickets.push(t);
            }
            let _ =
                s.tx.send(serde_json::json!({ "type": "stopped", "session_id": id, "reason": "shutdown" }));
        }
        tickets
    }
}

/// Resolves once `cancel` is stopped.
pub async fn stopped(cancel: &Cancel) {
    cancel.cancelled().await;
}
