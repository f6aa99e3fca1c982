//! Chat history in the knowledge base: each finished (question, answer)
//! pair of the display list becomes `doc_type = chat` chunks with
//! `source = session:<id>` and the session's visibility. Built from the
//! display list, so raw tool results are never indexed.
//!
//! A session that turned private has its earlier, public chunks deleted and
//! re-indexed private in one commit (fail-closed: if that fails the flag
//! stays set and the next pass retries).

use crate::kb::{Kb, KbError, ReplaceBy};
use crate::store::Metadata;

use super::session::Session;

pub fn source_of(session_id: &str) -> String {
    format!("session:{session_id}")
}

fn exchange_text(user: &str, assistant: &str) -> String {
    format!("User: {user}\n\nAssistant: {assistant}")
}

/// Index the exchanges not yet in the knowledge base (all of them again,
/// as private, when the session flipped). Updates `indexed_exchanges`.
pub fn index_new_exchanges(kb: &Kb, session: &mut Session) -> Result<usize, KbError> {
    let visibility = if session.private {
        crate::visibility::Visibility::Private
    } else {
        crate::visibility::Visibility::Public
    };
    let source = source_of(&session.id);
    let exchanges = session.exchanges();
    let from = if session.reindex_private {
        0
    } else {
        session.indexed_exchanges
    };
    if from >= exchanges.len() && !session.reindex_private {
        return Ok(0);
    }
    let mut docs = Vec::new();
    for (i, (u, a)) in exchanges.iter().enumerate().skip(from) {
        if a.error {
            continue;
        }
        let mut caller = Metadata::new();
        caller.insert("title".into(), session.title.clone().into());
        caller.insert("session_id".into(), session.id.clone().into());
        caller.insert("exchange".into(), (i as i64).into());
        let mut own = Metadata::new();
        own.insert("doc_type".into(), "chat".into());
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
    let total = exchanges.len();
    let n = docs.len();
    if n == 0 && !session.reindex_private {
        session.indexed_exchanges = total;
        return Ok(0);
    }
    let prepared = kb.prepare(docs, &crate::cancel::Cancel::new())?;
    // A flip replaces every earlier chunk of the session in the same commit.
    let replace = session.reindex_private.then(|| ReplaceBy::Source(source.clone()));
    kb.commit(prepared, replace.as_ref())?;
    session.indexed_exchanges = total;
    session.reindex_private = false;
    Ok(n)
}

/// Remove a session's chat chunks.
pub fn delete_chunks(kb: &Kb, session_id: &str) -> Result<usize, KbError> {
    kb.delete_by_metadata("source", &source_of(session_id))
}

/// New title on a session's indexed chunks, metadata only.
pub fn propagate_title(kb: &Kb, session_id: &str, title: &str) -> Result<usize, KbError> {
    let ids = kb.ids_where("source", &source_of(session_id))?;
    if ids.is_empty() {
        return Ok(0);
    }
    let mut f = Metadata::new();
    f.insert("title".into(), title.into());
    kb.update_chunks_metadata(&ids, &f)
}
