//! The one place the tracing subscriber is set up.
//!
//! Library code logs through `tracing`; this sends warnings and errors (and
//! info from jarvis itself) to `$JARVIS_HOME/logs/jarvis.log`, so a caught
//! error always has somewhere to go. User-facing CLI messages are not logs:
//! the CLI writes those to stderr itself. Nothing is ever sent anywhere else
//! — Jarvis has no telemetry of any kind.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Mutex;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer};

use crate::paths::{Dir, JarvisHome, PathsError};

/// Filter for the log file; `JARVIS_LOG` overrides it (EnvFilter syntax).
const DEFAULT_FILTER: &str = "warn,jarvis=info";

/// Install the global subscriber. `verbose` also mirrors logs to stderr.
/// Returns the log file path. Calling it twice is harmless (the second
/// install is ignored), which keeps in-process tests simple.
pub fn init(home: &JarvisHome, verbose: bool) -> Result<PathBuf, PathsError> {
    init_named(home, verbose, "jarvis.log")
}

/// [`init`] writing to `logs/<name>` (`jarvis sync` uses `sync.log`).
pub fn init_named(home: &JarvisHome, verbose: bool, name: &str) -> Result<PathBuf, PathsError> {
    let dir = home.ensure(Dir::Logs)?;
    let path = dir.join(name);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .map_err(|source| PathsError::Io {
            path: path.clone(),
            source,
        })?;
    let filter = || EnvFilter::try_from_env("JARVIS_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let file_layer = fmt::layer()
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .with_filter(filter());
    let stderr_layer = verbose.then(|| {
        fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(EnvFilter::new("debug,ort=warn,tantivy=info,hyper=info"))
    });
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    Ok(path)
}

/// The PDF worker child's subscriber: the same filter, written to stderr
/// without colours or timestamps. The parent reads the child's stderr and
/// re-logs each line into its own `jarvis.log` (the worker never touches
/// `$JARVIS_HOME` itself).
pub fn init_worker() {
    let filter = EnvFilter::try_from_env("JARVIS_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let _ = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_writer(std::io::stderr)
                .with_filter(filter),
        )
        .try_init();
}
