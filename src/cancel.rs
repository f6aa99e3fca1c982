//! The one cancellation switch, shared by every layer (kb, llm, ingest, chat,
//! jobs, app, edges). It sits below everything and depends on nothing in the
//! crate.
//!
//! A [`Cancel`] is cheap to clone; clones share one switch. `cancel()` may be
//! called from any thread and does three things, in this order:
//! 1. sets a flag that long loops poll with [`Cancel::check`] /
//!    [`Cancel::is_cancelled`] between units of work;
//! 2. runs the hooks registered with [`Cancel::on_cancel`] — this is what
//!    makes stopping *fast* where a thread is blocked in a read: the LLM
//!    layer registers a hook that shuts the streaming socket down, so a
//!    thread waiting on a silent stream wakes at once and the server sees the
//!    connection close (the only "stop generating" signal these services
//!    have);
//! 3. wakes async waiters of [`Cancel::cancelled`] (for `tokio::select!`).
//!
//! [`Cancel::child`] gives a switch that is cancelled with its parent but can
//! also be cancelled alone (stop one chat turn without stopping the server).
//!
//! What it must not do: know about any feature, block, or panic in `cancel()`
//! because a hook did (hooks are the caller's code; keep them short).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The work was stopped on request. Not a failure: callers that save results
/// (a chat reply, a journal entry) must leave no trace of a stopped run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped")]
pub struct Cancelled;

type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next_id: AtomicU64,
    hooks: Mutex<Vec<(u64, Hook)>>,
    notify: tokio::sync::Notify,
    /// A child's registration on its parent; dropped (so unregistered) when
    /// the last clone of the child goes, so short-lived children do not pile
    /// up hooks on a long-lived parent.
    parent: OnceLock<CancelGuard>,
}

/// A shareable stop switch. See the module docs.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: later checks fail, registered hooks run (once each), async
    /// waiters wake. Idempotent.
    pub fn cancel(&self) {
        // Flag first, under the hook lock, so a hook registered concurrently
        // either lands in the list we drain or sees the flag and runs itself.
        let hooks = {
            let mut hooks = crate::lock::lock(&self.0.hooks);
            if self.0.cancelled.swap(true, Ordering::SeqCst) {
                return;
            }
            std::mem::take(&mut *hooks)
        };
        for (_, hook) in hooks {
            hook();
        }
        self.0.notify.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// `Err(Cancelled)` once cancelled; for `?` in loops.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// A switch cancelled when this one is (not the other way round).
    pub fn child(&self) -> Cancel {
        let child = Cancel::new();
        let weak: Weak<Inner> = Arc::downgrade(&child.0);
        let guard = self.on_cancel(move || {
            if let Some(inner) = weak.upgrade() {
                Cancel(inner).cancel();
            }
        });
        // A fresh OnceLock: set cannot fail; ignore the impossible Err.
        let _ = child.0.parent.set(guard);
        child
    }

    /// Registers `hook` to run once on `cancel()`; it runs immediately (on
    /// this thread) if already cancelled. Dropping the guard unregisters it,
    /// so a finished request's hook never fires.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> CancelGuard {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
        let mut hooks = crate::lock::lock(&self.0.hooks);
        if self.0.cancelled.load(Ordering::SeqCst) {
            drop(hooks);
            hook();
        } else {
            hooks.push((id, Box::new(hook)));
        }
        CancelGuard {
            inner: Arc::downgrade(&self.0),
            id,
        }
    }

    /// Resolves once cancelled (at once if already). Cancel-safe.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Register before looking at the flag so a cancel() between the
            // look and the await is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// Unregisters an [`Cancel::on_cancel`] hook when dropped.
#[must_use = "dropping the guard unregisters the hook at once"]
pub struct CancelGuard {
    // Weak: a guard must not keep a parent switch alive on its own.
    inner: Weak<Inner>,
    id: u64,
}

impl std::fmt::Debug for CancelGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelGuard").field("id", &self.id).finish()
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            let mut hooks = crate::lock::lock(&inner.hooks);
            hooks.retain(|(id, _)| *id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counter() -> (Arc<AtomicUsize>, impl FnOnce() + Send + 'static) {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        (count, move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn cancel_runs_hooks_once_and_flags() {
        let cancel = Cancel::new();
        let (count, hook) = counter();
        let _guard = cancel.on_cancel(hook);
        assert!(cancel.check().is_ok());
        cancel.cancel();
        cancel.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert_eq!(cancel.check(), Err(Cancelled));
        assert!(cancel.clone().is_cancelled());
    }

    #[test]
    fn dropped_guard_never_fires_and_late_hook_runs_at_once() {
        let cancel = Cancel::new();
        let (count, hook) = counter();
        drop(cancel.on_cancel(hook));
        cancel.cancel();
        assert_eq!(count.load(Ordering::SeqCst), 0);
        let (count, hook) = counter();
        let _g = cancel.on_cancel(hook);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn child_follows_parent_but_not_the_reverse() {
        let parent = Cancel::new();
        let a = parent.child();
        let b = parent.child();
        let (count, hook) = counter();
        let _g = b.on_cancel(hook);
        a.cancel();
        assert!(a.is_cancelled());
        assert!(!parent.is_cancelled());
        assert!(!b.is_cancelled());
        parent.cancel();
        assert!(b.is_cancelled());
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "child hooks run when the parent cancels"
        );
        assert!(
            parent.child().is_cancelled(),
            "a child of a cancelled switch starts cancelled"
        );
    }

    #[test]
    fn dropped_children_unregister_from_the_parent() {
        let parent = Cancel::new();
        for _ in 0..100 {
            drop(parent.child());
        }
        let hooks = parent.0.hooks.lock().unwrap().len();
        assert_eq!(hooks, 0);
    }

    #[tokio::test]
    async fn cancelled_wakes_async_waiters() {
        let cancel = Cancel::new();
        let c = cancel.clone();
        let waiter = tokio::spawn(async move { c.cancelled().await });
        tokio::task::yield_now().await;
        std::thread::spawn(move || cancel.cancel());
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("waiter woke")
            .expect("task ran");
    }
}
