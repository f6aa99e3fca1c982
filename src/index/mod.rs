//! Derived search indexes: BM25 ([`bm25`], tantivy), the exact dense index
//! ([`flat`], an int8 copy of every vector, memory-mapped), approximate
//! vectors ([`vector`], arroy on LMDB) and rank fusion ([`fuse`], pure).
//!
//! Everything here is *derived* from the fjall store, which is the source of
//! truth: these indexes can always be thrown away and rebuilt from stored
//! chunks. To make catching up possible, each persistent index records the
//! store sequence number it reflects in the same atomic commit as its data
//! (`commit(seq)` / `committed_seq()`), adding an id that already exists
//! replaces it, deleting a missing id is a no-op, and every index can list
//! the ids it holds so a consistency check can compare them with the store.
//!
//! What this module must not do: open the fjall store, embed text, or decide
//! what a user may see. The caller builds the [`Filter`] (privacy included)
//! and, for vectors, the bitmap of allowed chunk ids; the engines apply it
//! *inside* the query so that scores only ever come from the filtered pool.
//!
//! Architecture invariant: [`bm25`] is the only module that imports tantivy
//! and [`vector`] the only one that imports arroy/heed.

pub mod bm25;
mod bm25_error;
pub mod flat;
pub mod fuse;
pub mod vector;

use std::fmt;

pub use crate::visibility::Visibility;

/// Stable identity of one chunk across the store and every index.
///
/// A `u64` newtype so it cannot be confused with a row count or a tantivy
/// `DocId`. The store allocates chunk ids from a counter and never reuses a
/// live one. Ids must fit in a `u32` (more than four billion chunks is far
/// beyond a personal knowledge base) because arroy item ids and
/// [`roaring::RoaringBitmap`] candidate sets are `u32`: the vector index uses
/// the id itself as its item id, with no mapping table to keep consistent,
/// and rejects larger ids with an error. See [`ChunkId::as_item_id`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ChunkId(pub u64);

impl ChunkId {
    /// The id as a `u32` vector item / bitmap member, or `None` when it is
    /// too large to be one.
    pub fn as_item_id(self) -> Option<u32> {
        u32::try_from(self.0).ok()
    }
}

impl From<u32> for ChunkId {
    fn from(id: u32) -> Self {
        ChunkId(u64::from(id))
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Which chunks a search may see. Every set field narrows the pool; an empty
/// filter allows everything.
///
/// Values are compared exactly (no case folding, no prefixes): tag `remote`
/// never matches `remote-first`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Filter {
    /// Public or private only; `None` allows both.
    pub visibility: Option<Visibility>,
    /// Allowed document types (e.g. `["paper", "digest"]`); empty allows all.
    pub doc_types: Vec<String>,
    /// Only chunks from this source (a document's key).
    pub source: Option<String>,
    /// `"highlight"`, `"comment"` or `"figure"`.
    pub annotation_kind: Option<String>,
    /// Record type from frontmatter `type:`/`category:`.
    pub category: Option<String>,
    /// Record status.
    pub status: Option<String>,
    /// Record entity (organisation, person…).
    pub entity: Option<String>,
    /// Tags that must *all* be present.
    pub tags: Vec<String>,
    /// Extra `x_` frontmatter fields as `(key, value)` pairs, all required.
    /// Keys are given with their `x_` prefix, as stored.
    pub fields: Vec<(String, String)>,
}

impl Filter {
    /// True when the filter allows every chunk.
    pub fn is_empty(&self) -> bool {
        self == &Filter::default()
    }

    /// Only public chunks: the filter cloud-provider searches must use.
    pub fn public_only() -> Self {
        Filter {
            visibility: Some(Visibility::Public),
            ..Filter::default()
        }
    }
}

/// One chunk as the BM25 index sees it: the *embedded* text (header,
/// breadcrumb and stored text) plus the metadata a [`Filter`] can test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDoc {
    /// The chunk this document stands for.
    pub chunk_id: ChunkId,
    /// The text to index: the chunk's embedded text, not its stored text.
    pub text: String,
    /// The document's names: a note's title and file stem, a chat's or a
    /// digest's title. Indexed for every chunk of the document (its own
    /// boosted field), and matched whole for the exact-name signal.
    pub titles: Vec<String>,
    /// Titles that describe the content rather than name the document: a
    /// paper's title, a sentence its authors wrote about their findings.
    /// Their own field (boosted apart from names, off by default) and, like
    /// names, matched whole for the exact-name signal.
    pub headlines: Vec<String>,
    /// A note's frontmatter aliases, for every chunk of the note; matched
    /// like titles (field and exact name).
    pub aliases: Vec<String>,
    /// This chunk's heading breadcrumb (`H1 › H2`).
    pub headings: String,
    /// A paper's authors.
    pub authors: String,
    /// The document key (paper URL, `local`, `file:///…`, `session:<id>`).
    pub source: String,
    /// Indexed as its stored spelling. Defaults to private (fail closed).
    pub visibility: Visibility,
    /// `"paper"`, `"note"`, `"chat"`, `"digest"`…
    pub doc_type: String,
    /// Set on annotation and figure chunks only.
    pub annotation_kind: Option<String>,
    /// Record type.
    pub category: Option<String>,
    /// Record status.
    pub status: Option<String>,
    /// Record entity.
    pub entity: Option<String>,
    /// Each tag on its own (not the stored `|a|b|` string).
    pub tags: Vec<String>,
    /// Extra `x_` fields as `(key, value)`.
    pub fields: Vec<(String, String)>,
}

impl Default for IndexDoc {
    fn default() -> Self {
        IndexDoc {
            chunk_id: ChunkId::default(),
            text: String::new(),
            titles: Vec::new(),
            headlines: Vec::new(),
            aliases: Vec::new(),
            headings: String::new(),
            authors: String::new(),
            source: String::new(),
            visibility: Visibility::Private,
            doc_type: String::new(),
            annotation_kind: None,
            category: None,
            status: None,
            entity: None,
            tags: Vec::new(),
            fields: Vec::new(),
        }
    }
}

/// The `key=value` term that stores one extra field in the indexes, shared
/// by the writer and the query side so the two can never disagree.
pub(crate) fn field_term(key: &str, value: &str) -> String {
    format!("{key}={value}")
}

#[cfg(test)]
mod tests {
    /// The hybrid path end to end: a private chunk that is the best match
    /// for both legs never reaches either ranking, nor the fusion, when the
    /// filter is public-only; without the filter it wins.
    #[test]
    fn hybrid_public_search_never_sees_a_private_best_match() -> Result<(), Box<dyn std::error::Error>> {
        use super::bm25::Bm25Index;
        use super::fuse::{rrf, RRF_C};
        use super::vector::VectorIndex;
        use super::{ChunkId, Filter, IndexDoc, Visibility};

        let dir = tempfile::tempdir()?;
        let mut bm25 = Bm25Index::open_or_create(&dir.path().join("bm25"))?;
        let mut vectors = VectorIndex::open_or_create(&dir.path().join("vectors"), 4)?;
        let docs = [
            (1, Visibility::Public, "quarterly budget planning", [1.0, 0.2, 0.0, 0.0]),
            (2, Visibility::Public, "budget spreadsheet notes", [0.8, 0.5, 0.1, 0.0]),
            (3, Visibility::Public, "gardening diary", [0.0, 0.0, 1.0, 0.3]),
            (
                9,
                Visibility::Private,
                "secret budget budget planning",
                [1.0, 0.0, 0.0, 0.0],
            ),
        ];
        for (id, vis, text, v) in docs {
            bm25.add(&[IndexDoc {
                chunk_id: ChunkId(id),
                text: text.to_owned(),
                visibility: vis,
                doc_type: "note".to_owned(),
                ..IndexDoc::default()
            }])?;
            vectors.add(&[(ChunkId(id), v.to_vec())])?;
        }
        bm25.commit(1)?;
        vectors.commit(1)?;

        let query_text = "secret budget planning";
        let query_vec = [1.0, 0.0, 0.0, 0.0];
        let hybrid = |filter: &Filter| -> Result<Vec<u64>, Box<dyn std::error::Error>> {
            let candidates = if filter.is_empty() {
                None
            } else {
                Some(bm25.filter_ids(filter)?)
            };
            let dense: Vec<ChunkId> = vectors
                .search(&query_vec, candidates.as_ref(), 10)?
                .into_iter()
                .map(|h| h.0)
                .collect();
            let sparse: Vec<ChunkId> = bm25.search(query_text, filter, 10)?.into_iter().map(|h| h.0).collect();
            Ok(rrf(&[(&dense, 1.0), (&sparse, 1.0)], RRF_C)
                .into_iter()
                .map(|h| h.0 .0)
                .collect())
        };
        let public = hybrid(&Filter::public_only())?;
        assert!(!public.contains(&9), "{public:?}");
        assert_eq!(public.first(), Some(&1));
        assert_eq!(hybrid(&Filter::default())?.first(), Some(&9));
        Ok(())
    }
}
