//! The one coarse classification of failures, shared by every module.
//!
//! Owns: [`ErrorKind`] — what an edge needs to decide how to report a
//! failure (the CLI picks an exit code, the web layer an HTTP status) without
//! knowing the failing module's enum. Every public error enum in the crate
//! has a `kind()` returning one of these.
//! Must not: depend on any other module; it sits below everything.

/// What sort of failure an error is, from the user's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input or the configuration is wrong; the user can fix it.
    User,
    /// The thing asked for does not exist.
    NotFound,
    /// The operation collides with the current state (a lock holder, a
    /// duplicate, an index built by another model).
    Conflict,
    /// Something outside Jarvis is not there right now (network, a service,
    /// a native library, disk space); trying again later may work.
    Unavailable,
    /// The user (or a shutdown) stopped the operation.
    Cancelled,
    /// A bug or damaged data inside Jarvis.
    Internal,
}

impl ErrorKind {
    /// The stable snake_case name used on the wire and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::User => "user",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `std::io::Error` kinds that say "the disk or the OS is in the way"
/// rather than "Jarvis is wrong".
pub fn io_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => ErrorKind::NotFound,
        K::PermissionDenied => ErrorKind::User,
        K::Interrupted => ErrorKind::Cancelled,
        _ => ErrorKind::Unavailable,
    }
}

/// What every disk-full message tells the user to do.
pub const DISK_FULL_FIX: &str = "free some space on it (or move JARVIS_HOME to a larger disk), then try again";

/// Whether `e`, or any error under it, is a full disk (or a full quota).
/// Libraries that flatten an I/O error into text (tantivy's worker
/// threads, fjall's and tantivy's debug output) keep the OS's words, so
/// those are recognised too.
pub fn is_disk_full(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind as K;
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(io.kind(), K::StorageFull | K::QuotaExceeded) {
                return true;
            }
        }
        let text = err.to_string();
        if [
            "(os error 28)",
            "(os error 122)",
            "No space left on device",
            "Disk quota exceeded",
        ]
        .iter()
        .any(|w| text.contains(w))
        {
            return true;
        }
        next = err.source();
    }
    false
}

/// Below this much free space, a write that failed without saying why (a
/// library's worker thread that died on an I/O error and reports only
/// that it died) is taken for a full disk.
pub const NEARLY_FULL_BYTES: u64 = 16 << 20;

/// Bytes free for an unprivileged writer on the filesystem holding
/// `path`, when the OS says.
#[allow(unsafe_code)]
pub fn free_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs only writes into the struct we own; `p` is a valid
    // NUL-terminated string for the duration of the call.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(p.as_ptr(), &mut s) == 0).then(|| s.f_bavail as u64 * s.f_frsize as u64)
    }
}

/// An I/O error as the end of a message: a full disk says so and how to
/// fix it; anything else is the OS's own words.
pub fn io_reason(e: &std::io::Error) -> String {
    if is_disk_full(e) {
        format!("the disk is full ({e}) — {DISK_FULL_FIX}")
    } else {
        e.to_string()
    }
}

/// An error and every `source()` under it, joined with ": " — each cause
/// only when the message above does not already quote it (thiserror
/// messages often embed `{source}`). For logs and tool results, where the
/// why matters as much as the what.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_full_disk_is_recognised_through_wrappers_and_text() {
        let full = std::io::Error::from_raw_os_error(28);
        assert!(super::is_disk_full(&full));
        assert!(super::is_disk_full(&std::io::Error::from_raw_os_error(122)));
        assert!(!super::is_disk_full(&std::io::Error::from_raw_os_error(13)));
        #[derive(Debug, thiserror::Error)]
        #[error("cannot commit")]
        struct Outer(#[source] std::io::Error);
        assert!(super::is_disk_full(&Outer(std::io::Error::from_raw_os_error(28))));
        let flat = std::io::Error::other(format!("worker died: {full}"));
        assert!(super::is_disk_full(&flat), "{flat}");
        let debug = std::io::Error::other(format!("cannot open the file: {full:?}"));
        assert!(super::is_disk_full(&debug), "{debug}");
        let reason = super::io_reason(&full);
        assert!(
            reason.starts_with("the disk is full") && reason.contains("free some space"),
            "{reason}"
        );
        assert_eq!(
            super::io_reason(&std::io::Error::from_raw_os_error(13)),
            std::io::Error::from_raw_os_error(13).to_string()
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read the index")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read the index: {0}")]
    struct Quoting(#[source] std::io::Error);

    #[test]
    fn every_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        assert_eq!(super::chain(&Outer(io())), "cannot read the index: no such file");
        assert_eq!(super::chain(&Quoting(io())), "cannot read the index: no such file");
    }
}
