//! Retrieval evaluation in the product: `jarvis kb eval`.
//!
//! Owns reading a query set — known-item lines `{"query", "answer"}`
//! (answer = a note's vault-relative path or a paper's source) or a
//! BEIR-style pair (queries JSONL + qrels TSV) — running every query
//! through the same [`Kb::search`] / [`Kb::search_documents`] a user gets
//! (one process, one model load), and the metrics: hit@1, hit@10, MRR@10,
//! nDCG@10 and Recall@100 for graded judgements, p50/p95 search latency.
//! Must not: print, or know any file format beyond the two above.
//!
//! Documents are named by their key ([`doc_key`]): a note's `file_path`,
//! otherwise its `source`. At chunk level a known-item query's rank is the
//! rank of the first chunk of its answer; for qrels the chunk list is
//! collapsed to distinct documents (first occurrence) before scoring, as
//! BEIR scores documents.

use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

use super::search::{doc_key, SearchRequest};
use super::{Kb, KbError, Result};
use crate::cancel::Cancel;
use crate::index::Filter;

/// Depth searched for known-item sets (hit@10, MRR@10 need 10).
const KNOWN_ITEM_DEPTH: usize = 10;
/// Depth searched for qrels sets (Recall@100).
const QRELS_DEPTH: usize = 100;

/// One query of a set, with what counts as relevant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalQuery {
    /// An identifier for reports (the line number, or the BEIR query id).
    pub id: String,
    pub query: String,
    /// Relevant document keys with their grades (known-item: one, grade 1).
    pub relevant: Vec<(String, u32)>,
}

/// A query set and whether it has graded judgements (qrels).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalSet {
    pub queries: Vec<EvalQuery>,
    /// True for BEIR qrels: nDCG@10 and Recall@100 are reported.
    pub graded: bool,
}

/// How to run an evaluation.
#[derive(Debug, Clone, Default)]
pub struct EvalOptions {
    /// Rank documents (`kb search --group docs`) instead of chunks.
    pub group_docs: bool,
    /// Restrict every search (e.g. public only); empty = everything.
    pub filter: Filter,
    /// Dense only (no BM25 leg, no fusion).
    pub dense_only: bool,
}

/// What one query did.
#[derive(Debug, Clone, Serialize)]
pub struct QueryOutcome {
    pub id: String,
    pub query: String,
    /// The relevant keys (for known-item: the answer).
    pub relevant: Vec<String>,
    /// 1-based rank of the first relevant result, if within the depth.
    pub rank: Option<usize>,
    /// The top 10 result keys, best first.
    pub top: Vec<String>,
    pub ndcg10: Option<f64>,
    pub recall100: Option<f64>,
    pub latency_ms: f64,
}

/// The whole run; its JSON is `kb eval --json` (pinned in
/// `cli/kb/tests.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub queries: usize,
    pub group_docs: bool,
    pub hit1: f64,
    pub hit10: f64,
    pub mrr10: f64,
    pub ndcg10: Option<f64>,
    pub recall100: Option<f64>,
    pub latency_p50_ms: f64,
    pub latency_p95_ms: f64,
    pub per_query: Vec<QueryOutcome>,
}

fn invalid(msg: String) -> KbError {
    KbError::Invalid(msg)
}

/// Reads a known-item file: one JSON object per line with string fields
/// `query` and `answer`; blank lines are skipped. Other fields are ignored
/// (`qid` is used as the id when present).
pub fn parse_known_items(text: &str) -> Result<EvalSet> {
    let mut queries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            invalid(format!(
                "line {n} is not JSON ({e}); each line must be {{\"query\": …, \"answer\": …}}"
            ))
        })?;
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let (Some(query), Some(answer)) = (field("query"), field("answer")) else {
            return Err(invalid(format!(
                "line {n} needs string fields \"query\" and \"answer\" (a vault-relative note path or a paper source)"
            )));
        };
        if query.trim().is_empty() || answer.trim().is_empty() {
            return Err(invalid(format!("line {n} has an empty query or answer")));
        }
        queries.push(EvalQuery {
            id: field("qid").unwrap_or_else(|| format!("line {n}")),
            query,
            relevant: vec![(answer, 1)],
        });
    }
    if queries.is_empty() {
        return Err(invalid("the query file has no queries".into()));
    }
    Ok(EvalSet { queries, graded: false })
}

/// Reads a BEIR-style pair: `queries` JSONL (`_id`, `text`) and `qrels`
/// TSV (`query-id  corpus-id  score`, an optional header line). A corpus id
/// is matched against document keys as `key_prefix + corpus-id`. Queries
/// without a positive judgement are left out, as BEIR does.
pub fn parse_beir(queries: &str, qrels: &str, key_prefix: &str) -> Result<EvalSet> {
    let mut judged: HashMap<String, Vec<(String, u32)>> = HashMap::new();
    for (i, line) in qrels.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').map(str::trim).collect();
        if line.trim().is_empty() {
            continue;
        }
        let [q, d, grade] = cols.as_slice() else {
            return Err(invalid(format!(
                "qrels line {} has {} columns; expected query-id, corpus-id, score separated by tabs",
                i + 1,
                cols.len()
            )));
        };
        let Ok(g) = grade.parse::<u32>() else {
            if i == 0 {
                continue; // the header line
            }
            return Err(invalid(format!(
                "qrels line {}: score {grade:?} is not a whole number",
                i + 1
            )));
        };
        if g > 0 {
            judged
                .entry((*q).to_string())
                .or_default()
                .push((format!("{key_prefix}{d}"), g));
        }
    }
    let mut out = Vec::new();
    for (i, line) in queries.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| invalid(format!("queries line {} is not JSON ({e})", i + 1)))?;
        let (Some(id), Some(text)) = (
            v.get("_id").and_then(|x| x.as_str()),
            v.get("text").and_then(|x| x.as_str()),
        ) else {
            return Err(invalid(format!(
                "queries line {} needs string fields \"_id\" and \"text\"",
                i + 1
            )));
        };
        if let Some(rel) = judged.remove(id) {
            out.push(EvalQuery {
                id: id.to_string(),
                query: text.to_string(),
                relevant: rel,
            });
        }
    }
    if out.is_empty() {
        return Err(invalid("no query has a positive judgement in the qrels file".into()));
    }
    Ok(EvalSet {
        queries: out,
        graded: true,
    })
}

/// Metrics of one ranked list of document keys against its judgements.
/// Returns (rank of the first relevant, nDCG@10, Recall@100). nDCG uses
/// the exponential gain `2^grade − 1` and `log2(rank + 1)` discount, the
/// ideal list being the judgements sorted by grade (BEIR / trec_eval).
pub fn score_ranking(ranked: &[String], relevant: &[(String, u32)]) -> (Option<usize>, f64, f64) {
    let grade = |k: &str| relevant.iter().find(|(r, _)| r == k).map_or(0, |(_, g)| *g);
    let rank = ranked.iter().position(|k| grade(k) > 0).map(|p| p + 1);
    let gain = |g: u32| 2f64.powi(g as i32) - 1.0;
    let discount = |i: usize| (i as f64 + 2.0).log2();
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, k)| gain(grade(k)) / discount(i))
        .sum();
    let mut ideal: Vec<u32> = relevant.iter().map(|(_, g)| *g).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, g)| gain(*g) / discount(i))
        .sum();
    let ndcg = if idcg > 0.0 { dcg / idcg } else { 0.0 };
    let found = ranked.iter().take(QRELS_DEPTH).filter(|k| grade(k) > 0).count();
    let recall = if relevant.is_empty() {
        0.0
    } else {
        found as f64 / relevant.len() as f64
    };
    (rank, ndcg, recall)
}

/// (p50, p95) by nearest rank.
pub fn percentiles(ms: &[f64]) -> (f64, f64) {
    if ms.is_empty() {
        return (0.0, 0.0);
    }
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.95))
}

/// Summarises per-query outcomes into a report.
pub fn summarise(per_query: Vec<QueryOutcome>, graded: bool, group_docs: bool) -> EvalReport {
    let n = per_query.len().max(1) as f64;
    let mean = |f: &dyn Fn(&QueryOutcome) -> f64| per_query.iter().map(f).sum::<f64>() / n;
    let hit1 = mean(&|q| f64::from(u8::from(q.rank == Some(1))));
    let hit10 = mean(&|q| f64::from(u8::from(q.rank.is_some_and(|r| r <= 10))));
    let mrr10 = mean(&|q| q.rank.filter(|r| *r <= 10).map_or(0.0, |r| 1.0 / r as f64));
    let ndcg10 = graded.then(|| mean(&|q| q.ndcg10.unwrap_or(0.0)));
    let recall100 = graded.then(|| mean(&|q| q.recall100.unwrap_or(0.0)));
    let latencies: Vec<f64> = per_query.iter().map(|q| q.latency_ms).collect();
    let (p50, p95) = percentiles(&latencies);
    EvalReport {
        queries: per_query.len(),
        group_docs,
        hit1,
        hit10,
        mrr10,
        ndcg10,
        recall100,
        latency_p50_ms: p50,
        latency_p95_ms: p95,
        per_query,
    }
}

impl Kb {
    /// Runs every query of `set` and scores it. `progress(done, total)` is
    /// called after each query; `cancel` is checked between queries.
    pub fn evaluate(
        &self,
        set: &EvalSet,
        opts: &EvalOptions,
        progress: &dyn Fn(usize, usize),
        cancel: &Cancel,
    ) -> Result<EvalReport> {
        self.evaluate_with(set, opts, None, None, progress, cancel)
    }

    /// [`Kb::evaluate`] with the fusion overridden and, when given, every
    /// query's vector already computed (`vectors[i]` for `set.queries[i]`):
    /// the tuner runs one set many times and embeds it once.
    pub(crate) fn evaluate_with(
        &self,
        set: &EvalSet,
        opts: &EvalOptions,
        fusion: Option<super::search::Fusion>,
        vectors: Option<&[Vec<f32>]>,
        progress: &dyn Fn(usize, usize),
        cancel: &Cancel,
    ) -> Result<EvalReport> {
        let depth = if set.graded { QRELS_DEPTH } else { KNOWN_ITEM_DEPTH };
        let mut per_query = Vec::with_capacity(set.queries.len());
        for (i, q) in set.queries.iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(KbError::Cancelled);
            }
            let mut req = SearchRequest::new(q.query.clone(), depth);
            req.filter = opts.filter.clone();
            req.rerank = true;
            req.fusion = fusion;
            if opts.dense_only {
                req.hybrid = Some(false);
            }
            let qv = vectors.and_then(|v| v.get(i));
            let t = Instant::now();
            let keys: Vec<String> = if opts.group_docs {
                let docs = match qv {
                    Some(v) => self.search_documents_embedded(&req, v)?,
                    None => self.search_documents(&req)?,
                };
                docs.into_iter().map(|d| d.key).collect()
            } else {
                let hits = match qv {
                    Some(v) => self.search_embedded(&req, v)?,
                    None => self.search(&req)?,
                };
                let keys: Vec<String> = hits.iter().map(|h| doc_key(&h.record).to_string()).collect();
                if set.graded {
                    distinct(keys)
                } else {
                    keys
                }
            };
            let latency_ms = t.elapsed().as_secs_f64() * 1000.0;
            let (rank, ndcg, recall) = score_ranking(&keys, &q.relevant);
            per_query.push(QueryOutcome {
                id: q.id.clone(),
                query: q.query.clone(),
                relevant: q.relevant.iter().map(|(k, _)| k.clone()).collect(),
                rank,
                top: keys.into_iter().take(10).collect(),
                ndcg10: set.graded.then_some(ndcg),
                recall100: set.graded.then_some(recall),
                latency_ms,
            });
            progress(i + 1, set.queries.len());
        }
        Ok(summarise(per_query, set.graded, opts.group_docs))
    }
}

/// Keys in order, each once (its first occurrence).
fn distinct(keys: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    keys.into_iter().filter(|k| seen.insert(k.clone())).collect()
}

#[cfg(test)]
mod tests;
