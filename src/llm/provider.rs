//! The provider interface and the one agentic tool loop all providers share.
//!
//! A provider only implements [`Exchange`]: send the transcript, stream the
//! reply, return it as one neutral assistant message. Everything above that
//! — `complete`, `summarize`, `agentic_turn`, `describe_image` — is written
//! once here, so the cancellation and commit rules cannot drift apart
//! between providers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cancel::{Cancel, Cancelled};
use crate::llm::check_cancel;
use crate::llm::error::{CallError, LlmError};
use crate::llm::stream::{self, OnEvent, StreamEvent};
use crate::llm::transcript::{push_tool_result, Message};

/// Converts a local PDF to text for providers without document input.
pub type PdfToText = Arc<dyn Fn(&Path) -> Result<String, String> + Send + Sync>;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// A tool call and its outcome belong to the transcript (the stream and the
/// providers both speak them); re-exported here where callers look first.
pub use crate::llm::transcript::{ToolCall, ToolOutcome};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// A cloud model tried to reach private content: the turn ends at once,
    /// no further request is made, and this text is the reply.
    #[error("{0}")]
    Privacy(String),
    /// The tool saw the stop switch; the turn ends as cancelled.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
    /// An ordinary failure, reported back to the model as an error result.
    #[error("{0}")]
    Failed(String),
    /// The call worked and changed what the loop should offer (a profile
    /// switch): its result is recorded like any other, the step's other
    /// calls still run, and then the turn returns [`TurnEnd::Yielded`] so
    /// the caller can go on with new tools or a new system prompt.
    #[error("{}", .0.content)]
    Yield(ToolOutcome),
}

impl ToolError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            ToolError::Privacy(_) => ErrorKind::User,
            ToolError::Cancelled(_) => ErrorKind::Cancelled,
            ToolError::Failed(_) | ToolError::Yield(_) => ErrorKind::Internal,
        }
    }
}

/// How an agentic turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The model's final answer.
    Reply(String),
    /// A tool raised a privacy stop; the text is for the user. The orphaned
    /// assistant message was not committed.
    PrivacyStop(String),
    /// A tool asked to hand control back ([`ToolError::Yield`]): the step,
    /// its calls and all their results, is in the transcript, and no
    /// answer yet — the caller continues with another call.
    Yielded,
}

impl TurnEnd {
    pub fn text(&self) -> &str {
        match self {
            TurnEnd::Reply(t) | TurnEnd::PrivacyStop(t) => t,
            TurnEnd::Yielded => "",
        }
    }
}

/// What every step of an agentic turn asks of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOptions {
    /// Output cap of one step.
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves the service's default.
    pub temperature: Option<f64>,
}

/// Input for [`ChatProvider::summarize`].
#[derive(Debug, Clone, PartialEq)]
pub enum SummarySource {
    Text(String),
    Pdf(PathBuf),
}

/// Money reported by the service for one served model.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelCost {
    pub usd: f64,
    pub requests: u64,
}

/// Cost per served model.
pub type Usage = BTreeMap<String, ModelCost>;

/// The five operations the rest of jarvis uses. Every method takes an
/// optional stop switch; callers that can't be interrupted pass `None`.
pub trait ChatProvider: Send + Sync {
    /// Provider name as used in specs (`ollama`, `anthropic`, `openrouter`, a server name).
    fn provider_name(&self) -> &str;
    fn model(&self) -> &str;

    /// Single-shot completion. `context_length` sets Ollama's `num_ctx`.
    fn complete(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        cancel: Option<&Cancel>,
    ) -> Result<String, CallError>;

    /// [`Self::complete`], reporting the reply's deltas and usage (token
    /// counts, cost) to `on_event` as it streams in. The default, for
    /// implementors that cannot stream (test doubles), reports nothing.
    fn complete_streaming(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<String, CallError> {
        let _ = on_event;
        self.complete(messages, max_tokens, context_length, cancel)
    }

    /// [`Self::complete_streaming`] for a request the caller knows is safe
    /// to answer again with the same text (digest scoring, metadata
    /// extraction): a provider with a response cache ([`crate::llm::cache`])
    /// answers an identical one from it, reporting no events, and keeps a
    /// new reply only when `keep` accepts it (a reply the caller could not
    /// use must not be served again to its retry). The default asks the
    /// model every time.
    fn complete_reusable(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        keep: &dyn Fn(&str) -> bool,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<String, CallError> {
        let _ = keep;
        self.complete_streaming(messages, max_tokens, context_length, cancel, on_event)
    }

    /// Dense summary of a paper from its abstract/text or its PDF.
    /// `prompt` is the instruction as sent (the caller fills it from the
    /// user's editable `paper_summary` prompt, read per call, so an edit
    /// applies to the next paper even in a long-lived owner).
    fn summarize(
        &self,
        prompt: &str,
        source: &SummarySource,
        max_tokens: u32,
        cancel: Option<&Cancel>,
    ) -> Result<String, CallError>;

    /// Full tool-calling loop. On success the turn's messages are appended
    /// to `messages` in one go; on cancellation or error `messages` is
    /// exactly as it was. [`Self::agentic_turn_streaming`] without the events.
    fn agentic_turn(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        cancel: Option<&Cancel>,
    ) -> Result<TurnEnd, CallError>;

    /// [`Self::agentic_turn`], reporting its progress to `on_event` as it
    /// streams in (text and thinking deltas, tool calls, tool results,
    /// usage — see [`crate::llm::stream`] for the order). Same transcript
    /// rules: `messages` changes only on success.
    ///
    /// Every provider in this module streams for real. This default exists
    /// for implementors that cannot (test doubles): it runs the whole turn,
    /// then reports the reply as one `TextDelta`.
    fn agentic_turn_streaming(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<TurnEnd, CallError> {
        on_event(StreamEvent::StepStart { step: 0 });
        let end = self.agentic_turn(messages, tools, dispatch, system, cancel)?;
        if let TurnEnd::Reply(text) = &end {
            on_event(StreamEvent::TextDelta(text));
        }
        Ok(end)
    }

    /// [`Self::agentic_turn_streaming`] with each step's output capped at
    /// `step.max_tokens` (the chat's `chat.max_output_tokens`) instead of
    /// [`AGENTIC_MAX_TOKENS`], at `step.temperature`. The default, for
    /// implementors that cannot cap (test doubles), ignores both.
    #[allow(clippy::too_many_arguments)]
    fn agentic_turn_capped(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        step: StepOptions,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<TurnEnd, CallError> {
        let _ = step;
        self.agentic_turn_streaming(messages, tools, dispatch, system, cancel, on_event)
    }

    /// Caption one figure for indexing; `context` is the document title.
    fn describe_image(&self, image: &[u8], context: &str, cancel: Option<&Cancel>) -> Result<String, CallError>;

    /// Cost since the last call, then reset; `None` when the provider
    /// reports no money (never a fabricated zero).
    fn pop_usage(&self) -> Option<Usage>;
}

/// Non-transcript input attached to the last user message.
#[derive(Debug, Clone, Copy)]
pub enum Attachment<'a> {
    Image(&'a [u8]),
    Pdf(&'a [u8]),
}

/// One request's worth of input.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    pub messages: &'a [Message],
    pub system: Option<&'a str>,
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    pub context_length: Option<u32>,
    pub attachment: Option<Attachment<'a>>,
    /// Sampling temperature; `None` leaves the service's default.
    pub temperature: Option<f64>,
}

/// What a provider implements: one streamed request → one assistant message.
pub trait Exchange: Send + Sync {
    fn provider_name(&self) -> &str;
    fn model(&self) -> &str;
    /// Sends one request; reports deltas, tool-call starts and usage to
    /// `on_event` as they arrive (never `StepStart`, `ToolCallEnd` or
    /// `ToolResult`: those belong to the agentic loop).
    fn exchange(
        &self,
        turn: &Turn<'_>,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<Message, CallError>;
    /// Whether `summarize` may upload the PDF itself (Anthropic only).
    fn uploads_pdf(&self) -> bool {
        false
    }
    fn pdf_to_text(&self) -> Option<&PdfToText>;
    fn usage(&self) -> Option<&Mutex<Usage>> {
        None
    }
}

/// Output budget of one agentic step when the caller sets none; enough for
/// a long answer. The chat sets its own (`chat.max_output_tokens`).
pub const AGENTIC_MAX_TOKENS: u32 = 8192;
const CAPTION_MAX_TOKENS: u32 = 600;

/// Shared by every provider so captions read the same whatever the model.
pub const FIGURE_CAPTION_PROMPT: &str = "You are captioning a figure from the document titled \"{context}\" so it can be found by search later. Describe what the figure shows: its type (plot, diagram, table, photo), the quantities or entities involved, and the main finding it conveys. Two to five sentences, plain prose, no preamble.";

impl<T: Exchange> ChatProvider for T {
    fn provider_name(&self) -> &str {
        Exchange::provider_name(self)
    }

    fn model(&self) -> &str {
        Exchange::model(self)
    }

    fn complete(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        cancel: Option<&Cancel>,
    ) -> Result<String, CallError> {
        self.complete_streaming(messages, max_tokens, context_length, cancel, &mut stream::ignore)
    }

    fn complete_streaming(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<String, CallError> {
        check_cancel(cancel)?;
        let reply = self.exchange(
            &Turn {
                messages,
                system: None,
                tools: &[],
                max_tokens,
                context_length,
                attachment: None,
                temperature: None,
            },
            cancel,
            on_event,
        )?;
        Ok(reply.text())
    }

    fn summarize(
        &self,
        prompt: &str,
        source: &SummarySource,
        max_tokens: u32,
        cancel: Option<&Cancel>,
    ) -> Result<String, CallError> {
        check_cancel(cancel)?;
        let prompt = prompt.to_string();
        let (text, pdf_bytes) = match source {
            SummarySource::Text(text) => (format!("{prompt}\n\n{text}"), None),
            // Only public papers ever reach summarize(), which is what makes
            // uploading the PDF to a cloud provider safe by construction.
            SummarySource::Pdf(path) if self.uploads_pdf() => {
                let bytes = std::fs::read(path)
                    .map_err(|e| LlmError::config(format!("could not read PDF {}: {e}", path.display())))?;
                (prompt, Some(bytes))
            }
            SummarySource::Pdf(path) => {
                let convert = self.pdf_to_text().ok_or_else(|| {
                    LlmError::config("PDF summaries need the PDF converter, which is not available in this build")
                })?;
                let text = convert(path)
                    .map_err(|e| LlmError::config(format!("could not convert {} to text: {e}", path.display())))?;
                check_cancel(cancel)?;
                (format!("{prompt}\n\n{text}"), None)
            }
        };
        let messages = [Message::user(text)];
        let reply = self.exchange(
            &Turn {
                messages: &messages,
                system: None,
                tools: &[],
                max_tokens,
                context_length: None,
                attachment: pdf_bytes.as_deref().map(Attachment::Pdf),
                temperature: None,
            },
            cancel,
            &mut stream::ignore,
        )?;
        Ok(reply.text())
    }

    fn agentic_turn(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        cancel: Option<&Cancel>,
    ) -> Result<TurnEnd, CallError> {
        self.agentic_turn_streaming(messages, tools, dispatch, system, cancel, &mut stream::ignore)
    }

    fn agentic_turn_streaming(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<TurnEnd, CallError> {
        let step = StepOptions {
            max_tokens: AGENTIC_MAX_TOKENS,
            temperature: None,
        };
        self.agentic_turn_capped(messages, tools, dispatch, system, step, cancel, on_event)
    }

    #[allow(clippy::too_many_arguments)]
    fn agentic_turn_capped(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        options: StepOptions,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<TurnEnd, CallError> {
        // The turn is built here and published to `messages` with one
        // extend at a return point: any `?` in between leaves the caller's
        // transcript exactly as it was found.
        let mut tail: Vec<Message> = Vec::new();
        let mut step = 0usize;
        loop {
            check_cancel(cancel)?;
            on_event(StreamEvent::StepStart { step });
            let history: Vec<Message> = messages.iter().chain(tail.iter()).cloned().collect();
            let reply = self.exchange(
                &Turn {
                    messages: &history,
                    system: Some(system),
                    tools,
                    max_tokens: options.max_tokens,
                    context_length: None,
                    attachment: None,
                    temperature: options.temperature,
                },
                cancel,
                &mut *on_event,
            )?;
            let calls: Vec<ToolCall> = reply
                .tool_calls()
                .map(|(id, name, arguments)| ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: arguments.clone(),
                })
                .collect();
            if calls.is_empty() {
                let text = reply.text();
                tail.push(reply);
                messages.extend(tail);
                return Ok(TurnEnd::Reply(text));
            }
            // Where this step's assistant message sits: a privacy stop cuts
            // the tail back to just before it.
            let assistant_at = tail.len();
            tail.push(reply);
            for (index, call) in calls.iter().enumerate() {
                on_event(StreamEvent::ToolCallEnd { index, call });
            }
            let mut yielded = false;
            for call in &calls {
                check_cancel(cancel)?;
                let outcome = match dispatch(call) {
                    Ok(o) => o,
                    Err(ToolError::Yield(o)) => {
                        yielded = true;
                        o
                    }
                    Err(ToolError::Privacy(text)) => {
                        // Drop the assistant message whose calls will never
                        // get results (and the results already in): history
                        // must stay valid for replay.
                        tail.truncate(assistant_at);
                        tracing::warn!(tool = %call.name, "privacy stop ended the turn");
                        messages.extend(tail);
                        return Ok(TurnEnd::PrivacyStop(text));
                    }
                    Err(ToolError::Cancelled(c)) => return Err(c.into()),
                    Err(ToolError::Failed(text)) => ToolOutcome {
                        content: text,
                        is_error: true,
                        follow_up: None,
                    },
                };
                on_event(StreamEvent::ToolResult {
                    call,
                    outcome: &outcome,
                });
                push_tool_result(&mut tail, call.id.clone(), outcome);
            }
            if yielded {
                messages.extend(tail);
                return Ok(TurnEnd::Yielded);
            }
            step += 1;
        }
    }

    fn describe_image(&self, image: &[u8], context: &str, cancel: Option<&Cancel>) -> Result<String, CallError> {
        check_cancel(cancel)?;
        let messages = [Message::user(FIGURE_CAPTION_PROMPT.replace("{context}", context))];
        let reply = self.exchange(
            &Turn {
                messages: &messages,
                system: None,
                tools: &[],
                max_tokens: CAPTION_MAX_TOKENS,
                context_length: None,
                attachment: Some(Attachment::Image(image)),
                temperature: None,
            },
            cancel,
            &mut stream::ignore,
        )?;
        Ok(reply.text())
    }

    fn pop_usage(&self) -> Option<Usage> {
        let usage = self.usage()?;
        let mut guard = crate::lock::lock(usage);
        if guard.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut *guard))
        }
    }
}

/// Adds one request's reported cost to the per-served-model tally.
pub(crate) fn record_cost(usage: &Mutex<Usage>, served_model: &str, usd: f64) {
    let mut guard = crate::lock::lock(usage);
    let entry = guard.entry(served_model.to_string()).or_default();
    entry.usd += usd;
    entry.requests += 1;
}
