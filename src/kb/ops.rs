//! Operations on stored documents: deletions, metadata-only updates (never
//! re-embedding), listings, paging through a document, schema counts, and
//! idempotent paper adds.

use std::collections::BTreeMap;

use crate::cancel::Cancel;
use crate::doc_type::{DocKind, DocType};
use crate::index::{ChunkId, Visibility};
use crate::store::{Actor, Cause, ChunkRecord, DocTotals, LookupField, Metadata};

use super::stage::{build_text_documents, ReplaceBy};
use super::{index_doc, scalar_string, Kb, KbError, Result};

/// Chunks per page of [`Kb::get_document_chunks`].
pub const PAGE_SIZE: usize = 15;

/// One row of [`Kb::list_documents`]. Its JSON is a row of `kb list --json`
/// (pinned in `cli/kb/tests.rs`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DocumentSummary {
    /// The key the document is grouped by: `source` for papers and the like,
    /// `file_path` for notes (which all share `source = "local"`).
    pub key: String,
    pub title: String,
    pub doc_type: String,
    pub visibility: Visibility,
    pub source: String,
    pub file_path: Option<String>,
    pub chunks: usize,
    pub date_added: String,
    pub meta: Metadata,
}

/// A page of one document's chunks.
#[derive(Debug, Clone)]
pub struct DocumentPage {
    pub chunks: Vec<ChunkRecord>,
    pub page: usize,
    pub pages: usize,
    pub total_chunks: usize,
}

/// What [`Kb::add_paper`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaperAdd {
    Added(Vec<ChunkId>),
    /// Already present by source URL or normalised title.
    Skipped {
        reason: String,
    },
}

/// A paper for [`Kb::add_paper`].
#[derive(Debug, Clone, Default)]
pub struct Paper {
    pub title: String,
    pub authors: String,
    pub source: String,
    pub doi: Option<String>,
    pub score: Option<i64>,
    pub track: Option<String>,
}

/// Lowercase alphanumerics only: "Attention Is All You Need!" and
/// "attention is all you need" are the same paper.
pub fn normalise_title(t: &str) -> String {
    t.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn doc_key(rec: &ChunkRecord) -> String {
    crate::store::doc_key(&rec.meta).to_string()
}

fn add_to_documents(docs: &mut BTreeMap<String, DocumentSummary>, rec: &ChunkRecord) {
    let key = doc_key(rec);
    let s = |k: &str| rec.meta_str(k).unwrap_or("").to_string();
    let entry = docs.entry(key.clone()).or_insert_with(|| DocumentSummary {
        key,
        title: s("title"),
        doc_type: s("doc_type"),
        visibility: rec.visibility(),
        source: s("source"),
        file_path: rec.meta_str("file_path").map(str::to_string),
        chunks: 0,
        date_added: s("date_added"),
        meta: rec.meta.clone(),
    });
    entry.chunks += 1;
    if entry.title.is_empty() {
        entry.title = s("title");
    }
}

fn newest_first(docs: BTreeMap<String, DocumentSummary>, limit: usize) -> Vec<DocumentSummary> {
    let mut out: Vec<_> = docs.into_values().collect();
    out.sort_by(|a, b| b.date_added.cmp(&a.date_added).then(a.key.cmp(&b.key)));
    out.truncate(limit);
    out
}

impl Kb {
    /// Chunk ids whose metadata `key` equals `value` (any scalar, compared
    /// as a string).
    pub fn ids_where(&self, key: &str, value: &str) -> Result<Vec<u64>> {
        match key {
            "source" => Ok(self.store.ids_by(LookupField::Source, value)?),
            "file_path" => Ok(self.store.ids_by(LookupField::FilePath, value)?),
            _ => {
                let mut out = Vec::new();
                for rec in self.store.iter_chunk_meta() {
                    let rec = rec?;
                    if rec.meta.get(key).map(scalar_string).as_deref() == Some(value) {
                        out.push(rec.id);
                    }
                }
                Ok(out)
            }
        }
    }

    /// Delete every chunk whose `key` equals `value`. Database entries only:
    /// no file anywhere is touched. Returns how many chunks went.
    pub fn delete_by_metadata(&self, key: &str, value: &str, actor: &Actor) -> Result<usize> {
        self.check_model()?;
        let _w = self.write_lock();
        let ids = self.ids_where(key, value)?;
        if ids.is_empty() {
            return Ok(0);
        }
        self.commit_ids(super::stage::Prepared(Vec::new()), &ids, actor)?;
        Ok(ids.len())
    }

    /// Metadata-only change of the given chunks: the store and the BM25
    /// filter fields change; text and vectors do not (nothing re-embeds).
    pub fn update_chunks_metadata(&self, ids: &[u64], fields: &Metadata, actor: &Actor) -> Result<usize> {
        self.check_model()?;
        let _w = self.write_lock();
        if ids.is_empty() {
            return Ok(0);
        }
        self.update_metadata_locked(&[(ids, fields)], &self.cause(actor))?;
        Ok(ids.len())
    }

    /// [`Kb::update_chunks_metadata`] for several groups of chunks, each
    /// with its own fields, as one store commit (its events in the same
    /// batch, by `cause`) and one BM25 commit. The caller holds the write
    /// lock and has checked the model.
    pub(crate) fn update_metadata_locked(&self, groups: &[(&[u64], &Metadata)], cause: &Cause) -> Result<()> {
        for (_, fields) in groups {
            if fields.contains_key("visibility") {
                super::stage::check_visibility(fields)?;
            }
        }
        let ids: Vec<u64> = groups.iter().flat_map(|(ids, _)| ids.iter().copied()).collect();
        self.settle_locked()?;
        let seq = self.store.update_metadata_many(groups, cause)?;
        // A read error is returned, not taken for "absent": BM25 must not be
        // stamped with `seq` while missing a document (the catch-up replays
        // the journal instead).
        let mut ix = self.indexes();
        let apply = |ix: &mut super::Indexes| -> Result<()> {
            let mut docs = Vec::with_capacity(ids.len());
            for &id in &ids {
                if let Some(r) = self.store.get(id)? {
                    docs.push(index_doc(&r));
                }
            }
            let chunk_ids: Vec<ChunkId> = ids.iter().map(|&i| ChunkId(i)).collect();
            ix.bm25.delete_chunks(&chunk_ids);
            ix.bm25.add(&docs)?;
            ix.bm25.commit(seq)?;
            if let Some(v) = ix.vectors.as_mut() {
                // Nothing changes in the vectors; only the sequence stamp moves.
                v.commit(seq)?;
            }
            if let Some(f) = ix.flat.as_mut() {
                f.commit(seq)?;
            }
            Ok(())
        };
        if let Err(e) = apply(&mut ix) {
            self.fell_behind(&mut ix, &e, seq);
            return Err(e);
        }
        Ok(())
    }

    /// The seed's `update_metadata_fields(file_path, fields)`.
    pub fn update_metadata_fields(&self, file_path: &str, fields: &Metadata, actor: &Actor) -> Result<usize> {
        let ids = self.store.ids_by(LookupField::FilePath, file_path)?;
        self.update_chunks_metadata(&ids, fields, actor)
    }

    pub fn update_visibility(&self, file_path: &str, visibility: Visibility, actor: &Actor) -> Result<usize> {
        let mut f = Metadata::new();
        f.insert("visibility".into(), visibility.as_str().into());
        self.update_metadata_fields(file_path, &f, actor)
    }

    /// Point every chunk of `source` at `new_path` (and a matching
    /// `file://` source when the old source was one).
    pub fn update_file_path(&self, source: &str, new_path: &str, actor: &Actor) -> Result<usize> {
        let ids = self.store.ids_by(LookupField::Source, source)?;
        let mut f = Metadata::new();
        f.insert("file_path".into(), new_path.into());
        if source.starts_with("file://") {
            f.insert("source".into(), format!("file://{new_path}").into());
        }
        self.update_chunks_metadata(&ids, &f, actor)
    }

    /// Metadata-only correction of a paper's title/authors/doi.
    pub fn update_paper_metadata(
        &self,
        source: &str,
        title: Option<&str>,
        authors: Option<&str>,
        doi: Option<&str>,
        actor: &Actor,
    ) -> Result<usize> {
        let ids = self.store.ids_by(LookupField::Source, source)?;
        if ids.is_empty() {
            return Err(KbError::Invalid(format!(
                "no document with source {source:?} — `jarvis kb list` shows the sources"
            )));
        }
        let mut f = Metadata::new();
        for (k, v) in [("title", title), ("authors", authors), ("doi", doi)] {
            if let Some(v) = v {
                f.insert(k.into(), v.into());
            }
        }
        self.update_chunks_metadata(&ids, &f, actor)
    }

    pub fn count(&self) -> Result<usize> {
        Ok(self.store.count()?)
    }

    /// Distinct documents (papers by source, notes by file path).
    pub fn count_unique_documents(&self) -> Result<usize> {
        let mut keys = std::collections::BTreeSet::new();
        for rec in self.store.iter_chunk_meta() {
            keys.insert(doc_key(&rec?));
        }
        Ok(keys.len())
    }

    /// Deduplicated documents with chunk counts, newest first, optionally
    /// narrowed by a filter.
    pub fn list_documents(&self, filter: &crate::index::Filter, limit: usize) -> Result<Vec<DocumentSummary>> {
        let mut docs: BTreeMap<String, DocumentSummary> = BTreeMap::new();
        for rec in self.store.iter_chunk_meta() {
            let rec = rec?;
            if super::search::matches(filter, &rec) {
                add_to_documents(&mut docs, &rec);
            }
        }
        Ok(newest_first(docs, limit))
    }

    /// Keys of the papers stored private (see
    /// [`DocTotals::legacy_private_papers`]).
    pub fn legacy_private_papers(&self) -> Result<Vec<String>> {
        Ok(self.store.doc_totals()?.legacy_private_papers)
    }

    /// Everything `kb stats` counts. The store keeps these sums with every
    /// commit: one read, however many documents.
    pub fn overview(&self) -> Result<DocTotals> {
        Ok(self.store.doc_totals()?)
    }

    /// One document's chunks in reading order — body by chunk_index, then
    /// annotations and figures by page — 15 per page (1-based).
    ///
    /// `key` names one document as [`Kb::find_document`] does: a source
    /// shared by several documents (every note's is `"local"`) never returns
    /// them all together — a file path is tried, else it is refused.
    pub fn get_document_chunks(&self, key: &str, page: usize) -> Result<DocumentPage> {
        let load = |field| -> Result<Vec<ChunkRecord>> {
            let mut out = Vec::new();
            for id in self.store.ids_by(field, key)? {
                if let Some(c) = self.store.get(id)? {
                    out.push(c);
                }
            }
            Ok(out)
        };
        let mut chunks = load(LookupField::Source)?;
        let docs = chunks
            .iter()
            .map(doc_key)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if docs != 1 {
            chunks = load(LookupField::FilePath)?;
            if chunks.is_empty() && docs > 1 {
                return Err(KbError::Invalid(format!(
                    "source {key:?} is shared by {docs} documents (notes all have source \"local\") — name one document by its file path or the key `jarvis kb list` shows"
                )));
            }
        }
        chunks.sort_by_key(|c| {
            let annotation = c.meta_str("annotation_kind").is_some();
            (
                annotation,
                c.meta_i64(if annotation { "page" } else { "chunk_index" }).unwrap_or(0),
                c.id,
            )
        });
        let total = chunks.len();
        let pages = total.div_ceil(PAGE_SIZE).max(1);
        let page = page.clamp(1, pages);
        let chunks = chunks
            .into_iter()
            .skip((page - 1) * PAGE_SIZE)
            .take(PAGE_SIZE)
            .collect();
        Ok(DocumentPage {
            chunks,
            page,
            pages,
            total_chunks: total,
        })
    }

    /// Every metadata key with the number of chunks carrying it.
    pub fn metadata_key_counts(&self) -> Result<BTreeMap<String, usize>> {
        let mut out = BTreeMap::new();
        for rec in self.store.iter_chunk_meta() {
            for k in rec?.meta.keys() {
                *out.entry(k.clone()).or_insert(0) += 1;
            }
        }
        Ok(out)
    }

    /// Distinct values of one key with chunk counts (tags split).
    pub fn metadata_value_counts(&self, key: &str) -> Result<BTreeMap<String, usize>> {
        let mut out = BTreeMap::new();
        for rec in self.store.iter_chunk_meta() {
            let rec = rec?;
            let Some(v) = rec.meta.get(key) else { continue };
            let values = if key == "tags" {
                super::split_tags(&scalar_string(v))
            } else {
                vec![scalar_string(v)]
            };
            for v in values {
                *out.entry(v).or_insert(0) += 1;
            }
        }
        Ok(out)
    }

    /// Whether a paper is already stored, by source URL or normalised title.
    pub fn paper_exists(&self, source: &str, title: &str) -> Result<Option<String>> {
        if !source.is_empty() && !self.store.ids_by(LookupField::Source, source)?.is_empty() {
            return Ok(Some(format!("source {source} is already in the knowledge base")));
        }
        let want = normalise_title(title);
        if !want.is_empty() {
            for rec in self.store.iter_chunk_meta() {
                let rec = rec?;
                if rec.is(DocType::Paper)
                    && rec.meta_str("title").map(normalise_title).as_deref() == Some(want.as_str())
                {
                    return Ok(Some(format!(
                        "a paper titled {title:?} is already in the knowledge base"
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Add a paper summary (always public), idempotent by source URL and by
    /// normalised title. The embedded text of every chunk carries
    /// `title — authors` so an author-name query matches any chunk.
    pub fn add_paper(&self, paper: &Paper, summary: &str, actor: &Actor) -> Result<PaperAdd> {
        if let Some(reason) = self.paper_exists(&paper.source, &paper.title)? {
            return Ok(PaperAdd::Skipped { reason });
        }
        let mut caller = Metadata::new();
        caller.insert("title".into(), paper.title.clone().into());
        caller.insert("authors".into(), paper.authors.clone().into());
        if let Some(d) = &paper.doi {
            caller.insert("doi".into(), d.clone().into());
        }
        if let Some(s) = paper.score {
            caller.insert("score".into(), s.into());
        }
        if let Some(t) = &paper.track {
            caller.insert("track".into(), t.clone().into());
        }
        caller.insert("storage_mode".into(), "summary".into());
        let mut own = Metadata::new();
        own.insert("doc_type".into(), DocType::Paper.as_str().into());
        own.insert("visibility".into(), Visibility::Public.as_str().into());
        own.insert("source".into(), paper.source.clone().into());
        let header = paper_header(&paper.title, &paper.authors);
        // The authors line is part of the stored content too, as the seed does.
        let content = if paper.authors.is_empty() {
            summary.to_string()
        } else {
            format!("Authors: {}\n\n{summary}", paper.authors)
        };
        let docs = build_text_documents(&content, &caller, &own, &header, self.chunker_config())?;
        let prepared = self.prepare(docs, &Cancel::new())?;
        Ok(PaperAdd::Added(self.commit(
            prepared,
            Some(&ReplaceBy::Source(paper.source.clone())),
            actor,
        )?))
    }
}

/// `title — authors` (or just the title).
pub fn paper_header(title: &str, authors: &str) -> String {
    match (title.trim(), authors.trim()) {
        (t, "") => t.to_string(),
        ("", a) => a.to_string(),
        (t, a) => format!("{t} — {a}"),
    }
}

/// One document named by the key a user gave: what [`Kb::remove_document`]
/// would remove (shown to a human first), or what a correction would touch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DocumentRef {
    /// The key the user gave.
    pub key: String,
    /// The metadata field `key` matched: `"source"` or `"file_path"`.
    pub by: &'static str,
    pub title: String,
    pub doc_type: String,
    pub visibility: Visibility,
    pub source: String,
    /// As stored: vault-relative for notes, absolute for local PDFs.
    pub file_path: Option<String>,
    pub chunks: usize,
}

impl Kb {
    /// Find the one document `key` names — by `source`, or by `file_path`
    /// (notes all share `source = "local"`, so a source that spans several
    /// documents is refused rather than removing them all).
    pub fn find_document(&self, key: &str) -> Result<DocumentRef> {
        let by_source = self.store.ids_by(LookupField::Source, key)?;
        let by_path = self.store.ids_by(LookupField::FilePath, key)?;
        let records = |ids: &[u64]| -> Result<Vec<ChunkRecord>> {
            let mut out = Vec::new();
            for &id in ids {
                if let Some(r) = self.store.get(id)? {
                    out.push(r);
                }
            }
            Ok(out)
        };
        let source_recs = records(&by_source)?;
        let source_docs: std::collections::BTreeSet<String> = source_recs.iter().map(doc_key).collect();
        let (by, recs) = if source_docs.len() == 1 {
            ("source", source_recs)
        } else if !by_path.is_empty() {
            ("file_path", records(&by_path)?)
        } else if source_docs.len() > 1 {
            return Err(KbError::Invalid(format!(
                "source {key:?} is shared by {} documents (notes all have source \"local\") — name one document by the key `jarvis kb list` shows",
                source_docs.len()
            )));
        } else {
            return Err(KbError::NotFound(format!(
                "no document has source or file path {key:?} — `jarvis kb list` shows each document's key (a paper's source, a note's file path)"
            )));
        };
        let first = recs
            .iter()
            .find(|r| r.meta_str("annotation_kind").is_none())
            .or(recs.first());
        let s = |k: &str| first.and_then(|r| r.meta_str(k)).unwrap_or("").to_string();
        Ok(DocumentRef {
            key: key.to_string(),
            by,
            title: s("title"),
            doc_type: s("doc_type"),
            visibility: first.map_or(Visibility::Private, |r| r.visibility()),
            source: s("source"),
            file_path: first.and_then(|r| r.meta_str("file_path")).map(str::to_string),
            chunks: recs.len(),
        })
    }

    /// The one document `key` names, when it is an entry of its own that a
    /// correction (title, authors, DOI) or a Library removal may change: a
    /// paper or a digest named by its source. Notes and chats are refused —
    /// their entries are rebuilt from their files, so a change here would
    /// be undone by the next sync (and notes all share `source = "local"`).
    /// The one place this rule lives; every edge and the chat tools ask it.
    pub fn own_entry(&self, key: &str) -> Result<DocumentRef> {
        let doc = self.find_document(key)?;
        if doc.by != "source" || !DocKind::Papers.doc_types().iter().any(|t| t.is(&doc.doc_type)) {
            let doc_type = if doc.doc_type.is_empty() {
                DocType::Note.to_string()
            } else {
                doc.doc_type
            };
            return Err(KbError::FromItsFile {
                key: key.to_string(),
                doc_type,
            });
        }
        Ok(doc)
    }

    /// Remove the document a preview describes: database entries only, no
    /// file anywhere is touched. Returns how many chunks went.
    pub fn remove_document(&self, preview: &DocumentRef, actor: &Actor) -> Result<usize> {
        self.delete_by_metadata(preview.by, &preview.key, actor)
    }
}
