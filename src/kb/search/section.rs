//! One section's pieces pool their evidence. The chunker cuts a long
//! section into overlapping pieces; a query's words may sit in one piece
//! and its meaning in the next, and fusing piece by piece splits that
//! evidence, so neither piece ranks as well as the passage deserves. Here
//! the best-ranked piece of each section among the hits takes the best
//! dense and the best BM25 score of all its pieces; the others keep their
//! own. Pure: works on hits already read from the store, reads nothing.
//!
//! Measured (issue 32, release build; replayed on the product's own legs,
//! then run through `Kb::search`): help vault anchors, documents, hit@1 /
//! MRR@10 0.786 / 0.848 → 0.796 / 0.853, chunks 0.735 / 0.802 unchanged;
//! SciFact with one chunk per abstract cannot move (no section has two
//! pieces); SciFact cut as `kb add` stores papers 0.7304 → 0.7331 for 100
//! results and 0.7168 → 0.7173 for 10. Pooling over every candidate of the
//! legs instead of the hits read scored the same, and would cost a store
//! read per candidate; the search reads only candidates near a kept hit
//! (see [`SPAN`]).
//!
//! Must not: add or drop a hit, or pool across documents.

use std::collections::HashMap;

use super::{doc_key, section_of, Hit};
use crate::index::fuse::normalised;
use crate::index::ChunkId;

/// How many ranked candidates beyond the kept hits are looked at for a
/// kept hit's sibling pieces (at most as many again as are kept): with 10
/// results, the replay gained as much from 20 as from every candidate.
pub(super) const MARGIN: usize = 32;

/// Of those, only a chunk whose id is this close to a kept hit's is read
/// from the store: a document's chunks have consecutive ids, so a
/// section's pieces do, and a store read per unrelated candidate would
/// cost the search ~0.4 ms at 100k chunks.
pub(super) const SPAN: u64 = 8;

/// Re-scores `hits` (best first, fused by weighted fusion with the dense
/// leg's `share`; `dense` and `sparse` are the legs as fused) so that the
/// first piece of each section counts its section's best normalised score
/// in each leg, then re-sorts them (stably: ties keep the fused order).
pub(super) fn pool_evidence(hits: &mut [Hit], dense: &[(ChunkId, f32)], sparse: &[(ChunkId, f32)], share: f32) {
    // (document, section) → its pieces' indexes, best first.
    let mut groups: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, h) in hits.iter().enumerate() {
        groups
            .entry((doc_key(&h.record), section_of(&h.record)))
            .or_default()
            .push(i);
    }
    groups.retain(|_, pieces| pieces.len() > 1);
    // Most searches have no section twice among their hits: nothing to
    // pool, and no need to normalise the legs a second time.
    if groups.is_empty() {
        return;
    }
    let d = normalised(dense);
    let b = normalised(sparse);
    let leg = |m: &HashMap<ChunkId, f64>, i: usize| m.get(&ChunkId(hits[i].record.id)).copied().unwrap_or(0.0);
    let share = f64::from(share);
    let lifts: Vec<(usize, f64)> = groups
        .into_values()
        .map(|pieces| {
            let best = |m: &HashMap<ChunkId, f64>| pieces.iter().map(|&i| leg(m, i)).fold(0.0, f64::max);
            let first = pieces[0];
            let lift = share * (best(&d) - leg(&d, first)) + (1.0 - share) * (best(&b) - leg(&b, first));
            (first, lift)
        })
        .filter(|(_, lift)| *lift > 0.0)
        .collect();
    if lifts.is_empty() {
        return;
    }
    for (i, lift) in lifts {
        hits[i].score = (f64::from(hits[i].score) + lift) as f32;
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kb::tests::aggregate::hit;

    fn order(hits: &[Hit]) -> Vec<u64> {
        hits.iter().map(|h| h.record.id).collect()
    }

    /// Legs over ids 1–5 whose min-max scores are the given fractions
    /// (id 9 anchors each leg's zero).
    fn leg(v: &[(u64, f32)]) -> Vec<(ChunkId, f32)> {
        let mut l: Vec<(ChunkId, f32)> = v.iter().map(|&(i, s)| (ChunkId(i), s)).collect();
        l.push((ChunkId(9), 0.0));
        l.sort_by(|a, b| b.1.total_cmp(&a.1));
        l
    }

    #[test]
    fn a_sections_first_piece_takes_its_siblings_best_leg_scores() {
        // Piece 1 of `a.md › Setup` has the meaning (dense 1.0, BM25 0.2),
        // piece 2 the words (dense 0.2, BM25 1.0); `b.md` is middling in
        // both. Fused piece by piece at an even share, b leads.
        let dense = leg(&[(1, 1.0), (2, 0.2), (3, 0.7)]);
        let sparse = leg(&[(1, 0.2), (2, 1.0), (3, 0.7)]);
        let mut hits = vec![
            hit(3, "b.md", "Setup", 0.7),
            hit(1, "a.md", "Setup", 0.6),
            hit(2, "a.md", "Setup", 0.6),
        ];
        pool_evidence(&mut hits, &dense, &sparse, 0.5);
        // Piece 1 now counts dense 1.0 and BM25 1.0; piece 2 keeps its own.
        assert_eq!(order(&hits), [1, 3, 2]);
        assert!((hits[0].score - 1.0).abs() < 1e-6, "{}", hits[0].score);
        assert!((hits[2].score - 0.6).abs() < 1e-6);
    }

    #[test]
    fn other_sections_and_other_documents_do_not_pool() {
        let dense = leg(&[(1, 1.0), (2, 0.2), (3, 0.2), (4, 0.7)]);
        let sparse = leg(&[(1, 0.2), (2, 1.0), (3, 1.0), (4, 0.7)]);
        // 2 is another section of a.md, 3 the same section name in c.md.
        let mut hits = vec![
            hit(4, "b.md", "Setup", 0.7),
            hit(1, "a.md", "Setup", 0.6),
            hit(2, "a.md", "Limits", 0.6),
            hit(3, "c.md", "Setup", 0.6),
        ];
        pool_evidence(&mut hits, &dense, &sparse, 0.5);
        assert_eq!(order(&hits), [4, 1, 2, 3]);
        assert!((hits[1].score - 0.6).abs() < 1e-6);
    }
}
