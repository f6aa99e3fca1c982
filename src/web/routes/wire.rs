//! Wire shapes shared by the chat and session routes: a display entry and
//! a turn event as the browser gets them (Markdown rendered to safe HTML,
//! sources as chips with a link to open them, and an answer's `[n]`
//! citations as same-page links with the passage each names).

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use crate::chat::cite::Citation;
use crate::chat::research::ResearchEvent;
use crate::chat::session::DisplayEntry;
use crate::chat::{ChatEvent, Reply, SourceRef, ToolLogEntry, TurnState};
use crate::llm::transcript::Role;
use crate::web::markdown::to_html_cited;

/// One source chip: one per document (a note found by eight of its
/// sections is one chip, its sections listed in `sections`).
#[derive(Serialize)]
pub struct SourceDto {
    /// `note`, `paper`, `digest` or `chat`.
    pub kind: String,
    /// The document key the source viewer opens (`GET /source?key=`): a
    /// note's vault path, otherwise its source.
    pub key: String,
    pub label: String,
    /// Section and/or page, or how many sections were found.
    #[serde(rename = "where")]
    pub where_: String,
    /// Every section and/or page of the document the turn found.
    pub sections: Vec<String>,
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

/// Section and/or page, as a chip shows them.
fn where_of(section: &str, page: Option<i64>) -> String {
    let mut where_ = section.to_string();
    if let Some(p) = page {
        if !where_.is_empty() {
            where_.push_str(" · ");
        }
        where_.push_str(&format!("p. {p}"));
    }
    where_
}

/// `obsidian://open?vault=…&file=…` for the vault note at `file`
/// (vault-relative), at `heading` when given (`file=note%23Heading`, the
/// form Obsidian's `open` action reads as a link to a heading).
pub fn obsidian_href(vault: &Path, file: &str, heading: Option<&str>) -> Option<String> {
    let name = vault.file_name()?;
    let file = file.strip_suffix(".md").unwrap_or(file);
    let target = match heading.map(str::trim).filter(|h| !h.is_empty()) {
        Some(h) => format!("{file}#{h}"),
        None => file.to_string(),
    };
    Some(format!(
        "obsidian://open?vault={}&file={}",
        url_encode(&name.to_string_lossy()),
        url_encode(&target)
    ))
}

/// The heading a breadcrumb ends in (`Setup › Install` → `Install`).
fn last_heading(section: &str) -> Option<&str> {
    section.rsplit(crate::kb::chunker::SECTION_SEPARATOR).next()
}

/// Where a document opens: a vault note in Obsidian (at `heading`), a
/// paper at its URL.
fn href_of(kind: &str, location: &str, heading: Option<&str>, vault: Option<&Path>) -> Option<String> {
    match kind {
        "note" => vault.and_then(|v| obsidian_href(v, location, heading)),
        _ if location.starts_with("https://") || location.starts_with("http://") => Some(location.to_string()),
        _ => None,
    }
}

fn label_of(title: &str, location: &str) -> String {
    if title.trim().is_empty() {
        location.to_string()
    } else {
        title.to_string()
    }
}

pub fn source_dto(s: &SourceRef, vault: Option<&Path>) -> SourceDto {
    let where_ = where_of(&s.section, s.page);
    SourceDto {
        kind: s.kind.clone(),
        key: s.location.clone(),
        label: label_of(&s.title, &s.location),
        sections: if where_.is_empty() {
            Vec::new()
        } else {
            vec![where_.clone()]
        },
        where_,
        href: href_of(&s.kind, &s.location, None, vault),
    }
}

/// One chip per document, in the order the documents were first found;
/// a document found by several sections lists them and says how many.
pub fn source_dtos(sources: &[SourceRef], vault: Option<&Path>) -> Vec<SourceDto> {
    let mut out: Vec<SourceDto> = Vec::new();
    for s in sources {
        let d = source_dto(s, vault);
        match out.iter_mut().find(|o| o.key == d.key && o.kind == d.kind) {
            Some(o) => {
                for w in d.sections {
                    if !o.sections.contains(&w) {
                        o.sections.push(w);
                    }
                }
                if o.sections.len() > 1 {
                    o.where_ = format!("{} sections", o.sections.len());
                }
            }
            None => out.push(d),
        }
    }
    out
}

/// One citation of an answer: the passage `[n]` names, everything the
/// chat knows of it, plus how the page shows and opens it.
#[derive(Serialize)]
pub struct CitationDto {
    /// `n`, `key`, `kind`, `title`, `source`, `path`, `section`, `page`,
    /// `annotation`, `text`, `chunk_id`.
    #[serde(flatten)]
    pub citation: Citation,
    pub label: String,
    #[serde(rename = "where")]
    pub where_: String,
    pub href: Option<String>,
    /// Index of the source chip of the same document under the answer
    /// (chips are one per document, see [`source_dtos`]).
    pub chip: Option<usize>,
}

pub fn citation_dtos(citations: &[Citation], sources: &[SourceRef], vault: Option<&Path>) -> Vec<CitationDto> {
    let chips = source_dtos(sources, vault);
    citations
        .iter()
        .map(|c| CitationDto {
            citation: c.clone(),
            label: label_of(&c.title, &c.key),
            where_: where_of(&c.section, c.page),
            href: href_of(&c.kind, &c.key, last_heading(&c.section), vault),
            chip: chips.iter().position(|s| s.key == c.key),
        })
        .collect()
}

/// An answer's text as safe HTML with its valid markers as links.
fn answer_html(text: &str, citations: &[Citation]) -> String {
    let cited: Vec<u32> = citations.iter().map(|c| c.n).collect();
    to_html_cited(text, &cited)
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
    /// A saved answer's citations, as the `reply` event carries them.
    pub citations: Vec<CitationDto>,
    pub unsupported_citations: usize,
    pub not_from_library: bool,
    /// The model's reasoning before the answer, shown folded.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub thinking: String,
    /// The plan the planning phase made for this answer.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub plan: String,
    /// A message handed to a running turn ("sent while working").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub steered: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    pub uncited_paragraphs: usize,
    /// Memory facts in the answer's context, and those its turn proposed.
    pub memory: Vec<crate::memory::FactId>,
    pub remembered: Vec<crate::memory::FactId>,
}

pub fn entry_dto(e: &DisplayEntry, vault: Option<&Path>) -> EntryDto {
    let user = matches!(e.role, Role::User);
    EntryDto {
        role: if user { "user" } else { "assistant" },
        text: e.text.clone(),
        html: (!user).then(|| answer_html(&e.text, &e.citations)),
        sources: source_dtos(&e.sources, vault),
        tools: e.tools.clone(),
        error: e.error,
        at: e.at.clone(),
        citations: citation_dtos(&e.citations, &e.sources, vault),
        unsupported_citations: e.unsupported_citations,
        not_from_library: e.not_from_library,
        thinking: e.thinking.clone(),
        plan: e.plan.clone(),
        steered: e.steered,
        notices: e.notices.clone(),
        uncited_paragraphs: e.uncited_paragraphs,
        memory: e.memory.clone(),
        remembered: e.remembered.clone(),
    }
}

fn reply_json(r: &Reply, vault: Option<&Path>) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("type".into(), json!("reply"));
        o.insert("html".into(), json!(answer_html(&r.text, &r.citations)));
        o.insert(
            "sources".into(),
            serde_json::to_value(source_dtos(&r.sources, vault)).unwrap_or_else(|_| json!([])),
        );
        // The chips the citations point at are the ones sent here; the
        // display entry is saved with every source, so a reload matches.
        o.insert(
            "citations".into(),
            serde_json::to_value(citation_dtos(&r.citations, &r.sources, vault)).unwrap_or_else(|_| json!([])),
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
        ChatEvent::Thinking { text } => json!({ "type": "thinking", "text": text }),
        ChatEvent::Plan { text } => json!({ "type": "plan_ready", "plan": text }),
        ChatEvent::ProfileSwitched { id, name } => {
            json!({ "type": "profile_switched", "profile_id": id, "profile_name": name })
        }
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
        ChatEvent::Steered { text } => json!({ "type": "steered", "text": text }),
        ChatEvent::Research(r) => research_json(r),
        ChatEvent::Reply(r) => reply_json(r, vault),
        ChatEvent::Stopped => json!({ "type": "stopped" }),
        ChatEvent::Error { message, kind } => json!({ "type": "error", "message": message, "kind": kind }),
    }
}

/// A research run's progress as `{"type": "research", "event": …}`.
fn research_json(r: &ResearchEvent) -> Value {
    let body = match r {
        ResearchEvent::Plan { questions } => json!({ "event": "plan", "questions": questions }),
        ResearchEvent::Agent { index, state } => {
            let mut v = serde_json::to_value(state).unwrap_or_else(|_| json!({}));
            v["event"] = json!("agent");
            v["index"] = json!(index);
            v
        }
        ResearchEvent::Tool { index, name, summary } => {
            json!({ "event": "tool", "index": index, "name": name, "summary": summary })
        }
        ResearchEvent::Writing => json!({ "event": "writing" }),
        ResearchEvent::Report {
            draft_id,
            filename,
            title,
            suggested,
        } => {
            json!({ "event": "report", "draft_id": draft_id, "filename": filename, "title": title, "suggested": suggested })
        }
    };
    let mut v = body;
    v["type"] = json!("research");
    v
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

    #[test]
    fn one_chip_per_document_and_citations_open_notes_at_their_heading() {
        let sec = |section: &str| SourceRef {
            kind: "note".into(),
            title: "Risotto".into(),
            location: "cooking/risotto.md".into(),
            section: section.into(),
            page: None,
        };
        let other = SourceRef {
            location: "cooking/pasta.md".into(),
            title: "Pasta".into(),
            ..sec("Pasta")
        };
        let sources = [
            sec("Risotto › Stock"),
            other,
            sec("Risotto › Resting"),
            sec("Risotto › Stock"),
        ];
        let vault = Path::new("/v/vault");
        let chips = source_dtos(&sources, Some(vault));
        assert_eq!(chips.len(), 2);
        assert_eq!(chips[0].key, "cooking/risotto.md");
        assert_eq!(chips[0].sections, ["Risotto › Stock", "Risotto › Resting"]);
        assert_eq!(chips[0].where_, "2 sections");
        assert_eq!(chips[1].where_, "Pasta");
        let c = Citation {
            n: 3,
            key: "cooking/risotto.md".into(),
            kind: "note".into(),
            title: "Risotto".into(),
            source: "local".into(),
            path: Some("cooking/risotto.md".into()),
            section: "Risotto › Resting".into(),
            page: None,
            annotation: None,
            text: "Off the heat.".into(),
            chunk_id: Some(9),
        };
        let d = &citation_dtos(&[c], &sources, Some(vault))[0];
        assert_eq!(d.chip, Some(0));
        assert_eq!(
            d.href.as_deref(),
            Some("obsidian://open?vault=vault&file=cooking%2Frisotto%23Resting")
        );
    }
}
