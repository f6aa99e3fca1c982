//! The web app: the only module that speaks HTTP (axum on hyper 1).
//!
//! Owns: binding 127.0.0.1 (never another address), the router, the
//! browser-facing hardening (Host allowlist, same-origin check on every
//! state-changing request, security headers, body limits), the embedded UI
//! (`assets/web/`), the JSON DTOs of every route and the one mapping from
//! error kinds to HTTP statuses (`error.rs`).
//! Must not: hold business logic. Routes translate a request into a call on
//! [`App`] (or the chat/drafts features it composes) and the result into
//! JSON; anything a CLI command could also do lives below this layer.
//!
//! Layout: `security.rs` (middleware), `assets.rs` (embedded files),
//! `error.rs` (kind → status), `state.rs` (per-process web state: running
//! turns, pending confirmations), `markdown.rs` (model text → safe HTML),
//! and one file per resource under `routes/`.

pub mod assets;
pub mod error;
pub mod ids;
pub mod markdown;
pub mod routes;
pub mod security;
pub mod state;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;

use crate::app::App;
use crate::cancel::Cancel;
use crate::error_kind::ErrorKind;

pub use error::ApiError;
pub use state::WebState;

/// Largest request body any route accepts (a prompt or a draft save is the
/// biggest thing a browser sends). Larger bodies get 413.
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// How `jarvis serve` wants the server run.
#[derive(Default)]
pub struct WebOptions {
    /// Overrides `web.port` from the configuration. `Some(0)` picks a free
    /// port (tests, benchmarks).
    pub port: Option<u16>,
    /// Called once the socket is bound, with the address (the CLI prints the
    /// URL and, with `--open`, opens a browser; this layer prints nothing).
    pub on_ready: Option<Box<dyn FnOnce(SocketAddr) + Send>>,
}

impl std::fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebOptions")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// Why the web server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The port is taken or not ours to bind.
    #[error("cannot listen on 127.0.0.1:{port}: {source} — another program (maybe another `jarvis serve`) uses it; pick another with `jarvis serve --port N` or `jarvis config set web.port N`")]
    Bind { port: u16, source: std::io::Error },
    /// The server loop failed after it started.
    #[error("the web server stopped: {0}")]
    Serve(std::io::Error),
}

impl WebError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            WebError::Bind { .. } => ErrorKind::Unavailable,
            WebError::Serve(_) => ErrorKind::Internal,
        }
    }
}

/// The port to use: `--port`, else `web.port`.
pub fn configured_port(app: &App, opts: &WebOptions) -> u16 {
    opts.port.unwrap_or_else(|| app.web_port())
}

/// A bound listener, before it serves: lets callers learn the address.
pub struct Bound {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

impl Bound {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Bind 127.0.0.1:`port`. Loopback only, by construction: there is no
/// parameter for the address.
pub async fn bind(port: u16) -> Result<Bound, WebError> {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|source| WebError::Bind { port, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| WebError::Bind { port, source })?;
    Ok(Bound { listener, addr })
}

/// The full application router for a server listening on `addr`.
pub fn router(state: Arc<WebState>) -> Router {
    routes::router(state.clone())
        .layer(axum::middleware::from_fn(security::read_body_by_deadline))
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(axum::middleware::from_fn(security::headers))
}

/// Serve the web app until `shutdown` is cancelled. Live turns are cancelled
/// on the way out (their upstream connections close with them).
pub async fn serve(app: Arc<App>, mut opts: WebOptions, shutdown: Cancel) -> Result<(), WebError> {
    let bound = bind(configured_port(&app, &opts)).await?;
    if let Some(cb) = opts.on_ready.take() {
        cb(bound.addr());
    }
    serve_bound(app, bound, shutdown).await
}

/// How long a client may take to send a request's head (its line and
/// headers) once it starts, or to start the next one on a kept-alive
/// connection: a client that trickles its headers (a slow-loris) or sits
/// idle is disconnected instead of holding a connection and a task.
pub const HEADER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Serve on an already bound listener (tests and benchmarks bind port 0).
///
/// The connection loop is hyper's own (`axum::serve` gives hyper no timer,
/// so [`HEADER_DEADLINE`] would never fire): each accepted connection is
/// served as HTTP/1.1 (the app uses no protocol upgrade: its streams are
/// plain responses), watched for graceful shutdown.
pub async fn serve_bound(app: Arc<App>, bound: Bound, shutdown: Cancel) -> Result<(), WebError> {
    let state = Arc::new(WebState::new(app, bound.addr.port(), shutdown.clone()));
    tracing::info!(addr = %bound.addr, "web app listening");
    let router = router(state.clone());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            _ = state::stopped(&shutdown) => break,
            r = bound.listener.accept() => r,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors and the like: back off, do not spin.
                tracing::error!(error = %e, "web: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_DEADLINE);
        let conn = graceful.watch(http.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "web: a connection ended with an error");
            }
        });
    }
    drop(bound.listener);
    // Open SSE streams would hold graceful shutdown forever: end every live
    // turn first, which ends its stream.
    let tickets = state.cancel_all_turns();
    // Roll the stopped turns back so no half turn is left on disk.
    if let Ok(chat) = state.app.chat() {
        let _ = tokio::task::spawn_blocking(move || {
            for t in tickets {
                if let Err(e) = chat.finish_stop(t) {
                    tracing::warn!(error = %e, "could not roll back a turn stopped at shutdown");
                }
            }
        })
        .await;
    }
    graceful.shutdown().await;
    tracing::info!("web app stopped");
    Ok(())
}
