//! `jarvis kb add-digest FILE…`: bulk-import the Must-Read and Worth
//! Reading papers of digest Markdown files as summary entries.

use std::path::PathBuf;

use clap::Args;

use crate::app::App;
use crate::cli::term::Term;

#[derive(Debug, Args)]
pub struct AddDigestArgs {
    /// Digest files (`digest-YYYY-MM-DD.md`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Machine-readable report.
    #[arg(long)]
    pub json: bool,
}

pub fn add_digest(a: AddDigestArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let files: Vec<PathBuf> = a.files.iter().map(|f| t.cwd().join(f)).collect();
    let report = app.add_digest(&files, &crate::kb::Actor::Cli)?;
    if a.json {
        t.out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
        return Ok(0);
    }
    for (title, why) in &report.skipped {
        t.err(&format!("skipped {title}: {why}\n"));
    }
    t.out(&format!(
        "{} papers added from {} digest file{}, {} skipped\n",
        report.added.len(),
        report.files,
        if report.files == 1 { "" } else { "s" },
        report.skipped.len()
    ))?;
    Ok(0)
}
