//! Anthropic Messages wire: typed content blocks; every tool result of one
//! assistant turn bundled into a single user message (separate messages are
//! a 400). Thinking blocks travel as `provider_opaque` and are echoed back
//! verbatim only to the model that produced them.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::StreamFault;
use crate::llm::stream::{StepUsage, StreamEvent};
use crate::llm::transcript::{opaque_matches, Block, Message, Role};

pub const PROVIDER: &str = "anthropic";

/// Neutral transcript → Messages API `messages`. Consecutive messages of the
/// same role are merged, which also bundles tool results into one message.
pub fn to_anthropic(messages: &[Message], model: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut blocks = Vec::new();
        for b in &m.content {
            match b {
                Block::Text { text } if !text.is_empty() => blocks.push(json!({"type": "text", "text": text})),
                Block::Text { .. } => {}
                Block::ToolCall { id, name, arguments } => {
                    blocks.push(json!({"type": "tool_use", "id": wire_id(id), "name": name, "input": arguments}))
                }
                Block::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                } => blocks.push(json!({
                    "type": "tool_result",
                    "tool_use_id": wire_id(tool_call_id),
                    "content": content,
                    "is_error": is_error,
                })),
                Block::ProviderOpaque {
                    provider,
                    model: m_model,
                    data,
                } => {
                    if opaque_matches(provider, m_model, PROVIDER, model) {
                        blocks.push(data.clone());
                    }
                }
            }
        }
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(arr) = last["content"].as_array_mut() {
                    // Tool results must come first in a user message.
                    if role == "user" {
                        let (mut results, rest): (Vec<Value>, Vec<Value>) =
                            arr.drain(..).chain(blocks).partition(|b| b["type"] == "tool_result");
                        results.extend(rest);
                        *arr = results;
                    } else {
                        arr.extend(blocks);
                    }
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

/// Anthropic accepts tool ids matching `[a-zA-Z0-9_-]+` only; ids written
/// by other providers (e.g. `functions.search:0`) are mapped the same way
/// on the call and its result, so pairs still match.
fn wire_id(id: &str) -> String {
    let mapped: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if mapped.is_empty() {
        "call".to_string()
    } else {
        mapped
    }
}

/// Messages API messages (the new tail) → neutral messages.
pub fn from_anthropic(wire: &[Value], model: &str) -> Vec<Message> {
    let mut out = Vec::new();
    for w in wire {
        let role = match w.get("role").and_then(Value::as_str) {
            Some("assistant") => Role::Assistant,
            Some("user") => Role::User,
            _ => continue,
        };
        let mut content = Vec::new();
        let blocks: Vec<Value> = match w.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => content.push(Block::Text {
                    text: b.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
                }),
                Some("tool_use") => content.push(Block::ToolCall {
                    id: b.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
                    name: b.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                    arguments: b
                        .get("input")
                        .cloned()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({})),
                }),
                Some("tool_result") => content.push(Block::ToolResult {
                    tool_call_id: b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    content: tool_result_text(b.get("content")),
                    is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                }),
                // Thinking, redacted thinking and anything newer we don't
                // model: keep verbatim for the same model only.
                Some(_) => content.push(Block::ProviderOpaque {
                    provider: PROVIDER.to_string(),
                    model: model.to_string(),
                    data: b,
                }),
                None => {}
            }
        }
        out.push(Message { role, content });
    }
    out
}

fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[derive(Debug)]
struct BlockState {
    block: Value,
    partial_json: String,
}

/// Folds Messages API stream events into the final message, the way the
/// SDK's `get_final_message()` does.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    blocks: BTreeMap<u64, BlockState>,
    pub stop_reason: Option<String>,
    pub model: Option<String>,
    pub usage: Option<Value>,
    pub done: bool,
    pub events: usize,
    /// Tool-use blocks started so far: the `index` of [`StreamEvent::ToolCallStart`].
    calls_started: usize,
}

impl AnthropicStream {
    pub fn feed(&mut self, event: &str, data: &Value) -> Result<(), StreamFault> {
        self.feed_with(event, data, &mut crate::llm::stream::ignore)
    }

    /// [`Self::feed`], reporting text/thinking deltas and tool-call starts to `on_event`.
    pub fn feed_with(
        &mut self,
        event: &str,
        data: &Value,
        on_event: &mut dyn FnMut(StreamEvent<'_>),
    ) -> Result<(), StreamFault> {
        self.events += 1;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "message_start" => {
                self.model = data
                    .pointer("/message/model")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                self.usage = data.pointer("/message/usage").cloned();
            }
            "content_block_start" => {
                let index = index_of(data)?;
                let mut block = data.get("content_block").cloned().unwrap_or_else(|| json!({}));
                // Every later step writes fields into the block: one that is
                // not an object is a malformed stream, not a panic (found by
                // the sse_anthropic fuzz target).
                if !block.is_object() {
                    return Err(StreamFault::Malformed(format!(
                        "content block {index} is not an object"
                    )));
                }
                if block["type"] == "tool_use" {
                    block["input"] = json!({});
                    let name = block.get("name").and_then(Value::as_str).unwrap_or_default();
                    on_event(StreamEvent::ToolCallStart {
                        index: self.calls_started,
                        name,
                    });
                    self.calls_started += 1;
                }
                self.blocks.insert(
                    index,
                    BlockState {
                        block,
                        partial_json: String::new(),
                    },
                );
            }
            "content_block_delta" => {
                let index = index_of(data)?;
                let Some(state) = self.blocks.get_mut(&index) else {
                    return Err(StreamFault::Malformed(format!("delta for unknown block {index}")));
                };
                let delta = data.get("delta").cloned().unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = delta.get("text").and_then(Value::as_str) {
                            on_event(StreamEvent::TextDelta(t));
                        }
                        append(&mut state.block, "text", delta.get("text"))
                    }
                    Some("thinking_delta") => {
                        if let Some(t) = delta.get("thinking").and_then(Value::as_str) {
                            on_event(StreamEvent::ThinkingDelta(t));
                        }
                        append(&mut state.block, "thinking", delta.get("thinking"))
                    }
                    Some("signature_delta") => append(&mut state.block, "signature", delta.get("signature")),
                    Some("input_json_delta") => {
                        if let Some(p) = delta.get("partial_json").and_then(Value::as_str) {
                            state.partial_json.push_str(p);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = index_of(data)?;
                if let Some(state) = self.blocks.get_mut(&index) {
                    if state.block["type"] == "tool_use" && !state.partial_json.trim().is_empty() {
                        let input: Value = serde_json::from_str(&state.partial_json)
                            .map_err(|e| StreamFault::Malformed(format!("tool input is not JSON: {e}")))?;
                        state.block["input"] = input;
                    }
                }
            }
            "message_delta" => {
                if let Some(r) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = data.get("usage").and_then(Value::as_object) {
                    // message_delta carries the output count (and, on newer
                    // API versions, the input count again): merge, so the
                    // input count from message_start is not lost.
                    let merged = self.usage.get_or_insert_with(|| json!({}));
                    if let Some(m) = merged.as_object_mut() {
                        for (k, v) in u {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let err_type = data.pointer("/error/type").and_then(Value::as_str).unwrap_or("");
                let status = match err_type {
                    "overloaded_error" => Some(529),
                    "rate_limit_error" => Some(429),
                    "api_error" => Some(500),
                    "authentication_error" => Some(401),
                    "invalid_request_error" => Some(400),
                    _ => None,
                };
                let detail = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or(err_type)
                    .to_string();
                return Err(StreamFault::ServiceError { status, detail });
            }
            _ => {}
        }
        Ok(())
    }

    /// The assembled assistant message in wire form.
    /// Token counts the service reported, if any.
    pub fn step_usage(&self) -> StepUsage {
        let get = |k: &str| self.usage.as_ref().and_then(|u| u.get(k)).and_then(Value::as_u64);
        StepUsage {
            input_tokens: get("input_tokens"),
            output_tokens: get("output_tokens"),
            cost_usd: None,
        }
    }

    pub fn message(&self) -> Value {
        let content: Vec<Value> = self.blocks.values().map(|s| s.block.clone()).collect();
        json!({"role": "assistant", "content": content})
    }
}

fn index_of(data: &Value) -> Result<u64, StreamFault> {
    data.get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| StreamFault::Malformed("stream event without a block index".into()))
}

fn append(block: &mut Value, field: &str, piece: Option<&Value>) {
    let (Some(p), Some(obj)) = (piece.and_then(Value::as_str), block.as_object_mut()) else {
        return;
    };
    let current = obj.get(field).and_then(Value::as_str).unwrap_or_default();
    let joined = format!("{current}{p}");
    obj.insert(field.to_string(), json!(joined));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the sse_anthropic fuzz target: a content block that is a
    /// string, then a delta for it, used to panic inside serde_json.
    #[test]
    fn a_content_block_that_is_not_an_object_is_malformed_not_a_panic() {
        let mut s = AnthropicStream::default();
        let start = json!({"type":"content_block_start","index":0,"content_block":"thinking"});
        let r = s.feed_with("content_block_start", &start, &mut |_| {});
        assert!(matches!(r, Err(StreamFault::Malformed(_))), "{r:?}");
        let delta = json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}});
        assert!(s.feed_with("content_block_delta", &delta, &mut |_| {}).is_err());
    }

    #[test]
    fn stream_assembles_thinking_text_and_split_tool_input() {
        let mut s = AnthropicStream::default();
        let events = [
            json!({"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":3}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"2}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
            json!({"type":"message_stop"}),
        ];
        for e in &events {
            assert!(s.feed("", e).is_ok());
        }
        assert!(s.done);
        let neutral = from_anthropic(&[s.message()], "claude-x");
        assert_eq!(neutral[0].content.len(), 2);
        assert!(
            matches!(&neutral[0].content[0], Block::ProviderOpaque { data, .. } if data["signature"] == "sig" && data["thinking"] == "let me")
        );
        assert_eq!(
            neutral[0].tool_calls().next().map(|c| c.2.clone()),
            Some(json!({"a":2}))
        );
    }

    #[test]
    fn results_bundled_and_foreign_opaque_dropped() {
        let msgs = vec![
            Message::user("q"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::ProviderOpaque {
                        provider: "anthropic".into(),
                        model: "old".into(),
                        data: json!({"type":"thinking","thinking":"x","signature":"s"}),
                    },
                    Block::ToolCall {
                        id: "a".into(),
                        name: "f".into(),
                        arguments: json!({}),
                    },
                    Block::ToolCall {
                        id: "b".into(),
                        name: "g".into(),
                        arguments: json!({}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "a".into(),
                    content: "1".into(),
                    is_error: false,
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "b".into(),
                    content: "2".into(),
                    is_error: true,
                }],
            },
        ];
        let wire = to_anthropic(&msgs, "new");
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[1]["content"].as_array().map(Vec::len), Some(2));
        assert_eq!(wire[1]["content"][0]["type"], "tool_use");
        assert_eq!(wire[2]["content"].as_array().map(Vec::len), Some(2));
        assert_eq!(wire[2]["content"][1]["is_error"], true);
        let same = to_anthropic(&msgs, "old");
        let foreign_ids = vec![
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "functions.f:0".into(),
                    name: "f".into(),
                    arguments: json!({}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "functions.f:0".into(),
                    content: "r".into(),
                    is_error: false,
                }],
            },
        ];
        let w = to_anthropic(&foreign_ids, "m");
        assert_eq!(w[0]["content"][0]["id"], "functions_f_0");
        assert_eq!(w[1]["content"][0]["tool_use_id"], "functions_f_0");
        assert_eq!(same[1]["content"][0]["type"], "thinking");
    }

    #[test]
    fn error_event_is_a_service_error() {
        let mut s = AnthropicStream::default();
        let r = s.feed(
            "error",
            &json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        );
        assert_eq!(
            r,
            Err(StreamFault::ServiceError {
                status: Some(529),
                detail: "Overloaded".into()
            })
        );
    }
}
