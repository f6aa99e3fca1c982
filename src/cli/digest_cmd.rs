//! `jarvis run-digest [--force] [--dry-run]`: the weekly digest once, now.
//! Goes through a running `serve`/`sync` when one owns the knowledge base
//! (like `jarvis kb …`), else runs here.

use clap::Args;

use crate::app::digest::DigestOpError;
use crate::app::App;
use crate::cli::term::Term;
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
