//! The response cache and the provider cooldown against stand-in model
//! services on loopback: an identical digest scoring is answered from disk
//! without a request, and a `Retry-After` holds back the next caller of
//! that provider only.

use std::time::{Duration, Instant};

use jarvis::cancel::Cancel;
use jarvis::digest::score::{score_all, BatchLimits};
use jarvis::digest::{Candidate, Origin};
use jarvis::llm::{make_provider, ErrorKind, Message};

use crate::support::fakes::digest::{openrouter_reply, papers_in};
use crate::support::fakes::stand::{Answer, Stand};
use crate::support::fakes::wires::settings_for;

fn paper(title: &str) -> Candidate {
    Candidate {
        key: "arxiv:2412.00001".into(),
        link: "https://arxiv.org/abs/2412.00001".into(),
        title: title.into(),
        authors: vec!["Ada Example".into()],
        abstract_text: format!("Abstract of {title}."),
        date: "2026-12-05".into(),
        origin: Origin::Arxiv {
            id: "2412.00001".into(),
            primary_category: None,
            pdf_url: None,
        },
        via: "arXiv cs.LG".into(),
    }
}

#[test]
fn the_second_identical_digest_scoring_sends_no_request() {
    let home = tempfile::tempdir().unwrap();
    let llm = Stand::one_at_a_time(|r, n| {
        let papers = papers_in(&r.body);
        let items: Vec<String> = papers
            .iter()
            .map(|(id, _)| {
                format!(
                    r#"{{"id": {id}, "score": {}, "track": "t", "summary": "s", "why": "w"}}"#,
                    6 + n
                )
            })
            .collect();
        openrouter_reply(&format!("[{}]", items.join(",")))
    });
    let mut settings = settings_for(&llm.url);
    settings.response_cache = Some(home.path().join("llm-cache"));
    let provider = make_provider("openrouter", &settings).unwrap();
    let score = |prompt: &str| {
        score_all(
            provider.as_ref(),
            prompt,
            &[paper("Protein folding at scale")],
            &BatchLimits::new(5, 100_000),
            &|_| {},
            &Cancel::new(),
        )
        .unwrap()
    };
    let first = score("Score papers.");
    assert_eq!(llm.seen().len(), 1);
    assert_eq!(first.usage.requests, 1);
    let second = score("Score papers.");
    assert_eq!(llm.seen().len(), 1, "the identical scoring was answered from the cache");
    assert_eq!(second.usage.requests, 0, "a cached answer costs no request");
    assert_eq!(second.scored[0].score, first.scored[0].score);

    // A different prompt is a different request.
    let third = score("Score papers strictly.");
    assert_eq!(llm.seen().len(), 2);
    assert_ne!(third.scored[0].score, first.scored[0].score);
    let kept = std::fs::read_dir(home.path().join("llm-cache")).unwrap().count();
    assert_eq!(kept, 2);
}

#[test]
fn a_scoring_reply_that_could_not_be_read_is_not_kept() {
    let home = tempfile::tempdir().unwrap();
    let llm = Stand::one_at_a_time(|r, n| {
        if n == 0 {
            return openrouter_reply("Sorry, no JSON today.");
        }
        let id = papers_in(&r.body)[0].0;
        openrouter_reply(&format!(
            r#"[{{"id": {id}, "score": 8, "track": "t", "summary": "s", "why": "w"}}]"#
        ))
    });
    let mut settings = settings_for(&llm.url);
    settings.response_cache = Some(home.path().join("llm-cache"));
    let provider = make_provider("openrouter", &settings).unwrap();
    let s = score_all(
        provider.as_ref(),
        "Score papers.",
        &[paper("A paper")],
        &BatchLimits::new(5, 100_000),
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(s.scored.len(), 1, "the retry reached the model, not the cache");
    assert_eq!(llm.seen().len(), 2);
}

#[test]
fn a_retry_after_holds_back_the_next_caller_of_that_provider_only() {
    let limited = Stand::one_at_a_time(|_, n| match n {
        0 => Answer::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "2"),
        _ => openrouter_reply("after the cooldown"),
    });
    let other = Stand::one_at_a_time(|_, _| openrouter_reply("not limited"));
    let a = make_provider("openrouter", &settings_for(&limited.url)).unwrap();
    let b = make_provider("openrouter", &settings_for(&other.url)).unwrap();
    let ask = |p: &dyn jarvis::llm::ChatProvider| p.complete(&[Message::user("x")], 10, None, None);

    let err = ask(a.as_ref()).unwrap_err();
    let jarvis::llm::CallError::Llm(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind(), ErrorKind::RateLimit);

    let started = Instant::now();
    assert_eq!(ask(b.as_ref()).unwrap(), "not limited");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the other provider is not held back: {:?}",
        started.elapsed()
    );

    let started = Instant::now();
    assert_eq!(ask(a.as_ref()).unwrap(), "after the cooldown");
    let waited = started.elapsed();
    let seen = limited.seen();
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_secs(2),
        "the next request came {gap:?} after the 429"
    );
    assert!(
        waited >= Duration::from_millis(1500),
        "the caller itself waited: {waited:?}"
    );
}
