//! The persistent BM25 keyword index, on tantivy.
//!
//! Owns one tantivy index directory: its schema, tokenizer, writer and
//! reader. It indexes each chunk's *embedded* text (so a title, author or
//! breadcrumb word matches every chunk of a document) and the metadata a
//! [`Filter`] tests. This is the only module that imports tantivy.
//!
//! It must not decide what is visible: callers pass a [`Filter`] and the
//! filter becomes `Must` clauses of the query itself, each a
//! `ConstScoreQuery(TermQuery, 0.0)` that narrows without adding to the
//! score. BM25 statistics (document count, document frequencies) are taken
//! over the filtered pool too, like the seed's per-query BM25 over the
//! filtered pool, so documents outside the pool can neither be returned nor
//! influence a score: document count, document frequencies and the average
//! length are all measured over the pool (the pool's size and length are
//! cached per filter until the next commit).
//!
//! Durability: writes are staged until [`Bm25Index::commit`], which stores
//! the store's sequence number as tantivy's commit payload in the same
//! atomic `meta.json` swap as the data. A crash before that leaves the index
//! at its previous commit, and [`Bm25Index::committed_seq`] tells the store
//! which journal entries to replay. Adding an existing chunk id replaces it
//! and deleting a missing one is a no-op, so replays are safe.
//!
//! BM25 parameters: tantivy fixes k1 = 1.2 and b = 0.75 (the classic
//! Robertson values; rank-bm25, which the seed used, defaults to k1 = 1.5).
//! What is tunable here is the analysis: tantivy's `en_stem` chain (split on
//! non-alphanumerics, drop tokens over 40 bytes, lowercase, Snowball English
//! stemmer) plus ASCII folding so `naïve` matches `naive`. Repeated query
//! words count once per repetition, as in classic BM25 query term frequency.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use roaring::RoaringBitmap;
use tantivy::collector::{Collector, Count, SegmentCollector, TopDocs};
use tantivy::columnar::Column;
use tantivy::directory::MmapDirectory;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::{
    DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, SegmentOrdinal, SegmentReader,
    TantivyDocument, TantivyError, Term,
};
use thiserror::Error;

use super::{field_term, ChunkId, Filter, IndexDoc};

/// Name under which the text analyzer is registered on the index.
const ANALYZER: &str = "jarvis_en";
/// Writer heap: tantivy flushes a segment when it fills. 64 MB keeps
/// segments reasonably large during a reindex without hogging memory.
const WRITER_MEMORY: usize = 64 * 1024 * 1024;

/// What went wrong in the BM25 index, and what to do about it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Bm25Error {
    /// The directory could not be created or opened.
    #[error("cannot open the BM25 index directory {path}: {source}; check it exists and is writable, or delete it and run `jarvis kb reindex`")]
    Open {
        /// The index directory.
        path: PathBuf,
        /// The underlying cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The index on disk has another schema (an older or newer Jarvis).
    #[error(
        "the BM25 index at {path} was built with a different schema ({detail}); run `jarvis kb reindex` to rebuild it"
    )]
    SchemaMismatch {
        /// The index directory.
        path: PathBuf,
        /// Tantivy's description of the mismatch.
        detail: String,
    },
    /// Another writer holds the index lock.
    #[error("the BM25 index at {path} is locked by another writer; only one Jarvis process may own the data directory, so stop the other one (`jarvis serve` / `jarvis sync`) and retry")]
    Locked {
        /// The index directory.
        path: PathBuf,
    },
    /// The commit payload is not a sequence number.
    #[error("the BM25 index commit payload {payload:?} is not a sequence number, so the index is damaged; run `jarvis kb reindex`")]
    BadPayload {
        /// The payload found.
        payload: String,
    },
    /// Any other tantivy failure.
    #[error("BM25 index failed while trying to {action}: {source}; if it persists, run `jarvis kb doctor`")]
    Tantivy {
        /// What the index was doing.
        action: &'static str,
        /// The underlying tantivy error.
        #[source]
        source: TantivyError,
    },
}

impl Bm25Error {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            Bm25Error::Open { .. } => ErrorKind::Unavailable,
            Bm25Error::SchemaMismatch { .. } | Bm25Error::Locked { .. } => ErrorKind::Conflict,
            Bm25Error::BadPayload { .. } | Bm25Error::Tantivy { .. } => ErrorKind::Internal,
        }
    }
}

type Result<T> = std::result::Result<T, Bm25Error>;

fn tantivy_err(action: &'static str) -> impl FnOnce(TantivyError) -> Bm25Error {
    move |source| Bm25Error::Tantivy { action, source }
}

/// The schema's fields, resolved once.
#[derive(Debug, Clone, Copy)]
struct Fields {
    chunk_id: Field,
    text: Field,
    source: Field,
    visibility: Field,
    doc_type: Field,
    annotation_kind: Field,
    category: Field,
    status: Field,
    entity: Field,
    tag: Field,
    kv: Field,
}

fn build_schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let chunk_id = b.add_u64_field(
        "chunk_id",
        NumericOptions::default().set_indexed().set_fast().set_stored(),
    );
    // Frequencies but no positions: queries are bags of words, never phrases.
    let text_opts = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let text = b.add_text_field("text", text_opts);
    // Filter fields: raw (untokenized) terms, matched exactly.
    let fields = Fields {
        chunk_id,
        text,
        source: b.add_text_field("source", STRING),
        visibility: b.add_text_field("visibility", STRING),
        doc_type: b.add_text_field("doc_type", STRING),
        annotation_kind: b.add_text_field("annotation_kind", STRING),
        category: b.add_text_field("category", STRING),
        status: b.add_text_field("status", STRING),
        entity: b.add_text_field("entity", STRING),
        // Multi-valued: one term per tag, so `remote` never matches `remote-first`.
        tag: b.add_text_field("tag", STRING),
        // Multi-valued: one `x_key=value` term per extra field.
        kv: b.add_text_field("kv", STRING),
    };
    (b.build(), fields)
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// A persistent BM25 index over chunk texts with metadata filters.
pub struct Bm25Index {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: IndexWriter<TantivyDocument>,
    fields: Fields,
    pool_cache: PoolCache,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Bm25Index {
    /// Opens the index in `dir`, creating the directory and an empty index
    /// if needed. Takes tantivy's writer lock for as long as it lives.
    pub fn open_or_create(dir: &Path) -> Result<Self> {
        let open_err = |source: Box<dyn std::error::Error + Send + Sync>| Bm25Error::Open {
            path: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(Box::new(e)))?;
        let directory = MmapDirectory::open(dir).map_err(|e| open_err(Box::new(e)))?;
        let (schema, fields) = build_schema();
        let index = Index::open_or_create(directory, schema).map_err(|e| match e {
            TantivyError::SchemaError(detail) => Bm25Error::SchemaMismatch {
                path: dir.to_owned(),
                detail,
            },
            other => open_err(Box::new(other)),
        })?;
        index.tokenizers().register(ANALYZER, analyzer());
        let writer = index.writer_with_num_threads(1, WRITER_MEMORY).map_err(|e| match e {
            TantivyError::LockFailure(..) => Bm25Error::Locked { path: dir.to_owned() },
            other => Bm25Error::Tantivy {
                action: "open the index writer",
                source: other,
            },
        })?;
        // A process killed mid-commit leaves files tantivy wrote but never
        // committed (e.g. `<segment>.<opstamp>.del`). The next writer reuses
        // those opstamps, so its commit would collide with the leftovers
        // ("FileAlreadyExists"). Collect them before any write.
        writer
            .garbage_collect_files()
            .wait()
            .map_err(tantivy_err("remove files left by an interrupted commit"))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(tantivy_err("open the index reader"))?;
        tracing::debug!(path = %dir.display(), "opened BM25 index");
        Ok(Self {
            path: dir.to_owned(),
            index,
            reader,
            writer,
            fields,
            pool_cache: PoolCache::default(),
        })
    }

    /// Stages `docs` for the next commit. A chunk id already in the index
    /// (committed or staged earlier) is replaced, not duplicated.
    pub fn add(&mut self, docs: &[IndexDoc]) -> Result<()> {
        let f = self.fields;
        for d in docs {
            // Deletes only hit documents added before them, so delete-then-add
            // within one batch replaces exactly the old version.
            self.writer.delete_term(Term::from_field_u64(f.chunk_id, d.chunk_id.0));
            let mut doc = TantivyDocument::default();
            doc.add_u64(f.chunk_id, d.chunk_id.0);
            doc.add_text(f.text, &d.text);
            doc.add_text(f.source, &d.source);
            doc.add_text(f.visibility, &d.visibility);
            doc.add_text(f.doc_type, &d.doc_type);
            let optional = [
                (f.annotation_kind, &d.annotation_kind),
                (f.category, &d.category),
                (f.status, &d.status),
                (f.entity, &d.entity),
            ];
            for (field, value) in optional {
                if let Some(v) = value {
                    doc.add_text(field, v);
                }
            }
            for tag in &d.tags {
                doc.add_text(f.tag, tag);
            }
            for (k, v) in &d.fields {
                doc.add_text(f.kv, field_term(k, v));
            }
            self.writer.add_document(doc).map_err(tantivy_err("add a document"))?;
        }
        Ok(())
    }

    /// Stages deletion of `ids`; ids not in the index are ignored.
    pub fn delete_chunks(&mut self, ids: &[ChunkId]) {
        for id in ids {
            self.writer
                .delete_term(Term::from_field_u64(self.fields.chunk_id, id.0));
        }
    }

    /// Stages deletion of every document (a full rebuild starts here).
    pub fn clear(&mut self) -> Result<()> {
        self.writer
            .delete_all_documents()
            .map_err(tantivy_err("clear the index"))?;
        Ok(())
    }

    /// Drops every staged change, back to the last commit.
    pub fn discard_uncommitted(&mut self) -> Result<()> {
        self.writer
            .rollback()
            .map_err(tantivy_err("roll back staged changes"))?;
        Ok(())
    }

    /// Makes every staged change durable and visible, recording `seq` (the
    /// store's sequence number these changes bring the index up to) in the
    /// same atomic commit. Not cancellable: it either happens or it doesn't.
    pub fn commit(&mut self, seq: u64) -> Result<()> {
        let mut prepared = self.writer.prepare_commit().map_err(tantivy_err("prepare a commit"))?;
        // Crash tests kill the process here, after tantivy wrote this
        // commit's files but before meta.json names them.
        if std::env::var("JARVIS_FAILPOINT").is_ok_and(|v| v == "bm25_prepared") {
            std::process::abort();
        }
        prepared.set_payload(&seq.to_string());
        prepared.commit().map_err(tantivy_err("commit"))?;
        self.reader
            .reload()
            .map_err(tantivy_err("reload the reader after a commit"))?;
        tracing::debug!(seq, "BM25 index committed");
        Ok(())
    }

    /// The sequence number recorded by the last commit, or `None` for an
    /// index that was never committed.
    pub fn committed_seq(&self) -> Result<Option<u64>> {
        let metas = self
            .index
            .load_metas()
            .map_err(tantivy_err("read the commit metadata"))?;
        match metas.payload {
            None => Ok(None),
            Some(p) => p.parse().map(Some).map_err(|_| Bm25Error::BadPayload { payload: p }),
        }
    }

    /// Number of committed chunks.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// True when no chunk is committed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every committed chunk id, ascending (for consistency checks).
    pub fn all_chunk_ids(&self) -> Result<Vec<ChunkId>> {
        let searcher = self.reader.searcher();
        let mut ids = Vec::with_capacity(usize::try_from(searcher.num_docs()).unwrap_or(0));
        for segment in searcher.segment_readers() {
            let column = segment
                .fast_fields()
                .u64("chunk_id")
                .map_err(tantivy_err("read chunk ids"))?;
            ids.extend(segment.doc_ids_alive().filter_map(|doc| column.first(doc)).map(ChunkId));
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// The best `limit` chunks for `query_text` among those `filter` allows,
    /// best first, with their BM25 scores. Any user text is accepted: it is
    /// tokenized like the indexed text, so quotes, colons, `AND` or stray
    /// parentheses are just words or separators, never syntax.
    pub fn search(&self, query_text: &str, filter: &Filter, limit: usize) -> Result<Vec<(ChunkId, f32)>> {
        let terms = self.query_terms(query_text);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let filter_clauses = self.filter_clauses(filter);

        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(terms.len());
        for (term, count) in &terms {
            let q: Box<dyn Query> = Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
            let q: Box<dyn Query> = if *count > 1 {
                Box::new(BoostQuery::new(q, *count as f32))
            } else {
                q
            };
            should.push((Occur::Should, q));
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(BooleanQuery::new(should)))];
        clauses.extend(filter_clauses.iter().map(|q| (Occur::Must, q.box_clone())));
        let query = BooleanQuery::new(clauses);
        let collector = TopDocs::with_limit(limit).order_by_score();

        let hits = if filter_clauses.is_empty() {
            searcher.search(&query, &collector)
        } else {
            let stats = PoolStatistics::compute(
                &searcher,
                &self.pool_cache,
                filter,
                &filter_clauses,
                &terms,
                self.fields.text,
            )?;
            if stats.docs == 0 {
                return Ok(Vec::new());
            }
            searcher.search_with_statistics_provider(&query, &collector, &stats)
        }
        .map_err(tantivy_err("run a search"))?;

        let mut columns = HashMap::new();
        let mut out = Vec::with_capacity(hits.len());
        for (score, addr) in hits {
            let column = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => v.insert(
                    searcher
                        .segment_reader(addr.segment_ord)
                        .fast_fields()
                        .u64("chunk_id")
                        .map_err(tantivy_err("read chunk ids"))?,
                ),
            };
            if let Some(id) = column.first(addr.doc_id) {
                out.push((ChunkId(id), score));
            }
        }
        Ok(out)
    }

    /// The ids of every committed chunk `filter` allows, as a bitmap ready
    /// to pass to the vector index as its candidates. The filter fields live
    /// here anyway, so this spares the store a scan of its own. Ids above
    /// `u32::MAX` (which the store never allocates) are left out.
    pub fn filter_ids(&self, filter: &Filter) -> Result<RoaringBitmap> {
        let searcher = self.reader.searcher();
        let clauses: Vec<(Occur, Box<dyn Query>)> = self
            .filter_clauses(filter)
            .into_iter()
            .map(|q| (Occur::Must, q))
            .collect();
        let query: Box<dyn Query> = if clauses.is_empty() {
            Box::new(AllQuery)
        } else {
            Box::new(BooleanQuery::new(clauses))
        };
        searcher
            .search(query.as_ref(), &IdBitmap)
            .map_err(tantivy_err("collect the filtered chunk ids"))
    }

    /// Analyzed query terms with their repetition counts, in a stable order.
    fn query_terms(&self, text: &str) -> BTreeMap<Term, usize> {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut terms = BTreeMap::new();
        while let Some(token) = stream.next() {
            *terms
                .entry(Term::from_field_text(self.fields.text, &token.text))
                .or_insert(0) += 1;
        }
        terms
    }

    /// One scoreless `Must`-able query per filter condition.
    fn filter_clauses(&self, filter: &Filter) -> Vec<Box<dyn Query>> {
        let f = self.fields;
        let exact = |field: Field, value: &str| -> Box<dyn Query> {
            Box::new(ConstScoreQuery::new(
                Box::new(TermQuery::new(
                    Term::from_field_text(field, value),
                    IndexRecordOption::Basic,
                )),
                0.0,
            ))
        };
        let mut out = Vec::new();
        let single = [
            (f.visibility, &filter.visibility),
            (f.source, &filter.source),
            (f.annotation_kind, &filter.annotation_kind),
            (f.category, &filter.category),
            (f.status, &filter.status),
            (f.entity, &filter.entity),
        ];
        for (field, value) in single {
            if let Some(v) = value {
                out.push(exact(field, v));
            }
        }
        match filter.doc_types.as_slice() {
            [] => {}
            [one] => out.push(exact(f.doc_type, one)),
            many => {
                let any: Vec<(Occur, Box<dyn Query>)> =
                    many.iter().map(|t| (Occur::Should, exact(f.doc_type, t))).collect();
                out.push(Box::new(ConstScoreQuery::new(Box::new(BooleanQuery::new(any)), 0.0)));
            }
        }
        for tag in &filter.tags {
            out.push(exact(f.tag, tag));
        }
        for (k, v) in &filter.fields {
            out.push(exact(f.kv, &field_term(k, v)));
        }
        out
    }
}

/// BM25 statistics computed over the filtered pool only, so that chunks a
/// search may not see cannot shift the scores of those it may.
struct PoolStatistics {
    docs: u64,
    tokens: u64,
    doc_freqs: HashMap<Term, u64>,
}

impl PoolStatistics {
    fn compute(
        searcher: &Searcher,
        pool_cache: &PoolCache,
        filter: &Filter,
        filter_clauses: &[Box<dyn Query>],
        terms: &BTreeMap<Term, usize>,
        text: Field,
    ) -> Result<Self> {
        let conjunction = |extra: Option<&Term>| {
            let mut clauses: Vec<(Occur, Box<dyn Query>)> =
                filter_clauses.iter().map(|q| (Occur::Must, q.box_clone())).collect();
            if let Some(t) = extra {
                clauses.push((
                    Occur::Must,
                    Box::new(TermQuery::new(t.clone(), IndexRecordOption::Basic)),
                ));
            }
            BooleanQuery::new(clauses)
        };
        let (docs, tokens) = pool_cache.get_or_compute(searcher, filter, || {
            searcher
                .search(&conjunction(None), &PoolLength { field: text })
                .map_err(tantivy_err("measure the filtered pool"))
        })?;
        let mut doc_freqs = HashMap::with_capacity(terms.len());
        if docs > 0 {
            for term in terms.keys() {
                let n = searcher
                    .search(&conjunction(Some(term)), &Count)
                    .map_err(tantivy_err("count term frequencies in the filtered pool"))?;
                doc_freqs.insert(term.clone(), n as u64);
            }
        }
        Ok(Self {
            docs,
            tokens: tokens.max(1),
            doc_freqs,
        })
    }
}

/// Remembers each filter's pool size and length for the current searcher
/// generation: the same few filters (public-only, everything) come back on
/// almost every query, and measuring a pool is a pass over its documents.
#[derive(Default)]
struct PoolCache {
    /// (searcher generation, filter → (pool docs, pool tokens)).
    inner: Mutex<(u64, PoolSizes)>,
}

type PoolSizes = HashMap<Filter, (u64, u64)>;

impl PoolCache {
    const MAX_ENTRIES: usize = 64;

    fn get_or_compute(
        &self,
        searcher: &Searcher,
        filter: &Filter,
        compute: impl FnOnce() -> Result<(u64, u64)>,
    ) -> Result<(u64, u64)> {
        let generation = searcher.generation().generation_id();
        if let Ok(guard) = self.inner.lock() {
            if guard.0 == generation {
                if let Some(hit) = guard.1.get(filter) {
                    return Ok(*hit);
                }
            }
        }
        let value = compute()?;
        // A poisoned lock only loses the cache, never correctness.
        if let Ok(mut guard) = self.inner.lock() {
            if guard.0 != generation || guard.1.len() >= Self::MAX_ENTRIES {
                *guard = (generation, HashMap::new());
            }
            guard.1.insert(filter.clone(), value);
        }
        Ok(value)
    }
}

/// Collects the chunk ids of matching docs into a bitmap.
struct IdBitmap;

struct SegmentIdBitmap {
    ids: Column<u64>,
    out: RoaringBitmap,
}

impl Collector for IdBitmap {
    type Fruit = RoaringBitmap;
    type Child = SegmentIdBitmap;

    fn for_segment(&self, _: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<Self::Child> {
        Ok(SegmentIdBitmap {
            ids: segment.fast_fields().u64("chunk_id")?,
            out: RoaringBitmap::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<RoaringBitmap>) -> tantivy::Result<RoaringBitmap> {
        Ok(fruits.into_iter().fold(RoaringBitmap::new(), |acc, b| acc | b))
    }
}

impl SegmentCollector for SegmentIdBitmap {
    type Fruit = RoaringBitmap;

    fn collect(&mut self, doc: DocId, _score: Score) {
        if let Some(id) = self.ids.first(doc).and_then(|id| u32::try_from(id).ok()) {
            self.out.insert(id);
        }
    }

    fn harvest(self) -> RoaringBitmap {
        self.out
    }
}

/// Collects (document count, total tokens in `field`) over matching docs.
struct PoolLength {
    field: Field,
}

struct SegmentPoolLength {
    norms: FieldNormReader,
    docs: u64,
    tokens: u64,
}

impl Collector for PoolLength {
    type Fruit = (u64, u64);
    type Child = SegmentPoolLength;

    fn for_segment(&self, _: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<Self::Child> {
        Ok(SegmentPoolLength {
            norms: segment.get_fieldnorms_reader(self.field)?,
            docs: 0,
            tokens: 0,
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<(u64, u64)>) -> tantivy::Result<(u64, u64)> {
        Ok(fruits.into_iter().fold((0, 0), |acc, f| (acc.0 + f.0, acc.1 + f.1)))
    }
}

impl SegmentCollector for SegmentPoolLength {
    type Fruit = (u64, u64);

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.docs += 1;
        self.tokens += u64::from(self.norms.fieldnorm(doc));
    }

    fn harvest(self) -> (u64, u64) {
        (self.docs, self.tokens)
    }
}

impl Bm25StatisticsProvider for PoolStatistics {
    fn total_num_tokens(&self, _field: Field) -> tantivy::Result<u64> {
        Ok(self.tokens)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        // Tantivy asserts doc_freq <= total_num_docs; unknown terms (none are
        // expected) count as absent.
        Ok(self.doc_freqs.get(term).copied().unwrap_or(0).min(self.docs))
    }
}

#[cfg(test)]
#[path = "bm25_tests.rs"]
mod tests;
