//! `jarvis kb index-vault`: incremental sync of the Obsidian vault.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cancel::Cancel;
use crate::config::Config;
use crate::ingest::vault::{refresh_vault, VaultOptions};

use super::open;

#[derive(Debug, Args)]
pub struct IndexVaultArgs {
    /// The vault to index (default: `vault.path` from config).
    #[arg(long)]
    pub vault: Option<PathBuf>,
    /// Clean rebuild: remove every indexed note first, then index the whole vault.
    #[arg(long)]
    pub force: bool,
    /// Machine-readable summary.
    #[arg(long)]
    pub json: bool,
}

pub fn index_vault(a: IndexVaultArgs, config: &Config) -> anyhow::Result<ExitCode> {
    let root = a.vault.or_else(|| config.path("vault.path")).unwrap_or_default();
    let kb = open(config)?;
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("indexing {bar:40} {pos}/{len} notes, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let opts = VaultOptions {
        private_dirs: config.list("vault.private_dirs"),
        force: a.force,
    };
    let report = refresh_vault(
        &kb,
        &root,
        &opts,
        &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        },
        &Cancel::new(),
    );
    bar.finish_and_clear();
    let report = match report {
        Ok(r) => r,
        Err(e) if a.force => anyhow::bail!("the clean rebuild of {} did not run: {e}", root.display()),
        Err(e) => return Err(e.into()),
    };
    if a.json {
        super::super::emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!(
        "{}: {} added, {} updated, {} deleted, {} unchanged, {} skipped",
        root.display(),
        report.added.len(),
        report.updated.len(),
        report.deleted.len(),
        report.unchanged,
        report.skipped.len()
    );
    if !report.reclassified.is_empty() {
        out.push_str(&format!(
            ", {} re-classified (no re-embedding)",
            report.reclassified.len()
        ));
    }
    if report.restamped > 0 {
        out.push_str(&format!(", {} re-stamped", report.restamped));
    }
    out.push('\n');
    for (path, why) in &report.skipped {
        out.push_str(&format!("  skipped {path}: {why}\n"));
    }
    for (path, w) in &report.warnings {
        out.push_str(&format!("  warning {path}: {w}\n"));
    }
    super::super::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
