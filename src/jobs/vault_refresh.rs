//! `vault_refresh`: one incremental refresh of the Obsidian vault — new and
//! changed notes, deletions, moves into or out of a private folder. Runs
//! every `sync.vault_refresh_minutes` and once at start (the safety net),
//! and whenever the [watcher](super::watcher) sees a batch of changes.
//!
//! How the two divide the work: a watcher-triggered run refreshes only the
//! paths the watcher reported ([`Changes`]), decided against the per-file
//! map like any refresh; the scheduled, at-start and `run-job` runs sweep
//! the whole vault and cover whatever is pending. A batch the watcher
//! cannot vouch for (an overflow, a rescan flag, a watcher error) or paths
//! the application will not refresh alone (a symlink on the way) fall back
//! to the full sweep at once.
//! Must not: walk or index the vault itself — the refresh is the
//! application's (`App::refresh_vault`), the one code path `kb index-vault`
//! uses too.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

use super::runner::Cause;
use super::{blocking, JobCtx, JobError, JobReport};
use crate::cancel::Cancel;

/// Changed paths the watcher reported that no refresh has covered yet.
#[derive(Debug, Default)]
pub struct Changes(Mutex<Pending>);

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Pending {
    paths: BTreeSet<PathBuf>,
    /// Events were lost or flagged for a rescan: only a sweep is sure.
    sweep: bool,
}

impl Changes {
    /// Remember changed paths for the next watcher-triggered run.
    pub fn add(&self, paths: impl IntoIterator<Item = PathBuf>) {
        self.lock().paths.extend(paths);
    }

    /// The events cannot be trusted to be complete: the next run sweeps.
    pub fn need_sweep(&self) {
        self.lock().sweep = true;
    }

    /// How many paths are waiting.
    pub fn len(&self) -> usize {
        self.lock().paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take(&self) -> Pending {
        std::mem::take(&mut *self.lock())
    }

    /// Put back what a failed run took, so the next run covers it.
    fn restore(&self, p: Pending) {
        let mut g = self.lock();
        g.paths.extend(p.paths);
        g.sweep |= p.sweep;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        crate::lock::lock(&self.0)
    }
}

pub async fn run(ctx: &JobCtx, cancel: Cancel, cause: Cause) -> Result<JobReport, JobError> {
    // Taken at the start: a change seen while this run works stays pending
    // for the watcher's follow-up run.
    let pending = ctx.vault_changes.take();
    let result = refresh(ctx, cancel, cause, &pending).await;
    if result.is_err() {
        ctx.vault_changes.restore(pending);
    }
    result
}

async fn refresh(ctx: &JobCtx, cancel: Cancel, cause: Cause, pending: &Pending) -> Result<JobReport, JobError> {
    if cause == Cause::Watcher && !pending.sweep {
        if pending.paths.is_empty() {
            return Ok(JobReport::skipped(
                "no changes left to refresh (an earlier run covered them)",
            ));
        }
        let paths: Vec<PathBuf> = pending.paths.iter().cloned().collect();
        let n = paths.len();
        let (deps, c) = (ctx.deps.clone(), cancel.clone());
        match blocking(move || deps.refresh_vault_paths(&paths, &c)).await? {
            Some(counts) => return Ok(JobReport::done(format!("{n} changed path(s): {counts}"))),
            None => tracing::info!(
                "vault watcher: the changed paths cannot be refreshed alone (a symlink on the way, or outside the vault); sweeping the whole vault"
            ),
        }
    } else if cause == Cause::Watcher {
        tracing::info!("vault watcher: events were lost or flagged for a rescan; sweeping the whole vault");
    }
    let deps = ctx.deps.clone();
    let counts = blocking(move || deps.refresh_vault(&cancel)).await?;
    Ok(JobReport::done(counts.to_string()))
}
