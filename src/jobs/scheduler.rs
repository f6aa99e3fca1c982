//! The schedule: the job table registered with tokio-cron-scheduler (the
//! only module that knows it), the runs at start, the start-up log, and
//! an orderly stop.
//!
//! tokio-cron-scheduler 0.15: cron expressions have six fields (seconds
//! first) and are read in local time here; a job closure returns nothing
//! and a panic inside it would never report — so every closure only hands
//! the id to the [`Runner`], which catches and records everything.
//! Must not: run job bodies itself or decide outcomes.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Local, Utc};
use tokio_cron_scheduler::{Job, JobScheduler};

use super::runner::{show_time, Cause, Ran, Runner};
use super::{digest, unregistered_reason, JobError, JobId, JobSpec, Trigger};

/// A running schedule. Stop it with [`Schedule::stop`].
pub struct Schedule {
    sched: JobScheduler,
    runner: Arc<Runner>,
    jobs: Vec<(JobSpec, uuid::Uuid)>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule")
            .field("jobs", &self.jobs.len())
            .finish_non_exhaustive()
    }
}

fn sched_err(e: impl std::fmt::Display) -> JobError {
    JobError::Failed(super::DepError::new(
        crate::error_kind::ErrorKind::Internal,
        format!("the job scheduler failed: {e}"),
    ))
}

/// What the scheduler does on each fire of `id`.
async fn fire(runner: Arc<Runner>, id: JobId, uuid: uuid::Uuid, mut sched: JobScheduler) {
    if id == JobId::Digest {
        // The misfire grace: a slot missed by more than this (the machine
        // slept across it) is left to the catch-up, which runs it once.
        let slot = runner.ctx().status.job(id).next_run;
        let grace = runner.ctx().settings.misfire_grace;
        if let Some(slot) = slot {
            if digest::late_beyond_grace(slot, Utc::now(), grace) {
                let n = sched.next_tick_for_job(uuid).await.ok().flatten();
                tracing::info!(
                    job = %id,
                    "job digest: the slot at {} fired more than {} late; digest_catchup runs it — next run at {}",
                    show_time(Some(slot)),
                    super::human_duration(grace),
                    show_time(n)
                );
                runner.ctx().status.update_job(id, |j| j.next_run = n);
                return;
            }
        }
    }
    let ran = runner.run(id, Cause::Schedule, false).await;
    // The scheduler computes the tick after this one by itself.
    let n = sched.next_tick_for_job(uuid).await.ok().flatten();
    runner.finished(id, &ran, n);
}

fn build(spec: &JobSpec, runner: &Arc<Runner>) -> Result<Job, JobError> {
    let id = spec.id;
    let r = Arc::clone(runner);
    let job = match &spec.trigger {
        Trigger::Every { every, .. } => Job::new_repeated_async(*every, move |uuid, sched| {
            Box::pin(fire(Arc::clone(&r), id, uuid, sched))
        }),
        Trigger::Cron { expr, utc: true } => Job::new_async_tz(expr.as_str(), Utc, move |uuid, sched| {
            Box::pin(fire(Arc::clone(&r), id, uuid, sched))
        }),
        Trigger::Cron { expr, utc: false } => Job::new_async_tz(expr.as_str(), Local, move |uuid, sched| {
            Box::pin(fire(Arc::clone(&r), id, uuid, sched))
        }),
    };
    job.map_err(sched_err)
}

/// Register `plan`, start the scheduler, log one `job <id>: next run at
/// <time>` line per job, and start the runs that happen at start.
pub async fn start(runner: Arc<Runner>, plan: Vec<JobSpec>) -> Result<Schedule, JobError> {
    let mut sched = JobScheduler::new().await.map_err(sched_err)?;
    let settings = Arc::clone(&runner.ctx().settings);
    let pid = std::process::id();
    runner.ctx().status.update(|d| {
        d.digest_enabled = settings.digest.is_some();
        for id in JobId::ALL {
            let j = d.jobs.entry(id.as_str().to_string()).or_default();
            let spec = plan.iter().find(|s| s.id == id);
            j.registered = spec.is_some();
            j.trigger = spec.map(|s| s.trigger.to_string());
            j.disabled = unregistered_reason(id, &settings);
            j.running = false;
            if spec.is_none() {
                j.next_run = None;
            }
        }
        let _ = pid;
    });
    let mut jobs = Vec::new();
    for spec in plan {
        let job = build(&spec, &runner)?;
        let uuid = sched.add(job).await.map_err(sched_err)?;
        jobs.push((spec, uuid));
    }
    sched.start().await.map_err(sched_err)?;
    let now = Utc::now();
    for (spec, uuid) in &jobs {
        let next = sched.next_tick_for_job(*uuid).await.ok().flatten();
        runner.ctx().status.update_job(spec.id, |j| j.next_run = next);
        let at_start = matches!(spec.trigger, Trigger::Every { at_start: true, .. });
        if at_start {
            tracing::info!(
                job = %spec.id,
                "job {}: next run at {} (now, at start), then {} ({})",
                spec.id,
                show_time(Some(now)),
                show_time(next),
                spec.trigger
            );
        } else {
            tracing::info!(job = %spec.id, "job {}: next run at {} ({})", spec.id, show_time(next), spec.trigger);
        }
    }
    for id in [JobId::PdfScan, JobId::DraftGc] {
        if let Some(why) = unregistered_reason(id, &settings) {
            tracing::info!(job = %id, "job {id}: {why}");
        }
    }
    if settings.digest.is_none() {
        tracing::info!("digest: disabled ([digest] enabled = false)");
    }
    let mut tasks = Vec::new();
    for (spec, uuid) in &jobs {
        if !matches!(spec.trigger, Trigger::Every { at_start: true, .. }) {
            continue;
        }
        let (r, id, uuid) = (Arc::clone(&runner), spec.id, *uuid);
        let mut s = sched.clone();
        tasks.push(tokio::spawn(async move {
            let ran = r.run(id, Cause::Start, false).await;
            let n = s.next_tick_for_job(uuid).await.ok().flatten();
            r.finished(id, &ran, n);
        }));
    }
    Ok(Schedule {
        sched,
        runner,
        jobs,
        tasks,
    })
}

impl Schedule {
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// The next fire time the scheduler has for `id`.
    pub async fn next_run(&self, id: JobId) -> Option<DateTime<Utc>> {
        let (_, uuid) = self.jobs.iter().find(|(s, _)| s.id == id)?;
        let mut s = self.sched.clone();
        s.next_tick_for_job(*uuid).await.ok().flatten()
    }

    /// Run `id` now (for `jarvis sync run-job`), with the same bookkeeping
    /// and log line as a scheduled run.
    pub async fn run_now(&self, id: JobId) -> Ran {
        let ran = self.runner.run(id, Cause::RunJob, false).await;
        let next = self.next_run(id).await;
        self.runner.finished(id, &ran, next);
        ran
    }

    /// Stop: running jobs are cancelled (the runner's shutdown switch) and
    /// waited for, bounded by `grace`; then the scheduler stops.
    pub async fn stop(mut self, grace: Duration) {
        self.runner.shutdown().cancel();
        let wait = async {
            for t in self.tasks.drain(..) {
                let _ = t.await;
            }
        };
        let runner = Arc::clone(&self.runner);
        let wait = async move {
            wait.await;
            // Scheduled runs are not ours to join: wait for the runner to
            // report none running (only during shutdown).
            while runner.busy() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        if tokio::time::timeout(grace, wait).await.is_err() {
            tracing::warn!("jobs still running after the shutdown grace period");
        }
        if let Err(e) = self.sched.shutdown().await {
            tracing::warn!(error = %e, "the job scheduler did not stop cleanly");
        }
    }
}
