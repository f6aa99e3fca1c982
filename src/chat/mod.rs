//! The chat agent: a conversation over the knowledge base through tools,
//! with persistent sessions, compaction, editable prompts and privacy end
//! to end.
//!
//! Owns: the tool surface ([`tools`]), one turn ([`ChatAgent::run_turn`])
//! and its limits ([`runaway`]), citations ([`cite`]) and the answer eval
//! ([`eval`]), chat.log ([`chatlog`]), stop and rollback, the session files ([`session`]), chat history in the
//! knowledge base ([`history`], indexed after the reply by `indexer`), compaction ([`compact`]), the system
//! prompt ([`prompt`]) and model-switch validation ([`models`]).
//! Must not: import `app` (it takes plain dependencies: an `Arc<Kb>`, a
//! [`ProviderSource`], the sessions directory, settings), speak HTTP or wire
//! JSON (the web edge maps [`ChatEvent`] onto SSE), or print.
//!
//! # Turn events
//!
//! [`ChatAgent::run_turn`] reports a turn through a callback, in order:
//!
//! | event | when | fields |
//! |---|---|---|
//! | `status` | before compaction and before the first model request | `state`: `compacting` \| `thinking` |
//! | `thinking` | a piece of the model's reasoning as it streams (Ollama `thinking`, Anthropic thinking blocks, OpenAI-compatible `reasoning`/`reasoning_content`); shown apart from the answer, kept in the display entry, never in the transcript a later request carries | `text` |
//! | `profile_switched` | the session took another profile: `switch_profile` mid-turn (its tools apply from the next step), or a custom command that names one | `id`, `name` |
//! | `plan_ready` | the profile plans and the planning call wrote a plan (before the first tool event; a `DIRECT` answer sends none) | `plan` (numbered lines) |
//! | `text` | a piece of the model's text as it streams (text a step says before its tool calls streams too; `reply` carries the final answer) | `text` |
//! | `tool_start` | a tool call begins | `id`, `name`, `summary` (arguments, middle-ellipsised so a long path keeps its file name) |
//! | `tool_finish` | it ended | `id`, `name`, `summary`, `duration_ms`, `result_chars`, `is_error` |
//! | `steered` | a queued message marked "send now" was handed to the turn after a tool round | `text` |
//! | `confirm` | `remove_document`, or `add_document` on a local PDF, asked for the human's answer | `token`, `description` (a removal's carries the invariant line; an add's names the file and its visibility), `action`: `remove` \| `add` |
//! | `reply` | the turn finished and is saved to its session file (indexing the exchange as chat history follows in the background) | [`Reply`]: `text`, `sources`, `tools`, `private`, `requested_model`, `served_model`, `cost` (per model), `turn_cost_usd`, `privacy_stop`, `error`, `citations`, `unsupported_citations`, `not_from_library`, `uncited_paragraphs`, `memory` (fact ids in its context), `remembered` (fact ids it proposed) |
//! | `research` | a research run's progress ([`research::ResearchEvent`]): the plan, each sub-agent's state and tool calls, writing, the report's draft | — |
//! | `stopped` | the turn was stopped; nothing of it remains | — |
//! | `error` | the turn could not run or failed before a reply could be saved | `message`, `kind` |
//!
//! # Citations and abstention
//!
//! Every passage a retrieval tool returns is numbered for the turn and the
//! system prompt asks the model to cite with `[n]`. The reply is checked
//! before it is saved ([`cite`]): a marker naming no passage of this turn
//! is removed and counted (`unsupported_citations`), each valid one becomes
//! a citation (document, section, page, passage, chunk). A reply citing
//! nothing after a search is labelled "not from your library"; in a
//! DB-only session whose searches found nothing at all it is replaced by
//! a fixed message naming what was searched.
//!
//! The tool-round cap counts model steps that asked for tools (from the
//! stream's step numbers); a call in a step past the cap ends the turn with
//! a message and no further request.
//!
//! # Limits: a misbehaving model cannot hang a turn
//!
//! Every turn has a wall-clock budget (`chat.turn_timeout_secs`, tool calls
//! included) and every model step an output cap (`chat.max_output_tokens`,
//! sent to the server). While a step streams, [`runaway`] watches it: chat-
//! template role markers outside code (`<|im_start|>`, `<start_of_turn>`,
//! `[INST]` …), the same text again and again, or output far past the cap
//! (a server that ignores it). Any of these, or the budget running out,
//! closes the request and ends the turn in `reply` with `error: true` and a
//! message naming the model and what to try; the debris streamed so far is
//! not kept. The human's stop stays a stop (rolled back), told apart by the
//! turn's own child switch.
//!
//! # chat.log
//!
//! Every turn writes one line to `$JARVIS_HOME/logs/chat.log` (session,
//! model, rounds, tokens, time, outcome), and every failed tool call one
//! more (tool, arguments, the whole error), secrets redacted ([`chatlog`]).
//!
//! Exactly one of `reply`, `stopped` or `error` ends a turn. A failed model
//! call still ends in `reply` (with `error: true` and a "⚠️ …" text, secrets
//! redacted), because that reply is saved with the session. The events are
//! plain types; their wire form (the names above) is the web edge's.
//!
//! # Stop and rollback
//!
//! The session a turn runs on is shared ([`SharedSession`]); its mutex is the
//! commit lock. A stop ([`ChatAgent::stop`]) cancels the turn, then takes
//! the lock and rolls the turn back — unless the display already ends in an
//! answer (the reply won the race and stands). The worker re-checks the
//! stop switch inside the same lock before committing, so exactly one of
//! the two happens, and the stop never waits for the worker to notice.

pub mod agent;
pub mod chatlog;
pub mod cite;
pub mod commands;
pub mod compact;
pub mod eval;
pub mod history;
mod indexer;
pub mod lifecycle;
pub mod models;
pub mod pins;
pub mod plan;
pub mod profiles;
pub mod prompt;
pub mod queue;
mod redo;
pub mod research;
pub mod runaway;
pub mod session;
pub mod session_events;
mod switch;
pub mod tools;
mod turn;

use std::sync::{Arc, Mutex};

use serde::Serialize;

pub use agent::{ChatAgent, ChatDeps, ChatSettings, PendingView, StopOutcome, StopTicket};
pub use lifecycle::TurnHandle;
pub use models::{CachedProviders, ProviderSource, SwitchError};
pub use session::{Session, SessionError, SessionMeta, SessionStore, SourceRef, ToolLogEntry};

use crate::error_kind::ErrorKind;
use crate::llm::ModelCost;

/// A session shared between the worker running its turn and whoever may
/// stop it. The mutex is the commit lock.
pub type SharedSession = Arc<Mutex<Session>>;

/// What the page around the composer shows, sent with a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnContext {
    /// The draft file open in the editor, if any.
    pub open_file: Option<OpenFile>,
    /// Write the question with the answer, not before the first model
    /// request. For a terminal's turn (`jarvis ask`): its question stays on
    /// the screen, and a process killed mid-turn (even by SIGKILL) must not
    /// leave a session holding only the question. The web app keeps the
    /// default, so a closed tab never loses what was asked.
    pub question_with_answer: bool,
    /// Run this message as a research report ([`research`]) delivered
    /// this way, instead of a chat answer.
    pub research: Option<research::ReportDelivery>,
    /// Who asked: the history names them when this turn creates the
    /// session ([`session_events`]). None: Jarvis itself (an eval run).
    pub by: Option<crate::kb::Actor>,
}

/// A draft file by id and name (both already validated by the caller's
/// edge; the turn checks it still exists and may be named to the model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFile {
    pub draft_id: String,
    pub filename: String,
}

/// What the turn is doing while no text is streaming.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    Compacting,
    Thinking,
}

/// The end of a turn, as saved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reply {
    pub session_id: String,
    pub text: String,
    pub sources: Vec<SourceRef>,
    pub tools: Vec<ToolLogEntry>,
    /// The session is private (now or from before).
    pub private: bool,
    /// `provider:model` the session asked for.
    pub requested_model: String,
    /// The model a router actually used, when it differs.
    pub served_model: Option<String>,
    /// The session's spend so far, per served model.
    pub cost: std::collections::BTreeMap<String, ModelCost>,
    /// This turn's spend, when the provider reported money.
    pub turn_cost_usd: Option<f64>,
    /// The turn ended on a privacy stop (the text is the fixed message).
    pub privacy_stop: bool,
    /// The text is a "⚠️" failure reply.
    pub error: bool,
    /// The session's title as the turn committed it.
    pub title: String,
    /// The passages the text cites, by marker number (see [`cite`]).
    pub citations: Vec<cite::Citation>,
    /// Markers that named no passage of this turn; removed from `text`.
    pub unsupported_citations: usize,
    /// Labelled "not from your library": the turn searched the library (or
    /// the model used its own knowledge) and the text cites nothing.
    pub not_from_library: bool,
    /// Quiet lines under the answer (a pinned private note left out).
    pub notices: Vec<String>,
    /// Paragraphs stating something with no citation in an answer that
    /// does cite the library: labelled "partly not from your library".
    pub uncited_paragraphs: usize,
    /// The long-term memory facts that were in this reply's context (the
    /// summary after the system prompt), by id.
    pub memory: Vec<crate::store::FactId>,
    /// Facts this turn proposed to remember (pending unless auto-accepted).
    pub remembered: Vec<crate::store::FactId>,
    /// For an evaluation; no wire carries it.
    #[serde(skip)]
    pub evidence: cite::Evidence,
}

/// One event of a running turn (see the module docs for the schema). No
/// serde shape: the wire form is the edge's (`web/routes/wire.rs`).
// A turn sends one `Reply`, moved once into the sink: boxing the large
// variant would buy no copy and cost every match a deref.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    Status {
        state: TurnState,
    },
    Text {
        text: String,
    },
    /// A piece of the model's reasoning, as it streams.
    Thinking {
        text: String,
    },
    /// The planning phase's numbered plan for this turn.
    Plan {
        text: String,
    },
    /// The session's profile changed.
    ProfileSwitched {
        id: String,
        name: String,
    },
    ToolStart {
        id: String,
        name: String,
        summary: String,
    },
    ToolFinish {
        id: String,
        name: String,
        summary: String,
        duration_ms: u64,
        result_chars: usize,
        is_error: bool,
    },
    Confirm {
        token: String,
        description: String,
        /// `remove` or `add` (a local file).
        action: crate::chat::tools::ConfirmAction,
    },
    /// The model proposed a change to a draft file; the human reviews its
    /// hunks (nothing was written).
    EditProposal {
        token: String,
        draft_id: String,
        filename: String,
        base_hash: String,
        hunks: Vec<crate::drafts::hunks::Hunk>,
        message: String,
    },
    /// A queued message handed to this turn after a tool round ("send
    /// now"); the model reads it before its next step.
    Steered {
        text: String,
    },
    /// A research run's progress (its plan, each sub-agent, the report).
    Research(research::ResearchEvent),
    Reply(Reply),
    Stopped,
    Error {
        message: String,
        kind: &'static str,
    },
}

/// Where a turn's events go. Called from the worker thread.
pub type EventSink<'a> = &'a (dyn Fn(ChatEvent) + Send + Sync);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// A session file operation failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A turn is already running on this session.
    #[error("session {0} is busy with a turn — wait for it to finish or stop it first")]
    Busy(String),
    /// No saved or new conversation has that id.
    #[error("no conversation {0} — it may have been deleted; start a new chat")]
    NoConversation(String),
    /// Nothing is running for that session.
    #[error("no turn is running for session {0}")]
    NotRunning(String),
    /// A private session under a cloud model.
    #[error("session {0} holds private notes and cannot continue under the cloud model {1} — switch it to a local model (Ollama or a local server)")]
    PrivateUnderCloud(String, String),
    /// A model switch was refused.
    #[error(transparent)]
    Switch(#[from] SwitchError),
    /// A confirmed add failed; nothing was added.
    #[error("nothing was added: {0}")]
    Add(crate::ingest::paper::AddError),
    /// A confirmed MCP call failed.
    #[error("the MCP call failed: {0}")]
    Mcp(crate::mcp_client::McpClientError),
    /// The pending confirmation is gone (answered, or cleared by a new turn).
    #[error("that confirmation is no longer pending (already answered, or its session moved on) — ask again")]
    UnknownToken,
    /// An empty message.
    #[error("the message is empty")]
    EmptyMessage,
    /// No profile has that id.
    #[error("no profile {0:?} — the profiles are the shipped ones and the TOML files in $JARVIS_HOME/profiles/ (`GET /profiles` lists them)")]
    NoProfile(String),
    /// A custom command could not be read or written.
    #[error(transparent)]
    Command(#[from] commands::CommandError),
    /// The knowledge base failed.
    #[error("the knowledge base: {0}")]
    Kb(#[from] crate::kb::KbError),
    /// The model could not be reached or configured.
    #[error("the model: {0}")]
    Llm(#[from] crate::llm::LlmError),
    /// The prompts directory could not be read or seeded.
    #[error(transparent)]
    Prompt(#[from] crate::paths::PathsError),
    /// The turn was stopped.
    #[error("stopped")]
    Cancelled,
    /// The queue of messages sent while a turn runs.
    #[error(transparent)]
    Queue(#[from] queue::QueueError),
    /// Pinned context.
    #[error(transparent)]
    Pins(#[from] pins::PinError),
    /// Regenerate or edit with no answered question to take back.
    #[error("conversation {0} has no answered question to ask again")]
    NothingToRedo(String),
}

impl ChatError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ChatError::Session(e) => e.kind(),
            ChatError::Busy(_) | ChatError::PrivateUnderCloud(..) | ChatError::UnknownToken => ErrorKind::Conflict,
            ChatError::NotRunning(_) | ChatError::NoConversation(_) => ErrorKind::NotFound,
            ChatError::Switch(e) => e.kind(),
            ChatError::EmptyMessage => ErrorKind::User,
            ChatError::NoProfile(_) => ErrorKind::NotFound,
            ChatError::Command(e) => e.kind(),
            ChatError::Kb(e) => e.kind(),
            ChatError::Llm(e) => e.error_kind(),
            ChatError::Prompt(e) => e.kind(),
            ChatError::Add(e) => e.kind(),
            ChatError::Mcp(e) => e.kind(),
            ChatError::Cancelled => ErrorKind::Cancelled,
            ChatError::Queue(e) => e.kind(),
            ChatError::Pins(e) => e.kind(),
            ChatError::NothingToRedo(_) => ErrorKind::Conflict,
        }
    }
}

/// Shorten `s` to at most `max` characters by cutting its middle, so a long
/// path keeps both its start and its file name.
pub fn middle_ellipsis(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return s.to_string();
    }
    let keep = max - 1;
    let head = keep / 2;
    let tail = keep - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn middle_ellipsis_keeps_the_file_name() {
        let p = "/home/someone/Documents/research/very/deep/folder/structure/attention-is-all-you-need.pdf";
        let s = middle_ellipsis(p, 40);
        assert_eq!(s.chars().count(), 40);
        assert!(s.ends_with("all-you-need.pdf"), "{s}");
        assert!(s.starts_with("/home/"));
        assert_eq!(middle_ellipsis("short", 40), "short");
        assert_eq!(middle_ellipsis("ééééééééééé", 6).chars().count(), 6);
    }
}
