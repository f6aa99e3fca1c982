//! Chat history in the knowledge base: each finished (question, answer)
//! pair of the display list becomes `doc_type = chat` chunks with
//! `source = session:<id>`, `exchange = <n>` and the session's visibility.
//! Built from the display list, so raw tool results are never indexed.
//!
//! The session file is the truth; these chunks are derived from it, and
//! what is already indexed is read back from the knowledge base itself
//! (the `exchange` numbers present under the session's source), never
//! from a counter in the file. So indexing is idempotent: run it again
//! after a crash, or twice for the same turn, and nothing is duplicated —
//! which is what lets the reply go out before the exchange is embedded
//! ([`super::indexer`] does that afterwards, and catches up on start).
//!
//! A session that turned private while some of its chunks are public has
//! every chunk replaced private in one commit (fail-closed: if that fails,
//! the public chunks are still seen on the next pass, which retries).

use crate::doc_type::DocType;
use std::collections::BTreeSet;

use crate::kb::{Kb, KbError, ReplaceBy};
use crate::store::Metadata;

use super::session::Session;

pub fn source_of(session_id: &str) -> String {
    format!("session:{session_id}")
}

fn exchange_text(user: &str, assistant: &str) -> String {
    format!("User: {user}\n\nAssistant: {assistant}")
}

/// What the knowledge base holds of one session's history.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Indexed {
    /// Exchange numbers with chunks (a commit writes all of an exchange's
    /// chunks or none).
    pub exchanges: BTreeSet<usize>,
    /// Whether any of the session's chunks is public.
    pub any_public: bool,
}

/// Read back what is indexed for `session_id` (a lookup by source, then
/// the session's own chunk records — not a scan of the knowledge base).
pub fn indexed(kb: &Kb, session_id: &str) -> Result<Indexed, KbError> {
    let mut out = Indexed::default();
    for id in kb.ids_where("source", &source_of(session_id))? {
        let Some(rec) = kb.store().get(id)? else { continue };
        if let Some(n) = rec.meta_i64("exchange").and_then(|n| usize::try_from(n).ok()) {
            out.exchanges.insert(n);
        }
        if rec.visibility() != crate::visibility::Visibility::Private {
            out.any_public = true;
        }
    }
    Ok(out)
}

/// Whether `session` has answered exchanges the knowledge base lacks, or
/// public chunks although it is private.
pub fn has_pending(kb: &Kb, session: &Session) -> Result<bool, KbError> {
    let have = indexed(kb, &session.id)?;
    if session.private && have.any_public {
        return Ok(true);
    }
    Ok(session
        .exchanges()
        .iter()
        .enumerate()
        .any(|(i, (_, a))| !a.error && !have.exchanges.contains(&i)))
}

/// Index the exchanges of `session` that the knowledge base lacks (all of
/// them again, as private, when the session is private but some chunk is
/// still public), in one commit. Returns how many chunks were written.
pub fn index_pending(kb: &Kb, session: &Session, cancel: &crate::cancel::Cancel) -> Result<usize, KbError> {
    let have = indexed(kb, &session.id)?;
    let flip = session.private && have.any_public;
    let visibility = if session.private {
        crate::visibility::Visibility::Private
    } else {
        crate::visibility::Visibility::Public
    };
    let source = source_of(&session.id);
    let mut docs = Vec::new();
    for (i, (u, a)) in session.exchanges().iter().enumerate() {
        // Failed turns are not history worth finding.
        if a.error || (!flip && have.exchanges.contains(&i)) {
            continue;
        }
        let mut caller = Metadata::new();
        caller.insert("title".into(), session.title.clone().into());
        caller.insert("session_id".into(), session.id.clone().into());
        caller.insert("exchange".into(), (i as i64).into());
        let mut own = Metadata::new();
        own.insert("doc_type".into(), DocType::Chat.as_str().into());
        own.insert("visibility".into(), visibility.as_str().into());
        own.insert("source".into(), source.clone().into());
        docs.extend(crate::kb::stage::build_text_documents(
            &exchange_text(&u.text, &a.text),
            &caller,
            &own,
            &session.title,
            kb.chunker_config(),
        )?);
    }
    if docs.is_empty() && !flip {
        return Ok(0);
    }
    let n = docs.len();
    let prepared = kb.prepare(docs, cancel)?;
    // A flip replaces every earlier chunk of the session in the same commit.
    let replace = flip.then(|| ReplaceBy::Source(source.clone()));
    kb.commit(prepared, replace.as_ref(), &indexer())?;
    Ok(n)
}

/// Mark a session's indexed exchanges private at once, metadata only (no
/// re-embedding), the moment the session turns private: a public-only
/// search must not see them in the time before the next pass.
pub fn mark_private(kb: &Kb, session_id: &str) -> Result<usize, KbError> {
    set_on_chunks(
        kb,
        session_id,
        "visibility",
        crate::visibility::Visibility::Private.as_str(),
    )
}

/// Remove a session's chat chunks.
pub fn delete_chunks(kb: &Kb, session_id: &str) -> Result<usize, KbError> {
    kb.delete_by_metadata("source", &source_of(session_id), &indexer())
}

/// New title on a session's indexed chunks, metadata only.
pub fn propagate_title(kb: &Kb, session_id: &str, title: &str) -> Result<usize, KbError> {
    set_on_chunks(kb, session_id, "title", title)
}

/// One metadata field set on every indexed chunk of a session.
fn set_on_chunks(kb: &Kb, session_id: &str, key: &str, value: &str) -> Result<usize, KbError> {
    let ids = kb.ids_where("source", &source_of(session_id))?;
    if ids.is_empty() {
        return Ok(0);
    }
    let mut f = Metadata::new();
    f.insert(key.into(), value.into());
    kb.update_chunks_metadata(&ids, &f, &indexer())
}

/// Who the chat index's writes are by: Jarvis's upkeep of entries derived
/// from session files (the session's own events say who changed it).
fn indexer() -> crate::kb::Actor {
    crate::kb::Actor::job("chat_index")
}
