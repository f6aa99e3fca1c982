//! The one readable file memory goes to and comes back from: Markdown, a
//! heading per category, a list item per fact, its provenance in an HTML
//! comment after it (invisible when rendered, kept by editors).
//!
//! ```text
//! ## preference
//!
//! - **editor**: Uses Neovim with LazyVim. <!-- id=3 private=false origin=remember session=s-1 message=4 at=2026-12-05T07:00:00Z -->
//! ```
//!
//! Owns the format and what an import does: every fact in the file is the
//! user's own word, so it is accepted (an event by the importing user); a
//! fact matching one held (by id, else by category and key) is edited when
//! its text differs and left alone when not; nothing is deleted by an
//! import. A fact without a provenance comment is private — the rule for
//! anything whose source is unknown.
//! Must not: export pending proposals (they are not facts yet) or read or
//! write a file itself (the caller hands text in and out).

use serde::Serialize;

use crate::kb::Actor;
use crate::store::{Fact, FactStatus, Provenance};

use super::{FactDraft, Memory, Result};

/// The file's first line.
pub const TITLE: &str = "# What Jarvis remembers about you";

/// The accepted facts as Markdown, grouped by category (sorted), newest
/// first within one.
pub fn export(memory: &Memory<'_>) -> Result<String> {
    let mut facts: Vec<Fact> = memory.list()?.into_iter().filter(Fact::accepted).collect();
    facts.sort_by(|a, b| a.category.cmp(&b.category));
    let mut out = format!(
        "{TITLE}\n\nExported by Jarvis on {}. One fact per list item under its category. Edit, add or delete items, then `jarvis memory import FILE`: every item is taken as accepted, matched to a fact held by its id (else its category and key). The comment after a fact keeps where it came from; a fact without one is treated as private.\n",
        crate::kb::stage::now_iso()
    );
    let mut category = None;
    for f in &facts {
        if category != Some(f.category.as_str()) {
            out.push_str(&format!("\n## {}\n\n", f.category));
            category = Some(f.category.as_str());
        }
        let s = &f.source;
        let mut prov = format!("id={} private={} origin={}", f.id, s.private, word(&s.origin));
        if let Some(session) = &s.session {
            prov.push_str(&format!(" session={}", word(session)));
        }
        if let Some(m) = s.message {
            prov.push_str(&format!(" message={m}"));
        }
        prov.push_str(&format!(" at={}", word(&s.at)));
        out.push_str(&format!("- **{}**: {} <!-- {prov} -->\n", f.key, f.text));
    }
    Ok(out)
}

/// A provenance value as one word (spaces would split it on import).
fn word(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join("_")
}

/// One fact as read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub draft: FactDraft,
    /// The fact's id in the store it was exported from.
    pub id: Option<u64>,
    pub source: Provenance,
    /// Line number (1-based), for reports.
    pub line: usize,
}

/// Parse a memory file: `## category` headings and `- **key**: text`
/// items (a plain `- text` item gets its key from its text). Lines that
/// are neither are prose and skipped.
pub fn parse(text: &str) -> Vec<Item> {
    let mut out = Vec::new();
    let mut category = String::from("other");
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(h) = l.strip_prefix("## ") {
            category = h.trim().to_string();
            continue;
        }
        let Some(body) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) else {
            continue;
        };
        let (body, comment) = match body.find("<!--") {
            Some(at) => (
                &body[..at],
                Some(body[at + 4..].trim_end().trim_end_matches("-->").trim()),
            ),
            None => (body, None),
        };
        let (key, fact) = match body.trim().strip_prefix("**").and_then(|r| r.split_once("**")) {
            Some((k, rest)) => (k.trim().to_string(), rest.trim_start_matches(':').trim().to_string()),
            None => (String::new(), body.trim().to_string()),
        };
        if fact.is_empty() {
            continue;
        }
        let mut source = Provenance {
            origin: "import".into(),
            at: crate::kb::stage::now_iso(),
            private: true,
            ..Provenance::default()
        };
        let mut id = None;
        for kv in comment.unwrap_or("").split_whitespace() {
            let Some((k, v)) = kv.split_once('=') else { continue };
            match k {
                "id" => id = v.parse().ok(),
                "private" => source.private = v != "false",
                "origin" => source.origin = v.to_string(),
                "session" => source.session = Some(v.to_string()),
                "message" => source.message = v.parse().ok(),
                "at" => source.at = v.to_string(),
                _ => {}
            }
        }
        out.push(Item {
            draft: FactDraft::new(&category, &key, &fact),
            id,
            source,
            line: i + 1,
        });
    }
    out
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub added: usize,
    pub changed: usize,
    pub unchanged: usize,
    /// Items that could not be taken, with the line and why.
    pub skipped: Vec<String>,
}

/// Import a memory file's facts as the user's (see the module docs).
pub fn import(memory: &Memory<'_>, text: &str, actor: &Actor) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    for item in parse(text) {
        let d = match item.draft.clean() {
            Ok(d) => d,
            Err(e) => {
                report.skipped.push(format!("line {}: {e}", item.line));
                continue;
            }
        };
        let held = memory.list()?;
        let same = item
            .id
            // An id from another store may name a different fact here:
            // it counts only when the key or the text agrees too.
            .and_then(|id| held.iter().find(|f| f.id == id && (f.key == d.key || f.text == d.text)))
            .or_else(|| {
                held.iter()
                    .find(|f| f.accepted() && f.category == d.category && f.key == d.key)
            });
        match same {
            Some(f)
                if f.accepted()
                    && (f.category.as_str(), f.key.as_str(), f.text.as_str()) == (&d.category, &d.key, &d.text) =>
            {
                report.unchanged += 1
            }
            Some(f) if f.accepted() => {
                memory.edit(f.id, &d, actor)?;
                report.changed += 1;
            }
            Some(f) => {
                memory.accept(f.id, Some(&d), actor)?;
                report.changed += 1;
            }
            None => {
                memory.write(
                    Fact {
                        id: 0,
                        category: d.category,
                        key: d.key,
                        text: d.text,
                        status: FactStatus::Accepted,
                        source: item.source,
                        updated: crate::kb::stage::now_iso(),
                    },
                    actor,
                )?;
                report.added += 1;
            }
        }
    }
    Ok(report)
}
