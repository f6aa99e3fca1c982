//! Composing the jobs feature: the job settings from config, and the work
//! the jobs call ([`AppJobs`], the [`JobDeps`] the application provides —
//! the same vault refresh and paper ingest the `kb` commands use), plus
//! the start-up checks that make `jarvis sync` refuse to start.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::cancel::Cancel;
use crate::config::Config;
use crate::error_kind::ErrorKind;
use crate::ingest::metadata::PdfMetadata;
use crate::ingest::paper::{AddRequest, Input, Mode};
use crate::jobs::{DepError, DigestBody, InboxPaper, JobDeps, JobError, JobId, JobSettings, ProviderInfo, VaultCounts};
use crate::kb::Actor;
use crate::llm::spec::{is_cloud_provider, resolve_model, ModelSpec};
use crate::paths::Dir;

use super::App;

/// The job table's settings from this configuration.
pub fn job_settings(cfg: &Config) -> JobSettings {
    let minutes = |k: &str| Duration::from_secs(u64::try_from(cfg.int(k)).unwrap_or(30).max(1) * 60);
    let mut s = JobSettings::new(cfg.home.path(Dir::State).join("sync_status.json"));
    s.vault_root = cfg.path("vault.path");
    s.vault_every = minutes("sync.vault_refresh_minutes");
    s.pdf_watch_dir = cfg.path("sync.pdf_watch_dir");
    s.pdf_every = minutes("sync.pdf_watch_minutes");
    s.watch = cfg.bool("sync.watch");
    s.drafts_retention_days = u32::try_from(cfg.int("drafts.retention_days")).unwrap_or(30);
    s.drafts_gc_hour = u32::try_from(cfg.int("drafts.gc_hour")).unwrap_or(4);
    s.digest = cfg.bool("digest.enabled").then(|| crate::jobs::DigestSchedule {
        day: cfg.str("digest.day"),
        hour: u32::try_from(cfg.int("digest.hour")).unwrap_or(5),
    });
    s.memory_every = (cfg.int("memory.idle_minutes") > 0).then_some(MEMORY_EVERY);
    s
}

/// How often the memory extraction looks for idle sessions: a session idle
/// for `memory.idle_minutes` is read within this much longer.
const MEMORY_EVERY: Duration = Duration::from_secs(10 * 60);

/// Problems that must stop `jarvis sync` from starting (a typo in the
/// inbox path must not silently watch nothing).
pub fn setup_problems(cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(dir) = cfg.path("sync.pdf_watch_dir") {
        if !dir.is_dir() {
            out.push(format!(
                "`sync.pdf_watch_dir` is set to {}, which does not exist or is not a directory — create it, fix the path, or unset it (`jarvis config set sync.pdf_watch_dir \"\"`)",
                dir.display()
            ));
        }
    }
    out
}

/// The chat provider jobs use, as `provider:model`, and whether it is local.
pub fn provider_info(cfg: &Config) -> ProviderInfo {
    let settings = super::llm::llm_settings(cfg);
    let chat = cfg.str("chat.provider");
    let spec = ModelSpec::parse(&chat);
    let shown = resolve_model(&spec, &settings)
        .map(|m| format!("{}:{m}", spec.provider))
        .unwrap_or_else(|e| format!("{chat} (no model: {e})"));
    ProviderInfo {
        spec: shown,
        local: !is_cloud_provider(&chat, &settings),
    }
}

/// The application's side of the jobs.
pub struct AppJobs {
    app: Arc<App>,
    digest: Option<Arc<dyn DigestBody>>,
}

impl AppJobs {
    /// The application's jobs, the digest body included.
    pub fn new(app: Arc<App>) -> Self {
        let digest: Arc<dyn DigestBody> = Arc::new(AppDigest(Arc::clone(&app)));
        AppJobs {
            app,
            digest: Some(digest),
        }
    }

    /// Use this digest body (the digest feature provides it).
    pub fn with_digest(mut self, body: Arc<dyn DigestBody>) -> Self {
        self.digest = Some(body);
        self
    }
}

fn counts(r: &crate::ingest::vault::VaultReport) -> VaultCounts {
    VaultCounts {
        added: r.added.len(),
        updated: r.updated.len(),
        deleted: r.deleted.len(),
        reclassified: r.reclassified.len(),
        unchanged: r.unchanged,
        skipped: r.skipped.len(),
    }
}

fn dep(kind: ErrorKind, e: impl std::fmt::Display) -> DepError {
    DepError::new(kind, e.to_string())
}

impl JobDeps for AppJobs {
    fn refresh_vault(&self, cancel: &Cancel) -> Result<VaultCounts, DepError> {
        let (_, r) = self
            .app
            .refresh_vault(None, false, &Actor::job("vault_refresh"), &|_, _| {}, cancel)
            .map_err(|e| dep(e.kind(), e))?;
        for (path, why) in &r.skipped {
            tracing::debug!(note = %path, "vault: skipped: {why}");
        }
        Ok(counts(&r))
    }

    fn refresh_vault_paths(&self, paths: &[PathBuf], cancel: &Cancel) -> Result<Option<VaultCounts>, DepError> {
        let Some(r) = self
            .app
            .refresh_vault_paths(paths, cancel)
            .map_err(|e| dep(e.kind(), e))?
        else {
            return Ok(None);
        };
        for (path, why) in &r.skipped {
            tracing::debug!(note = %path, "vault: skipped: {why}");
        }
        Ok(Some(counts(&r)))
    }

    fn ingest_pdf(&self, path: &Path, cancel: &Cancel) -> Result<InboxPaper, DepError> {
        let req = AddRequest {
            input: Input::Local(path.to_path_buf()),
            mode: Mode::FullText,
            explicit: PdfMetadata::default(),
            // Figures follow `rag.figure_captions` (off by default).
            figures: false,
        };
        // A paper with the same title from elsewhere (say, the digest's
        // arXiv copy) is kept beside this one: the inbox copy carries the
        // user's highlights.
        let r = self
            .app
            .add_paper(&req, &Actor::job("pdf_scan"), &|_| true, &|_| {}, cancel)
            .map_err(|e| dep(e.kind(), e))?;
        Ok(InboxPaper {
            title: r.title,
            authors: r.authors,
            doi: r.doi,
            unchanged: r.unchanged,
            replaced: r.replaced,
            warnings: r.warnings,
        })
    }

    fn prune_drafts(&self, retention_days: u32) -> Result<Vec<String>, DepError> {
        let drafts = self.app.drafts().map_err(|e| dep(e.kind(), e))?;
        let ws = &drafts.workspace;
        let stale = crate::drafts::retention::stale_drafts(ws, SystemTime::now(), retention_days)
            .map_err(|e| dep(e.kind(), e))?;
        // Titles before the folders go: the events name what was removed.
        let labels: Vec<(String, String, bool)> = stale
            .iter()
            .map(|id| match ws.meta(id) {
                Ok(m) => (id.clone(), m.title, m.visibility == crate::drafts::Visibility::Private),
                Err(_) => (id.clone(), String::new(), true),
            })
            .collect();
        let removed = crate::drafts::retention::prune_drafts(ws, &stale).map_err(|e| dep(e.kind(), e))?;
        let gone: Vec<_> = labels.into_iter().filter(|(id, _, _)| removed.contains(id)).collect();
        self.app.record_drafts_pruned(&gone, "draft_gc");
        Ok(removed)
    }

    fn expire_history(&self) -> Result<(usize, u32), DepError> {
        let kb = self.app.kb().map_err(|e| dep(e.kind(), e))?;
        kb.expire_kept_copies().map_err(|e| dep(e.kind(), e))
    }

    fn provider(&self) -> ProviderInfo {
        provider_info(&self.app.config())
    }

    fn probe_local_provider(&self) -> Result<(), DepError> {
        let cfg = self.app.config();
        let settings = super::llm::llm_settings(&cfg);
        crate::llm::probe::probe_local_server(&cfg.str("chat.provider"), &settings, Duration::from_secs(5))
            .map_err(|e| DepError::new(ErrorKind::Unavailable, e))
    }

    fn digest(&self) -> Option<Arc<dyn DigestBody>> {
        self.digest.clone()
    }

    fn extract_memories(&self, cancel: &Cancel) -> Result<crate::jobs::MemoryPass, DepError> {
        self.app.extract_idle_memories(cancel).map_err(|e| dep(e.kind(), e))
    }

    fn digest_last_success(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let t = crate::digest::state::last_success(&self.app.digest_state_dir())?;
        chrono::DateTime::from_timestamp(t.unix_timestamp(), t.nanosecond())
    }
}

/// The digest pipeline as the scheduled job's body (the pipeline entry
/// point `jarvis run-digest` uses too, minus the lock the job already holds).
struct AppDigest(Arc<App>);

impl DigestBody for AppDigest {
    fn run(&self, cancel: &Cancel) -> Result<crate::jobs::DigestOutcome, DepError> {
        let progress = |line: &str| tracing::info!("digest: {line}");
        let r = self
            .0
            // The job took the shared digest lock already (`JobCtx::digest_lock`).
            .run_digest_held(crate::digest::DigestOptions::default(), &progress, cancel)
            .map_err(|e| dep(e.kind(), e))?;
        let file = r
            .digest_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "no file".into());
        Ok(crate::jobs::DigestOutcome {
            summary: if r.quiet {
                format!("nothing new in the window ({} fetched)", r.fetched)
            } else {
                format!(
                    "{} fetched, {} scored by {}: {} must-read, {} worth reading, {} skim — {file}",
                    r.fetched, r.scored, r.model, r.must_read, r.worth_reading, r.skim
                )
            },
        })
    }
}

/// The schedule and watcher of a running owner.
pub struct JobsHandle {
    schedule: std::sync::Mutex<Option<crate::jobs::scheduler::Schedule>>,
    runner: Arc<crate::jobs::Runner>,
    rt: tokio::runtime::Handle,
    _watching: Option<crate::jobs::watcher::Watching>,
}

impl std::fmt::Debug for JobsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobsHandle").finish_non_exhaustive()
    }
}

/// How long a stop waits for running jobs.
pub const JOBS_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

pub(super) fn job_ctx(app: &Arc<App>) -> crate::jobs::JobCtx {
    let deps = AppJobs::new(Arc::clone(app));
    let mut ctx = crate::jobs::JobCtx::new(job_settings(&app.config()), Arc::new(deps));
    // One digest lock for the scheduled runs and a `run-digest` delegated
    // to this owner.
    ctx.digest_lock = app.digest_lock();
    ctx
}

/// Start the scheduler (and the watcher) for an owner with this `role`,
/// on `rt`. Call from outside the runtime.
pub fn start_jobs(app: &Arc<App>, rt: &tokio::runtime::Handle, role: &str) -> Result<JobsHandle, JobError> {
    let ctx = job_ctx(app);
    let since = chrono::Utc::now();
    ctx.status.update(|d| {
        d.owner = Some(crate::jobs::status::OwnerInfo {
            pid: std::process::id(),
            role: role.to_string(),
            since,
        })
    });
    let cfg = app.config();
    let provider = provider_info(&cfg);
    let embed = app
        .kb_if_open()
        .map(|kb| kb.model_id().to_string())
        .unwrap_or_else(|| cfg.str("rag.embed_model"));
    tracing::info!(
        provider = %provider.spec,
        local = provider.local,
        embed_model = %embed,
        "jobs: chat provider {} ({}), embedding model {embed}",
        provider.spec,
        if provider.local { "local" } else { "cloud" }
    );
    let plan = crate::jobs::plan(&ctx.settings);
    let runner = crate::jobs::Runner::new(ctx, app.shutdown().child());
    let schedule = rt.block_on(crate::jobs::scheduler::start(Arc::clone(&runner), plan))?;
    let watching = {
        let _guard = rt.enter();
        crate::jobs::watcher::start(Arc::clone(&runner), rt.clone())
    };
    // Start-up is done: tell systemd (a no-op outside it), and keep its
    // watchdog fed from the runtime — a wedged runtime stops the pings and
    // systemd restarts the service.
    crate::jobs::systemd::ready();
    if let Some(every) = crate::jobs::systemd::watchdog_interval() {
        let stop = app.shutdown().clone();
        rt.spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => crate::jobs::systemd::ping(),
                    _ = stop.cancelled() => break,
                }
            }
        });
    }
    Ok(JobsHandle {
        schedule: std::sync::Mutex::new(Some(schedule)),
        runner,
        rt: rt.clone(),
        _watching: watching,
    })
}

impl JobsHandle {
    pub fn runner(&self) -> &Arc<crate::jobs::Runner> {
        &self.runner
    }

    /// Stop the schedule: running jobs are cancelled and waited for
    /// (bounded). Call from outside the runtime.
    pub fn stop(&self) {
        crate::jobs::systemd::stopping();
        let taken = crate::lock::lock(&self.schedule).take();
        if let Some(s) = taken {
            self.rt.block_on(s.stop(JOBS_SHUTDOWN_GRACE));
        }
    }
}

/// A job run `jarvis sync run-job` reports.
#[derive(Debug, Clone)]
pub struct RunDone {
    pub summary: String,
    pub seconds: f64,
}

/// Run job `id` once: in the owner's schedule when `jobs` is given (so it
/// never overlaps a scheduled run), else here on a runtime of its own.
/// `stop` cancels it.
pub fn run_job_once(app: &Arc<App>, jobs: Option<&JobsHandle>, id: &str, stop: &Cancel) -> Result<RunDone, JobError> {
    let names: Vec<&str> = JobId::ALL.iter().map(|j| j.as_str()).collect();
    let id = JobId::parse(id).ok_or_else(|| {
        JobError::NotRegistered(format!("there is no job `{id}` — the jobs are {}", names.join(", ")))
    })?;
    let settings = job_settings(&app.config());
    if let Some(why) = crate::jobs::unregistered_reason(id, &settings) {
        return Err(JobError::NotRegistered(format!("job {id} is {why}")));
    }
    let started = std::time::Instant::now();
    let ran = match jobs {
        Some(h) => {
            let r = Arc::clone(&h.runner);
            h.rt.block_on(async move {
                let ran = r
                    .run_with(id, crate::jobs::runner::Cause::RunJob, false, Some(stop))
                    .await;
                let next = r.ctx().status.job(id).next_run;
                r.finished(id, &ran, next);
                ran
            })
        }
        None => {
            let ctx = job_ctx(app);
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| {
                    JobError::Failed(DepError::new(
                        ErrorKind::Internal,
                        format!("cannot start a runtime: {e}"),
                    ))
                })?;
            let runner = crate::jobs::Runner::new(ctx, app.shutdown().child());
            rt.block_on(async move {
                let ran = runner
                    .run_with(id, crate::jobs::runner::Cause::RunJob, false, Some(stop))
                    .await;
                let next = runner.ctx().status.job(id).next_run;
                runner.finished(id, &ran, next);
                ran
            })
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    match ran {
        crate::jobs::runner::Ran::Finished(Ok(r)) => Ok(RunDone {
            summary: r.summary,
            seconds,
        }),
        crate::jobs::runner::Ran::Finished(Err(e)) => Err(e),
        _ => Err(JobError::Failed(DepError::new(
            ErrorKind::Conflict,
            format!(
                "job {id} is running already (started by the schedule); its outcome shows in `jarvis kb sync-status`"
            ),
        ))),
    }
}

/// What `jarvis kb sync-status` shows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SyncStatusView {
    pub status_file: std::path::PathBuf,
    /// The last process that ran the schedule, and whether it still runs.
    pub owner: Option<OwnerView>,
    pub digest_enabled: bool,
    /// Every job in table order, registered or not.
    pub jobs: Vec<JobView>,
    pub watcher: Option<crate::jobs::status::WatcherStatus>,
    pub log_file: std::path::PathBuf,
    pub log_tail: Vec<String>,
    /// A problem reading the status file.
    pub problem: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct OwnerView {
    pub pid: u32,
    pub role: String,
    pub since: chrono::DateTime<chrono::Utc>,
    pub alive: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct JobView {
    pub id: String,
    #[serde(flatten)]
    pub status: crate::jobs::status::JobStatus,
}

/// The last `n` lines of a log file (empty when there is none).
fn tail(path: &Path, n: usize) -> Vec<String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    // Only the end of a long log is read into lines.
    let start = bytes.len().saturating_sub(64 * 1024);
    let text = String::from_utf8_lossy(&bytes[start..]);
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(n);
    lines[skip..].iter().map(|l| l.to_string()).collect()
}

impl App {
    /// The schedule's status: the status file read back, the owner's pid
    /// checked for life, and the tail of its log.
    pub fn sync_status(&self, tail_lines: usize) -> SyncStatusView {
        let cfg = self.config();
        let settings = job_settings(&cfg);
        let (doc, problem) = match crate::jobs::status::read(&settings.status_file) {
            Ok(d) => (d.unwrap_or_default(), None),
            Err(e) => (Default::default(), Some(e)),
        };
        let owner = doc.owner.as_ref().map(|o| OwnerView {
            pid: o.pid,
            role: o.role.clone(),
            since: o.since,
            alive: o.pid == std::process::id() || crate::jobs::status::pid_alive(o.pid),
        });
        let jobs = JobId::ALL
            .iter()
            .map(|id| {
                let mut status = doc.jobs.get(id.as_str()).cloned().unwrap_or_default();
                if status.disabled.is_none() && !status.registered {
                    status.disabled = crate::jobs::unregistered_reason(*id, &settings);
                }
                JobView {
                    id: id.as_str().to_string(),
                    status,
                }
            })
            .collect();
        let log_name = match owner.as_ref().map(|o| o.role.as_str()) {
            Some("serve") => "jarvis.log",
            _ => "sync.log",
        };
        let log_file = self.home.path(Dir::Logs).join(log_name);
        SyncStatusView {
            status_file: settings.status_file.clone(),
            owner,
            digest_enabled: settings.digest.is_some(),
            jobs,
            watcher: doc.watcher,
            log_tail: tail(&log_file, tail_lines),
            log_file,
            problem,
        }
    }
}

/// The systemd user unit for `jarvis sync` with this binary and home.
pub fn systemd_unit(binary: &Path, home: &Path) -> String {
    crate::jobs::systemd::unit(binary, home)
}
