//! Long-term memory of the user: short facts with provenance, proposed by
//! the agent or an extraction pass, kept only once the user accepts them,
//! condensed into a summary the chat places after its system prompt.
//!
//! Owns the rules of a fact's life: what a fact may say ([`FactDraft`]
//! checks), that a proposal waits for the user unless `memory.auto_accept`
//! is on, that rejecting removes a proposal and forgetting removes an
//! accepted fact at once (its record, its place in the summary and in
//! search: nothing else holds it), and what each model may see — a fact
//! whose source was private never reaches a cloud model, in the summary
//! ([`summary`]) or in a search. Also the Markdown file facts are exported
//! to and imported from ([`markdown`]) and the idle-session extraction's
//! prompt and parser ([`extract`]).
//! Must not: write a fact except through the store's one fact write (the
//! fact and its event in one batch), read sessions or settings itself
//! (callers hand in plain values), or call a model other than the one the
//! extraction is handed.

pub mod extract;
pub mod markdown;
pub mod summary;

use crate::error_kind::ErrorKind;
use crate::kb::{Actor, Kb, KbError};
use crate::store::StoreError;

pub use crate::store::{fact_key, EventId, Fact, FactId, FactStatus, Provenance};

pub use summary::{search, summary, Summary, SUMMARY_HEADING};

/// Knobs from `[memory]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySettings {
    /// Accept proposals at once instead of waiting for the user.
    pub auto_accept: bool,
    /// Token budget of the summary placed after the system prompt (0 turns
    /// the summary off).
    pub summary_tokens: usize,
}

/// `memory.summary_tokens`'s default: room for some twenty short facts,
/// small beside any context window.
pub const SUMMARY_TOKENS: usize = 400;

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            auto_accept: false,
            summary_tokens: SUMMARY_TOKENS,
        }
    }
}

/// Longest fact text, in characters: a fact is a sentence or two, not a note.
pub const MAX_TEXT: usize = 400;
/// Longest category or key, in characters.
pub const MAX_NAME: usize = 60;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// A fact's text, category or key cannot be stored as given.
    #[error("{0}")]
    Invalid(String),
    /// No fact has that id (or it is not visible to this model).
    #[error("no memory fact {0} — `jarvis memory list` shows the facts and their ids")]
    NotFound(FactId),
    /// The fact is not in the state the operation needs.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Kb(#[from] KbError),
}

impl MemoryError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            MemoryError::Invalid(_) => ErrorKind::User,
            MemoryError::NotFound(_) => ErrorKind::NotFound,
            MemoryError::Conflict(_) => ErrorKind::Conflict,
            MemoryError::Store(e) => e.kind(),
            MemoryError::Kb(e) => e.kind(),
        }
    }
}

pub type Result<T> = std::result::Result<T, MemoryError>;

/// A fact as proposed or typed: category, key and text, checked by
/// [`FactDraft::clean`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactDraft {
    pub category: String,
    pub key: String,
    pub text: String,
}

/// One line, runs of whitespace as one space, trimmed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl FactDraft {
    pub fn new(category: &str, key: &str, text: &str) -> FactDraft {
        FactDraft {
            category: category.into(),
            key: key.into(),
            text: text.into(),
        }
    }

    /// The draft as it will be stored: one line each, the category lower
    /// case (an empty one is `other`, an empty key is taken from the
    /// text), within the lengths, and nothing that could end the comment
    /// or heading the Markdown export puts around it.
    pub fn clean(&self) -> Result<FactDraft> {
        let text = one_line(&self.text);
        if text.is_empty() {
            return Err(MemoryError::Invalid(
                "a memory fact needs a text: one short statement about the user".into(),
            ));
        }
        if text.chars().count() > MAX_TEXT {
            return Err(MemoryError::Invalid(format!(
                "a memory fact is at most {MAX_TEXT} characters (this one has {}) — keep one short statement per fact",
                text.chars().count()
            )));
        }
        let mut category = one_line(&self.category).to_lowercase();
        if category.is_empty() {
            category = "other".into();
        }
        let mut key = one_line(&self.key);
        if key.is_empty() {
            key = text.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
        }
        for (what, v) in [("category", &category), ("key", &key)] {
            if v.chars().count() > MAX_NAME {
                return Err(MemoryError::Invalid(format!(
                    "a memory fact's {what} is at most {MAX_NAME} characters — shorten {v:?}"
                )));
            }
        }
        let all = format!("{category} {key} {text}");
        if all.contains("<!--") || all.contains("-->") || category.starts_with('#') || key.contains("**") {
            return Err(MemoryError::Invalid(
                "a memory fact may not contain `<!--`, `-->`, `**` in its key or start its category with `#` — reword it".into(),
            ));
        }
        Ok(FactDraft { category, key, text })
    }
}

/// The user's long-term memory over the knowledge base's store.
pub struct Memory<'a> {
    kb: &'a Kb,
    settings: MemorySettings,
}

impl<'a> Memory<'a> {
    pub fn new(kb: &'a Kb, settings: &MemorySettings) -> Memory<'a> {
        Memory {
            kb,
            settings: settings.clone(),
        }
    }

    pub fn settings(&self) -> &MemorySettings {
        &self.settings
    }

    /// Every fact, pending and accepted, newest change first.
    pub fn list(&self) -> Result<Vec<Fact>> {
        let mut v = self.kb.store().facts()?;
        v.sort_by(|a, b| b.updated.cmp(&a.updated).then(b.id.cmp(&a.id)));
        Ok(v)
    }

    /// The accepted facts a model may see: all of them for a local model,
    /// only those from public sources for a cloud one.
    pub fn visible(&self, cloud: bool) -> Result<Vec<Fact>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|f| f.accepted() && !(cloud && f.private()))
            .collect())
    }

    pub fn get(&self, id: FactId) -> Result<Fact> {
        self.kb.store().fact(id)?.ok_or(MemoryError::NotFound(id))
    }

    /// Propose a fact: it waits for the user (pending), or with
    /// `memory.auto_accept` is accepted at once, as an event by `actor`.
    /// The same text already accepted or pending is not proposed twice.
    pub fn propose(&self, draft: &FactDraft, source: Provenance, actor: &Actor) -> Result<Fact> {
        let d = draft.clean()?;
        let norm = |s: &str| s.to_lowercase();
        if let Some(same) = self
            .kb
            .store()
            .facts()?
            .into_iter()
            .find(|f| norm(&f.text) == norm(&d.text) && f.category == d.category)
        {
            return Ok(same);
        }
        let status = if self.settings.auto_accept {
            FactStatus::Accepted
        } else {
            FactStatus::Pending
        };
        self.write(
            Fact {
                id: 0,
                category: d.category,
                key: d.key,
                text: d.text,
                status,
                source,
                updated: crate::kb::stage::now_iso(),
            },
            actor,
        )
    }

    /// Accept a pending fact, with the user's edits if any (one event: the
    /// accepted fact is what the user saw).
    pub fn accept(&self, id: FactId, edit: Option<&FactDraft>, actor: &Actor) -> Result<Fact> {
        let mut f = self.get(id)?;
        if f.accepted() {
            return Err(MemoryError::Conflict(format!(
                "memory fact {id} is accepted already — edit or forget it instead"
            )));
        }
        if let Some(e) = edit {
            let d = e.clean()?;
            (f.category, f.key, f.text) = (d.category, d.key, d.text);
        }
        f.status = FactStatus::Accepted;
        f.updated = crate::kb::stage::now_iso();
        self.write(f, actor)
    }

    /// Change a fact's category, key or text (an accepted fact's edit is an
    /// event; a pending one stays pending).
    pub fn edit(&self, id: FactId, edit: &FactDraft, actor: &Actor) -> Result<Fact> {
        let mut f = self.get(id)?;
        let d = edit.clean()?;
        if (f.category.as_str(), f.key.as_str(), f.text.as_str()) == (&d.category, &d.key, &d.text) {
            return Ok(f);
        }
        (f.category, f.key, f.text) = (d.category, d.key, d.text);
        f.updated = crate::kb::stage::now_iso();
        self.write(f, actor)
    }

    /// Reject a pending fact: it is gone, and was never used.
    pub fn reject(&self, id: FactId) -> Result<()> {
        let f = self.get(id)?;
        if f.accepted() {
            return Err(MemoryError::Conflict(format!(
                "memory fact {id} is accepted — forget it instead (`jarvis memory forget {id}`)"
            )));
        }
        let _w = self.kb.write_lock();
        self.kb.store().delete_fact(id, &self.kb.cause(&Actor::Jarvis))?;
        Ok(())
    }

    /// Forget a fact now: an accepted one leaves the summary and search
    /// with its event (undo puts it back while its copy is kept); a pending
    /// one is rejected.
    /// Returns the fact as it was and the forgetting's event (none for a
    /// rejected proposal).
    pub fn forget(&self, id: FactId, actor: &Actor) -> Result<(Fact, Option<EventId>)> {
        let f = self.get(id)?;
        let _w = self.kb.write_lock();
        let event = self.kb.store().delete_fact(id, &self.kb.cause(actor))?;
        Ok((f, event))
    }

    fn write(&self, fact: Fact, actor: &Actor) -> Result<Fact> {
        let _w = self.kb.write_lock();
        let (f, _) = self.kb.store().put_fact(fact, &self.kb.cause(actor))?;
        Ok(f)
    }

    /// Whether the idle-session extraction has read session `id`.
    pub fn extracted(&self, session: &str) -> Result<bool> {
        Ok(self.kb.store().extracted_at(session)?.is_some())
    }

    /// Record that the idle-session extraction read session `id`.
    pub fn mark_extracted(&self, session: &str) -> Result<()> {
        let _w = self.kb.write_lock();
        Ok(self.kb.store().mark_extracted(session)?)
    }
}

#[cfg(test)]
mod tests;
