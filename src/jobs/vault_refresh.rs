//! `vault_refresh`: one incremental refresh of the Obsidian vault — new and
//! changed notes, deletions, moves into or out of a private folder. Runs
//! every `sync.vault_refresh_minutes` and once at start (the safety net),
//! and whenever the [watcher](super::watcher) sees a batch of changes.
//! Must not: walk or index the vault itself — the refresh is the
//! application's (`App::refresh_vault`), the one code path `kb index-vault`
//! uses too.

use super::{blocking, JobCtx, JobError, JobReport};
use crate::cancel::Cancel;

pub async fn run(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    let deps = ctx.deps.clone();
    let counts = blocking(move || deps.refresh_vault(&cancel)).await?;
    Ok(JobReport::done(counts.to_string()))
}
