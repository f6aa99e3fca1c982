//! The wrapper every job run goes through, whoever triggers it (the
//! scheduler, the watcher, `jarvis sync run-job`).
//!
//! The scheduler crate's jobs return nothing and a panicking job never
//! reports done, so nothing is left to it: each run is spawned as its own
//! task, its error or panic is caught, the outcome, duration and times go
//! into the status file, and one log line says how it ended. At most one
//! run per job at a time: a trigger that finds the job running is skipped,
//! or — for the watcher, whose changes must not be lost — folded into one
//! follow-up run after it.
//! Must not: know what a job does (that is [`super::run_body`]) or when it
//! runs next (the scheduler passes that in).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Local, Utc};

use super::status::ErrorRecord;
use super::{panic_message, run_body, JobCtx, JobError, JobId, JobReport};
use crate::cancel::Cancel;

/// What triggered a run: for the log, and for the vault refresh, which
/// refreshes only the watcher's changed paths when the watcher asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The run right after the owner started.
    Start,
    /// The scheduler's interval or cron slot.
    Schedule,
    /// The filesystem watcher saw changes.
    Watcher,
    /// `jarvis sync run-job`.
    RunJob,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Start => "start",
            Cause::Schedule => "schedule",
            Cause::Watcher => "watcher",
            Cause::RunJob => "run-job",
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A job run's state in the runner.
#[derive(Debug, Default)]
struct Slot {
    running: bool,
    /// Another run was asked for while this one ran, by this cause.
    again: Option<Cause>,
}

/// Runs jobs with the bookkeeping. Shared as `Arc<Runner>`.
pub struct Runner {
    ctx: JobCtx,
    shutdown: Cancel,
    slots: Mutex<HashMap<JobId, Slot>>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").finish_non_exhaustive()
    }
}

/// How one trigger went.
#[derive(Debug)]
pub enum Ran {
    /// The run finished (its own outcome inside).
    Finished(Result<JobReport, JobError>),
    /// The job was already running; this trigger did nothing.
    AlreadyRunning,
    /// The job was running; one more run follows it.
    Queued,
}

impl Runner {
    /// `shutdown` stops every run cooperatively.
    pub fn new(ctx: JobCtx, shutdown: Cancel) -> Arc<Runner> {
        Arc::new(Runner {
            ctx,
            shutdown,
            slots: Mutex::default(),
        })
    }

    pub fn ctx(&self) -> &JobCtx {
        &self.ctx
    }

    pub fn shutdown(&self) -> &Cancel {
        &self.shutdown
    }

    /// Whether any job is running now.
    pub fn busy(&self) -> bool {
        crate::lock::lock(&self.slots).values().any(|s| s.running)
    }

    fn claim(&self, id: JobId, cause: Cause, queue: bool) -> Option<Ran> {
        let mut slots = crate::lock::lock(&self.slots);
        let slot = slots.entry(id).or_default();
        if slot.running {
            if queue {
                slot.again = Some(cause);
                return Some(Ran::Queued);
            }
            return Some(Ran::AlreadyRunning);
        }
        slot.running = true;
        None
    }

    /// Release the slot; the cause of a queued run that should follow.
    fn release(&self, id: JobId) -> Option<Cause> {
        let mut slots = crate::lock::lock(&self.slots);
        let slot = slots.entry(id).or_default();
        let again = slot.again.take();
        if again.is_none() {
            slot.running = false;
        }
        again
    }

    /// Run `id` once now. With `queue`, a trigger that finds the job
    /// running asks for one more run after it (with this cause) instead of
    /// being dropped.
    pub async fn run(self: &Arc<Self>, id: JobId, cause: Cause, queue: bool) -> Ran {
        self.run_with(id, cause, queue, None).await
    }

    /// [`Runner::run`], also stopped by `stop` (a `run-job` client's Ctrl-C).
    pub async fn run_with(self: &Arc<Self>, id: JobId, cause: Cause, queue: bool, stop: Option<&Cancel>) -> Ran {
        if let Some(r) = self.claim(id, cause, queue) {
            match r {
                Ran::AlreadyRunning => {
                    tracing::info!(job = %id, %cause, "job {id}: still running; this trigger is skipped")
                }
                _ => tracing::debug!(job = %id, %cause, "job {id}: running; one more run queued"),
            }
            return r;
        }
        let mut cause = cause;
        loop {
            let result = self.run_claimed(id, cause, stop).await;
            match self.release(id) {
                Some(next) if !self.shutdown.is_cancelled() => cause = next,
                _ => {
                    if self.shutdown.is_cancelled() {
                        crate::lock::lock(&self.slots).remove(&id);
                    }
                    return Ran::Finished(result);
                }
            }
        }
    }

    async fn run_claimed(
        self: &Arc<Self>,
        id: JobId,
        cause: Cause,
        stop: Option<&Cancel>,
    ) -> Result<JobReport, JobError> {
        let started = Utc::now();
        let clock = Instant::now();
        self.ctx.status.update_job(id, |j| {
            j.running = true;
            j.last_run = Some(started);
        });
        tracing::debug!(job = %id, %cause, "job {id}: started");
        let ctx = self.ctx.clone();
        let cancel = self.shutdown.child();
        let _linked = stop.map(|s| {
            let c = cancel.clone();
            s.on_cancel(move || c.cancel())
        });
        // Its own task: a panic anywhere in the body ends that task only,
        // and comes back here as a JoinError instead of a silent stop.
        let handle = tokio::spawn(async move { run_body(id, &ctx, cancel, cause).await });
        let result = match handle.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(JobError::Panicked(panic_message(e.into_panic()))),
            Err(_) => Err(JobError::Cancelled),
        };
        let duration = clock.elapsed();
        let now = Utc::now();
        self.ctx.status.update_job(id, |j| {
            j.running = false;
            j.duration_ms = Some(duration.as_millis() as u64);
            match &result {
                Ok(r) => {
                    j.last_outcome = Some(if r.skipped { "skipped" } else { "ok" }.into());
                    j.last_summary = Some(r.summary.clone());
                    // A digest skipped because the other digest run holds
                    // the lock is not a digest that succeeded.
                    if !(r.skipped && id == JobId::Digest) {
                        j.last_success = Some(now);
                    }
                }
                Err(e) => {
                    j.last_outcome = Some(
                        match e {
                            JobError::Panicked(_) => "panicked",
                            JobError::Cancelled => "cancelled",
                            _ => "error",
                        }
                        .into(),
                    );
                    j.last_summary = None;
                    // A stop (shutdown, Ctrl-C) is an outcome, not an error.
                    if !matches!(e, JobError::Cancelled) {
                        j.last_error = Some(ErrorRecord {
                            at: now,
                            message: e.to_string(),
                        });
                    }
                }
            }
        });
        result
    }

    /// Record the next fire time and log how the run ended with it (one
    /// line per finish).
    pub fn finished(&self, id: JobId, ran: &Ran, next: Option<DateTime<Utc>>) {
        self.ctx.status.update_job(id, |j| j.next_run = next);
        let next = show_time(next);
        match ran {
            Ran::Finished(Ok(r)) => tracing::info!(
                job = %id,
                outcome = if r.skipped { "skipped" } else { "ok" },
                "job {id} finished: {} — next run at {next}",
                r.summary
            ),
            Ran::Finished(Err(JobError::Cancelled)) => {
                tracing::info!(job = %id, outcome = "cancelled", "job {id} stopped — next run at {next}")
            }
            Ran::Finished(Err(e)) => {
                tracing::error!(job = %id, outcome = "error", "job {id} failed: {e} — next run at {next}")
            }
            Ran::AlreadyRunning | Ran::Queued => {}
        }
    }
}

/// A time for the log and the status: local, to the second.
pub fn show_time(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| t.with_timezone(&Local).format("%Y-%m-%d %H:%M:%S %:z").to_string())
        .unwrap_or_else(|| "(not scheduled)".into())
}
