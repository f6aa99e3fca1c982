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

use roaring::RoaringBitmap;
use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, TantivyError, Term};

use super::{field_term, ChunkId, Filter, IndexDoc};

/// What an exact (unstemmed) key match adds in the exact-name and
/// exact-heading legs: more than any BM25 body score, so it orders first.
const EXACT_KEY_SCORE: f32 = 1000.0;
/// Name under which the text analyzer is registered on the index.
const ANALYZER: &str = "jarvis_en";
/// Writer heap: tantivy flushes a segment when it fills. 64 MB keeps
/// segments reasonably large during a reindex without hogging memory.
const WRITER_MEMORY: usize = 64 * 1024 * 1024;

pub use super::bm25_error::Bm25Error;
use super::bm25_error::{tantivy_err, Result};

/// The schema's fields, resolved once.
#[derive(Debug, Clone, Copy)]
struct Fields {
    chunk_id: Field,
    text: Field,
    title: Field,
    /// A title that describes the content rather than names the document
    /// (a paper's): see [`IndexDoc::headlines`].
    headline: Field,
    aliases: Field,
    headings: Field,
    authors: Field,
    /// Untokenized normalised names (titles and aliases) for the exact-name
    /// signal: one term per name, see [`name_key`].
    name_key: Field,
    /// Untokenized normalised headings of the chunk's breadcrumb, for the
    /// exact-heading signal (an Obsidian link to `Note#Heading` names it).
    heading_key: Field,
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

/// How much a query word matching each text field counts, relative to the
/// body. A name is a short, deliberate handle for the whole document, so a
/// word there says more than the same word in a passage; headings describe
/// a section, less than a title. A headline (a paper's title) is different:
/// it is the authors' one-line summary of the content, already scored once
/// in the body through the embedded `title — authors` header, so boosting
/// it again over-weights its words against the abstract (measured on
/// SciFact). Its default is 0, which leaves it out of the query: the exact
/// title still finds the paper through the exact-name leg. A zero boost
/// always drops its field from the query. The defaults were tuned on the
/// Obsidian help vault's known-item sets and checked on SciFact
/// (docs/design/knowledge-base.md, "Retrieval fields", says what was measured).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldBoosts {
    pub body: f32,
    /// A document's names: a note's title and file stem, a chat's or a
    /// digest's title.
    pub title: f32,
    /// A paper's title (see the type's docs).
    pub headline: f32,
    pub aliases: f32,
    pub headings: f32,
    pub authors: f32,
}

impl Default for FieldBoosts {
    fn default() -> Self {
        FieldBoosts {
            body: 1.0,
            title: 3.0,
            headline: 0.0,
            aliases: 3.0,
            headings: 1.5,
            authors: 2.0,
        }
    }
}

impl Fields {
    /// Every text field a query can be matched against, with its boost.
    fn weighted(&self, b: &FieldBoosts) -> [(Field, f32); 6] {
        [
            (self.text, b.body),
            (self.title, b.title),
            (self.headline, b.headline),
            (self.aliases, b.aliases),
            (self.headings, b.headings),
            (self.authors, b.authors),
        ]
    }
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
    let text = b.add_text_field("text", text_opts.clone());
    let title = b.add_text_field("title", text_opts.clone());
    let headline = b.add_text_field("headline", text_opts.clone());
    let aliases = b.add_text_field("aliases", text_opts.clone());
    let headings = b.add_text_field("headings", text_opts.clone());
    let authors = b.add_text_field("authors", text_opts);
    // Filter fields: raw (untokenized) terms, matched exactly.
    let fields = Fields {
        chunk_id,
        text,
        title,
        headline,
        aliases,
        headings,
        authors,
        name_key: b.add_text_field("name_key", STRING),
        heading_key: b.add_text_field("heading_key", STRING),
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

/// A name (title, alias, or a whole query) reduced to what the exact-name
/// signal compares: lowercased, accents folded, split on anything that is
/// not a letter or digit, words joined by one space. `Advanced  Markdown`,
/// `advanced markdown` and `Advanced-Markdown` share the key
/// `advanced markdown`; `Café` and `cafe` too. No stemming: this is the
/// *whole* name, so `Bases` must not equal `base`.
pub fn name_key(text: &str) -> String {
    let mut analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build();
    let mut stream = analyzer.token_stream(text);
    let mut out = String::with_capacity(text.len());
    while let Some(token) = stream.next() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&token.text);
    }
    out
}

/// The looser twin of [`name_key`]: the same words stemmed, behind a `~`
/// so the two kinds of key never collide in the index. `Pop-out windows`
/// and `pop-out window` share it; the exact-name signal ranks a stemmed
/// match below every exact one, so `Bases` still prefers a note named
/// `Bases` to one named `Base`.
pub fn stemmed_key(text: &str) -> String {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = String::from("~");
    while let Some(token) = stream.next() {
        if out.len() > 1 {
            out.push(' ');
        }
        out.push_str(&token.text);
    }
    if out.len() > 1 {
        out
    } else {
        String::new()
    }
}

/// Both keys of a name, the empty ones left out.
fn keys_of(name: &str) -> impl Iterator<Item = String> {
    [name_key(name), stemmed_key(name)]
        .into_iter()
        .filter(|k| !k.is_empty())
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
    boosts: FieldBoosts,
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
            boosts: FieldBoosts::default(),
            pool_cache: PoolCache::default(),
        })
    }

    /// Replaces the field boosts searches use (for tuning; the defaults are
    /// what ships).
    pub fn set_boosts(&mut self, boosts: FieldBoosts) {
        self.boosts = boosts;
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
            for name in &d.titles {
                doc.add_text(f.title, name);
            }
            for headline in &d.headlines {
                doc.add_text(f.headline, headline);
            }
            for alias in &d.aliases {
                doc.add_text(f.aliases, alias);
            }
            doc.add_text(f.headings, &d.headings);
            doc.add_text(f.authors, &d.authors);
            // A headline is matched whole like a name: pasting a paper's exact
            // title is a known-item query.
            let mut keys: Vec<String> = d
                .titles
                .iter()
                .chain(&d.headlines)
                .chain(&d.aliases)
                .flat_map(|n| keys_of(n))
                .collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                doc.add_text(f.name_key, k);
            }
            // The breadcrumb is `H1 › H2 › H3`; each heading is a key.
            let mut heads: Vec<String> = d.headings.split('›').flat_map(keys_of).collect();
            heads.sort();
            heads.dedup();
            for k in heads {
                doc.add_text(f.heading_key, k);
            }
            doc.add_text(f.source, &d.source);
            doc.add_text(f.visibility, d.visibility.as_str());
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
            self.writer
                .add_document(doc)
                .map_err(|e| self.located(tantivy_err("add a document")(e)))?;
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
        self.commit_staged(seq).map_err(|e| self.located(e))
    }

    /// A write that ran out of disk space says so, naming this index.
    /// tantivy's indexing worker dies on an I/O error and the writer then
    /// reports only that it was killed, so a writer failure with the disk
    /// nearly full counts as a full disk too.
    fn located(&self, e: Bm25Error) -> Bm25Error {
        match e {
            Bm25Error::Tantivy { ref source, .. }
                if crate::error_kind::is_disk_full(source)
                    || (matches!(source, TantivyError::ErrorInThread(_))
                        && crate::error_kind::free_bytes(&self.path)
                            .is_some_and(|b| b < crate::error_kind::NEARLY_FULL_BYTES)) =>
            {
                Bm25Error::DiskFull {
                    path: self.path.clone(),
                }
            }
            other => other,
        }
    }

    fn commit_staged(&mut self, seq: u64) -> Result<()> {
        if crate::failpoint::hit("bm25_commit_disk_full") {
            return Err(tantivy_err("commit")(TantivyError::IoError(std::sync::Arc::new(
                std::io::Error::from_raw_os_error(28),
            ))));
        }
        let mut prepared = self.writer.prepare_commit().map_err(tantivy_err("prepare a commit"))?;
        // Crash tests kill the process here, after tantivy wrote this
        // commit's files but before meta.json names them.
        crate::failpoint::abort_at("bm25_prepared");
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
    ///
    /// Every query word is looked up in each text field (body, title,
    /// headline, aliases, headings, authors) whose boost is not zero, and
    /// the field scores are summed, each multiplied by its boost
    /// ([`FieldBoosts`]): a word in the title adds to the same word in the
    /// body rather than replacing it.
    pub fn search(&self, query_text: &str, filter: &Filter, limit: usize) -> Result<Vec<(ChunkId, f32)>> {
        let words: Vec<(String, f32)> = query_words(query_text)
            .into_iter()
            .map(|(w, n)| (w, n as f32))
            .collect();
        self.search_terms(&words, filter, limit)
    }

    /// [`Self::search`] for words already analysed (see [`analyze`]), each
    /// with its own weight: the form a query expansion (pseudo-relevance
    /// feedback) produces. Weights that are not finite and > 0 drop the word.
    pub fn search_terms(&self, words: &[(String, f32)], filter: &Filter, limit: usize) -> Result<Vec<(ChunkId, f32)>> {
        let words: Vec<&(String, f32)> = words.iter().filter(|(_, w)| w.is_finite() && *w > 0.0).collect();
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let filter_clauses = self.filter_clauses(filter);
        let weighted: Vec<(Field, f32)> = self
            .fields
            .weighted(&self.boosts)
            .into_iter()
            .filter(|(_, boost)| *boost > 0.0)
            .collect();

        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(words.len() * weighted.len());
        let mut terms = Vec::with_capacity(words.len() * weighted.len());
        for (word, count) in words {
            for &(field, boost) in &weighted {
                let term = Term::from_field_text(field, word);
                let q: Box<dyn Query> = Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs));
                let weight = boost * *count;
                let q: Box<dyn Query> = if (weight - 1.0).abs() > f32::EPSILON {
                    Box::new(BoostQuery::new(q, weight))
                } else {
                    q
                };
                should.push((Occur::Should, q));
                terms.push(term);
            }
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(BooleanQuery::new(should)))];
        clauses.extend(filter_clauses.iter().map(|q| (Occur::Must, q.box_clone())));
        let query = BooleanQuery::new(clauses);
        let hits = self.top_docs(&searcher, &query, filter, &filter_clauses, &terms, limit)?;
        hits.into_iter().map(|(score, id)| Ok((id, score))).collect()
    }

    /// Chunks whose document has a title or alias equal to the whole query
    /// (compared by [`name_key`]), among those `filter` allows: at most
    /// `limit`, the chunks that also match the query's words best first.
    /// This is the exact-name signal fusion weighs strongly; it lives in the
    /// same documents and behind the same filter clauses as every other
    /// field, so a private note's alias can only match inside a pool that
    /// includes private notes.
    pub fn exact_name_matches(&self, query_text: &str, filter: &Filter, limit: usize) -> Result<Vec<ChunkId>> {
        self.exact_key_matches(self.fields.name_key, query_text, filter, limit)
    }

    /// Chunks under a heading (anywhere in their breadcrumb) equal to the
    /// whole query, compared by [`name_key`], among those `filter` allows:
    /// the exact-heading signal, for queries that name a section the way a
    /// `[[Note#Heading]]` link does.
    pub fn exact_heading_matches(&self, query_text: &str, filter: &Filter, limit: usize) -> Result<Vec<ChunkId>> {
        self.exact_key_matches(self.fields.heading_key, query_text, filter, limit)
    }

    fn exact_key_matches(
        &self,
        key_field: Field,
        query_text: &str,
        filter: &Filter,
        limit: usize,
    ) -> Result<Vec<ChunkId>> {
        let key = name_key(query_text);
        if key.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let filter_clauses = self.filter_clauses(filter);
        // An exact key scores far above any body score, a stemmed one adds
        // nothing: every exact match ranks before every stemmed-only one.
        let key_query = |k: &str, score: f32| -> (Occur, Box<dyn Query>) {
            (
                Occur::Should,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(key_field, k),
                        IndexRecordOption::Basic,
                    )),
                    score,
                )),
            )
        };
        let mut names = vec![key_query(&key, EXACT_KEY_SCORE)];
        let stemmed = stemmed_key(query_text);
        if !stemmed.is_empty() {
            names.push(key_query(&stemmed, 0.0));
        }
        let name: Box<dyn Query> = Box::new(BooleanQuery::new(names));
        // Ordering among a note's chunks: by the body/heading words, so the
        // passage that talks about the name comes first.
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let mut terms = Vec::new();
        for (word, count) in query_words(query_text) {
            for field in [self.fields.text, self.fields.headings] {
                let term = Term::from_field_text(field, &word);
                should.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(TermQuery::new(term.clone(), IndexRecordOption::WithFreqs)),
                        count as f32,
                    )),
                ));
                terms.push(term);
            }
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, name)];
        if !should.is_empty() {
            clauses.push((Occur::Should, Box::new(BooleanQuery::new(should))));
        }
        clauses.extend(filter_clauses.iter().map(|q| (Occur::Must, q.box_clone())));
        let query = BooleanQuery::new(clauses);
        let hits = self.top_docs(&searcher, &query, filter, &filter_clauses, &terms, limit)?;
        Ok(hits.into_iter().map(|(_, id)| id).collect())
    }

    /// Runs `query` (which already carries the filter clauses) with BM25
    /// statistics over the filtered pool, and maps hits to chunk ids.
    fn top_docs(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        filter: &Filter,
        filter_clauses: &[Box<dyn Query>],
        terms: &[Term],
        limit: usize,
    ) -> Result<Vec<(f32, ChunkId)>> {
        let collector = TopDocs::with_limit(limit).order_by_score();
        let hits = if filter_clauses.is_empty() {
            searcher.search(query, &collector)
        } else {
            let pool = self.pool(searcher, filter, filter_clauses)?;
            let stats = PoolStatistics::compute(searcher, &pool, terms)?;
            if stats.docs == 0 {
                return Ok(Vec::new());
            }
            searcher.search_with_statistics_provider(query, &collector, &stats)
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
                out.push((score, ChunkId(id)));
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
        let clauses = self.filter_clauses(filter);
        Ok(self.pool(&searcher, filter, &clauses)?.ids.clone())
    }

    /// The filter's pool in this searcher generation (measured once, then
    /// cached until the next commit).
    fn pool(
        &self,
        searcher: &Searcher,
        filter: &Filter,
        filter_clauses: &[Box<dyn Query>],
    ) -> Result<std::sync::Arc<pool::Pool>> {
        let text_fields: Vec<Field> = self.fields.weighted(&self.boosts).iter().map(|(f, _)| *f).collect();
        self.pool_cache.get(searcher, filter, filter_clauses, &text_fields)
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
        if let Some(v) = filter.visibility {
            out.push(exact(f.visibility, v.as_str()));
        }
        let single = [
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

/// `text` as the index sees it: each analysed word (lowercased, folded,
/// stemmed) with its count, in a stable order. What a caller needs to build
/// an expanded query for [`Bm25Index::search_terms`] from passages' text.
pub fn analyze(text: &str) -> BTreeMap<String, usize> {
    query_words(text)
}

/// Analyzed query words with their repetition counts, in a stable order.
fn query_words(text: &str) -> BTreeMap<String, usize> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut words = BTreeMap::new();
    while let Some(token) = stream.next() {
        *words.entry(token.text.clone()).or_insert(0) += 1;
    }
    words
}

#[path = "bm25_pool.rs"]
mod pool;
use pool::{PoolCache, PoolStatistics};

#[cfg(test)]
mod tests;
