//! Research reports: one question split into sub-questions, each answered
//! by a sub-agent searching the library in parallel, and one report
//! written from what they found — with citations — into a new draft the
//! human reviews section by section.
//!
//! Owns: the research run as a kind of turn (it is registered, stopped and
//! rolled back exactly like one, through the same registry and commit
//! lock), its limits ([`ResearchSettings`]), its progress events
//! ([`ResearchEvent`]), the planner ([`plan`]), the sub-agents
//! (`subagent`) and the report (`report`).
//! Must not: give a sub-agent any tool that writes or asks the human (they
//! get the read-only library tools only), let a stop leave a draft or a
//! running sub-agent behind, or let a private passage reach a cloud model
//! (every sub-agent searches with the session's cloud flag, so a cloud
//! research sees the public pool only, exactly as the chat does).
//!
//! # The run
//!
//! 1. The question is saved (as a chat turn's is) and the planner — one
//!    model request with no tools — splits it into at most
//!    `sub_questions` sub-questions (`plan`).
//! 2. Sub-agents answer them, at most `concurrency` at once, each a tool
//!    loop of at most `rounds` rounds over the read-only library tools with
//!    its own numbered passages. A sub-agent that a privacy stop ends
//!    (cloud, only private matches) contributes nothing; the others go on.
//! 3. The passages the sub-agents cited are numbered once for the report,
//!    their answers renumbered to match, and one request writes the report
//!    from them; its markers are checked like a chat answer's.
//! 4. Under the session's commit lock, after a last look at the stop
//!    switch: a new draft holding the report (a suggested change, one hunk
//!    per section — or, with nobody to review it, the file itself), and
//!    the reply saved in the session. A stop before that point leaves
//!    nothing; a stop after it finds the reply standing.
//!
//! Every sub-agent thread is joined before the run returns, stopped or
//! not: once the turn is over no sub-agent runs.

pub mod plan;
mod report;
mod subagent;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::cancel::Cancel;
use crate::llm::transcript::Message;
use crate::llm::CallError;

use super::agent::{lock, ChatAgent};
use super::chatlog::TurnRecord;
use super::cite::{self, Evidence};
use super::runaway::Deadline;
use super::session::{DisplayEntry, SourceRef, ToolLogEntry};
use super::{ChatError, ChatEvent, EventSink, Reply, SharedSession, TurnContext, TurnState};

pub use report::REPORT_FILE;

/// Default number of sub-questions. A question worth a report has three to
/// five facets; four covers them without thinning the report into many
/// one-line sections, and keeps a local model's run to a few minutes.
pub const DEFAULT_SUB_QUESTIONS: usize = 4;
/// Default sub-agents at once. A local server answers one request at a
/// time unless told otherwise; two keep it busy (one sub-agent searches
/// while the other waits on the model) without queueing work behind it.
/// A cloud model can take more: it is a setting.
pub const DEFAULT_CONCURRENCY: usize = 2;
/// Default tool rounds per sub-agent: search, read the best hit, search
/// again with what it learned, answer. A sub-agent that needs more is
/// looking for something the library does not have.
pub const DEFAULT_ROUNDS: usize = 4;
/// Default token budget of a whole run (input and output, as the services
/// report them): four sub-agents of four rounds over ~8k-token contexts,
/// the plan and the report fit with room to spare.
pub const DEFAULT_MAX_TOKENS: u64 = 250_000;
/// Default spend of a whole run on a priced model, in US cents.
pub const DEFAULT_MAX_COST_CENTS: u64 = 50;
/// Default wall-clock budget of a whole run: every sub-agent, the plan and
/// the report on a slow local model.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Knobs from `[research]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResearchSettings {
    /// Most sub-questions the planner may return.
    pub sub_questions: usize,
    /// Sub-agents running at once.
    pub concurrency: usize,
    /// Tool rounds one sub-agent may take.
    pub rounds: usize,
    /// Tokens (in + out) the run may use; past it no further sub-agent
    /// starts and the report is written from what was found.
    pub max_tokens: u64,
    /// Spend (US cents) the run may reach on a priced model; as `max_tokens`.
    pub max_cost_cents: u64,
    /// Wall-clock budget of the whole run.
    pub timeout: Duration,
}

impl Default for ResearchSettings {
    fn default() -> Self {
        ResearchSettings {
            sub_questions: DEFAULT_SUB_QUESTIONS,
            concurrency: DEFAULT_CONCURRENCY,
            rounds: DEFAULT_ROUNDS,
            max_tokens: DEFAULT_MAX_TOKENS,
            max_cost_cents: DEFAULT_MAX_COST_CENTS,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Where the report goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportDelivery {
    /// A new draft whose file is empty, with the report as a suggested
    /// change the human reviews section by section (a process that stays
    /// up holds the suggestion: the web app, a `serve`).
    #[default]
    Suggest,
    /// A new draft holding the report as its file (nobody would be there
    /// to review a suggestion: a terminal with no `serve` running).
    Write,
}

/// One sub-agent's state, as progress shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AgentState {
    /// Waiting for a free slot.
    Queued,
    Running,
    /// Answered, citing `cited` of the `passages` it found.
    Done {
        passages: usize,
        cited: usize,
    },
    /// Its searches found nothing it could cite.
    Empty,
    /// Only private notes match and the model is a cloud one.
    Private,
    /// Not run, or cut short: the run's token or spend budget was reached.
    Budget,
    /// The model failed or ran out of rounds; the message says which.
    Failed {
        message: String,
    },
}

/// Progress of a research run (inside a turn's events).
#[derive(Debug, Clone, PartialEq)]
pub enum ResearchEvent {
    /// The sub-questions, in order; agents are numbered by index into it.
    Plan {
        questions: Vec<String>,
    },
    Agent {
        index: usize,
        state: AgentState,
    },
    /// A sub-agent called a tool.
    Tool {
        index: usize,
        name: String,
        summary: String,
    },
    /// The report is being written (its text streams as `text` events).
    Writing,
    /// The report's draft exists. `suggested`: it waits as a suggested
    /// change (an `edit_proposal` event follows).
    Report {
        draft_id: String,
        filename: String,
        title: String,
        suggested: bool,
    },
}

/// The run's shared tallies: tokens and spend so far, for the budget.
#[derive(Default)]
pub(crate) struct Budget {
    tokens: AtomicU64,
    /// Spend in millionths of a dollar.
    micro_usd: AtomicU64,
    usage: Mutex<crate::llm::Usage>,
}

impl Budget {
    fn add_tokens(&self, n: u64) {
        self.tokens.fetch_add(n, Ordering::Relaxed);
    }

    /// Take the provider's reported spend into the tally (and the session's).
    fn add_usage(&self, usage: Option<crate::llm::Usage>) {
        let Some(u) = usage else { return };
        let usd: f64 = u.values().map(|c| c.usd).sum();
        self.micro_usd
            .fetch_add((usd.max(0.0) * 1_000_000.0) as u64, Ordering::Relaxed);
        let mut all = lock(&self.usage);
        for (model, c) in u {
            let e = all.entry(model).or_default();
            e.usd += c.usd;
            e.requests += c.requests;
        }
    }

    fn spent(&self, s: &ResearchSettings) -> bool {
        self.tokens.load(Ordering::Relaxed) >= s.max_tokens
            || self.micro_usd.load(Ordering::Relaxed) >= s.max_cost_cents.saturating_mul(10_000)
    }

    fn take_usage(&self) -> Option<crate::llm::Usage> {
        let u = std::mem::take(&mut *lock(&self.usage));
        (!u.is_empty()).then_some(u)
    }
}

/// What one sub-agent brought back.
#[derive(Debug, Clone, Default)]
pub(crate) struct Finding {
    pub question: String,
    /// Its answer, markers checked against its own passages.
    pub text: String,
    /// Every passage its tools returned, by its own numbers.
    pub passages: cite::Passages,
    /// The numbers its answer cites.
    pub cited: Vec<u32>,
    pub sources: Vec<SourceRef>,
    pub tools: Vec<ToolLogEntry>,
    pub searched: Vec<String>,
    pub saw_private: bool,
    pub rounds: usize,
}

impl ChatAgent {
    /// The research run of one registered turn (see the module docs). The
    /// caller ([`ChatAgent::run_registered`]) deregisters, logs and maps a
    /// stop, as for a chat turn.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn research_turn(
        &self,
        session: &SharedSession,
        question: &str,
        context: &TurnContext,
        delivery: ReportDelivery,
        events: EventSink<'_>,
        cancel: &Cancel,
        record: &mut TurnRecord,
    ) -> Result<Option<Reply>, ChatError> {
        let question = question.trim();
        if question.is_empty() {
            return Err(ChatError::EmptyMessage);
        }
        let settings = self.settings();
        let rs = settings.research.clone();
        let (id, spec) = {
            let s = lock(session);
            self.check_resume(&s)?;
            (s.id.clone(), s.model_spec())
        };
        record.model = spec.clone();
        self.clear_pending_for(&id);
        let provider = self.deps.providers.provider(&spec)?;
        let cloud = self.deps.providers.is_cloud(&spec);

        // One switch for the whole run: the human's stop (the parent) and
        // the time budget both close every request in flight.
        let run_cancel = cancel.child();
        let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let deadline = {
            let (c, t) = (run_cancel.clone(), timed_out.clone());
            Deadline::start(rs.timeout, move || {
                t.store(true, Ordering::SeqCst);
                c.cancel();
            })
        };

        let (base_len, session_private, created) = {
            let mut s = lock(session);
            cancel.check().map_err(|_| ChatError::Cancelled)?;
            let created = !self.deps.sessions.exists(&s.id)?;
            s.begin_turn(question);
            if !context.question_with_answer {
                self.deps.sessions.save(&s)?;
            }
            (s.messages.len(), s.private, created)
        };
        events(ChatEvent::Status {
            state: TurnState::Thinking,
        });

        let budget = Budget::default();
        let questions = self.plan_questions(provider.as_ref(), question, &rs, &budget, &run_cancel);
        let questions = match questions {
            Ok(q) => q,
            Err(CallError::Cancelled(_)) if cancel.is_cancelled() => return Err(ChatError::Cancelled),
            Err(e) => {
                // The plan is one short request; without it the question
                // itself is the one sub-question.
                tracing::warn!(session = %id, error = %e, "research plan failed; researching the question as asked");
                vec![question.to_string()]
            }
        };
        events(ChatEvent::Research(ResearchEvent::Plan {
            questions: questions.clone(),
        }));

        let findings = self.run_subagents(
            provider.as_ref(),
            &SubRun {
                id: &id,
                question,
                cloud,
                session_private,
                settings: &settings,
                budget: &budget,
            },
            &questions,
            events,
            &run_cancel,
        );
        if cancel.is_cancelled() {
            return Err(ChatError::Cancelled);
        }
        record.rounds = findings.iter().map(|f| f.rounds).sum();

        let gathered = report::gather(&findings);
        let time_out = || {
            Outcome::failed(
                format!(
                    "⚠️ The research ran past its time budget ({} s) and was ended before the report was written. Ask a narrower question, or raise research.timeout_secs.",
                    rs.timeout.as_secs()
                ),
                &findings,
            )
        };
        let outcome = if timed_out.load(Ordering::SeqCst) {
            time_out()
        } else if gathered.passages.is_empty() {
            Outcome::nothing(&findings)
        } else {
            events(ChatEvent::Research(ResearchEvent::Writing));
            let written = report::synthesise(
                provider.as_ref(),
                question,
                &gathered,
                settings.max_output_tokens,
                &budget,
                events,
                &run_cancel,
            );
            match written {
                Ok(text) => Outcome::report(question, &questions, &gathered, &text, &findings, delivery, &spec),
                Err(CallError::Cancelled(_)) if cancel.is_cancelled() => return Err(ChatError::Cancelled),
                Err(CallError::Cancelled(_)) => time_out(),
                Err(CallError::Llm(e)) => {
                    tracing::error!(session = %id, error = %e, "research report failed");
                    let text = format!(
                        "⚠️ {}",
                        crate::llm::redact_secrets(&e.to_string(), &self.deps.providers.secrets())
                    );
                    Outcome::failed(text, &findings)
                }
            }
        };
        drop(deadline);
        let started = Started {
            base_len,
            created,
            by: context.by.as_ref(),
        };
        self.commit_research(session, outcome, &budget, record, events, cancel, started)
    }

    /// The planner's sub-questions (at least one).
    fn plan_questions(
        &self,
        provider: &dyn crate::llm::ChatProvider,
        question: &str,
        rs: &ResearchSettings,
        budget: &Budget,
        cancel: &Cancel,
    ) -> Result<Vec<String>, CallError> {
        let messages = [Message::user(plan::prompt(question, rs.sub_questions))];
        let mut tokens = 0u64;
        let text = provider.complete_streaming(&messages, 1024, None, Some(cancel), &mut |e| {
            if let crate::llm::StreamEvent::Usage(u) = e {
                tokens += u.input_tokens.unwrap_or(0) + u.output_tokens.unwrap_or(0);
            }
        })?;
        budget.add_tokens(tokens);
        budget.add_usage(provider.pop_usage());
        let mut q = plan::parse_plan(&text, rs.sub_questions);
        if q.is_empty() {
            q.push(question.to_string());
        }
        Ok(q)
    }

    /// Run the sub-agents, at most `concurrency` at once, and join them
    /// all. A slot whose run was stopped or whose budget is spent starts
    /// nothing more.
    fn run_subagents(
        &self,
        provider: &dyn crate::llm::ChatProvider,
        run: &SubRun<'_>,
        questions: &[String],
        events: EventSink<'_>,
        cancel: &Cancel,
    ) -> Vec<Finding> {
        let rs = &run.settings.research;
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Finding>>> = Mutex::new(vec![None; questions.len()]);
        for index in 0..questions.len() {
            events(ChatEvent::Research(ResearchEvent::Agent {
                index,
                state: AgentState::Queued,
            }));
        }
        let workers = rs.concurrency.clamp(1, questions.len().max(1));
        std::thread::scope(|scope| {
            for w in 0..workers {
                let (next, results) = (&next, &results);
                let spawned =
                    std::thread::Builder::new()
                        .name(format!("research-{w}"))
                        .spawn_scoped(scope, move || loop {
                            let index = next.fetch_add(1, Ordering::SeqCst);
                            let Some(q) = questions.get(index) else { break };
                            if cancel.is_cancelled() {
                                break;
                            }
                            if run.budget.spent(rs) {
                                events(ChatEvent::Research(ResearchEvent::Agent {
                                    index,
                                    state: AgentState::Budget,
                                }));
                                continue;
                            }
                            let f = self.subagent(provider, run, index, q, events, cancel);
                            lock(results)[index] = f;
                        });
                if let Err(e) = spawned {
                    // The slots that did start take the work.
                    tracing::error!(error = %e, "could not start a research sub-agent thread");
                }
            }
        });
        let got: Vec<Finding> = std::mem::take(&mut *lock(&results)).into_iter().flatten().collect();
        if got.is_empty() && next.load(Ordering::SeqCst) == 0 && !cancel.is_cancelled() {
            // Not one thread could start: run them here, one by one.
            return questions
                .iter()
                .enumerate()
                .filter_map(|(i, q)| self.subagent(provider, run, i, q, events, cancel))
                .collect();
        }
        got
    }
}

/// What every sub-agent of one run shares.
pub(crate) struct SubRun<'a> {
    pub id: &'a str,
    pub question: &'a str,
    pub cloud: bool,
    pub session_private: bool,
    pub settings: &'a super::ChatSettings,
    pub budget: &'a Budget,
}

/// What the run commits.
pub(crate) struct Outcome {
    /// The reply's text (the report's body with a line naming the draft,
    /// or a message).
    text: String,
    report: Option<report::Report>,
    citations: Vec<cite::Citation>,
    unsupported: usize,
    kept: usize,
    error: bool,
    /// The fixed "nothing found" message stands for a report.
    nothing: bool,
    sources: Vec<SourceRef>,
    tools: Vec<ToolLogEntry>,
    searched: Vec<String>,
    saw_private: bool,
    passages: Vec<cite::Citation>,
}

impl Outcome {
    fn base(findings: &[Finding]) -> Outcome {
        let mut sources: Vec<SourceRef> = Vec::new();
        for s in findings.iter().flat_map(|f| f.sources.iter()) {
            if !sources.contains(s) {
                sources.push(s.clone());
            }
        }
        Outcome {
            text: String::new(),
            report: None,
            citations: Vec::new(),
            unsupported: 0,
            kept: 0,
            error: false,
            nothing: false,
            sources,
            tools: findings.iter().flat_map(|f| f.tools.iter().cloned()).collect(),
            searched: findings.iter().flat_map(|f| f.searched.iter().cloned()).collect(),
            saw_private: findings.iter().any(|f| f.saw_private),
            passages: Vec::new(),
        }
    }

    fn failed(text: String, findings: &[Finding]) -> Outcome {
        Outcome {
            text,
            error: true,
            ..Outcome::base(findings)
        }
    }

    fn nothing(findings: &[Finding]) -> Outcome {
        let base = Outcome::base(findings);
        Outcome {
            text: report::nothing_found(&base.searched),
            nothing: true,
            ..base
        }
    }

    fn report(
        question: &str,
        questions: &[String],
        gathered: &report::Gathered,
        written: &str,
        findings: &[Finding],
        delivery: ReportDelivery,
        model: &str,
    ) -> Outcome {
        let checked = cite::check(written, &gathered.passages);
        let r = report::Report::build(question, questions, &checked, delivery, model);
        Outcome {
            text: checked.text.clone(),
            report: Some(r),
            citations: checked.citations,
            unsupported: checked.unsupported,
            kept: checked.kept,
            passages: gathered.passages.all().to_vec(),
            ..Outcome::base(findings)
        }
    }
}

/// What the commit needs from the turn's start: where this turn's
/// messages begin, whether it created the session, and who asked.
struct Started<'a> {
    base_len: usize,
    created: bool,
    by: Option<&'a crate::kb::Actor>,
}

impl ChatAgent {
    /// The commit: under the session lock, a stop that came first wins and
    /// nothing is written; otherwise the draft, then the reply.
    #[allow(clippy::too_many_arguments)]
    fn commit_research(
        &self,
        session: &SharedSession,
        mut outcome: Outcome,
        budget: &Budget,
        record: &mut TurnRecord,
        events: EventSink<'_>,
        cancel: &Cancel,
        started: Started<'_>,
    ) -> Result<Option<Reply>, ChatError> {
        let base_len = started.base_len;
        let usage = budget.take_usage();
        let mut s = lock(session);
        if let Some(u) = &usage {
            s.record_usage(u);
        }
        if cancel.is_cancelled() {
            return Err(ChatError::Cancelled);
        }
        let id = s.id.clone();
        let cloud = self.deps.providers.is_cloud(&s.model_spec());
        let private = s.private || (outcome.saw_private && !cloud);
        let mut draft_note = None;
        if let Some(r) = outcome.report.take() {
            match self.write_report(&r, private, &id) {
                Ok(w) => {
                    events(ChatEvent::Research(ResearchEvent::Report {
                        draft_id: w.draft_id.clone(),
                        filename: REPORT_FILE.into(),
                        title: report::draft_title(&r.title),
                        suggested: w.proposal.is_some(),
                    }));
                    if let Some(p) = &w.proposal {
                        events(ChatEvent::EditProposal {
                            token: p.token.clone(),
                            draft_id: p.draft_id.clone(),
                            filename: p.filename.clone(),
                            base_hash: p.base_hash.clone(),
                            hunks: p.hunks.clone(),
                            message: crate::drafts::proposals::INVARIANT_LINE.into(),
                        });
                    }
                    draft_note = Some(report::draft_line(
                        &report::draft_title(&r.title),
                        w.proposal.is_some(),
                        r.sections,
                    ));
                }
                Err(e) => {
                    tracing::error!(session = %id, error = %e, "the research report could not be written to a draft");
                    outcome.error = true;
                    draft_note = Some(format!(
                        "⚠️ The report could not be written to a draft ({e}); it is kept here in the chat."
                    ));
                }
            }
        }
        let text = match &draft_note {
            Some(line) => format!("{line}\n\n{}", outcome.text),
            None => outcome.text.clone(),
        };
        record.outcome = if outcome.error {
            "research_failed".into()
        } else if outcome.nothing {
            "nothing_found".into()
        } else {
            "research".into()
        };
        s.messages.truncate(base_len);
        s.messages.push(Message::assistant(text.clone()));
        let turned_private = outcome.saw_private && !cloud && !s.private;
        if outcome.saw_private && !cloud {
            s.mark_private();
        }
        let not_from_library = !outcome.error && !outcome.nothing && outcome.citations.is_empty();
        s.display.push(DisplayEntry {
            role: crate::llm::Role::Assistant,
            text: text.clone(),
            tools: outcome.tools.clone(),
            sources: outcome.sources.clone(),
            error: outcome.error,
            at: crate::kb::stage::now_iso(),
            citations: outcome.citations.clone(),
            unsupported_citations: outcome.unsupported,
            not_from_library,
            // A report's "Open questions" cite nothing by design.
            uncited_paragraphs: 0,
            thinking: String::new(),
            plan: String::new(),
            steered: false,
            notices: Vec::new(),
            // A report is written from the sub-agents' passages; the
            // memory summary is not in any of its requests.
            memory: Vec::new(),
            remembered: Vec::new(),
        });
        s.updated = crate::kb::stage::now_iso();
        self.deps.sessions.save(&s)?;
        // The history's events, as a chat turn records them.
        if started.created {
            super::session_events::record_created(&self.deps.tools.kb, &s, started.by);
        }
        if turned_private {
            super::session_events::record_turned_private(&self.deps.tools.kb, &id, &s.title);
        }
        let reply = Reply {
            session_id: id.clone(),
            text,
            sources: outcome.sources,
            tools: outcome.tools,
            private: s.private,
            requested_model: s.model_spec(),
            served_model: s.served_model.clone(),
            cost: s.cost.clone(),
            turn_cost_usd: usage.map(|u| u.values().map(|c| c.usd).sum()),
            privacy_stop: false,
            error: outcome.error,
            title: s.title.clone(),
            citations: outcome.citations,
            unsupported_citations: outcome.unsupported,
            not_from_library,
            uncited_paragraphs: 0,
            notices: Vec::new(),
            memory: Vec::new(),
            remembered: Vec::new(),
            evidence: Evidence {
                passages: outcome.passages,
                kept_markers: outcome.kept,
                rounds: record.rounds,
                searched: outcome.searched,
                replaced: outcome.nothing,
            },
        };
        drop(s);
        if turned_private {
            if let Err(e) = super::history::mark_private(&self.deps.tools.kb, &id) {
                tracing::error!(session = %id, error = %e, "could not mark the session's indexed exchanges private at once; the history pass will");
            }
        }
        events(ChatEvent::Reply(reply.clone()));
        Ok(Some(reply))
    }
}
