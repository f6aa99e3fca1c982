//! `jarvis memory list|review|forget|export|import`: long-term memory at
//! the command line. Each runs in the owner when one is alive (see
//! `cli::delegate`), else here; `review` asks its questions on this
//! terminal either way.
//! Must not: decide what a fact may say or who sees it (`memory` does), or
//! read the store.

use clap::Subcommand;

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::Actor;
use crate::memory::FactDraft;
use crate::memory::{Fact, FactStatus};

use super::kb::emit_json;

#[derive(Debug, Subcommand)]
pub enum MemoryCmd {
    /// The facts Jarvis keeps about you (accepted, and proposals waiting for your review), newest first.
    List {
        /// Only proposals waiting for review.
        #[arg(long, conflicts_with = "accepted")]
        pending: bool,
        /// Only accepted facts (what the assistant is told).
        #[arg(long)]
        accepted: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Go through the proposals one by one: accept, edit, reject or skip each (with --json: list them and change nothing).
    Review {
        #[arg(long)]
        json: bool,
    },
    /// Forget a fact now: it leaves the summary and search at once (`jarvis undo` brings it back while history.keep_days allows).
    Forget {
        /// The fact's id (`jarvis memory list` shows it).
        id: u64,
        #[arg(long)]
        json: bool,
    },
    /// Write the accepted facts as one readable Markdown file (to stdout, or --output).
    Export {
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
        /// The facts as JSON instead of Markdown.
        #[arg(long)]
        json: bool,
    },
    /// Read facts from a Markdown file as `export` writes it: each is accepted as yours; one already held is updated, nothing is deleted.
    Import {
        file: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: MemoryCmd, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    match cmd {
        MemoryCmd::List {
            pending,
            accepted,
            json,
        } => {
            let facts: Vec<Fact> = app
                .memory_list()?
                .into_iter()
                .filter(|f| if f.accepted() { !pending } else { !accepted })
                .collect();
            if json {
                emit_json(t, &facts)?;
            } else if facts.is_empty() {
                t.err("no memory facts yet — the assistant proposes them as you chat; `jarvis memory review` goes through proposals\n");
            } else {
                t.out(&facts.iter().map(line).collect::<String>())?;
            }
            Ok(0)
        }
        MemoryCmd::Review { json } => review(app, t, json),
        MemoryCmd::Forget { id, json } => {
            let (f, _) = app.memory_forget(id, &Actor::Cli)?;
            if json {
                emit_json(t, &f)?;
            } else if f.accepted() {
                t.out(&format!(
                    "forgot fact {id} ({}: {}) — gone from the summary and search now; `jarvis undo` brings it back\n",
                    f.category, f.key
                ))?;
            } else {
                t.out(&format!("rejected proposal {id} ({}: {})\n", f.category, f.key))?;
            }
            Ok(0)
        }
        MemoryCmd::Export { output, json } => {
            if json {
                let facts: Vec<Fact> = app.memory_list()?.into_iter().filter(Fact::accepted).collect();
                emit_json(t, &facts)?;
                return Ok(0);
            }
            let md = app.memory_export()?;
            match output {
                None => t.out(&md)?,
                Some(p) => {
                    let p = t.cwd().join(p);
                    crate::paths::write_atomic(&p, md.as_bytes(), 0o600)?;
                    t.err(&format!("wrote {}\n", p.display()));
                }
            }
            Ok(0)
        }
        MemoryCmd::Import { file, json } => {
            let p = t.cwd().join(&file);
            let text = std::fs::read_to_string(&p).map_err(|e| {
                anyhow::anyhow!(
                    "cannot read {}: {e} — give the path of a file `jarvis memory export` wrote",
                    p.display()
                )
            })?;
            let r = app.memory_import(&text, &Actor::Cli)?;
            if json {
                emit_json(t, &r)?;
            } else {
                t.out(&format!(
                    "imported {}: {} added, {} changed, {} unchanged, {} skipped\n",
                    p.display(),
                    r.added,
                    r.changed,
                    r.unchanged,
                    r.skipped.len()
                ))?;
                for s in &r.skipped {
                    t.err(&format!("skipped {s}\n"));
                }
            }
            Ok(0)
        }
    }
}

/// One fact in a line: id, status, category and key, text, where from.
fn line(f: &Fact) -> String {
    let status = match f.status {
        FactStatus::Accepted => "accepted",
        FactStatus::Pending => "PENDING ",
    };
    let from = match (&f.source.session, f.source.private) {
        (Some(s), true) => format!(" (from chat {s}, private)"),
        (Some(s), false) => format!(" (from chat {s})"),
        (None, true) => format!(" ({}, private)", f.source.origin),
        (None, false) => format!(" ({})", f.source.origin),
    };
    format!("#{:<4} {status}  [{}] {}: {}{from}\n", f.id, f.category, f.key, f.text)
}

fn review(app: &App, t: &dyn Term, json: bool) -> anyhow::Result<u8> {
    let pending: Vec<Fact> = app.memory_list()?.into_iter().filter(|f| !f.accepted()).collect();
    if json {
        emit_json(t, &pending)?;
        return Ok(0);
    }
    if pending.is_empty() {
        t.err("no proposals waiting for review\n");
        return Ok(0);
    }
    let (mut accepted, mut rejected) = (0, 0);
    for (i, f) in pending.iter().enumerate() {
        t.err(&format!("\n[{}/{}] {}", i + 1, pending.len(), line(f)));
        loop {
            t.err("accept (a), edit (e), reject (r), skip (s) or quit (q)? ");
            let Some(answer) = t.read_line() else {
                t.err("\n");
                return done(t, accepted, rejected);
            };
            match answer.trim() {
                "a" | "accept" => {
                    app.memory_accept(f.id, None, &Actor::Cli)?;
                    accepted += 1;
                }
                "e" | "edit" => {
                    t.err(&format!("new text (empty keeps \"{}\"): ", f.text));
                    let text = t.read_line().unwrap_or_default();
                    let text = if text.trim().is_empty() { f.text.clone() } else { text };
                    let d = FactDraft::new(&f.category, &f.key, &text);
                    match app.memory_accept(f.id, Some(&d), &Actor::Cli) {
                        Ok(_) => accepted += 1,
                        Err(e) => {
                            t.err(&format!("{e}\n"));
                            continue;
                        }
                    }
                }
                "r" | "reject" => {
                    app.memory_reject(f.id)?;
                    rejected += 1;
                }
                "s" | "skip" | "" => {}
                "q" | "quit" => return done(t, accepted, rejected),
                _ => continue,
            }
            break;
        }
    }
    done(t, accepted, rejected)
}

fn done(t: &dyn Term, accepted: usize, rejected: usize) -> anyhow::Result<u8> {
    t.out(&format!("{accepted} accepted, {rejected} rejected\n"))?;
    Ok(0)
}
