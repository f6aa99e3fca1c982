//! The MCP servers list: `GET /mcp-servers` (every `[mcp_servers.NAME]`
//! with its transport, where it is, local or remote, on or off, and its
//! state: not started, connected with its tools, or why it failed) and
//! `POST /mcp-servers/switch` (the on/off switch of one server).
//!
//! Human-only, like the Library: no chat tool reaches these routes. Parses,
//! calls `App` and renders; never shows a server's environment or headers.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::app::mcp_clients::McpServerView;
use crate::web::error::{ApiError, ApiResult, Body};
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/mcp-servers", get(list))
        .route("/mcp-servers/switch", post(switch))
}

#[derive(Serialize)]
pub struct Servers {
    pub servers: Vec<McpServerView>,
}

async fn list(State(state): State<Arc<WebState>>) -> ApiResult<Json<Servers>> {
    let app = Arc::clone(&state.app);
    let servers = tokio::task::spawn_blocking(move || app.mcp_servers())
        .await
        .map_err(|e| ApiError::internal(format!("listing MCP servers failed: {e}")))?;
    Ok(Json(Servers { servers }))
}

#[derive(Deserialize)]
pub struct SwitchBody {
    pub name: String,
    pub enabled: bool,
}

async fn switch(State(state): State<Arc<WebState>>, Body(b): Body<SwitchBody>) -> ApiResult<Json<Servers>> {
    let app = Arc::clone(&state.app);
    let servers = tokio::task::spawn_blocking(move || -> ApiResult<Vec<McpServerView>> {
        app.set_mcp_server_enabled(&b.name, b.enabled)?;
        tracing::info!(server = %b.name, enabled = b.enabled, "MCP server switched from the web app");
        Ok(app.mcp_servers())
    })
    .await
    .map_err(|e| ApiError::internal(format!("switching the MCP server failed: {e}")))??;
    Ok(Json(Servers { servers }))
}
