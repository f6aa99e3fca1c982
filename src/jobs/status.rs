//! The status file `$JARVIS_HOME/state/sync_status.json`: who owns the
//! schedule (pid, since) and, per job, the last run, last success, last
//! error, next run and duration.
//!
//! Owns: the file's shape ([`StatusDoc`]), reading it, and writing it
//! atomically (temp file + rename: a reader never sees half a file) after
//! every change. `kb sync-status` reads it; the digest catch-up reads its
//! own `last_success` back from it after a restart.
//! Must not: decide liveness by itself — a pid in the file is only a claim
//! ([`pid_alive`] checks it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::JobId;

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusDoc {
    /// The process running the schedule (the last one that started).
    #[serde(default)]
    pub owner: Option<OwnerInfo>,
    #[serde(default)]
    pub digest_enabled: bool,
    #[serde(default)]
    pub jobs: BTreeMap<String, JobStatus>,
    /// The vault watcher's last batch.
    #[serde(default)]
    pub watcher: Option<WatcherStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnerInfo {
    pub pid: u32,
    /// `sync` or `serve`.
    pub role: String,
    pub since: DateTime<Utc>,
}

/// One job's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobStatus {
    /// Registered under the configuration the owner started with.
    #[serde(default)]
    pub registered: bool,
    /// Why not, when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<String>,
    /// How it is triggered (`every 30 min + once at start`, `cron …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    #[serde(default)]
    pub running: bool,
    #[serde(default)]
    pub last_run: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_success: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_error: Option<ErrorRecord>,
    /// `ok`, `skipped`, `error`, `panicked`, `cancelled`.
    #[serde(default)]
    pub last_outcome: Option<String>,
    #[serde(default)]
    pub last_summary: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub next_run: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    pub at: DateTime<Utc>,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatcherStatus {
    /// Watched paths (the vault, the inbox).
    pub watching: Vec<String>,
    pub last_batch: Option<DateTime<Utc>>,
    /// Filesystem events folded into the last batch.
    pub last_batch_events: usize,
    pub batches: u64,
    /// Set when watching could not start (the periodic sweep still runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Read a status file. `Ok(None)` when there is none yet.
pub fn read(path: &Path) -> Result<Option<StatusDoc>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            format!(
                "{} is not a valid status file ({e}); the next job run rewrites it",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Whether a process with this pid exists (signal 0 probes without
/// sending anything; EPERM means it exists under another account). A
/// zombie (killed, not yet reaped) is not alive.
#[allow(unsafe_code)]
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 performs only the permission and existence check.
    let r = unsafe { libc::kill(pid, 0) };
    let exists = r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !is_zombie(pid)
}

fn is_zombie(pid: libc::pid_t) -> bool {
    // `/proc/<pid>/stat` is "pid (comm) S …"; comm may hold spaces or
    // parentheses, so the state is the first field after the last ')'.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// The in-memory copy, written through to the file on every change.
#[derive(Debug)]
pub struct StatusStore {
    path: PathBuf,
    doc: Mutex<StatusDoc>,
}

impl StatusStore {
    /// Start from what the file holds (history survives a restart); a
    /// damaged file is reported and replaced.
    pub fn new(path: PathBuf) -> Self {
        let doc = match read(&path) {
            Ok(d) => d.unwrap_or_default(),
            Err(e) => {
                tracing::warn!("{e}");
                StatusDoc::default()
            }
        };
        StatusStore {
            path,
            doc: Mutex::new(doc),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn snapshot(&self) -> StatusDoc {
        crate::lock::lock(&self.doc).clone()
    }

    pub fn job(&self, id: JobId) -> JobStatus {
        self.snapshot().jobs.get(id.as_str()).cloned().unwrap_or_default()
    }

    /// Change the document and write it. A write failure is logged (the
    /// in-memory copy stays right and the next change retries the write).
    pub fn update(&self, f: impl FnOnce(&mut StatusDoc)) {
        let bytes = {
            let mut doc = crate::lock::lock(&self.doc);
            f(&mut doc);
            serde_json::to_vec_pretty(&*doc)
        };
        let result = bytes
            .map_err(|e| e.to_string())
            .and_then(|b| crate::paths::write_atomic(&self.path, &b, 0o600).map_err(|e| e.to_string()));
        if let Err(e) = result {
            tracing::warn!(path = %self.path.display(), "cannot write the sync status file: {e}");
        }
    }

    pub fn update_job(&self, id: JobId, f: impl FnOnce(&mut JobStatus)) {
        self.update(|d| f(d.jobs.entry(id.as_str().to_string()).or_default()));
    }
}
