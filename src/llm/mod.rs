//! The LLM layer: one neutral conversation transcript and the providers that
//! speak it over their own wires (Ollama `/api/chat`, Anthropic Messages,
//! OpenAI-compatible chat completions, which covers OpenRouter, LM Studio,
//! llama.cpp server and vLLM).
//!
//! What this module owns:
//! - the provider-neutral [`transcript`] and the adapters to and from each wire;
//! - every HTTP call to a model service, always streamed, always through the
//!   one streamed exchange the providers share, so that a turn can be stopped by
//!   closing the connection (a [`crate::cancel::Cancel`] hook);
//! - live progress of every streamed reply as [`StreamEvent`]s ([`stream`]);
//! - classification of failures into [`LlmError`], with secrets redacted
//!   before any text leaves this module ([`redact`]);
//! - parsing of `provider[:model]` specs, the cloud/local privacy predicate
//!   ([`spec::is_cloud_provider`]) and the switchable model [`catalogue`].
//!
//! What it must not do: read the config file or `~/.jarvis` (callers hand it a
//! plain [`LlmSettings`]), touch the knowledge base, decide privacy of content
//! (tools raise [`ToolError::Privacy`]; this layer only honours it), or make a
//! network request anywhere except that streamed exchange and the one-GET
//! [`probe`] of a local server. All HTTP is blocking; async callers run it
//! on a blocking thread.

pub mod cache;
pub mod catalogue;
pub mod cooldown;
pub mod error;
mod http;
pub mod probe;
pub mod provider;
pub mod providers;
pub mod redact;
pub mod retry;
pub mod settings;
pub mod spec;
pub mod sse;
pub mod stream;
pub mod transcript;
pub mod wire;

pub use catalogue::{format_catalogue, list_catalogue, CatalogueEntry};
pub use error::{CallError, ErrorKind, LlmError};
pub use provider::{
    ChatProvider, ModelCost, PdfToText, StepOptions, SummarySource, ToolCall, ToolError, ToolOutcome, ToolSpec,
    TurnEnd, Usage,
};
pub use redact::redact_secrets;
pub use retry::with_retries;
pub use settings::{LlmSettings, OpenAiServer};
pub use spec::{is_cloud_provider, make_provider, ModelSpec};
pub use stream::{OnEvent, StepUsage, StreamEvent};
pub use transcript::{Block, Message, Role};

/// `check()` for an optional switch: callers that cannot be interrupted pass `None`.
pub(crate) fn check_cancel(cancel: Option<&crate::cancel::Cancel>) -> Result<(), crate::cancel::Cancelled> {
    cancel.map_or(Ok(()), crate::cancel::Cancel::check)
}
