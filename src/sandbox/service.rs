//! Long-lived children that talk over their stdin and stdout: an MCP
//! server started from a command, kept for as long as it is used.
//!
//! Owns: starting such a child under the same rules as [`super::run_child`]
//! (the environment allowlist plus the caller's deliberate variables, its
//! own process group, `PR_SET_PDEATHSIG`), handing out its pipes, keeping
//! the tail of its stderr for a diagnosis, and ending it: dropping the
//! [`Service`] kills the whole group and reaps the leader.
//!
//! One keeper thread per service does the fork and then watches the child:
//! the kernel's parent-death signal is tied to the thread that forked, so
//! that thread must live exactly as long as the child. The keeper is also
//! the only one that reaps, always after killing the group, so a group id
//! is never signalled after it could have been reused.
//! Must not: know what the child speaks, or let a child outlive its Service.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{env, unix, SandboxError};

/// How much of a service's stderr is kept for its diagnosis.
const STDERR_TAIL: usize = 4096;

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct ServiceSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Set for the child on top of the allowlisted variables (not filtered:
    /// the user configured them for this program).
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

/// A running child and its pipes.
pub struct Service {
    pid: u32,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    exited: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    keeper: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("pid", &self.pid)
            .field("exited", &self.has_exited())
            .finish_non_exhaustive()
    }
}

type Started = Result<
    (
        u32,
        Option<ChildStdin>,
        Option<ChildStdout>,
        Option<std::process::ChildStderr>,
    ),
    SandboxError,
>;

/// Starts `spec.program` (a path, or a name looked up on `PATH`).
pub fn spawn_service(spec: &ServiceSpec) -> Result<Service, SandboxError> {
    let exited = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<Started>();
    let spec_owned = spec.clone();
    let (exited_k, stop_k) = (exited.clone(), stop.clone());
    let keeper = std::thread::Builder::new()
        .name("service-keeper".into())
        .spawn(move || keep(&spec_owned, &tx, &exited_k, &stop_k))
        .map_err(|source| SandboxError::Spawn {
            exe: spec.program.display().to_string(),
            source,
        })?;
    let started = rx.recv().map_err(|_| SandboxError::Spawn {
        exe: spec.program.display().to_string(),
        source: std::io::Error::other("the keeper thread ended before starting the child"),
    });
    let (pid, stdin, stdout, stderr_pipe) = match started.and_then(|s| s) {
        Ok(s) => s,
        Err(e) => {
            let _ = keeper.join();
            return Err(e);
        }
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = stderr_pipe {
        let tail = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut t = crate::lock::lock(&tail);
                t.extend_from_slice(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        });
    }
    Ok(Service {
        pid,
        stdin,
        stdout,
        stderr,
        exited,
        stop,
        keeper: Some(keeper),
    })
}

/// The keeper: fork, report, then watch until the child exits or the
/// service is dropped; kill the group, then reap.
fn keep(spec: &ServiceSpec, tx: &std::sync::mpsc::Sender<Started>, exited: &AtomicBool, stop: &AtomicBool) {
    let args: Vec<&str> = spec.args.iter().map(String::as_str).collect();
    // The one other place a child process is created (clippy.toml
    // disallows it outside this module).
    #[allow(clippy::disallowed_methods)]
    let mut cmd = Command::new(&spec.program);
    cmd.args(&args)
        .env_clear()
        .envs(env::child_environment(std::env::vars_os(), &[], &spec.env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    unix::prepare(&mut cmd, None, false);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(source) => {
            let _ = tx.send(Err(SandboxError::Spawn {
                exe: spec.program.display().to_string(),
                source,
            }));
            return;
        }
    };
    let pid = child.id();
    if tx
        .send(Ok((pid, child.stdin.take(), child.stdout.take(), child.stderr.take())))
        .is_err()
    {
        unix::kill_group(pid);
        let _ = child.wait();
        return;
    }
    loop {
        match unix::has_exited(pid) {
            Ok(true) | Err(_) => break,
            Ok(false) => {}
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    // The leader is not reaped yet, so its group id is still ours.
    unix::kill_group(pid);
    let _ = child.wait();
    exited.store(true, Ordering::SeqCst);
}

impl Service {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the child has ended (crashed, exited, or been killed).
    pub fn has_exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }

    /// The last few kilobytes the child wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&crate::lock::lock(&self.stderr)).into_owned()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // Close stdin first: a well-behaved server ends on EOF.
        self.stdin.take();
        self.stop.store(true, Ordering::SeqCst);
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
    }
}

/// Whether `program` names something that can be started: an existing
/// path, or a bare name found on `PATH`.
pub fn program_exists(program: &Path) -> bool {
    if program.components().count() > 1 {
        return program.is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}
