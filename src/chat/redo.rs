//! Asking again: [`ChatAgent::rewind_last`] takes back a conversation's
//! last answered exchange (for Regenerate, or an edited question sent in
//! its place), and the human's doors to the queue and pinned context.
//! Must not: start the new turn (the edge does, through the usual path) or
//! touch a session a turn is running on.

use super::agent::ChatAgent;
use super::pins::{ForTurn, PinOp, Pinned};
use super::queue::{Queue, QueueOp, Queued};
use super::{history, ChatError};
use crate::llm::Role;

impl ChatAgent {
    /// Take back the last question and its answer; returns the question.
    /// The session keeps its title (unless the taken-back question was its
    /// only one and named it); its indexed chat history is dropped
    /// and indexed again from what remains (a pass after the next reply
    /// would otherwise keep the old answer findable).
    pub fn rewind_last(&self, id: &str) -> Result<String, ChatError> {
        if self.is_busy(id) {
            return Err(ChatError::Busy(id.to_string()));
        }
        let mut s = self.deps.sessions.load(id)?;
        if !s.ends_with_reply() {
            return Err(ChatError::NothingToRedo(id.to_string()));
        }
        let Some(question) = s
            .display
            .iter()
            .rev()
            .find(|d| d.role == Role::User && !d.steered)
            .map(|d| d.text.clone())
        else {
            return Err(ChatError::NothingToRedo(id.to_string()));
        };
        let title = s.title.clone();
        if !s.rollback_turn() {
            return Err(ChatError::NothingToRedo(id.to_string()));
        }
        let emptied = s.is_empty();
        // A title the first question gave follows the question asked in
        // its place; one the human chose stays.
        if !(emptied && title == super::session::default_title(&question)) {
            s.title = title;
        }
        s.updated = crate::kb::stage::now_iso();
        {
            // Serialised with the history passes, as a delete is.
            let _x = self.indexer.exclusive();
            if emptied {
                // No file holds an empty conversation: it waits, unsaved,
                // for the question asked again (which saves it).
                self.deps.sessions.delete_file(id)?;
            } else {
                self.deps.sessions.save(&s)?;
            }
            history::delete_chunks(self.kb(), id)?;
        }
        if emptied {
            self.add_unsaved(std::sync::Arc::new(std::sync::Mutex::new(s)));
        }
        self.clear_pending_for(id);
        self.indexer.schedule(id);
        Ok(question)
    }

    pub fn queue(&self, session: &str) -> Queue {
        self.queues.get(session)
    }

    pub fn queue_apply(&self, session: &str, op: QueueOp) -> Result<Queue, ChatError> {
        Ok(self.queues.apply(session, op)?)
    }

    /// Take queued message `item` out to run it as the next turn.
    pub fn queue_take(&self, session: &str, item: &str) -> Result<Queued, ChatError> {
        Ok(self.queues.take(session, item)?)
    }

    pub fn pinned(&self) -> Pinned {
        self.pins.get()
    }

    pub fn pins_apply(&self, op: PinOp) -> Result<Pinned, ChatError> {
        Ok(self.pins.apply(op)?)
    }

    /// What pinned context adds to a turn under a cloud or local model.
    pub(crate) fn pinned_for_turn(&self, cloud: bool) -> ForTurn {
        self.pins.for_turn(self.kb(), cloud)
    }
}
