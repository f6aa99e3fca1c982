//! Pinned context: a few standing lines the human wants in every turn ("I
//! write in British English", "my thesis is about …"), and notes or papers
//! pinned by path (a line `@path/to/note.md` or `@<source>`). Kept in
//! `state/pins.json` (0600); each item can be paused. [`Pins::for_turn`]
//! builds the system prompt's block within a budget.
//! Privacy: a pinned document is read from the knowledge base with its
//! chunks' visibility; under a cloud model one with any private chunk is
//! left out (the turn says so, the model is only told that something was
//! left out, never its name), and under a local model it makes the
//! session private like any private read.
//! Must not: read files itself (only the knowledge base's stored text), or
//! widen what a turn may see beyond what a tool read could.

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::kb::Kb;
use crate::lock::lock;

/// Items one may pin.
pub const MAX_ITEMS: usize = 40;
/// Longest line.
pub const MAX_LINE: usize = 2_000;
/// The whole pinned block's budget in characters (about 2,000 tokens):
/// enough for standing instructions and a short note or two, small beside
/// the conversation and the retrieved passages it must leave room for.
pub const BUDGET_CHARS: usize = 8_000;
/// One pinned document's share at most, so one long paper cannot crowd out
/// the rest.
pub const DOC_CHARS: usize = 4_000;

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("that pinned item is gone (removed or changed elsewhere) — reopen the dialog")]
    NoItem,
    #[error("at most {MAX_ITEMS} items can be pinned — remove some first")]
    Full,
    #[error("a pinned item is one line of 1 to {MAX_LINE} characters")]
    BadText,
    #[error("could not save the pinned context: {0}")]
    Io(#[from] crate::paths::PathsError),
    #[error("could not encode the pinned context: {0}")]
    Encode(#[from] serde_json::Error),
}

impl PinError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            PinError::NoItem => ErrorKind::NotFound,
            PinError::Full => ErrorKind::Conflict,
            PinError::BadText => ErrorKind::User,
            PinError::Io(e) => e.kind(),
            PinError::Encode(_) => ErrorKind::Internal,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub paused: bool,
}

impl Pin {
    /// The document key of a line pinned by path (`@…`).
    pub fn document(&self) -> Option<&str> {
        self.text.strip_prefix('@').map(str::trim).filter(|k| !k.is_empty())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pinned {
    pub items: Vec<Pin>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum PinOp {
    Add { text: String },
    Edit { id: String, text: String },
    Remove { id: String },
    Pause { id: String, paused: bool },
}

/// What pinned context adds to one turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForTurn {
    /// The system prompt's block, if anything is pinned and active.
    pub block: Option<String>,
    /// What the human is told under the answer (a private document left
    /// out, a document not found, the budget cutting something short).
    pub notices: Vec<String>,
    /// A private document went into the turn (a local model).
    pub saw_private: bool,
}

pub struct Pins {
    path: PathBuf,
    state: Mutex<Option<Pinned>>,
}

fn clean(text: &str) -> Result<String, PinError> {
    let t = text.trim();
    if t.is_empty() || t.chars().count() > MAX_LINE || t.contains('\n') {
        return Err(PinError::BadText);
    }
    Ok(t.to_string())
}

impl Pins {
    pub fn new(path: PathBuf) -> Pins {
        Pins {
            path,
            state: Mutex::new(None),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Pinned) -> T) -> T {
        let mut st = lock(&self.state);
        let p = st.get_or_insert_with(|| match std::fs::read_to_string(&self.path) {
            Ok(t) => serde_json::from_str(&t).unwrap_or_else(|e| {
                tracing::warn!(path = %self.path.display(), error = %e, "unreadable pinned context; starting empty");
                Pinned::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Pinned::default(),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "could not read the pinned context; starting empty");
                Pinned::default()
            }
        });
        f(p)
    }

    pub fn get(&self) -> Pinned {
        self.with(|p| p.clone())
    }

    pub fn apply(&self, op: PinOp) -> Result<Pinned, PinError> {
        self.with(|p| {
            let before = p.clone();
            let find = |p: &Pinned, id: &str| p.items.iter().position(|i| i.id == id).ok_or(PinError::NoItem);
            match op {
                PinOp::Add { text } => {
                    if p.items.len() >= MAX_ITEMS {
                        return Err(PinError::Full);
                    }
                    let id = (1..)
                        .map(|n: u32| format!("p{n}"))
                        .find(|id| !p.items.iter().any(|i| &i.id == id))
                        .unwrap_or_default();
                    p.items.push(Pin {
                        id,
                        text: clean(&text)?,
                        paused: false,
                    });
                }
                PinOp::Edit { id, text } => {
                    let at = find(p, &id)?;
                    p.items[at].text = clean(&text)?;
                }
                PinOp::Remove { id } => {
                    let at = find(p, &id)?;
                    p.items.remove(at);
                }
                PinOp::Pause { id, paused } => {
                    let at = find(p, &id)?;
                    p.items[at].paused = paused;
                }
            }
            let saved = serde_json::to_vec_pretty(&*p)
                .map_err(PinError::from)
                .and_then(|bytes| {
                    if let Some(dir) = self.path.parent() {
                        crate::paths::ensure_dir(dir, 0o700)?;
                    }
                    Ok(crate::paths::write_atomic(&self.path, &bytes, 0o600)?)
                });
            if let Err(e) = saved {
                *p = before;
                return Err(e);
            }
            Ok(p.clone())
        })
    }

    /// The pinned block for a turn under a `cloud` or local model.
    pub fn for_turn(&self, kb: &Kb, cloud: bool) -> ForTurn {
        let items: Vec<Pin> = self.with(|p| p.items.iter().filter(|i| !i.paused).cloned().collect());
        let mut out = ForTurn::default();
        if items.is_empty() {
            return out;
        }
        let mut lines = Vec::new();
        let mut docs = Vec::new();
        let mut left = BUDGET_CHARS;
        let mut withheld = 0usize;
        for i in items.iter().filter(|i| i.document().is_none()) {
            let n = i.text.chars().count();
            if n > left {
                out.notices.push(format!("Pinned context is over its {BUDGET_CHARS}-character budget: “{}” and what follows were left out of this turn.", crate::chat::middle_ellipsis(&i.text, 60)));
                left = 0;
                break;
            }
            left -= n;
            lines.push(format!("- {}", i.text));
        }
        for i in &items {
            let Some(key) = i.document() else { continue };
            match read_document(kb, key) {
                Ok(None) => out.notices.push(format!(
                    "The pinned “{key}” is not in your library (use a note's path in the vault or a paper's source, as the Library shows it); it was left out."
                )),
                Ok(Some((_, true))) if cloud => {
                    withheld += 1;
                    out.notices.push(format!(
                        "The pinned private note “{key}” was left out: private notes are never sent to a cloud model."
                    ));
                }
                Ok(Some((text, private))) => {
                    if left == 0 {
                        out.notices.push(format!("The pinned “{key}” did not fit the pinned-context budget; it was left out."));
                        continue;
                    }
                    let cap = DOC_CHARS.min(left);
                    let mut body: String = text.chars().take(cap).collect();
                    if text.chars().count() > cap {
                        body.push_str("\n…(cut to fit the pinned-context budget)");
                        out.notices.push(format!("The pinned “{key}” was cut to its first {cap} characters."));
                    }
                    left -= body.chars().count().min(left);
                    out.saw_private |= private;
                    docs.push(format!("Pinned document {key}:\n{}", super::tools::wrap_data(&body)));
                }
                Err(e) => {
                    tracing::warn!(key, error = %e, "could not read a pinned document");
                    out.notices.push(format!("The pinned “{key}” could not be read ({e}); it was left out."));
                }
            }
        }
        let mut block = String::new();
        if !lines.is_empty() {
            block.push_str("Pinned context — standing notes from the user; apply them to every answer:\n");
            block.push_str(&lines.join("\n"));
        }
        for d in docs {
            if !block.is_empty() {
                block.push_str("\n\n");
            }
            block.push_str(&d);
        }
        if withheld > 0 {
            if !block.is_empty() {
                block.push_str("\n\n");
            }
            // The model learns only that something was withheld, not what.
            block.push_str(&format!(
                "({withheld} pinned private item{} left out: private notes are never sent to this model.)",
                if withheld == 1 { " was" } else { "s were" }
            ));
        }
        out.block = (!block.is_empty()).then_some(block);
        out
    }
}

/// A pinned document's text in reading order and whether any chunk of it
/// is private (fail closed: unknown visibility is private). `None` when no
/// document has that key.
fn read_document(kb: &Kb, key: &str) -> Result<Option<(String, bool)>, crate::kb::KbError> {
    let first = kb.get_document_chunks(key, 1)?;
    if first.total_chunks == 0 {
        return Ok(None);
    }
    let mut text = String::new();
    let mut private = false;
    let mut page = first;
    loop {
        for c in &page.chunks {
            private |= c.visibility().is_private();
            if text.chars().count() <= DOC_CHARS {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&c.text);
            }
        }
        // Every page is read for the privacy check even once the text is full.
        if page.page >= page.pages {
            break;
        }
        page = kb.get_document_chunks(key, page.page + 1)?;
    }
    Ok(Some((text, private)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_kept_edited_paused_and_refused_when_malformed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/pins.json");
        let pins = Pins::new(path.clone());
        let p = pins
            .apply(PinOp::Add {
                text: " I write in British English ".into(),
            })
            .unwrap();
        let id = p.items[0].id.clone();
        pins.apply(PinOp::Add {
            text: "@projects/thesis.md".into(),
        })
        .unwrap();
        pins.apply(PinOp::Pause {
            id: id.clone(),
            paused: true,
        })
        .unwrap();
        let again = Pins::new(path).get();
        assert_eq!(again.items[0].text, "I write in British English");
        assert!(again.items[0].paused);
        assert_eq!(again.items[1].document(), Some("projects/thesis.md"));
        assert!(matches!(
            pins.apply(PinOp::Add {
                text: "two\nlines".into()
            }),
            Err(PinError::BadText)
        ));
        assert!(matches!(
            pins.apply(PinOp::Remove { id: "nope".into() }),
            Err(PinError::NoItem)
        ));
        pins.apply(PinOp::Edit {
            id,
            text: "Use SI units".into(),
        })
        .unwrap();
        assert_eq!(pins.get().items[0].text, "Use SI units");
    }
}
