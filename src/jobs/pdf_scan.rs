//! `pdf_scan`: the PDF inbox at `sync.pdf_watch_dir`, every
//! `sync.pdf_watch_minutes` and once at start (and soon after the watcher
//! sees a PDF arrive).
//!
//! An inbox, not a mirror: removing a file never deletes its entry. Each
//! scan lists the folder (skipping dotfiles, `~$` lock files, `.icloud`
//! placeholders and partial downloads), leaves any file whose size or
//! mtime changes over a short wait for the next cycle, and ingests the
//! rest one by one as full-text papers — public, or private when the PDF
//! is in one of the vault's private folders (the vault's one rule, applied
//! by ingest whatever adds the PDF). The stored byte hash
//! decides: unchanged → skipped at no model cost; changed (new highlights
//! saved) → replaced in one commit. One failing PDF is logged and the scan
//! goes on.
//! Must not: ingest by itself (the application's `ingest_pdf` does, with
//! the isolated PDF worker), delete or move anything in the inbox.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{blocking, DepError, JobCtx, JobDeps, JobError, JobReport};
use crate::cancel::Cancel;
use crate::error_kind::ErrorKind;

/// Names a scan never picks up: hidden files, Office/LibreOffice lock
/// files, iCloud placeholders, downloads still in progress.
pub fn is_candidate(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    !(name.starts_with('.')
        || name.starts_with("~$")
        || lower.ends_with(".icloud")
        || lower.ends_with(".crdownload")
        || lower.ends_with(".part")
        || lower.ends_with(".partial")
        || lower.ends_with(".download"))
        && lower.ends_with(".pdf")
}

/// The inbox's candidate files, sorted by name.
pub fn list_inbox(dir: &Path) -> Result<Vec<PathBuf>, DepError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        DepError::new(
            crate::error_kind::io_kind(&e),
            format!(
                "cannot list the PDF inbox {}: {e} — check `sync.pdf_watch_dir`",
                dir.display()
            ),
        )
    })?;
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .filter(|e| is_candidate(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    Ok(out)
}

fn stamp(p: &Path) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(p).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Split `files` into those whose size and mtime held still over `wait`
/// and those still changing (or vanished). One wait for the whole batch,
/// not one per file.
pub fn settled(files: Vec<PathBuf>, wait: Duration, cancel: &Cancel) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let before: Vec<_> = files.iter().map(|p| stamp(p)).collect();
    if !files.is_empty() && !wait.is_zero() {
        let deadline = std::time::Instant::now() + wait;
        while std::time::Instant::now() < deadline && !cancel.is_cancelled() {
            std::thread::sleep(Duration::from_millis(50).min(wait));
        }
    }
    let mut stable = Vec::new();
    let mut changing = Vec::new();
    for (p, b) in files.into_iter().zip(before) {
        match (b, stamp(&p)) {
            (Some(b), Some(a)) if a == b && a.0 > 0 => stable.push(p),
            _ => changing.push(p),
        }
    }
    (stable, changing)
}

/// What one scan did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    pub added: Vec<String>,
    pub replaced: Vec<String>,
    pub unchanged: usize,
    /// Still being written: left for the next cycle.
    pub changing: Vec<String>,
    /// (file name, reason).
    pub failed: Vec<(String, String)>,
}

impl std::fmt::Display for ScanReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} added, {} replaced, {} unchanged, {} still changing, {} failed",
            self.added.len(),
            self.replaced.len(),
            self.unchanged,
            self.changing.len(),
            self.failed.len()
        )
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// One scan of `dir` (blocking).
pub fn scan(deps: &dyn JobDeps, dir: &Path, wait: Duration, cancel: &Cancel) -> Result<ScanReport, DepError> {
    if !dir.is_dir() {
        return Err(DepError::new(
            ErrorKind::User,
            format!(
                "the PDF inbox {} does not exist — create it or fix `sync.pdf_watch_dir`",
                dir.display()
            ),
        ));
    }
    let (stable, changing) = settled(list_inbox(dir)?, wait, cancel);
    let mut report = ScanReport {
        changing: changing.iter().map(|p| file_name(p)).collect(),
        ..ScanReport::default()
    };
    for name in &report.changing {
        tracing::info!(file = %name, "inbox: still being written; left for the next scan");
    }
    let provider = deps.provider();
    let mut said_provider = false;
    for path in stable {
        if cancel.is_cancelled() {
            return Err(DepError::new(ErrorKind::Cancelled, "stopped"));
        }
        let name = file_name(&path);
        match deps.ingest_pdf(&path, cancel) {
            Ok(p) if p.unchanged => report.unchanged += 1,
            Ok(p) => {
                if !said_provider {
                    // Metadata inference runs on every ingested PDF: say once
                    // per scan which model does it.
                    tracing::info!(provider = %provider.spec, "inbox: metadata inference uses {}", provider.spec);
                    said_provider = true;
                }
                for w in &p.warnings {
                    tracing::warn!(file = %name, "inbox: {w}");
                }
                tracing::info!(
                    title = %p.title,
                    authors = %p.authors,
                    doi = p.doi.as_deref().unwrap_or(""),
                    file = %name,
                    "inbox: {} {:?} — {} (doi {}) from {name}",
                    if p.replaced { "replaced" } else { "added" },
                    p.title,
                    if p.authors.is_empty() { "authors unknown" } else { p.authors.as_str() },
                    p.doi.as_deref().unwrap_or("none"),
                );
                if p.replaced {
                    report.replaced.push(name);
                } else {
                    report.added.push(name);
                }
            }
            Err(e) if e.kind == ErrorKind::Cancelled || cancel.is_cancelled() => {
                return Err(DepError::new(ErrorKind::Cancelled, "stopped"));
            }
            Err(e) => {
                tracing::error!(file = %name, "inbox: {name} failed: {e}; the scan goes on");
                report.failed.push((name, e.message));
            }
        }
    }
    Ok(report)
}

pub async fn run(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    let Some(dir) = ctx.settings.pdf_watch_dir.clone() else {
        return Ok(JobReport::skipped("no inbox (`sync.pdf_watch_dir` is not set)"));
    };
    let deps = ctx.deps.clone();
    let wait = ctx.settings.stable_wait;
    let report = blocking(move || scan(&*deps, &dir, wait, &cancel)).await?;
    if report.failed.is_empty() {
        Ok(JobReport::done(report.to_string()))
    } else {
        // The scan went through every file; the run still reports the
        // failures so the status shows them.
        let names: Vec<String> = report.failed.iter().map(|(n, e)| format!("{n}: {e}")).collect();
        Err(JobError::Failed(DepError::new(
            ErrorKind::User,
            format!("{report} — {}", names.join("; ")),
        )))
    }
}
