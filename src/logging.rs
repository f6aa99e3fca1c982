//! The one place the tracing subscriber is set up.
//!
//! Library code logs through `tracing`; this sends warnings and errors (and
//! info from jarvis itself) to `$JARVIS_HOME/logs/jarvis.log`, so a caught
//! error always has somewhere to go. User-facing CLI messages are not logs:
//! the CLI writes those to stderr itself. Nothing is ever sent anywhere else
//! — Jarvis has no telemetry of any kind.
//!
//! Every log file is a [`RotatingFile`]: past [`MAX_LOG_BYTES`] it moves to
//! `NAME.1` (older ones to `.2`, `.3`; the oldest goes) and a fresh file
//! starts, so a long-lived service never fills the disk with logs. The
//! chat's own log (`chat.log`, written by the chat agent) uses the same.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer};

use crate::paths::{Dir, JarvisHome, PathsError};

/// Filter for the log file; `JARVIS_LOG` overrides it (EnvFilter syntax).
const DEFAULT_FILTER: &str = "warn,jarvis=info";

/// Install the global subscriber. `verbose` also mirrors logs to stderr.
/// Returns the log file path. Calling it twice is harmless (the second
/// install is ignored), which keeps in-process tests simple.
pub fn init(home: &JarvisHome, verbose: bool) -> Result<PathBuf, PathsError> {
    init_named(home, verbose, "jarvis.log")
}

/// [`init`] writing to `logs/<name>` (`jarvis sync` uses `sync.log`).
pub fn init_named(home: &JarvisHome, verbose: bool, name: &str) -> Result<PathBuf, PathsError> {
    let file = open_log(home, name)?;
    let path = file.path().to_path_buf();
    let filter = || EnvFilter::try_from_env("JARVIS_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let file_layer = fmt::layer()
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .with_filter(filter());
    let stderr_layer = verbose.then(|| {
        fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(EnvFilter::new("debug,ort=warn,tantivy=info,hyper=info"))
    });
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    Ok(path)
}

/// A log file past this size is rotated.
pub const MAX_LOG_BYTES: u64 = 5 * 1024 * 1024;
/// Rotated copies kept (`NAME.1` … `NAME.3`).
pub const KEEP_ROTATED: u32 = 3;

/// `logs/<name>` under `home`, opened for appending (0600), rotated at
/// [`MAX_LOG_BYTES`].
pub fn open_log(home: &JarvisHome, name: &str) -> Result<RotatingFile, PathsError> {
    let dir = home.ensure(Dir::Logs)?;
    let path = dir.join(name);
    RotatingFile::open(path.clone(), MAX_LOG_BYTES, KEEP_ROTATED).map_err(|source| PathsError::Io { path, source })
}

/// An append-only log file that rotates itself by size. Several processes
/// may append to the same log (a `jarvis kb …` beside `jarvis serve`):
/// before rotating, a writer whose file was already rotated away by another
/// process just reopens the new one, so nothing is rotated twice. Rotation
/// is best effort: if a rename fails, writing goes on in the same file
/// rather than losing lines.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    file: File,
    max_bytes: u64,
    keep: u32,
}

fn append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

impl RotatingFile {
    pub fn open(path: PathBuf, max_bytes: u64, keep: u32) -> std::io::Result<RotatingFile> {
        let file = append(&path)?;
        Ok(RotatingFile {
            path,
            file,
            max_bytes,
            keep,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn rotated(&self, n: u32) -> PathBuf {
        let mut name = self.path.as_os_str().to_os_string();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    /// Make room for `incoming` bytes.
    fn rotate_if_needed(&mut self, incoming: usize) -> std::io::Result<()> {
        let len = self.file.metadata()?.len();
        if len == 0 || len + incoming as u64 <= self.max_bytes {
            return Ok(());
        }
        let ours = self.file.metadata()?.ino();
        match std::fs::metadata(&self.path) {
            // Someone else rotated: write to the file now at the path.
            Ok(m) if m.ino() != ours => {
                self.file = append(&self.path)?;
                return self.rotate_if_needed(incoming);
            }
            Err(_) => {
                self.file = append(&self.path)?;
                return Ok(());
            }
            Ok(_) => {}
        }
        for n in (1..self.keep).rev() {
            let from = self.rotated(n);
            if from.exists() {
                let _ = std::fs::rename(&from, self.rotated(n + 1));
            }
        }
        if self.keep == 0 || std::fs::rename(&self.path, self.rotated(1)).is_ok() {
            if self.keep == 0 {
                let _ = std::fs::remove_file(&self.path);
            }
            self.file = append(&self.path)?;
        }
        Ok(())
    }
}

impl Write for RotatingFile {
    /// All of `buf` or none of it: a full disk can take part of a line,
    /// and the next line would then start in the middle of it, so a
    /// failed write is cut back off the file.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.rotate_if_needed(buf.len())?;
        let before = self.file.metadata()?.len();
        match self.file.write_all(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                if self.file.metadata().is_ok_and(|m| m.len() > before) {
                    let _ = self.file.set_len(before);
                }
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// The PDF worker child's subscriber: the same filter, written to stderr
/// without colours or timestamps. The parent reads the child's stderr and
/// re-logs each line into its own `jarvis.log` (the worker never touches
/// `$JARVIS_HOME` itself).
pub fn init_worker() {
    let filter = EnvFilter::try_from_env("JARVIS_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let _ = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_writer(std::io::stderr)
                .with_filter(filter),
        )
        .try_init();
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::RotatingFile;

    #[test]
    fn a_full_log_moves_to_dot_one_and_the_oldest_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.log");
        let mut f = RotatingFile::open(path.clone(), 100, 2).unwrap();
        for i in 0..10 {
            f.write_all(format!("{i:02} {}\n", "x".repeat(36)).as_bytes()).unwrap();
        }
        let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
        assert!(read(&path).starts_with("08 "), "{}", read(&path));
        assert!(read(&dir.path().join("chat.log.1")).starts_with("06 "));
        assert!(read(&dir.path().join("chat.log.2")).starts_with("04 "));
        assert!(!dir.path().join("chat.log.3").exists(), "only two copies are kept");
        for p in [path.clone(), dir.path().join("chat.log.1")] {
            assert!(std::fs::metadata(&p).unwrap().len() <= 100);
        }
    }

    #[test]
    fn a_writer_whose_file_another_process_rotated_follows_without_rotating_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jarvis.log");
        let mut a = RotatingFile::open(path.clone(), 100, 3).unwrap();
        let mut b = RotatingFile::open(path.clone(), 100, 3).unwrap();
        a.write_all(&[b'a'; 90]).unwrap();
        // b's next line does not fit: b rotates; a's file is now jarvis.log.1.
        b.write_all(&[b'b'; 20]).unwrap();
        // a's file is full too, but it was rotated away: a follows to the
        // new jarvis.log instead of rotating b's fresh one.
        a.write_all(&[b'c'; 20]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 40);
        assert!(!dir.path().join("jarvis.log.2").exists());
    }
}
