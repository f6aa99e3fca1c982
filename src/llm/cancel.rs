//! One turn's stop switch.
//!
//! `stop()` may be called from any thread. It sets a flag that `check()` sees
//! between streamed events, and it runs the stop hooks registered by the
//! request in flight, which shut its socket down. That second part is what
//! makes stop fast: a thread blocked reading a silent stream is woken at once
//! instead of waiting for the next byte, and the server sees the connection
//! close, which is the only "stop generating" signal these services have.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The turn was stopped by the user. Deliberately not an [`LlmError`]: an
/// LLM error becomes a saved "⚠️" reply, a stopped turn must leave no trace.
///
/// [`LlmError`]: crate::llm::LlmError
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("turn cancelled")]
pub struct TurnCancelled;

type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Inner {
    stopped: AtomicBool,
    next_id: AtomicU64,
    hooks: Mutex<Vec<(u64, Hook)>>,
}

/// Cheap to clone; clones share the same switch.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("stopped", &self.is_stopped())
            .finish()
    }
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the turn: later `check()`s fail and any request in flight has
    /// its connection closed. Idempotent.
    pub fn stop(&self) {
        // Flag first, under the hook lock, so a hook registered concurrently
        // either lands in the list we drain or sees the flag and runs itself.
        let hooks = {
            let mut hooks = self.inner.hooks.lock().unwrap_or_else(PoisonError::into_inner);
            self.inner.stopped.store(true, Ordering::SeqCst);
            std::mem::take(&mut *hooks)
        };
        for (_, hook) in hooks {
            hook();
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    pub fn check(&self) -> Result<(), TurnCancelled> {
        if self.is_stopped() {
            Err(TurnCancelled)
        } else {
            Ok(())
        }
    }

    /// Registers `hook` to run once on `stop()`; it runs immediately if the
    /// token is already stopped. Dropping the guard unregisters it, so a
    /// finished request's hook never fires.
    pub fn on_stop(&self, hook: impl FnOnce() + Send + 'static) -> StopHookGuard {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mut hooks = self.inner.hooks.lock().unwrap_or_else(PoisonError::into_inner);
        if self.inner.stopped.load(Ordering::SeqCst) {
            drop(hooks);
            hook();
        } else {
            hooks.push((id, Box::new(hook)));
        }
        StopHookGuard {
            token: self.clone(),
            id,
        }
    }
}

/// Unregisters a stop hook when dropped.
pub struct StopHookGuard {
    token: CancelToken,
    id: u64,
}

impl Drop for StopHookGuard {
    fn drop(&mut self) {
        let mut hooks = self.token.inner.hooks.lock().unwrap_or_else(PoisonError::into_inner);
        hooks.retain(|(id, _)| *id != self.id);
    }
}

/// `check()` for an optional token: callers that cannot be interrupted pass `None`.
pub fn check(cancel: Option<&CancelToken>) -> Result<(), TurnCancelled> {
    cancel.map_or(Ok(()), CancelToken::check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn stop_runs_hooks_once_and_flags() {
        let token = CancelToken::new();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let _guard = token.on_stop(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert!(token.check().is_ok());
        token.stop();
        token.stop();
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert_eq!(token.check(), Err(TurnCancelled));
    }

    #[test]
    fn dropped_guard_never_fires_and_late_hook_runs_at_once() {
        let token = CancelToken::new();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        drop(token.on_stop(move || {
            c.fetch_add(1, Ordering::SeqCst);
        }));
        token.stop();
        assert_eq!(count.load(Ordering::SeqCst), 0);
        let c = count.clone();
        let _g = token.on_stop(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }
}
