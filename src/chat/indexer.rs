//! Chat history indexing after the reply: a turn commits its answer to the
//! session file (the truth) and sends `reply`; embedding the exchange and
//! committing it to the knowledge base happens here, on one background
//! thread, so the human never waits for it.
//!
//! Owns: the queue of sessions with history to index, the one worker
//! thread draining it, the exclusion that keeps a delete from interleaving
//! with an indexing pass, retitling a renamed session's chunks,
//! pruning old sessions after a save, and the catch-up over every session (on start, for exchanges a crash
//! left unindexed).
//! Must not: write session files (only turns and the human's own
//! operations do — an indexing pass that rewrote a file could drop a turn
//! committed meanwhile) or decide what is indexed (`history` reads that
//! back from the knowledge base, so a pass is idempotent).

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::cancel::Cancel;
use crate::kb::Kb;

use super::agent::lock;
use super::history;
use super::session::{SessionError, SessionStore, KEEP_UNPINNED};

#[derive(Default)]
struct Queue {
    /// Session ids waiting for a pass (a set: two turns of one session
    /// queued before the worker gets to it need one pass).
    waiting: BTreeSet<String>,
    /// Whether the worker thread is alive.
    worker: bool,
    /// Whether the catch-up is still looking for sessions to queue.
    scanning: bool,
    /// Sessions renamed since their last pass: their chunks take the
    /// file's title after the pass's own commit.
    retitle: BTreeSet<String>,
}

struct Shared {
    kb: Arc<Kb>,
    store: SessionStore,
    queue: Mutex<Queue>,
    idle: Condvar,
    /// Held for one session's pass, and by delete: a pass that read the
    /// session before a delete would otherwise re-add its chunks after.
    exclusive: Mutex<()>,
    /// Cancels a pass's embedding when the agent goes away.
    cancel: Cancel,
}

pub(crate) struct Indexer(Arc<Shared>);

impl Indexer {
    pub(crate) fn new(kb: Arc<Kb>, store: SessionStore) -> Indexer {
        Indexer(Arc::new(Shared {
            kb,
            store,
            queue: Mutex::new(Queue::default()),
            idle: Condvar::new(),
            exclusive: Mutex::new(()),
            cancel: Cancel::new(),
        }))
    }

    /// Queue `session_id` for a pass; starts the worker if none runs.
    pub(crate) fn schedule(&self, session_id: &str) {
        schedule(&self.0, std::iter::once(session_id.to_string()));
    }

    /// Find every stored session whose history the knowledge base lacks
    /// (a crash between a turn's save and its indexing) and queue it — on
    /// a thread of its own, since it reads every session file.
    pub(crate) fn catch_up(&self) {
        lock(&self.0.queue).scanning = true;
        let shared = self.0.clone();
        let spawned = std::thread::Builder::new()
            .name("chat-history-catch-up".into())
            .spawn(move || {
                let found = pending_sessions(&shared.kb, &shared.store);
                lock(&shared.queue).scanning = false;
                match found {
                    Ok(ids) if ids.is_empty() => shared.idle.notify_all(),
                    Ok(ids) => {
                        tracing::info!(sessions = ids.len(), "indexing chat history a previous run left unindexed");
                        schedule(&shared, ids);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "the chat-history catch-up could not scan the sessions; the next turn of each indexes it");
                        shared.idle.notify_all();
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the chat-history catch-up; the next turn of each session indexes it");
            lock(&self.0.queue).scanning = false;
        }
    }

    /// A session was renamed: its chunks get the new title on a pass, so
    /// the rename never waits for the knowledge base's write lock (held
    /// by whatever pass is embedding right now).
    pub(crate) fn retitle(&self, session_id: &str) {
        lock(&self.0.queue).retitle.insert(session_id.to_string());
        self.schedule(session_id);
    }

    /// Block until every queued pass has run (tests, shutdown paths).
    pub(crate) fn wait_idle(&self) {
        let mut q = lock(&self.0.queue);
        while q.worker || q.scanning || !q.waiting.is_empty() {
            q = self.0.idle.wait(q).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Keep passes out while the caller changes a session's chunks.
    pub(crate) fn exclusive(&self) -> MutexGuard<'_, ()> {
        lock(&self.0.exclusive)
    }
}

impl Drop for Indexer {
    fn drop(&mut self) {
        // A pass cut short commits nothing; the catch-up redoes it.
        self.0.cancel.cancel();
    }
}

fn schedule(shared: &Arc<Shared>, ids: impl IntoIterator<Item = String>) {
    let mut q = lock(&shared.queue);
    q.waiting.extend(ids);
    if q.worker || q.waiting.is_empty() {
        return;
    }
    let worker = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("chat-history-index".into())
        .spawn(move || work(&worker));
    match spawned {
        Ok(_) => q.worker = true,
        Err(e) => {
            // Nothing is lost: the session files hold the exchanges, and
            // the next turn or the next start's catch-up indexes them.
            tracing::warn!(error = %e, waiting = q.waiting.len(), "cannot start the chat-history indexer; indexing waits for the next turn or start");
            q.waiting.clear();
            shared.idle.notify_all();
        }
    }
}

fn work(shared: &Shared) {
    loop {
        let id = {
            let mut q = lock(&shared.queue);
            match q.waiting.pop_first() {
                Some(id) => id,
                None => {
                    q.worker = false;
                    shared.idle.notify_all();
                    return;
                }
            }
        };
        let _x = lock(&shared.exclusive);
        pass(shared, &id);
    }
}

/// Index what `id` lacks, then prune old sessions (and their chunks).
fn pass(shared: &Shared, id: &str) {
    let session = match shared.store.load(id) {
        Ok(s) => s,
        // Deleted (or pruned) since it was queued: nothing to index.
        Err(SessionError::NotFound(_)) => return,
        Err(e) => {
            tracing::warn!(session = %id, error = %e, "cannot read the session to index its history");
            return;
        }
    };
    let t = std::time::Instant::now();
    match history::index_pending(&shared.kb, &session, &shared.cancel) {
        Ok(0) => {}
        Ok(n) => {
            tracing::debug!(session = %id, chunks = n, ms = t.elapsed().as_millis() as u64, "chat history indexed")
        }
        Err(e) => {
            tracing::warn!(session = %id, error = %e, "could not index the chat exchange; the next turn or start retries")
        }
    }
    retitle_if_renamed(shared, id);
    match shared.store.prune(KEEP_UNPINNED, id) {
        Ok(removed) => {
            for old in removed {
                if let Err(e) = history::delete_chunks(&shared.kb, &old) {
                    tracing::warn!(session = %old, error = %e, "pruned session's chat chunks stay indexed");
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not prune old sessions"),
    }
}

/// After this pass's commit, a renamed session's chunks (the new ones
/// included) take the title the file has now.
fn retitle_if_renamed(shared: &Shared, id: &str) {
    if !lock(&shared.queue).retitle.remove(id) {
        return;
    }
    let title = match shared.store.load(id) {
        Ok(s) => s.title,
        Err(_) => return,
    };
    if let Err(e) = history::propagate_title(&shared.kb, id, &title) {
        tracing::warn!(session = %id, error = %e, "the chat chunks keep the session's old title");
    }
}

/// Ids of stored sessions whose history the knowledge base lacks.
pub(crate) fn pending_sessions(kb: &Kb, store: &SessionStore) -> Result<Vec<String>, super::ChatError> {
    let mut out = Vec::new();
    for m in store.list()? {
        let s = match store.load(&m.id) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(session = %m.id, error = %e, "skipped by the history catch-up");
                continue;
            }
        };
        if history::has_pending(kb, &s)? {
            out.push(m.id);
        }
    }
    Ok(out)
}
