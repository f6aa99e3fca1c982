//! `jarvis kb index-vault`: incremental sync of the Obsidian vault.

use std::path::PathBuf;

use clap::Args;

use crate::app::ingest::WriteError;
use crate::app::App;
use crate::cli::term::Term;

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

pub fn index_vault(a: IndexVaultArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let vault = a.vault.map(|v| t.cwd().join(v));
    if let Some(p) = app.vault_progress() {
        // The scheduled refresh (or another index-vault) of this owner.
        t.err(&format!(
            "a vault refresh is already running here ({} of {} notes looked at); this one waits for it, then does what is left\n",
            p.done, p.total
        ));
    }
    let bar = t.bar(Some("indexing {bar:40} {pos}/{len} notes, eta {eta}"));
    let report = app.refresh_vault(
        vault.as_deref(),
        a.force,
        &crate::kb::Actor::Cli,
        &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        },
        t.cancel(),
    );
    bar.finish_and_clear();
    let (root, report) = match report {
        Ok(r) => r,
        Err(WriteError::Vault(e)) if a.force => {
            let root = vault.or_else(|| app.vault_path()).unwrap_or_default();
            anyhow::bail!("the clean rebuild of {} did not run: {e}", root.display())
        }
        Err(e) => return Err(e.into()),
    };
    if a.json {
        t.out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
        return Ok(0);
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
    t.out(&out)?;
    Ok(0)
}
