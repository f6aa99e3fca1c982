//! The owner process: one long-lived `jarvis serve` or `jarvis sync` per
//! `$JARVIS_HOME` keeps the knowledge base open and runs `jarvis kb …`
//! commands for other processes over a Unix socket.
//!
//! Owns: the owner lock (`state/owner.lock`, held for the owner's life and
//! naming its pid and command line), the socket at `state/owner.sock`
//! (directory 0700, socket 0600: only this account can connect), the frame
//! protocol ([`protocol`]), the accept loop and per-connection sessions
//! ([`server`]), and the client side with stale-socket detection
//! ([`client`]).
//! Must not: parse a command line or render output. The edge hands the
//! server a [`server::Handler`] that does, so `kb` output is produced by
//! the same code in both modes.

pub mod client;
pub mod protocol;
pub mod server;

use std::path::PathBuf;

use crate::paths::{Dir, JarvisHome};
use crate::store::{Holder, LockError};

/// Where the owner listens.
pub fn socket_path(home: &JarvisHome) -> PathBuf {
    home.path(Dir::State).join("owner.sock")
}

/// The directory whose `owner.lock` says who the owner is.
pub fn lock_dir(home: &JarvisHome) -> PathBuf {
    home.path(Dir::State)
}

/// Whether a lock holder's recorded command line is a long-lived owner
/// (`jarvis serve` / `jarvis sync`, global flags allowed before it) rather
/// than a one-shot command worth waiting for.
pub fn is_owner_command(command: &str) -> bool {
    let mut words = command.split_whitespace().skip(1).filter(|w| !w.starts_with('-'));
    match words.next() {
        Some("serve") => true,
        // `jarvis sync run-job …` is a one-shot command.
        Some("sync") => words.next().is_none(),
        _ => false,
    }
}

/// Why the owner could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OwnerError {
    /// Another owner runs on this home.
    #[error("another Jarvis owner already runs on {home}: {holder} — use it (`jarvis kb …` commands go through it), or stop it first")]
    AlreadyRunning { home: PathBuf, holder: Holder },
    /// The owner lock could not be taken for another reason.
    #[error(transparent)]
    Lock(LockError),
    /// The socket could not be created, bound or accepted on.
    #[error("the owner socket {path}: {source} — check that {dir} is yours and writable")]
    Socket {
        path: PathBuf,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `$JARVIS_HOME/state` could not be created.
    #[error(transparent)]
    Paths(#[from] crate::paths::PathsError),
}

impl OwnerError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            OwnerError::AlreadyRunning { .. } => ErrorKind::Conflict,
            OwnerError::Lock(e) => e.kind(),
            OwnerError::Socket { source, .. } => crate::error_kind::io_kind(source),
            OwnerError::Paths(e) => e.kind(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_commands_are_recognised_past_global_flags() {
        assert!(is_owner_command("/usr/bin/jarvis sync"));
        assert!(is_owner_command("jarvis -v serve --port 1"));
        assert!(!is_owner_command("jarvis kb search sync"));
        assert!(!is_owner_command("jarvis sync run-job vault_refresh"));
        assert!(is_owner_command("jarvis -v sync"));
        assert!(!is_owner_command("jarvis"));
        assert!(!is_owner_command(""));
    }
}
