//! Other MCP servers' tools in a chat turn: offering them (namespaced
//! `SERVER__tool`), calling them, and the two privacy rules around them.
//!
//! - A call to a remote server (one not marked local) from a session that
//!   has read anything private waits for the human: it becomes a pending
//!   confirmation naming the server and showing the arguments, and runs
//!   only if they say yes ([`crate::chat::ChatAgent::confirm_action`]); the
//!   model is told a dialog is shown, never that the call happened.
//! - Under a cloud model, a result that quotes a private note (a run of
//!   [`SHINGLE`] words of a private passage the knowledge base finds for
//!   it) is withheld from the model: a local server may read this machine's
//!   files, and private notes never leave it.
//!
//! Must not: call a server the user switched off, or let a result bypass
//! the retrieved-data markers the system prompt tells the model to treat as
//! data.

use serde_json::Value;

use super::{wrap_data, PendingAction, PendingKind, ToolBox};
use crate::index::Filter;
use crate::kb::search::SearchRequest;
use crate::llm::{ToolCall, ToolError, ToolOutcome, ToolSpec};
use crate::mcp_client::McpClients;
use crate::visibility::Visibility;

/// Consecutive words shared with a private passage that make a result a
/// quote of it.
pub const SHINGLE: usize = 5;
/// Most characters of a result the private check searches with.
const CHECK_CHARS: usize = 4000;
/// Most characters of a result handed to the model.
const MAX_RESULT_CHARS: usize = 40_000;

/// The tools of every switched-on server, for the model.
pub fn specs(clients: &McpClients) -> Vec<ToolSpec> {
    clients
        .offered_tools()
        .into_iter()
        .map(|t| ToolSpec {
            name: t.exposed,
            description: format!(
                "[{} — another MCP server's tool] {}",
                t.server,
                if t.description.is_empty() {
                    "(no description)"
                } else {
                    t.description.as_str()
                }
            ),
            parameters: t.input_schema,
        })
        .collect()
}

/// The pending confirmation's text: the server, where it is, the tool and
/// the arguments exactly as they would be sent.
pub fn confirmation_text(server: &str, target: &str, tool: &str, arguments: &Value) -> String {
    let shown = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    format!(
        "Send a request to the MCP server `{server}` ({target})? It is not on this machine, and this session has read private notes.\nTool: {tool}\nArguments:\n{shown}\nNothing is sent unless you confirm."
    )
}

impl ToolBox<'_> {
    /// One call of an MCP tool (`call.name` is namespaced).
    pub(crate) fn mcp_call(&mut self, call: &ToolCall, args: &Value) -> Result<ToolOutcome, ToolError> {
        let Some(clients) = self.deps.mcp.clone() else {
            return Err(ToolError::Failed(format!("unknown tool `{}`", call.name)));
        };
        let Some((server, tool)) = clients.resolve(&call.name) else {
            return Err(ToolError::Failed(format!(
                "unknown tool `{}` — no switched-on MCP server offers it now",
                call.name
            )));
        };
        let spec = clients
            .spec(&server)
            .ok_or_else(|| ToolError::Failed(format!("MCP server `{server}` is not configured")))?;
        if !spec.local && (self.session_private || self.saw_private) {
            let description = confirmation_text(&server, &spec.target(), &tool, args);
            self.pending.push(PendingAction {
                token: uuid::Uuid::new_v4().simple().to_string(),
                session_id: self.session_id.to_string(),
                description: description.clone(),
                kind: PendingKind::McpCall {
                    server: server.clone(),
                    tool: tool.clone(),
                    arguments: args.clone(),
                },
            });
            return Ok(ToolOutcome::ok(format!(
                "{description}\n\nA confirmation dialog is now shown to the user. Do not call {} again for this request, and do not say what it returned: it runs only if the user agrees, and its result is shown to them.",
                call.name
            )));
        }
        let result = clients.call(&server, &tool, args).map_err(|e| super::failed(&e))?;
        let text: String = result.text.chars().take(MAX_RESULT_CHARS).collect();
        if self.cloud && self.quotes_private(&text)? {
            return Ok(ToolOutcome {
                content: format!(
                    "Withheld: the result of {} quotes a private note, and this session uses a cloud model — private notes never leave this machine. Nothing of the result was sent to the model.",
                    call.name
                ),
                is_error: true,
                follow_up: None,
            });
        }
        Ok(ToolOutcome {
            content: wrap_data(&format!("Result of {tool} from the MCP server `{server}`:\n{text}")),
            is_error: result.is_error,
            follow_up: None,
        })
    }

    /// Whether `text` quotes a private passage of the knowledge base.
    fn quotes_private(&self, text: &str) -> Result<bool, ToolError> {
        let query: String = text.chars().take(CHECK_CHARS).collect();
        if query.trim().is_empty() {
            return Ok(false);
        }
        let req = SearchRequest {
            filter: Filter {
                visibility: Some(Visibility::Private),
                ..Filter::default()
            },
            rerank: false,
            ..SearchRequest::new(query, 8)
        };
        let hits = self.deps.kb.search(&req).map_err(super::kb_err)?;
        let result_words = words(text);
        Ok(hits
            .iter()
            .filter(|h| h.record.visibility() != Visibility::Public)
            .any(|h| shares_a_run(&words(&h.record.text), &result_words)))
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `passage` and `result` share [`SHINGLE`] consecutive words (or
/// all of a passage shorter than that).
fn shares_a_run(passage: &[String], result: &[String]) -> bool {
    if passage.is_empty() {
        return false;
    }
    let n = SHINGLE.min(passage.len());
    let runs: std::collections::HashSet<&[String]> = result.windows(n).collect();
    passage.windows(n).any(|w| runs.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_is_a_shared_run_of_words_whatever_the_case_and_punctuation() {
        let passage = words("The pelican code word is pelican-zebra-417, remember it.");
        assert!(shares_a_run(
            &passage,
            &words("Found: PELICAN code word is pelican-zebra-417!")
        ));
        assert!(!shares_a_run(
            &passage,
            &words("pelicans are birds; the code is elsewhere")
        ));
        assert!(shares_a_run(&words("short note"), &words("a short note here")));
    }

    #[test]
    fn the_confirmation_names_the_server_and_shows_the_arguments() {
        let text = confirmation_text(
            "docs",
            "https://docs.example.com/mcp",
            "lookup",
            &serde_json::json!({"q": "my diary"}),
        );
        assert!(text.contains("`docs`") && text.contains("https://docs.example.com/mcp"));
        assert!(text.contains("\"q\": \"my diary\""), "{text}");
    }
}
