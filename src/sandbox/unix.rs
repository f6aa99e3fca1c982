//! The few system calls behind [`super::run_child`] that std does not wrap:
//! what the child does between fork and exec, checking that the leader has
//! exited without reaping it, killing its process group, and cutting a
//! child off the network.
//! Must not: spawn anything itself.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The error a spawn reports when the child could not get its own network
/// namespace (`ENONET`, which exec itself never returns, so the parent can
/// tell this apart from a missing program).
pub(super) const NO_ISOLATION_ERRNO: i32 = libc::ENONET;

/// What the child writes into its user namespace's maps so that it keeps
/// its own uid and gid inside (prepared before fork: the child must not
/// allocate).
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    #[allow(unsafe_code)]
    fn current() -> IdMaps {
        // SAFETY: geteuid and getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        IdMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// Write `bytes` to the file at `path` (a NUL-terminated literal) with
/// raw system calls only (async-signal-safe, no allocation).
#[allow(unsafe_code)]
fn write_proc_file(path: &[u8], bytes: &[u8]) -> bool {
    debug_assert!(path.ends_with(b"\0"));
    // SAFETY: `path` is NUL-terminated; open/write/close are
    // async-signal-safe and touch only the buffers we pass.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        n == bytes.len() as isize
    }
}

/// Give the calling (forked, single-threaded) child a network namespace
/// of its own: directly when it may (`CAP_SYS_ADMIN`), else inside a new
/// user namespace that maps only its own uid and gid, so files it creates
/// are still the user's.
#[allow(unsafe_code)]
fn leave_network(maps: &IdMaps) -> bool {
    // SAFETY: unshare only changes the calling process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } == 0 {
        return true;
    }
    // SAFETY: as above; the child is single-threaded, as CLONE_NEWUSER needs.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return false;
    }
    write_proc_file(b"/proc/self/setgroups\0", b"deny")
        && write_proc_file(b"/proc/self/uid_map\0", &maps.uid_map)
        && write_proc_file(b"/proc/self/gid_map\0", &maps.gid_map)
}

/// Make the child, between fork and exec: ask the kernel for SIGKILL when
/// its parent dies (`PR_SET_PDEATHSIG`), set its own address-space limit
/// when one is given, and, with `no_network`, move it into a network
/// namespace of its own (only a loopback device, down: every connection
/// fails, to this machine's services too). A child that cannot be isolated
/// does not start ([`NO_ISOLATION_ERRNO`]).
///
/// The death signal is tied to the thread that forked. [`super::run_child`]
/// blocks that thread until the child is reaped, so the thread cannot end
/// first; a grandchild does not inherit the setting, but the parent kills
/// the whole group whenever it can.
#[allow(unsafe_code)]
pub(super) fn prepare(cmd: &mut Command, memory_limit: Option<u64>, no_network: bool) {
    let limit = memory_limit.map(|bytes| libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    });
    let maps = no_network.then(IdMaps::current);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are allowed. It captures plain values and
    // buffers made before the fork, calls only prctl(2), getppid(2),
    // unshare(2), open/write/close(2) and setrlimit(2) (async-signal-safe),
    // does not allocate or lock, and builds its error from errno
    // (`last_os_error` / `from_raw_os_error` are allocation-free Os
    // variants). It only changes the child's own state; the parent is
    // untouched.
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
            if let Some(maps) = &maps {
                if !leave_network(maps) {
                    return Err(std::io::Error::from_raw_os_error(NO_ISOLATION_ERRNO));
                }
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
