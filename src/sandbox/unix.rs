//! The few system calls behind [`super::run_child`] that std does not wrap:
//! what the child does between fork and exec, checking that the leader has
//! exited without reaping it, and killing its process group.
//! Must not: spawn anything itself.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Make the child, between fork and exec: ask the kernel for SIGKILL when
/// its parent dies (`PR_SET_PDEATHSIG`), and set its own address-space
/// limit when one is given.
///
/// The death signal is tied to the thread that forked. [`super::run_child`]
/// blocks that thread until the child is reaped, so the thread cannot end
/// first; a grandchild does not inherit the setting, but the parent kills
/// the whole group whenever it can.
#[allow(unsafe_code)]
pub(super) fn prepare(cmd: &mut Command, memory_limit: Option<u64>) {
    let limit = memory_limit.map(|bytes| libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    });
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed. It captures plain values, calls
    // only prctl(2), getppid(2) and setrlimit(2) (async-signal-safe), does
    // not allocate or lock, and builds its error from errno
    // (`last_os_error` is an allocation-free Os variant). It only changes
    // the child's own state; the parent is untouched.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl; then the
            // signal will never come, so do not start at all.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(limit) = &limit {
                if libc::setrlimit(libc::RLIMIT_AS, limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Whether child `pid` has exited, without reaping it (`WNOWAIT`), so its
/// id — and with it the process-group id — stays ours until we reap.
#[allow(unsafe_code)]
pub(super) fn has_exited(pid: u32) -> std::io::Result<bool> {
    // SAFETY: siginfo_t is plain data for which all-zero is valid; waitid
    // writes into the struct we own and, with WNOHANG, leaves si_pid zero
    // when the child is still running.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(info.si_pid() != 0)
    }
}

/// SIGKILL every process in the group led by `pid`. A group that is
/// already empty is fine.
#[allow(unsafe_code)]
pub(super) fn kill_group(pid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; `pgid` is the group
    // of a child we spawned as leader and have not reaped.
    let rc = unsafe { libc::killpg(pgid, libc::SIGKILL) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pid, error = %e, "cannot kill a child's process group");
        }
    }
}
