//! `kb eval`'s metrics on hand-checked fixtures.

use super::*;

fn keys(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn outcome(rank: Option<usize>, ms: f64) -> QueryOutcome {
    QueryOutcome {
        id: String::new(),
        query: String::new(),
        relevant: Vec::new(),
        rank,
        top: Vec::new(),
        ndcg10: None,
        recall100: None,
        latency_ms: ms,
    }
}

#[test]
fn known_item_metrics_match_a_hand_computation() {
    // Ranks 1, 2, 4, none, 11 (beyond 10: a miss for every @10 metric).
    let per = vec![
        outcome(Some(1), 5.0),
        outcome(Some(2), 1.0),
        outcome(Some(4), 3.0),
        outcome(None, 2.0),
        outcome(Some(11), 4.0),
    ];
    let r = summarise(per, false, false);
    assert_eq!(r.queries, 5);
    assert!((r.hit1 - 0.2).abs() < 1e-12);
    assert!((r.hit10 - 0.6).abs() < 1e-12);
    // (1 + 1/2 + 1/4) / 5 = 0.35
    assert!((r.mrr10 - 0.35).abs() < 1e-12);
    assert_eq!(r.ndcg10, None);
    // Latencies sorted 1,2,3,4,5: p50 = 3, p95 = index round(3.8) = 4 → 5.
    assert_eq!((r.latency_p50_ms, r.latency_p95_ms), (3.0, 5.0));
}

#[test]
fn graded_metrics_match_a_hand_computation() {
    // Relevant: a (grade 2), b (grade 1), z (grade 1, never retrieved).
    let rel = vec![("a".to_string(), 2), ("b".to_string(), 1), ("z".to_string(), 1)];
    let ranked = keys(&["x", "a", "y", "b"]);
    let (rank, ndcg, recall) = score_ranking(&ranked, &rel);
    assert_eq!(rank, Some(2));
    // DCG = 3/log2(3) + 1/log2(5); IDCG = 3/log2(2) + 1/log2(3) + 1/log2(4).
    let dcg = 3.0 / 3f64.log2() + 1.0 / 5f64.log2();
    let idcg = 3.0 + 1.0 / 3f64.log2() + 0.5;
    assert!((ndcg - dcg / idcg).abs() < 1e-12, "{ndcg}");
    assert!((recall - 2.0 / 3.0).abs() < 1e-12);
    // Nothing relevant retrieved.
    assert_eq!(score_ranking(&keys(&["x"]), &rel), (None, 0.0, 0.0));
}

#[test]
fn known_item_files_parse_and_bad_lines_are_named() -> Result<()> {
    let set = parse_known_items(
        "{\"query\": \"Advanced Markdown\", \"answer\": \"a/b.md\", \"qid\": \"q1\"}\n\n{\"query\": \"x\", \"answer\": \"c.md\"}\n",
    )?;
    assert_eq!(set.queries.len(), 2);
    assert_eq!(set.queries[0].id, "q1");
    assert_eq!(set.queries[1].id, "line 3");
    assert_eq!(set.queries[1].relevant, vec![("c.md".to_string(), 1)]);
    assert!(!set.graded);
    let err = parse_known_items("{\"query\": \"x\"}\n").unwrap_err().to_string();
    assert!(err.contains("line 1") && err.contains("answer"), "{err}");
    assert!(parse_known_items("not json")
        .unwrap_err()
        .to_string()
        .contains("line 1"));
    assert!(parse_known_items("\n").is_err());
    Ok(())
}

#[test]
fn beir_pairs_parse_with_a_header_and_a_key_prefix() -> Result<()> {
    let queries = "{\"_id\": \"1\", \"text\": \"first\"}\n{\"_id\": \"2\", \"text\": \"unjudged\"}\n";
    let qrels = "query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t2\n1\t12\t0\n";
    let set = parse_beir(queries, qrels, "scifact:")?;
    assert!(set.graded);
    assert_eq!(set.queries.len(), 1);
    assert_eq!(
        set.queries[0].relevant,
        vec![("scifact:10".to_string(), 1), ("scifact:11".to_string(), 2)]
    );
    assert!(parse_beir(queries, "1\t10\n", "").is_err());
    assert!(parse_beir(queries, "1\t10\tx\n1\t10\ty\n", "").is_err());
    Ok(())
}
