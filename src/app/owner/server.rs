//! The owner's side of the socket: take the owner lock, bind
//! `state/owner.sock`, accept connections until shutdown, run each
//! command in its own thread through the edge's [`Handler`], and shut down
//! in order.
//!
//! Limits, so no client (a runaway script, a hostile one) can exhaust the
//! owner: at most [`MAX_CONNECTIONS`] connections at once (one more gets a
//! refusal that names the limit instead of a thread), a client frame of at
//! most [`MAX_CLIENT_FRAME`] bytes, and a connection that sends no request
//! within [`FIRST_FRAME_TIMEOUT`] is closed.
//!
//! Shutdown order: stop accepting and remove the socket (new clients fall
//! back to direct mode and wait for the store lock) → cancel every running
//! session → wait for them, bounded → return, after which the caller drops
//! the `App` (every write is already committed; dropping the `Kb` releases
//! the store lock) and the owner lock.

use std::io::BufReader;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::App;
use crate::cancel::Cancel;
use crate::paths::{Dir, JarvisHome};
use crate::store::{LockError, OwnerLock};

use super::protocol::{read_frame_within, write_frame, ClientFrame, OwnerFrame, MAX_CLIENT_FRAME, VERSION};
use super::{lock_dir, socket_path, OwnerError};

/// How long shutdown waits for running commands after cancelling them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Connections served at once (each holds a thread while it lives). A
/// person's terminals and scripts stay far below it.
pub const MAX_CONNECTIONS: usize = 32;

/// How long a new connection may take to send its request (`run` or
/// `status`; a client sends it at once) before it is closed.
pub const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs one delegated command and returns its exit code. Supplied by the
/// edge (the CLI parses `argv` and renders through the session).
pub type Handler = Arc<dyn Fn(&Arc<App>, &Session) -> i32 + Send + Sync>;

/// One delegated command in flight.
pub struct Session {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub stdin_tty: bool,
    pub stderr_tty: bool,
    /// Stopped when the client sends `cancel`, hangs up, or the owner shuts down.
    pub cancel: Cancel,
    pub owner_pid: u32,
    pub role: String,
    writer: Mutex<UnixStream>,
    answers: Mutex<Receiver<Option<String>>>,
}

impl Session {
    /// Send a frame to the client. A client that went away is not an
    /// error here: its hang-up already stopped the command.
    pub fn send(&self, frame: &OwnerFrame) {
        let mut w = crate::lock::lock(&self.writer);
        if let Err(e) = write_frame(&mut *w, frame) {
            tracing::debug!(error = %e, "owner: client gone while sending");
        }
    }

    /// Ask the client for one line of its stdin (None: end of input, or the
    /// client went away).
    pub fn ask(&self) -> Option<String> {
        self.send(&OwnerFrame::Ask);
        crate::lock::lock(&self.answers).recv().ok().flatten()
    }
}

/// A started owner: it holds the owner lock and its socket is bound.
pub struct Owner {
    _lock: OwnerLock,
    listener: UnixListener,
    path: PathBuf,
    role: String,
    started: Instant,
}

impl Owner {
    /// Take the owner lock for `home` (a second owner is refused, naming
    /// the first) and bind the socket, replacing a stale one.
    pub fn start(home: &JarvisHome, role: &str) -> Result<Owner, OwnerError> {
        let dir = home.ensure(Dir::State)?;
        let lock = match crate::store::lock::acquire(&lock_dir(home)) {
            Ok(l) => l,
            Err(LockError::Held { holder, .. }) => {
                return Err(OwnerError::AlreadyRunning {
                    home: home.root().to_path_buf(),
                    holder,
                })
            }
            Err(e) => return Err(OwnerError::Lock(e)),
        };
        let path = socket_path(home);
        let sock_err = |source| OwnerError::Socket {
            path: path.clone(),
            dir: dir.clone(),
            source,
        };
        // We hold the owner lock, so a socket file left here is a dead
        // owner's: nobody can be listening on it.
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "removed a stale owner socket"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(sock_err(e)),
        }
        let listener = UnixListener::bind(&path).map_err(sock_err)?;
        // The directory is 0700 already; 0600 on the socket as well, so no
        // other account can connect even if the directory mode is changed.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(sock_err)?;
        Ok(Owner {
            _lock: lock,
            listener,
            path,
            role: role.to_string(),
            started: Instant::now(),
        })
    }

    pub fn socket(&self) -> &std::path::Path {
        &self.path
    }

    /// Accept and run commands until `shutdown` is stopped, then shut down
    /// in order (see the module docs).
    pub fn run(self, app: Arc<App>, handler: Handler, shutdown: &Cancel) -> Result<(), OwnerError> {
        let running: Arc<Mutex<Vec<(u64, Cancel)>>> = Arc::default();
        let mut threads = Vec::new();
        let mut next_id = 0u64;
        // Readiness, not a timer: the loop sleeps until a client connects
        // or the shutdown switch flips, so an idle owner never wakes here.
        // A small runtime of its own keeps the socket off the jobs' runtime
        // (and `serve` runs this on a thread of its own).
        let sock_err = |source| OwnerError::Socket {
            path: self.path.clone(),
            dir: self.path.parent().map(PathBuf::from).unwrap_or_default(),
            source,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(sock_err)?;
        let listener = {
            let _in_rt = rt.enter();
            self.listener.set_nonblocking(true).map_err(sock_err)?;
            tokio::net::UnixListener::from_std(self.listener).map_err(sock_err)?
        };
        rt.block_on(async {
            loop {
                let accepted = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    r = listener.accept() => r,
                };
                let stream = match accepted.and_then(|(s, _)| s.into_std()) {
                    Ok(s) => s,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // Out of descriptors and the like: back off rather
                        // than spin, and try again.
                        tracing::error!(error = %e, "owner: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let open = crate::lock::lock(&running).len();
                if open >= MAX_CONNECTIONS {
                    refuse(stream, &self.role);
                    continue;
                }
                next_id += 1;
                let id = next_id;
                let cancel = Cancel::new();
                crate::lock::lock(&running).push((id, cancel.clone()));
                let (app, handler, running) = (Arc::clone(&app), Arc::clone(&handler), Arc::clone(&running));
                let (role, started) = (self.role.clone(), self.started);
                threads.push(std::thread::spawn(move || {
                    if let Err(e) = connection(stream, &app, &handler, cancel, &role, started) {
                        tracing::warn!(error = %e, "owner: a client connection failed");
                    }
                    crate::lock::lock(&running).retain(|(i, _)| *i != id);
                }));
                threads.retain(|t| !t.is_finished());
            }
        });
        // 1. Stop accepting.
        let _ = std::fs::remove_file(&self.path);
        drop(listener);
        drop(rt);
        // 2. Cancel running work.
        let active: Vec<Cancel> = crate::lock::lock(&running).iter().map(|(_, c)| c.clone()).collect();
        tracing::info!(running = active.len(), "owner: shutting down");
        for c in &active {
            c.cancel();
        }
        // 3. Wait, bounded.
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left = threads.iter().filter(|t| !t.is_finished()).count();
        if left > 0 {
            tracing::warn!(left, "owner: commands still running after the shutdown grace period");
        }
        Ok(())
    }
}

/// Turn a connection away when [`MAX_CONNECTIONS`] are open: one `err`
/// frame instead of the greeting (the client reports it), written without
/// waiting (a fresh socket's buffer holds it) and without a thread.
fn refuse(stream: UnixStream, role: &str) {
    let pid = std::process::id();
    tracing::warn!(limit = MAX_CONNECTIONS, "owner: connection refused, too many open");
    let text = format!(
        "jarvis {role} (pid {pid}) is already serving {MAX_CONNECTIONS} connections, the most it takes at once — \
         try again when some finish (a script that opens many at a time, or leaves them open, should wait for each)"
    );
    let _ = stream.set_nonblocking(true);
    let mut w = &stream;
    if let Err(e) = write_frame(&mut w, &OwnerFrame::Err { text }) {
        tracing::debug!(error = %e, "owner: could not tell a refused client why");
    }
}

fn connection(
    stream: UnixStream,
    app: &Arc<App>,
    handler: &Handler,
    cancel: Cancel,
    role: &str,
    started: Instant,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let pid = std::process::id();
    write_frame(
        &mut writer,
        &OwnerFrame::Hello {
            version: VERSION,
            pid,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            role: role.to_string(),
        },
    )?;
    // The request comes at once from a real client; one that sends nothing
    // does not get to hold a connection (and its thread).
    writer.set_read_timeout(Some(FIRST_FRAME_TIMEOUT))?;
    let first = match read_frame_within::<ClientFrame>(&mut reader, MAX_CLIENT_FRAME) {
        Ok(f) => f,
        Err(e) => {
            if e.kind() == std::io::ErrorKind::InvalidData {
                let _ = write_frame(
                    &mut writer,
                    &OwnerFrame::Err {
                        text: format!("the owner refused the request: {e}\n"),
                    },
                );
            }
            return Err(e);
        }
    };
    writer.set_read_timeout(None)?;
    let (argv, cwd, stdin_tty, stderr_tty, client_env) = match first {
        Some(ClientFrame::Run {
            argv,
            cwd,
            stdin_tty,
            stderr_tty,
            env,
        }) => (argv, cwd, stdin_tty, stderr_tty, env),
        Some(ClientFrame::Status) => {
            return write_frame(
                &mut writer,
                &OwnerFrame::Status {
                    pid,
                    role: role.to_string(),
                    uptime_ms: started.elapsed().as_millis() as u64,
                    kb_open: app.kb_if_open().is_some(),
                },
            );
        }
        _ => return Ok(()),
    };
    tracing::info!(?argv, "owner: running a delegated command");
    // The user may have edited config.toml since the owner started; the
    // command runs with the file as saved (a broken edit keeps the last
    // good configuration, said in the log).
    match app.reload_config_if_changed() {
        Ok(Some(warnings)) => {
            tracing::info!("owner: config.toml changed; reloaded");
            for w in warnings {
                tracing::warn!("config: {w}");
            }
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(error = %e, "owner: config.toml changed but cannot be read; keeping the last good configuration")
        }
    }
    let (tx, rx) = mpsc::channel();
    let watcher = cancel.clone();
    // Everything after `run` is answers and cancels; a hang-up (Ctrl-C
    // killed the client, or it simply went away) stops the command too.
    std::thread::spawn(move || loop {
        match read_frame_within::<ClientFrame>(&mut reader, MAX_CLIENT_FRAME) {
            Ok(Some(ClientFrame::Line { text })) => {
                if tx.send(text).is_err() {
                    break;
                }
            }
            Ok(Some(_)) | Ok(None) | Err(_) => {
                watcher.cancel();
                // Wake a pending ask so the command sees the stop.
                let _ = tx.send(None);
                break;
            }
        }
    });
    let session = Session {
        argv,
        cwd,
        stdin_tty,
        stderr_tty,
        cancel,
        owner_pid: pid,
        role: role.to_string(),
        writer: Mutex::new(writer),
        answers: Mutex::new(rx),
    };
    let differ = crate::config::env_differences(&client_env, &*app.env);
    if !differ.is_empty() {
        // Said, not silently applied or ignored: the owner's settings are
        // the ones that govern its knowledge base.
        session.send(&OwnerFrame::Err {
            text: format!(
                "note: {} differ{} between this shell and jarvis {role} (pid {pid}), which runs the command with its own settings — put the setting in config.toml to apply it everywhere\n",
                differ.join(", "),
                if differ.len() == 1 { "s" } else { "" },
            ),
        });
    }
    let code = handler(app, &session);
    session.send(&OwnerFrame::Exit { code });
    Ok(())
}
