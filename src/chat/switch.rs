//! `switch_profile` in a running turn: the call that changes the tools,
//! prompt, cap and temperature the tool loop offers from the model's next
//! step, and what the session keeps of it when the turn is saved.
//!
//! Owns: answering the call (the target checked against the catalogue,
//! the new profile's model checked like any model switch), the
//! `profile_switched` event, and applying the switch at the commit.
//! Must not: change the session before the commit (a stopped turn leaves
//! no trace), or move a private session to a cloud model.

use std::cell::RefCell;

use crate::llm::{ToolCall, ToolError, ToolOutcome, ToolSpec};

use super::agent::ChatAgent;
use super::models::validate_switch;
use super::profiles::{switch_target, Catalogue, Profile, TurnSetup};
use super::{ChatEvent, EventSink, Session};

/// What the tool loop needs to rebuild the profile's setup mid-turn.
pub(crate) struct LoopProfiles<'a> {
    pub catalogue: &'a Catalogue,
    pub all_tools: &'a [ToolSpec],
    /// The system prompt before any profile addition (the plan included).
    pub base_system: &'a str,
    pub default_rounds: usize,
    /// The profile `switch_profile` chose this turn, for the commit.
    pub switched: &'a RefCell<Option<Profile>>,
    /// The session is private (a cloud model is never taken).
    pub private: bool,
}

impl ChatAgent {
    /// A `switch_profile` call: the new profile's tools, prompt, cap and
    /// temperature apply from the model's next step (the provider's loop
    /// hands back after this step); the session takes it when the turn is
    /// saved.
    pub(crate) fn switch_call(
        &self,
        call: &ToolCall,
        profiles: &LoopProfiles<'_>,
        active: &RefCell<TurnSetup>,
        events: EventSink<'_>,
    ) -> Result<ToolOutcome, ToolError> {
        let p = switch_target(profiles.catalogue, &call.arguments).map_err(ToolError::Failed)?;
        let mut note = format!(
            "Switched this conversation to the {} profile; its tools apply from your next step.",
            p.name
        );
        if let Some(m) = &p.model {
            match validate_switch(self.deps.providers.as_ref(), profiles.private, m) {
                Ok(_) => note.push_str(&format!(" Its model, {m}, answers from the next message.")),
                Err(e) => note.push_str(&format!(" It keeps the current model ({e}).")),
            }
        }
        events(ChatEvent::ProfileSwitched {
            id: p.id.clone(),
            name: p.name.clone(),
        });
        *profiles.switched.borrow_mut() = Some(p.clone());
        *active.borrow_mut() = TurnSetup::new(
            Some(p.clone()),
            profiles.catalogue,
            profiles.all_tools,
            profiles.base_system,
            profiles.default_rounds,
        );
        Err(ToolError::Yield(ToolOutcome::ok(note)))
    }

    /// The session takes the profile `switch_profile` chose, and its
    /// model when the session may use it.
    pub(crate) fn apply_switch(&self, s: &mut Session, p: &Profile) {
        s.profile = p.id.clone();
        let Some(m) = &p.model else { return };
        match validate_switch(self.deps.providers.as_ref(), s.private, m) {
            Ok((provider, model)) if s.provider != provider || s.model != model => {
                s.provider = provider;
                s.model = model;
                s.served_model = None;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::info!(session = %s.id, error = %e, "the new profile's model is not for this session; keeping the model")
            }
        }
    }
}
