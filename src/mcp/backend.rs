//! Where a tool call runs: in the process that owns the knowledge base.
//!
//! Inside `jarvis serve` (the HTTP transport) that is this process: the
//! owner's own [`App`]. A stdio server (`jarvis mcp`, launched by a client
//! and possibly alive for days) must not hold the knowledge base while it
//! idles — `jarvis serve`, `jarvis sync` and one-shot `kb` commands need
//! it — so each call first looks for a running owner and sends the call
//! through its socket (`jarvis kb __mcp-call`, the same [`tools::call`] run
//! against the owner's `App`); with no owner, it opens the knowledge base
//! itself and lets go of it after [`IDLE_RELEASE`] without calls.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::app::owner::client::{self, Connection};
use crate::app::owner::protocol::{ClientFrame, OwnerFrame};
use crate::app::{App, AppError};
use crate::config::Config;

use super::tools::{self, Scope, ToolError};

/// How long a stdio server keeps the knowledge base open after a call (a
/// model often calls several tools in a row; an idle server lets go).
pub const IDLE_RELEASE: Duration = Duration::from_secs(10);

/// The hidden `kb` subcommand the owner runs for a delegated tool call.
pub const OWNER_SUBCOMMAND: &str = "__mcp-call";

/// Where tool calls go.
pub enum Backend {
    /// This process owns the knowledge base (`jarvis serve`).
    Shared(Arc<App>),
    /// A stdio server: a running owner if there is one, else this process
    /// for a while.
    Standalone(Standalone),
}

/// The stdio server's state: its configuration and the knowledge base it
/// opened itself, if any, with the time of the last call.
pub struct Standalone {
    config: Config,
    open: Mutex<Option<(Arc<App>, Instant)>>,
}

impl Standalone {
    pub fn new(config: Config) -> Self {
        Standalone {
            config,
            open: Mutex::new(None),
        }
    }

    /// Drop the knowledge base if no call used it for [`IDLE_RELEASE`]
    /// (a call still running keeps its own handle until it ends).
    pub fn release_if_idle(&self) {
        let mut slot = crate::lock::lock(&self.open);
        if slot.as_ref().is_some_and(|(_, t)| t.elapsed() >= IDLE_RELEASE) {
            tracing::debug!("mcp: idle, closing the knowledge base");
            *slot = None;
        }
    }

    fn app(&self) -> Arc<App> {
        let mut slot = crate::lock::lock(&self.open);
        let app = match slot.take() {
            Some((app, _)) => app,
            None => App::from_config(self.config.clone(), crate::config::process_env),
        };
        *slot = Some((Arc::clone(&app), Instant::now()));
        app
    }

    fn forget(&self) {
        *crate::lock::lock(&self.open) = None;
    }

    fn call(&self, scope: Scope, name: &str, args: &Map<String, Value>) -> Result<Value, ToolError> {
        let home = &self.config.home;
        if crate::lock::lock(&self.open).is_none() {
            match client::connect(home) {
                Ok(Some(conn)) => return via_owner(conn, scope, name, args),
                Ok(None) => {}
                Err(e) => {
                    return Err(ToolError {
                        message: format!("cannot reach the running Jarvis owner: {e}"),
                    })
                }
            }
        }
        let app = self.app();
        match app.kb() {
            Ok(_) => {}
            // A serve/sync took the knowledge base since the check above:
            // go through it.
            Err(AppError::Held { holder, .. }) if crate::app::owner::is_owner_command(&holder.command) => {
                drop(app);
                self.forget();
                return match client::connect(home) {
                    Ok(Some(conn)) => via_owner(conn, scope, name, args),
                    _ => Err(ToolError {
                        message: format!(
                            "{holder} holds the knowledge base but does not answer on its socket yet — try again in a moment"
                        ),
                    }),
                };
            }
            Err(e) => {
                self.forget();
                return Err(ToolError { message: e.to_string() });
            }
        }
        let result = tools::call(&app, scope, name, args);
        if let Err(e) = &result {
            tracing::info!(tool = name, error = %e, "mcp tool call failed");
        }
        result
    }
}

impl Backend {
    /// Run one tool call. Blocking.
    pub fn call(&self, scope: Scope, name: &str, args: &Map<String, Value>) -> Result<Value, ToolError> {
        match self {
            Backend::Shared(app) => tools::call(app, scope, name, args),
            Backend::Standalone(s) => s.call(scope, name, args),
        }
    }
}

/// What the owner's `kb __mcp-call` prints: one JSON line.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerReply {
    Ok(Value),
    Error(ToolError),
}

/// The owner's side: run the call against its `App` and write the reply.
pub fn owner_reply(app: &App, include_private: bool, name: &str, args_json: &str) -> String {
    let reply = match serde_json::from_str::<Map<String, Value>>(args_json) {
        Ok(args) => match tools::call(app, Scope::from_include_private(include_private), name, &args) {
            Ok(v) => OwnerReply::Ok(v),
            Err(e) => OwnerReply::Error(e),
        },
        Err(e) => OwnerReply::Error(ToolError {
            message: format!("the arguments are not a JSON object: {e}"),
        }),
    };
    let mut line = serde_json::to_string(&reply)
        .unwrap_or_else(|e| format!("{{\"error\":{{\"message\":\"cannot encode the result: {e}\"}}}}"));
    line.push('\n');
    line
}

fn via_owner(mut conn: Connection, scope: Scope, name: &str, args: &Map<String, Value>) -> Result<Value, ToolError> {
    tracing::debug!(pid = conn.pid, tool = name, "mcp call through the owner");
    let (role, pid) = (conn.role.clone(), conn.pid);
    let lost = |e: std::io::Error| ToolError {
        message: format!("lost the connection to jarvis {role} (pid {pid}): {e} — see its log in $JARVIS_HOME/logs"),
    };
    let mut argv = vec![
        "kb".to_string(),
        OWNER_SUBCOMMAND.to_string(),
        name.to_string(),
        Value::Object(args.clone()).to_string(),
    ];
    if scope == Scope::IncludePrivate {
        argv.push("--include-private".into());
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"));
    conn.send(&ClientFrame::Run {
        argv,
        cwd,
        stdin_tty: false,
        stderr_tty: false,
        env: crate::config::env_overrides(&crate::config::process_env),
    })
    .map_err(&lost)?;
    let mut out = String::new();
    let mut err = String::new();
    loop {
        match conn.recv().map_err(&lost)? {
            Some(OwnerFrame::Out { text }) => out.push_str(&text),
            Some(OwnerFrame::Err { text }) => err.push_str(&text),
            // Nothing to answer with: a tool call never asks.
            Some(OwnerFrame::Ask) => conn.send(&ClientFrame::Line { text: None }).map_err(&lost)?,
            Some(OwnerFrame::Exit { code }) => {
                if code != 0 {
                    return Err(ToolError {
                        message: format!("the Jarvis owner could not run the call: {}", err.trim()),
                    });
                }
                break;
            }
            Some(_) => {}
            None => {
                return Err(ToolError {
                    message: format!("jarvis {role} (pid {pid}) closed the connection before the call finished"),
                })
            }
        }
    }
    match serde_json::from_str::<OwnerReply>(out.trim()) {
        Ok(OwnerReply::Ok(v)) => Ok(v),
        Ok(OwnerReply::Error(e)) => Err(e),
        Err(e) => Err(ToolError {
            message: format!(
                "the Jarvis owner sent an unreadable reply ({e}) — is it the same version as this jarvis?"
            ),
        }),
    }
}
