//! Ollama native `/api/chat`, streamed as NDJSON. Runs on the user's own
//! hardware, so it reports no cost.

use serde_json::{json, Map, Value};

use super::{read_ndjson, stream_exchange, Accumulator, ErrorContext, Flow, ReadFailure, Request};
use crate::cancel::Cancel;
use crate::llm::error::CallError;
use crate::llm::http::{StreamBody, Timeouts};
use crate::llm::provider::{Attachment, Exchange, PdfToText, Turn};
use crate::llm::providers::openai_compat::tools_json;
use crate::llm::settings::LlmSettings;
use crate::llm::stream::{OnEvent, StepUsage};
use crate::llm::transcript::Message;
use crate::llm::wire::ollama::{from_ollama, to_ollama, OllamaStream, PROVIDER};
use crate::llm::wire::{base64_encode, StreamFault};

pub struct OllamaProvider {
    host: String,
    model: String,
    timeouts: Timeouts,
    secrets: Vec<String>,
    pdf_to_text: Option<PdfToText>,
}

impl OllamaProvider {
    pub fn new(settings: &LlmSettings, model: &str) -> Self {
        OllamaProvider {
            host: settings.ollama_host.trim_end_matches('/').to_string(),
            model: model.to_string(),
            timeouts: Timeouts {
                connect: settings.connect_timeout,
                read: settings.request_timeout,
            },
            secrets: settings.secrets(),
            pdf_to_text: settings.pdf_to_text.clone(),
        }
    }

    fn errors(&self) -> ErrorContext<'_> {
        ErrorContext {
            label: "Ollama",
            provider: PROVIDER,
            model: &self.model,
            key_hint: "the Ollama server's auth settings",
            base_url: &self.host,
            secrets: &self.secrets,
            is_ollama: true,
        }
    }

    pub fn body(&self, turn: &Turn<'_>) -> Value {
        let mut messages = to_ollama(turn.messages, turn.system, &self.model);
        if let Some(Attachment::Image(bytes)) = turn.attachment {
            if let Some(last) = messages.iter_mut().rev().find(|m| m["role"] == "user") {
                last["images"] = json!([base64_encode(bytes)]);
            }
        }
        let mut options = Map::new();
        options.insert("num_predict".into(), json!(turn.max_tokens));
        if let Some(t) = turn.temperature {
            options.insert("temperature".into(), json!(t));
        }
        if let Some(ctx) = turn.context_length {
            options.insert("num_ctx".into(), json!(ctx));
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(true));
        body.insert("options".into(), Value::Object(options));
        if !turn.tools.is_empty() {
            body.insert("tools".into(), tools_json(turn.tools));
        }
        Value::Object(body)
    }
}

impl Accumulator for OllamaStream {
    fn read(
        &mut self,
        body: &mut StreamBody,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadFailure> {
        read_ndjson(body, cancel, |chunk| {
            if let Err(StreamFault::ServiceError { detail, .. }) = self.feed_with(chunk, on_event) {
                // Ollama reports a missing model inside a 200 stream too.
                let status = if detail.contains("not found") { Some(404) } else { None };
                return Err(StreamFault::ServiceError { status, detail });
            }
            Ok(if self.done { Flow::Done } else { Flow::Continue })
        })
    }

    fn reported_usage(&self) -> StepUsage {
        self.step_usage()
    }
}

impl Exchange for OllamaProvider {
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
        let request = Request {
            url: super::join_url(&self.host, "api/chat"),
            headers: &[],
            body: self.body(turn),
            timeouts: &self.timeouts,
        };
        stream_exchange(request, &self.errors(), cancel, on_event, |acc: &OllamaStream| {
            from_ollama(&[acc.message()], &self.model)
        })
    }

    fn pdf_to_text(&self) -> Option<&PdfToText> {
        self.pdf_to_text.as_ref()
    }
}
