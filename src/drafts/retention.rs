//! Retention and reveal.
//!
//! Owns: finding drafts untouched for the retention window
//! ([`stale_drafts`]), removing drafts by id ([`prune_drafts`], skipping
//! `keep`; [`delete_draft`] for the human's explicit delete) — the one
//! deletion in the codebase, which takes a draft id, never a path, and
//! walks only the drafts root — and showing a draft in the file manager
//! ([`reveal`], fixed argv, no shell).
//! Must not: delete anything reached from a caller-supplied path, follow a
//! link out of the root, or run a shell.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::workspace::{valid_id, Workspace};
use super::DraftsError;
use crate::sandbox::{self, ChildSpec, Ending};

/// Newest modification time of anything directly in the draft folder
/// (files and `draft.json`; snapshots do not count as use).
fn last_touched(dir: &Path) -> Result<SystemTime, DraftsError> {
    let mut newest = std::fs::symlink_metadata(dir)
        .and_then(|m| m.modified())
        .map_err(|e| DraftsError::io("read", dir, e))?;
    for entry in std::fs::read_dir(dir).map_err(|e| DraftsError::io("list", dir, e))? {
        let entry = entry.map_err(|e| DraftsError::io("list", dir, e))?;
        if let Ok(m) = entry.metadata() {
            if m.is_file() {
                if let Ok(t) = m.modified() {
                    newest = newest.max(t);
                }
            }
        }
    }
    Ok(newest)
}

/// Drafts (not `keep`) whose newest file is older than `retention_days`
/// at `now`. `retention_days == 0` disables the sweep: nothing is stale.
pub fn stale_drafts(ws: &Workspace, now: SystemTime, retention_days: u32) -> Result<Vec<String>, DraftsError> {
    if retention_days == 0 {
        return Ok(Vec::new());
    }
    let window = Duration::from_secs(u64::from(retention_days) * 86_400);
    let mut out = Vec::new();
    for d in ws.list_drafts()? {
        if d.meta.keep {
            continue;
        }
        let dir = ws.draft_dir(&d.meta.id)?;
        let touched = last_touched(&dir)?;
        if now.duration_since(touched).is_ok_and(|age| age > window) {
            out.push(d.meta.id);
        }
    }
    out.sort();
    Ok(out)
}

/// Remove the drafts named by id, skipping any marked `keep` (checked
/// again here, not trusted from the caller). Returns the ids removed.
pub fn prune_drafts(ws: &Workspace, ids: &[String]) -> Result<Vec<String>, DraftsError> {
    let mut removed = Vec::new();
    for id in ids {
        if ws.meta(id)?.keep {
            tracing::info!(draft = %id, "retention: kept (marked keep)");
            continue;
        }
        remove(ws, id)?;
        removed.push(id.clone());
    }
    Ok(removed)
}

/// The human's explicit delete of one draft, `keep` or not.
pub fn delete_draft(ws: &Workspace, id: &str) -> Result<(), DraftsError> {
    ws.meta(id)?;
    remove(ws, id)
}

fn remove(ws: &Workspace, id: &str) -> Result<(), DraftsError> {
    if !valid_id(id) {
        return Err(DraftsError::BadId {
            id: id.chars().take(80).collect(),
        });
    }
    // draft_dir refuses a link in place of the folder; remove_dir_all does
    // not follow links inside it.
    let dir = ws.draft_dir(id)?;
    if dir.parent() != Some(ws.root()) {
        return Err(DraftsError::Escapes {
            id: id.into(),
            name: String::new(),
        });
    }
    ws.disk().remove_dir_all(&dir)?;
    tracing::info!(draft = %id, "draft removed");
    Ok(())
}

/// Show a draft (its folder) in the file manager: `xdg-open <folder>` on
/// Linux, `open -R <file>` on macOS. Fixed argv, no shell; the path is
/// built by the containment policy.
pub fn reveal(ws: &Workspace, draft_id: &str, filename: Option<&str>) -> Result<(), DraftsError> {
    let dir = ws.draft_dir(draft_id)?;
    let file = filename.map(|f| ws.resolve(draft_id, f)).transpose()?;
    let (program, target) = if cfg!(target_os = "macos") {
        ("open", file.unwrap_or_else(|| dir.clone()))
    } else {
        ("xdg-open", dir.clone())
    };
    let target = target.to_string_lossy().into_owned();
    let args: Vec<&str> = if cfg!(target_os = "macos") {
        vec!["-R", "--", &target]
    } else {
        vec![&target]
    };
    let out = sandbox::run_child(
        Path::new(program),
        &ChildSpec {
            args: &args,
            inherit: &["DISPLAY", "WAYLAND_DISPLAY", "XDG_*"],
            timeout: Duration::from_secs(15),
            leave_group_on_exit: true,
            ..ChildSpec::default()
        },
    )
    .map_err(|e| DraftsError::Reveal {
        path: dir.display().to_string(),
        detail: format!("{e} (is {program} installed?)"),
    })?;
    match out.ending {
        Ending::Exited { code: 0 } => Ok(()),
        other => Err(DraftsError::Reveal {
            path: dir.display().to_string(),
            detail: format!("{program} ended with {other}"),
        }),
    }
}
