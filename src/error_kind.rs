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
mod chain_tests {
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
