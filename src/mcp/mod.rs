//! The knowledge base as an MCP server for other agents (an edge, like
//! `cli` and `web`), on rmcp.
//!
//! Owns: the MCP tool surface — `search`, `get_document`, `list_documents`,
//! `kb_stats`, their model-oriented schemas and JSON results (`tools.rs`) —,
//! the rmcp handler (`server.rs`), where a call runs (`backend.rs`: the
//! running owner through its socket, or this process), the stdio transport
//! ([`serve_stdio`], `jarvis mcp`) and the server `web` serves at `/mcp`
//! ([`shared_server`]).
//! Must not: write anything (every tool is read-only), speak HTTP (the web
//! layer owns the streamable-HTTP transport and checks Host and Origin),
//! print (the CLI says what it needs on stderr), or widen privacy: an MCP
//! client is a model we know nothing about, so it is treated as cloud — the
//! public-only filter of every search and listing is set in `tools.rs`,
//! lifted only by `[mcp] include_private = true`.

pub mod backend;
pub mod server;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

use crate::app::App;
use crate::cancel::Cancel;
use crate::config::Config;
use crate::error_kind::ErrorKind;

pub use backend::Backend;
pub use server::JarvisMcp;
pub use tools::{Scope, ToolError};

/// Why an MCP server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The client did not complete the MCP handshake.
    #[error("the MCP client did not complete the handshake: {0} — start `jarvis mcp` from an MCP client (it speaks JSON-RPC on stdin/stdout)")]
    Handshake(String),
    /// The transport failed while serving.
    #[error("the MCP connection failed: {0}")]
    Transport(String),
}

impl McpError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            McpError::Handshake(_) => ErrorKind::User,
            McpError::Transport(_) => ErrorKind::Unavailable,
        }
    }
}

/// The scope `[mcp] include_private` gives.
pub fn scope(config: &Config) -> Scope {
    Scope::from_include_private(crate::app::mcp_include_private(config))
}

/// Serve MCP on this process's stdin/stdout until the client closes them
/// (or `shutdown` is cancelled). Tool calls go to a running owner when
/// there is one, else to a knowledge base this process opens while calls
/// come in.
pub async fn serve_stdio(config: Config, shutdown: Cancel) -> Result<(), McpError> {
    let scope = scope(&config);
    let backend = Arc::new(Backend::Standalone(backend::Standalone::new(config)));
    let handler = JarvisMcp::new(Arc::clone(&backend), scope);
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::Handshake(e.to_string()))?;
    tracing::info!(?scope, "mcp: serving on stdio");
    let reaper = {
        let backend = Arc::clone(&backend);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let b = Arc::clone(&backend);
                let _ = tokio::task::spawn_blocking(move || {
                    if let Backend::Standalone(s) = &*b {
                        s.release_if_idle();
                    }
                })
                .await;
            }
        })
    };
    let token = running.cancellation_token();
    let _guard = shutdown.on_cancel(move || token.cancel());
    let result = running.waiting().await;
    reaper.abort();
    tracing::info!("mcp: stdio session ended");
    result.map(|_| ()).map_err(|e| McpError::Transport(e.to_string()))
}

/// The MCP server `jarvis serve` answers `/mcp` with (one per HTTP
/// session; the web layer owns the transport): tool calls run against the
/// owner's own `app`, in the scope `[mcp] include_private` gives.
pub fn shared_server(app: Arc<App>) -> impl Fn() -> JarvisMcp + Send + Sync + 'static {
    let scope = scope(&app.config());
    let backend = Arc::new(Backend::Shared(app));
    move || JarvisMcp::new(Arc::clone(&backend), scope)
}
