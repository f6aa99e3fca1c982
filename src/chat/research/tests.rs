use super::plan::parse_plan;
use super::report::{gather, Report};
use super::*;
use crate::chat::cite::{check, Citation, Passages};

#[test]
fn a_plan_is_read_from_lists_json_and_chatter() {
    let text = "Here are the sub-questions:\n1. What does the budget note say about travel?\n2) When is the budget review?\n- what does the budget note say about TRAVEL?\n\n**3.** Who attends?";
    assert_eq!(
        parse_plan(text, 4),
        [
            "What does the budget note say about travel?",
            "When is the budget review?",
            "Who attends?"
        ]
    );
    assert_eq!(parse_plan(text, 2).len(), 2, "capped");
    assert_eq!(
        parse_plan("```json\n[\"a first one\", \"a second one\"]\n```", 4),
        ["a first one", "a second one"]
    );
    assert_eq!(parse_plan("<think>1. not this</think>\n1. this one", 4), ["this one"]);
    assert!(parse_plan("", 4).is_empty());
    assert!(parse_plan("1.\n2. ?", 4).is_empty(), "nothing with words in it");
}

fn passage(key: &str, chunk: u64, text: &str) -> Citation {
    Citation {
        n: 0,
        key: key.into(),
        kind: "note".into(),
        title: key.trim_end_matches(".md").into(),
        source: "local".into(),
        path: Some(key.into()),
        section: "Intro".into(),
        page: None,
        annotation: None,
        text: text.into(),
        chunk_id: Some(chunk),
    }
}

fn finding(question: &str, passages: &[Citation], text: &str) -> Finding {
    let mut p = Passages::default();
    for c in passages {
        p.number(c.clone());
    }
    let checked = check(text, &p);
    Finding {
        question: question.into(),
        cited: checked.citations.iter().map(|c| c.n).collect(),
        text: checked.text,
        passages: p,
        ..Finding::default()
    }
}

#[test]
fn cited_passages_are_numbered_once_and_answers_renumbered() {
    let a = passage("a.md", 1, "alpha");
    let b = passage("b.md", 2, "beta");
    let c = passage("c.md", 3, "gamma");
    let f1 = finding("one?", &[a.clone(), b.clone()], "Beta holds [2].");
    // The second sub-agent cites the same chunk b under its own number.
    let f2 = finding("two?", &[c.clone(), b.clone()], "Gamma [1] and beta [2], code `[1]`.");
    let empty = finding("three?", &[a], "Nothing cited.");
    let g = gather(&[f1, f2, empty]);
    let keys: Vec<_> = g.passages.all().iter().map(|p| (p.n, p.key.as_str())).collect();
    assert_eq!(keys, [(1, "b.md"), (2, "c.md")], "only cited passages, b once");
    assert_eq!(g.answers.len(), 2, "a sub-agent citing nothing adds nothing");
    assert_eq!(g.answers[0].1, "Beta holds [1].");
    assert_eq!(
        g.answers[1].1, "Gamma [2] and beta [1], code `[1]`.",
        "code is left alone"
    );
    let prompt = report::synthesis_prompt("q?", &g);
    assert!(prompt.contains("--- [1] --- b § Intro — b.md\nbeta"), "{prompt}");
    assert!(prompt.contains(crate::chat::tools::BEGIN_DATA));
}

#[test]
fn the_report_draft_holds_the_report_its_sources_and_the_plan_in_parts() {
    let mut p = Passages::default();
    p.number(passage("work/budget.md", 7, "Friday"));
    let checked = check("The review is on Friday [1][9].\n\n## Travel\n\nOver plan [1].", &p);
    assert_eq!(checked.unsupported, 1);
    let questions = vec!["When?".to_string(), "Travel?".to_string()];
    let r = Report::build(
        "When is the budget review?",
        &questions,
        &checked,
        ReportDelivery::Suggest,
        "ollama:m",
    );
    assert!(
        r.text
            .starts_with("# When is the budget review?\n\nThe review is on Friday [1].\n"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("## Sources\n\n- [1] work/budget § Intro — work/budget.md\n"),
        "{}",
        r.text
    );
    assert!(r.text.contains("1. When?\n2. Travel?\n"));
    let hunks = crate::drafts::hunks::sections(&r.text);
    assert_eq!(r.sections, hunks.len());
    assert_eq!(hunks.len(), 4, "summary, Travel, Sources, how it was researched");
    // Taking every part rebuilds the text; taking some leaves the others out.
    let all: Vec<usize> = (0..hunks.len()).collect();
    assert_eq!(crate::drafts::hunks::apply("", &r.text, &hunks, &all), r.text);
    let some = crate::drafts::hunks::apply("", &r.text, &hunks, &[0, 2]);
    assert!(some.starts_with("# When") && some.contains("## Sources") && !some.contains("## Travel"));
    let long = "word ".repeat(40);
    let r = Report::build(&long, &questions, &checked, ReportDelivery::Write, "m");
    assert!(r.title.ends_with('…') && r.title.chars().count() <= 91);
}

#[test]
fn the_budget_counts_tokens_and_spend() {
    let s = ResearchSettings {
        max_tokens: 100,
        max_cost_cents: 10,
        ..ResearchSettings::default()
    };
    let b = Budget::default();
    assert!(!b.spent(&s));
    b.add_tokens(99);
    assert!(!b.spent(&s));
    b.add_tokens(1);
    assert!(b.spent(&s));
    let b = Budget::default();
    let mut u = crate::llm::Usage::new();
    u.insert("m".into(), crate::llm::ModelCost { usd: 0.1, requests: 1 });
    b.add_usage(Some(u));
    assert!(b.spent(&s), "ten cents spent");
    assert_eq!(b.take_usage().map(|u| u["m"].requests), Some(1));
}
