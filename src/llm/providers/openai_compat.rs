//! OpenAI-compatible chat completions over SSE: OpenRouter, and any server
//! the user configures (LM Studio, llama.cpp server, vLLM).
//!
//! OpenRouter is a broker, so every request carries the provider preferences
//! from config (strict by default) and asks for usage accounting. The
//! leaderboard headers (`HTTP-Referer`, `X-Title`) are deliberately never
//! sent: they would be telemetry by another name.

use std::sync::Mutex;

use serde_json::{json, Map, Value};

use super::{read_sse, stream_exchange, Accumulator, ErrorContext, Flow, ReadFailure, Request};
use crate::cancel::Cancel;
use crate::llm::error::CallError;
use crate::llm::http::{StreamBody, Timeouts};
use crate::llm::provider::{record_cost, Attachment, Exchange, PdfToText, ToolSpec, Turn, Usage};
use crate::llm::settings::LlmSettings;
use crate::llm::stream::{OnEvent, StepUsage};
use crate::llm::transcript::Message;
use crate::llm::wire::openai::{from_openai, to_openai, OpenAiStream};
use crate::llm::wire::{base64_encode, image_media_type};

/// OpenRouter's provider-routing preferences, sent on every request.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRouterPrefs {
    pub data_collection: String,
    pub allow_fallbacks: bool,
    pub only: Vec<String>,
}

pub struct OpenAiCompatProvider {
    name: String,
    label: String,
    base_url: String,
    api_key: Option<String>,
    key_hint: String,
    model: String,
    openrouter: Option<OpenRouterPrefs>,
    timeouts: Timeouts,
    secrets: Vec<String>,
    pdf_to_text: Option<PdfToText>,
    usage: Mutex<Usage>,
}

impl OpenAiCompatProvider {
    /// OpenRouter with the preferences and key from `settings`.
    pub fn openrouter(settings: &LlmSettings, model: &str) -> Self {
        OpenAiCompatProvider {
            name: "openrouter".into(),
            label: "OpenRouter".into(),
            base_url: settings.openrouter_base_url.clone(),
            api_key: settings.openrouter_api_key.clone(),
            key_hint: "OPENROUTER_API_KEY or openrouter_api_key in config".into(),
            model: model.to_string(),
            openrouter: Some(OpenRouterPrefs {
                data_collection: settings.openrouter_data_collection.clone(),
                allow_fallbacks: settings.openrouter_allow_fallbacks,
                only: settings.openrouter_only.clone(),
            }),
            timeouts: Timeouts {
                connect: settings.connect_timeout,
                read: settings.request_timeout,
            },
            secrets: settings.secrets(),
            pdf_to_text: settings.pdf_to_text.clone(),
            usage: Mutex::new(Usage::new()),
        }
    }

    /// A user-configured server by name.
    pub fn server(settings: &LlmSettings, server: &crate::llm::settings::OpenAiServer, model: &str) -> Self {
        OpenAiCompatProvider {
            name: server.name.clone(),
            label: format!("the `{}` server", server.name),
            base_url: server.base_url.clone(),
            api_key: server.api_key.clone(),
            key_hint: format!("the api_key of server `{}` in config", server.name),
            model: model.to_string(),
            openrouter: None,
            timeouts: Timeouts {
                connect: settings.connect_timeout,
                read: settings.request_timeout,
            },
            secrets: settings.secrets(),
            pdf_to_text: settings.pdf_to_text.clone(),
            usage: Mutex::new(Usage::new()),
        }
    }

    fn errors(&self) -> ErrorContext<'_> {
        ErrorContext {
            label: &self.label,
            provider: &self.name,
            model: &self.model,
            key_hint: &self.key_hint,
            base_url: &self.base_url,
            secrets: &self.secrets,
            is_ollama: false,
        }
    }

    /// The request body for one turn.
    pub fn body(&self, turn: &Turn<'_>) -> Value {
        let mut messages = to_openai(turn.messages, turn.system, &self.name, &self.model);
        if let Some(Attachment::Image(bytes)) = turn.attachment {
            attach_image(&mut messages, bytes);
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        body.insert("max_tokens".into(), json!(turn.max_tokens));
        if let Some(t) = turn.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !turn.tools.is_empty() {
            body.insert("tools".into(), tools_json(turn.tools));
        }
        if let Some(prefs) = &self.openrouter {
            let mut provider = Map::new();
            provider.insert("data_collection".into(), json!(prefs.data_collection));
            provider.insert("allow_fallbacks".into(), json!(prefs.allow_fallbacks));
            if !prefs.only.is_empty() {
                provider.insert("only".into(), json!(prefs.only));
            }
            body.insert("provider".into(), Value::Object(provider));
            // `usage.include` already asks for the final usage chunk, so the
            // redundant `stream_options.include_usage` is not sent.
            body.insert("usage".into(), json!({"include": true}));
        }
        Value::Object(body)
    }

    /// Only money the service actually reported is recorded, keyed by the
    /// model that served the request.
    fn record_usage(&self, acc: &OpenAiStream) {
        let cost = acc.usage.as_ref().and_then(|u| u.get("cost")).and_then(Value::as_f64);
        if let Some(usd) = cost {
            let served = acc.model.clone().unwrap_or_else(|| self.model.clone());
            record_cost(&self.usage, &served, usd);
        }
    }
}

fn attach_image(messages: &mut [Value], bytes: &[u8]) {
    let url = format!("data:{};base64,{}", image_media_type(bytes), base64_encode(bytes));
    if let Some(last) = messages.iter_mut().rev().find(|m| m["role"] == "user") {
        let text = last["content"].as_str().unwrap_or_default().to_string();
        last["content"] = json!([
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": url}},
        ]);
    }
}

pub(crate) fn tools_json(tools: &[ToolSpec]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect(),
    )
}

impl Accumulator for OpenAiStream {
    fn read(
        &mut self,
        body: &mut StreamBody,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadFailure> {
        let read = read_sse(body, cancel, |ev| {
            if ev.data.trim() == "[DONE]" {
                return Ok(Flow::Done);
            }
            let chunk = super::parse_json(&ev.data)?;
            self.feed_with(&chunk, on_event)?;
            Ok(Flow::Continue)
        });
        match read {
            Ok(()) => {}
            // Some servers end the stream after the finish chunk without
            // `[DONE]`; the reply is complete, so accept it.
            Err(ReadFailure::Eof { .. }) if self.finish_reason.is_some() => {}
            Err(f) => return Err(f),
        }
        if self.chunks == 0 {
            return Err(ReadFailure::Eof { events: 0 });
        }
        Ok(())
    }

    fn reported_usage(&self) -> StepUsage {
        self.step_usage()
    }
}

impl Exchange for OpenAiCompatProvider {
    fn provider_name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn exchange(
        &self,
        turn: &Turn<'_>,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<Message, CallError> {
        let mut headers = Vec::new();
        if let Some(key) = &self.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let request = Request {
            url: super::join_url(&self.base_url, "chat/completions"),
            headers: &headers,
            body: self.body(turn),
            timeouts: &self.timeouts,
        };
        stream_exchange(request, &self.errors(), cancel, on_event, |acc: &OpenAiStream| {
            self.record_usage(acc);
            from_openai(&[acc.message()], &self.name, &self.model)
        })
    }

    fn pdf_to_text(&self) -> Option<&PdfToText> {
        self.pdf_to_text.as_ref()
    }

    fn usage(&self) -> Option<&Mutex<Usage>> {
        Some(&self.usage)
    }
}
