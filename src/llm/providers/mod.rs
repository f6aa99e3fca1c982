//! The three provider families and the one streamed exchange they share.
//!
//! [`stream_exchange`] is the only place a provider makes an HTTP call and
//! the only place its failures become [`LlmError`]s (redacted, then logged,
//! through [`ErrorContext`]): stop switch, open, read, usage, take the one
//! assistant message. Each provider keeps only what is its own: the URL,
//! headers and body, how its stream's events feed its accumulator
//! ([`Accumulator`]), and the conversion back to the transcript. Must not:
//! build or parse any provider's messages (that is [`crate::llm::wire`]), nor
//! make a request outside [`stream_exchange`].

pub mod anthropic;
pub mod ollama;
pub mod openai_compat;

use serde_json::Value;

use crate::cancel::{Cancel, Cancelled};
use crate::llm::check_cancel;
use crate::llm::cooldown::{self, CooldownStop};
use crate::llm::error::{classify_status, error_detail, CallError, ErrorKind, LlmError, StatusContext};
use crate::llm::http::{post_stream, Opened, StatusFailure, StreamBody, Timeouts, TransportFailure};
use crate::llm::redact::redact_secrets;
use crate::llm::sse::{ndjson_line, SseEvent, SseParser};
use crate::llm::stream::{OnEvent, StepUsage, StreamEvent};
use crate::llm::transcript::Message;
use crate::llm::wire::StreamFault;

pub use anthropic::AnthropicProvider;
pub use ollama::OllamaProvider;
pub use openai_compat::OpenAiCompatProvider;

/// A provider's stream accumulator, as [`stream_exchange`] sees it.
pub(crate) trait Accumulator: Default {
    /// Reads `body` until the reply is complete, feeding each event into
    /// `self` and reporting deltas to `on_event`. The framing ([`read_sse`]
    /// or [`read_ndjson`]), the terminator and which early ends still count
    /// as a whole reply are the provider's own.
    fn read(
        &mut self,
        body: &mut StreamBody,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<(), ReadFailure>;

    /// Token counts (and money) the service reported for this request.
    fn reported_usage(&self) -> StepUsage;
}

/// Where and what one provider request sends.
pub(crate) struct Request<'a> {
    pub url: String,
    pub headers: &'a [(&'a str, String)],
    pub body: Value,
    pub timeouts: &'a Timeouts,
}

/// The one streamed exchange: checks the stop switch, honours the
/// provider's cooldown ([`cooldown`]), opens the stream
/// (a transport failure or an error status worded by `errors`), reads it
/// into `A`, hands the finished accumulator to `finish`, reports the usage,
/// and returns the one assistant message `finish` produced.
///
/// `finish` is the provider's own ending: its bookkeeping (the money an
/// OpenAI-compatible service reported) and the conversion of the assembled
/// wire message back to the transcript. It runs before `Usage` is reported,
/// so a caller that sees `Usage` sees the cost already recorded.
pub(crate) fn stream_exchange<A: Accumulator>(
    request: Request<'_>,
    errors: &ErrorContext<'_>,
    cancel: Option<&Cancel>,
    on_event: &mut OnEvent<'_>,
    finish: impl FnOnce(&A) -> Vec<Message>,
) -> Result<Message, CallError> {
    check_cancel(cancel)?;
    // A provider cooling down after a rate limit is waited out (or refused
    // with one clear message) before anything is sent to it.
    let cooling = cooldown::Key::new(errors.provider, errors.base_url);
    match cooldown::global().honour(&cooling, errors.label, cancel) {
        Ok(()) => {}
        Err(CooldownStop::Cancelled(c)) => return Err(c.into()),
        Err(CooldownStop::Refused(e)) => return Err(errors.wrap(e)),
    }
    let opened = post_stream(&request.url, request.headers, &request.body, request.timeouts, cancel);
    check_cancel(cancel)?;
    let mut stream = match opened.map_err(|f| errors.transport(f))? {
        Opened::Stream(s) => s,
        Opened::Status(f) => {
            cooldown::global().record_failure(&cooling, f.status, f.retry_after, std::time::Instant::now());
            return Err(errors.status(f));
        }
    };
    cooldown::global().record_success(&cooling);
    let mut acc = A::default();
    acc.read(&mut stream, cancel, on_event).map_err(|f| errors.read(f))?;
    // The reply is whole: close the connection before anything else runs.
    drop(stream);
    let mut converted = finish(&acc);
    let usage = acc.reported_usage();
    if !usage.is_empty() {
        on_event(StreamEvent::Usage(usage));
    }
    converted.pop().ok_or_else(|| {
        errors.read(ReadFailure::Fault(StreamFault::Malformed(
            "no assistant message".into(),
        )))
    })
}

/// Whether the stream reader should keep going after an event.
pub(crate) enum Flow {
    Continue,
    Done,
}

/// How a read loop ended other than by its terminator event.
pub(crate) enum ReadFailure {
    Cancelled,
    Transport(TransportFailure),
    Fault(StreamFault),
    /// The stream ended before its terminator. `events` says whether
    /// anything arrived at all (empty stream vs. dropped mid-stream).
    Eof {
        events: usize,
    },
}

impl From<StreamFault> for ReadFailure {
    fn from(f: StreamFault) -> Self {
        ReadFailure::Fault(f)
    }
}

/// Reads SSE events until `on_event` says done, checking the stop switch
/// between events. A read that fails because `stop()` shut the socket
/// reports `Cancelled`, not a network error.
pub(crate) fn read_sse(
    body: &mut StreamBody,
    cancel: Option<&Cancel>,
    mut on_event: impl FnMut(&SseEvent) -> Result<Flow, StreamFault>,
) -> Result<(), ReadFailure> {
    let mut parser = SseParser::default();
    let mut events = 0usize;
    loop {
        let line = body.next_line();
        if check_cancel(cancel).is_err() {
            return Err(ReadFailure::Cancelled);
        }
        let event = match line.map_err(ReadFailure::Transport)? {
            Some(line) => parser.push_line(&line),
            None => match parser.finish() {
                Some(ev) => Some(ev),
                None => return Err(ReadFailure::Eof { events }),
            },
        };
        if let Some(ev) = event {
            events += 1;
            if let Flow::Done = on_event(&ev)? {
                return Ok(());
            }
        }
    }
}

/// Reads NDJSON lines until `on_line` says done, same rules as [`read_sse`].
pub(crate) fn read_ndjson(
    body: &mut StreamBody,
    cancel: Option<&Cancel>,
    mut on_line: impl FnMut(&Value) -> Result<Flow, StreamFault>,
) -> Result<(), ReadFailure> {
    let mut events = 0usize;
    loop {
        let line = body.next_line();
        if check_cancel(cancel).is_err() {
            return Err(ReadFailure::Cancelled);
        }
        let Some(line) = line.map_err(ReadFailure::Transport)? else {
            return Err(ReadFailure::Eof { events });
        };
        let Some(text) = ndjson_line(&line) else {
            continue;
        };
        events += 1;
        let value = parse_json(text)?;
        if let Flow::Done = on_line(&value)? {
            return Ok(());
        }
    }
}

pub(crate) fn parse_json(text: &str) -> Result<Value, StreamFault> {
    serde_json::from_str(text).map_err(|e| {
        let preview: String = text.chars().take(120).collect();
        StreamFault::Malformed(format!("{e} in `{preview}`"))
    })
}

/// Everything needed to word a failure for one request.
pub(crate) struct ErrorContext<'a> {
    /// Human name: "Ollama", "Anthropic", "OpenRouter", a server name.
    pub label: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    /// Where the key comes from, for auth errors.
    pub key_hint: &'a str,
    pub base_url: &'a str,
    pub secrets: &'a [String],
    pub is_ollama: bool,
}

impl ErrorContext<'_> {
    /// The single exit for failures: redact, log, wrap.
    pub fn wrap(&self, error: LlmError) -> CallError {
        let error = error.redacted(|text| redact_secrets(text, self.secrets));
        tracing::warn!(provider = self.provider, model = self.model, kind = ?error.kind(), "{error}");
        CallError::Llm(error)
    }

    pub fn transport(&self, f: TransportFailure) -> CallError {
        let provider = self.provider.to_string();
        let error = match f.kind {
            ErrorKind::Timeout => LlmError::Timeout {
                provider,
                message: format!(
                    "{} at {} stopped responding ({}) — it may be overloaded; try again",
                    self.label, self.base_url, f.detail
                ),
            },
            _ if self.is_ollama => LlmError::Network {
                provider,
                message: format!(
                    "Ollama isn't running at {} — start it with `ollama serve` ({})",
                    self.base_url, f.detail
                ),
            },
            _ => LlmError::Network {
                provider,
                message: format!(
                    "could not reach {} at {} ({}) — check the network and the base URL",
                    self.label, self.base_url, f.detail
                ),
            },
        };
        self.wrap(error)
    }

    pub fn status(&self, f: StatusFailure) -> CallError {
        let detail = error_detail(&f.body);
        let lower = detail.to_ascii_lowercase();
        if self.is_ollama && (f.status == 404 || (lower.contains("model") && lower.contains("not found"))) {
            return self.wrap(LlmError::ModelNotFound {
                provider: self.provider.to_string(),
                model: self.model.to_string(),
                message: format!(
                    "model `{m}` is not pulled — run `ollama pull {m}` ({detail})",
                    m = self.model
                ),
            });
        }
        self.wrap(classify_status(&StatusContext {
            provider: self.label,
            model: self.model,
            key_hint: self.key_hint,
            status: f.status,
            retry_after: f.retry_after,
            detail: &detail,
        }))
    }

    pub fn read(&self, f: ReadFailure) -> CallError {
        match f {
            ReadFailure::Cancelled => CallError::Cancelled(Cancelled),
            ReadFailure::Transport(t) => {
                if t.kind == ErrorKind::Timeout {
                    self.transport(t)
                } else {
                    self.wrap(LlmError::Network {
                        provider: self.provider.to_string(),
                        message: format!(
                            "the connection to {} dropped mid-reply ({}) — try again",
                            self.label, t.detail
                        ),
                    })
                }
            }
            ReadFailure::Fault(StreamFault::Malformed(detail)) => self.wrap(LlmError::Server {
                provider: self.provider.to_string(),
                status: None,
                message: format!("{} sent a malformed stream event: {detail} — try again", self.label),
            }),
            ReadFailure::Fault(StreamFault::ServiceError { status, detail }) => match status {
                Some(s) => self.status(StatusFailure {
                    status: s,
                    retry_after: None,
                    body: detail,
                }),
                None => self.wrap(LlmError::Server {
                    provider: self.provider.to_string(),
                    status: None,
                    message: format!("{} reported an error mid-reply: {detail}", self.label),
                }),
            },
            ReadFailure::Eof { events: 0 } => self.wrap(LlmError::Server {
                provider: self.provider.to_string(),
                status: None,
                message: format!("{} returned an empty reply stream — try again", self.label),
            }),
            ReadFailure::Eof { .. } => self.wrap(LlmError::Network {
                provider: self.provider.to_string(),
                message: format!(
                    "the connection to {} closed before the reply finished — try again",
                    self.label
                ),
            }),
        }
    }
}

/// A `base + path` join that tolerates a trailing slash on the base.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}
