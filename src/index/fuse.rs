//! Fusing several rankings into one: reciprocal rank fusion ([`rrf`]) and
//! weighted score fusion ([`weighted`]).
//!
//! Pure arithmetic on chunk ids: no index, no store, no I/O. It knows nothing
//! about privacy; it can only fuse what the (already filtered) rankings hold,
//! so it can never add an id that no ranking returned.
//!
//! An id's fused score is `Σ weight / (c + rank)` over the rankings that
//! contain it, with 1-based ranks and `c = 60` by default (Cormack et al.,
//! and the seed's `_reciprocal_rank_fusion`). Identity is the [`ChunkId`].
//! Weighted fusion sums each leg's min-max-normalised score times its
//! weight instead.

use std::collections::HashMap;

use super::ChunkId;

/// The usual RRF constant: large enough that rank 1 and rank 2 score alike.
pub const RRF_C: f32 = 60.0;

/// Fuses `rankings` (best first, each with a weight) into one list, best
/// first, scored by reciprocal rank fusion with constant `c`.
///
/// - An id repeated inside one ranking counts only at its best rank.
/// - Rankings with a weight that is not finite and positive are ignored.
/// - `c` must be finite and ≥ 0; anything else falls back to [`RRF_C`].
/// - The result does not depend on the order of `rankings`: contributions are
///   summed in a canonical order so even float rounding agrees, and ties are
///   broken by the best rank the id reached in any ranking, then by id.
pub fn rrf(rankings: &[(&[ChunkId], f32)], c: f32) -> Vec<(ChunkId, f32)> {
    let c = if c.is_finite() && c >= 0.0 {
        f64::from(c)
    } else {
        tracing::warn!(c, "invalid RRF constant, using the default");
        f64::from(RRF_C)
    };

    // id -> (contributions, best rank seen)
    let mut acc: HashMap<ChunkId, (Vec<f64>, usize)> = HashMap::new();
    for &(ids, weight) in rankings {
        if !(weight.is_finite() && weight > 0.0) {
            continue;
        }
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for (i, &id) in ids.iter().enumerate() {
            if !seen.insert(id) {
                continue;
            }
            let rank = i + 1;
            let entry = acc.entry(id).or_insert_with(|| (Vec::new(), usize::MAX));
            entry.0.push(f64::from(weight) / (c + rank as f64));
            entry.1 = entry.1.min(rank);
        }
    }

    let mut fused: Vec<(ChunkId, f64, usize)> = acc
        .into_iter()
        .map(|(id, (mut parts, best))| {
            parts.sort_by(f64::total_cmp);
            (id, parts.iter().sum(), best)
        })
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    fused.into_iter().map(|(id, score, _)| (id, score as f32)).collect()
}

/// One leg of a weighted score fusion.
pub enum Leg<'a> {
    /// A ranking with its raw scores (cosine, BM25): min-max normalised
    /// within the leg, so the best candidate scores 1 and the worst 0 (a
    /// leg whose scores are all equal scores 1 throughout).
    Scored(&'a [(ChunkId, f32)]),
    /// A set of matches without a graded score (an exact title or heading
    /// match): every member scores 1.
    Matches(&'a [ChunkId]),
}

/// Weighted score fusion: an id's score is `Σ weight × normalised score`
/// over the legs that hold it (0 where a leg does not). Unlike RRF it keeps
/// how far apart a leg's scores are, which is what a tuned weighting can
/// exploit (Bruch et al., "An Analysis of Fusion Functions for Hybrid
/// Retrieval", 2023). The same guarantees as [`rrf`]: ids come only from the
/// legs, a repeated id counts once per leg (its best score), weights that
/// are not finite and ≥ 0 are ignored, non-finite scores count as the
/// leg's worst, and ties are broken by the best rank reached, then by id.
pub fn weighted(legs: &[(Leg<'_>, f32)]) -> Vec<(ChunkId, f32)> {
    let mut acc: HashMap<ChunkId, (Vec<f64>, usize)> = HashMap::new();
    for (leg, weight) in legs {
        if !(weight.is_finite() && *weight >= 0.0) {
            continue;
        }
        let w = f64::from(*weight);
        let scored: Vec<(ChunkId, f64)> = match leg {
            Leg::Scored(items) => min_max(items),
            Leg::Matches(ids) => ids.iter().map(|id| (*id, 1.0)).collect(),
        };
        let mut best: HashMap<ChunkId, (f64, usize)> = HashMap::new();
        for (i, (id, n)) in scored.into_iter().enumerate() {
            let e = best.entry(id).or_insert((n, i + 1));
            e.0 = e.0.max(n);
        }
        for (id, (n, rank)) in best {
            let entry = acc.entry(id).or_insert_with(|| (Vec::new(), usize::MAX));
            entry.0.push(w * n);
            entry.1 = entry.1.min(rank);
        }
    }
    let mut fused: Vec<(ChunkId, f64, usize)> = acc
        .into_iter()
        .map(|(id, (mut parts, best))| {
            parts.sort_by(f64::total_cmp);
            (id, parts.iter().sum(), best)
        })
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    fused.into_iter().map(|(id, score, _)| (id, score as f32)).collect()
}

/// A scored leg min-max normalised as [`weighted`] sees it, in the leg's
/// order: the best candidate 1, the worst 0, all 1 when the scores are
/// equal, 0 for a score that is not finite.
fn min_max(items: &[(ChunkId, f32)]) -> Vec<(ChunkId, f64)> {
    let finite = items.iter().map(|(_, s)| *s).filter(|s| s.is_finite());
    let (lo, hi) = finite.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let span = f64::from(hi) - f64::from(lo);
    items
        .iter()
        .map(|(id, s)| {
            let n = if !s.is_finite() {
                0.0
            } else if span > 0.0 && span.is_finite() {
                (f64::from(*s) - f64::from(lo)) / span
            } else {
                1.0
            };
            (*id, n)
        })
        .collect()
}

/// Each id's normalised score in one scored leg (its best, when repeated),
/// exactly as [`weighted`] adds it before the leg's weight: for callers
/// that need a leg's share of a fused score.
pub fn normalised(items: &[(ChunkId, f32)]) -> HashMap<ChunkId, f64> {
    let mut out: HashMap<ChunkId, f64> = HashMap::with_capacity(items.len());
    for (id, n) in min_max(items) {
        let e = out.entry(id).or_insert(n);
        *e = e.max(n);
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ids(v: &[u64]) -> Vec<ChunkId> {
        v.iter().copied().map(ChunkId).collect()
    }

    #[test]
    fn scores_follow_the_formula() {
        let a = ids(&[1, 2, 3]);
        let b = ids(&[3, 4]);
        let out = rrf(&[(&a, 1.0), (&b, 1.0)], 60.0);
        let score = |id: u64| out.iter().find(|(c, _)| c.0 == id).map(|x| x.1);
        assert_eq!(out[0].0, ChunkId(3)); // in both lists
        let expected = 1.0 / 63.0 + 1.0 / 61.0;
        assert!((score(3).unwrap_or(0.0) - expected).abs() < 1e-6);
        assert!((score(1).unwrap_or(0.0) - 1.0 / 61.0).abs() < 1e-6);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn ties_break_by_best_rank_then_id() {
        // 10 is rank 1 in a, 20 is rank 1 in b: equal scores, equal best
        // rank, so the smaller id wins; 11 and 21 likewise.
        let a = ids(&[10, 11]);
        let b = ids(&[20, 21]);
        let out: Vec<u64> = rrf(&[(&b, 1.0), (&a, 1.0)], 60.0).iter().map(|x| x.0 .0).collect();
        assert_eq!(out, [10, 20, 11, 21]);
    }

    #[test]
    fn weights_scale_and_bad_weights_are_ignored() {
        let a = ids(&[1]);
        let b = ids(&[2]);
        let out = rrf(&[(&a, 1.0), (&b, 2.0)], 60.0);
        assert_eq!(out[0].0, ChunkId(2));
        let out = rrf(&[(&a, f32::NAN), (&b, 0.0)], 60.0);
        assert!(out.is_empty());
        let out = rrf(&[(&a, 1.0)], f32::NAN);
        assert!((out[0].1 - 1.0 / 61.0).abs() < 1e-6);
    }

    #[test]
    fn duplicates_inside_one_ranking_count_once() {
        let a = ids(&[5, 5, 6]);
        let out = rrf(&[(&a, 1.0)], 60.0);
        assert_eq!(out.len(), 2);
        assert!((out[0].1 - 1.0 / 61.0).abs() < 1e-6);
        assert!((out[1].1 - 1.0 / 63.0).abs() < 1e-6);
    }

    fn ranking() -> impl Strategy<Value = Vec<ChunkId>> {
        prop::collection::vec(0u64..40, 0..30).prop_map(|v| v.into_iter().map(ChunkId).collect())
    }

    proptest! {
        #[test]
        fn prop_input_order_does_not_matter(
            lists in prop::collection::vec((ranking(), 0.1f32..3.0), 0..5),
            seed in any::<u64>(),
        ) {
            let refs: Vec<(&[ChunkId], f32)> = lists.iter().map(|(l, w)| (l.as_slice(), *w)).collect();
            let mut shuffled = refs.clone();
            // A cheap deterministic shuffle driven by the seed.
            let n = shuffled.len();
            for i in (1..n).rev() {
                let j = (seed.rotate_left(i as u32) as usize) % (i + 1);
                shuffled.swap(i, j);
            }
            prop_assert_eq!(rrf(&refs, 60.0), rrf(&shuffled, 60.0));
        }

        #[test]
        fn prop_output_is_the_union_sorted_and_unique(lists in prop::collection::vec(ranking(), 0..4)) {
            let refs: Vec<(&[ChunkId], f32)> = lists.iter().map(|l| (l.as_slice(), 1.0)).collect();
            let out = rrf(&refs, 60.0);
            let mut union: Vec<ChunkId> = lists.iter().flatten().copied().collect();
            union.sort();
            union.dedup();
            let mut got: Vec<ChunkId> = out.iter().map(|x| x.0).collect();
            got.sort();
            prop_assert_eq!(got, union);
            prop_assert!(out.windows(2).all(|w| w[0].1 >= w[1].1));
        }

        #[test]
        fn prop_in_both_lists_beats_in_one_at_equal_rank(
            a in prop::collection::vec(100u64..200, 0..20),
            b in prop::collection::vec(200u64..300, 0..20),
            rank in 0usize..20,
        ) {
            // Id 1 sits at `rank` in both lists; id 2 only at `rank` in a.
            let mut a = ids(&a);
            let mut b = ids(&b);
            let ra = rank.min(a.len());
            let rb = rank.min(b.len());
            a.insert(ra, ChunkId(1));
            b.insert(rb.min(b.len()), ChunkId(1));
            let mut a2 = a.clone();
            a2[ra] = ChunkId(2);
            let out = rrf(&[(&a, 1.0), (&b, 1.0), (&a2, 1.0)], 60.0);
            let pos = |id| out.iter().position(|x| x.0 == ChunkId(id));
            prop_assert!(pos(1) < pos(2));
        }

        #[test]
        fn prop_better_rank_scores_higher_in_a_single_list(list in ranking()) {
            let out = rrf(&[(&list, 1.0)], 60.0);
            let mut first_seen = Vec::new();
            for id in &list {
                if !first_seen.contains(id) {
                    first_seen.push(*id);
                }
            }
            let got: Vec<ChunkId> = out.iter().map(|x| x.0).collect();
            prop_assert_eq!(got, first_seen);
        }
    }

    /// Weighted score fusion (`rag.fusion = "weighted"`).
    mod weighted_fusion {
        use crate::index::fuse::*;

        fn scored(v: &[(u64, f32)]) -> Vec<(ChunkId, f32)> {
            v.iter().map(|(i, s)| (ChunkId(*i), *s)).collect()
        }

        #[test]
        fn scores_are_normalised_per_leg_and_weighted() {
            let dense = scored(&[(1, 0.9), (2, 0.5), (3, 0.1)]);
            let bm25 = scored(&[(3, 30.0), (2, 20.0), (4, 10.0)]);
            let out = weighted(&[(Leg::Scored(&dense), 0.5), (Leg::Scored(&bm25), 0.5)]);
            let score = |id: u64| out.iter().find(|(c, _)| c.0 == id).map(|x| x.1).unwrap();
            // 1: 0.5×1 ; 2: 0.5×0.5 + 0.5×0.5 ; 3: 0.5×0 + 0.5×1 ; 4: 0.5×0.
            assert!((score(1) - 0.5).abs() < 1e-6);
            assert!((score(2) - 0.5).abs() < 1e-6);
            assert!((score(3) - 0.5).abs() < 1e-6);
            assert!(score(4).abs() < 1e-6);
            // The dense share decides: all on BM25 puts 3 first, all on dense 1.
            let only_bm25 = weighted(&[(Leg::Scored(&dense), 0.0), (Leg::Scored(&bm25), 1.0)]);
            assert_eq!(only_bm25[0].0, ChunkId(3));
            let only_dense = weighted(&[(Leg::Scored(&dense), 1.0), (Leg::Scored(&bm25), 0.0)]);
            assert_eq!(only_dense[0].0, ChunkId(1));
        }

        #[test]
        fn matches_add_their_weight_and_odd_input_is_tolerated() {
            let dense = scored(&[(1, 0.9), (2, f32::NAN), (2, 0.2), (3, 0.5)]);
            let names = [ChunkId(3)];
            let out = weighted(&[
                (Leg::Scored(&dense), 1.0),
                (Leg::Matches(&names), 1.0),
                (Leg::Scored(&[]), f32::NAN),
            ]);
            assert_eq!(out[0].0, ChunkId(3), "{out:?}");
            assert_eq!(out.len(), 3);
            assert!(out.iter().all(|(_, s)| s.is_finite()));
            // One candidate, or all equal: full marks, not a division by zero.
            let one = scored(&[(7, 0.3)]);
            assert_eq!(weighted(&[(Leg::Scored(&one), 1.0)]), vec![(ChunkId(7), 1.0)]);
        }
    }
}
