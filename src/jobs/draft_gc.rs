//! `draft_gc`: the daily retention sweep of the drafts sandbox, at
//! `drafts.gc_hour`. Not registered at all when `drafts.retention_days`
//! is 0.
//! Must not: delete anything itself — the drafts library's prune takes
//! draft ids, walks only the drafts root and skips a draft marked `keep`.

use super::{blocking, JobCtx, JobError, JobReport};
use crate::cancel::Cancel;

pub async fn run(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    let days = ctx.settings.drafts_retention_days;
    if days == 0 {
        return Ok(JobReport::skipped("retention is off (`drafts.retention_days` = 0)"));
    }
    cancel.check().map_err(|_| JobError::Cancelled)?;
    let deps = ctx.deps.clone();
    let removed = blocking(move || deps.prune_drafts(days)).await?;
    Ok(JobReport::done(if removed.is_empty() {
        format!("no draft untouched for more than {days} days")
    } else {
        format!(
            "removed {} draft{} untouched for more than {days} days: {}",
            removed.len(),
            if removed.len() == 1 { "" } else { "s" },
            removed.join(", ")
        )
    }))
}
