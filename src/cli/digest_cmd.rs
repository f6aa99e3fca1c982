//! `jarvis run-digest [--force] [--dry-run]`: the weekly digest once, now;
//! `jarvis digest list|feedback`: the recent digests' papers and the user's
//! votes on them. Both go through a running `serve`/`sync` when one owns
//! the knowledge base (like `jarvis kb …`), else run here.

use clap::{Args, Subcommand};

use crate::app::digest::DigestOpError;
use crate::app::App;
use crate::cli::term::Term;
use crate::digest::feedback::Vote;
use crate::digest::{usage_line, DigestError, DigestOptions, SourceStatus};

#[derive(Debug, Clone, Args)]
pub struct RunDigestArgs {
    /// Run even though `[digest] enabled = false`.
    #[arg(long)]
    pub force: bool,
    /// Fetch and score, but write, index and remember nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Machine-readable report.
    #[arg(long)]
    pub json: bool,
}

pub fn run_digest(a: RunDigestArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let opts = DigestOptions {
        dry_run: a.dry_run,
        force: a.force,
        ..DigestOptions::default()
    };
    let say = |line: &str| t.err(&format!("{line}\n"));
    let report = match app.run_digest(opts, &say, t.cancel()) {
        Ok(r) => r,
        Err(DigestOpError::Digest(e @ DigestError::Disabled)) => {
            t.err(&format!("{e}\n"));
            return Ok(0);
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        t.out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
        return Ok(0);
    }
    let mut out = String::new();
    if report.quiet {
        out.push_str(&format!(
            "no new papers from {} to {}: {}\n",
            report.window_start,
            report.window_end,
            report.warnings.first().map(String::as_str).unwrap_or("a quiet spell")
        ));
    } else {
        out.push_str(&format!(
            "{} fetched, {} duplicates, {} seen before, {} already in the knowledge base, {} gated out, {} scored, {} skipped\n",
            report.fetched,
            report.duplicates,
            report.already_seen,
            report.already_in_kb,
            report.gated_out,
            report.scored,
            report.skipped.len()
        ));
        out.push_str(&format!(
            "Must-Read {}, Worth Reading {}, Skim {}\n",
            report.must_read, report.worth_reading, report.skim
        ));
        out.push_str(&format!("{}: {}\n", report.model, usage_line(&report.usage)));
        match &report.digest_file {
            Some(p) => out.push_str(&format!(
                "wrote {} — indexed {} full text, {} summary fallback, {} summaries ({} skipped)\n",
                p.display(),
                report.indexed_full_text,
                report.indexed_summary_fallback,
                report.indexed_summaries,
                report.index_skipped
            )),
            None if report.dry_run => out.push_str("dry run: nothing written or indexed\n"),
            None => {}
        }
    }
    for s in &report.sources {
        if let SourceStatus::Failed(why) = &s.status {
            out.push_str(&format!("warning: {} failed: {why}\n", s.name));
        }
    }
    for b in &report.failed_batches {
        out.push_str(&format!("warning: scoring {b}\n"));
    }
    t.out(&out)?;
    Ok(0)
}

/// `jarvis digest …`.
#[derive(Debug, Clone, Subcommand)]
pub enum DigestCmd {
    /// The papers of recent digests, newest first, with your votes.
    List {
        /// Only the newest N digests.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Tell the digest what you think of a paper it suggested: up, down,
    /// add (to the library, full text) or clear. Liked and added papers pull
    /// the next digests towards their kind, disliked ones push away.
    Feedback {
        /// The paper: an arXiv id (2401.01234), a DOI, or its link.
        id: String,
        /// up, down, add or clear.
        vote: String,
        /// Add without asking about a duplicate.
        #[arg(long)]
        yes: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: DigestCmd, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    match cmd {
        DigestCmd::List { runs, json } => list(app, t, runs, json),
        DigestCmd::Feedback { id, vote, yes, json } => feedback(app, t, &id, &vote, yes, json),
    }
}

fn list(app: &App, t: &dyn Term, n: usize, json: bool) -> anyhow::Result<u8> {
    let (runs, votes) = app.digest_feedback_view()?;
    let runs: Vec<_> = runs.into_iter().take(n.max(1)).collect();
    if json {
        let v = serde_json::json!({
            "runs": runs.iter().map(|r| serde_json::json!({
                "date": r.date,
                "file": r.file,
                "papers": r.entries.iter().map(|e| serde_json::json!({
                    "key": e.key, "link": e.link, "title": e.title, "authors": e.authors,
                    "score": e.score, "track": e.track, "tier": e.tier, "why": e.why,
                    "summary": e.summary,
                    "vote": votes.get(&e.key).map(|f| f.vote.as_str()),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        t.out(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        return Ok(0);
    }
    if runs.is_empty() {
        t.err("no digest has been remembered yet — digests written from now on are listed here (`jarvis run-digest` writes one)\n");
        return Ok(0);
    }
    let mut out = String::new();
    for r in &runs {
        out.push_str(&format!("Digest {} ({} papers)\n", r.date, r.entries.len()));
        for e in &r.entries {
            let mark = match votes.get(&e.key).map(|f| f.vote) {
                Some(Vote::Up) => "👍",
                Some(Vote::Down) => "👎",
                Some(Vote::Added) => "➕",
                None => "  ",
            };
            out.push_str(&format!("  {mark} {:>2}/10  {}  {}\n", e.score, e.key, e.title));
        }
    }
    t.out(&out)?;
    Ok(0)
}

fn feedback(app: &App, t: &dyn Term, id: &str, vote: &str, yes: bool, json: bool) -> anyhow::Result<u8> {
    let (entry, said) = match vote {
        "clear" => (app.digest_vote(id, None)?, "vote taken back".to_string()),
        "add" | "added" => {
            let confirm = |q: &str| yes || crate::cli::kb::add::ask(t, q);
            let (entry, report) = app.digest_add(id, &crate::kb::Actor::Cli, &confirm, t.cancel())?;
            let said = match &report.skipped {
                Some(why) => format!("already in the library ({why}); counted as added"),
                None => format!(
                    "added to the library ({} chunks)",
                    report.body_chunks + report.annotation_chunks + report.figure_chunks
                ),
            };
            (entry, said)
        }
        other => {
            let v: Vote = other.parse().map_err(|e: String| anyhow::anyhow!("{e}"))?;
            (app.digest_vote(id, Some(v))?, format!("noted: {}", v.as_str()))
        }
    };
    if json {
        let v = serde_json::json!({ "key": entry.key, "title": entry.title, "result": said });
        t.out(&format!("{}\n", serde_json::to_string(&v)?))?;
    } else {
        t.out(&format!("{} — {}\n", entry.title, said))?;
    }
    Ok(0)
}
