//! Child processes. This is the only module that spawns processes
//! (`std::process::Command`); everything else asks it.
//!
//! Owns: running this same binary as a child ([`run_self`]) with a timeout,
//! capturing its output, and reporting how it ended — exit code, signal or
//! timeout — so a crash inside a native library in the child becomes a
//! diagnosis for the parent instead of taking the parent down with it.
//! Must not: know what the child does (callers pass the arguments).

use std::io::Read;
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

/// Run this binary again with `args` (inheriting the environment, stdin
/// closed), wait at most `timeout`, and report how it ended.
pub fn run_self(args: &[&str], timeout: Duration) -> Result<ChildOutcome, SandboxError> {
    let exe = std::env::current_exe().map_err(SandboxError::CurrentExe)?;
    let start = Instant::now();
    let mut child = Command::new(&exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SandboxError::Spawn {
            exe: exe.display().to_string(),
            source,
        })?;
    let pid = child.id();
    // Drain both pipes on threads so a chatty child can never block on a
    // full pipe while we wait for it.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let status = loop {
        match child.try_wait().map_err(SandboxError::Wait)? {
            Some(status) => break Some(status),
            None if start.elapsed() >= timeout => {
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
    Ok(ChildOutcome {
        pid,
        ending,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed_ms,
    })
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
