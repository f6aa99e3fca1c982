//! One turn: compaction if needed, the question saved before the first
//! model request (with the answer instead for a terminal's turn, see
//! `TurnContext::question_with_answer`), the tool loop on a copy of the
//! transcript, and one commit under the session lock — or nothing at all
//! when the turn was stopped.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::cancel::Cancel;
use crate::llm::transcript::{drop_opaque, Block, Message};
use crate::llm::{
    redact_secrets, CallError, ChatProvider, StepOptions, StreamEvent, ToolCall, ToolError, ToolOutcome, TurnEnd,
};

use super::agent::{lock, ChatAgent};
use super::chatlog::TurnRecord;
use super::cite::{finish, Evidence, Finished, TurnEvidence};
use super::compact::{maybe_compact, needs_compaction};
use super::profiles::{Profile, TurnSetup, SWITCH_TOOL};
use super::prompt::build_system_prompt;
use super::runaway::{Deadline, Runaway, Watch};
use super::session::{DisplayEntry, SourceRef, ToolLogEntry};
use super::switch::LoopProfiles;
use super::tools::{summarise_args, tool_specs, ToolBox};
use super::{ChatError, ChatEvent, EventSink, Reply, SharedSession, TurnContext, TurnState};

/// The text that ends a turn which hit the tool-round cap.
pub fn round_cap_message(cap: usize) -> String {
    format!("⚠️ I stopped after {cap} rounds of tool calls without reaching an answer. Ask a narrower question, or raise chat.max_tool_rounds if this one really needs more.")
}

/// How the loop ended, before the commit.
pub(super) enum Ended {
    Reply(String),
    PrivacyStop(String),
    RoundCap(String),
    /// The runaway watch or the time budget ended it.
    Runaway(Runaway),
}

/// The first verdict that ends a turn early (the runaway watch, the time
/// budget), shared with the timer thread.
pub(super) type Tripped = Arc<Mutex<Option<Runaway>>>;

fn trip(tripped: &Tripped, why: Runaway, turn_cancel: &Cancel) {
    lock(tripped).get_or_insert(why);
    // Closes the request in flight (or stops the running tool); the loop
    // returns `Cancelled` and the caller reads the verdict.
    turn_cancel.cancel();
}

/// What the tool loop counted, for chat.log.
#[derive(Default)]
pub(super) struct LoopStats {
    pub rounds: usize,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// The reasoning the model streamed, every step's, for the display.
    pub thinking: String,
    /// Queued messages handed to the turn ("send now"), in order.
    steered: Vec<String>,
}

impl ChatAgent {
    /// Run one turn of `session` for `message`, reporting through `events`.
    /// Blocking (model calls, embedding): async callers use a blocking
    /// thread. See the module docs for the event schema and the stop rules.
    pub fn run_turn(
        &self,
        session: &SharedSession,
        message: &str,
        events: EventSink<'_>,
        cancel: &Cancel,
    ) -> Result<Option<Reply>, ChatError> {
        self.run_turn_in(session, message, &TurnContext::default(), events, cancel)
    }

    /// [`ChatAgent::run_turn`] with what the page shows around the
    /// composer (the draft open in the editor).
    pub fn run_turn_in(
        &self,
        session: &SharedSession,
        message: &str,
        context: &TurnContext,
        events: EventSink<'_>,
        cancel: &Cancel,
    ) -> Result<Option<Reply>, ChatError> {
        let (id, generation) = self.register(session, cancel)?;
        self.run_registered(session, &id, generation, message, context, events, cancel)
    }

    /// The turn registered as `(id, generation)` (see
    /// [`ChatAgent::begin_turn`]): run it, deregister it, log it, and
    /// forget the session as unsaved once a reply saved it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_registered(
        &self,
        session: &SharedSession,
        id: &str,
        generation: u64,
        message: &str,
        context: &TurnContext,
        events: EventSink<'_>,
        cancel: &Cancel,
    ) -> Result<Option<Reply>, ChatError> {
        let id = id.to_string();
        let started = Instant::now();
        let mut record = TurnRecord {
            session: id.clone(),
            ..TurnRecord::default()
        };
        let out = match context.research {
            Some(delivery) => self.research_turn(session, message, context, delivery, events, cancel, &mut record),
            None => self.turn_inner(session, message, context, events, cancel, &mut record),
        };
        self.deregister(&id, generation);
        if matches!(out, Ok(Some(_))) {
            // Saved with its reply (a stop can no longer empty it).
            self.forget_unsaved(&id);
        }
        record.ms = started.elapsed().as_millis() as u64;
        match &out {
            Err(ChatError::Cancelled) => record.outcome = "stopped".into(),
            Err(e) => {
                record.outcome = "failed".into();
                record.error = Some(e.to_string());
            }
            Ok(_) => {}
        }
        self.chatlog.turn(&record, &self.deps.providers.secrets());
        if matches!(out, Ok(Some(_))) {
            // The answer is saved and `reply` sent; embedding the exchange
            // into the knowledge base happens after, off this thread.
            self.indexer.schedule(&id);
        }
        match out {
            Err(ChatError::Cancelled) => {
                events(ChatEvent::Stopped);
                Ok(None)
            }
            Err(e) => {
                events(ChatEvent::Error {
                    message: e.to_string(),
                    kind: e.kind().as_str(),
                });
                Err(e)
            }
            Ok(r) => Ok(r),
        }
    }

    fn turn_inner(
        &self,
        session: &SharedSession,
        message: &str,
        context: &TurnContext,
        events: EventSink<'_>,
        cancel: &Cancel,
        record: &mut TurnRecord,
    ) -> Result<Option<Reply>, ChatError> {
        let typed = message.trim();
        if typed.is_empty() {
            return Err(ChatError::EmptyMessage);
        }
        // A custom command line (`/name args`) runs as its expansion, with
        // the model and profile it names; the bubble keeps what was typed.
        let invocation = super::commands::resolve(&self.deps.home, typed)?;
        let message = invocation.as_ref().map_or(typed, |i| i.prompt.trim());
        if message.is_empty() {
            return Err(ChatError::EmptyMessage);
        }
        if let Some(inv) = &invocation {
            if let Some(m) = &inv.model {
                self.switch_model(session, m)?;
            }
            if let Some(p) = &inv.profile {
                let before = lock(session).profile.clone();
                if let Some(p) = self.set_profile(session, p)?.filter(|p| p.id != before) {
                    events(ChatEvent::ProfileSwitched { id: p.id, name: p.name });
                }
            }
        }
        let settings = self.settings();
        let (id, spec, kb_only, profile_id) = {
            let s = lock(session);
            self.check_resume(&s)?;
            (s.id.clone(), s.model_spec(), s.kb_only, s.profile.clone())
        };
        record.model = spec.clone();
        self.clear_pending_for(&id);
        let provider = self.deps.providers.provider(&spec)?;
        let cloud = self.deps.providers.is_cloud(&spec);

        // The turn's own switch: the human's stop cancels it (through the
        // parent), and so do the time budget and the runaway watch, which
        // leave their verdict in `tripped` — that is how the two are told
        // apart afterwards.
        let turn_cancel = cancel.child();
        let tripped: Tripped = Arc::default();
        let deadline = {
            let (c, t) = (turn_cancel.clone(), tripped.clone());
            let secs = settings.turn_timeout.as_secs().max(1);
            Deadline::start(settings.turn_timeout, move || trip(&t, Runaway::TimeBudget(secs), &c))
        };

        // Compaction runs on a copy, with the session's own provider (a
        // private session is local by construction), and is written back
        // only when the summary is in hand.
        let snapshot = lock(session).clone();
        if needs_compaction(
            &snapshot,
            settings.compact_after_tokens,
            settings.compact_keep_exchanges,
        ) {
            events(ChatEvent::Status {
                state: TurnState::Compacting,
            });
            let mut copy = snapshot;
            match maybe_compact(
                &mut copy,
                provider.as_ref(),
                settings.compact_after_tokens,
                settings.compact_keep_exchanges,
                &turn_cancel,
            ) {
                Ok(true) => {
                    let mut s = lock(session);
                    cancel.check().map_err(|_| ChatError::Cancelled)?;
                    s.messages = copy.messages;
                    s.turn_starts = copy.turn_starts;
                }
                Ok(false) => {}
                Err(CallError::Cancelled(_)) if cancel.is_cancelled() => return Err(ChatError::Cancelled),
                // The budget ran out while compacting: the question is
                // saved below and the loop ends at once with the message.
                Err(CallError::Cancelled(_)) => {
                    tracing::warn!(session = %id, "the turn's time budget ran out while compacting");
                }
                Err(CallError::Llm(e)) => {
                    tracing::warn!(session = %id, error = %e, "compaction failed; continuing uncompacted");
                }
            }
        }
        // The question is on disk before the first model request, so a
        // crash or a closed browser never loses it — and before the first
        // `thinking` event, so a client that lists sessions when it sees
        // that event finds a new session there.
        let (mut transcript, base_len, created) = {
            let mut s = lock(session);
            cancel.check().map_err(|_| ChatError::Cancelled)?;
            let created = !self.deps.sessions.exists(&s.id)?;
            s.begin_turn_as(message, typed);
            if !context.question_with_answer {
                self.deps.sessions.save(&s)?;
            }
            (s.messages.clone(), s.messages.len(), created)
        };
        // Reasoning from earlier turns (files saved before it was dropped
        // at the commit) is never sent again.
        drop_opaque(&mut transcript);
        events(ChatEvent::Status {
            state: TurnState::Thinking,
        });
        let mut system = build_system_prompt(&self.deps.home, kb_only, &settings.response_style)?;
        if let Some(note) = self.open_file_note(context, cloud) {
            system.push_str("\n\n");
            system.push_str(&note);
        }
        let remembered = super::tools::memory::inject(&mut system, &self.deps.tools.kb, &settings.memory, cloud);
        // Pinned context, within its budget; a private pinned note never
        // reaches a cloud model (the answer says it was left out).
        let pinned = self.pinned_for_turn(cloud);
        if let Some(block) = &pinned.block {
            system.push_str("\n\n");
            system.push_str(block);
        }
        // The profile cuts the tool list and adds its prompt, cap and
        // temperature; planning (when the profile plans) runs before the
        // loop, and its plan joins this turn's system prompt.
        let catalogue = super::profiles::load(&self.deps.home);
        let profile = match profile_id.as_str() {
            "" => None,
            p => {
                let found = catalogue.get(p).cloned();
                if found.is_none() {
                    tracing::warn!(session = %id, profile = %p, "the session's profile is gone; running without one");
                }
                found
            }
        };
        let mut all_tools = tool_specs(kb_only);
        // Other MCP servers' tools join the list a profile filters.
        if let Some(mcp) = &self.deps.tools.mcp {
            all_tools.extend(super::tools::mcp::specs(mcp));
        }
        let default_rounds = settings.max_tool_rounds;
        let mut setup = TurnSetup::new(profile.clone(), &catalogue, &all_tools, &system, default_rounds);
        let mut plan_text = String::new();
        if setup.planning() {
            // A stop or the budget running out during the call is the
            // tool loop's to report: it checks the switch first thing.
            if let Ok(Some(plan)) = super::plan::make_plan(provider.as_ref(), message, &setup.tools, &turn_cancel) {
                events(ChatEvent::Plan { text: plan.clone() });
                system.push_str(&super::plan::plan_block(&plan));
                setup = TurnSetup::new(profile, &catalogue, &all_tools, &system, default_rounds);
                plan_text = plan;
            }
        }
        let switched: RefCell<Option<Profile>> = RefCell::new(None);
        let profiles = LoopProfiles {
            catalogue: &catalogue,
            all_tools: &all_tools,
            base_system: &system,
            default_rounds,
            switched: &switched,
            private: lock(session).private,
        };
        let mut toolbox = ToolBox::new(&self.deps.tools, cloud, &id, &turn_cancel);
        // A private pinned note read into a local turn makes the session
        // private, like any private read.
        toolbox.saw_private |= pinned.saw_private;
        toolbox.session_private = lock(session).private;
        toolbox.memory = super::tools::memory::MemoryTurn::new(&settings.memory, lock(session).display.len());
        toolbox.results = settings.search_results;
        let mut log: Vec<ToolLogEntry> = Vec::new();
        let started = Instant::now();

        let mut stats = LoopStats::default();
        let limits = Limits {
            max_output_tokens: settings.max_output_tokens,
            tripped: &tripped,
        };
        let result = self.tool_loop(
            provider.as_ref(),
            &mut transcript,
            setup,
            &profiles,
            &mut toolbox,
            &mut log,
            &limits,
            &mut stats,
            events,
            &turn_cancel,
        );
        drop(deadline);
        let usage = provider.pop_usage();
        tracing::debug!(session = %id, ms = started.elapsed().as_millis() as u64, "turn loop finished");
        record.rounds = stats.rounds;
        record.tokens_in = stats.tokens_in;
        record.tokens_out = stats.tokens_out;
        // A verdict wins over what the request returned (it was cut short
        // for it) — except a reply that was complete as the budget ran out.
        let result = match (lock(&tripped).take(), result) {
            (Some(Runaway::TimeBudget(_)), Ok(end)) => Ok(end),
            (Some(_), _) if cancel.is_cancelled() => Err(CallError::Cancelled(crate::cancel::Cancelled)),
            (Some(why), _) => Ok(Ended::Runaway(why)),
            (None, r) => r,
        };

        let (saw_private, memory_turn) = (toolbox.saw_private, std::mem::take(&mut toolbox.memory));
        let sources = std::mem::take(&mut toolbox.sources);
        let pending = std::mem::take(&mut toolbox.pending);
        let evidence = TurnEvidence {
            passages: std::mem::take(&mut toolbox.passages),
            retrievals: toolbox.retrievals,
            searched: std::mem::take(&mut toolbox.searched),
            own_knowledge: toolbox.own_knowledge,
        };
        drop(toolbox);

        // The commit lock: a stop that got here first rolled the turn back
        // and this worker stands down; otherwise the stop finds a reply and
        // leaves it standing.
        let mut s = lock(session);
        if let Some(u) = &usage {
            s.record_usage(u);
        }
        if cancel.is_cancelled() || matches!(result, Err(CallError::Cancelled(_))) {
            return Err(ChatError::Cancelled);
        }
        // Messages handed over mid-turn stand with an answer; a turn that
        // ends without one gives them back to the queue, which waits.
        if matches!(result, Ok(Ended::Reply(_))) {
            self.queues.settle(&id);
            for t in &stats.steered {
                s.display.push(DisplayEntry::steered(t));
            }
        } else {
            self.queues.on_stop(&id);
        }
        if let Some(p) = switched.into_inner() {
            self.apply_switch(&mut s, &p);
        }
        // Only an answer is checked for citations; a stop or failure
        // message cites nothing and is no abstention.
        let mut finished = Finished::default();
        let mut thinking = String::new();
        let (text, privacy_stop, error) = match result {
            Ok(Ended::Reply(text)) => {
                record.outcome = "reply".into();
                // The turn's reasoning did its work inside the tool loop;
                // the saved transcript (what later requests carry) keeps
                // none of it, and the human sees it in the display.
                drop_opaque(&mut transcript);
                s.messages = transcript;
                thinking = std::mem::take(&mut stats.thinking);
                finished = finish(&text, &evidence, kb_only);
                if finished.replaced {
                    record.outcome = "nothing_found".into();
                    replace_final_text(&mut s.messages, &finished.text);
                }
                (finished.text.clone(), false, false)
            }
            Ok(Ended::PrivacyStop(text)) => {
                record.outcome = "privacy_stop".into();
                // Nothing the tool loop produced survives: the question and
                // the fixed message only.
                s.messages.truncate(base_len);
                s.messages.push(Message::assistant(text.clone()));
                (text, true, false)
            }
            Ok(Ended::RoundCap(text)) => {
                record.outcome = "round_cap".into();
                s.messages.truncate(base_len);
                s.messages.push(Message::assistant(text.clone()));
                (text, false, true)
            }
            Ok(Ended::Runaway(why)) => {
                // What the model streamed before the verdict is debris:
                // the question and the message stand, nothing else.
                tracing::warn!(session = %id, model = %spec, why = %why, "turn ended early");
                record.outcome = why.outcome().into();
                let text = why.message(&spec);
                s.messages.truncate(base_len);
                s.messages.push(Message::assistant(text.clone()));
                (text, false, true)
            }
            Err(CallError::Llm(e)) => {
                tracing::error!(session = %id, error = %e, "model call failed");
                let text = format!("⚠️ {}", redact_secrets(&e.to_string(), &self.deps.providers.secrets()));
                record.outcome = "model_error".into();
                record.error = Some(e.to_string());
                s.messages.truncate(base_len);
                s.messages.push(Message::assistant(text.clone()));
                (text, false, true)
            }
            Err(CallError::Cancelled(_)) => return Err(ChatError::Cancelled),
        };
        let turned_private = saw_private && !cloud && !s.private;
        if saw_private && !cloud {
            s.mark_private();
        }
        let proposed = memory_turn.commit(&self.deps.tools.kb, !privacy_stop && !error, &s.id, s.private);
        s.display.push(DisplayEntry {
            role: crate::llm::Role::Assistant,
            text: text.clone(),
            tools: log.clone(),
            sources: sources.clone(),
            error,
            at: crate::kb::stage::now_iso(),
            citations: finished.citations.clone(),
            unsupported_citations: finished.unsupported,
            not_from_library: finished.not_from_library,
            thinking,
            plan: plan_text,
            steered: false,
            notices: pinned.notices.clone(),
            uncited_paragraphs: finished.uncited_paragraphs,
            memory: remembered.as_ref().map(|m| m.facts.clone()).unwrap_or_default(),
            remembered: proposed.clone(),
        });
        s.updated = crate::kb::stage::now_iso();
        // The session file is the truth: once it holds the answer the turn
        // is done. Indexing it as chat history comes after `reply`.
        self.deps.sessions.save(&s)?;
        if created {
            super::session_events::record_created(self.kb(), &s, context.by.as_ref());
        }
        {
            let mut p = lock(&self.pending);
            for item in pending {
                p.insert(item.token.clone(), item);
            }
        }
        let reply = Reply {
            session_id: s.id.clone(),
            text,
            sources: dedup_sources(sources),
            tools: log,
            private: s.private,
            requested_model: s.model_spec(),
            served_model: s.served_model.clone(),
            cost: s.cost.clone(),
            turn_cost_usd: usage.map(|u| u.values().map(|c| c.usd).sum()),
            privacy_stop,
            error,
            title: s.title.clone(),
            citations: finished.citations,
            unsupported_citations: finished.unsupported,
            not_from_library: finished.not_from_library,
            notices: pinned.notices,
            uncited_paragraphs: finished.uncited_paragraphs,
            memory: remembered.map(|m| m.facts).unwrap_or_default(),
            remembered: proposed,
            evidence: Evidence {
                passages: evidence.passages.into_vec(),
                kept_markers: finished.kept,
                rounds: stats.rounds,
                searched: evidence.searched,
                replaced: finished.replaced,
            },
        };
        drop(s);
        if turned_private {
            // Before `reply`: from the moment the session is private, none
            // of its earlier exchanges may answer a public-only search.
            match super::history::mark_private(&self.deps.tools.kb, &id) {
                Ok(n) => {
                    tracing::info!(session = %id, chunks = n, "session turned private; its indexed exchanges are private now")
                }
                // The history pass sees the public chunks and replaces them
                // private; say that it has to.
                Err(e) => {
                    tracing::error!(session = %id, error = %e, "could not mark the session's indexed exchanges private at once; the history pass will")
                }
            }
            super::session_events::record_turned_private(self.kb(), &id, &reply.title);
        }
        events(ChatEvent::Reply(reply.clone()));
        Ok(Some(reply))
    }

    /// The tool loop over the provider's agentic turn. Every call is timed
    /// and reported (a failed one also to chat.log); a removal's or an
    /// add's confirmation is announced as it is made; the round cap ends a
    /// runaway tool loop without another request, and the runaway watch
    /// ends a step whose output has lost the thread.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tool_loop(
        &self,
        provider: &dyn ChatProvider,
        transcript: &mut Vec<Message>,
        setup: TurnSetup,
        profiles: &LoopProfiles<'_>,
        toolbox: &mut ToolBox<'_>,
        log: &mut Vec<ToolLogEntry>,
        limits: &Limits<'_>,
        stats: &mut LoopStats,
        events: EventSink<'_>,
        cancel: &Cancel,
    ) -> Result<Ended, CallError> {
        let mut secrets = self.deps.providers.secrets();
        if let Some(mcp) = &self.deps.tools.mcp {
            secrets.extend(mcp.secrets());
        }
        // What the profile offers; `switch_profile` replaces it, and the
        // provider's loop hands control back so the next step gets it.
        let active = RefCell::new(setup);
        // The step the model is on (0-based, counted across those hand-
        // backs), from the stream: a call in step n belongs to round n + 1.
        let step = Cell::new(0usize);
        let first_step = Cell::new(0usize);
        let capped = Cell::new(false);
        // Calls in the current step (from the stream) and how many ran, so
        // a "send now" message goes after the round's last result.
        let round_calls = Cell::new(0usize);
        let dispatched = Cell::new(0usize);
        let steered = RefCell::new(Vec::new());
        let mut announced = 0usize;
        let mut dispatch = |call: &ToolCall| -> Result<ToolOutcome, ToolError> {
            let rounds = step.get() + 1;
            let max_rounds = active.borrow().max_rounds;
            if rounds > max_rounds {
                capped.set(true);
                // Ends the turn at once with no further request, exactly
                // like a privacy stop; the caller tells the two apart.
                return Err(ToolError::Privacy(round_cap_message(max_rounds)));
            }
            let summary = summarise_args(&call.arguments);
            events(ChatEvent::ToolStart {
                id: call.id.clone(),
                name: call.name.clone(),
                summary: summary.clone(),
            });
            let t = Instant::now();
            let mut out = if call.name == SWITCH_TOOL {
                self.switch_call(call, profiles, &active, events)
            } else if active.borrow().withholds(&call.name) {
                // A tool the profile leaves out does not run, even when
                // the model names it from memory.
                Err(ToolError::Failed(format!(
                    "`{}` is not available in this conversation's profile — use only the tools you were given",
                    call.name
                )))
            } else {
                toolbox.dispatch(call)
            };
            dispatched.set(dispatched.get() + 1);
            let duration_ms = t.elapsed().as_millis() as u64;
            let (result_chars, is_error) = match &out {
                Ok(o) | Err(ToolError::Yield(o)) => (o.content.chars().count(), o.is_error),
                Err(ToolError::Failed(m)) => (m.chars().count(), true),
                Err(_) => (0, true),
            };
            let failure = match &out {
                Ok(o) if o.is_error => Some(o.content.as_str()),
                Err(ToolError::Failed(m)) => Some(m.as_str()),
                _ => None,
            };
            if crate::mcp_client::is_namespaced(&call.name) {
                let (text, is_error) = match &out {
                    Ok(o) => (o.content.as_str(), o.is_error),
                    Err(_) => (failure.unwrap_or("stopped"), true),
                };
                self.chatlog.mcp_call(
                    toolbox.session_id,
                    &call.name,
                    &call.arguments,
                    text,
                    is_error,
                    &secrets,
                );
            } else if let Some(error) = failure {
                self.chatlog
                    .tool_error(toolbox.session_id, &call.name, &call.arguments, error, &secrets);
            }
            events(ChatEvent::ToolFinish {
                id: call.id.clone(),
                name: call.name.clone(),
                summary: summary.clone(),
                duration_ms,
                result_chars,
                is_error,
            });
            log.push(ToolLogEntry {
                name: call.name.clone(),
                summary,
                duration_ms,
                result_chars,
                is_error,
            });
            for p in &toolbox.pending[announced..] {
                events(ChatEvent::Confirm {
                    token: p.token.clone(),
                    description: p.description.clone(),
                    action: p.action(),
                });
            }
            announced = toolbox.pending.len();
            for p in toolbox.edit_proposals.drain(..) {
                events(ChatEvent::EditProposal {
                    token: p.token.clone(),
                    draft_id: p.draft_id.clone(),
                    filename: p.filename.clone(),
                    base_hash: p.base_hash.clone(),
                    hunks: p.hunks.clone(),
                    message: crate::drafts::proposals::INVARIANT_LINE.into(),
                });
            }
            if dispatched.get() >= round_calls.get() {
                if let Ok(o) = &mut out {
                    let items = self.queues.take_steered(toolbox.session_id);
                    if !items.is_empty() {
                        o.follow_up = Some(super::queue::steer_text(&items));
                        for i in items {
                            events(ChatEvent::Steered { text: i.text.clone() });
                            steered.borrow_mut().push(i.text);
                        }
                    }
                }
            }
            out
        };
        // Text streams as it arrives. A step that ends in tool calls may
        // say something first ("Let me search…"); that text streams too, and
        // the reply event carries the final answer. Every piece passes the
        // runaway watch first; once it has spoken, nothing more is shown.
        let mut watch = Watch::new(limits.max_output_tokens);
        let mut on_event = |e: StreamEvent<'_>| {
            if lock(limits.tripped).is_some() {
                return;
            }
            let verdict = match e {
                StreamEvent::StepStart { step: n } => {
                    step.set(first_step.get() + n);
                    round_calls.set(0);
                    dispatched.set(0);
                    stats.rounds += 1;
                    watch.reset();
                    None
                }
                StreamEvent::TextDelta(t) if !t.is_empty() => match watch.text(t) {
                    None => {
                        events(ChatEvent::Text { text: t.to_string() });
                        None
                    }
                    v => v,
                },
                StreamEvent::ThinkingDelta(t) => match watch.thinking(t) {
                    None if !t.is_empty() => {
                        stats.thinking.push_str(t);
                        events(ChatEvent::Thinking { text: t.to_string() });
                        None
                    }
                    v => v,
                },
                StreamEvent::ToolCallEnd { index, .. } => {
                    round_calls.set(round_calls.get().max(index + 1));
                    None
                }
                StreamEvent::Usage(u) => {
                    let add = |sum: &mut Option<u64>, n: Option<u64>| {
                        if let Some(n) = n {
                            *sum = Some(sum.unwrap_or(0) + n);
                        }
                    };
                    add(&mut stats.tokens_in, u.input_tokens);
                    add(&mut stats.tokens_out, u.output_tokens);
                    None
                }
                _ => None,
            };
            if let Some(why) = verdict {
                trip(limits.tripped, why, cancel);
            }
        };
        let ended = loop {
            let (tools, system, temperature) = {
                let a = active.borrow();
                (a.tools.clone(), a.system.clone(), a.temperature)
            };
            let options = StepOptions {
                max_tokens: limits.max_output_tokens,
                temperature,
            };
            let end = match provider.agentic_turn_capped(
                transcript,
                &tools,
                &mut dispatch,
                &system,
                options,
                Some(cancel),
                &mut on_event,
            ) {
                Ok(end) => end,
                Err(e) => break Err(e),
            };
            match end {
                TurnEnd::Reply(text) => break Ok(Ended::Reply(text)),
                TurnEnd::PrivacyStop(text) if capped.get() => break Ok(Ended::RoundCap(text)),
                TurnEnd::PrivacyStop(text) => break Ok(Ended::PrivacyStop(text)),
                // The next call's first step follows the last one.
                TurnEnd::Yielded => first_step.set(step.get() + 1),
            }
        };
        stats.steered = steered.into_inner();
        ended
    }
}

/// The turn's limits, for the tool loop (the round cap is the profile's).
pub(super) struct Limits<'a> {
    pub max_output_tokens: u32,
    pub tripped: &'a Tripped,
}

/// Put `text` in place of the final answer's words in the transcript, so
/// the model's next turn sees what the human saw (tool calls and their
/// results stay: they happened).
fn replace_final_text(messages: &mut [Message], text: &str) {
    let Some(last) = messages.last_mut().filter(|m| m.role == crate::llm::Role::Assistant) else {
        return;
    };
    last.content.retain(|b| !matches!(b, Block::Text { .. }));
    last.content.push(Block::Text { text: text.to_string() });
}

fn dedup_sources(mut v: Vec<SourceRef>) -> Vec<SourceRef> {
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|s| seen.insert((s.kind.clone(), s.location.clone(), s.section.clone(), s.page)));
    v
}
