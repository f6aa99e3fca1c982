//! `jarvis kb …`, `jarvis ask`, `jarvis undo`, `jarvis log`, `jarvis
//! config set` and `jarvis run-digest` through a running owner, both sides.
//!
//! Client: [`run_kb`] goes to the owner when one is alive (stale sockets
//! are removed, see `app::owner::client`), else runs the command in this
//! process; a direct run that finds the store owned by a `serve`/`sync`
//! that started meanwhile goes through its socket after all. The client
//! prints what the owner sends, mirrors its progress bar, answers its
//! questions from stdin, and turns Ctrl-C into a `cancel` frame.
//! Owner: [`handler`] parses the forwarded argv and runs the same `kb`
//! (or `ask`) code against the owner's `App`, writing through a [`Remote`]
//! term.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, OnceLock};

use clap::Parser;

use crate::app::owner::client::{self, Connection};
use crate::app::owner::protocol::{write_frame, BarEvent, ClientFrame, OwnerFrame};
use crate::app::owner::server::Handler;
use crate::app::{App, AppError, SessionProfile};
use crate::cancel::Cancel;
use crate::chat::research::ReportDelivery;
use crate::config::Config;

use super::kb::KbCmd;
use super::sync_cmd::{SyncArgs, SyncCmd};
use super::term::{local_bar, Direct, Remote, Term};
use super::{Cli, Command};
use crate::app::jobs::JobsHandle;

/// Run one `kb` subcommand: via the owner if one runs, else directly.
pub fn run_kb(cmd: KbCmd, config: Config) -> anyhow::Result<u8> {
    let internal = matches!(cmd, KbCmd::Probe);
    let profile = cmd.embed_profile();
    here_or_owner(config, internal, profile, move |app, term| {
        super::kb::run(cmd, app, term)
    })
}

/// `jarvis ask`, the same way: the turn runs in the owner when one is alive
/// (its text streams back frame by frame), else here.
pub fn run_ask(args: super::ask_cmd::AskArgs, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::ask_cmd::run(args, app, term, None)
    })
}

/// `jarvis research`, the same way. Here, with nobody to review a
/// suggestion once the process ends, the report is the draft's file; in an
/// owner that runs the web app it waits there as a suggested change.
pub fn run_research(args: super::ask_cmd::AskArgs, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::ask_cmd::run_as(args, app, term, None, Some(ReportDelivery::Write))
    })
}

/// `jarvis undo` and `jarvis log`, the same way: the log is in the store
/// the owner holds.
pub fn run_history(cmd: super::history_cmd::HistoryCmd, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::history_cmd::run(cmd, app, term)
    })
}

/// `jarvis memory …`, the same way: the facts are in the store the owner
/// holds.
pub fn run_memory(cmd: super::memory_cmd::MemoryCmd, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::memory_cmd::run(cmd, app, term)
    })
}

/// `jarvis config set`, the same way: the edit is an event in the history
/// the owner's store holds (and the owner reads the new file at once).
pub fn run_config_set(key: String, value: String, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::config_cmd::set(app, &key, &value, term)
    })
}

/// `jarvis run-digest`, the same way: via the owner if one runs. A digest
/// adds papers (bulk embedding), so its model loads for throughput.
pub fn run_digest(args: super::digest_cmd::RunDigestArgs, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::digest_cmd::run_digest(args, app, term)
    })
}

/// `jarvis digest …`, the same way: an add needs the knowledge base the
/// owner holds; votes and the list are files the owner's runs read.
pub fn run_digest_cmd(cmd: super::digest_cmd::DigestCmd, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::digest_cmd::run(cmd, app, term)
    })
}

/// `jarvis sync run-job ID`, the same way: in the owner's schedule when
/// one runs (never beside its own run of the job), else here.
pub fn run_job(id: String, config: Config) -> anyhow::Result<u8> {
    here_or_owner(config, false, SessionProfile::Throughput, move |app, term| {
        super::sync_cmd::run_job(app, None, &id, term)
    })
}

/// Runs `run` through the owner if one is alive, else in this process with
/// the embedding model (if the command needs it) loaded for `profile`. An
/// owner ignores `profile`: it keeps its own throughput session.
fn here_or_owner(
    config: Config,
    internal: bool,
    profile: SessionProfile,
    run: impl FnOnce(&Arc<App>, &Direct) -> anyhow::Result<u8>,
) -> anyhow::Result<u8> {
    let home = config.home.clone();
    if !internal {
        if let Some(conn) = client::connect(&home)? {
            return delegate(conn);
        }
    }
    let app = App::from_config(config, crate::config::process_env);
    app.set_embed_profile(profile);
    app.set_lock_notice(Box::new(|h| {
        eprintln!("waiting for {h} to finish with the knowledge base…");
    }));
    // Ctrl-C stops this process's work: the command and the App alike.
    let cancel = app.shutdown().clone();
    let on_signal = cancel.clone();
    super::signals::install(move || on_signal.cancel())?;
    let term = Direct::new(cancel);
    match run(&app, &term) {
        Ok(code) => Ok(code),
        Err(e) if !internal && owned_by_owner(&e) => {
            // A serve/sync started between our socket check and our open.
            drop(app);
            match client::connect(&home)? {
                Some(conn) => delegate(conn),
                None => Ok(super::report_error(&e, &term)),
            }
        }
        Err(e) => Ok(super::report_error(&e, &term)),
    }
}

fn owned_by_owner(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<AppError>()
            .and_then(AppError::holder)
            .is_some_and(|h| crate::app::owner::is_owner_command(&h.command))
    })
}

/// The client loop: forward this command line, then print what comes back.
pub(super) fn delegate(mut conn: Connection) -> anyhow::Result<u8> {
    tracing::info!(pid = conn.pid, role = %conn.role, "kb command delegated to the owner");
    let stderr_tty = std::io::stderr().is_terminal();
    conn.send(&ClientFrame::Run {
        argv: std::env::args().skip(1).collect(),
        cwd: std::env::current_dir()?,
        stdin_tty: std::io::stdin().is_terminal(),
        stderr_tty,
        env: crate::config::env_overrides(&crate::config::process_env),
    })?;
    // Ctrl-C: ask the owner to stop the command; it answers with exit 130
    // once the work has stopped and cleaned up.
    let sender = conn.sender()?;
    let stopped = Cancel::new();
    let on_signal = stopped.clone();
    super::signals::install(move || {
        // Also ends a question waiting on stdin here, so one Ctrl-C is enough.
        on_signal.cancel();
        let _ = write_frame(&mut &sender, &ClientFrame::Cancel);
    })?;
    let mut bar: Option<indicatif::ProgressBar> = None;
    loop {
        let frame = conn.recv().map_err(|e| {
            anyhow::anyhow!(
                "lost the connection to jarvis {} (pid {}): {e} — see its log in $JARVIS_HOME/logs",
                conn.role,
                conn.pid
            )
        })?;
        match frame {
            Some(OwnerFrame::Out { text }) => super::emit(&text)?,
            Some(OwnerFrame::Err { text }) => {
                let mut e = std::io::stderr().lock();
                let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
            }
            Some(OwnerFrame::Bar { event }) => apply(&mut bar, event, stderr_tty),
            Some(OwnerFrame::Ask) => {
                let read = || super::term::read_stdin_line(&stopped);
                let text = match &bar {
                    Some(b) => b.suspend(read),
                    None => read(),
                };
                // After a Ctrl-C the owner has the cancel frame and ends the
                // question itself; it may already have hung up.
                if stopped.is_cancelled() {
                    continue;
                }
                conn.send(&ClientFrame::Line { text })?;
            }
            Some(OwnerFrame::Exit { code }) => return Ok(u8::try_from(code).unwrap_or(1)),
            Some(OwnerFrame::Hello { .. } | OwnerFrame::Status { .. }) => {}
            None => anyhow::bail!(
                "jarvis {} (pid {}) closed the connection before the command finished — see its log in $JARVIS_HOME/logs, then run the command again",
                conn.role,
                conn.pid
            ),
        }
    }
}

fn apply(bar: &mut Option<indicatif::ProgressBar>, event: BarEvent, stderr_tty: bool) {
    match event {
        BarEvent::New { template } => *bar = Some(local_bar(template.as_deref(), stderr_tty)),
        BarEvent::Length { n } => bar.iter().for_each(|b| b.set_length(n)),
        BarEvent::Position { n } => bar.iter().for_each(|b| b.set_position(n)),
        BarEvent::Message { text } => bar.iter().for_each(|b| b.set_message(text.clone())),
        BarEvent::Finish => {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
        }
    }
}

/// The web app's address, once `jarvis serve` listens (empty under `sync`).
pub type WebAddress = Arc<OnceLock<String>>;

/// What the owner runs for each delegated command: `jarvis kb …`, `jarvis
/// ask`, `jarvis run-digest`, and `jarvis sync run-job …` (in the owner's
/// schedule `jobs`, when it runs one). `web` is where a `serve` owner's web
/// app listens, for what `ask` leaves to be answered there.
pub fn handler(jobs: Option<Arc<JobsHandle>>, web: WebAddress) -> Handler {
    Arc::new(move |app, session| {
        let t = Remote::new(session);
        let argv = std::iter::once("jarvis".to_string()).chain(session.argv.iter().cloned());
        let code = match Cli::try_parse_from(argv) {
            Ok(Cli {
                command: Command::Kb(cmd),
                ..
            }) if !matches!(cmd, KbCmd::Probe) => match super::kb::run(cmd, app, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::Ask(args),
                ..
            }) => match super::ask_cmd::run(args, app, &t, web.get().map(String::as_str)) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::Research(args),
                ..
            }) => {
                let web = web.get().map(String::as_str);
                let delivery = match web {
                    Some(_) => ReportDelivery::Suggest,
                    None => ReportDelivery::Write,
                };
                match super::ask_cmd::run_as(args, app, &t, web, Some(delivery)) {
                    Ok(code) => code,
                    Err(e) => super::report_error(&e, &t),
                }
            }
            Ok(Cli {
                command: Command::Undo(args),
                ..
            }) => match super::history_cmd::run(super::history_cmd::HistoryCmd::Undo(args), app, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::Log(args),
                ..
            }) => match super::history_cmd::run(super::history_cmd::HistoryCmd::Log(args), app, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::Memory(cmd),
                ..
            }) => match super::memory_cmd::run(cmd, app, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::Config(super::config_cmd::ConfigCmd::Set { key, value }),
                ..
            }) => match super::config_cmd::set(app, &key, &value, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::RunDigest(args),
                ..
            }) => match super::digest_cmd::run_digest(args, app, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command: Command::Digest(cmd),
                ..
            }) => match super::digest_cmd::run(cmd, app, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(Cli {
                command:
                    Command::Sync(SyncArgs {
                        cmd: Some(SyncCmd::RunJob { id }),
                        ..
                    }),
                ..
            }) => match super::sync_cmd::run_job(app, jobs.as_deref(), &id, &t) {
                Ok(code) => code,
                Err(e) => super::report_error(&e, &t),
            },
            Ok(_) => {
                t.err(
                    "error: only `jarvis kb …`, `jarvis ask`, `jarvis research`, `jarvis undo`, `jarvis log`, `jarvis memory …`, `jarvis config set`, `jarvis run-digest`, `jarvis digest …` and `jarvis sync run-job …` go through the owner\n",
                );
                2
            }
            Err(e) => {
                t.err(&e.render().to_string());
                u8::try_from(e.exit_code()).unwrap_or(2)
            }
        };
        i32::from(code)
    })
}
