//! Anthropic Messages API over SSE. Thinking blocks are kept as opaque and
//! replayed to the same model only; `summarize` uploads a PDF as a base64
//! document, which is safe because only public papers reach that path.

use serde_json::{json, Map, Value};

use super::{read_sse, stream_exchange, Accumulator, ErrorContext, Flow, ReadFailure, Request};
use crate::cancel::Cancel;
use crate::llm::error::CallError;
use crate::llm::http::{StreamBody, Timeouts};
use crate::llm::provider::{Attachment, Exchange, PdfToText, Turn};
use crate::llm::settings::LlmSettings;
use crate::llm::stream::{OnEvent, StepUsage};
use crate::llm::transcript::Message;
use crate::llm::wire::anthropic::{from_anthropic, to_anthropic, AnthropicStream, PROVIDER};
use crate::llm::wire::{base64_encode, image_media_type};

const API_VERSION: &str = "2023-06-01";

pub struct AnthropicProvider {
    base_url: String,
    api_key: String,
    model: String,
    timeouts: Timeouts,
    secrets: Vec<String>,
    pdf_to_text: Option<PdfToText>,
}

impl AnthropicProvider {
    pub fn new(settings: &LlmSettings, api_key: String, model: &str) -> Self {
        let mut secrets = settings.secrets();
        secrets.push(api_key.clone());
        AnthropicProvider {
            base_url: settings.anthropic_base_url.clone(),
            api_key,
            model: model.to_string(),
            timeouts: Timeouts {
                connect: settings.connect_timeout,
                read: settings.request_timeout,
            },
            secrets,
            pdf_to_text: settings.pdf_to_text.clone(),
        }
    }

    fn errors(&self) -> ErrorContext<'_> {
        ErrorContext {
            label: "Anthropic",
            provider: PROVIDER,
            model: &self.model,
            key_hint: "ANTHROPIC_API_KEY or anthropic_api_key in config",
            base_url: &self.base_url,
            secrets: &self.secrets,
            is_ollama: false,
        }
    }

    pub fn body(&self, turn: &Turn<'_>) -> Value {
        let mut messages = to_anthropic(turn.messages, &self.model);
        if let Some(att) = turn.attachment {
            let block = match att {
                Attachment::Image(bytes) => json!({"type": "image", "source": {
                    "type": "base64", "media_type": image_media_type(bytes), "data": base64_encode(bytes)}}),
                Attachment::Pdf(bytes) => json!({"type": "document", "source": {
                    "type": "base64", "media_type": "application/pdf", "data": base64_encode(bytes)}}),
            };
            if let Some(content) = messages
                .iter_mut()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_array_mut())
            {
                // Documents and images before the question, as Anthropic advises.
                content.insert(0, block);
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("max_tokens".into(), json!(turn.max_tokens));
        if let Some(t) = turn.temperature {
            // Anthropic takes 0–1; a profile may say up to 2.
            body.insert("temperature".into(), json!(t.min(1.0)));
        }
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        if let Some(system) = turn.system.filter(|s| !s.is_empty()) {
            body.insert("system".into(), json!(system));
        }
        if !turn.tools.is_empty() {
            let tools: Vec<Value> = turn
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        Value::Object(body)
    }
}

impl Accumulator for AnthropicStream {
    fn read(
        &mut self,
        body: &mut StreamBody,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadFailure> {
        read_sse(body, cancel, |ev| {
            let data = super::parse_json(&ev.data)?;
            self.feed_with(&ev.event, &data, on_event)?;
            Ok(if self.done { Flow::Done } else { Flow::Continue })
        })
    }

    fn reported_usage(&self) -> StepUsage {
        self.step_usage()
    }
}

impl Exchange for AnthropicProvider {
    fn provider_name(&self) -> &str {
        PROVIDER
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
        let headers = [
            ("x-api-key", self.api_key.clone()),
            ("anthropic-version", API_VERSION.to_string()),
        ];
        let request = Request {
            url: super::join_url(&self.base_url, "v1/messages"),
            headers: &headers,
            body: self.body(turn),
            timeouts: &self.timeouts,
        };
        stream_exchange(request, &self.errors(), cancel, on_event, |acc: &AnthropicStream| {
            from_anthropic(&[acc.message()], &self.model)
        })
    }

    fn uploads_pdf(&self) -> bool {
        true
    }

    fn pdf_to_text(&self) -> Option<&PdfToText> {
        self.pdf_to_text.as_ref()
    }
}
