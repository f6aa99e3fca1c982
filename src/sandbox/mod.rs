//! Child processes. This is the only module that spawns processes
//! (`std::process::Command`); everything else asks it.
//!
//! Owns: running this same binary as a child ([`run_self`], or
//! [`run_child`] with stdin bytes and an address-space limit) with a
//! timeout, capturing its output, and reporting how it ended — exit code,
//! signal or timeout — so a crash inside a native library in the child
//! becomes a diagnosis for the parent instead of taking the parent down with
//! it. A timed-out child is killed and every child is reaped before these
//! functions return.
//! Must not: know what the child does (callers pass the arguments).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
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
}

impl SandboxError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            SandboxError::CurrentExe(_) | SandboxError::Spawn { .. } => ErrorKind::Unavailable,
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
    /// Still running after the timeout; it was killed.
    TimedOut {
        after_ms: u64,
    },
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited { code } => write!(f, "exit status {code}"),
            Ending::Signalled { signal, name } => write!(f, "killed by signal {signal} ({name})"),
            Ending::TimedOut { after_ms } => write!(f, "no answer after {:.0} s; killed", *after_ms as f64 / 1000.0),
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

/// What to give a child besides its arguments.
#[derive(Debug, Clone)]
pub struct ChildSpec<'a> {
    pub args: &'a [&'a str],
    /// Extra environment variables on top of the inherited environment.
    pub env: &'a [(String, String)],
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
}

/// [`run_child`]'s result, with stdout kept as bytes.
#[derive(Debug, Clone)]
pub struct RawOutcome {
    pub pid: u32,
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed_ms: u64,
}

/// Run this binary again with `args` (inheriting the environment, stdin
/// closed), wait at most `timeout`, and report how it ended.
pub fn run_self(args: &[&str], timeout: Duration) -> Result<ChildOutcome, SandboxError> {
    let exe = std::env::current_exe().map_err(SandboxError::CurrentExe)?;
    let raw = run_child(
        &exe,
        &ChildSpec {
            args,
            env: &[],
            stdin: None,
            timeout,
            memory_limit: None,
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

/// Run `exe` (normally [`current_exe`]; tests pass the built `jarvis`
/// binary because their own executable is the test harness) as described by
/// `spec`, inheriting the environment. Returns once the child has ended and
/// been reaped.
pub fn run_child(exe: &Path, spec: &ChildSpec<'_>) -> Result<RawOutcome, SandboxError> {
    let start = Instant::now();
    let mut cmd = Command::new(exe);
    cmd.args(spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(bytes) = spec.memory_limit {
        limit_address_space(&mut cmd, bytes);
    }
    let mut child = cmd.spawn().map_err(|source| SandboxError::Spawn {
        exe: exe.display().to_string(),
        source,
    })?;
    let pid = child.id();
    // Feed stdin and drain both pipes on threads so neither side can block
    // on a full pipe while we wait. A child that dies before reading all of
    // stdin gives a broken pipe here (Rust ignores SIGPIPE), which is not
    // an error: how the child ended says what happened.
    let feeder = match (child.stdin.take(), spec.stdin) {
        (Some(mut pipe), Some(bytes)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            }))
        }
        _ => None,
    };
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let status = loop {
        match child.try_wait().map_err(SandboxError::Wait)? {
            Some(status) => break Some(status),
            None if start.elapsed() >= spec.timeout => {
                if let Err(e) = child.kill() {
                    tracing::warn!(pid, error = %e, "cannot kill a timed-out child");
                }
                child.wait().map_err(SandboxError::Wait)?;
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let elapsed_ms = start.elapsed().as_millis() as u64;
    let ending = match status {
        None => Ending::TimedOut { after_ms: elapsed_ms },
        Some(s) => {
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
    Ok(RawOutcome {
        pid,
        ending,
        stdout: out.join().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned(),
        elapsed_ms,
    })
}

/// Make the child set its own `RLIMIT_AS` between fork and exec.
#[allow(unsafe_code)]
fn limit_address_space(cmd: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed. It captures a plain `rlimit` by
    // value, calls only setrlimit(2) (async-signal-safe), does not allocate
    // or lock, and builds its error from errno (`last_os_error` is an
    // allocation-free Os variant). The limit only tightens the child's own
    // resources; the parent is untouched.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

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
