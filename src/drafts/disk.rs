//! The only code in `drafts` that writes to the filesystem.
//!
//! Owns: every create, write, rename, create_dir, remove, copy and
//! set_permissions done for drafts — the draft files, `draft.json`,
//! `.versions/`, the deletion of a whole draft, a build's temporary
//! directory and the staged copy of a built PDF — and an optional
//! [`WriteLog`] that records the resolved path of each one before it
//! happens. Tests attach a log and drive every chat tool and web route that
//! writes, to prove each path lands inside the draft it names (or a build's
//! temporary directory); `tests/integration/tidy.rs` checks that no other
//! file in `src/drafts` writes directly, so the log cannot be bypassed
//! without a failing test.
//! Must not: decide what may be written (that is `resolve_in_draft`'s job,
//! done before any of these is called), or cost more than one atomic load
//! per write when no log is attached.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::DraftsError;

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    CreateDir,
    SetPermissions,
    /// A new file (a snapshot, a temporary file).
    CreateFile,
    /// A file's bytes.
    Write,
    /// A temporary file renamed over its final name.
    Rename,
    /// The destination of a copy.
    Copy,
    /// A folder and everything in it.
    RemoveAll,
    /// One file (a snapshot a failed save made no use of).
    Remove,
    /// A temporary directory (a build's).
    TempDir,
}

/// One recorded write: the operation and the path it touched, resolved
/// (links followed where the path exists, else through its folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteEvent {
    pub op: WriteOp,
    pub path: PathBuf,
}

/// A shared record of every write, for tests.
#[derive(Debug, Clone, Default)]
pub struct WriteLog(Arc<Mutex<Vec<WriteEvent>>>);

impl WriteLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything recorded so far, leaving the log empty.
    pub fn take(&self) -> Vec<WriteEvent> {
        std::mem::take(&mut *crate::lock::lock(&self.0))
    }

    fn push(&self, e: WriteEvent) {
        crate::lock::lock(&self.0).push(e);
    }
}

/// The drafts feature's writer. Clones share one log slot.
#[derive(Debug, Clone, Default)]
pub struct Disk {
    log: Arc<OnceLock<WriteLog>>,
}

/// `path` with links resolved. When the operation follows a link in the
/// last component (a copy's destination, permissions, a file's bytes) and
/// the path exists, the whole path is resolved, so a write through a
/// planted link shows where it really goes; otherwise (a create, rename or
/// removal acts on the link itself) only its folder is.
fn resolved(path: &Path, follows: bool) -> PathBuf {
    if follows {
        if let Ok(p) = std::fs::canonicalize(path) {
            return p;
        }
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

impl Disk {
    /// Record every later write in `log`. Only the first log attached
    /// counts; returns whether this one did.
    pub fn attach(&self, log: WriteLog) -> bool {
        self.log.set(log).is_ok()
    }

    fn record(&self, op: WriteOp, path: &Path) {
        if let Some(log) = self.log.get() {
            let follows = matches!(op, WriteOp::Write | WriteOp::Copy | WriteOp::SetPermissions);
            log.push(WriteEvent {
                op,
                path: resolved(path, follows),
            });
        }
    }

    /// A new folder (an existing one is an error the caller may accept).
    pub fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        self.record(WriteOp::CreateDir, path);
        std::fs::create_dir(path)
    }

    /// A folder and its missing parents, owner-only.
    pub fn create_private_dir_all(&self, path: &Path) -> Result<(), DraftsError> {
        self.record(WriteOp::CreateDir, path);
        std::fs::create_dir_all(path).map_err(|e| DraftsError::io("create", path, e))?;
        self.set_mode(path, 0o700)
    }

    /// Set a path's permission bits.
    pub fn set_mode(&self, path: &Path, mode: u32) -> Result<(), DraftsError> {
        use std::os::unix::fs::PermissionsExt;
        self.record(WriteOp::SetPermissions, path);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| DraftsError::io("set permissions on", path, e))
    }

    /// Write `bytes` to `path` atomically (temp file beside it, synced, then
    /// renamed over it), owner-only.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<(), DraftsError> {
        let dir = path
            .parent()
            .ok_or_else(|| DraftsError::io("write", path, std::io::Error::other("no parent folder")))?;
        self.record(WriteOp::CreateFile, &dir.join(".tmp-*"));
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(dir)
            .map_err(|e| DraftsError::io("create a temporary file in", dir, e))?;
        self.record(WriteOp::Write, tmp.path());
        tmp.write_all(bytes)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| DraftsError::io("write", path, e))?;
        self.record(WriteOp::Rename, path);
        tmp.persist(path)
            .map_err(|e| DraftsError::io("replace", path, e.error))?;
        Ok(())
    }

    /// A new file holding `bytes`, synced; never replaces anything (an
    /// existing name, link or not, is `AlreadyExists`). A file that could
    /// not be written whole (a full disk) is removed, not left half.
    pub fn create_new(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.record(WriteOp::CreateFile, path);
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        let written = f.write_all(bytes).and_then(|_| f.sync_all());
        if written.is_err() {
            drop(f);
            self.record(WriteOp::Remove, path);
            if let Err(e) = std::fs::remove_file(path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a file that was not written whole");
            }
        }
        written
    }

    /// Remove one file.
    pub fn remove_file(&self, path: &Path) -> Result<(), DraftsError> {
        self.record(WriteOp::Remove, path);
        std::fs::remove_file(path).map_err(|e| DraftsError::io("remove", path, e))
    }

    /// Copy a file to `to`.
    pub fn copy(&self, from: &Path, to: &Path) -> Result<(), DraftsError> {
        self.record(WriteOp::Copy, to);
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| DraftsError::io("copy", from, e))
    }

    /// Remove a folder and everything in it (links inside are removed, not
    /// followed).
    pub fn remove_dir_all(&self, path: &Path) -> Result<(), DraftsError> {
        self.record(WriteOp::RemoveAll, path);
        std::fs::remove_dir_all(path).map_err(|e| DraftsError::io("remove", path, e))
    }

    /// A fresh temporary directory `<tmp>/<prefix>XXXX`, removed on drop.
    pub fn temp_dir(&self, prefix: &str) -> Result<tempfile::TempDir, DraftsError> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(|e| DraftsError::io("create a temporary directory in", &std::env::temp_dir(), e))?;
        self.record(WriteOp::TempDir, dir.path());
        Ok(dir)
    }

    /// A temporary file `<tmp>/<prefix>XXXX<suffix>` holding `bytes`,
    /// removed on drop.
    pub fn temp_file(&self, prefix: &str, suffix: &str, bytes: &[u8]) -> Result<tempfile::NamedTempFile, DraftsError> {
        let mut file = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(suffix)
            .tempfile()
            .map_err(|e| DraftsError::io("create a temporary file in", &std::env::temp_dir(), e))?;
        self.record(WriteOp::Write, file.path());
        file.write_all(bytes)
            .and_then(|()| file.flush())
            .map_err(|e| DraftsError::io("write", file.path(), e))?;
        Ok(file)
    }

    /// Where [`Disk::temp_dir`] and [`Disk::temp_file`] put things.
    pub fn temp_root() -> PathBuf {
        resolved(&std::env::temp_dir(), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_recorded_at_its_resolved_path_only_once_a_log_is_attached() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
        let disk = Disk::default();
        disk.write_atomic(&t.path().join("link/a.md"), b"one").unwrap();
        let log = WriteLog::new();
        assert!(disk.clone().attach(log.clone()), "clones share the slot");
        assert!(!disk.attach(WriteLog::new()), "only the first log counts");
        disk.write_atomic(&t.path().join("link/a.md"), b"two").unwrap();
        let seen = log.take();
        let canon = std::fs::canonicalize(&real).unwrap();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen.iter().all(|e| e.path.starts_with(&canon)), "{seen:?}");
        assert_eq!(
            seen[2],
            WriteEvent {
                op: WriteOp::Rename,
                path: canon.join("a.md")
            }
        );
        assert!(log.take().is_empty());
        assert_eq!(std::fs::read(real.join("a.md")).unwrap(), b"two");
    }
}
