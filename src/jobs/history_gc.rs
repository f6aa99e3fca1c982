//! `history_gc`: once a day, the kept copies of the history (removed
//! chunks with their vectors, a forgotten fact's record, a prompt's
//! previous text) older than `history.keep_days` are dropped, and those
//! events stop being undoable. Opening the store and each undo do the same;
//! this run is what bounds them for an owner that stays up for weeks.
//! Always registered (at `history.keep_days` = 0 it drops every copy).
//! Must not: touch the store itself — the body is the application's
//! ([`super::JobDeps::expire_history`]) — or drop an event: only copies go.

use super::{blocking, JobCtx, JobError, JobReport};
use crate::cancel::Cancel;

pub async fn run(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    cancel.check().map_err(|_| JobError::Cancelled)?;
    let deps = ctx.deps.clone();
    let (dropped, keep_days) = blocking(move || deps.expire_history()).await?;
    Ok(if dropped == 0 {
        JobReport::skipped(format!("no kept copy older than {keep_days} days"))
    } else {
        JobReport::done(format!(
            "dropped the kept copies of {dropped} event{} older than {keep_days} days (history.keep_days); they can no longer be undone",
            if dropped == 1 { "" } else { "s" }
        ))
    })
}
