//! One sub-agent: a chat tool loop with no session of its own, on one
//! sub-question, over the read-only library tools.
//!
//! Owns: the sub-agent's prompt, its tool set ([`READ_ONLY`]) and how its
//! end becomes an [`AgentState`]. Must not: write anything, ask the human
//! anything, or outlive the run's stop switch (its requests run under a
//! child of it).

use crate::cancel::Cancel;
use crate::chat::agent::{lock, ChatAgent};
use crate::chat::cite;
use crate::chat::prompt::build_system_prompt;
use crate::chat::tools::{tool_specs, ToolBox};
use crate::chat::turn::{Ended, Limits, LoopStats, Tripped};
use crate::chat::{ChatEvent, EventSink};
use crate::llm::transcript::Message;
use crate::llm::{CallError, ChatProvider};

use super::{AgentState, Finding, ResearchEvent, SubRun};

/// The tools a sub-agent gets: the library, read only.
pub const READ_ONLY: &[&str] = &["search_kb", "get_document", "read_file", "list_documents", "kb_stats"];

/// What a sub-agent is told on top of the chat's system prompt.
pub const SUBAGENT_RULES: &str = "Research assistant: you are one of several assistants working in parallel on a report about the user's question, and you answer one sub-question of it. Search the library (search_kb; read a document with get_document or read_file when a hit looks central; search again with what you learned), then answer your sub-question in one to three short paragraphs, each sentence that states a finding ending with the number of the passage it rests on, like [2]. If the library has nothing on it, say so in one sentence. Do not write the whole report, and do not ask the user anything.";

fn emit(events: EventSink<'_>, index: usize, state: AgentState) {
    events(ChatEvent::Research(ResearchEvent::Agent { index, state }));
}

impl ChatAgent {
    /// Run the sub-agent `index` on `question`. `None` when the run was
    /// stopped (or ran out of time) while it worked; a failure is a
    /// finding with nothing cited, its state said in an event.
    pub(super) fn subagent(
        &self,
        provider: &dyn ChatProvider,
        run: &SubRun<'_>,
        index: usize,
        question: &str,
        events: EventSink<'_>,
        cancel: &Cancel,
    ) -> Option<Finding> {
        emit(events, index, AgentState::Running);
        let settings = run.settings;
        let sub_cancel = cancel.child();
        let mut finding = Finding {
            question: question.to_string(),
            ..Finding::default()
        };
        let system = match build_system_prompt(&self.deps.home, true, "") {
            Ok(base) => format!("{base}\n\n{SUBAGENT_RULES}"),
            Err(e) => {
                emit(events, index, AgentState::Failed { message: e.to_string() });
                return Some(finding);
            }
        };
        let tools: Vec<_> = tool_specs(true)
            .into_iter()
            .filter(|t| READ_ONLY.contains(&t.name.as_str()))
            .collect();
        let mut toolbox = ToolBox::new(&self.deps.tools, run.cloud, run.id, &sub_cancel);
        toolbox.session_private = run.session_private;
        toolbox.results = settings.search_results;
        toolbox.only = Some(READ_ONLY);
        let mut transcript = vec![Message::user(format!(
            "The user's question: {}\n\nYour sub-question: {question}",
            run.question
        ))];
        let tripped = Tripped::default();
        let rounds = settings.research.rounds.max(1);
        let limits = Limits {
            max_output_tokens: settings.max_output_tokens,
            tripped: &tripped,
        };
        // No profile and no switching: a sub-agent is the library tools,
        // its prompt and its round cap, nothing else.
        let catalogue = crate::chat::profiles::Catalogue::default();
        let switched = std::cell::RefCell::new(None);
        let profiles = crate::chat::switch::LoopProfiles {
            catalogue: &catalogue,
            all_tools: &tools,
            base_system: &system,
            default_rounds: rounds,
            switched: &switched,
            private: run.session_private,
        };
        let setup = crate::chat::profiles::TurnSetup {
            profile: None,
            tools: tools.clone(),
            system: system.clone(),
            max_rounds: rounds,
            temperature: None,
        };
        let mut stats = LoopStats::default();
        let sink = |e: ChatEvent| {
            if let ChatEvent::ToolStart { name, summary, .. } = e {
                events(ChatEvent::Research(ResearchEvent::Tool { index, name, summary }));
            }
        };
        let result = self.tool_loop(
            provider,
            &mut transcript,
            setup,
            &profiles,
            &mut toolbox,
            &mut finding.tools,
            &limits,
            &mut stats,
            &sink,
            &sub_cancel,
        );
        run.budget
            .add_tokens(stats.tokens_in.unwrap_or(0) + stats.tokens_out.unwrap_or(0));
        run.budget.add_usage(provider.pop_usage());
        finding.rounds = stats.rounds;
        finding.saw_private = toolbox.saw_private;
        finding.sources = std::mem::take(&mut toolbox.sources);
        finding.searched = std::mem::take(&mut toolbox.searched);
        let passages = std::mem::take(&mut toolbox.passages);
        drop(toolbox);
        if cancel.is_cancelled() {
            return None;
        }
        let verdict = lock(&tripped).take();
        let state = match (verdict, result) {
            (Some(why), _) => AgentState::Failed {
                message: why.to_string(),
            },
            (None, Ok(Ended::Reply(text))) => {
                let checked = cite::check(&text, &passages);
                finding.cited = checked.citations.iter().map(|c| c.n).collect();
                finding.text = checked.text;
                let state = if finding.cited.is_empty() {
                    AgentState::Empty
                } else {
                    AgentState::Done {
                        passages: passages.all().len(),
                        cited: finding.cited.len(),
                    }
                };
                finding.passages = passages;
                state
            }
            (None, Ok(Ended::PrivacyStop(_))) => AgentState::Private,
            (None, Ok(Ended::RoundCap(_))) => AgentState::Failed {
                message: format!("no answer within {rounds} rounds of tool calls (research.rounds)"),
            },
            (None, Ok(Ended::Runaway(why))) => AgentState::Failed {
                message: why.to_string(),
            },
            (None, Err(CallError::Cancelled(_))) => return None,
            (None, Err(CallError::Llm(e))) => AgentState::Failed {
                message: crate::llm::redact_secrets(&e.to_string(), &self.deps.providers.secrets()),
            },
        };
        emit(events, index, state);
        Some(finding)
    }
}
