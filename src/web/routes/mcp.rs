//! `/mcp`: the knowledge base's MCP tools over streamable HTTP, for MCP
//! clients that connect to a URL instead of launching `jarvis mcp`.
//!
//! The MCP server is `crate::mcp`'s ([`crate::mcp::shared_server`]); this
//! file owns its HTTP transport (rmcp's streamable-HTTP service) and mounts
//! it like every other route. Before it runs, the app-wide guard has already refused a
//! foreign Host (421) and a cross-site POST; here every method — the GET of
//! an event stream included — is also refused when it carries an `Origin`
//! that is not this app's own (403), as the MCP transport rules ask, so a
//! web page elsewhere can never drive these tools from a browser. A client
//! without `Origin` (not a browser) passes, as on every other route.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::app::App;
use crate::cancel::Cancel;
use crate::mcp::JarvisMcp;

use crate::web::error::ApiError;
use crate::web::state::WebState;

pub fn routes(state: &Arc<WebState>) -> Router<Arc<WebState>> {
    let service = http_service(Arc::clone(&state.app), state.allowed_hosts.clone(), &state.shutdown);
    Router::new()
        .route_service("/mcp", service)
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(state),
            same_origin_only,
        ))
}

/// The streamable-HTTP MCP service; `hosts` are the `host:port`
/// authorities it answers to (the web layer's allowlist). Stateless (each
/// POST is answered with JSON; no session state to leak or to hold
/// shutdown open), with rmcp's own Host and Origin allowlists set to the
/// app's loopback addresses as a second line behind the web layer's. Ends
/// its work when `shutdown` is cancelled.
fn http_service(
    app: Arc<App>,
    hosts: Vec<String>,
    shutdown: &Cancel,
) -> StreamableHttpService<JarvisMcp, LocalSessionManager> {
    let server = crate::mcp::shared_server(app);
    let origins: Vec<String> = hosts.iter().map(|h| format!("http://{h}")).collect();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    let token = config.cancellation_token.clone();
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        let shutdown = shutdown.clone();
        rt.spawn(async move {
            shutdown.cancelled().await;
            token.cancel();
        });
    }
    StreamableHttpService::new(move || Ok(server()), Arc::new(LocalSessionManager::default()), config)
}

/// Whether `origin` is one of this app's own (`http://` + an allowed Host).
fn own_origin(origin: &str, hosts: &[String]) -> bool {
    origin
        .strip_prefix("http://")
        .is_some_and(|h| hosts.iter().any(|a| a.eq_ignore_ascii_case(h)))
}

async fn same_origin_only(State(state): State<Arc<WebState>>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let o = origin.to_str().unwrap_or("");
        if !own_origin(o, &state.allowed_hosts) {
            tracing::warn!(method = %req.method(), origin = o, "mcp request from another origin refused");
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "cross_site",
                format!("refused an MCP request from another origin ({o}); only MCP clients on this machine (which send no Origin) and the Jarvis page itself may use /mcp"),
            )
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::own_origin;

    #[test]
    fn only_the_apps_own_origins_pass() {
        let hosts = crate::web::security::allowed_hosts(8080);
        assert!(own_origin("http://127.0.0.1:8080", &hosts));
        assert!(own_origin("http://localhost:8080", &hosts));
        assert!(!own_origin("http://localhost:8081", &hosts));
        assert!(!own_origin("https://evil.example", &hosts));
        assert!(!own_origin("null", &hosts));
        assert!(!own_origin("http://127.0.0.1:8080.evil.example", &hosts));
    }
}
