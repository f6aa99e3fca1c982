//! Recurring work inside the owner process (`jarvis sync`, `jarvis serve`):
//! the job table, the scheduler, the vault watcher, the PDF inbox and the
//! status file.
//!
//! Owns: the only use of the scheduler crate (tokio-cron-scheduler, in
//! [`scheduler`]); one file per job — [`vault_refresh`], [`pdf_scan`],
//! [`draft_gc`], [`digest`] (the digest job and its catch-up: the cron
//! slot, the misfire grace, the non-blocking lock and the provider probe;
//! the digest *body* is injected), [`memory_extract`] (the idle-session
//! memory pass, its body injected too), [`history_gc`] (the daily expiry
//! of the history's kept copies); the wrapper every run goes through
//! ([`runner`]: errors and panics are caught and recorded, one log line per
//! finish with the next run); the filesystem watcher ([`watcher`]); the
//! status file `state/sync_status.json` ([`status`]); and the systemd unit
//! text ([`systemd`]).
//! Must not: import `app` (the application composes a [`JobDeps`] and
//! hands it in), parse a command line or print, or block the async runtime
//! (every blocking body runs under `spawn_blocking`).

pub mod digest;
pub mod draft_gc;
pub mod history_gc;
pub mod memory_extract;
pub mod pdf_scan;
pub mod runner;
pub mod scheduler;
pub mod status;
pub mod systemd;
pub mod vault_refresh;
pub mod watcher;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::error_kind::ErrorKind;

pub use runner::Runner;

/// Every job the scheduler knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobId {
    VaultRefresh,
    PdfScan,
    DraftGc,
    Digest,
    DigestCatchup,
    MemoryExtract,
    HistoryGc,
}

impl JobId {
    pub const ALL: [JobId; 7] = [
        JobId::VaultRefresh,
        JobId::PdfScan,
        JobId::DraftGc,
        JobId::Digest,
        JobId::DigestCatchup,
        JobId::MemoryExtract,
        JobId::HistoryGc,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobId::VaultRefresh => "vault_refresh",
            JobId::PdfScan => "pdf_scan",
            JobId::DraftGc => "draft_gc",
            JobId::Digest => "digest",
            JobId::DigestCatchup => "digest_catchup",
            JobId::MemoryExtract => "memory_extract",
            JobId::HistoryGc => "history_gc",
        }
    }

    pub fn parse(s: &str) -> Option<JobId> {
        JobId::ALL.into_iter().find(|j| j.as_str() == s)
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one finished run did, in a line fit for the log and the status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobReport {
    pub summary: String,
    /// Nothing was done on purpose (another run holds the lock, nothing
    /// overdue, …); still a success.
    pub skipped: bool,
}

impl JobReport {
    pub fn done(summary: impl Into<String>) -> Self {
        JobReport {
            summary: summary.into(),
            skipped: false,
        }
    }
    pub fn skipped(summary: impl Into<String>) -> Self {
        JobReport {
            summary: summary.into(),
            skipped: true,
        }
    }
}

/// Why a job run failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The work itself failed; the message names the problem and the fix.
    #[error("{0}")]
    Failed(DepError),
    /// The job panicked (a bug); the scheduler and the other jobs go on.
    #[error("the job panicked: {0} — this is a bug in jarvis; the other jobs keep running")]
    Panicked(String),
    /// A shutdown or the caller stopped it.
    #[error("stopped")]
    Cancelled,
    /// No such job, or it is not registered under this configuration.
    #[error("{0}")]
    NotRegistered(String),
}

impl JobError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            JobError::Failed(e) => e.kind,
            JobError::Panicked(_) => ErrorKind::Internal,
            JobError::Cancelled => ErrorKind::Cancelled,
            JobError::NotRegistered(_) => ErrorKind::User,
        }
    }
}

impl From<DepError> for JobError {
    fn from(e: DepError) -> Self {
        if e.kind == ErrorKind::Cancelled {
            JobError::Cancelled
        } else {
            JobError::Failed(e)
        }
    }
}

/// A failure reported by a dependency the application provides: its
/// message (already naming the fix) and kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DepError {
    pub kind: ErrorKind,
    pub message: String,
}

impl DepError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        DepError {
            kind,
            message: message.into(),
        }
    }
}

/// A paper the inbox ingested (or found unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxPaper {
    pub title: String,
    pub authors: String,
    pub doi: Option<String>,
    /// Same bytes as stored: nothing was done (no model call).
    pub unchanged: bool,
    /// Changed bytes replaced the old entry in one commit.
    pub replaced: bool,
    pub warnings: Vec<String>,
}

/// What a vault refresh did, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultCounts {
    pub added: usize,
    pub updated: usize,
    pub deleted: usize,
    pub reclassified: usize,
    pub unchanged: usize,
    pub skipped: usize,
}

impl VaultCounts {
    pub fn changed(&self) -> usize {
        self.added + self.updated + self.deleted + self.reclassified
    }
}

impl std::fmt::Display for VaultCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} added, {} updated, {} deleted, {} re-classified, {} unchanged, {} skipped",
            self.added, self.updated, self.deleted, self.reclassified, self.unchanged, self.skipped
        )
    }
}

/// What a digest run produced (the body is another feature's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DigestOutcome {
    pub summary: String,
}

/// The work the jobs call, provided by the application. Every method may
/// block (they run under `spawn_blocking`) and must watch `cancel`.
pub trait JobDeps: Send + Sync + 'static {
    /// One incremental refresh of the configured vault.
    fn refresh_vault(&self, cancel: &Cancel) -> Result<VaultCounts, DepError>;
    /// The same refresh for only these changed paths (absolute, as the
    /// watcher reports them); `Ok(None)` when they cannot be refreshed
    /// alone and the whole vault must be swept instead.
    fn refresh_vault_paths(&self, paths: &[PathBuf], cancel: &Cancel) -> Result<Option<VaultCounts>, DepError>;
    /// Ingest one inbox PDF as a public full-text paper; the stored byte
    /// hash decides skip (unchanged) or replace.
    fn ingest_pdf(&self, path: &Path, cancel: &Cancel) -> Result<InboxPaper, DepError>;
    /// Remove drafts past the retention window; returns the ids removed.
    fn prune_drafts(&self, retention_days: u32) -> Result<Vec<String>, DepError>;
    /// The chat provider jobs use (inbox metadata, the digest), and whether it is local.
    fn provider(&self) -> ProviderInfo;
    /// Is the local model server up? (Never starts one.)
    fn probe_local_provider(&self) -> Result<(), DepError>;
    /// The digest body, when this build has one.
    fn digest(&self) -> Option<Arc<dyn DigestBody>>;
    /// When the digest pipeline last succeeded by its own record (a manual
    /// `run-digest` counts too), if it keeps one.
    fn digest_last_success(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        None
    }
    /// Drop the history's kept copies older than `history.keep_days`;
    /// returns how many events lost theirs, and the days in effect.
    fn expire_history(&self) -> Result<(usize, u32), DepError> {
        Ok((0, 0))
    }
    /// Read the idle chat sessions no pass has read and propose memory
    /// facts from them (never accepting one).
    fn extract_memories(&self, cancel: &Cancel) -> Result<MemoryPass, DepError> {
        let _ = cancel;
        Ok(MemoryPass::default())
    }
}

/// What one idle-session memory extraction pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryPass {
    /// Sessions read (each only ever once).
    pub sessions: usize,
    /// Facts proposed for review.
    pub proposed: usize,
    /// Private sessions left alone because the model is a cloud one.
    pub private_skipped: usize,
}

/// The provider a job uses, for the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderInfo {
    /// `provider:model`.
    pub spec: String,
    pub local: bool,
}

/// The digest pipeline, injected. Blocking; watches `cancel`.
pub trait DigestBody: Send + Sync {
    fn run(&self, cancel: &Cancel) -> Result<DigestOutcome, DepError>;
}

/// Settings the job table is built from (read from config by the app).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSettings {
    /// The vault root, when one is configured.
    pub vault_root: Option<PathBuf>,
    pub vault_every: Duration,
    pub pdf_watch_dir: Option<PathBuf>,
    pub pdf_every: Duration,
    pub drafts_retention_days: u32,
    pub drafts_gc_hour: u32,
    /// `None`: `[digest] enabled = false`.
    pub digest: Option<DigestSchedule>,
    pub catchup_every: Duration,
    /// How late a digest slot may still run (APScheduler's misfire grace).
    pub misfire_grace: Duration,
    /// How long an inbox file's size and mtime must hold still.
    pub stable_wait: Duration,
    /// Watch the vault and the inbox for changes.
    pub watch: bool,
    /// The watcher's debounce window.
    pub debounce: Duration,
    /// `$JARVIS_HOME/state/sync_status.json`.
    pub status_file: PathBuf,
    /// How often the idle-session memory extraction looks for sessions;
    /// `None`: `memory.idle_minutes = 0`.
    pub memory_every: Option<Duration>,
}

/// When the weekly digest runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestSchedule {
    /// `mon` … `sun`.
    pub day: String,
    pub hour: u32,
}

impl JobSettings {
    /// Defaults for a status file (tests and tools fill the rest).
    pub fn new(status_file: PathBuf) -> Self {
        JobSettings {
            vault_root: None,
            vault_every: Duration::from_secs(30 * 60),
            pdf_watch_dir: None,
            pdf_every: Duration::from_secs(30 * 60),
            drafts_retention_days: 30,
            drafts_gc_hour: 4,
            digest: None,
            catchup_every: Duration::from_secs(6 * 3600),
            misfire_grace: Duration::from_secs(3600),
            stable_wait: Duration::from_secs(2),
            watch: true,
            debounce: Duration::from_secs(2),
            status_file,
            memory_every: None,
        }
    }
}

/// Everything a job body gets.
#[derive(Clone)]
pub struct JobCtx {
    pub settings: Arc<JobSettings>,
    pub deps: Arc<dyn JobDeps>,
    pub status: Arc<status::StatusStore>,
    /// Held by whichever digest run (cron or catch-up) is in flight; the
    /// application hands in the lock its `run-digest` takes too.
    pub digest_lock: Arc<tokio::sync::Mutex<()>>,
    /// What the watcher saw that no refresh has covered yet.
    pub vault_changes: Arc<vault_refresh::Changes>,
}

impl JobCtx {
    pub fn new(settings: JobSettings, deps: Arc<dyn JobDeps>) -> Self {
        let status = Arc::new(status::StatusStore::new(settings.status_file.clone()));
        JobCtx {
            settings: Arc::new(settings),
            deps,
            status,
            digest_lock: Arc::default(),
            vault_changes: Arc::default(),
        }
    }
}

/// How a job is triggered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// Every `every`, and once right after start when `at_start`.
    Every { every: Duration, at_start: bool },
    /// A 6-field cron expression (seconds first), in UTC when `utc`, else
    /// in local time.
    Cron { expr: String, utc: bool },
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::Every { every, at_start } => {
                write!(f, "every {}", human_duration(*every))?;
                if *at_start {
                    write!(f, " + once at start")?;
                }
                Ok(())
            }
            Trigger::Cron { expr, utc } => write!(f, "cron `{expr}` {}", if *utc { "UTC" } else { "local time" }),
        }
    }
}

/// A human duration: `30 min`, `6 h`, `90 s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 && s.is_multiple_of(3600) {
        format!("{} h", s / 3600)
    } else if s >= 60 && s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else if s >= 1 {
        format!("{s} s")
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// One row of the job table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    pub id: JobId,
    pub trigger: Trigger,
}

/// The cron day-of-week field for `mon` … `sun`.
fn cron_day(day: &str) -> &'static str {
    match day {
        "tue" => "TUE",
        "wed" => "WED",
        "thu" => "THU",
        "fri" => "FRI",
        "sat" => "SAT",
        "sun" => "SUN",
        _ => "MON",
    }
}

/// The digest's cron expression.
pub fn digest_cron(d: &DigestSchedule) -> String {
    format!("0 0 {} * * {}", d.hour.min(23), cron_day(&d.day))
}

/// The job table for these settings: a job whose condition is off is not
/// registered at all, so an empty schedule reads as the setting it is.
pub fn plan(s: &JobSettings) -> Vec<JobSpec> {
    let mut out = vec![JobSpec {
        id: JobId::VaultRefresh,
        trigger: Trigger::Every {
            every: s.vault_every,
            at_start: true,
        },
    }];
    if s.pdf_watch_dir.is_some() {
        out.push(JobSpec {
            id: JobId::PdfScan,
            trigger: Trigger::Every {
                every: s.pdf_every,
                at_start: true,
            },
        });
    }
    if s.drafts_retention_days > 0 {
        out.push(JobSpec {
            id: JobId::DraftGc,
            trigger: Trigger::Cron {
                expr: format!("0 0 {} * * *", s.drafts_gc_hour.min(23)),
                utc: false,
            },
        });
    }
    if let Some(d) = &s.digest {
        out.push(JobSpec {
            id: JobId::Digest,
            // The digest pipeline defines its slot in UTC
            // (`digest::schedule`); the schedule agrees with it.
            trigger: Trigger::Cron {
                expr: digest_cron(d),
                utc: true,
            },
        });
        out.push(JobSpec {
            id: JobId::DigestCatchup,
            trigger: Trigger::Every {
                every: s.catchup_every,
                at_start: true,
            },
        });
    }
    if let Some(every) = s.memory_every {
        out.push(JobSpec {
            id: JobId::MemoryExtract,
            // Not at start: a session is read only after it has been idle.
            trigger: Trigger::Every { every, at_start: false },
        });
    }
    out.push(JobSpec {
        id: JobId::HistoryGc,
        // Not at start: opening the store already dropped what was due.
        trigger: Trigger::Every {
            every: Duration::from_secs(24 * 3600),
            at_start: false,
        },
    });
    out
}

/// Why a job is not registered under these settings (for `run-job` and
/// `sync-status`), or `None` when it is.
pub fn unregistered_reason(id: JobId, s: &JobSettings) -> Option<String> {
    match id {
        JobId::VaultRefresh => None,
        JobId::PdfScan if s.pdf_watch_dir.is_none() => Some("disabled (`sync.pdf_watch_dir` is not set)".into()),
        JobId::DraftGc if s.drafts_retention_days == 0 => Some("disabled (`drafts.retention_days` = 0)".into()),
        JobId::Digest | JobId::DigestCatchup if s.digest.is_none() => {
            Some("disabled ([digest] enabled = false)".into())
        }
        JobId::MemoryExtract if s.memory_every.is_none() => Some("disabled (`memory.idle_minutes` = 0)".into()),
        _ => None,
    }
}

/// Run one job's body (no bookkeeping: see [`Runner::run`]).
pub async fn run_body(id: JobId, ctx: &JobCtx, cancel: Cancel, cause: runner::Cause) -> Result<JobReport, JobError> {
    match id {
        JobId::VaultRefresh => vault_refresh::run(ctx, cancel, cause).await,
        JobId::PdfScan => pdf_scan::run(ctx, cancel).await,
        JobId::DraftGc => draft_gc::run(ctx, cancel).await,
        JobId::Digest => digest::run(ctx, cancel).await,
        JobId::DigestCatchup => digest::run_catchup(ctx, cancel).await,
        JobId::MemoryExtract => memory_extract::run(ctx, cancel).await,
        JobId::HistoryGc => history_gc::run(ctx, cancel).await,
    }
}

/// Run a blocking dependency call off the async runtime.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, DepError> + Send + 'static,
) -> Result<T, JobError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(JobError::from),
        Err(e) if e.is_panic() => Err(JobError::Panicked(panic_message(e.into_panic()))),
        Err(_) => Err(JobError::Cancelled),
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

#[cfg(test)]
mod tests;
