use super::*;

fn q(id: &str, gold: &[&str]) -> Question {
    Question {
        id: id.into(),
        question: format!("question {id}?"),
        gold: gold.iter().map(|s| s.to_string()).collect(),
        not_in_library: gold.is_empty(),
    }
}

fn o(id: &str, fetched: &[&str], cited: &[&str], kept: usize, unsupported: usize, rounds: usize, ms: f64) -> Outcome {
    Outcome {
        id: id.into(),
        fetched: fetched.iter().map(|s| s.to_string()).collect(),
        cited: cited.iter().map(|s| s.to_string()).collect(),
        kept_markers: kept,
        unsupported,
        rounds,
        latency_ms: ms,
        error: None,
    }
}

/// Five questions worked out by hand (see each line's comment).
#[test]
fn the_scorer_on_hand_checked_cases() {
    let questions = vec![
        q("a", &["x.md"]),
        q("b", &["y.md", "z.md"]),
        q("c", &["w.md"]),
        q("n1", &[]),
        q("n2", &[]),
    ];
    let outcomes = vec![
        // Fetched its gold note, cited it and an off-topic one; wrote 4
        // markers, 1 named nothing.
        o("a", &["x.md", "q.md"], &["./x.md", "q.md"], 3, 1, 2, 100.0),
        // Never fetched y or z; cited the wrong note.
        o("b", &["q.md"], &["q.md"], 1, 0, 2, 300.0),
        // The model call failed.
        Outcome {
            error: Some("⚠️ the model is down".into()),
            ..o("c", &[], &[], 0, 0, 0, 50.0)
        },
        // Not in the library and cited nothing: a right abstention.
        o("n1", &["x.md"], &[], 0, 0, 2, 200.0),
        // Not in the library, yet cited x (and made up 2 markers).
        o("n2", &["x.md"], &["x.md"], 1, 2, 3, 400.0),
    ];
    let r = score(&questions, &outcomes);
    assert_eq!((r.questions, r.answerable, r.not_in_library, r.failed), (5, 3, 2, 1));
    assert_eq!(r.retrieval_recall, Some(1.0 / 3.0), "only a fetched a gold note");
    assert_eq!(
        r.citation_precision,
        Some(1.0 / 3.0),
        "1 of the 3 answerable citations is gold"
    );
    assert_eq!(r.unsupported_rate, Some(3.0 / 8.0), "3 made up of 8 markers written");
    assert_eq!(r.abstention_accuracy, Some(0.5));
    assert_eq!(r.answered_rate, Some(2.0 / 3.0), "the failed turn is no answer");
    assert!((r.rounds_mean - 1.8).abs() < 1e-9);
    assert_eq!(r.rounds_max, 3);
    assert_eq!((r.latency_p50_ms, r.latency_p95_ms), (200.0, 400.0));
    let a = &r.per_question[0];
    assert!(a.fetched_gold && !a.abstained);
    assert_eq!((a.cited, a.cited_gold), (2, 1), "./x.md is x.md");
    let c = &r.per_question[2];
    assert!(!c.abstained, "a failed turn is not an abstention");
    assert!(r.per_question[3].abstained && !r.per_question[4].abstained);
}

#[test]
fn nothing_to_measure_is_none_and_a_missing_outcome_fails() {
    let r = score(&[q("a", &["x.md"])], &[]);
    assert_eq!(r.failed, 1);
    assert_eq!(r.retrieval_recall, Some(0.0));
    assert_eq!(
        r.citation_precision, None,
        "no citation at all: no precision to speak of"
    );
    assert_eq!(r.unsupported_rate, None);
    assert_eq!(r.abstention_accuracy, None, "no not-in-the-library question");
}

#[test]
fn question_files_are_checked() {
    let ok = "[[question]]\nid = \"a\"\nquestion = \"How?\"\ngold = [\"A.md\"]\n\n[[question]]\nid = \"b\"\nquestion = \"Why?\"\nnot_in_library = true\n";
    let qs = parse_questions(ok).unwrap();
    assert_eq!(qs.len(), 2);
    assert_eq!(qs[0].gold, vec!["A.md".to_string()]);
    assert!(qs[1].not_in_library);
    let err = |text: &str| parse_questions(text).unwrap_err().to_string();
    assert!(err("[[question]]\nid = \"a\"\nquestion = \"How?\"\n").contains("name the gold documents"));
    assert!(
        err("[[question]]\nid = \"a\"\nquestion = \"How?\"\ngold = [\"A.md\"]\nnot_in_library = true\n")
            .contains("no gold documents")
    );
    assert!(err(&format!(
        "{ok}\n[[question]]\nid = \"a\"\nquestion = \"Again?\"\nnot_in_library = true\n"
    ))
    .contains("used twice"));
    assert!(
        err("[[question]]\nid = \"a\"\nquestion = \"How?\"\ngold = [\"A.md\"]\nanswer = \"x\"\n")
            .contains("cannot be read")
    );
    assert!(err("").contains("no [[question]]"));
    assert_eq!(
        parse_questions("[[question]]\nid = \"\"\nquestion = \"How?\"\ngold = [\"A.md\"]\n")
            .unwrap_err()
            .kind(),
        ErrorKind::User
    );
}

#[test]
fn the_shipped_question_set_parses_and_is_big_enough() {
    let text = include_str!("../../../xtask/data/answers-obsidian-help.toml");
    let qs = parse_questions(text).unwrap();
    let nil = qs.iter().filter(|q| q.not_in_library).count();
    assert!(qs.len() >= 40, "{} questions", qs.len());
    assert!(nil >= 8, "{nil} not-in-the-library questions");
}
