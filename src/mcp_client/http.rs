//! The streamable-HTTP transport: each JSON-RPC message is a POST to the
//! server's one URL, answered with JSON or with a stream of Server-Sent
//! Events carrying the response; the session id the server hands out at
//! `initialize` travels on every later request, and is ended with a DELETE
//! when the session is dropped.
//!
//! Must not: follow a redirect to another host with the user's headers, or
//! go through a proxy from the environment to a server on this machine.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use serde_json::Value;
use ureq::Agent;

use super::session::Wire;
use super::{McpClientError, ServerSpec, Transport};
use crate::llm::sse::SseParser;

/// Longest response body read as one JSON document.
const MAX_BODY: u64 = 16 << 20;

pub struct HttpWire {
    server: String,
    url: String,
    headers: Vec<(String, String)>,
    session_id: Option<String>,
    protocol_version: Option<String>,
    broken: bool,
}

impl HttpWire {
    pub fn new(spec: &ServerSpec) -> Result<HttpWire, McpClientError> {
        let Transport::Http { url, headers } = &spec.transport else {
            return Err(McpClientError::Protocol {
                server: spec.name.clone(),
                reason: "not an HTTP server".into(),
            });
        };
        Ok(HttpWire {
            server: spec.name.clone(),
            url: url.clone(),
            headers: headers.clone(),
            session_id: None,
            protocol_version: None,
            broken: false,
        })
    }

    fn agent(&self, timeout: Duration) -> Agent {
        let mut config = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(timeout))
            .max_redirects(0)
            .user_agent("jarvis");
        if crate::llm::spec::url_host(&self.url).is_some_and(|h| crate::llm::spec::is_loopback_host(&h)) {
            config = config.proxy(None);
        }
        config.build().into()
    }

    fn http_error(&mut self, reason: String) -> McpClientError {
        self.broken = true;
        McpClientError::Http {
            server: self.server.clone(),
            url: self.url.clone(),
            reason,
        }
    }

    /// POSTs one message; `None` for a 202 (a notification taken).
    fn post(
        &mut self,
        message: &Value,
        timeout: Duration,
    ) -> Result<Option<ureq::http::Response<ureq::Body>>, McpClientError> {
        let agent = self.agent(timeout);
        let mut req = agent
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(id) = &self.session_id {
            req = req.header("mcp-session-id", id.as_str());
        }
        if let Some(v) = &self.protocol_version {
            req = req.header("mcp-protocol-version", v.as_str());
        }
        let response = match req.send_json(message) {
            Ok(r) => r,
            Err(e) => return Err(self.http_error(format!("cannot reach it ({e})"))),
        };
        let status = response.status().as_u16();
        if let Some(id) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            self.session_id = Some(id.to_string());
        }
        match status {
            202 => Ok(None),
            200..=299 => Ok(Some(response)),
            404 if self.session_id.is_some() => {
                Err(self.http_error("the server no longer knows this session (404)".into()))
            }
            401 | 403 => Err(McpClientError::Refused {
                server: self.server.clone(),
                what: "the connection".into(),
                message: format!("HTTP {status} — the server wants credentials; set them in `headers`"),
            }),
            _ => {
                let body = response
                    .into_body()
                    .with_config()
                    .limit(4096)
                    .lossy_utf8(true)
                    .read_to_string()
                    .unwrap_or_default();
                let head: String = body.chars().take(200).collect();
                Err(self.http_error(format!("HTTP {status}: {head}")))
            }
        }
    }
}

impl Wire for HttpWire {
    fn request(&mut self, id: u64, message: &Value, timeout: Duration) -> Result<Value, McpClientError> {
        let Some(response) = self.post(message, timeout)? else {
            return Err(self.http_error("it accepted a request without answering it (202)".into()));
        };
        let is_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let protocol = |reason: String| McpClientError::Protocol {
            server: self.server.clone(),
            reason,
        };
        if !is_stream {
            let body = response
                .into_body()
                .with_config()
                .limit(MAX_BODY)
                .read_to_string()
                .map_err(|e| protocol(format!("unreadable answer ({e})")))?;
            let v: Value = serde_json::from_str(&body).map_err(|e| protocol(format!("not JSON ({e})")))?;
            // A batch answer: pick ours.
            if let Value::Array(items) = v {
                return items
                    .into_iter()
                    .find(|m| m.get("id").and_then(Value::as_u64) == Some(id))
                    .ok_or_else(|| protocol("no answer with our id in the batch".into()));
            }
            return Ok(v);
        }
        let mut reader = BufReader::new(response.into_body().into_reader());
        let mut parser = SseParser::default();
        loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).map_err(|e| McpClientError::Http {
                server: self.server.clone(),
                url: self.url.clone(),
                reason: format!("the answer stream broke ({e})"),
            })?;
            let event = if n == 0 {
                match parser.finish() {
                    Some(ev) => Some(ev),
                    None => return Err(self.http_error("the answer stream ended without the answer".into())),
                }
            } else {
                parser.push_line(line.trim_end_matches(['\n', '\r']))
            };
            let Some(event) = event else { continue };
            let Ok(msg) = serde_json::from_str::<Value>(&event.data) else {
                continue;
            };
            if msg.get("id").and_then(Value::as_u64) == Some(id) && msg.get("method").is_none() {
                return Ok(msg);
            }
        }
    }

    fn notify(&mut self, message: &Value) -> Result<(), McpClientError> {
        self.post(message, Duration::from_secs(30)).map(|_| ())
    }

    fn set_protocol_version(&mut self, version: &str) {
        self.protocol_version = Some(version.to_string());
    }

    fn is_alive(&self) -> bool {
        !self.broken
    }
}

impl Drop for HttpWire {
    fn drop(&mut self) {
        // Ending the session is a courtesy; a server that is gone is fine.
        let Some(id) = self.session_id.take() else { return };
        let agent = self.agent(Duration::from_secs(2));
        let mut req = agent.delete(&self.url).header("mcp-session-id", id.as_str());
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Err(e) = req.call() {
            tracing::debug!(server = %self.server, error = %e, "could not end the MCP session");
        }
    }
}
