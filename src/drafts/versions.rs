//! `.versions/`: earlier contents of each draft file, so any write —
//! the human's save, an accepted agent hunk, a restore — can be undone
//! across reloads.
//!
//! Owns: `<draft>/.versions/<filename>/<millis>-<n>` snapshots, listing,
//! reading and restoring them (a restore snapshots the current text first,
//! so it is itself undoable).
//! Must not: build a path from anything not checked by
//! `resolve_in_draft` (file names) or [`valid_version`] (version ids).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::workspace::{Workspace, VERSIONS_DIR};
use super::{content_hash, DraftsError};

/// One snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionInfo {
    pub version: String,
    /// Milliseconds since the epoch when it was taken.
    pub saved_ms: u64,
    pub bytes: u64,
}

/// Whether `v` has the shape of a version id (`<digits>-<digits>`).
pub fn valid_version(v: &str) -> bool {
    let mut parts = v.split('-');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), None) => {
            (1..=20).contains(&a.len())
                && (1..=6).contains(&b.len())
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// A real directory (not a link) at `path`, created if missing.
fn own_dir(ws: &Workspace, path: &Path) -> Result<(), DraftsError> {
    match ws.disk().create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(DraftsError::io("create", path, e)),
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        _ => Err(DraftsError::io(
            "use",
            path,
            std::io::Error::other("not a plain folder (a link?) — remove it"),
        )),
    }
}

/// The snapshot folder of one file (validated via the containment policy).
fn file_versions_dir(ws: &Workspace, draft_id: &str, filename: &str) -> Result<PathBuf, DraftsError> {
    ws.resolve(draft_id, filename)?;
    let base = ws.draft_dir(draft_id)?.join(VERSIONS_DIR);
    Ok(base.join(filename))
}

/// Keep `bytes` as the newest snapshot of `filename`.
pub fn snapshot(ws: &Workspace, draft_id: &str, filename: &str, bytes: &[u8]) -> Result<String, DraftsError> {
    let dir = file_versions_dir(ws, draft_id, filename)?;
    if let Some(parent) = dir.parent() {
        own_dir(ws, parent)?;
    }
    own_dir(ws, &dir)?;
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    for n in 0..1000u32 {
        let version = format!("{ms:013}-{n}");
        let path = dir.join(&version);
        match ws.disk().create_new(&path, bytes) {
            Ok(()) => return Ok(version),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(DraftsError::io("create", &path, e)),
        }
    }
    Err(DraftsError::io(
        "snapshot",
        &dir,
        std::io::Error::other("too many snapshots in the same millisecond"),
    ))
}

/// Remove the snapshot `version` of `filename` (one a failed save took).
pub(crate) fn discard(ws: &Workspace, draft_id: &str, filename: &str, version: &str) -> Result<(), DraftsError> {
    let path = file_versions_dir(ws, draft_id, filename)?.join(version);
    ws.disk().remove_file(&path)
}

/// Snapshots of a file, newest first.
pub fn list_versions(ws: &Workspace, draft_id: &str, filename: &str) -> Result<Vec<VersionInfo>, DraftsError> {
    let dir = file_versions_dir(ws, draft_id, filename)?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(DraftsError::io("list", &dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DraftsError::io("list", &dir, e))?;
        let Some(version) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !valid_version(&version) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
        let saved_ms = version.split('-').next().and_then(|s| s.parse().ok()).unwrap_or(0);
        out.push(VersionInfo {
            version,
            saved_ms,
            bytes,
        });
    }
    out.sort_by(|a, b| {
        let key = |v: &VersionInfo| {
            let n: u64 = v.version.rsplit('-').next().and_then(|s| s.parse().ok()).unwrap_or(0);
            (v.saved_ms, n)
        };
        key(b).cmp(&key(a))
    });
    Ok(out)
}

/// The text of one snapshot.
pub fn read_version(ws: &Workspace, draft_id: &str, filename: &str, version: &str) -> Result<String, DraftsError> {
    let missing = || DraftsError::NoVersion {
        id: draft_id.into(),
        name: filename.into(),
        version: version.chars().take(40).collect(),
    };
    if !valid_version(version) {
        return Err(missing());
    }
    let path = file_versions_dir(ws, draft_id, filename)?.join(version);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => {}
        _ => return Err(missing()),
    }
    let bytes = std::fs::read(&path).map_err(|e| DraftsError::io("read", &path, e))?;
    String::from_utf8(bytes).map_err(|_| DraftsError::NotText { name: filename.into() })
}

/// Put a snapshot back, snapshotting the current text first. Returns the
/// file's new hash.
pub fn restore_version(ws: &Workspace, draft_id: &str, filename: &str, version: &str) -> Result<String, DraftsError> {
    restore_with_snapshot(ws, draft_id, filename, version, None).map(|(hash, _)| hash)
}

/// [`restore_version`], also returning the snapshot of the text it
/// replaced (None: the file already held that version) — the inverse an
/// undo of the restore puts back. With `expect_hash`, refuses (writing
/// nothing) when the file is no longer that text.
pub fn restore_with_snapshot(
    ws: &Workspace,
    draft_id: &str,
    filename: &str,
    version: &str,
    expect_hash: Option<&str>,
) -> Result<(String, Option<String>), DraftsError> {
    let text = read_version(ws, draft_id, filename, version)?;
    // save_with_snapshot snapshots whatever is there now before replacing it.
    let (_, snapshot) = ws.save_with_snapshot(draft_id, filename, &text, expect_hash)?;
    Ok((content_hash(text.as_bytes()), snapshot))
}
