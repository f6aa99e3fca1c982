//! Child processes. This is the only module that spawns processes
//! (`std::process::Command`); everything else asks it.
//!
//! Owns: running a program (this same binary via [`run_self`], or any
//! program via [`run_child`]) with arguments, a working directory, stdin
//! bytes, an address-space limit and a timeout; the child's environment
//! (an allowlist — see [`env`]: children never inherit API keys or other
//! secrets); capturing stdout and stderr up to a cap; and reporting how the
//! child ended — exit code, signal, timeout or stop — so a crash inside a
//! native library in the child becomes a diagnosis for the parent instead of
//! taking the parent down with it.
//!
//! A child asked to run without network ([`ChildSpec::no_network`]) gets a
//! network namespace of its own before exec.
//!
//! Every child leads its own process group. On timeout, on a stop request,
//! and also once the leader has exited, the whole group is killed, so a
//! grandchild (latexmk's pdflatex, a shell's background job) never outlives
//! the call; the group is killed while the leader is still unreaped, so its
//! id cannot have been reused. Each child also gets `PR_SET_PDEATHSIG`: if
//! the parent dies (even by SIGKILL) the child is killed by the kernel. Every
//! child is reaped before these functions return.
//! Must not: know what the child does (callers pass the arguments), or pass
//! the parent's environment through wholesale.

pub mod env;
pub mod service;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    #[error("cannot find the running jarvis binary to start a child process: {0}")]
    CurrentExe(#[source] std::io::Error),
    #[error("cannot start a child process of {exe}: {source}")]
    Spawn {
        exe: String,
        #[source]
        source: std::io::Error,
    },
    #[error("lost track of a child process: {0}")]
    Wait(#[source] std::io::Error),
    /// The child was to run without network, and this kernel would not give
    /// it a network namespace (unprivileged user namespaces disabled).
    #[error("cannot cut {exe} off the network: {source} — this system does not allow unprivileged network namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor userns profile, enables them)")]
    NoIsolation {
        exe: String,
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            SandboxError::CurrentExe(_) | SandboxError::Spawn { .. } | SandboxError::NoIsolation { .. } => {
                ErrorKind::Unavailable
            }
            SandboxError::Wait(_) => ErrorKind::Internal,
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    Exited {
        code: i32,
    },
    /// Killed by a signal it did not handle (a crash: SIGSEGV, SIGBUS,
    /// SIGABRT…, or an outside `kill`).
    Signalled {
        signal: i32,
        name: String,
    },
    /// Still running after the timeout; its group was killed.
    TimedOut {
        after_ms: u64,
    },
    /// The caller asked to stop (Ctrl-C, shutdown); its group was killed.
    Stopped {
        after_ms: u64,
    },
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited { code } => write!(f, "exit status {code}"),
            Ending::Signalled { signal, name } => write!(f, "killed by signal {signal} ({name})"),
            Ending::TimedOut { after_ms } => write!(f, "no answer after {:.0} s; killed", *after_ms as f64 / 1000.0),
            Ending::Stopped { after_ms } => write!(f, "stopped after {:.1} s", *after_ms as f64 / 1000.0),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ChildOutcome {
    pub pid: u32,
    pub ending: Ending,
    pub stdout: String,
    pub stderr: String,
    pub elapsed_ms: u64,
}

impl ChildOutcome {
    pub fn success(&self) -> bool {
        self.ending == Ending::Exited { code: 0 }
    }
}

/// Default cap on each of stdout and stderr (bytes kept; the rest is read
/// and dropped so the child never blocks on a full pipe).
pub const DEFAULT_OUTPUT_LIMIT: usize = 16 << 20;

/// What to give a child besides the program. Build with struct update from
/// [`ChildSpec::default`] so new fields do not break callers.
#[derive(Clone)]
pub struct ChildSpec<'a> {
    pub args: &'a [&'a str],
    /// Variables set for the child on top of the allowlisted ones (the
    /// caller's deliberate choice; these are not filtered).
    pub env: &'a [(String, String)],
    /// Extra names (or `PREFIX*` / `*SUFFIX` patterns) the child may inherit
    /// from this process beyond [`env::BASE_INHERIT`]. Anything that
    /// [`env::looks_secret`] is dropped regardless.
    pub inherit: &'a [&'a str],
    /// Working directory; `None` keeps the parent's.
    pub cwd: Option<&'a Path>,
    /// Written to the child's stdin, which is then closed; `None` gives it a
    /// closed stdin.
    pub stdin: Option<&'a [u8]>,
    pub timeout: Duration,
    /// Address-space limit (`RLIMIT_AS`) in bytes, set in the child before
    /// exec. An allocation past it fails inside the child (Rust aborts with
    /// "memory allocation of N bytes failed"; C++ throws `bad_alloc`, which
    /// PDFium does not catch), so the parent sees SIGABRT, not the OOM
    /// killer taking something else down.
    pub memory_limit: Option<u64>,
    /// Bytes of stdout, and separately of stderr, kept.
    pub output_limit: usize,
    /// Polled while the child runs; when it returns true the group is
    /// killed and the call ends with [`Ending::Stopped`] (Ctrl-C, shutdown).
    pub stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Leave the group alone once the leader exits normally (a launcher
    /// such as `xdg-open` hands off to a long-lived program on purpose).
    /// Timeout and stop still kill the group.
    pub leave_group_on_exit: bool,
    /// Start the child in a network namespace of its own, with nothing in
    /// it but a loopback device that is down: no connection to anything,
    /// not even this machine's loopback services (see [`unix::prepare`]).
    /// Where the kernel refuses namespaces the spawn fails with
    /// [`SandboxError::NoIsolation`] and the caller decides.
    pub no_network: bool,
}

impl Default for ChildSpec<'_> {
    fn default() -> Self {
        ChildSpec {
            args: &[],
            env: &[],
            inherit: &[],
            cwd: None,
            stdin: None,
            timeout: Duration::from_secs(60),
            memory_limit: None,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            stop: None,
            leave_group_on_exit: false,
            no_network: false,
        }
    }
}

impl std::fmt::Debug for ChildSpec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildSpec")
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("inherit", &self.inherit)
            .field("cwd", &self.cwd)
            .field("stdin_bytes", &self.stdin.map(<[u8]>::len))
            .field("timeout", &self.timeout)
            .field("memory_limit", &self.memory_limit)
            .field("output_limit", &self.output_limit)
            .field("stop", &self.stop.is_some())
            .field("leave_group_on_exit", &self.leave_group_on_exit)
            .field("no_network", &self.no_network)
            .finish()
    }
}

/// [`run_child`]'s result, with stdout kept as bytes.
#[derive(Debug, Clone)]
pub struct RawOutcome {
    pub pid: u32,
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// The child wrote more than [`ChildSpec::output_limit`] to stdout.
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub elapsed_ms: u64,
}

/// Run this binary again with `args` (stdin closed, the environment
/// allowlist plus [`env::SELF_INHERIT`]), wait at most `timeout`, and
/// report how it ended.
pub fn run_self(args: &[&str], timeout: Duration) -> Result<ChildOutcome, SandboxError> {
    let exe = std::env::current_exe().map_err(SandboxError::CurrentExe)?;
    let raw = run_child(
        &exe,
        &ChildSpec {
            args,
            inherit: env::SELF_INHERIT,
            timeout,
            ..ChildSpec::default()
        },
    )?;
    Ok(ChildOutcome {
        pid: raw.pid,
        ending: raw.ending,
        stdout: String::from_utf8_lossy(&raw.stdout).into_owned(),
        stderr: raw.stderr,
        elapsed_ms: raw.elapsed_ms,
    })
}

/// The running binary, for callers that pass it to [`run_child`].
pub fn current_exe() -> Result<std::path::PathBuf, SandboxError> {
    std::env::current_exe().map_err(SandboxError::CurrentExe)
}

/// Kills the child's whole group and reaps the leader if the call leaves
/// early (an error, a panic), so no path out of [`run_child`] leaks a
/// process.
struct GroupGuard {
    child: Option<Child>,
}

impl GroupGuard {
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Kill the group (the leader is not reaped yet, so its id is still
    /// ours), then reap the leader.
    fn kill_and_reap(&mut self) -> Result<std::process::ExitStatus, SandboxError> {
        let Some(mut child) = self.child.take() else {
            return Err(SandboxError::Wait(std::io::Error::other("child already reaped")));
        };
        unix::kill_group(child.id());
        child.wait().map_err(SandboxError::Wait)
    }
}

impl GroupGuard {
    /// Reap the exited leader without touching the rest of its group.
    fn reap(&mut self) -> Result<std::process::ExitStatus, SandboxError> {
        let Some(mut child) = self.child.take() else {
            return Err(SandboxError::Wait(std::io::Error::other("child already reaped")));
        };
        child.wait().map_err(SandboxError::Wait)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.kill_and_reap();
        }
    }
}

/// Run `program` (a path, or a bare name looked up on `PATH`) as described
/// by `spec`. Returns once the child has ended, its group has been killed
/// and the child reaped.
pub fn run_child(program: &Path, spec: &ChildSpec<'_>) -> Result<RawOutcome, SandboxError> {
    let start = Instant::now();
    // The one place a child process is created (clippy.toml disallows it elsewhere).
    #[allow(clippy::disallowed_methods)]
    let mut cmd = Command::new(program);
    cmd.args(spec.args)
        .env_clear()
        .envs(env::child_environment(std::env::vars_os(), spec.inherit, spec.env))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(output_pipe(spec))
        .stderr(output_pipe(spec));
    if let Some(dir) = spec.cwd {
        cmd.current_dir(dir);
    }
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    unix::prepare(&mut cmd, spec.memory_limit, spec.no_network);
    let mut child = cmd.spawn().map_err(|source| {
        let exe = program.display().to_string();
        if spec.no_network && source.raw_os_error() == Some(unix::NO_ISOLATION_ERRNO) {
            SandboxError::NoIsolation { exe, source }
        } else {
            SandboxError::Spawn { exe, source }
        }
    })?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let mut guard = GroupGuard { child: Some(child) };
    let pid = guard.pid();
    // Feed stdin and drain both pipes on threads so neither side can block
    // on a full pipe while we wait. A child that dies before reading all of
    // stdin gives a broken pipe here (Rust ignores SIGPIPE), which is not
    // an error: how the child ended says what happened.
    let feeder = match (stdin, spec.stdin) {
        (Some(mut pipe), Some(bytes)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            }))
        }
        _ => None,
    };
    let limit = spec.output_limit;
    let out = drain(stdout.map(|p| Box::new(p) as Box<dyn Read + Send>), limit);
    let err = drain(stderr.map(|p| Box::new(p) as Box<dyn Read + Send>), limit);
    let (status, cut_short) = loop {
        if unix::has_exited(pid).map_err(SandboxError::Wait)? {
            // Leader gone but unreaped: take any grandchildren with it.
            if spec.leave_group_on_exit {
                break (Some(guard.reap()?), None);
            }
            break (Some(guard.kill_and_reap()?), None);
        }
        if start.elapsed() >= spec.timeout {
            guard.kill_and_reap()?;
            break (None, Some(false));
        }
        if spec.stop.is_some_and(|stop| stop()) {
            guard.kill_and_reap()?;
            break (None, Some(true));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed_ms = start.elapsed().as_millis() as u64;
    let ending = match (status, cut_short) {
        (_, Some(true)) => Ending::Stopped { after_ms: elapsed_ms },
        (None, _) => Ending::TimedOut { after_ms: elapsed_ms },
        (Some(s), _) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(code), _) => Ending::Exited { code },
                (None, Some(signal)) => Ending::Signalled {
                    signal,
                    name: signal_name(signal).to_string(),
                },
                (None, None) => Ending::Exited { code: -1 },
            }
        }
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let (stdout, stdout_truncated) = out.join().unwrap_or_default();
    let (stderr, stderr_truncated) = err.join().unwrap_or_default();
    Ok(RawOutcome {
        pid,
        ending,
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        stdout_truncated,
        stderr_truncated,
        elapsed_ms,
    })
}

/// A program left running after its launcher exits would hold our pipes
/// open forever, so such a child's output is not captured.
fn output_pipe(spec: &ChildSpec<'_>) -> Stdio {
    if spec.leave_group_on_exit {
        Stdio::null()
    } else {
        Stdio::piped()
    }
}

/// Read a pipe to its end on a thread, keeping at most `limit` bytes.
fn drain(pipe: Option<Box<dyn Read + Send>>, limit: usize) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let Some(mut p) = pipe else {
            return (kept, truncated);
        };
        let mut buf = [0u8; 64 * 1024];
        loop {
            match p.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(kept.len());
                    if n > room {
                        truncated = true;
                    }
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        (kept, truncated)
    })
}

mod unix;

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV, a memory-access crash",
        libc::SIGBUS => "SIGBUS, a bad memory mapping",
        libc::SIGABRT => "SIGABRT, an abort",
        libc::SIGILL => "SIGILL, an illegal instruction",
        libc::SIGFPE => "SIGFPE, an arithmetic fault",
        libc::SIGKILL => "SIGKILL, killed (out of memory?)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names_are_descriptive() {
        assert!(signal_name(libc::SIGSEGV).starts_with("SIGSEGV"));
        assert_eq!(
            Ending::Signalled {
                signal: 7,
                name: "SIGBUS".into()
            }
            .to_string(),
            "killed by signal 7 (SIGBUS)"
        );
    }
}
