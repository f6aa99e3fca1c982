//! Each provider's wire protocol as the fake servers speak it: canned
//! streams for text, tool calls, thinking and faults.

use std::time::Duration;

use jarvis::llm::{make_provider, ChatProvider, LlmSettings, ToolSpec};
use serde_json::{json, Value};

use super::llm::{FakeServer, Reply};

pub const OPENROUTER_KEY: &str = "sk-or-v1-SECRET-0123456789abcdef";
pub const ANTHROPIC_KEY: &str = "sk-ant-SECRET-0123456789abcdef";

#[derive(Debug, Clone, Copy)]
pub enum Wire {
    OpenRouter,
    Anthropic,
    Ollama,
}

pub const WIRES: [Wire; 3] = [Wire::OpenRouter, Wire::Anthropic, Wire::Ollama];

pub fn settings_for(url: &str) -> LlmSettings {
    LlmSettings {
        ollama_host: url.to_string(),
        anthropic_api_key: Some(ANTHROPIC_KEY.into()),
        anthropic_base_url: url.to_string(),
        openrouter_api_key: Some(OPENROUTER_KEY.into()),
        openrouter_model: "acme/model-1".into(),
        openrouter_base_url: format!("{url}/api/v1"),
        request_timeout: Duration::from_secs(10),
        ..LlmSettings::default()
    }
}

pub fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

impl Wire {
    pub fn spec(self) -> &'static str {
        match self {
            Wire::OpenRouter => "openrouter",
            Wire::Anthropic => "anthropic",
            Wire::Ollama => "ollama",
        }
    }

    pub fn provider(self, server: &FakeServer) -> Box<dyn ChatProvider> {
        make_provider(self.spec(), &settings_for(&server.url)).expect("provider")
    }

    pub fn path(self) -> &'static str {
        match self {
            Wire::OpenRouter => "/api/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
            Wire::Ollama => "/api/chat",
        }
    }

    pub fn anthropic_start() -> String {
        sse(
            Some("message_start"),
            &json!({"type":"message_start","message":{"model":"claude-sonnet-4-6","usage":{"input_tokens":5}}}),
        )
    }

    pub fn anthropic_end(stop: &str) -> Vec<String> {
        vec![
            sse(
                Some("message_delta"),
                &json!({"type":"message_delta","delta":{"stop_reason":stop}}),
            ),
            sse(Some("message_stop"), &json!({"type":"message_stop"})),
        ]
    }

    /// Events carrying text deltas only (no terminator).
    pub fn text_events(self, parts: &[&str]) -> Vec<String> {
        match self {
            Wire::OpenRouter => parts
                .iter()
                .map(|p| {
                    sse(
                        None,
                        &json!({"model":"acme/model-1","choices":[{"index":0,"delta":{"content":p}}]}),
                    )
                })
                .collect(),
            Wire::Anthropic => {
                let mut v = vec![
                    Self::anthropic_start(),
                    sse(
                        Some("content_block_start"),
                        &json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
                    ),
                ];
                v.extend(parts.iter().map(|p| {
                    sse(
                        Some("content_block_delta"),
                        &json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":p}}),
                    )
                }));
                v
            }
            Wire::Ollama => parts
                .iter()
                .map(|p| {
                    format!(
                        "{}\n",
                        json!({"model":"qwen3-vl:30b","message":{"role":"assistant","content":p},"done":false})
                    )
                })
                .collect(),
        }
    }

    pub fn finish(self, stop: &str) -> Vec<String> {
        match self {
            Wire::OpenRouter => vec![
                sse(None, &json!({"choices":[{"index":0,"delta":{},"finish_reason":stop}]})),
                sse(
                    None,
                    &json!({"model":"acme/model-1-served","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"cost":0.0125}}),
                ),
                "data: [DONE]\n\n".to_string(),
            ],
            Wire::Anthropic => {
                let mut v = vec![sse(
                    Some("content_block_stop"),
                    &json!({"type":"content_block_stop","index":0}),
                )];
                v.extend(Self::anthropic_end(stop));
                v
            }
            Wire::Ollama => vec![format!(
                "{}\n",
                json!({"model":"qwen3-vl:30b","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"})
            )],
        }
    }

    pub fn text(self, parts: &[&str]) -> Reply {
        let mut chunks = self.text_events(parts);
        chunks.extend(self.finish("stop"));
        self.reply(chunks)
    }

    pub fn reply(self, chunks: Vec<String>) -> Reply {
        match self {
            Wire::Ollama => Reply::ndjson(chunks),
            _ => Reply::sse(chunks),
        }
    }

    /// Several tool calls whose argument pieces are interleaved chunk by chunk.
    pub fn tool_calls(self, calls: &[(&str, &str, Vec<&str>)]) -> Reply {
        let rounds = calls.iter().map(|c| c.2.len()).max().unwrap_or(0);
        let mut chunks = Vec::new();
        match self {
            Wire::OpenRouter => {
                for (i, (id, name, _)) in calls.iter().enumerate() {
                    chunks.push(sse(
                        None,
                        &json!({"choices":[{"index":0,"delta":{"tool_calls":[
                        {"index":i,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]}),
                    ));
                }
                for r in 0..rounds {
                    for (i, (_, _, pieces)) in calls.iter().enumerate() {
                        if let Some(p) = pieces.get(r) {
                            chunks.push(sse(
                                None,
                                &json!({"choices":[{"index":0,"delta":{"tool_calls":[
                                {"index":i,"function":{"arguments":p}}]}}]}),
                            ));
                        }
                    }
                }
                chunks.extend(self.finish("tool_calls"));
            }
            Wire::Anthropic => {
                chunks.push(Self::anthropic_start());
                for (i, (id, name, _)) in calls.iter().enumerate() {
                    chunks.push(sse(
                        Some("content_block_start"),
                        &json!({"type":"content_block_start","index":i,
                        "content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
                    ));
                }
                for r in 0..rounds {
                    for (i, (_, _, pieces)) in calls.iter().enumerate() {
                        if let Some(p) = pieces.get(r) {
                            chunks.push(sse(
                                Some("content_block_delta"),
                                &json!({"type":"content_block_delta","index":i,
                                "delta":{"type":"input_json_delta","partial_json":p}}),
                            ));
                        }
                    }
                }
                for i in 0..calls.len() {
                    chunks.push(sse(
                        Some("content_block_stop"),
                        &json!({"type":"content_block_stop","index":i}),
                    ));
                }
                chunks.extend(Self::anthropic_end("tool_use"));
            }
            Wire::Ollama => {
                // Ollama sends each call whole (arguments already a mapping);
                // several calls arrive in separate chunks between content.
                for (_, name, pieces) in calls {
                    let args: Value = serde_json::from_str(&pieces.concat()).expect("args");
                    chunks.push(format!(
                        "{}\n",
                        json!({"message":{"role":"assistant","content":"",
                        "tool_calls":[{"function":{"name":name,"arguments":args}}]},"done":false})
                    ));
                }
                chunks.extend(self.finish("stop"));
            }
        }
        self.reply(chunks)
    }

    /// Reasoning/thinking followed by text.
    pub fn thinking(self, thought: &str, text: &str) -> Reply {
        let chunks = match self {
            Wire::OpenRouter => {
                let mut v = vec![sse(
                    None,
                    &json!({"choices":[{"index":0,"delta":{"reasoning":thought}}]}),
                )];
                v.extend(self.text_events(&[text]));
                v.extend(self.finish("stop"));
                v
            }
            Wire::Anthropic => {
                let mut v = vec![
                    Self::anthropic_start(),
                    sse(
                        Some("content_block_start"),
                        &json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
                    ),
                    sse(
                        Some("content_block_delta"),
                        &json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":thought}}),
                    ),
                    sse(
                        Some("content_block_delta"),
                        &json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG123"}}),
                    ),
                    sse(
                        Some("content_block_stop"),
                        &json!({"type":"content_block_stop","index":0}),
                    ),
                    sse(
                        Some("content_block_start"),
                        &json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
                    ),
                    sse(
                        Some("content_block_delta"),
                        &json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":text}}),
                    ),
                    sse(
                        Some("content_block_stop"),
                        &json!({"type":"content_block_stop","index":1}),
                    ),
                ];
                v.extend(Self::anthropic_end("end_turn"));
                v
            }
            Wire::Ollama => {
                let mut v = vec![format!(
                    "{}\n",
                    json!({"message":{"role":"assistant","content":"","thinking":thought},"done":false})
                )];
                v.extend(self.text_events(&[text]));
                v.extend(self.finish("stop"));
                v
            }
        };
        self.reply(chunks)
    }

    pub fn malformed(self) -> Reply {
        let mut chunks = self.text_events(&["ok"]);
        chunks.push(match self {
            Wire::Ollama => "{\"message\": not json\n".to_string(),
            Wire::Anthropic => "event: content_block_delta\ndata: {not json\n\n".to_string(),
            Wire::OpenRouter => "data: {not json\n\n".to_string(),
        });
        chunks.extend(self.finish("stop"));
        self.reply(chunks)
    }

    pub fn model_not_found(self) -> Reply {
        match self {
            Wire::Ollama => Reply::status(
                404,
                r#"{"error":"model \"qwen3-vl:30b\" not found, try pulling it first"}"#,
            ),
            Wire::Anthropic => Reply::status(
                404,
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}"#,
            ),
            Wire::OpenRouter => Reply::status(
                404,
                r#"{"error":{"code":404,"message":"No endpoints found for acme/model-1"}}"#,
            ),
        }
    }
}

/// A tool the model may call, with no parameters (the wires carry the
/// name; what the tool does is the test's business).
pub fn tool_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type":"object","properties":{}}),
    }
}
