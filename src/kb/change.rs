//! Change detection for files added by source: has this source's content
//! changed since it was stored?
//!
//! Owns [`Kb::source_change`], the one decision behind "same source, same
//! bytes → skip; same source, changed bytes → replace in one commit", used
//! by `kb add`, the PDF inbox and the library import (which also compares
//! an item's fingerprint, [`Kb::source_change_with`]). It reads only the
//! stored `content_hash` (and that fingerprint) of the source's first chunk
//! (one index lookup and one record read), so an unchanged file costs no
//! parsing, no embedding and no model call.
//! Must not: read files or write anything — the caller hashes the bytes it
//! already holds ([`content_hash`]) and commits with
//! [`ReplaceBy::Source`](super::ReplaceBy) when told [`SourceChange::Changed`].

use sha2::{Digest, Sha256};

use crate::store::LookupField;

use super::{Kb, Result};

/// What the knowledge base holds for a source, compared with new bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceChange {
    /// Nothing is stored under this source: add it.
    New,
    /// Stored with the same content hash: skip, nothing to do.
    Unchanged,
    /// Stored with another content hash (or none recorded): replace the
    /// old entry in the same commit that adds the new one.
    Changed {
        /// The hash stored with the old entry, if it had one.
        stored_hash: Option<String>,
    },
}

/// The `content_hash` Jarvis stores with a file's chunks: sha256, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Kb {
    /// Compare `content_hash` (from [`content_hash`]) with what is stored
    /// under `source`.
    pub fn source_change(&self, source: &str, content_hash: &str) -> Result<SourceChange> {
        self.source_change_inner(source, content_hash, None)
    }

    /// [`Kb::source_change`] for a source described by more than its
    /// bytes: `also` is a metadata key and the value it must hold (an
    /// imported library item's fingerprint of its metadata and notes), and
    /// a different or missing value is a change too.
    pub fn source_change_with(&self, source: &str, content_hash: &str, also: (&str, &str)) -> Result<SourceChange> {
        self.source_change_inner(source, content_hash, Some(also))
    }

    fn source_change_inner(
        &self,
        source: &str,
        content_hash: &str,
        also: Option<(&str, &str)>,
    ) -> Result<SourceChange> {
        let ids = self.store().ids_by(LookupField::Source, source)?;
        let Some(&first) = ids.first() else {
            return Ok(SourceChange::New);
        };
        let (stored_hash, also_same) = match self.store().get(first)? {
            Some(rec) => (
                rec.meta_str("content_hash").map(str::to_string),
                also.is_none_or(|(k, v)| rec.meta_str(k) == Some(v)),
            ),
            // Listed by the lookup but gone: treat as absent.
            None => return Ok(SourceChange::New),
        };
        Ok(match stored_hash {
            Some(h) if h == content_hash && also_same => SourceChange::Unchanged,
            stored_hash => SourceChange::Changed { stored_hash },
        })
    }
}
