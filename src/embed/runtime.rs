//! The process-wide ONNX Runtime: loaded once from an explicit path.
//!
//! ort with `load-dynamic` keeps the dlopen'd library and its one
//! [`Environment`] in process globals, and its implicit loading path panics on
//! a missing or too-old library. So Jarvis never lets ort load implicitly:
//! every session is created through [`environment`], which calls
//! [`ort::init_from`] (an error, not a panic) the first time and afterwards
//! returns the same environment. Asking for a *different* library later is an
//! error naming both paths — ort would otherwise silently keep the first one.
//!
//! The environment is kept alive for the life of the process: ort refuses to
//! build a second environment even after the first one is dropped.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use ort::environment::Environment;

use super::EmbedError;

/// The oldest ONNX Runtime minor version (1.x) the `api-23` build accepts.
pub const REQUIRED_ORT_MINOR: u32 = ort::MINOR_VERSION;

struct Loaded {
    /// Canonical path of the library that was dlopen'd.
    path: PathBuf,
    env: Environment,
}

// A Mutex rather than a OnceLock: initialisation can fail and must then be
// retryable with a corrected path, and two threads racing to initialise must
// not both reach ort's own once-only globals.
static RUNTIME: Mutex<Option<Loaded>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Loaded>> {
    // A panic while holding the lock cannot leave `Option<Loaded>` half-written,
    // so a poisoned lock is still safe to use.
    crate::lock::lock(&RUNTIME)
}

/// Loads ONNX Runtime from `dylib` (first call) and returns the process's
/// environment. Later calls with the same library are a cheap no-op; a
/// different library is [`EmbedError::RuntimeConflict`].
pub fn environment(dylib: &Path) -> Result<Environment, EmbedError> {
    if !dylib.is_file() {
        return Err(EmbedError::RuntimeNotFound { path: dylib.to_owned() });
    }
    // Canonicalise so `./lib.so` and `/abs/lib.so` (or a symlink) count as one.
    let path = dylib.canonicalize().map_err(|e| EmbedError::RuntimeLoad {
        path: dylib.to_owned(),
        reason: e.to_string(),
    })?;
    let mut guard = lock();
    if let Some(loaded) = guard.as_ref() {
        // The same library unpacked in two places (two JARVIS_HOMEs in one
        // process, as in tests) is the same library.
        let same_bytes = || {
            let hash = |p: &Path| crate::runtime::sha256_file(p).ok();
            hash(&loaded.path).is_some_and(|a| Some(a) == hash(&path))
        };
        if loaded.path == path || same_bytes() {
            return Ok(loaded.env.clone());
        }
        return Err(EmbedError::RuntimeConflict {
            loaded: loaded.path.clone(),
            requested: path,
        });
    }
    let started = Instant::now();
    // The PyPI ONNX Runtime carries Microsoft's 1DS telemetry: on load it
    // writes a device id and a queue of "ProcessInfo" events (OS, CPU,
    // memory, executable path) under ~/.cache/Microsoft/DeveloperTools,
    // to be uploaded later. `with_telemetry(false)` below does not stop
    // that; this variable does, and it must be set before the library is
    // loaded. Jarvis sends no telemetry of any kind.
    std::env::set_var("ORT_DISABLE_TELEMETRY", "1");
    let builder = ort::init_from(&path).map_err(|e| EmbedError::RuntimeLoad {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let env = builder
        .with_name("jarvis")
        // ORT telemetry is off in pypi builds anyway; say so explicitly.
        .with_telemetry(false)
        .build()
        .map_err(|e| EmbedError::RuntimeLoad {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    tracing::info!(
        path = %path.display(),
        // Not ort_version(): that takes the lock this function holds.
        build = ort::info(),
        ms = started.elapsed().as_millis() as u64,
        "ONNX Runtime loaded"
    );
    *guard = Some(Loaded { path, env: env.clone() });
    Ok(env)
}

/// The path ONNX Runtime was loaded from, if it has been.
pub fn loaded_path() -> Option<PathBuf> {
    lock().as_ref().map(|l| l.path.clone())
}

/// The loaded runtime's version (e.g. `1.32.0`) when its build-info string
/// names a release branch (`git-branch=rel-1.32.0`); `None` before
/// [`environment`] succeeded or when it does not — the PyPI 1.32.0 build
/// reports `git-branch=HEAD`. ort exposes the real version string only inside
/// its loader, so use [`build_info`] (commit id) in reports; a successful
/// load already guarantees at least 1.[`REQUIRED_ORT_MINOR`].
pub fn ort_version() -> Option<String> {
    build_info().and_then(|info| parse_release_branch(&info))
}

/// ONNX Runtime's full build-info string (`ORT Build Info: git-branch=…`),
/// for `jarvis runtime check`. `None` until the runtime is loaded — calling
/// into ort before that would make it load a library on its own.
pub fn build_info() -> Option<String> {
    if lock().is_none() {
        return None;
    }
    Some(ort::info().to_owned())
}

fn parse_release_branch(info: &str) -> Option<String> {
    let branch = info.split("git-branch=").nth(1)?;
    let branch = branch.split([',', ' ']).next()?;
    branch.strip_prefix("rel-").map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_branch_is_parsed_from_build_info() {
        assert_eq!(
            parse_release_branch("ORT Build Info: git-branch=rel-1.32.0, git-commit-id=abc, build type=Release"),
            Some("1.32.0".to_owned())
        );
        assert_eq!(parse_release_branch("ORT Build Info: git-branch=main, x"), None);
        assert_eq!(parse_release_branch("nothing"), None);
    }
}
