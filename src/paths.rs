//! Locations under `JARVIS_HOME` (default `~/.jarvis`) and their permissions.
//!
//! Owns: deciding where Jarvis keeps its files, creating those directories on
//! demand with owner-only modes, and the atomic "write to a temp file, then
//! rename" helper every durable write goes through.
//! Must not: know what lives inside the files (that is each feature's job), or
//! ever delete anything.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Environment variable that moves the whole data directory. Tests always set
/// it to a temporary directory so no test can touch the real home.
pub const HOME_ENV: &str = "JARVIS_HOME";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathsError {
    /// Neither `JARVIS_HOME` nor a home directory is known.
    #[error("cannot find a home directory: set JARVIS_HOME to the directory Jarvis should use")]
    NoHome,
    /// A directory or file could not be created or written.
    #[error("cannot write {}: {}", path.display(), write_reason(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl PathsError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            PathsError::NoHome => ErrorKind::User,
            PathsError::Io { source, .. } => crate::error_kind::io_kind(source),
        }
    }
}

/// Why a write failed, and the fix: a full disk says so.
fn write_reason(e: &std::io::Error) -> String {
    if crate::error_kind::is_disk_full(e) {
        crate::error_kind::io_reason(e)
    } else {
        format!("{e} — check that the directory exists and is writable by you")
    }
}

/// The directories Jarvis owns. Holding one does not create anything: each
/// accessor that returns a directory creates it (with its mode) on first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JarvisHome {
    root: PathBuf,
}

/// A subdirectory of the home and the mode it is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// The knowledge base: fjall, tantivy and arroy. 0700 because it holds the
    /// full text of private notes.
    Rag,
    /// Daemon and job status files.
    State,
    /// Chat sessions (0700; files inside are 0600).
    Sessions,
    /// The user's editable copies of the shipped prompts.
    Prompts,
    /// `jarvis.log` and friends.
    Logs,
    /// The drafts sandbox, the only place the agent may write.
    Drafts,
    /// Native libraries and models unpacked from the binary.
    Runtime,
}

impl Dir {
    pub const ALL: [Dir; 7] = [
        Dir::Rag,
        Dir::State,
        Dir::Sessions,
        Dir::Prompts,
        Dir::Logs,
        Dir::Drafts,
        Dir::Runtime,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dir::Rag => "rag",
            Dir::State => "state",
            Dir::Sessions => "sessions",
            Dir::Prompts => "prompts",
            Dir::Logs => "logs",
            Dir::Drafts => "drafts",
            Dir::Runtime => "runtime",
        }
    }

    /// Everything is owner-only: the home holds private notes, sessions and
    /// possibly API keys, and nothing in it is meant for other accounts.
    pub fn mode(self) -> u32 {
        0o700
    }
}

impl JarvisHome {
    /// Resolve from `JARVIS_HOME`, else `~/.jarvis`.
    pub fn from_env() -> Result<Self, PathsError> {
        Self::resolve(std::env::var_os(HOME_ENV).map(PathBuf::from), dirs::home_dir())
    }

    /// Pure resolution, so tests can exercise it without touching the process
    /// environment.
    pub fn resolve(jarvis_home: Option<PathBuf>, user_home: Option<PathBuf>) -> Result<Self, PathsError> {
        match jarvis_home.filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => Ok(Self::at(expand_tilde(&p, user_home.as_deref()))),
            None => user_home.map(|h| Self::at(h.join(".jarvis"))).ok_or(PathsError::NoHome),
        }
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// Path of a subdirectory without creating it.
    pub fn path(&self, dir: Dir) -> PathBuf {
        self.root.join(dir.name())
    }

    /// Path of a subdirectory, created (with the home itself) if missing.
    pub fn ensure(&self, dir: Dir) -> Result<PathBuf, PathsError> {
        self.ensure_root()?;
        let p = self.path(dir);
        ensure_dir(&p, dir.mode())?;
        Ok(p)
    }

    pub fn ensure_root(&self) -> Result<(), PathsError> {
        ensure_dir(&self.root, 0o700)
    }
}

/// Create `path` (and parents) if missing and set its mode. An existing
/// directory gets its mode tightened too: the knowledge base was once found
/// world-readable, and this is the cheap place to keep that from recurring.
pub fn ensure_dir(path: &Path, mode: u32) -> Result<(), PathsError> {
    let io = |source| PathsError::Io {
        path: path.to_path_buf(),
        source,
    };
    fs::create_dir_all(path).map_err(io)?;
    let current = fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
    if current != mode {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(io)?;
    }
    Ok(())
}

/// Replace `path` atomically with `bytes`: write a temp file in the same
/// directory, fsync it, set `mode`, rename over the target, fsync the
/// directory. A crash leaves either the old file or the new one, never half.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), PathsError> {
    let io = |source| PathsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(io)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".jarvis-tmp-")
        .tempfile_in(&dir)
        .map_err(io)?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    // Make the rename itself durable.
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Expand a leading `~` or `~/` using the given home directory.
pub fn expand_tilde(p: &Path, user_home: Option<&Path>) -> PathBuf {
    let Some(home) = user_home else { return p.to_path_buf() };
    match p.to_str() {
        Some("~") => home.to_path_buf(),
        Some(s) if s.starts_with("~/") => home.join(&s[2..]),
        _ => p.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_prefers_jarvis_home_and_expands_tilde() {
        let h = JarvisHome::resolve(Some("~/jh".into()), Some("/u".into())).unwrap();
        assert_eq!(h.root(), Path::new("/u/jh"));
        let h = JarvisHome::resolve(None, Some("/u".into())).unwrap();
        assert_eq!(h.root(), Path::new("/u/.jarvis"));
        let h = JarvisHome::resolve(Some("".into()), Some("/u".into())).unwrap();
        assert_eq!(h.root(), Path::new("/u/.jarvis"));
        assert!(matches!(JarvisHome::resolve(None, None), Err(PathsError::NoHome)));
    }

    #[test]
    fn ensure_creates_dirs_owner_only() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path().join("home"));
        for d in Dir::ALL {
            let p = home.ensure(d).unwrap();
            let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.name());
        }
        let mode = fs::metadata(home.root()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn ensure_tightens_an_existing_loose_dir() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let rag = home.path(Dir::Rag);
        fs::create_dir_all(&rag).unwrap();
        fs::set_permissions(&rag, fs::Permissions::from_mode(0o755)).unwrap();
        home.ensure(Dir::Rag).unwrap();
        assert_eq!(fs::metadata(&rag).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn write_atomic_sets_mode_and_replaces() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("x.toml");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&f, b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        // No temp files left behind.
        let n = fs::read_dir(t.path()).unwrap().count();
        assert_eq!(n, 1);
    }
}
