//! `jarvis ask "…" [--session ID] [--model SPEC] [--profile ID] [--json]`: one chat turn
//! from the terminal through the same `run_turn` the web app uses. The
//! answer streams to stdout, tool lines and status go to stderr, and the
//! session is saved like any other (resume it with `--session`).
//!
//! The same code runs in this process (no owner) or inside a running
//! `jarvis serve` / `jarvis sync` (see `delegate`): output goes through a
//! [`Term`], so both ways print the same bytes. A stop (Ctrl-C, SIGTERM, or
//! the client hanging up) is the web app's stop: the turn is cancelled and
//! rolled back, leaving the session as it was. The question is written with
//! the answer, so even a SIGKILL leaves no question-only session. A
//! question that is a custom command line (`/summarize foo bar`) runs as
//! the command's expansion, as in the web composer (the turn expands it).
//!
//! What the model can only propose — a removal (or another confirmation)
//! and a draft edit — is answered where that is possible and said honestly
//! where it is not: a confirmation is asked `[y/N]` at the terminal; without
//! one (or with `--json`) it stays pending in a running `serve`, which shows
//! it in the web app, and is otherwise not carried out.

use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::app::App;
use crate::cancel::Cancel;
use crate::chat::research::ReportDelivery;
use crate::chat::{ChatAgent, ChatError, ChatEvent, Reply, SharedSession, TurnContext, TurnState};

use super::term::{Access, Term};

#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// The question.
    pub message: String,
    /// Continue this session (its id is printed after every answer).
    #[arg(long)]
    pub session: Option<String>,
    /// Model for this session, `provider[:model]` (new sessions: default `chat.provider`).
    #[arg(long)]
    pub model: Option<String>,
    /// Profile of a new session (`research`, `writing`, `librarian`, or a file in $JARVIS_HOME/profiles/).
    #[arg(long)]
    pub profile: Option<String>,
    /// Print the whole reply (text, citations, sources, tools, model, spend) as JSON instead of streaming text.
    #[arg(long)]
    pub json: bool,
}

/// What the turn proposed that needs the human, gathered from its events.
#[derive(Default)]
struct Proposed {
    confirms: Vec<(String, String)>,
    edits: Vec<Edit>,
    streamed: bool,
}

struct Edit {
    token: String,
    draft_id: String,
    filename: String,
    changes: usize,
}

use crate::lock::lock;

/// Run one turn. `web` is the web app's address when this runs inside a
/// `jarvis serve` (pending confirmations and suggested edits can be
/// answered there); `None` otherwise.
pub fn run(a: AskArgs, app: &Arc<App>, t: &dyn Term, web: Option<&str>) -> anyhow::Result<u8> {
    run_as(a, app, t, web, None)
}

/// [`run`], or — with `research` — a research report (`jarvis research`):
/// the same session, stop and output rules, the plan and the sub-agents'
/// progress on stderr, the report on stdout.
pub(super) fn run_as(
    a: AskArgs,
    app: &Arc<App>,
    t: &dyn Term,
    web: Option<&str>,
    research: Option<ReportDelivery>,
) -> anyhow::Result<u8> {
    // The model loads for throughput (the App's default), not for a quick
    // start as a one-shot `kb search` does: a turn may search several times,
    // its LLM call takes seconds anyway, and the session is indexed after
    // the turn, which embeds every new chunk of the conversation.
    let agent = app.chat()?;
    let session: SharedSession = match &a.session {
        Some(_) if a.profile.is_some() => anyhow::bail!(
            "a session's profile is chosen when it starts — drop --session to start a new one with --profile (the assistant can still switch an existing session's profile)"
        ),
        Some(id) => agent.resume(id)?.0,
        None => Arc::new(Mutex::new(agent.new_session_as(
            a.model.as_deref(),
            None,
            a.profile.as_deref(),
        )?)),
    };
    if let (Some(spec), Some(_)) = (&a.model, &a.session) {
        agent.switch_model(&session, spec)?;
    }
    let id = lock(&session).id.clone();
    let json = a.json;
    let proposed = Mutex::new(Proposed::default());
    let events = |e: ChatEvent| match e {
        ChatEvent::Status { state } => {
            if state == TurnState::Compacting {
                t.err("… compacting the conversation\n");
            }
        }
        ChatEvent::Text { text } if !json => {
            // A closed stdout is not worth stopping the turn for.
            let _ = t.out(&text);
            lock(&proposed).streamed = true;
        }
        ChatEvent::Text { .. } => {}
        // Reasoning is the web app's folded block; a terminal shows the
        // answer only.
        ChatEvent::Thinking { .. } => {}
        ChatEvent::Plan { text } => t.err(&format!("plan:\n{text}\n")),
        ChatEvent::ProfileSwitched { name, .. } => t.err(&format!("→ profile: {name}\n")),
        ChatEvent::ToolStart { name, summary, .. } => t.err(&format!("→ {name}({summary})\n")),
        ChatEvent::ToolFinish {
            name,
            duration_ms,
            result_chars,
            is_error,
            ..
        } => t.err(&format!(
            "  {name} {} in {duration_ms} ms, {result_chars} chars\n",
            if is_error { "failed" } else { "done" }
        )),
        // Answered after the reply, when the turn is saved and the
        // confirmation registered.
        ChatEvent::Confirm { token, description, .. } => lock(&proposed).confirms.push((token, description)),
        ChatEvent::EditProposal {
            token,
            draft_id,
            filename,
            hunks,
            ..
        } => lock(&proposed).edits.push(Edit {
            token,
            draft_id,
            filename,
            changes: hunks.len(),
        }),
        ChatEvent::Reply(r) => {
            if !json && !lock(&proposed).streamed {
                let _ = t.out(&r.text);
            }
            for n in &r.notices {
                t.err(&format!("note: {n}\n"));
            }
        }
        ChatEvent::Stopped => t.err("stopped — the question was not saved and the session is as it was\n"),
        ChatEvent::Error { .. } => {}
        // The terminal has no queue to send from.
        ChatEvent::Steered { .. } => {}
        ChatEvent::Research(r) => super::research_cmd::progress(t, &r),
    };
    let reply = run_stoppable(&agent, &session, &id, &a.message, t.cancel(), research, &events)?;
    let Some(reply) = reply else {
        return Ok(130);
    };
    let proposed = std::mem::take(&mut *lock(&proposed));
    if !json {
        t.out("\n")?;
        if reply.evidence.replaced && proposed.streamed {
            // What streamed was the model's; the saved answer is this.
            t.out(&format!("\n{}\n", reply.text))?;
        }
        print_citations(t, &reply);
        for s in &reply.sources {
            let mut line = format!("  [{}] {}", s.kind, s.location);
            if !s.section.is_empty() {
                line.push_str(&format!(" § {}", s.section));
            }
            if let Some(p) = s.page {
                line.push_str(&format!(" p.{p}"));
            }
            t.err(&format!("{line}\n"));
        }
    }
    let title = lock(&session).title.clone();
    let edits = report_edits(app, t, &proposed.edits, web, json);
    let (confirmations, stopped) = answer_confirmations(&agent, t, &proposed.confirms, web, json, &id, &title);
    if json {
        let mut v = serde_json::to_value(&reply)?;
        v["confirmations"] = json!(confirmations);
        v["edit_proposals"] = json!(edits);
        t.out(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
    } else {
        t.err(&format!("session {} · {}\n", reply.session_id, reply.requested_model));
    }
    if *t.access() == Access::Direct {
        // The answer is out; the exchange becomes searchable history before
        // this process exits (an owner does this in the background).
        agent.wait_for_history();
    }
    Ok(if stopped {
        130
    } else if reply.error || reply.privacy_stop {
        2
    } else {
        0
    })
}

/// The answer's citations, what was removed, and the "not from your
/// library" label, on stderr beside the sources.
fn print_citations(t: &dyn Term, reply: &Reply) {
    for c in &reply.citations {
        let mut line = format!("  [{}] → {}", c.n, c.key);
        if !c.section.is_empty() {
            line.push_str(&format!(" § {}", c.section));
        }
        if let Some(p) = c.page {
            line.push_str(&format!(" p.{p}"));
        }
        t.err(&format!("{line}\n"));
    }
    match reply.unsupported_citations {
        0 => {}
        1 => t.err("  (1 citation named no passage of this answer and was removed)\n"),
        n => t.err(&format!(
            "  ({n} citations named no passage of this answer and were removed)\n"
        )),
    }
    if reply.not_from_library {
        t.err("  not from your library: this answer cites nothing the search found\n");
    } else if reply.uncited_paragraphs > 0 {
        t.err(&format!(
            "  partly not from your library: {} paragraph{} of this answer cite{} nothing\n",
            reply.uncited_paragraphs,
            if reply.uncited_paragraphs == 1 { "" } else { "s" },
            if reply.uncited_paragraphs == 1 { "s" } else { "" }
        ));
    }
}

/// `run_turn` with the terminal's stop switch wired to the agent's stop, as
/// the web app's stop button is: the turn is cancelled and rolled back.
fn run_stoppable(
    agent: &Arc<ChatAgent>,
    session: &SharedSession,
    id: &str,
    message: &str,
    stop: &Cancel,
    research: Option<ReportDelivery>,
    events: &(dyn Fn(ChatEvent) + Send + Sync),
) -> Result<Option<Reply>, ChatError> {
    let turn = Cancel::new();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    // The hook only signals: the stop itself takes the session lock and
    // writes a file, which must not run on the signal (or socket) thread.
    let hook = stop.on_cancel(move || {
        let _ = tx.send(());
    });
    let stopper = {
        let (agent, id, turn) = (Arc::clone(agent), id.to_string(), turn.clone());
        std::thread::Builder::new().name("ask-stop".into()).spawn(move || {
            if rx.recv().is_ok() {
                match agent.stop(&id) {
                    Ok(_) | Err(ChatError::NotRunning(_)) => {}
                    Err(e) => tracing::error!(session = %id, error = %e, "could not roll the stopped turn back"),
                }
                // Also when the turn was not registered yet: it then stops
                // before it saves anything.
                turn.cancel();
            }
        })
    };
    let context = TurnContext {
        question_with_answer: true,
        research,
        by: Some(crate::kb::Actor::Cli),
        ..TurnContext::default()
    };
    let out = agent.run_turn_in(session, message, &context, events, &turn);
    drop(hook);
    match stopper {
        Ok(h) => {
            let _ = h.join();
        }
        Err(e) => tracing::warn!(error = %e, "no stop watcher for this turn; Ctrl-C ends the process instead"),
    }
    out
}

/// Say where each suggested edit can be reviewed — only where that is
/// true. Outside a `serve` nobody can review them, so they are dropped.
fn report_edits(app: &App, t: &dyn Term, edits: &[Edit], web: Option<&str>, json: bool) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in edits {
        let what = format!(
            "{} change{} proposed to {} in draft {}",
            e.changes,
            if e.changes == 1 { "" } else { "s" },
            e.filename,
            e.draft_id
        );
        match web {
            Some(url) => {
                if !json {
                    t.err(&format!(
                        "{what} — nothing is written until you review them in the web app's editor at {url}\n"
                    ));
                }
                out.push(
                    json!({"draft_id": e.draft_id, "filename": e.filename, "changes": e.changes, "review_in": url}),
                );
            }
            None => {
                if let Ok(d) = app.drafts() {
                    d.proposals.discard(&e.token);
                }
                if !json {
                    t.err(&format!(
                        "{what} — not applied: suggested edits are reviewed in the web app's editor; ask there (`jarvis serve`) to review them\n"
                    ));
                }
                out.push(
                    json!({"draft_id": e.draft_id, "filename": e.filename, "changes": e.changes, "review_in": null}),
                );
            }
        }
    }
    out
}

/// Ask each confirmation `[y/N]` at the terminal, or leave it pending for
/// the web app, or report it not carried out. Returns the JSON view and
/// whether a stop ended the questions.
fn answer_confirmations(
    agent: &ChatAgent,
    t: &dyn Term,
    confirms: &[(String, String)],
    web: Option<&str>,
    json: bool,
    session_id: &str,
    title: &str,
) -> (Vec<serde_json::Value>, bool) {
    let mut out = Vec::new();
    let mut stopped = false;
    let interactive = !json && t.stdin_is_terminal();
    for (token, description) in confirms {
        if interactive && !stopped && !t.cancel().is_cancelled() {
            t.err(&format!("\n{description}\n[y/N] "));
            let line = t.read_line();
            if line.is_none() && t.cancel().is_cancelled() {
                stopped = true;
            } else {
                let yes = line.is_some_and(|l| matches!(l.trim().to_lowercase().as_str(), "y" | "yes"));
                let status = if yes { "confirmed" } else { "declined" };
                match agent.confirm_action(token, yes) {
                    Ok(message) => {
                        t.err(&format!("{message}\n"));
                        out.push(json!({"description": description, "status": status, "message": message}));
                    }
                    Err(e) => {
                        t.err(&format!("error: {e}\n"));
                        out.push(json!({"description": description, "status": "failed", "message": e.to_string()}));
                    }
                }
                continue;
            }
        }
        match web {
            Some(url) => {
                if !json {
                    t.err(&format!(
                        "\n{description}\npending: answer it in the web app at {url} (session \"{title}\"); nothing happens until you do\n"
                    ));
                }
                out.push(json!({"description": description, "status": "pending", "answer_in": url}));
            }
            None => {
                if !json {
                    t.err(&format!(
                        "\n{description}\nnot done: this needs your answer — ask again at a terminal (without --json) or in the web app (`jarvis serve`)\n"
                    ));
                }
                out.push(json!({"description": description, "status": "pending", "answer_in": null}));
            }
        }
    }
    if web.is_none() {
        // Nobody can answer them any more: an owner must not keep them.
        agent.clear_pending_for(session_id);
    }
    (out, stopped)
}
