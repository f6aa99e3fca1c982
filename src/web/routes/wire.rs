//! Wire shapes shared by the chat and session routes: a display entry and
//! a turn event as the browser gets them (Markdown rendered to safe HTML,
//! sources as chips with a link to open them).

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use crate::chat::session::DisplayEntry;
use crate::chat::{ChatEvent, Reply, SourceRef, ToolLogEntry, TurnState};
use crate::llm::transcript::Role;
use crate::web::markdown::to_html;

/// One source chip.
#[derive(Serialize)]
pub struct SourceDto {
    /// `note`, `paper`, `digest` or `chat`.
    pub kind: String,
    pub label: String,
    /// Section and/or page.
    #[serde(rename = "where")]
    pub where_: String,
    /// `obsidian://open?…` for a vault note, the URL of a paper with one.
    pub href: Option<String>,
}

/// Percent-encode everything outside the unreserved set (RFC 3986).
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn source_dto(s: &SourceRef, vault: Option<&Path>) -> SourceDto {
    let mut where_ = s.section.clone();
    if let Some(p) = s.page {
        if !where_.is_empty() {
            where_.push_str(" · ");
        }
        where_.push_str(&format!("p. {p}"));
    }
    let href = match s.kind.as_str() {
        "note" => vault.and_then(|v| v.file_name()).map(|name| {
            let file = s.location.strip_suffix(".md").unwrap_or(&s.location);
            format!(
                "obsidian://open?vault={}&file={}",
                url_encode(&name.to_string_lossy()),
                url_encode(file)
            )
        }),
        _ if s.location.starts_with("https://") || s.location.starts_with("http://") => Some(s.location.clone()),
        _ => None,
    };
    let label = if s.title.trim().is_empty() {
        s.location.clone()
    } else {
        s.title.clone()
    };
    SourceDto {
        kind: s.kind.clone(),
        label,
        where_,
        href,
    }
}

#[derive(Serialize)]
pub struct EntryDto {
    pub role: &'static str,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    pub sources: Vec<SourceDto>,
    pub tools: Vec<ToolLogEntry>,
    pub error: bool,
    pub at: String,
}

pub fn entry_dto(e: &DisplayEntry, vault: Option<&Path>) -> EntryDto {
    let user = matches!(e.role, Role::User);
    EntryDto {
        role: if user { "user" } else { "assistant" },
        text: e.text.clone(),
        html: (!user).then(|| to_html(&e.text)),
        sources: e.sources.iter().map(|s| source_dto(s, vault)).collect(),
        tools: e.tools.clone(),
        error: e.error,
        at: e.at.clone(),
    }
}

fn reply_json(r: &Reply, vault: Option<&Path>) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("type".into(), json!("reply"));
        o.insert("html".into(), json!(to_html(&r.text)));
        o.insert(
            "sources".into(),
            serde_json::to_value(r.sources.iter().map(|s| source_dto(s, vault)).collect::<Vec<_>>())
                .unwrap_or_else(|_| json!([])),
        );
    }
    v
}

/// A turn event as the SSE `data:` JSON (a reply carries the session's
/// title after the turn: a first message names the session).
/// The wire form is the web's own (the chat's events carry no serde
/// shape): the `type` tag and field names the page's script reads.
pub fn event_json(ev: &ChatEvent, vault: Option<&Path>) -> Value {
    match ev {
        ChatEvent::Status { state } => json!({ "type": "status", "state": match state {
            TurnState::Compacting => "compacting",
            TurnState::Thinking => "thinking",
        } }),
        ChatEvent::Text { text } => json!({ "type": "text", "text": text }),
        ChatEvent::ToolStart { id, name, summary } => {
            json!({ "type": "tool_start", "id": id, "name": name, "summary": summary })
        }
        ChatEvent::ToolFinish {
            id,
            name,
            summary,
            duration_ms,
            result_chars,
            is_error,
        } => json!({ "type": "tool_finish", "id": id, "name": name, "summary": summary,
                     "duration_ms": duration_ms, "result_chars": result_chars, "is_error": is_error }),
        ChatEvent::Confirm {
            token,
            description,
            action,
        } => json!({ "type": "confirm", "token": token, "description": description, "action": action }),
        ChatEvent::EditProposal {
            token,
            draft_id,
            filename,
            base_hash,
            hunks,
            message,
        } => json!({ "type": "edit_proposal", "token": token, "draft_id": draft_id, "filename": filename,
                     "base_hash": base_hash, "hunks": hunks, "message": message }),
        ChatEvent::Reply(r) => reply_json(r, vault),
        ChatEvent::Stopped => json!({ "type": "stopped" }),
        ChatEvent::Error { message, kind } => json!({ "type": "error", "message": message, "kind": kind }),
    }
}

/// Whether an event ends the turn's stream.
pub fn is_terminal(v: &Value) -> bool {
    matches!(
        v.get("type").and_then(Value::as_str),
        Some("reply" | "stopped" | "error")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_sources_open_in_obsidian_and_papers_at_their_url() {
        let note = SourceRef {
            kind: "note".into(),
            title: "Plans".into(),
            location: "work/plans & ideas.md".into(),
            section: "Q1 > Goals".into(),
            page: None,
        };
        let d = source_dto(&note, Some(Path::new("/home/u/My Vault")));
        assert_eq!(
            d.href.as_deref(),
            Some("obsidian://open?vault=My%20Vault&file=work%2Fplans%20%26%20ideas")
        );
        assert_eq!(d.where_, "Q1 > Goals");
        let paper = SourceRef {
            kind: "paper".into(),
            title: "".into(),
            location: "https://arxiv.org/abs/1706.03762".into(),
            section: String::new(),
            page: Some(3),
        };
        let d = source_dto(&paper, None);
        assert_eq!(d.href.as_deref(), Some("https://arxiv.org/abs/1706.03762"));
        assert_eq!(d.label, "https://arxiv.org/abs/1706.03762");
        assert_eq!(d.where_, "p. 3");
        let local = SourceRef {
            location: "/papers/x.pdf".into(),
            ..paper
        };
        assert_eq!(source_dto(&local, None).href, None);
    }
}
