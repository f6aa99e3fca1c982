//! A turn's lifecycle as an edge sees it: [`ChatAgent::begin_turn`]
//! registers the turn on its session *before* any worker starts — so a
//! second turn is refused at once and a stop that arrives before the
//! worker runs finds the turn, flips its switch and wins (the worker then
//! saves nothing) — and hands back a [`TurnHandle`] that runs it.
//! Must not: know how events travel (the edge's sink does) or roll back
//! anything itself — [`ChatAgent::stop`] is the one rollback path.

use std::sync::Arc;

use crate::cancel::Cancel;

use super::agent::ChatAgent;
use super::{ChatError, EventSink, Reply, SharedSession, TurnContext};

/// A registered turn, not yet run. Dropping it unrun deregisters it.
pub struct TurnHandle {
    agent: Arc<ChatAgent>,
    session: SharedSession,
    id: String,
    generation: u64,
    cancel: Cancel,
}

impl ChatAgent {
    /// Register a turn on `session` now; `Busy` when one is running there.
    pub fn begin_turn(self: &Arc<Self>, session: &SharedSession) -> Result<TurnHandle, ChatError> {
        let cancel = Cancel::new();
        let (id, generation) = self.register(session, &cancel)?;
        Ok(TurnHandle {
            agent: Arc::clone(self),
            session: session.clone(),
            id,
            generation,
            cancel,
        })
    }
}

impl ChatAgent {
    /// Register a turn on the conversation `id` (saved, or new and not yet
    /// saved): `NoConversation` when there is none, `Busy` when a turn is
    /// running on it. Reads the session file: call it off the event loop.
    pub fn begin_turn_in(self: &Arc<Self>, id: &str) -> Result<TurnHandle, ChatError> {
        let (session, busy) = self.find(id)?;
        if busy {
            return Err(ChatError::Busy(id.to_string()));
        }
        self.begin_turn(&session)
    }
}

impl TurnHandle {
    pub fn session_id(&self) -> &str {
        &self.id
    }

    /// Which registration this is (a later turn on the same session has a
    /// larger one).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Run the turn for `message`, reporting through `events` (blocking:
    /// call it on a blocking thread). A stop that came first ends it before
    /// the question is saved.
    pub fn run(self, message: &str, context: &TurnContext, events: EventSink<'_>) -> Result<Option<Reply>, ChatError> {
        self.agent.run_registered(
            &self.session,
            &self.id,
            self.generation,
            message,
            context,
            events,
            &self.cancel,
        )
    }
}

impl Drop for TurnHandle {
    fn drop(&mut self) {
        // A no-op after `run` (it deregistered); an unrun handle lets go.
        self.agent.deregister(&self.id, self.generation);
    }
}
