//! Hybrid retrieval: filter → dense, BM25 and exact-name over the same
//! filtered pool → fusion (weighted scores by default, or reciprocal rank
//! fusion) → optional cross-encoder re-rank
//! (top `rerank_top_n`, within `rerank_budget`); and the document-level
//! view that collapses chunks into documents.
//!
//! The dense leg is exact: the int8 scan (`index::flat`) — or, above
//! `exact_scan_max`, arroy's trees (see `kb::trees`) — proposes
//! [`rescore_count`] candidates and their f32 vectors from the store rank
//! them by true cosine.
//!
//! Fusion (as RRF; weighted fusion keeps the same order of strength, see
//! [`Fusion`]): dense and BM25 count 1 each; the exact-name leg (chunks of a
//! document whose title or alias equals the whole query, see
//! `Bm25Index::exact_name_matches`) counts [`EXACT_NAME_WEIGHT`] (`KbSettings::exact_name_weight`), so a
//! document named exactly what the user typed comes first unless both other
//! legs strongly disagree.
//!
//! Privacy holds by construction: the filter becomes a candidate bitmap for
//! the int8 scan and arroy and query clauses for tantivy, so no chunk outside the pool is
//! ever scored. Every hit is then re-read from the store and checked
//! against the filter once more, so a derived index lagging behind a
//! metadata change can never widen what a search returns.

use roaring::RoaringBitmap;

use crate::index::fuse::{rrf, weighted, Leg};
use crate::index::{ChunkId, Filter, Visibility};
use crate::store::ChunkRecord;

use super::{scalar_string, split_tags, Kb, Result};

mod section;

/// RRF weight of the exact-name leg (dense and BM25 weigh 1). At 2 its rank
/// 1 alone equals being first in both other legs.
pub const EXACT_NAME_WEIGHT: f32 = 2.0;
/// RRF weight of the exact-heading leg (chunks under a heading equal to
/// the query).
pub const EXACT_HEADING_WEIGHT: f32 = 1.0;
/// What the exact-name leg's weight is multiplied by under weighted
/// fusion. The graded legs together give at most 1; at 0.5 (1.0 at the
/// default weight) an alias match tied with a document that topped both and
/// lost one help-vault alias query its first place (aliases hit@1 0.989); at
/// 0.75 every alias is first again (1.000).
pub const WEIGHTED_NAME_SCALE: f32 = 0.75;
/// How a document's score gathers its chunks' by default
/// ([`DocAggregation::Decay`]). On the help vault's anchors at the document
/// level, weighted fusion, fresh index, hit@1 / MRR@10: the best chunk
/// alone 0.735 / 0.822. Counting every chunk (the rule before sections
/// were told apart): 0.745 / 0.826 at 0.1, 0.765 / 0.837 at 0.25. Counting
/// one chunk per section: 0.765 / 0.839 at 0.2, 0.776 / 0.843 at 0.25,
/// 0.27, 0.32 and 0.35, 0.786 / 0.848 at 0.3, 0.765 / 0.838 at 0.4 and
/// 0.745 / 0.829 at 0.5 — 0.3 is the middle of the plateau (its peak is
/// one query). SciFact's papers as `kb add` stores them (each abstract cut
/// by the chunker, all pieces in one section): counting every chunk at
/// 0.25 ranked them 0.7151 (100 documents) / 0.7155 (10) against 0.7317 /
/// 0.7283 for the best chunk alone, which one chunk per section now gives.
pub const DOC_DECAY: f32 = 0.3;
/// The fusion constant `k` the knowledge base uses (`KbSettings::rrf_k`).
/// Lower than the literature's 60 (`fuse::RRF_C`, tuned on TREC pools of
/// many runs): with two main legs, a first place should count for more
/// than a tenth. Measured: SciFact hybrid nDCG@10 0.7186 at 60 → 0.7207 at
/// 30; help vault anchors (docs) MRR@10 0.805 → 0.806, hit@1 0.704 both,
/// aliases 1.000 both.
pub const RRF_K: f32 = 30.0;

/// The fewest candidates each leg (dense, BM25, exact name, exact heading)
/// returns before fusion; a search for `n` results takes `2n` when that is
/// more. Weighted fusion scales each leg between its best and its *last*
/// candidate, so the leg's depth sets the zero of the scale: with a floor
/// of 50 a search for 10 results fused differently from one for 100, and
/// ranked worse. Measured with weighted fusion at 50 % (issue 22, release
/// build): SciFact hybrid nDCG@10 for a search of 10 results 0.7296 at 50
/// → 0.7362 at 100 (0.7371 at 160); a search of 100 (depth 200) stays
/// 0.7382, Recall@100 0.9443. Help vault anchors at the chunk level
/// (depth 50 → 100) hit@1 / MRR@10 0.724 / 0.794 → 0.735 / 0.801 (0.803
/// at 160); documents (depth 160 either way) 0.765 / 0.837; aliases
/// 1.000. 100 rather than 160: nearly all of the gain for less than half
/// the extra f32 re-scores ([`rescore_count`]) and BM25 depth, on a path
/// with a latency goal.
pub const MIN_LEG: usize = 100;

/// How many of the dense leg's best candidates are re-scored in f32 (from
/// the truth store) for a search that keeps `keep` hits: twice that, and at
/// least 32 more. The int8 approximation is off by about 0.001 in cosine,
/// far less than the gap between a top-10 neighbour and the 40th, so the
/// kept hits' dense ranking is the brute-force one (the tests compare). Of
/// the rest of the leg (down to [`MIN_LEG`]) only the last candidate is
/// re-scored too (see `Kb::rescore`); the others keep their int8 scores,
/// since reading every f32 vector cost 200 random store reads a search —
/// most of its time at 1M chunks (issue 22).
pub fn rescore_count(keep: usize) -> usize {
    (keep * 2).max(keep + 32)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub n: usize,
    pub filter: Filter,
    /// Use the re-ranker if one is configured.
    pub rerank: bool,
    /// Override `[rag] hybrid` for this search (false = dense only).
    pub hybrid: Option<bool>,
    /// Override `[rag] fusion` / `dense_weight` for this search (`kb eval
    /// --tune` tries several on one set).
    pub fusion: Option<Fusion>,
}

/// How the dense and BM25 legs of a hybrid search are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion; dense weighs `2 × dense_share`, BM25
    /// `2 × (1 − dense_share)` (0.5 = both 1, the classic form).
    Rrf { dense_share: f32 },
    /// Weighted score fusion ([`crate::index::fuse::weighted`]): dense
    /// weighs `dense_share`, BM25 `1 − dense_share`; the exact-name leg
    /// adds [`WEIGHTED_NAME_SCALE`] × its RRF weight (1.5 at the default 2,
    /// more than the two graded legs can give together, so an exact title
    /// match still comes first, as with RRF) and the exact-heading leg half
    /// its weight.
    Weighted { dense_share: f32 },
}

impl Fusion {
    pub fn dense_share(self) -> f32 {
        match self {
            Fusion::Rrf { dense_share } | Fusion::Weighted { dense_share } => dense_share.clamp(0.0, 1.0),
        }
    }

    /// `rrf` or `weighted`, as `rag.fusion` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Fusion::Rrf { .. } => "rrf",
            Fusion::Weighted { .. } => "weighted",
        }
    }

    /// From `rag.fusion` and `rag.dense_weight` (percent); an unknown name
    /// is RRF.
    pub fn from_settings(name: &str, dense_percent: i64) -> Fusion {
        let dense_share = dense_percent.clamp(0, 100) as f32 / 100.0;
        match name {
            "weighted" => Fusion::Weighted { dense_share },
            _ => Fusion::Rrf { dense_share },
        }
    }
}

/// Weighted score fusion at an even share, measured against RRF (issue 22,
/// release build, quiet machine): SciFact hybrid nDCG@10 0.7207 → 0.7382;
/// help vault anchors (documents, with [`DOC_DECAY`]) hit@1 0.704 → 0.765,
/// MRR@10 0.806 → 0.837; aliases 1.000 both. Shares of 40 and 60 % both
/// scored lower on SciFact (0.7268, 0.7261).
impl Default for Fusion {
    fn default() -> Self {
        Fusion::Weighted { dense_share: 0.5 }
    }
}

impl SearchRequest {
    pub fn new(query: impl Into<String>, n: usize) -> Self {
        SearchRequest {
            query: query.into(),
            n,
            filter: Filter::default(),
            rerank: true,
            hybrid: None,
            fusion: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Hit {
    pub record: ChunkRecord,
    /// The final ordering score: cross-encoder logit when re-ranked, else
    /// the fused score (hybrid; under weighted fusion a section's best
    /// piece carries the evidence of its other pieces, see
    /// `section::pool_evidence`) or cosine similarity (dense only).
    pub score: f32,
    /// 1-based ranks in each leg, when the chunk appeared there.
    pub dense_rank: Option<usize>,
    pub bm25_rank: Option<usize>,
    /// The chunk's document has a title or alias equal to the query.
    pub name_match: bool,
    /// What the re-ranker did for the search this hit came from (the same
    /// on every hit of one search).
    pub rerank: RerankOutcome,
}

/// What the cross-encoder did for one search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankOutcome {
    /// No re-ranker configured, or the search asked for none.
    Off,
    /// The top `rerank_top_n` fused results were re-ordered by the model.
    Applied,
    /// Re-ranking would have run past `rag.rerank_budget_ms`: the results
    /// keep the fused order.
    OverBudget,
}

/// How a document's score is made from its chunks' scores in a
/// document-level search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DocAggregation {
    /// The best chunk's score.
    Max,
    /// The best chunk plus `w`× the best chunk of the second section that
    /// matched, `w²`× the third section's, …: a document that answers in
    /// several of its sections counts for more, but ever less, so a long
    /// note cannot win on bulk. Further chunks of a section already counted
    /// add nothing: a long section is cut into overlapping pieces, and
    /// those are one passage, not several (an abstract split in three is
    /// not three abstracts).
    Decay(f32),
}

/// One document in a document-level result: its best chunk stands for it.
#[derive(Debug, Clone)]
pub struct DocHit {
    /// The document's key: a note's `file_path`, otherwise its `source`.
    pub key: String,
    /// The best-ranked chunk of the document (its text and section).
    pub best: Hit,
    /// The document's score from its chunks (see [`DocAggregation`]).
    pub score: f32,
    /// Other chunks of the document among the retrieved candidates.
    pub more: usize,
}

/// The word legs' results, before fusion.
#[derive(Default)]
struct SparseLegs {
    sparse: Vec<(ChunkId, f32)>,
    exact: Vec<ChunkId>,
    heading: Vec<ChunkId>,
}

/// A chunk's section breadcrumb ("" before a document's first header):
/// with [`doc_key`], what tells the pieces of one passage apart from
/// another's, for document aggregation and for pooling.
fn section_of(rec: &ChunkRecord) -> &str {
    rec.meta_str("section").unwrap_or("")
}

/// A chunk's document key: a note's file path (all notes share `source =
/// "local"`), otherwise its source.
pub fn doc_key(rec: &ChunkRecord) -> &str {
    crate::store::doc_key(&rec.meta)
}

impl Kb {
    /// `text` embedded as a query is (for callers that compare one text
    /// with more than the index, such as the digest's taste).
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.check_model()?;
        Ok(self.query_embedder()?.embed_query(text)?)
    }

    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Hit>> {
        self.check_model()?;
        if req.n == 0 || req.query.trim().is_empty() {
            return Ok(Vec::new());
        }
        self.settle_if_idle();
        // Embed outside the index lock: it is the slow part. A write that is
        // embedding lets the query go first (see `Kb::query_embedder`).
        let embed = || -> Result<Vec<f32>> { Ok(self.query_embedder()?.embed_query(&req.query)?) };
        if !req.hybrid.unwrap_or(self.settings.hybrid) {
            return self.search_embedded(req, &embed()?);
        }
        // The BM25 legs need no query vector: they run on this thread while
        // a second one embeds the query (through the query session, whose
        // threads never spin-wait: see `embed::QUERY_THREADS`), so the legs
        // are done by the time the vector is.
        let leg = self.depths(req).2;
        let (qv, sparse) = std::thread::scope(|s| {
            let embedding = s.spawn(embed);
            let sparse = self.sparse_legs(req, leg);
            // A panic while embedding carries on here, as it would have
            // had the query been embedded on this thread.
            let qv = embedding.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (qv, sparse)
        });
        self.search_legs(req, &qv?, Some(sparse?))
    }

    /// [`Kb::search`] with the query already embedded by the configured
    /// model (`query_vector` must be `embed_query(&req.query)`): for callers
    /// that embed once and search several times, and for benchmarks that
    /// time the search apart from the model.
    pub fn search_embedded(&self, req: &SearchRequest, query_vector: &[f32]) -> Result<Vec<Hit>> {
        self.check_model()?;
        if req.n == 0 || req.query.trim().is_empty() {
            return Ok(Vec::new());
        }
        self.search_legs(req, query_vector, None)
    }

    /// Whether this search re-ranks, how many hits it keeps before the
    /// re-rank, and how deep each leg goes.
    fn depths(&self, req: &SearchRequest) -> (bool, usize, usize) {
        let reranking = req.rerank && self.reranker.is_some();
        let keep = if reranking {
            self.settings.rerank_top_n.max(req.n)
        } else {
            req.n
        };
        (reranking, keep, (keep * 2).max(MIN_LEG))
    }

    /// The legs that rank by words — BM25, the exact-name and the
    /// exact-heading matches — over the request's filter.
    fn sparse_legs(&self, req: &SearchRequest, leg: usize) -> Result<SparseLegs> {
        let ix = self.indexes();
        Ok(SparseLegs {
            sparse: ix.bm25.search(&req.query, &req.filter, leg)?,
            exact: ix.bm25.exact_name_matches(&req.query, &req.filter, leg)?,
            heading: if self.settings.exact_heading_weight > 0.0 {
                ix.bm25.exact_heading_matches(&req.query, &req.filter, leg)?
            } else {
                Vec::new()
            },
        })
    }

    /// The search from its query vector, with the word legs already run
    /// (`sparse`, by [`Kb::search`] while it embedded the query) or run
    /// here after the dense leg.
    fn search_legs(&self, req: &SearchRequest, qv: &[f32], sparse: Option<SparseLegs>) -> Result<Vec<Hit>> {
        let hybrid = req.hybrid.unwrap_or(self.settings.hybrid);
        let (reranking, keep, leg) = self.depths(req);

        let (dense, sparse, exact, heading) = {
            let mut ix = self.indexes();
            if let Err(e) = self.install_trees(&mut ix, false) {
                tracing::warn!(error = %e, "cannot install the vector trees yet; the exact scan keeps answering");
            }
            let pool: Option<RoaringBitmap> = if req.filter.is_empty() {
                None
            } else {
                Some(ix.bm25.filter_ids(&req.filter)?)
            };
            // Exact int8 scan up to the crossover; above it arroy's
            // candidates once its trees are built. Either way the exact
            // re-score below ranks them.
            let depth = leg.max(rescore_count(keep));
            let dense = match (ix.flat.as_ref(), ix.vectors.as_ref()) {
                (Some(f), Some(v)) if f.len() > self.settings.exact_scan_max => v.search(qv, pool.as_ref(), depth)?,
                (Some(f), _) => f.search(qv, pool.as_ref(), depth)?,
                (None, _) => Vec::new(),
            };
            drop(ix);
            let words = match sparse {
                Some(legs) => legs,
                None if hybrid => self.sparse_legs(req, leg)?,
                None => SparseLegs::default(),
            };
            (dense, words.sparse, words.exact, words.heading)
        };
        let dense = self.rescore(qv, dense, rescore_count(keep), leg)?;
        let dense_ids: Vec<ChunkId> = dense.iter().map(|(id, _)| *id).collect();
        let sparse_ids: Vec<ChunkId> = sparse.iter().map(|(id, _)| *id).collect();
        let fusion = req.fusion.unwrap_or_else(|| self.fusion());
        // Under weighted fusion the pieces of one section pool their
        // evidence (see `section::pool_evidence`), looked for among a few
        // more hits than are kept.
        let pooled = (hybrid && matches!(fusion, Fusion::Weighted { .. })).then(|| fusion.dense_share());
        let load = if pooled.is_some() {
            keep + keep.min(section::MARGIN)
        } else {
            keep
        };
        let ranked: Vec<(ChunkId, f32)> = if hybrid {
            let share = fusion.dense_share();
            match fusion {
                Fusion::Rrf { .. } => rrf(
                    &[
                        (&dense_ids, 2.0 * share),
                        (&sparse_ids, 2.0 * (1.0 - share)),
                        (&exact, self.settings.exact_name_weight),
                        (&heading, self.settings.exact_heading_weight),
                    ],
                    self.settings.rrf_k,
                ),
                Fusion::Weighted { .. } => weighted(&[
                    (Leg::Scored(&dense), share),
                    (Leg::Scored(&sparse), 1.0 - share),
                    (
                        Leg::Matches(&exact),
                        self.settings.exact_name_weight * WEIGHTED_NAME_SCALE,
                    ),
                    (Leg::Matches(&heading), self.settings.exact_heading_weight / 2.0),
                ]),
            }
        } else {
            dense.clone()
        };

        let mut hits: Vec<Hit> = Vec::new();
        let mut looked_beyond = 0;
        for (id, score) in ranked {
            if hits.len() >= keep {
                // Beyond the kept hits, only a possible sibling piece is
                // worth a store read: a document's chunks get consecutive
                // ids (one commit allocates them in order).
                looked_beyond += 1;
                if looked_beyond > load - keep {
                    break;
                }
                if !hits[..keep].iter().any(|h| h.record.id.abs_diff(id.0) <= section::SPAN) {
                    continue;
                }
            }
            // The store is the truth: a hit must exist and pass the filter.
            let Some(record) = self.store.get(id.0)? else { continue };
            if !matches(&req.filter, &record) {
                tracing::warn!(chunk = id.0, "an index returned a chunk outside the filter; skipped");
                continue;
            }
            hits.push(Hit {
                record,
                score,
                dense_rank: dense_ids.iter().position(|d| *d == id).map(|p| p + 1),
                bm25_rank: sparse_ids.iter().position(|d| *d == id).map(|p| p + 1),
                name_match: exact.contains(&id),
                rerank: RerankOutcome::Off,
            });
        }
        if let Some(share) = pooled {
            section::pool_evidence(&mut hits, &dense, &sparse, share);
        }
        hits.truncate(keep);
        if reranking && hits.len() > 1 {
            let outcome = self.rerank_within_budget(&req.query, &mut hits)?;
            for h in &mut hits {
                h.rerank = outcome;
            }
        }
        hits.truncate(req.n);
        Ok(hits)
    }

    /// Re-orders the first `rerank_top_n` hits by the cross-encoder, in
    /// batches, unless that would take longer than `rerank_budget`: before
    /// each batch the slowest batch so far is added to the time spent, and
    /// if that passes the budget the hits keep the fused order. Loading the
    /// model (first use) is not counted; scoring is.
    fn rerank_within_budget(&self, query: &str, hits: &mut [Hit]) -> Result<RerankOutcome> {
        let mut slot = self.reranker()?;
        let Some(ce) = slot.as_mut().and_then(|slot| slot.model.as_mut()) else {
            return Ok(RerankOutcome::Off);
        };
        let top = self.settings.rerank_top_n.min(hits.len());
        let budget = self.settings.rerank_budget;
        let started = std::time::Instant::now();
        let mut slowest = std::time::Duration::ZERO;
        let mut scores = Vec::with_capacity(top);
        let texts: Vec<&str> = hits[..top].iter().map(|h| h.record.text.as_str()).collect();
        for batch in texts.chunks(crate::embed::rerank::DEFAULT_RERANK_BATCH) {
            if started.elapsed() + slowest > budget {
                tracing::info!(
                    budget_ms = budget.as_millis() as u64,
                    spent_ms = started.elapsed().as_millis() as u64,
                    "re-ranking would exceed rag.rerank_budget_ms; keeping the fused order"
                );
                return Ok(RerankOutcome::OverBudget);
            }
            let t = std::time::Instant::now();
            scores.extend(ce.score(query, batch)?);
            if crate::failpoint::hit("rerank_slow") {
                // Tests: a model slower than any budget.
                std::thread::sleep(budget + std::time::Duration::from_millis(1));
            }
            slowest = slowest.max(t.elapsed());
        }
        if started.elapsed() > budget {
            return Ok(RerankOutcome::OverBudget);
        }
        for (h, s) in hits.iter_mut().zip(scores) {
            h.score = s;
        }
        // Stable: ties keep the fused order; the rest stay below, fused.
        hits[..top].sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(RerankOutcome::Applied)
    }

    /// The exact re-score: the best `exact` dense candidates and the last
    /// one get their f32 vectors from the store (the truth) and their cosine
    /// with the query; the rest keep their approximate scores. Best `keep`
    /// first. The last candidate is re-scored because weighted fusion puts
    /// the leg's zero at its score: left at its int8 value, that zero moved
    /// by ~0.001 and with it every fused score (help vault anchors at the
    /// chunk level, hit@1 / MRR@10: 0.735 / 0.801 with every candidate
    /// re-scored, 0.724 / 0.796 with only the best 42, 0.735 / 0.801 with
    /// the last one too). A re-scored candidate the store no longer holds is
    /// dropped (a concurrent delete); an approximate one is dropped later,
    /// when hits are read from the store.
    pub(in crate::kb) fn rescore(
        &self,
        query: &[f32],
        mut candidates: Vec<(ChunkId, f32)>,
        exact: usize,
        keep: usize,
    ) -> Result<Vec<(ChunkId, f32)>> {
        let qn = norm(query);
        let mut rest = candidates.split_off(exact.min(candidates.len()));
        candidates.extend(rest.pop());
        // Read in key order: neighbouring keys share the store's blocks.
        candidates.sort_by_key(|(id, _)| *id);
        let mut scored = Vec::with_capacity(candidates.len() + rest.len());
        for (id, _) in candidates {
            if let Some(v) = self.store.vector(id.0)? {
                let d: f32 = query.iter().zip(&v).map(|(a, b)| a * b).sum();
                scored.push((id, d / (qn * norm(&v)).max(f32::MIN_POSITIVE)));
            }
        }
        scored.extend(rest);
        // Stable: among equal scores, re-scored ones by key, then the rest
        // in the scan's order.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(keep);
        Ok(scored)
    }

    /// Document-level search: the chunk ranking collapsed into documents,
    /// best first. A document's score gathers its chunks' by
    /// `KbSettings::doc_aggregation` (by default the best chunk plus a
    /// decaying share of the next ones, never a plain sum: a long note must
    /// not win by having many mediocre passages), its best chunk stands for
    /// it, and `more` counts its other chunks
    /// among the candidates. Candidates are `n × 8` chunks (at least 80), so
    /// a document whose passages crowd the chunk list still leaves room
    /// for `n` distinct documents.
    pub fn search_documents(&self, req: &SearchRequest) -> Result<Vec<DocHit>> {
        let mut chunk_req = req.clone();
        chunk_req.n = req.n.saturating_mul(8).max(80);
        let hits = self.search(&chunk_req)?;
        Ok(group_documents_by(hits, req.n, self.settings.doc_aggregation))
    }

    /// [`Kb::search_documents`] with the query already embedded.
    pub fn search_documents_embedded(&self, req: &SearchRequest, query_vector: &[f32]) -> Result<Vec<DocHit>> {
        let mut chunk_req = req.clone();
        chunk_req.n = req.n.saturating_mul(8).max(80);
        let hits = self.search_embedded(&chunk_req, query_vector)?;
        Ok(group_documents_by(hits, req.n, self.settings.doc_aggregation))
    }

    /// Provider-aware search. For a cloud provider the results come only
    /// from public chunks; `has_private_hits` says whether private chunks
    /// would have ranked among the top results (so the caller can add its
    /// caveat, or raise a privacy stop when nothing public matched). For a
    /// local provider everything is searchable and the flag says whether
    /// any returned hit is private.
    pub fn search_with_privacy_check(&self, req: &SearchRequest, cloud: bool) -> Result<(Vec<Hit>, bool)> {
        if !cloud {
            let hits = self.search(req)?;
            let private = hits.iter().any(|h| h.record.visibility().is_private());
            return Ok((hits, private));
        }
        let wants_private = req.filter.visibility == Some(Visibility::Private);
        let mut public = req.clone();
        public.filter.visibility = Some(Visibility::Public);
        let hits = if wants_private {
            Vec::new()
        } else {
            self.search(&public)?
        };
        // The unrestricted ranking is computed here only to set the flag; its
        // chunks never leave this function.
        let mut all = req.clone();
        all.filter.visibility = None;
        all.rerank = false;
        let private = self.search(&all)?.iter().any(|h| h.record.visibility().is_private());
        Ok((hits, private))
    }
}

/// Collapses a ranked chunk list into at most `n` documents (see
/// [`Kb::search_documents`]). Pure, so its rules are tested directly.
pub fn group_documents(hits: Vec<Hit>, n: usize) -> Vec<DocHit> {
    group_documents_by(hits, n, DocAggregation::Max)
}

/// [`group_documents`] with a choice of aggregation. Hits must arrive best
/// first (the chunk ranking); documents are re-sorted by their aggregate,
/// ties kept in the order of their best chunk.
pub fn group_documents_by(hits: Vec<Hit>, n: usize, agg: DocAggregation) -> Vec<DocHit> {
    let mut docs: Vec<DocHit> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    // Per document, the sections whose best chunk has counted (Decay).
    let mut sections: Vec<Vec<String>> = Vec::new();
    for h in hits {
        let key = doc_key(&h.record).to_string();
        match index.get(&key) {
            Some(&i) => {
                let d = &mut docs[i];
                d.more += 1;
                if let DocAggregation::Decay(w) = agg {
                    // Only a section not seen yet adds: the pieces of one
                    // long section (which overlap) are one passage.
                    let seen = &mut sections[i];
                    let section = section_of(&h.record);
                    if !seen.iter().any(|s| s == section) {
                        seen.push(section.to_string());
                        d.score += w.powi(seen.len() as i32 - 1) * h.score;
                    }
                }
            }
            None => {
                sections.push(vec![section_of(&h.record).to_string()]);
                index.insert(key.clone(), docs.len());
                docs.push(DocHit {
                    key,
                    score: h.score,
                    best: h,
                    more: 0,
                });
            }
        }
    }
    // Hits arrive best first, so the first chunk of each document is its
    // best and, under Max, documents are already in order of their best
    // chunk; the sort is stable, so it only reorders under Decay.
    if agg != DocAggregation::Max {
        docs.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
    docs.truncate(n);
    docs
}

/// Whether a stored chunk passes a filter (the store-side twin of the
/// index-side filter clauses).
pub fn matches(f: &Filter, rec: &ChunkRecord) -> bool {
    let eq = |want: &Option<String>, key: &str| want.as_deref().is_none_or(|w| rec.meta_str(key) == Some(w));
    // Fail closed: a chunk without a valid visibility counts as private.
    if f.visibility.is_some_and(|w| w != rec.visibility()) {
        return false;
    }
    if !f.doc_types.is_empty() && !f.doc_types.iter().any(|t| rec.meta_str("doc_type") == Some(t.as_str())) {
        return false;
    }
    if !(eq(&f.source, "source")
        && eq(&f.annotation_kind, "annotation_kind")
        && eq(&f.category, "category")
        && eq(&f.status, "status")
        && eq(&f.entity, "entity"))
    {
        return false;
    }
    if !f.tags.is_empty() {
        let tags = rec.meta_str("tags").map(split_tags).unwrap_or_default();
        if !f.tags.iter().all(|t| tags.contains(t)) {
            return false;
        }
    }
    f.fields
        .iter()
        .all(|(k, v)| rec.meta.get(k).map(scalar_string).as_deref() == Some(v.as_str()))
}
