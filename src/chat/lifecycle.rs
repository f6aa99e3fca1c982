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
        let researched;
        let (message, context) = match research_command(message, context) {
            Some((question, c)) => {
                researched = c;
                (question, &researched)
            }
            None => (message, context),
        };
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

/// The built-in `/research QUESTION` from any door (the web composer, a
/// terminal's `jarvis ask`): the question, run as a research report that
/// waits in its draft as a suggested change — the same turn as the
/// composer's Research switch. `None` for any other message, or when the
/// caller already asked for a report.
fn research_command<'m>(message: &'m str, context: &TurnContext) -> Option<(&'m str, TurnContext)> {
    if context.research.is_some() {
        return None;
    }
    match super::commands::invocation(message) {
        Some(("research", question)) => Some((
            question,
            TurnContext {
                research: Some(super::research::ReportDelivery::Suggest),
                ..context.clone()
            },
        )),
        _ => None,
    }
}

impl Drop for TurnHandle {
    fn drop(&mut self) {
        // A no-op after `run` (it deregistered); an unrun handle lets go.
        self.agent.deregister(&self.id, self.generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::research::ReportDelivery;

    #[test]
    fn slash_research_runs_the_question_as_a_report() {
        let plain = TurnContext::default();
        let (q, c) = research_command("/research  why do tides lag the moon?", &plain).expect("a report");
        assert_eq!(q, "why do tides lag the moon?");
        assert_eq!(c.research, Some(ReportDelivery::Suggest));
        // Only the built-in, only at the start, and never over the caller's choice.
        assert!(research_command("/researcher tides", &plain).is_none());
        assert!(research_command("please /research tides", &plain).is_none());
        let terminal = TurnContext {
            research: Some(ReportDelivery::Write),
            ..TurnContext::default()
        };
        assert!(research_command("/research tides", &terminal).is_none());
        // An empty question stays empty, and the turn refuses it as any other.
        assert_eq!(research_command("/research", &plain).map(|(q, _)| q), Some(""));
    }
}
