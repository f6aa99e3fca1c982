//! The stdio transport: the server is a child process started through the
//! sandbox (its environment the allowlist plus what the user configured for
//! it), one JSON-RPC message per line each way.
//!
//! A reader thread turns the child's stdout into messages on a channel, so
//! a wait for an answer has a deadline and a crash (stdout closed) is seen
//! at once. Requests the server makes of us (`ping`, or anything we do not
//! offer) are answered so the server never waits on us.
//! Must not: spawn the process itself, or keep a dead child's session.

use std::io::{BufRead, BufReader, Write};
use std::process::ChildStdin;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::session::Wire;
use super::{McpClientError, ServerSpec, Transport};
use crate::sandbox::service::{spawn_service, Service, ServiceSpec};

/// Longest line read from a server (a bigger one is reported, not kept).
const MAX_LINE: usize = 16 << 20;

pub struct StdioWire {
    server: String,
    service: Service,
    stdin: ChildStdin,
    incoming: Receiver<Result<Value, String>>,
}

impl StdioWire {
    pub fn start(spec: &ServerSpec) -> Result<StdioWire, McpClientError> {
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &spec.transport
        else {
            return Err(McpClientError::Protocol {
                server: spec.name.clone(),
                reason: "not a stdio server".into(),
            });
        };
        let start_error = |reason: String| McpClientError::Start {
            server: spec.name.clone(),
            reason,
        };
        let mut service = spawn_service(&ServiceSpec {
            program: command.into(),
            args: args.clone(),
            env: env.clone(),
            cwd: cwd.clone(),
        })
        .map_err(|e| start_error(e.to_string()))?;
        let stdin = service
            .stdin
            .take()
            .ok_or_else(|| start_error("no stdin pipe".into()))?;
        let stdout = service
            .stdout
            .take()
            .ok_or_else(|| start_error("no stdout pipe".into()))?;
        let (tx, incoming) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("mcp-{}", spec.name))
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                loop {
                    let mut line = Vec::new();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line.len() > MAX_LINE => {
                            let _ = tx.send(Err(format!("a message of {} bytes, over the limit", line.len())));
                        }
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&line);
                            let text = text.trim();
                            if text.is_empty() {
                                continue;
                            }
                            let parsed = serde_json::from_str::<Value>(text).map_err(|e| {
                                let head: String = text.chars().take(120).collect();
                                format!("{e} in `{head}`")
                            });
                            if tx.send(parsed).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .map_err(|e| start_error(e.to_string()))?;
        Ok(StdioWire {
            server: spec.name.clone(),
            service,
            stdin,
            incoming,
        })
    }

    fn gone(&self, what: &str) -> McpClientError {
        let tail = self.service.stderr_tail();
        let tail = tail.trim();
        let reason = if tail.is_empty() {
            what.to_string()
        } else {
            let last: String = tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join(" | ");
            format!("{what} (its last words: {last})")
        };
        McpClientError::Gone {
            server: self.server.clone(),
            reason,
        }
    }

    fn send(&mut self, message: &Value) -> Result<(), McpClientError> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| self.gone(&format!("writing to it failed ({e})")))
    }
}

impl Wire for StdioWire {
    fn request(&mut self, id: u64, message: &Value, timeout: Duration) -> Result<Value, McpClientError> {
        self.send(message)?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let got = match self.incoming.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(McpClientError::Timeout {
                        server: self.server.clone(),
                        what: message["method"].as_str().unwrap_or("a request").to_string(),
                        secs: timeout.as_secs(),
                    })
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.gone("its output closed")),
            };
            let msg = got.map_err(|reason| McpClientError::Protocol {
                server: self.server.clone(),
                reason,
            })?;
            if msg.get("id").and_then(Value::as_u64) == Some(id) && msg.get("method").is_none() {
                return Ok(msg);
            }
            // A request from the server: answer so it does not wait on us.
            if let (Some(method), Some(req_id)) = (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": req_id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": "not supported by this client"}})
                };
                self.send(&answer)?;
            }
            // Notifications (progress, logging) are not needed.
        }
    }

    fn notify(&mut self, message: &Value) -> Result<(), McpClientError> {
        self.send(message)
    }

    fn is_alive(&self) -> bool {
        !self.service.has_exited()
    }
}
