//! Instant updates: a filesystem watcher on the vault (and the PDF inbox)
//! that feeds changes into the same incremental refresh the periodic
//! sweep runs.
//!
//! Events are debounced (`JobSettings::debounce`, 2 s) and batched: every
//! event of a window, and every window that arrives while a refresh runs,
//! become one follow-up refresh — a burst of 1,000 saved notes is one or
//! two refreshes, not 1,000. The refresh covers only the paths the events
//! named (see [`super::vault_refresh`]); an overflow or rescan flag makes
//! it sweep the whole vault. The refresh itself decides what changed
//! (content hash with an mtime + size pre-check), so an editor's atomic
//! save (write a temp file, rename it over the note), a move into
//! `private/` (re-classified at once), and a deletion all come out right
//! whatever events the editor produced. `.obsidian/` and other dot-folders
//! are ignored. The periodic sweep stays the safety net for what a watcher
//! can miss (network drives, watch-limit overflow).
//! Must not: index anything itself, or poll.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, RecommendedCache};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::runner::{Cause, Runner};
use super::status::WatcherStatus;
use super::{JobId, JobSettings};

/// What one debounced window touched.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Batch {
    /// Relevant vault events.
    vault: usize,
    /// The vault paths they named.
    vault_paths: BTreeSet<PathBuf>,
    /// The vault's events cannot be trusted to be complete (an overflow,
    /// a rescan flag, a watcher error): sweep the whole vault.
    sweep: bool,
    inbox: usize,
}

impl Batch {
    fn fold(&mut self, more: Batch) {
        self.vault += more.vault;
        self.vault_paths.extend(more.vault_paths);
        self.sweep |= more.sweep;
        self.inbox += more.inbox;
    }
}

/// Whether a changed path matters to the vault refresh: nothing under a
/// dot-folder (`.obsidian/`, `.trash/`) or a dotfile (editors' temp files);
/// notes (`.md`), and anything that is a folder or no longer there (a
/// folder moved or deleted as a whole, whatever its name looks like).
pub fn vault_relevant(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    if rel.as_os_str().is_empty()
        || rel
            .components()
            .any(|c| matches!(c, Component::Normal(n) if n.to_string_lossy().starts_with('.')))
    {
        return false;
    }
    match rel.extension() {
        Some(e) if e.eq_ignore_ascii_case("md") => true,
        // An attachment saved is not a note; a folder, or a path that is
        // gone (it may have been a folder of notes), is.
        _ => std::fs::metadata(path).map_or(true, |m| m.is_dir()),
    }
}

fn inbox_relevant(dir: &Path, path: &Path) -> bool {
    path.parent() == Some(dir)
        && path
            .file_name()
            .is_some_and(|n| super::pdf_scan::is_candidate(&n.to_string_lossy()))
}

/// A started watcher; dropping it stops watching.
pub struct Watching {
    _debouncer: Box<dyn std::any::Any + Send + Sync>,
    pub paths: Vec<PathBuf>,
}

type Debouncer = notify_debouncer_full::Debouncer<notify::RecommendedWatcher, RecommendedCache>;

/// The folders to watch, canonical: events arrive with resolved paths.
#[derive(Debug, Clone)]
struct Roots {
    vault: Option<PathBuf>,
    inbox: Option<PathBuf>,
}

/// Start watching the vault (and the inbox). A watcher that cannot start
/// is logged and recorded; the periodic jobs still run.
pub fn start(runner: Arc<Runner>, rt: tokio::runtime::Handle) -> Option<Watching> {
    let settings = Arc::clone(&runner.ctx().settings);
    if !settings.watch {
        return None;
    }
    let roots = canonical_roots(&settings)?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Batch>();
    let mut debouncer = start_debouncer(&runner, settings.debounce, roots.clone(), tx)?;
    let paths = watch_roots(&runner, &mut debouncer, &roots);
    if paths.is_empty() {
        return None;
    }
    announce(&runner, &paths, settings.debounce);
    rt.spawn(refresh_on_changes(Arc::clone(&runner), rx, settings.debounce));
    Some(Watching {
        _debouncer: Box::new(debouncer),
        paths,
    })
}

/// The vault and the inbox that exist, resolved; `None` when neither does.
fn canonical_roots(settings: &JobSettings) -> Option<Roots> {
    let vault = settings.vault_root.as_ref().and_then(|p| p.canonicalize().ok());
    let inbox = settings.pdf_watch_dir.as_ref().and_then(|p| p.canonicalize().ok());
    if vault.is_none() && inbox.is_none() {
        return None;
    }
    Some(Roots { vault, inbox })
}

/// The debouncer, sending each window that touched something relevant as
/// one [`Batch`]. Failing to start is recorded, not fatal.
fn start_debouncer(runner: &Runner, debounce: Duration, roots: Roots, tx: UnboundedSender<Batch>) -> Option<Debouncer> {
    let handler = move |res: DebounceEventResult| {
        let b = batch_of(res, &roots);
        if b.vault > 0 || b.inbox > 0 {
            let _ = tx.send(b);
        }
    };
    match new_debouncer(debounce, None, handler) {
        Ok(d) => Some(d),
        Err(e) => {
            record_error(runner, format!("cannot start the file watcher: {e}"));
            None
        }
    }
}

/// What one debounced window touched. A rescan flag or a watcher error
/// means events were lost: the vault is then swept whole.
fn batch_of(res: DebounceEventResult, roots: &Roots) -> Batch {
    let mut b = Batch::default();
    match res {
        Ok(events) => {
            for ev in &events {
                if ev.need_rescan() {
                    b.vault += 1;
                    b.sweep = true;
                    b.inbox += 1;
                    continue;
                }
                // Reads (the refresh's own) are not changes: counting
                // them would make every refresh trigger the next.
                if matches!(ev.kind, EventKind::Access(_)) {
                    continue;
                }
                for p in &ev.paths {
                    if roots.vault.as_deref().is_some_and(|root| vault_relevant(root, p)) {
                        b.vault += 1;
                        b.vault_paths.insert(p.clone());
                    }
                    if roots.inbox.as_deref().is_some_and(|dir| inbox_relevant(dir, p)) {
                        b.inbox += 1;
                    }
                }
            }
        }
        Err(errors) => {
            for e in &errors {
                tracing::warn!(error = %e, "vault watcher: {e}; the periodic refresh covers what was missed");
            }
            // Something was lost: sweep to be sure.
            b.vault += 1;
            b.sweep = true;
        }
    }
    b
}

/// Watch the vault recursively and the inbox (its files only), each once;
/// the paths actually watched. A path that cannot be watched is recorded
/// and left to the periodic refresh.
fn watch_roots(runner: &Runner, debouncer: &mut Debouncer, roots: &Roots) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (p, mode) in [
        (&roots.vault, RecursiveMode::Recursive),
        (&roots.inbox, RecursiveMode::NonRecursive),
    ] {
        let Some(p) = p else { continue };
        if paths.contains(p) {
            continue;
        }
        match debouncer.watch(p, mode) {
            Ok(()) => paths.push(p.clone()),
            Err(e) => record_error(
                runner,
                format!(
                    "cannot watch {}: {e} — changes are picked up by the periodic refresh instead (raise fs.inotify.max_user_watches if the vault is large)",
                    p.display()
                ),
            ),
        }
    }
    paths
}

/// Log what is watched and show it in the status.
fn announce(runner: &Runner, paths: &[PathBuf], debounce: Duration) {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    tracing::info!(paths = ?shown, "watching for changes (debounce {})", super::human_duration(debounce));
    runner.ctx().status.update(|d| {
        d.watcher = Some(WatcherStatus {
            watching: shown.clone(),
            ..WatcherStatus::default()
        })
    });
}

/// Until shutdown: each batch, with the windows that follow it closely,
/// becomes one inbox scan and one vault refresh.
async fn refresh_on_changes(r: Arc<Runner>, mut rx: UnboundedReceiver<Batch>, debounce: Duration) {
    let stop = r.shutdown().clone();
    loop {
        let first = tokio::select! {
            b = rx.recv() => b,
            _ = stop.cancelled() => None,
        };
        let Some(mut batch) = first else { break };
        gather_burst(&mut batch, &mut rx, debounce).await;
        record_batch(&r, &batch);
        if batch.inbox > 0 {
            spawn_inbox_scan(&r);
        }
        if batch.vault > 0 {
            refresh_vault(&r, batch).await;
        }
    }
}

/// The debouncer releases each path once it has been quiet, so a burst
/// written over a second or two arrives as several windows: gather them
/// until none has come for half a debounce.
async fn gather_burst(batch: &mut Batch, rx: &mut UnboundedReceiver<Batch>, debounce: Duration) {
    let settle = debounce / 2;
    while let Ok(Some(more)) = tokio::time::timeout(settle, rx.recv()).await {
        batch.fold(more);
    }
}

fn record_batch(r: &Runner, batch: &Batch) {
    r.ctx().status.update(|d| {
        let w = d.watcher.get_or_insert_with(WatcherStatus::default);
        w.last_batch = Some(Utc::now());
        w.last_batch_events = batch.vault + batch.inbox;
        w.batches += 1;
    });
}

/// The inbox scan runs beside the vault refresh, not before it.
fn spawn_inbox_scan(r: &Arc<Runner>) {
    let r2 = Arc::clone(r);
    tokio::spawn(async move {
        let ran = r2.run(JobId::PdfScan, Cause::Watcher, true).await;
        let next = r2.ctx().status.job(JobId::PdfScan).next_run;
        r2.finished(JobId::PdfScan, &ran, next);
    });
}

/// Refresh the paths the batch named (or the whole vault, when it must be
/// swept), waiting for it: the next batch then folds everything that
/// arrived meanwhile into one follow-up refresh.
async fn refresh_vault(r: &Arc<Runner>, mut batch: Batch) {
    tracing::info!(
        events = batch.vault,
        paths = batch.vault_paths.len(),
        sweep = batch.sweep,
        "vault watcher: {} change(s) to {} path(s); refreshing {}",
        batch.vault,
        batch.vault_paths.len(),
        if batch.sweep { "the whole vault" } else { "those paths" }
    );
    let changes = &r.ctx().vault_changes;
    changes.add(std::mem::take(&mut batch.vault_paths));
    if batch.sweep {
        changes.need_sweep();
    }
    let ran = r.run(JobId::VaultRefresh, Cause::Watcher, true).await;
    let next = r.ctx().status.job(JobId::VaultRefresh).next_run;
    r.finished(JobId::VaultRefresh, &ran, next);
}

fn record_error(runner: &Runner, message: String) {
    tracing::warn!("{message}");
    runner.ctx().status.update(|d| {
        d.watcher.get_or_insert_with(WatcherStatus::default).error = Some(message);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_notes_and_folders_outside_dot_folders_matter() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join("2024.archive")).unwrap();
        std::fs::write(root.join("img.png"), b"png").unwrap();
        let at = |rel: &str| root.join(rel);
        assert!(vault_relevant(root, &at("a.md")));
        assert!(vault_relevant(root, &at("private/b.MD")));
        assert!(
            vault_relevant(root, &at("projects")),
            "a folder moved or deleted as a whole"
        );
        assert!(
            vault_relevant(root, &at("2024.archive")),
            "a folder, though its name has a dot"
        );
        assert!(
            vault_relevant(root, &at("old.v1")),
            "gone: it may have been a folder of notes"
        );
        assert!(!vault_relevant(root, &at(".obsidian/workspace.json")));
        assert!(!vault_relevant(root, &at(".obsidian/plugins/x/main.md")));
        assert!(!vault_relevant(root, &at("notes/.a.md.tmp")));
        assert!(!vault_relevant(root, &at("img.png")), "an attachment is not a note");
        assert!(!vault_relevant(root, Path::new("/elsewhere/a.md")));
        assert!(!vault_relevant(root, root));
    }

    #[test]
    fn a_window_counts_notes_and_inbox_files_and_sweeps_when_events_were_lost() {
        use notify::event::{AccessKind, CreateKind, Flag, ModifyKind};
        use notify_debouncer_full::DebouncedEvent;

        let t = tempfile::tempdir().unwrap();
        let (vault, inbox) = (t.path().join("vault"), t.path().join("inbox"));
        let roots = Roots {
            vault: Some(vault.clone()),
            inbox: Some(inbox.clone()),
        };
        let ev = |kind: EventKind, p: PathBuf| {
            DebouncedEvent::new(notify::Event::new(kind).add_path(p), std::time::Instant::now())
        };
        let window = vec![
            ev(EventKind::Create(CreateKind::File), vault.join("a.md")),
            ev(EventKind::Access(AccessKind::Any), vault.join("b.md")),
            ev(EventKind::Modify(ModifyKind::Any), vault.join(".obsidian/app.json")),
            ev(EventKind::Create(CreateKind::File), inbox.join("paper.pdf")),
            ev(EventKind::Create(CreateKind::File), inbox.join("paper.pdf.part")),
        ];
        let expected = Batch {
            vault: 1,
            vault_paths: BTreeSet::from([vault.join("a.md")]),
            sweep: false,
            inbox: 1,
        };
        assert_eq!(
            batch_of(Ok(window), &roots),
            expected,
            "reads, dot-folders and partial downloads are not changes"
        );

        let rescan = DebouncedEvent::new(
            notify::Event::new(EventKind::Other).set_flag(Flag::Rescan),
            std::time::Instant::now(),
        );
        let b = batch_of(Ok(vec![rescan]), &roots);
        assert!(
            b.sweep && b.vault == 1 && b.inbox == 1,
            "a rescan flag sweeps the vault and scans the inbox"
        );

        let b = batch_of(Err(vec![notify::Error::generic("queue overflow")]), &roots);
        assert!(
            b.sweep && b.vault == 1 && b.inbox == 0,
            "a watcher error sweeps the vault"
        );
    }
}
