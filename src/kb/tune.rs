//! Tuning the fusion on the user's own golden set (`jarvis kb eval FILE
//! --tune`): every fusion (RRF, weighted scores) at every dense share from
//! 0 to 100 % in steps of 10 is run over the whole set, the queries
//! embedded once, and the one with the best score wins — nDCG@10 for graded
//! judgements (qrels), MRR@10 for known-item sets.
//! Owns: the grid, the choice among its results (ties keep what is
//! configured, then prefer RRF and a share nearer the middle, so a flat
//! set changes nothing) and the report.
//! Must not: write the configuration (the caller applies a result).

use serde::Serialize;

use super::eval::{EvalOptions, EvalReport, EvalSet};
use super::search::Fusion;
use super::{Kb, KbError, Result};
use crate::cancel::Cancel;

/// The dense shares tried, in percent.
pub const SHARES: [u32; 11] = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100];

/// Every fusion the tuner tries, RRF first.
pub fn grid() -> Vec<Fusion> {
    let mut out = Vec::with_capacity(2 * SHARES.len());
    for p in SHARES {
        out.push(Fusion::Rrf {
            dense_share: p as f32 / 100.0,
        });
    }
    for p in SHARES {
        out.push(Fusion::Weighted {
            dense_share: p as f32 / 100.0,
        });
    }
    out
}

/// One fusion as tried.
#[derive(Debug, Clone, Serialize)]
pub struct Tried {
    /// `rrf` or `weighted` (`rag.fusion`).
    pub fusion: &'static str,
    /// The dense share in percent (`rag.dense_weight`).
    pub dense_weight: u32,
    /// The score the choice is made on (see [`TuneReport::metric`]).
    pub score: f64,
    pub hit1: f64,
    pub mrr10: f64,
    pub ndcg10: Option<f64>,
}

/// What tuning found; its JSON is the `tune` of `kb eval --tune --json`
/// (pinned in `cli/kb/tests.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct TuneReport {
    pub queries: usize,
    /// `ndcg@10` (graded set) or `mrr@10` (known-item set).
    pub metric: &'static str,
    /// Every fusion tried, in grid order.
    pub tried: Vec<Tried>,
    /// The configured fusion and its score.
    pub current: Tried,
    /// The best fusion found.
    pub best: Tried,
}

impl TuneReport {
    /// Whether the best differs from what is configured.
    pub fn improves(&self) -> bool {
        self.best.score > self.current.score
    }
}

fn percent(f: Fusion) -> u32 {
    (f.dense_share() * 100.0).round() as u32
}

fn tried(f: Fusion, r: &EvalReport) -> Tried {
    Tried {
        fusion: f.name(),
        dense_weight: percent(f),
        score: r.ndcg10.unwrap_or(r.mrr10),
        hit1: r.hit1,
        mrr10: r.mrr10,
        ndcg10: r.ndcg10,
    }
}

/// The best of `results`: the highest score; among equals the configured
/// fusion, then weighted before RRF (the default), then the share nearest 50 %.
pub fn pick_best(results: &[Tried], current: &Tried) -> Tried {
    let key = |t: &Tried| {
        let is_current = t.fusion == current.fusion && t.dense_weight == current.dense_weight;
        (
            !is_current,
            t.fusion != "weighted",
            (i64::from(t.dense_weight) - 50).unsigned_abs(),
        )
    };
    let mut best = current.clone();
    for t in results {
        // Scores are means over the same queries: compare with a little
        // slack so float noise never picks a different fusion.
        let better = t.score > best.score + 1e-9;
        let tied = (t.score - best.score).abs() <= 1e-9;
        if better || (tied && key(t) < key(&best)) {
            best = t.clone();
        }
    }
    best
}

impl Kb {
    /// Runs `set` under every fusion of [`grid`] (plus the configured one)
    /// and reports the best. `progress(done, total)` counts searches.
    pub fn tune(
        &self,
        set: &EvalSet,
        opts: &EvalOptions,
        progress: &dyn Fn(usize, usize),
        cancel: &Cancel,
    ) -> Result<TuneReport> {
        if opts.dense_only {
            return Err(KbError::Invalid(
                "--tune weighs the dense leg against BM25; it cannot run with --dense-only".into(),
            ));
        }
        if set.queries.is_empty() {
            return Err(KbError::Invalid("the query set is empty: nothing to tune on".into()));
        }
        let mut vectors = Vec::with_capacity(set.queries.len());
        {
            let mut embedder = self.query_embedder()?;
            for q in &set.queries {
                if cancel.is_cancelled() {
                    return Err(KbError::Cancelled);
                }
                vectors.push(embedder.embed_query(&q.query)?);
            }
        }
        let configured = self.fusion();
        let mut fusions = vec![configured];
        fusions.extend(grid());
        let per = set.queries.len();
        let total = per * fusions.len();
        let mut results = Vec::with_capacity(fusions.len());
        for (i, f) in fusions.iter().enumerate() {
            let r = self.evaluate_with(
                set,
                opts,
                Some(*f),
                Some(&vectors),
                &|done, _| progress(i * per + done, total),
                cancel,
            )?;
            results.push(tried(*f, &r));
        }
        let current = results.remove(0);
        let best = pick_best(&results, &current);
        Ok(TuneReport {
            queries: per,
            metric: if set.graded { "ndcg@10" } else { "mrr@10" },
            tried: results,
            current,
            best,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(fusion: &'static str, w: u32, score: f64) -> Tried {
        Tried {
            fusion,
            dense_weight: w,
            score,
            hit1: 0.0,
            mrr10: score,
            ndcg10: None,
        }
    }

    /// A planted optimum (weighted at 30 %) in a landscape that peaks
    /// there: the tuner finds it wherever the grid is scored from.
    #[test]
    fn the_planted_best_is_found() {
        let score = |f: Fusion| {
            let base = if f.name() == "weighted" { 0.80 } else { 0.75 };
            base - (f64::from(f.dense_share()) - 0.3).abs() * 0.2
        };
        let results: Vec<Tried> = grid().into_iter().map(|f| t(f.name(), percent(f), score(f))).collect();
        let current = t("weighted", 50, score(Fusion::default()));
        let best = pick_best(&results, &current);
        assert_eq!((best.fusion, best.dense_weight), ("weighted", 30));
    }

    #[test]
    fn a_flat_landscape_keeps_what_is_configured() {
        let results: Vec<Tried> = grid().into_iter().map(|f| t(f.name(), percent(f), 0.5)).collect();
        let current = t("weighted", 70, 0.5);
        let best = pick_best(&results, &current);
        assert_eq!((best.fusion, best.dense_weight), ("weighted", 70));
        // Among equals that are not configured: weighted (the default),
        // then nearest 50 %.
        let tied = [t("rrf", 50, 0.9), t("weighted", 80, 0.9), t("weighted", 40, 0.9)];
        let best = pick_best(&tied, &t("rrf", 40, 0.1));
        assert_eq!((best.fusion, best.dense_weight), ("weighted", 40));
    }

    #[test]
    fn the_grid_covers_both_fusions_at_every_share() {
        let g = grid();
        assert_eq!(g.len(), 22);
        assert_eq!(g.iter().filter(|f| f.name() == "weighted").count(), 11);
        assert!(g.contains(&Fusion::Rrf { dense_share: 0.5 }));
        assert!(g.contains(&Fusion::Weighted { dense_share: 1.0 }));
    }
}
