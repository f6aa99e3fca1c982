//! One MCP session over either transport: the `initialize` handshake,
//! `tools/list` (all pages) and `tools/call`, as JSON-RPC 2.0.
//!
//! Owns: the message shapes and the reading of results — a tool's content
//! blocks become text for the model (text as is, structured content as
//! JSON, anything else named by its type), an `isError` result stays an
//! error result. Must not: know how bytes travel (that is [`super::stdio`]
//! and [`super::http`]).

use std::time::Duration;

use serde_json::{json, Value};

use super::{CallResult, McpClientError, ServerSpec, Transport};

/// The protocol revision offered in `initialize`; the server may answer
/// with an older one it prefers, which is then used.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// Most pages of `tools/list` read (a server that pages forever stops here).
const MAX_PAGES: usize = 20;

/// What moves JSON-RPC messages to and from one server.
pub(crate) trait Wire: Send {
    /// Sends request `message` (which carries `id`) and returns the
    /// response with that id, answering or skipping whatever else the
    /// server sends in between.
    fn request(&mut self, id: u64, message: &Value, timeout: Duration) -> Result<Value, McpClientError>;
    /// Sends a notification (no answer expected).
    fn notify(&mut self, message: &Value) -> Result<(), McpClientError>;
    /// The protocol version agreed, for transports that send it along.
    fn set_protocol_version(&mut self, _version: &str) {}
    fn is_alive(&self) -> bool;
}

/// One tool as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A live session.
pub struct Session {
    server: String,
    wire: Box<dyn Wire>,
    next_id: u64,
}

impl Session {
    /// Starts the transport and runs the handshake.
    pub fn connect(spec: &ServerSpec, timeout: Duration) -> Result<Session, McpClientError> {
        let wire: Box<dyn Wire> = match &spec.transport {
            Transport::Stdio { .. } => Box::new(super::stdio::StdioWire::start(spec)?),
            Transport::Http { .. } => Box::new(super::http::HttpWire::new(spec)?),
        };
        let mut session = Session {
            server: spec.name.clone(),
            wire,
            next_id: 1,
        };
        let result = session.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "jarvis", "version": env!("CARGO_PKG_VERSION")}
            }),
            timeout,
        )?;
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            session.wire.set_protocol_version(v);
        }
        session
            .wire
            .notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(session)
    }

    pub fn is_alive(&self) -> bool {
        self.wire.is_alive()
    }

    fn request(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, McpClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.wire.request(id, &message, timeout)?;
        if let Some(error) = response.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("an error without a message")
                .to_string();
            return Err(McpClientError::Refused {
                server: self.server.clone(),
                what: method.to_string(),
                message,
            });
        }
        response.get("result").cloned().ok_or_else(|| McpClientError::Protocol {
            server: self.server.clone(),
            reason: format!("the answer to {method} has neither result nor error"),
        })
    }

    /// Every tool the server offers.
    pub fn list_tools(&mut self, timeout: Duration) -> Result<Vec<ToolInfo>, McpClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, timeout)?;
            let listed = page
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| McpClientError::Protocol {
                    server: self.server.clone(),
                    reason: "tools/list returned no `tools` array".into(),
                })?;
            for t in listed {
                let Some(name) = t.get("name").and_then(Value::as_str) else {
                    continue;
                };
                tools.push(ToolInfo {
                    name: name.to_string(),
                    description: t
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    input_schema: t
                        .get("inputSchema")
                        .cloned()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                });
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    /// Calls one tool and reads its result as text.
    pub fn call_tool(
        &mut self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<CallResult, McpClientError> {
        let arguments = if arguments.is_object() {
            arguments.clone()
        } else {
            json!({})
        };
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}), timeout)?;
        Ok(result_text(&result))
    }
}

/// A `tools/call` result as text for the model.
pub fn result_text(result: &Value) -> CallResult {
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            Some("resource") => {
                let r = &block["resource"];
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => parts.push(t.to_string()),
                    None => parts.push(format!("[a resource: {}]", r["uri"].as_str().unwrap_or("?"))),
                }
            }
            Some(other) => parts.push(format!("[{other} content, not shown]")),
            None => {}
        }
    }
    if parts.is_empty() {
        if let Some(s) = result.get("structuredContent") {
            parts.push(s.to_string());
        }
    }
    CallResult {
        text: parts.join("\n"),
        is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_as_text_with_their_error_flag() {
        let r = result_text(&json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "…", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}}
        ]}));
        assert_eq!(r.text, "first\n[image content, not shown]\ninside");
        assert!(!r.is_error);
        let r = result_text(&json!({"content": [], "structuredContent": {"t": 21}, "isError": true}));
        assert_eq!(r.text, r#"{"t":21}"#);
        assert!(r.is_error);
    }
}
