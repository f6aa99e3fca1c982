//! Ollama `/api/chat` wire: like OpenAI, but tool arguments are already a
//! mapping, a tool result is keyed by tool name rather than call id, and
//! Ollama sends no call ids at all — `from_ollama` synthesises them with a
//! random per-conversion prefix so they stay unique across the transcript.

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

use super::StreamFault;
use crate::llm::stream::{StepUsage, StreamEvent};
use crate::llm::transcript::{opaque_matches, push_tool_result, tool_name_for, Block, Message, Role, ToolOutcome};

pub const PROVIDER: &str = "ollama";

/// Neutral transcript → `/api/chat` messages.
pub fn to_ollama(messages: &[Message], system: Option<&str>, model: &str) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = system.filter(|s| !s.is_empty()) {
        out.push(json!({"role": "system", "content": system}));
    }
    for m in messages {
        match m.role {
            Role::User => {
                let mut text = String::new();
                for b in &m.content {
                    match b {
                        Block::ToolResult {
                            tool_call_id, content, ..
                        } => {
                            let name = tool_name_for(messages, tool_call_id).unwrap_or_default();
                            out.push(json!({"role": "tool", "content": content, "tool_name": name}));
                        }
                        Block::Text { text: t } => text.push_str(t),
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                let mut msg = Map::new();
                msg.insert("role".into(), json!("assistant"));
                msg.insert("content".into(), json!(m.text()));
                let mut calls = Vec::new();
                for b in &m.content {
                    match b {
                        Block::ToolCall { name, arguments, .. } => {
                            calls.push(json!({"function": {"name": name, "arguments": arguments}}))
                        }
                        Block::ProviderOpaque {
                            provider,
                            model: m_model,
                            data,
                        } if opaque_matches(provider, m_model, PROVIDER, model) => {
                            if let Some(fields) = data.as_object() {
                                for (k, v) in fields {
                                    msg.insert(k.clone(), v.clone());
                                }
                            }
                        }
                        _ => {}
                    }
                }
                if m.text().is_empty() && calls.is_empty() {
                    continue;
                }
                if !calls.is_empty() {
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(msg));
            }
        }
    }
    out
}

/// `/api/chat` messages (the new tail) → neutral, synthesising call ids and
/// attributing each `tool` message to the oldest pending call of that name.
pub fn from_ollama(wire: &[Value], model: &str) -> Vec<Message> {
    let prefix = uuid::Uuid::new_v4().simple().to_string();
    let prefix = &prefix[..8];
    let mut counter = 0usize;
    let mut pending: VecDeque<(String, String)> = VecDeque::new();
    let mut out: Vec<Message> = Vec::new();
    for w in wire {
        match w.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                let mut content = Vec::new();
                if let Some(t) = w.get("thinking").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    content.push(Block::ProviderOpaque {
                        provider: PROVIDER.to_string(),
                        model: model.to_string(),
                        data: json!({"thinking": t}),
                    });
                }
                if let Some(t) = w.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    content.push(Block::Text { text: t.to_string() });
                }
                for call in w.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    counter += 1;
                    let id = format!("ollama_{prefix}_{counter}");
                    let name = call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    pending.push_back((name.clone(), id.clone()));
                    content.push(Block::ToolCall {
                        id,
                        name,
                        arguments: arguments_of(call.pointer("/function/arguments")),
                    });
                }
                out.push(Message {
                    role: Role::Assistant,
                    content,
                });
            }
            Some("tool") => {
                let name = w.get("tool_name").and_then(Value::as_str).unwrap_or_default();
                let id = pending
                    .iter()
                    .position(|(n, _)| n == name)
                    .and_then(|i| pending.remove(i))
                    .map(|(_, id)| id)
                    .unwrap_or_default();
                let content = w.get("content").and_then(Value::as_str).unwrap_or_default();
                push_tool_result(&mut out, id, ToolOutcome::ok(content));
            }
            Some("user") => {
                if let Some(t) = w.get("content").and_then(Value::as_str) {
                    out.push(Message::user(t));
                }
            }
            _ => {}
        }
    }
    out
}

/// Arguments are normally a mapping already; the string case is defensive.
fn arguments_of(raw: Option<&Value>) -> Value {
    match raw {
        Some(v @ Value::Object(_)) => v.clone(),
        other => super::openai::parse_arguments(other),
    }
}

/// Folds the NDJSON chunks of a streamed `/api/chat` into one message,
/// collecting tool calls from whichever chunk carries them.
#[derive(Debug, Default)]
pub struct OllamaStream {
    content: String,
    thinking: String,
    tool_calls: Vec<Value>,
    pub done: bool,
    pub done_reason: Option<String>,
    pub model: Option<String>,
    pub chunks: usize,
    /// `prompt_eval_count` / `eval_count` of the final chunk.
    usage: StepUsage,
}

impl OllamaStream {
    pub fn feed(&mut self, chunk: &Value) -> Result<(), StreamFault> {
        self.feed_with(chunk, &mut crate::llm::stream::ignore)
    }

    /// [`Self::feed`], reporting content/thinking deltas and tool calls to `on_event`.
    pub fn feed_with(&mut self, chunk: &Value, on_event: &mut dyn FnMut(StreamEvent<'_>)) -> Result<(), StreamFault> {
        self.chunks += 1;
        if let Some(err) = chunk.get("error") {
            let detail = err.as_str().map(str::to_string).unwrap_or_else(|| err.to_string());
            return Err(StreamFault::ServiceError { status: None, detail });
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            self.model = Some(m.to_string());
        }
        if let Some(msg) = chunk.get("message") {
            if let Some(t) = msg.get("thinking").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                on_event(StreamEvent::ThinkingDelta(t));
                self.thinking.push_str(t);
            }
            if let Some(t) = msg.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                on_event(StreamEvent::TextDelta(t));
                self.content.push_str(t);
            }
            if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    let name = call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    on_event(StreamEvent::ToolCallStart {
                        index: self.tool_calls.len(),
                        name,
                    });
                    self.tool_calls.push(call.clone());
                }
            }
        }
        if chunk.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            self.done_reason = chunk.get("done_reason").and_then(Value::as_str).map(str::to_string);
            self.usage = StepUsage {
                input_tokens: chunk.get("prompt_eval_count").and_then(Value::as_u64),
                output_tokens: chunk.get("eval_count").and_then(Value::as_u64),
                cost_usd: None,
            };
        }
        Ok(())
    }

    /// Token counts from the final chunk (Ollama reports no money).
    pub fn step_usage(&self) -> StepUsage {
        self.usage
    }

    pub fn message(&self) -> Value {
        let mut msg = json!({"role": "assistant", "content": self.content});
        if !self.thinking.is_empty() {
            msg["thinking"] = json!(self.thinking);
        }
        if !self.tool_calls.is_empty() {
            msg["tool_calls"] = Value::Array(self.tool_calls.clone());
        }
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_synthesised_uniquely_and_results_keyed_by_name() {
        let wire = vec![json!({"role":"assistant","content":"","tool_calls":[
            {"function":{"name":"search","arguments":{"q":"a"}}},
            {"function":{"name":"search","arguments":"{\"q\":\"b\"}"}}]})];
        let first = from_ollama(&wire, "m");
        let second = from_ollama(&wire, "m");
        let ids: Vec<String> = first
            .iter()
            .chain(second.iter())
            .flat_map(|m| m.tool_calls().map(|c| c.0.to_string()).collect::<Vec<_>>())
            .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(ids.len(), 4);
        assert_eq!(unique.len(), 4);
        assert_eq!(
            first[0].tool_calls().nth(1).map(|c| c.2.clone()),
            Some(json!({"q":"b"}))
        );

        let mut transcript = first.clone();
        push_tool_result(&mut transcript, ids[1].clone(), ToolOutcome::ok("r"));
        let out = to_ollama(&transcript, Some("sys"), "m");
        assert_eq!(out[1]["tool_calls"][0]["function"]["arguments"], json!({"q":"a"}));
        assert_eq!(out[2], json!({"role":"tool","content":"r","tool_name":"search"}));
    }

    #[test]
    fn tool_messages_map_back_to_pending_calls() {
        let wire = vec![
            json!({"role":"assistant","content":"","tool_calls":[
                {"function":{"name":"a","arguments":{}}},{"function":{"name":"b","arguments":{}}}]}),
            json!({"role":"tool","tool_name":"b","content":"B"}),
            json!({"role":"tool","tool_name":"a","content":"A"}),
        ];
        let n = from_ollama(&wire, "m");
        let calls: Vec<(String, String)> = n[0].tool_calls().map(|c| (c.0.to_string(), c.1.to_string())).collect();
        assert_eq!(n.len(), 2);
        match (&n[1].content[0], &n[1].content[1]) {
            (Block::ToolResult { tool_call_id: b, .. }, Block::ToolResult { tool_call_id: a, .. }) => {
                assert_eq!(b, &calls[1].0);
                assert_eq!(a, &calls[0].0);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn stream_collects_content_thinking_and_calls() {
        let mut s = OllamaStream::default();
        for c in [
            json!({"model":"m","message":{"role":"assistant","content":"","thinking":"hm"},"done":false}),
            json!({"message":{"role":"assistant","content":"Hi"},"done":false}),
            json!({"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{}}}]},"done":false}),
            json!({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}),
        ] {
            assert!(s.feed(&c).is_ok());
        }
        assert!(s.done);
        let m = s.message();
        assert_eq!(m["content"], "Hi");
        assert_eq!(m["thinking"], "hm");
        assert_eq!(m["tool_calls"].as_array().map(Vec::len), Some(1));
        assert!(s.feed(&json!({"error":"model 'x' not found"})).is_err());
    }
}
