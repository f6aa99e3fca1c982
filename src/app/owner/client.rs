//! The client's side of the owner socket: find a live owner, or decide
//! there is none.
//!
//! A socket file proves nothing — an owner killed with SIGKILL leaves it
//! behind. A connection that is refused is checked against the owner lock:
//! if the lock can be taken, the owner is dead, the socket is removed and
//! the caller goes direct; if it is held, the owner is alive but not
//! listening (starting up), so this retries briefly. A stale socket is
//! never trusted.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::paths::JarvisHome;
use crate::store::LockError;

use super::protocol::{read_frame, write_frame, ClientFrame, OwnerFrame, VERSION};
use super::{lock_dir, socket_path};

/// How long a client waits for an owner that holds its lock but does not
/// accept yet (it is starting up).
const STARTING_GRACE: Duration = Duration::from_secs(5);

/// A connection to a live owner, past its `hello`.
pub struct Connection {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    pub pid: u32,
    pub role: String,
    pub command: String,
}

impl Connection {
    pub fn send(&mut self, frame: &ClientFrame) -> std::io::Result<()> {
        write_frame(&mut self.writer, frame)
    }

    /// The next frame; `Ok(None)` when the owner closed the connection.
    pub fn recv(&mut self) -> std::io::Result<Option<OwnerFrame>> {
        read_frame(&mut self.reader)
    }

    /// A second handle for sending (a Ctrl-C watcher sends `cancel` on it
    /// while the main thread reads).
    pub fn sender(&self) -> std::io::Result<UnixStream> {
        self.writer.try_clone()
    }
}

/// Connect to the owner of `home`, if one is alive. `Ok(None)` means go
/// direct (no owner, or a stale socket that was just removed).
pub fn connect(home: &JarvisHome) -> std::io::Result<Option<Connection>> {
    let path = socket_path(home);
    let start = Instant::now();
    loop {
        match UnixStream::connect(&path) {
            Ok(stream) => return handshake(stream).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                match crate::store::lock::acquire(&lock_dir(home)) {
                    Ok(lock) => {
                        // Nobody owns the home: the socket is a dead owner's.
                        tracing::info!(path = %path.display(), "removing a stale owner socket");
                        match std::fs::remove_file(&path) {
                            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                            _ => {}
                        }
                        drop(lock);
                        return Ok(None);
                    }
                    Err(LockError::Held { .. }) if start.elapsed() < STARTING_GRACE => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(LockError::Held { .. }) => return Ok(None),
                    Err(LockError::Io { source, .. }) => return Err(source),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

fn handshake(stream: UnixStream) -> std::io::Result<Connection> {
    let writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    match read_frame::<OwnerFrame>(&mut reader)? {
        Some(OwnerFrame::Hello {
            version,
            pid,
            command,
            role,
        }) if version == VERSION => Ok(Connection {
            reader,
            writer,
            pid,
            role,
            command,
        }),
        Some(OwnerFrame::Hello { version, pid, .. }) => Err(std::io::Error::other(format!(
            "the running owner (pid {pid}) speaks owner protocol {version}, this jarvis speaks {VERSION} — restart it with this version"
        ))),
        // A refusal instead of a greeting (the owner is at its limits).
        Some(OwnerFrame::Err { text }) => Err(std::io::Error::other(text)),
        _ => Err(std::io::Error::other("the owner socket did not greet (not a Jarvis owner?)")),
    }
}
