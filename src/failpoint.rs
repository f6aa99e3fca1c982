//! Fault injection for the crash and error-path tests, compiled only into
//! test builds.
//!
//! Owns [`hit`] and [`abort_at`]: a named point in the code asks whether a
//! test wants it to fail. The suite arms a point in a child process with
//! `JARVIS_FAILPOINT=<name>`, or in-process for the current thread with
//! [`arm_for_thread`] (unit tests only). Must not: exist in the shipped
//! binary. Without the `failpoints` cargo feature (which `cargo xtask test`
//! enables) and outside the crate's own unit tests, `hit` is a constant
//! `false` and the environment variable is never read, so nobody can make a
//! release build abort, hang or exhaust memory on purpose.

/// Whether the test suite armed the point `name`.
#[cfg(any(test, feature = "failpoints"))]
pub fn hit(name: &str) -> bool {
    armed_here(name) || std::env::var("JARVIS_FAILPOINT").is_ok_and(|v| v == name)
}

#[cfg(test)]
fn armed_here(name: &str) -> bool {
    ARMED.with(|a| a.borrow().iter().any(|n| n == name))
}

#[cfg(all(not(test), feature = "failpoints"))]
fn armed_here(_name: &str) -> bool {
    false
}

/// Failpoints are not compiled in: never hit.
#[cfg(not(any(test, feature = "failpoints")))]
#[inline(always)]
pub fn hit(_name: &str) -> bool {
    false
}

/// Abort the process right here when `name` is armed, as a `kill -9` would
/// leave it.
#[inline]
pub fn abort_at(name: &str) {
    if hit(name) {
        std::process::abort();
    }
}

/// Whether failpoints are compiled into this build.
pub const COMPILED_IN: bool = cfg!(any(test, feature = "failpoints"));

#[cfg(test)]
thread_local! {
    static ARMED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Arm `name` for the current thread until the guard drops (unit tests).
#[cfg(test)]
pub fn arm_for_thread(name: &str) -> Armed {
    ARMED.with(|a| a.borrow_mut().push(name.to_string()));
    Armed(name.to_string())
}

#[cfg(test)]
pub struct Armed(String);

#[cfg(test)]
impl Drop for Armed {
    fn drop(&mut self) {
        ARMED.with(|a| a.borrow_mut().retain(|n| n != &self.0));
    }
}
