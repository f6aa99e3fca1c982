//! The provider-neutral conversation transcript.
//!
//! Sessions store this, never a provider's wire format, which is what lets a
//! conversation move between providers. Tool results live in a user message
//! (Anthropic's requirement, harmless elsewhere), and [`push_tool_result`] is
//! the one place that puts them there. `provider_opaque` carries
//! what the schema cannot express — Anthropic thinking blocks, OpenAI-style
//! reasoning fields — and is replayed only to the exact provider and model
//! that produced it, within the turn that produced it: the chat drops it
//! ([`drop_opaque`]) before a turn's transcript is saved.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        /// Always a JSON object.
        arguments: Value,
    },
    ToolResult {
        tool_call_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    ProviderOpaque {
        provider: String,
        model: String,
        data: Value,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// All text blocks joined, in order.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolCall { id, name, arguments } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }
}

/// Whether an opaque block may be replayed to `provider`/`model`: only on an
/// exact match, because it is meaningless (or rejected) anywhere else.
pub fn opaque_matches(block_provider: &str, block_model: &str, provider: &str, model: &str) -> bool {
    block_provider == provider && block_model == model
}

/// Drop every opaque block (reasoning, thinking and their signatures)
/// from `messages`. A turn's tool loop needs them (Anthropic refuses a
/// tool step whose thinking was left out), but once the turn is over they
/// have done their work: a later request never carries them, to this
/// provider or any other.
pub fn drop_opaque(messages: &mut [Message]) {
    for m in messages {
        m.content.retain(|b| !matches!(b, Block::ProviderOpaque { .. }));
    }
}

/// Name of the tool a call id belongs to, searched across the transcript.
/// Needed by wires that key results by tool name (Ollama).
pub fn tool_name_for(messages: &[Message], call_id: &str) -> Option<String> {
    messages.iter().flat_map(|m| m.content.iter()).find_map(|b| match b {
        Block::ToolCall { id, name, .. } if id == call_id => Some(name.clone()),
        _ => None,
    })
}

/// Appends the result of call `tool_call_id` to the transcript: into the
/// trailing user message when that holds only tool results (the other
/// results of the same step), else as a new user message. Every path that
/// records a tool result uses this, so the shape cannot differ between the
/// agentic loop and the wire decoders.
///
/// A result with a `follow_up` (words the human sent while the step ran)
/// gets them as a text block right after it, in the same user message —
/// every wire accepts text after tool results there.
pub fn push_tool_result(messages: &mut Vec<Message>, tool_call_id: impl Into<String>, outcome: ToolOutcome) {
    let block = Block::ToolResult {
        tool_call_id: tool_call_id.into(),
        content: outcome.content,
        is_error: outcome.is_error,
    };
    match messages.last_mut() {
        Some(last) if last.role == Role::User && last.content.iter().all(|b| matches!(b, Block::ToolResult { .. })) => {
            last.content.push(block)
        }
        _ => messages.push(Message {
            role: Role::User,
            content: vec![block],
        }),
    }
    if let (Some(text), Some(last)) = (outcome.follow_up, messages.last_mut()) {
        last.content.push(Block::Text { text });
    }
}

/// One call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// What a tool returned to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub content: String,
    pub is_error: bool,
    /// Text for the model after this result: set by the caller on the last
    /// call of a step to pass on a message the human sent meanwhile.
    pub follow_up: Option<String>,
}

impl ToolOutcome {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutcome {
            content: content.into(),
            is_error: false,
            follow_up: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drop_opaque_keeps_everything_but_reasoning() {
        let mut v = vec![Message {
            role: Role::Assistant,
            content: vec![
                Block::ProviderOpaque {
                    provider: "ollama".into(),
                    model: "m".into(),
                    data: json!({"thinking": "hm"}),
                },
                Block::Text { text: "answer".into() },
            ],
        }];
        drop_opaque(&mut v);
        assert_eq!(v, vec![Message::assistant("answer")]);
    }

    #[test]
    fn serde_shape_matches_the_spec() {
        let m = Message {
            role: Role::Assistant,
            content: vec![
                Block::Text { text: "hi".into() },
                Block::ToolCall {
                    id: "c1".into(),
                    name: "search_kb".into(),
                    arguments: json!({"q": "x"}),
                },
                Block::ProviderOpaque {
                    provider: "anthropic".into(),
                    model: "m".into(),
                    data: json!({"type": "thinking"}),
                },
            ],
        };
        let v = serde_json::to_value(&m).unwrap_or_default();
        assert_eq!(v["role"], "assistant");
        assert_eq!(v["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(v["content"][1]["type"], "tool_call");
        assert_eq!(v["content"][2]["type"], "provider_opaque");
        let back: Message = serde_json::from_value(v).unwrap_or_else(|_| Message::user(""));
        assert_eq!(back, m);
        let r: Block = serde_json::from_value(json!({"type":"tool_result","tool_call_id":"c1","content":"ok"}))
            .unwrap_or(Block::Text { text: String::new() });
        assert_eq!(
            r,
            Block::ToolResult {
                tool_call_id: "c1".into(),
                content: "ok".into(),
                is_error: false
            }
        );
    }
}
