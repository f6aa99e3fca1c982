//! One owner per data directory.
//!
//! The owner holds an exclusive `flock` on `owner.lock` for as long as it
//! runs and writes its pid and command line into the file, so a second
//! process can say exactly who holds the directory. The kernel drops the
//! lock when the holder exits or is killed, so a stale file never blocks.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Who holds the directory, as recorded by the holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u32>,
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "pid {pid} (`{}`)", self.command),
            None => write!(f, "another process"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    #[error("the knowledge base at {dir} is in use by {holder} — let it finish or stop it, then try again")]
    Held { dir: PathBuf, holder: Holder },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            LockError::Held { .. } => ErrorKind::Conflict,
            LockError::Io { source, .. } => crate::error_kind::io_kind(source),
        }
    }
}

/// Held for the owner's lifetime; dropping it releases the directory.
#[derive(Debug)]
pub struct OwnerLock {
    _file: File,
    path: PathBuf,
}

impl OwnerLock {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub fn acquire(dir: &Path) -> Result<OwnerLock, LockError> {
    let path = dir.join("owner.lock");
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(LockError::Held {
                dir: dir.to_path_buf(),
                holder: parse_holder(&text),
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let record = format!("{}\n{}\n", std::process::id(), command);
    file.set_len(0).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(record.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(OwnerLock { _file: file, path })
}

fn parse_holder(text: &str) -> Holder {
    let mut lines = text.lines();
    let pid = lines.next().and_then(|l| l.trim().parse().ok());
    let command = lines.next().unwrap_or("").to_string();
    Holder { pid, command }
}
