//! Document-level aggregation (`group_documents_by`): which of a document's
//! chunks add to its score. Pure, so tested on hand-made hits.

use serde_json::json;

use crate::kb::search::{group_documents_by, DocAggregation, Hit, RerankOutcome};
use crate::store::{ChunkRecord, Metadata};

/// A note's chunk in `section` with a fused `score` (also for the pooling
/// tests in `search/section.rs`).
pub(crate) fn hit(id: u64, path: &str, section: &str, score: f32) -> Hit {
    let mut meta = Metadata::new();
    meta.insert("doc_type".into(), json!("note"));
    meta.insert("file_path".into(), json!(path));
    meta.insert("section".into(), json!(section));
    Hit {
        record: ChunkRecord {
            id,
            text: format!("chunk {id}"),
            embed_text: String::new(),
            meta,
        },
        score,
        dense_rank: None,
        bm25_rank: None,
        name_match: false,
        rerank: RerankOutcome::Off,
    }
}

fn ranked(hits: Vec<Hit>, agg: DocAggregation) -> Vec<(String, f32, usize)> {
    group_documents_by(hits, 10, agg)
        .into_iter()
        .map(|d| (d.key, d.score, d.more))
        .collect()
}

#[test]
fn pieces_of_one_section_count_once_and_other_sections_add_with_decay() {
    // `long.md`: one section cut into three overlapping pieces, all
    // matching. `wide.md`: a weaker best chunk, but three sections match.
    let hits = vec![
        hit(1, "long.md", "Sync", 1.0),
        hit(2, "long.md", "Sync", 0.95),
        hit(3, "wide.md", "Plans", 0.9),
        hit(4, "long.md", "Sync", 0.9),
        hit(5, "wide.md", "Storage", 0.5),
        hit(6, "wide.md", "Limits", 0.4),
        hit(7, "wide.md", "Plans", 0.3),
    ];
    let got = ranked(hits, DocAggregation::Decay(0.5));
    // wide: 0.9 + 0.5·0.5 + 0.25·0.4 = 1.25 (its second "Plans" piece adds
    // nothing); long: 1.0 alone, though it has two more pieces.
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, "wide.md");
    assert!((got[0].1 - 1.25).abs() < 1e-6, "{got:?}");
    assert_eq!(got[1].0, "long.md");
    assert!((got[1].1 - 1.0).abs() < 1e-6, "{got:?}");
    // Every other chunk is still counted as more of the document.
    assert_eq!((got[0].2, got[1].2), (3, 2));
}

#[test]
fn a_section_counts_by_its_best_piece_and_max_ignores_the_rest() {
    // The first piece of a section to arrive is its best (hits come best
    // first); a later, weaker one of the same section must not replace it.
    let hits = vec![
        hit(4, "b.md", "", 0.85),
        hit(1, "a.md", "Intro", 0.8),
        hit(2, "a.md", "Setup", 0.6),
        hit(3, "a.md", "Setup", 0.5),
    ];
    let decay = ranked(hits.clone(), DocAggregation::Decay(0.3));
    assert_eq!(decay[0].0, "a.md");
    assert!((decay[0].1 - (0.8 + 0.3 * 0.6)).abs() < 1e-6, "{decay:?}");
    let max = ranked(hits, DocAggregation::Max);
    assert_eq!(max[0].0, "b.md");
    assert!((max[1].1 - 0.8).abs() < 1e-6, "{max:?}");
}
