//! The idle-session extraction: one cheap model call over a finished
//! conversation that proposes facts about the user, never accepts them.
//!
//! Owns the prompt, the tolerant reading of the model's answer, and what a
//! pass over one session does ([`extract_session`]): propose what the model
//! found (pending, unless `memory.auto_accept`), with the session as the
//! provenance and its privacy as the facts'. Must not: choose the model,
//! decide which sessions are idle or may go to which model (the caller —
//! `app` — does, and never hands a private session to a cloud model), or
//! read tool results into the prompt (a retrieved note is not the user
//! speaking about themselves).

use crate::cancel::Cancel;
use crate::kb::Actor;
use crate::llm::{CallError, ChatProvider, Message};
use crate::store::Provenance;

use super::{FactDraft, Memory};

/// Longest conversation text sent, in characters (its end is kept: the
/// most recent things said are the most likely to still hold).
pub const MAX_TRANSCRIPT: usize = 12_000;

/// Output cap of the call: a short JSON list.
const MAX_TOKENS: u32 = 600;

/// At most this many proposals from one session.
pub const MAX_PROPOSALS: usize = 8;

/// The instruction sent with the conversation.
pub const PROMPT: &str = "You read a conversation between a user and their research assistant and list durable facts about the USER that would help in later conversations: their projects, field, people they work with, preferences for answers or tools, deadlines. Only what the user said or clearly confirmed about themselves; nothing about documents, papers or the world; nothing sensitive they would not want remembered (health, finances, passwords). Answer with a JSON array only, at most 8 items, each {\"category\": one word such as preference, project, person, work, \"key\": two or three words naming the fact, \"text\": one short sentence}. If there is nothing worth remembering answer [].";

/// One line per exchange part: what the user and the assistant said.
pub fn render(turns: &[(bool, String)]) -> String {
    let mut out = String::new();
    for (user, text) in turns {
        out.push_str(if *user { "User: " } else { "Assistant: " });
        out.push_str(text.trim());
        out.push_str("\n\n");
    }
    let n = out.chars().count();
    if n > MAX_TRANSCRIPT {
        out = out.chars().skip(n - MAX_TRANSCRIPT).collect();
    }
    out
}

/// The facts in a model's answer: the first JSON array in it (a fenced
/// block or prose around it is fine), each item with a `text`.
pub fn parse(answer: &str) -> Vec<FactDraft> {
    let (Some(start), Some(end)) = (answer.find('['), answer.rfind(']')) else {
        return Vec::new();
    };
    if end <= start {
        return Vec::new();
    }
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(&answer[start..=end]) else {
        return Vec::new();
    };
    let s = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
    items
        .iter()
        .map(|v| FactDraft::new(&s(v, "category"), &s(v, "key"), &s(v, "text")))
        .filter(|d| d.clean().is_ok())
        .take(MAX_PROPOSALS)
        .collect()
}

/// What one session's pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub proposed: usize,
}

/// Read session `session` (its `turns`: user or not, text) with
/// `provider` and propose what it finds, as job `memory_extract`. The
/// facts are private when the session is. The session is marked read
/// whatever the model found, so it is never read twice.
pub fn extract_session(
    memory: &Memory<'_>,
    provider: &dyn ChatProvider,
    session: &str,
    private: bool,
    turns: &[(bool, String)],
    cancel: &Cancel,
) -> Result<Extracted, ExtractError> {
    let text = render(turns);
    let mut found = Vec::new();
    if !text.trim().is_empty() {
        let prompt = format!("{PROMPT}\n\nThe conversation:\n\n{text}");
        let answer = provider
            .complete(&[Message::user(prompt)], MAX_TOKENS, None, Some(cancel))
            .map_err(ExtractError::Model)?;
        found = parse(&answer);
    }
    let mut out = Extracted::default();
    let actor = Actor::job("memory_extract");
    for d in &found {
        let source = Provenance {
            origin: "extraction".into(),
            session: Some(session.to_string()),
            message: None,
            at: crate::kb::stage::now_iso(),
            private,
        };
        memory.propose(d, source, &actor)?;
        out.proposed += 1;
    }
    memory.mark_extracted(session)?;
    Ok(out)
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    #[error("the extraction model: {0}")]
    Model(CallError),
    /// A session's file could not be read.
    #[error("session {0}: {1}")]
    Session(String, String),
    #[error("stopped")]
    Cancelled,
    #[error(transparent)]
    Memory(#[from] super::MemoryError),
}

impl ExtractError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            ExtractError::Model(CallError::Cancelled(_)) | ExtractError::Cancelled => {
                crate::error_kind::ErrorKind::Cancelled
            }
            ExtractError::Session(..) => crate::error_kind::ErrorKind::Internal,
            ExtractError::Model(CallError::Llm(e)) => e.error_kind(),
            ExtractError::Memory(e) => e.kind(),
        }
    }
}
