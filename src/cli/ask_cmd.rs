//! `jarvis ask "…" [--session ID] [--model SPEC] [--json]`: one chat turn
//! from the terminal through the same `run_turn` the web app uses. The
//! answer streams to stdout, tool lines and status go to stderr, and the
//! session is saved like any other (resume it with `--session`).

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;

use crate::cancel::Cancel;
use crate::chat::{ChatEvent, TurnState};
use crate::config::Config;

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
    /// Print the whole reply (text, sources, tools, model, spend) as JSON instead of streaming text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: AskArgs, config: &Config) -> anyhow::Result<ExitCode> {
    // The model loads for throughput (the App's default), not for a quick
    // start as a one-shot `kb search` does: a turn may search several times,
    // its LLM call takes seconds anyway, and the session is indexed after
    // the turn, which embeds every new chunk of the conversation.
    let app = crate::app::App::from_config(config.clone(), crate::config::process_env);
    let agent = app.chat()?;
    let session = match &a.session {
        Some(id) => agent.resume(id)?.0,
        None => Arc::new(Mutex::new(agent.new_session(a.model.as_deref(), None)?)),
    };
    if let (Some(spec), Some(_)) = (&a.model, &a.session) {
        agent.switch_model(&session, spec)?;
    }
    let json = a.json;
    let streamed = Mutex::new(false);
    let events = move |e: ChatEvent| match e {
        ChatEvent::Status { state } => {
            if state == TurnState::Compacting {
                eprintln!("… compacting the conversation");
            }
        }
        ChatEvent::Text { text } if !json => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            *streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        }
        ChatEvent::Text { .. } => {}
        ChatEvent::ToolStart { name, summary, .. } => eprintln!("→ {name}({summary})"),
        ChatEvent::ToolFinish {
            name,
            duration_ms,
            result_chars,
            is_error,
            ..
        } => eprintln!(
            "  {name} {} in {duration_ms} ms, {result_chars} chars",
            if is_error { "failed" } else { "done" }
        ),
        ChatEvent::Confirm { description, token } => {
            eprintln!("confirmation needed (answer it in the web app, token {token}):\n{description}")
        }
        ChatEvent::Reply(r) => {
            if !json && !*streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
                let _ = super::emit(&r.text);
            }
        }
        ChatEvent::EditProposal {
            draft_id,
            filename,
            hunks,
            message,
            ..
        } => eprintln!(
            "{message}\n  {} change{} proposed to {filename} in draft {draft_id} — review them in the web app's editor",
            hunks.len(),
            if hunks.len() == 1 { "" } else { "s" }
        ),
        ChatEvent::Stopped => eprintln!("stopped"),
        ChatEvent::Error { .. } => {}
    };
    let reply = agent
        .run_turn(&session, &a.message, &events, &Cancel::new())
        .context("the turn failed")?;
    let Some(reply) = reply else {
        return Ok(ExitCode::from(130));
    };
    if json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&reply)?))?;
    } else {
        super::emit("\n")?;
        for s in &reply.sources {
            let mut line = format!("  [{}] {}", s.kind, s.location);
            if !s.section.is_empty() {
                line.push_str(&format!(" § {}", s.section));
            }
            if let Some(p) = s.page {
                line.push_str(&format!(" p.{p}"));
            }
            eprintln!("{line}");
        }
        eprintln!("session {} · {}", reply.session_id, reply.requested_model);
    }
    // The answer is out; the exchange becomes searchable history before
    // this process exits (the web app does this in the background).
    agent.wait_for_history();
    Ok(if reply.error || reply.privacy_stop {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
