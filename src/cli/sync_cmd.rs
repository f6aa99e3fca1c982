//! `jarvis sync …` besides running the owner: `run-job <id>` (its
//! arguments and output; `delegate::run_job` runs it through the owner when
//! one runs, else in this process) and `--print-systemd-unit`.

use std::sync::Arc;

use clap::{Args, Subcommand};

use crate::app::jobs::JobsHandle;
use crate::app::App;
use crate::config::Config;

use super::term::Term;

#[derive(Debug, Clone, Args)]
pub struct SyncArgs {
    /// Print a systemd user unit for `jarvis sync` (Type=notify, restarts on failure) and exit.
    #[arg(long)]
    pub print_systemd_unit: bool,
    #[command(subcommand)]
    pub cmd: Option<SyncCmd>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SyncCmd {
    /// Run one job now, in the foreground: vault_refresh, pdf_scan, draft_gc, digest, digest_catchup, memory_extract or history_gc.
    ///
    /// Goes through the running `jarvis sync`/`jarvis serve` when there is
    /// one (so it never runs beside the scheduled run), else runs here. The
    /// outcome is recorded in the status `jarvis kb sync-status` shows.
    RunJob {
        /// The job id.
        id: String,
    },
}

impl SyncArgs {
    /// Whether this is the long-lived owner (`jarvis sync` alone).
    pub fn is_owner(&self) -> bool {
        self.cmd.is_none() && !self.print_systemd_unit
    }
}

/// `jarvis sync --print-systemd-unit` (the owner itself is `owner_cmd`;
/// `run-job` goes through `delegate::run_job`, which picks here or the
/// owner as every delegated command does).
pub fn run(args: SyncArgs, config: &Config) -> anyhow::Result<u8> {
    if args.print_systemd_unit {
        let exe = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .map_err(|e| anyhow::anyhow!("cannot find this program's absolute path for the unit: {e}"))?;
        let home = config
            .home
            .root()
            .canonicalize()
            .unwrap_or_else(|_| config.home.root().to_path_buf());
        super::emit(&crate::app::jobs::systemd_unit(&exe, &home))?;
    }
    Ok(0)
}

/// Run job `id` once, here or in the owner (`jobs`: its scheduler, when it
/// runs one), with a spinner, and print the outcome.
pub fn run_job(app: &Arc<App>, jobs: Option<&JobsHandle>, id: &str, t: &dyn Term) -> anyhow::Result<u8> {
    let bar = t.bar(None);
    bar.set_message(format!("running job {id}…"));
    let stop = t.cancel().clone();
    let outcome = crate::app::jobs::run_job_once(app, jobs, id, &stop);
    bar.finish_and_clear();
    let done = outcome?;
    t.out(&format!("job {id}: {} ({:.1} s)\n", done.summary, done.seconds))?;
    Ok(0)
}
