//! [`DocType`]: what a stored document is (note, paper, digest, chat), and
//! [`DocKind`]: what a user asks for (`--kind papers`, a tool's `kinds`).
//!
//! Owns the stored spelling of each type and the one mapping from a kind to
//! the types it covers — "papers" is papers *and* digests — so every edge
//! and tool accepts the same words and means the same documents.
//! Must not: decide anything else about a type (which entries may be edited
//! is `kb::Kb::own_entry`; where a type comes from is `ingest`'s).

use std::fmt;

/// The `doc_type` a chunk is stored with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DocType {
    /// A vault note (or record), rebuilt from its file on every sync.
    Note,
    /// A paper (a PDF, arXiv, a DOI or a web page).
    Paper,
    /// A weekly digest's summary entry.
    Digest,
    /// An indexed chat session.
    Chat,
}

impl DocType {
    pub const ALL: [DocType; 4] = [DocType::Note, DocType::Paper, DocType::Digest, DocType::Chat];

    /// The stored (and indexed) spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            DocType::Note => "note",
            DocType::Paper => "paper",
            DocType::Digest => "digest",
            DocType::Chat => "chat",
        }
    }

    /// A stored spelling; anything else is `None`.
    pub fn parse(s: &str) -> Option<DocType> {
        DocType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether stored value `s` is this type.
    pub fn is(self, s: &str) -> bool {
        s == self.as_str()
    }
}

impl fmt::Display for DocType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Which documents a user means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocKind {
    /// Vault notes (and records).
    Notes,
    /// Papers and digests.
    Papers,
    /// Indexed chat sessions.
    Chats,
    /// Everything.
    All,
}

/// A kind no edge knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kind `{0}` — use {names}", names = DocKind::NAMES)]
pub struct UnknownKind(pub String);

impl DocKind {
    /// The accepted words, for messages and help.
    pub const NAMES: &'static str = "notes, papers, chats or all";

    /// `notes`, `papers`, `chats` or `all` (the singular works too).
    pub fn parse(s: &str) -> Result<DocKind, UnknownKind> {
        match s.trim() {
            "notes" | "note" => Ok(DocKind::Notes),
            "papers" | "paper" => Ok(DocKind::Papers),
            "chats" | "chat" => Ok(DocKind::Chats),
            "all" => Ok(DocKind::All),
            other => Err(UnknownKind(other.to_string())),
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            DocKind::Notes => "notes",
            DocKind::Papers => "papers",
            DocKind::Chats => "chats",
            DocKind::All => "all",
        }
    }

    /// The types this kind covers; empty for [`DocKind::All`] (a filter
    /// with no types allows every type).
    pub const fn doc_types(self) -> &'static [DocType] {
        match self {
            DocKind::Notes => &[DocType::Note],
            DocKind::Papers => &[DocType::Paper, DocType::Digest],
            DocKind::Chats => &[DocType::Chat],
            DocKind::All => &[],
        }
    }

    /// The filter's `doc_types` for this kind (empty: every type).
    pub fn type_names(self) -> Vec<String> {
        self.doc_types().iter().map(|t| t.as_str().to_string()).collect()
    }

    /// The filter's `doc_types` for a list of kinds as a user gave them
    /// (`default` when the list is empty); `all` anywhere allows every type.
    pub fn filter_types<S: AsRef<str>>(kinds: &[S], default: &[DocKind]) -> Result<Vec<String>, UnknownKind> {
        let parsed = kinds
            .iter()
            .map(|k| DocKind::parse(k.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let kinds = if parsed.is_empty() { default } else { &parsed[..] };
        if kinds.contains(&DocKind::All) {
            return Ok(Vec::new());
        }
        let mut out: Vec<String> = Vec::new();
        for t in kinds.iter().flat_map(|k| k.doc_types()) {
            if !out.iter().any(|o| t.is(o)) {
                out.push(t.as_str().to_string());
            }
        }
        Ok(out)
    }
}

impl fmt::Display for DocKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn papers_are_papers_and_digests_and_every_word_is_accepted_once() {
        assert_eq!(
            DocKind::filter_types(&["papers"], &[]).unwrap(),
            vec!["paper", "digest"]
        );
        assert_eq!(
            DocKind::filter_types(&["note", "papers", "paper"], &[]).unwrap(),
            vec!["note", "paper", "digest"]
        );
        assert_eq!(
            DocKind::filter_types::<&str>(&[], &[DocKind::Notes, DocKind::Papers]).unwrap(),
            vec!["note", "paper", "digest"]
        );
        assert!(DocKind::filter_types(&["chats", "all"], &[]).unwrap().is_empty());
        let e = DocKind::filter_types(&["movies"], &[]).unwrap_err();
        assert_eq!(e.to_string(), "unknown kind `movies` — use notes, papers, chats or all");
        for t in DocType::ALL {
            assert_eq!(DocType::parse(t.as_str()), Some(t));
        }
        assert_eq!(DocType::parse("Paper"), None);
    }
}
