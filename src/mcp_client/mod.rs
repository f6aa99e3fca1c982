//! Other MCP servers' tools, for the chat agent: the client side of the
//! Model Context Protocol.
//!
//! Owns: the plain description of a configured server ([`ServerSpec`]:
//! a command with arguments and environment, spoken to over stdio, or a
//! streamable-HTTP URL with headers), the JSON-RPC session with it
//! (`initialize`, `tools/list`, `tools/call`; [`session`]), its two
//! transports ([`stdio`] through the sandbox, [`http`] with a blocking
//! client), and [`McpClients`]: one lazily connected session per server,
//! started at the first use, dropped and started again when its process
//! crashed or its connection failed, its failure kept as a status instead
//! of an error that ends anything else. Tool names are offered namespaced,
//! `SERVER__tool`, in the characters every model API accepts ([`exposed_name`]).
//!
//! Must not: decide privacy (whether a call may go out, or a result may
//! reach a cloud model, is the chat's call), read the configuration (the
//! app hands in [`ServerSpec`]s), or start a process other than through
//! [`crate::sandbox`].

pub mod http;
pub mod session;
pub mod stdio;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use session::{Session, ToolInfo};

/// How long a server may take to start and answer `initialize`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest tool name model APIs accept (OpenAI, Anthropic).
pub const MAX_TOOL_NAME: usize = 64;
/// Between a server's name and its tool's in an offered name.
pub const SEPARATOR: &str = "__";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The server's program could not be started.
    #[error("MCP server `{server}` could not start: {reason} — check `command` in [mcp_servers.{server}]")]
    Start { server: String, reason: String },
    /// The server's process ended or its connection closed.
    #[error("MCP server `{server}` stopped: {reason}")]
    Gone { server: String, reason: String },
    /// No answer in time.
    #[error("MCP server `{server}` did not answer {what} within {secs} s")]
    Timeout { server: String, what: String, secs: u64 },
    /// The HTTP endpoint could not be reached or refused the request.
    #[error("MCP server `{server}` at {url}: {reason} — check `url` and `headers` in [mcp_servers.{server}]")]
    Http {
        server: String,
        url: String,
        reason: String,
    },
    /// The server answered with something that is not MCP.
    #[error("MCP server `{server}` sent something that is not MCP: {reason}")]
    Protocol { server: String, reason: String },
    /// The server answered a request with a JSON-RPC error.
    #[error("MCP server `{server}` refused {what}: {message}")]
    Refused {
        server: String,
        what: String,
        message: String,
    },
    /// A name that is not a configured server, or one switched off.
    #[error("no MCP server `{0}` is configured and switched on")]
    Unknown(String),
}

impl McpClientError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            McpClientError::Start { .. } | McpClientError::Gone { .. } | McpClientError::Http { .. } => {
                ErrorKind::Unavailable
            }
            McpClientError::Timeout { .. } => ErrorKind::Unavailable,
            McpClientError::Protocol { .. } => ErrorKind::Internal,
            McpClientError::Refused { .. } | McpClientError::Unknown(_) => ErrorKind::User,
        }
    }

    /// Whether a fresh connection could cure it (the process died, the
    /// connection dropped, an HTTP session expired).
    fn worth_reconnecting(&self) -> bool {
        matches!(self, McpClientError::Gone { .. } | McpClientError::Http { .. })
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One configured server, as the app resolved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    /// Runs on this machine and sends nothing elsewhere (stdio servers are
    /// by default; an HTTP server only when the user says so).
    pub local: bool,
    /// Offered to the model at all (the user's switch).
    pub enabled: bool,
}

impl ServerSpec {
    /// What the user configured to reach it: the command line or the URL.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }

    /// Values the user put in the environment and headers: redacted from
    /// whatever is logged or shown.
    pub fn secrets(&self) -> Vec<String> {
        let pairs = match &self.transport {
            Transport::Stdio { env, .. } => env,
            Transport::Http { headers, .. } => headers,
        };
        pairs
            .iter()
            .flat_map(|(_, v)| {
                // "Bearer abc" hides "abc" too, wherever it appears alone.
                let last = v.split_whitespace().last().map(str::to_string);
                std::iter::once(v.clone()).chain(last)
            })
            .filter(|v| v.len() >= 6)
            .collect()
    }
}

/// A server's state as the web app lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    /// Not needed yet: servers start at their first use.
    NotStarted,
    Connected {
        tools: Vec<String>,
    },
    Failed {
        error: String,
    },
    Off,
}

/// A tool offered to the model: its namespaced name, description and schema.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    pub exposed: String,
    pub server: String,
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
}

/// The result of one call, as text for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub text: String,
    pub is_error: bool,
}

struct Slot {
    spec: ServerSpec,
    session: Option<Session>,
    tools: Option<Vec<ToolInfo>>,
    status: Status,
    /// When connecting last failed: turns do not wait on a broken server
    /// again until [`RETRY_FAILED_AFTER`] has passed.
    failed_at: Option<std::time::Instant>,
}

/// How long a server that failed to connect is left alone by new turns.
pub const RETRY_FAILED_AFTER: Duration = Duration::from_secs(60);

/// Every configured server, each connected at its first use.
pub struct McpClients {
    slots: BTreeMap<String, Arc<Mutex<Slot>>>,
    /// Each server's spec and status as last seen, so listing them never
    /// waits behind a slow call holding a slot.
    views: Mutex<BTreeMap<String, (ServerSpec, Status)>>,
}

impl McpClients {
    pub fn new(specs: Vec<ServerSpec>) -> McpClients {
        let slots = specs
            .into_iter()
            .map(|spec| {
                let status = if spec.enabled { Status::NotStarted } else { Status::Off };
                (
                    spec.name.clone(),
                    Arc::new(Mutex::new(Slot {
                        spec,
                        session: None,
                        tools: None,
                        status,
                        failed_at: None,
                    })),
                )
            })
            .collect::<BTreeMap<_, _>>();
        let views = slots
            .iter()
            .map(|(name, slot): (&String, &Arc<Mutex<Slot>>)| {
                let slot = crate::lock::lock(slot);
                (name.clone(), (slot.spec.clone(), slot.status.clone()))
            })
            .collect();
        McpClients {
            slots,
            views: Mutex::new(views),
        }
    }

    /// Records `slot`'s spec and status for [`Self::list`].
    fn publish(&self, slot: &Slot) {
        crate::lock::lock(&self.views).insert(slot.spec.name.clone(), (slot.spec.clone(), slot.status.clone()));
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Every server with its status, in name order.
    pub fn list(&self) -> Vec<(ServerSpec, Status)> {
        crate::lock::lock(&self.views).values().cloned().collect()
    }

    /// Every server's configured secret values, for redaction.
    pub fn secrets(&self) -> Vec<String> {
        self.list().iter().flat_map(|(spec, _)| spec.secrets()).collect()
    }

    /// The spec of one server.
    pub fn spec(&self, server: &str) -> Option<ServerSpec> {
        crate::lock::lock(&self.views).get(server).map(|(spec, _)| spec.clone())
    }

    /// Switches one server on or off; off drops its connection.
    pub fn set_enabled(&self, server: &str, enabled: bool) -> Result<(), McpClientError> {
        let slot = self
            .slots
            .get(server)
            .ok_or_else(|| McpClientError::Unknown(server.to_string()))?;
        let mut slot = crate::lock::lock(slot);
        slot.spec.enabled = enabled;
        if enabled {
            slot.failed_at = None;
            if slot.status == Status::Off {
                slot.status = Status::NotStarted;
            }
        } else {
            slot.session = None;
            slot.tools = None;
            slot.status = Status::Off;
        }
        self.publish(&slot);
        Ok(())
    }

    /// The tools of every switched-on server, connecting those not yet
    /// connected. A server that fails is left out and its status says why;
    /// nothing else is affected.
    pub fn offered_tools(&self) -> Vec<OfferedTool> {
        let mut out = Vec::new();
        for slot in self.slots.values() {
            let mut slot = crate::lock::lock(slot);
            if !slot.spec.enabled {
                continue;
            }
            if slot.session.is_none() && slot.failed_at.is_some_and(|t| t.elapsed() < RETRY_FAILED_AFTER) {
                continue;
            }
            let ready = ensure_tools(&mut slot);
            self.publish(&slot);
            if let Err(e) = ready {
                tracing::warn!(server = %slot.spec.name, error = %e, "an MCP server's tools are not offered");
                continue;
            }
            let server = slot.spec.name.clone();
            for t in slot.tools.iter().flatten() {
                out.push(OfferedTool {
                    exposed: exposed_name(&server, &t.name),
                    server: server.clone(),
                    tool: t.name.clone(),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                });
            }
        }
        out
    }

    /// Which server and tool an offered name stands for (from the lists
    /// already fetched; nothing is started).
    pub fn resolve(&self, exposed: &str) -> Option<(String, String)> {
        crate::lock::lock(&self.views).values().find_map(|(spec, status)| {
            let Status::Connected { tools } = status else {
                return None;
            };
            tools
                .iter()
                .find(|t| spec.enabled && exposed_name(&spec.name, t) == exposed)
                .map(|t| (spec.name.clone(), t.clone()))
        })
    }

    /// Calls `tool` on `server`. A call that fails because the server died
    /// or its connection broke is tried once more on a fresh connection.
    pub fn call(&self, server: &str, tool: &str, arguments: &Value) -> Result<CallResult, McpClientError> {
        let slot = self
            .slots
            .get(server)
            .ok_or_else(|| McpClientError::Unknown(server.to_string()))?;
        let mut slot = crate::lock::lock(slot);
        if !slot.spec.enabled {
            return Err(McpClientError::Unknown(server.to_string()));
        }
        let mut tries = 0;
        loop {
            tries += 1;
            let ready = ensure_tools(&mut slot);
            self.publish(&slot);
            ready?;
            let Some(session) = slot.session.as_mut() else {
                return Err(McpClientError::Gone {
                    server: server.to_string(),
                    reason: "no session".into(),
                });
            };
            match session.call_tool(tool, arguments, CALL_TIMEOUT) {
                Ok(r) => return Ok(r),
                Err(e) if e.worth_reconnecting() && tries < 2 => {
                    tracing::warn!(server, error = %e, "the MCP server's connection broke; reconnecting");
                    slot.session = None;
                }
                Err(e) => {
                    if e.worth_reconnecting() {
                        slot.session = None;
                        slot.status = Status::Failed { error: e.to_string() };
                        self.publish(&slot);
                    }
                    return Err(e);
                }
            }
        }
    }
}

/// Connects `slot` if it has no live session, and fetches its tool list
/// once per connection.
fn ensure_tools(slot: &mut Slot) -> Result<(), McpClientError> {
    if slot.session.as_ref().is_some_and(|s| !s.is_alive()) {
        tracing::warn!(server = %slot.spec.name, "the MCP server's process ended; starting it again");
        slot.session = None;
    }
    if slot.session.is_none() {
        match Session::connect(&slot.spec, CONNECT_TIMEOUT).and_then(|mut s| {
            let tools = s.list_tools(CONNECT_TIMEOUT)?;
            Ok((s, tools))
        }) {
            Ok((session, tools)) => {
                slot.status = Status::Connected {
                    tools: tools.iter().map(|t| t.name.clone()).collect(),
                };
                slot.session = Some(session);
                slot.tools = Some(tools);
                slot.failed_at = None;
            }
            Err(e) => {
                slot.status = Status::Failed { error: e.to_string() };
                slot.failed_at = Some(std::time::Instant::now());
                return Err(e);
            }
        }
    }
    Ok(())
}

/// `SERVER__tool` in the characters every model API accepts
/// (`[A-Za-z0-9_-]`, at most [`MAX_TOOL_NAME`]); anything else becomes `_`.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!("{}{SEPARATOR}{}", clean(server), clean(tool));
    name.truncate(MAX_TOOL_NAME);
    name
}

/// Whether an offered name is an MCP tool's (has the separator).
pub fn is_namespaced(name: &str) -> bool {
    name.contains(SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_namespaced_in_the_characters_model_apis_accept() {
        assert_eq!(exposed_name("weather", "get_forecast"), "weather__get_forecast");
        assert_eq!(exposed_name("my server", "tool.v2/x"), "my_server__tool_v2_x");
        let long = exposed_name("s", &"t".repeat(100));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert!(is_namespaced("weather__get_forecast") && !is_namespaced("search_kb"));
    }

    #[test]
    fn secrets_cover_whole_values_and_bearer_tokens() {
        let spec = ServerSpec {
            name: "docs".into(),
            transport: Transport::Http {
                url: "https://example.com/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer tok-123456".into())],
            },
            local: false,
            enabled: true,
        };
        assert_eq!(
            spec.secrets(),
            vec!["Bearer tok-123456".to_string(), "tok-123456".to_string()]
        );
        assert_eq!(spec.target(), "https://example.com/mcp");
    }

    #[test]
    fn a_server_that_cannot_start_is_a_status_not_a_failure_of_the_others() {
        let clients = McpClients::new(vec![
            ServerSpec {
                name: "broken".into(),
                transport: Transport::Stdio {
                    command: "/nonexistent/mcp-server".into(),
                    args: vec![],
                    env: vec![],
                    cwd: None,
                },
                local: true,
                enabled: true,
            },
            ServerSpec {
                name: "off".into(),
                transport: Transport::Http {
                    url: "http://127.0.0.1:9/mcp".into(),
                    headers: vec![],
                },
                local: false,
                enabled: false,
            },
        ]);
        assert!(clients.offered_tools().is_empty());
        let list = clients.list();
        let Status::Failed { error } = &list[0].1 else {
            panic!("{:?}", list[0].1)
        };
        assert!(
            error.contains("could not start") && error.contains("mcp_servers.broken"),
            "{error}"
        );
        assert_eq!(list[1].1, Status::Off, "a switched-off server is never started");
        assert!(matches!(
            clients.call("off", "x", &Value::Null),
            Err(McpClientError::Unknown(_))
        ));
    }
}
