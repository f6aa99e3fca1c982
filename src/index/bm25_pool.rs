//! The filtered pool, measured once per filter and index generation.
//!
//! Part of the BM25 engine (tantivy stays inside `index/bm25*`). A search
//! with a filter scores only the pool the filter allows, with BM25
//! statistics taken over that pool; this module computes the pool once —
//! a bitset of its documents per segment, the chunk ids as a bitmap for the
//! vector index, its size and the total length of each text field — and
//! caches it until the next commit changes the searcher generation. A
//! term's document frequency in the pool is then a walk of the term's
//! postings against the bitset, with no query of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use roaring::RoaringBitmap;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, BooleanQuery, Occur, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, Score, Searcher, SegmentOrdinal, SegmentReader, Term, TERMINATED};

use super::{tantivy_err, Result};
use crate::index::Filter;

/// One filter's pool in one searcher generation.
pub(super) struct Pool {
    /// Documents in the pool.
    pub docs: u64,
    /// Total tokens of each measured text field over the pool.
    tokens: HashMap<Field, u64>,
    /// Per segment ordinal: which doc ids are in the pool.
    segments: Vec<BitSet>,
    /// The pool's chunk ids (the vector index's candidates).
    pub ids: RoaringBitmap,
}

impl Pool {
    fn measure(searcher: &Searcher, filter_clauses: &[Box<dyn Query>], fields: &[Field]) -> Result<Self> {
        let clauses: Vec<(Occur, Box<dyn Query>)> =
            filter_clauses.iter().map(|q| (Occur::Must, q.box_clone())).collect();
        let query: Box<dyn Query> = if clauses.is_empty() {
            Box::new(tantivy::query::AllQuery)
        } else {
            Box::new(BooleanQuery::new(clauses))
        };
        let mut parts = searcher
            .search(
                query.as_ref(),
                &PoolCollector {
                    fields: fields.to_vec(),
                },
            )
            .map_err(tantivy_err("measure the filtered pool"))?;
        parts.sort_by_key(|p| p.ord);
        let mut pool = Pool {
            docs: 0,
            tokens: fields.iter().map(|f| (*f, 0)).collect(),
            segments: Vec::with_capacity(parts.len()),
            ids: RoaringBitmap::new(),
        };
        for part in parts {
            pool.docs += part.docs;
            for (f, n) in fields.iter().zip(&part.tokens) {
                *pool.tokens.entry(*f).or_insert(0) += n;
            }
            // Ordinals are dense from 0, one part per segment.
            pool.segments.push(part.members);
            pool.ids |= part.ids;
        }
        Ok(pool)
    }

    /// Documents in the pool that contain `term`.
    fn doc_freq(&self, searcher: &Searcher, term: &Term) -> Result<u64> {
        let mut n = 0u64;
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let Some(members) = self.segments.get(ord) else {
                continue;
            };
            let inverted = segment
                .inverted_index(term.field())
                .map_err(tantivy_err("open a field's postings"))?;
            let postings = inverted
                .read_postings(term, IndexRecordOption::Basic)
                .map_err(|e| tantivy_err("read a term's postings")(e.into()))?;
            let Some(mut postings) = postings else { continue };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if members.contains(doc) {
                    n += 1;
                }
                doc = postings.advance();
            }
        }
        Ok(n)
    }
}

/// Remembers each filter's [`Pool`] for the current searcher generation:
/// the same few filters (public-only, everything) come back on almost every
/// query, and measuring a pool is a pass over its documents.
#[derive(Default)]
pub(super) struct PoolCache {
    /// (searcher generation, filter → pool).
    inner: Mutex<(u64, HashMap<Filter, Arc<Pool>>)>,
}

impl PoolCache {
    const MAX_ENTRIES: usize = 64;

    pub fn get(
        &self,
        searcher: &Searcher,
        filter: &Filter,
        filter_clauses: &[Box<dyn Query>],
        fields: &[Field],
    ) -> Result<Arc<Pool>> {
        let generation = searcher.generation().generation_id();
        if let Ok(guard) = self.inner.lock() {
            if guard.0 == generation {
                if let Some(hit) = guard.1.get(filter) {
                    return Ok(Arc::clone(hit));
                }
            }
        }
        let pool = Arc::new(Pool::measure(searcher, filter_clauses, fields)?);
        // A poisoned lock only loses the cache, never correctness.
        if let Ok(mut guard) = self.inner.lock() {
            if guard.0 != generation || guard.1.len() >= Self::MAX_ENTRIES {
                *guard = (generation, HashMap::new());
            }
            guard.1.insert(filter.clone(), Arc::clone(&pool));
        }
        Ok(pool)
    }
}

/// BM25 statistics over the filtered pool only, so that chunks a search may
/// not see cannot shift the scores of those it may.
pub(super) struct PoolStatistics {
    pub docs: u64,
    tokens: HashMap<Field, u64>,
    doc_freqs: HashMap<Term, u64>,
}

impl PoolStatistics {
    pub fn compute(searcher: &Searcher, pool: &Pool, terms: &[Term]) -> Result<Self> {
        let mut doc_freqs = HashMap::with_capacity(terms.len());
        if pool.docs > 0 {
            for term in terms {
                if !doc_freqs.contains_key(term) {
                    doc_freqs.insert(term.clone(), pool.doc_freq(searcher, term)?);
                }
            }
        }
        Ok(Self {
            docs: pool.docs,
            tokens: pool.tokens.clone(),
            doc_freqs,
        })
    }
}

impl Bm25StatisticsProvider for PoolStatistics {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        // Never 0: tantivy divides by it for the average length.
        Ok(self.tokens.get(&field).copied().unwrap_or(0).max(1))
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

/// Collects one segment's pool: members, chunk ids, size, field lengths.
struct PoolCollector {
    fields: Vec<Field>,
}

struct PoolPart {
    ord: SegmentOrdinal,
    members: BitSet,
    ids: RoaringBitmap,
    docs: u64,
    tokens: Vec<u64>,
}

struct SegmentPool {
    part: PoolPart,
    chunk_ids: Column<u64>,
    norms: Vec<FieldNormReader>,
}

impl Collector for PoolCollector {
    type Fruit = Vec<PoolPart>;
    type Child = SegmentPool;

    fn for_segment(&self, ord: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<SegmentPool> {
        let norms = self
            .fields
            .iter()
            .map(|f| segment.get_fieldnorms_reader(*f))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(SegmentPool {
            part: PoolPart {
                ord,
                members: BitSet::with_max_value(segment.max_doc()),
                ids: RoaringBitmap::new(),
                docs: 0,
                tokens: vec![0; self.fields.len()],
            },
            chunk_ids: segment.fast_fields().u64("chunk_id")?,
            norms,
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<Vec<PoolPart>>) -> tantivy::Result<Vec<PoolPart>> {
        Ok(fruits.into_iter().flatten().collect())
    }
}

impl SegmentCollector for SegmentPool {
    type Fruit = Vec<PoolPart>;

    fn collect(&mut self, doc: DocId, _score: Score) {
        let p = &mut self.part;
        p.members.insert(doc);
        p.docs += 1;
        for (total, norms) in p.tokens.iter_mut().zip(&self.norms) {
            *total += u64::from(norms.fieldnorm(doc));
        }
        // Ids above u32::MAX (which the store never allocates) are left out.
        if let Some(id) = self.chunk_ids.first(doc).and_then(|id| u32::try_from(id).ok()) {
            p.ids.insert(id);
        }
    }

    fn harvest(self) -> Vec<PoolPart> {
        vec![self.part]
    }
}
