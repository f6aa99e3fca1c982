//! OpenAI chat-completions wire, shared by OpenRouter and every
//! OpenAI-compatible server: flat `content`, `tool_calls` with JSON-string
//! arguments, one `role: "tool"` message per result.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::StreamFault;
use crate::llm::stream::{StepUsage, StreamEvent};
use crate::llm::transcript::{opaque_matches, push_tool_result, Block, Message, Role, ToolOutcome};

/// Reasoning fields some OpenAI-compatible services add to assistant
/// messages. Kept as opaque so they replay only to the model that wrote them.
const REASONING_FIELDS: &[&str] = &["reasoning", "reasoning_details", "reasoning_content"];

/// Neutral transcript → wire messages, with an optional system message first.
pub fn to_openai(messages: &[Message], system: Option<&str>, provider: &str, model: &str) -> Vec<Value> {
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
                        } => out.push(json!({
                            "role": "tool",
                            "tool_call_id": tool_call_id,
                            "content": content,
                        })),
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
                let text = m.text();
                let mut calls = Vec::new();
                for b in &m.content {
                    match b {
                        Block::ToolCall { id, name, arguments } => calls.push(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments.to_string()},
                        })),
                        Block::ProviderOpaque {
                            provider: p,
                            model: md,
                            data,
                        } if opaque_matches(p, md, provider, model) => {
                            if let Some(fields) = data.as_object() {
                                for (k, v) in fields {
                                    msg.insert(k.clone(), v.clone());
                                }
                            }
                        }
                        _ => {}
                    }
                }
                if text.is_empty() && calls.is_empty() {
                    // Nothing this wire can express (e.g. only foreign opaque
                    // blocks): an empty assistant message is worse than none.
                    continue;
                }
                msg.insert(
                    "content".into(),
                    if text.is_empty() { Value::Null } else { json!(text) },
                );
                if !calls.is_empty() {
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(msg));
            }
        }
    }
    out
}

/// Wire messages (the new tail of a turn) → neutral messages. Consecutive
/// `tool` messages are bundled into one user message of results.
pub fn from_openai(wire: &[Value], provider: &str, model: &str) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for w in wire {
        match w.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                let mut content = Vec::new();
                let mut opaque = Map::new();
                for field in REASONING_FIELDS {
                    if let Some(v) = w.get(*field).filter(|v| !v.is_null()) {
                        opaque.insert((*field).to_string(), v.clone());
                    }
                }
                if !opaque.is_empty() {
                    content.push(Block::ProviderOpaque {
                        provider: provider.to_string(),
                        model: model.to_string(),
                        data: Value::Object(opaque),
                    });
                }
                if let Some(text) = w.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    content.push(Block::Text { text: text.to_string() });
                }
                for call in w.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let raw = call.pointer("/function/arguments");
                    content.push(Block::ToolCall {
                        id: call.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
                        name: call
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        arguments: parse_arguments(raw),
                    });
                }
                out.push(Message {
                    role: Role::Assistant,
                    content,
                });
            }
            Some("tool") => {
                let id = w.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
                let content = w.get("content").and_then(Value::as_str).unwrap_or_default();
                push_tool_result(&mut out, id, ToolOutcome::ok(content));
            }
            Some("user") => {
                if let Some(text) = w.get("content").and_then(Value::as_str) {
                    out.push(Message::user(text));
                }
            }
            _ => {}
        }
    }
    out
}

/// Arguments arrive as a JSON string; a string that is not a JSON object is
/// kept under `_raw` so nothing the model said is silently lost.
pub fn parse_arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({"_raw": s}),
        },
        Some(v @ Value::Object(_)) => v.clone(),
        _ => json!({}),
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Folds streamed chat-completion chunks into one assistant message.
/// Tool calls are keyed by the delta `index`; id and name land once while
/// the arguments are split across chunks, so each field is only touched
/// when a chunk actually carries it and interleaved calls never bleed.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    content: String,
    reasoning: String,
    reasoning_details: Vec<Value>,
    calls: BTreeMap<u64, PartialCall>,
    /// Wire indices in order of first appearance: the position here is the
    /// `index` of [`StreamEvent::ToolCallStart`] and the order of the
    /// assembled calls, so the two always agree.
    order: Vec<u64>,
    pub finish_reason: Option<String>,
    /// Usage object from the final chunk (OpenRouter: includes `cost`).
    pub usage: Option<Value>,
    /// The model that actually served the request.
    pub model: Option<String>,
    pub chunks: usize,
}

impl OpenAiStream {
    pub fn feed(&mut self, chunk: &Value) -> Result<(), StreamFault> {
        self.feed_with(chunk, &mut crate::llm::stream::ignore)
    }

    /// [`Self::feed`], reporting text/reasoning deltas and tool-call starts to `on_event`.
    pub fn feed_with(&mut self, chunk: &Value, on_event: &mut dyn FnMut(StreamEvent<'_>)) -> Result<(), StreamFault> {
        self.chunks += 1;
        if let Some(err) = chunk.get("error") {
            let status = err
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok());
            let detail = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| err.to_string());
            return Err(StreamFault::ServiceError { status, detail });
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str) {
            self.model = Some(m.to_string());
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(u.clone());
        }
        for choice in chunk.get("choices").and_then(Value::as_array).into_iter().flatten() {
            if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(r.to_string());
            }
            let Some(delta) = choice.get("delta") else {
                continue;
            };
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                if !t.is_empty() {
                    on_event(StreamEvent::TextDelta(t));
                }
                self.content.push_str(t);
            }
            for key in ["reasoning", "reasoning_content"] {
                if let Some(t) = delta.get(key).and_then(Value::as_str) {
                    if !t.is_empty() {
                        on_event(StreamEvent::ThinkingDelta(t));
                    }
                    self.reasoning.push_str(t);
                }
            }
            if let Some(d) = delta.get("reasoning_details").and_then(Value::as_array) {
                self.reasoning_details.extend(d.iter().cloned());
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                let Some(index) = call.get("index").and_then(Value::as_u64) else {
                    return Err(StreamFault::Malformed("tool call delta without an index".into()));
                };
                if !self.calls.contains_key(&index) {
                    self.order.push(index);
                }
                let slot = self.calls.entry(index).or_default();
                let had_name = slot.name.is_some();
                if let Some(id) = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    slot.id = Some(id.to_string());
                }
                if let Some(f) = call.get("function") {
                    if let Some(n) = f.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                        slot.name = Some(n.to_string());
                    }
                    if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                        slot.arguments.push_str(a);
                    }
                }
                if let (false, Some(name)) = (had_name, slot.name.as_deref()) {
                    let ordinal = self.order.iter().position(|&i| i == index).unwrap_or_default();
                    on_event(StreamEvent::ToolCallStart { index: ordinal, name });
                }
            }
        }
        Ok(())
    }

    /// Token counts and cost the service reported, if any.
    pub fn step_usage(&self) -> StepUsage {
        let u = self.usage.as_ref();
        let get = |k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64);
        StepUsage {
            input_tokens: get("prompt_tokens"),
            output_tokens: get("completion_tokens"),
            cost_usd: u.and_then(|u| u.get("cost")).and_then(Value::as_f64),
        }
    }

    /// The assembled wire assistant message.
    pub fn message(&self) -> Value {
        let mut msg = Map::new();
        msg.insert("role".into(), json!("assistant"));
        msg.insert("content".into(), json!(self.content));
        if !self.reasoning.is_empty() {
            msg.insert("reasoning".into(), json!(self.reasoning));
        }
        if !self.reasoning_details.is_empty() {
            msg.insert("reasoning_details".into(), Value::Array(self.reasoning_details.clone()));
        }
        if !self.calls.is_empty() {
            // Some local servers send no call ids; synthesised ones carry a
            // random prefix so they stay unique across the whole transcript.
            let prefix = uuid::Uuid::new_v4().simple().to_string();
            let prefix = &prefix[..8];
            let calls: Vec<Value> = self
                .order
                .iter()
                .filter_map(|i| self.calls.get(i).map(|c| (i, c)))
                .map(|(i, c)| {
                    json!({
                        "id": c.id.clone().unwrap_or_else(|| format!("call_{prefix}_{i}")),
                        "type": "function",
                        "function": {"name": c.name.clone().unwrap_or_default(), "arguments": c.arguments},
                    })
                })
                .collect();
            msg.insert("tool_calls".into(), Value::Array(calls));
        }
        Value::Object(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(v: Value) -> Value {
        v
    }

    #[test]
    fn interleaved_tool_call_deltas_do_not_bleed() {
        let mut s = OpenAiStream::default();
        let deltas = [
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"search","arguments":""}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"read","arguments":"{\"pa"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"x.md\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"cats\"}"}}]}}]}),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
        ];
        for d in &deltas {
            assert!(s.feed(&chunk(d.clone())).is_ok());
        }
        let msgs = from_openai(&[s.message()], "openrouter", "m");
        let calls: Vec<_> = msgs[0]
            .tool_calls()
            .map(|(i, n, a)| (i.to_string(), n.to_string(), a.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("a".into(), "search".into(), json!({"q":"cats"})),
                ("b".into(), "read".into(), json!({"path":"x.md"})),
            ]
        );
        assert_eq!(s.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn usage_and_model_from_final_chunk_and_errors() {
        let mut s = OpenAiStream::default();
        assert!(s
            .feed(&json!({"model":"x/y","choices":[{"delta":{"content":"Hel"}}]}))
            .is_ok());
        assert!(s.feed(&json!({"choices":[{"delta":{"content":"lo"}}]})).is_ok());
        assert!(s
            .feed(&json!({"model":"x/y-served","choices":[],"usage":{"cost":0.002,"total_tokens":5}}))
            .is_ok());
        assert_eq!(s.model.as_deref(), Some("x/y-served"));
        assert_eq!(s.usage.as_ref().and_then(|u| u["cost"].as_f64()), Some(0.002));
        assert_eq!(s.message()["content"], "Hello");
        let err = s.feed(&json!({"error":{"code":502,"message":"upstream died"}}));
        assert_eq!(
            err,
            Err(StreamFault::ServiceError {
                status: Some(502),
                detail: "upstream died".into()
            })
        );
    }

    #[test]
    fn round_trip_and_opaque_only_to_same_model() {
        let wire = vec![
            json!({"role":"assistant","content":null,"reasoning":"hmm","tool_calls":[
                {"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
                {"id":"c2","type":"function","function":{"name":"g","arguments":"not json"}}]}),
            json!({"role":"tool","tool_call_id":"c1","content":"one"}),
            json!({"role":"tool","tool_call_id":"c2","content":"two"}),
        ];
        let neutral = from_openai(&wire, "openrouter", "m1");
        assert_eq!(neutral.len(), 2);
        assert_eq!(neutral[1].content.len(), 2);
        assert_eq!(
            neutral[0].tool_calls().nth(1).map(|c| c.2.clone()),
            Some(json!({"_raw":"not json"}))
        );
        let same = to_openai(&neutral, Some("sys"), "openrouter", "m1");
        assert_eq!(same[0]["role"], "system");
        assert_eq!(same[1]["reasoning"], "hmm");
        assert_eq!(same[1]["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(same[2]["role"], "tool");
        assert_eq!(same[3]["tool_call_id"], "c2");
        let other = to_openai(&neutral, None, "openrouter", "m2");
        assert!(other[0].get("reasoning").is_none());
    }
}
