//! Live progress of a reply, reported while it streams in.
//!
//! Every request to a model service is streamed (that is what makes a stop
//! close the connection). The wire accumulators in [`crate::llm::wire`] fold
//! the stream into one message, and while they do, they hand each piece to a
//! caller's callback as a [`StreamEvent`]. The whole-message API
//! ([`ChatProvider::agentic_turn`], `complete`, …) is the same path with a
//! callback that ignores everything.
//!
//! Order within one agentic turn (`step` counts model requests from 0):
//!
//! ```text
//! StepStart{0}  (ThinkingDelta | TextDelta | ToolCallStart)*  Usage?
//!               ToolCallEnd* (one per call, in index order)
//!               ToolResult*  (one per dispatched call, same order)
//! StepStart{1}  …                                  — until a step has no calls
//! ```
//!
//! - Deltas are fragments as the wire delivered them (never re-split);
//!   concatenating one step's `TextDelta`s gives that step's text exactly.
//!   A step that ends in tool calls may carry text too ("Let me search…").
//! - `ThinkingDelta` is reasoning (Anthropic `thinking`, OpenAI-compatible
//!   `reasoning`/`reasoning_content`, Ollama `thinking`): show it apart from
//!   the answer, never as part of it. Anthropic signatures are not reported.
//! - `ToolCallStart` comes as soon as the wire names the call; its arguments
//!   are still arriving. `ToolCallEnd` carries the complete call (final id,
//!   parsed arguments) once the step's message is complete, right before
//!   dispatch; `index` pairs the two. Ollama sends each call whole, so its
//!   start comes in the same chunk as the arguments.
//! - `Usage` comes at most once per step, when the wire reports token counts
//!   or cost (Anthropic `message_delta`, OpenAI-compatible final chunk,
//!   Ollama `done` chunk); a field the service did not report is `None`,
//!   never a made-up zero.
//! - Nothing follows a failed or cancelled step: the call returns the error.
//!   Text already reported must then be treated as abandoned by the caller
//!   (the transcript is left unchanged).
//!
//! The callback runs on the thread doing the blocking read. Keep it short
//! (push into a channel); a slow callback delays reading the stream. The
//! borrowed strings live only for the call.
//!
//! [`ChatProvider::agentic_turn`]: crate::llm::ChatProvider::agentic_turn

use crate::llm::transcript::{ToolCall, ToolOutcome};

/// One piece of a streamed reply. See the module docs for the order.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent<'a> {
    /// An agentic turn is sending its `step`-th request (0-based). Only
    /// emitted by `agentic_turn_streaming`.
    StepStart { step: usize },
    /// A fragment of the visible answer.
    TextDelta(&'a str),
    /// A fragment of the model's reasoning.
    ThinkingDelta(&'a str),
    /// The model began the `index`-th tool call of this step (0-based).
    ToolCallStart { index: usize, name: &'a str },
    /// The `index`-th call of this step, complete, about to be dispatched.
    ToolCallEnd { index: usize, call: &'a ToolCall },
    /// What the tool returned (errors included, `is_error` set), as sent
    /// back to the model. Not emitted for a privacy stop, which ends the turn.
    ToolResult {
        call: &'a ToolCall,
        outcome: &'a ToolOutcome,
    },
    /// Token counts / cost of this step's request, as the service reported.
    Usage(StepUsage),
}

/// What one request cost, as far as the service said.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Money, when the service reports it (OpenRouter).
    pub cost_usd: Option<f64>,
}

impl StepUsage {
    pub fn is_empty(&self) -> bool {
        self.input_tokens.is_none() && self.output_tokens.is_none() && self.cost_usd.is_none()
    }
}

/// The callback type, for the signatures that take one.
pub type OnEvent<'f> = dyn FnMut(StreamEvent<'_>) + 'f;

/// A callback that ignores everything (the whole-message path).
pub fn ignore(_: StreamEvent<'_>) {}
