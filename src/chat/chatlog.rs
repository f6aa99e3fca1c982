//! `$JARVIS_HOME/logs/chat.log`: one line per turn and one per failed tool
//! call, so a failure the model saw as `is_error` is never invisible to the
//! human.
//!
//! Owns: the line formats and their redaction — every configured secret and
//! every key-bearing environment value is blanked ([`redact_secrets`]), and
//! so is any argument whose name says it holds one (`api_key`, `token`, …).
//! Must not: fail a turn (a log that cannot be written is said once in
//! jarvis.log and skipped), or log a turn's text — the question, the answer
//! and tool results stay in the session file, which is where private text
//! is managed.
//!
//! ```text
//! 2026-12-04T21:40:00Z turn session=… model=ollama:qwen3 rounds=2 tokens_in=5120 tokens_out=312 ms=8410 outcome=reply
//! 2026-12-04T21:40:00Z tool_error session=… tool=get_document args={"source":"x.md"} error="no document has source …"
//! ```

use std::io::Write as _;
use std::sync::Mutex;

use serde_json::Value;

use crate::llm::redact::{is_key_bearing, REDACTED};
use crate::llm::redact_secrets;
use crate::logging::RotatingFile;
use crate::paths::JarvisHome;

/// The log file's name under `logs/`.
pub const CHAT_LOG: &str = "chat.log";

/// What one turn did, for its line.
#[derive(Debug, Clone, Default)]
pub struct TurnRecord {
    pub session: String,
    pub model: String,
    /// Model requests made.
    pub rounds: usize,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub ms: u64,
    /// `reply`, `nothing_found` (a DB-only reply replaced by the fixed
    /// "nothing found" message), `model_error`, `privacy_stop`,
    /// `round_cap`, `runaway_…`, `time_budget`, `stopped` or `failed`.
    pub outcome: String,
    /// The error, for `model_error` and `failed`.
    pub error: Option<String>,
}

/// The chat log of one home. Opened on first use.
#[derive(Debug)]
pub struct ChatLog {
    home: JarvisHome,
    file: Mutex<Option<RotatingFile>>,
    /// Opening failed once already (said in jarvis.log; not said again).
    failed: std::sync::atomic::AtomicBool,
}

/// `args` with every value under a key-bearing name blanked, recursively.
fn redact_args(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if is_key_bearing(k) && !v.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact_args(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(redact_args).collect()),
        other => other.clone(),
    }
}

/// A value for `key=value`: bare when it is one plain word, else quoted
/// JSON (so a line stays one line whatever the text holds).
fn field(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:/@+".contains(c)) {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// How much of an MCP result chat.log keeps.
const MCP_RESULT_LOGGED: usize = 500;

impl ChatLog {
    pub fn new(home: JarvisHome) -> ChatLog {
        ChatLog {
            home,
            file: Mutex::new(None),
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The turn's line.
    pub fn turn(&self, r: &TurnRecord, secrets: &[String]) {
        let mut line = format!(
            "turn session={} model={} rounds={} tokens_in={} tokens_out={} ms={} outcome={}",
            field(&r.session),
            field(&r.model),
            r.rounds,
            count(r.tokens_in),
            count(r.tokens_out),
            r.ms,
            field(&r.outcome)
        );
        if let Some(e) = &r.error {
            line.push_str(" error=");
            line.push_str(&field(e));
        }
        self.write(&redact_secrets(&line, secrets));
    }

    /// One failed tool call: the tool, its arguments (secrets blanked) and
    /// the whole error as the tool reported it.
    pub fn tool_error(&self, session: &str, tool: &str, args: &Value, error: &str, secrets: &[String]) {
        let args = serde_json::to_string(&redact_args(args)).unwrap_or_default();
        let line = format!(
            "tool_error session={} tool={} args={args} error={}",
            field(session),
            field(tool),
            field(error)
        );
        self.write(&redact_secrets(&line, secrets));
    }

    /// One MCP tool call: the offered name, its arguments (secrets
    /// blanked), whether it failed, and the start of its result or error.
    pub fn mcp_call(&self, session: &str, tool: &str, args: &Value, result: &str, is_error: bool, secrets: &[String]) {
        let args = serde_json::to_string(&redact_args(args)).unwrap_or_default();
        let head: String = result.chars().take(MCP_RESULT_LOGGED).collect();
        let line = format!(
            "mcp_call session={} tool={} args={args} error={is_error} result={}",
            field(session),
            field(tool),
            field(&head)
        );
        self.write(&redact_secrets(&line, secrets));
    }

    fn write(&self, line: &str) {
        let mut slot = super::agent::lock(&self.file);
        if slot.is_none() {
            match crate::logging::open_log(&self.home, CHAT_LOG) {
                Ok(f) => *slot = Some(f),
                Err(e) => {
                    if !self.failed.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        tracing::warn!(error = %e, "cannot open chat.log; chat turns are not logged there");
                    }
                    return;
                }
            }
        }
        let Some(f) = slot.as_mut() else { return };
        let stamp = crate::kb::stage::now_iso();
        // One write per line: appends from other processes never interleave
        // inside it.
        if let Err(e) = f.write_all(format!("{stamp} {line}\n").as_bytes()) {
            tracing::warn!(error = %e, "cannot write chat.log");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_named_like_secrets_and_configured_secrets_are_blanked() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChatLog::new(JarvisHome::at(dir.path()));
        let args = serde_json::json!({"source": "sk-configured-0123456789", "api_key": "abc12345xyz", "nested": {"password": "hunter2hunter2"}});
        log.tool_error(
            "s1",
            "get_document",
            &args,
            "no document has source \"sk-configured-0123456789\"\ncaused by: x",
            &["sk-configured-0123456789".into()],
        );
        log.turn(
            &TurnRecord {
                session: "s1".into(),
                model: "openrouter:acme/m".into(),
                rounds: 2,
                tokens_in: Some(10),
                outcome: "reply".into(),
                ..TurnRecord::default()
            },
            &[],
        );
        let text = std::fs::read_to_string(dir.path().join("logs/chat.log")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for secret in ["sk-configured-0123456789", "abc12345xyz", "hunter2hunter2"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(
            lines[0].contains("tool=get_document") && lines[0].contains("caused by: x"),
            "{text}"
        );
        assert!(
            lines[1].contains("model=openrouter:acme/m rounds=2 tokens_in=10 tokens_out=- ms=0 outcome=reply"),
            "{text}"
        );
    }
}
