//! `digest` and `digest_catchup`: when the weekly paper digest runs. Both
//! are registered only when `[digest] enabled = true`.
//!
//! - `digest` fires on its cron slot (`digest.day`, `digest.hour`, UTC —
//!   the pipeline's own definition of the slot). Missed slots coalesce into one run; a slot that fires late
//!   (the machine slept across it) still runs within the misfire grace
//!   (an hour), later than that it is left to the catch-up.
//! - `digest_catchup` runs once at start and every 6 hours: it re-reads
//!   the digest's `last_success` from the status file and runs the digest
//!   when a slot passed since then (the machine was off across it). On the
//!   very first start there is no baseline, so it waits for the next slot.
//! - Both take one non-blocking lock: a second digest while one runs
//!   returns at once with a log line, never a second digest file.
//! - With a local provider, the model server is probed first; if it is
//!   down the run fails fast with a pointer (nothing is ever started).
//!
//! Owns the scheduling decisions ([`overdue`], [`late_beyond_grace`]).
//! Must not: fetch, score or write a digest — the body is injected
//! ([`super::DigestBody`]).

use chrono::{DateTime, Local, Utc};

use super::{blocking, digest_cron, DepError, JobCtx, JobError, JobId, JobReport};
use crate::cancel::Cancel;
use crate::error_kind::ErrorKind;

/// The first slot of `expr` (UTC, as the digest's cron runs) strictly
/// after `after`.
pub fn next_slot(expr: &str, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    // Parsed as the scheduler parses it (croner 3, seconds required, day
    // of month AND day of week), so both agree on every slot.
    let cron = croner::parser::CronParser::builder()
        .seconds(croner::parser::Seconds::Required)
        .dom_and_dow(true)
        .build()
        .parse(expr)
        .ok()?;
    cron.find_next_occurrence(&after, false).ok()
}

/// What the catch-up decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overdue {
    /// No digest has ever succeeded: wait for the next slot.
    NoBaseline,
    /// The slot after the last success is still ahead.
    No { next: Option<DateTime<Utc>> },
    /// This slot passed since the last success.
    Yes { missed: DateTime<Utc> },
}

/// Has a slot of `expr` passed between `last_success` and `now`?
pub fn overdue(expr: &str, last_success: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Overdue {
    let Some(last) = last_success else {
        return Overdue::NoBaseline;
    };
    match next_slot(expr, last) {
        Some(slot) if slot <= now => Overdue::Yes { missed: slot },
        next => Overdue::No { next },
    }
}

/// Whether a cron fire for `slot` at `now` is later than `grace` (the
/// machine slept across the slot for longer than that).
pub fn late_beyond_grace(slot: DateTime<Utc>, now: DateTime<Utc>, grace: std::time::Duration) -> bool {
    (now - slot).to_std().is_ok_and(|late| late > grace)
}

/// The cron job: one digest, under the lock.
pub async fn run(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    locked_digest(ctx, cancel).await
}

async fn locked_digest(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    let Ok(_held) = ctx.digest_lock.clone().try_lock_owned() else {
        tracing::info!("digest: another digest run holds the lock; this one returns without running");
        return Ok(JobReport::skipped("another digest run was in progress"));
    };
    let Some(body) = ctx.deps.digest() else {
        return Err(JobError::Failed(DepError::new(
            ErrorKind::Unavailable,
            "this build has no digest pipeline to run — set `[digest] enabled = false`, or update jarvis",
        )));
    };
    let provider = ctx.deps.provider();
    tracing::info!(provider = %provider.spec, local = provider.local, "digest: running with {}", provider.spec);
    if provider.local {
        let deps = ctx.deps.clone();
        blocking(move || deps.probe_local_provider())
            .await
            .map_err(|e| match e {
                JobError::Failed(d) => JobError::Failed(DepError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "{} — the digest needs the local model server: start it (e.g. `ollama serve`) and run `jarvis sync run-job digest`; jarvis never starts it",
                        d.message
                    ),
                )),
                other => other,
            })?;
    }
    let out = blocking(move || body.run(&cancel)).await?;
    Ok(JobReport::done(out.summary))
}

/// The catch-up job.
pub async fn run_catchup(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    let Some(schedule) = &ctx.settings.digest else {
        return Ok(JobReport::skipped("digest: disabled ([digest] enabled = false)"));
    };
    let expr = digest_cron(schedule);
    // The baseline: the later of this schedule's record and the pipeline's
    // own stamp (a manual `jarvis run-digest` counts as a run too).
    let recorded = ctx.status.job(JobId::Digest).last_success;
    let deps = ctx.deps.clone();
    let own = blocking(move || Ok(deps.digest_last_success())).await?;
    let last = recorded.max(own);
    match overdue(&expr, last, Utc::now()) {
        Overdue::NoBaseline => Ok(JobReport::skipped(
            "no digest has succeeded yet: waiting for the next slot rather than running one now",
        )),
        Overdue::No { next } => Ok(JobReport::skipped(format!(
            "nothing missed (next slot {})",
            next.map(|t| t.with_timezone(&Local).to_rfc3339())
                .unwrap_or_else(|| "unknown".into())
        ))),
        Overdue::Yes { missed } => {
            tracing::info!(
                missed = %missed.with_timezone(&Local).to_rfc3339(),
                "digest_catchup: the slot at {} passed while jarvis was not running; running the digest now",
                missed.with_timezone(&Local).to_rfc3339()
            );
            let started = Utc::now();
            let result = locked_digest(ctx, cancel).await;
            // Record it as a digest run too: its `last_success` is the
            // baseline the next catch-up compares with.
            if let Ok(r) = &result {
                if !r.skipped {
                    let now = Utc::now();
                    ctx.status.update_job(JobId::Digest, |j| {
                        j.last_run = Some(started);
                        j.last_success = Some(now);
                        j.last_outcome = Some("ok".into());
                        j.last_summary = Some(format!("{} (run by digest_catchup)", r.summary));
                        j.duration_ms = Some((now - started).num_milliseconds().max(0) as u64);
                    });
                }
            }
            if let Err(e) = &result {
                let now = Utc::now();
                let message = e.to_string();
                ctx.status.update_job(JobId::Digest, |j| {
                    j.last_run = Some(started);
                    j.last_outcome = Some("error".into());
                    j.last_error = Some(super::status::ErrorRecord {
                        at: now,
                        message: format!("{message} (run by digest_catchup)"),
                    });
                });
            }
            result.map(|r| JobReport {
                summary: format!("ran the missed digest: {}", r.summary),
                skipped: r.skipped,
            })
        }
    }
}
