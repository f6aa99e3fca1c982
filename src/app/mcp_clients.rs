//! Other MCP servers for the chat: `[mcp_servers.NAME]` turned into the
//! client registry the chat's tools use, and the web app's on/off switch
//! per server, kept in `state/mcp-switches.json` (the configuration stays
//! as the user wrote it; a switch only overrides `enabled`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::mcp_servers::McpServerConfig;
use crate::mcp_client::{McpClients, ServerSpec, Status, Transport};
use crate::paths::Dir;

/// The switches file under `state/`.
const SWITCHES: &str = "mcp-switches.json";

/// What the user switched, by server name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Switches {
    on: Vec<String>,
    off: Vec<String>,
}

/// One server as the web app lists it.
#[derive(Debug, Clone, Serialize)]
pub struct McpServerView {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// The command line or the URL (never the env or headers).
    pub target: String,
    pub local: bool,
    pub enabled: bool,
    pub status: Status,
}

/// The plain spec of one configured server.
pub fn server_spec(c: &McpServerConfig) -> ServerSpec {
    let transport = match (&c.command, &c.url) {
        (Some(command), _) => Transport::Stdio {
            command: command.clone(),
            args: c.args.clone(),
            env: c.env.clone(),
            cwd: c.cwd.as_deref().map(std::path::PathBuf::from),
        },
        (None, url) => Transport::Http {
            url: url.clone().unwrap_or_default(),
            headers: c.headers.clone(),
        },
    };
    ServerSpec {
        name: c.name.clone(),
        transport,
        local: c.local,
        enabled: c.enabled,
    }
}

impl super::App {
    fn switches(&self) -> Switches {
        let path = self.home.path(Dir::State).join(SWITCHES);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "the MCP switches file is unreadable; using the configuration's");
                Switches::default()
            }),
            Err(_) => Switches::default(),
        }
    }

    /// The clients of `[mcp_servers]`, built on first use (no server starts
    /// until the chat needs its tools).
    pub fn mcp_clients(&self) -> Arc<McpClients> {
        self.mcp_clients
            .get_or_init(|| {
                let switches = self.switches();
                let specs = self
                    .config()
                    .mcp_servers
                    .iter()
                    .map(|c| {
                        let mut spec = server_spec(c);
                        if switches.off.contains(&spec.name) {
                            spec.enabled = false;
                        } else if switches.on.contains(&spec.name) {
                            spec.enabled = true;
                        }
                        spec
                    })
                    .collect();
                Arc::new(McpClients::new(specs))
            })
            .clone()
    }

    /// Every configured MCP server with its state.
    pub fn mcp_servers(&self) -> Vec<McpServerView> {
        self.mcp_clients()
            .list()
            .into_iter()
            .map(|(spec, status)| McpServerView {
                transport: match spec.transport {
                    Transport::Stdio { .. } => "stdio",
                    Transport::Http { .. } => "http",
                },
                target: spec.target(),
                name: spec.name,
                local: spec.local,
                enabled: spec.enabled,
                status,
            })
            .collect()
    }

    /// Switches one server on or off, now and across restarts.
    pub fn set_mcp_server_enabled(&self, name: &str, enabled: bool) -> Result<(), super::AppError> {
        self.mcp_clients().set_enabled(name, enabled)?;
        let mut switches = self.switches();
        switches.on.retain(|n| n != name);
        switches.off.retain(|n| n != name);
        if enabled {
            switches.on.push(name.to_string());
        } else {
            switches.off.push(name.to_string());
        }
        let dir = self
            .home
            .ensure(Dir::State)
            .map_err(|e| super::AppError::Chat(e.to_string()))?;
        let bytes = serde_json::to_vec_pretty(&switches).map_err(|e| super::AppError::Chat(e.to_string()))?;
        crate::paths::write_atomic(&dir.join(SWITCHES), &bytes, 0o600)
            .map_err(|e| super::AppError::Chat(e.to_string()))?;
        Ok(())
    }
}
