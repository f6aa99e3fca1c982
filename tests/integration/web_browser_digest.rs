//! The Digest view in a real browser: recent digests as cards, 👍 / 👎
//! recorded where the next digest reads them (and taken back by a second
//! press), the view opened from a digest file's link at its paper, desktop
//! and phone. Screenshots land in `target/screenshots/`.

use serde_json::json;

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::web::WebServer;
use jarvis::digest::feedback;
use jarvis::digest::render::Tiers;
use jarvis::digest::score::Scored;
use jarvis::digest::{Candidate, Origin};

fn scored(n: usize, title: &str, score: i64, track: &str) -> Scored {
    Scored {
        candidate: Candidate {
            key: format!("arxiv:2412.{n:05}"),
            link: format!("https://arxiv.org/abs/2412.{n:05}"),
            title: title.into(),
            authors: vec!["Ada Lovelace".into(), "Alan Turing".into()],
            abstract_text: format!(
                "We study {}. Our method improves on prior work in three ways, and we release code and data.",
                title.to_lowercase()
            ),
            date: "2026-12-04".into(),
            origin: Origin::Arxiv {
                id: format!("2412.{n:05}"),
                primary_category: Some("q-bio.BM".into()),
                pdf_url: None,
            },
            via: "arXiv q-bio.BM".into(),
        },
        score,
        track: track.into(),
        summary: format!(
            "A two-sentence summary of {}. It matters for structure work.",
            title.to_lowercase()
        ),
        why: "Close to your notes on protein folding.".into(),
    }
}

fn votes(s: &WebServer) -> Vec<(String, String)> {
    let state = s.sandbox.jarvis_home().join("state");
    feedback::votes(&state)
        .unwrap()
        .into_iter()
        .map(|(k, f)| (k, f.vote.as_str().to_string()))
        .collect()
}

#[test]
fn digest_cards_take_votes_and_open_from_a_link() {
    let s = WebServer::with_llm("http://127.0.0.1:9", "");
    let state = s.sandbox.jarvis_home().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let tiers = Tiers::split(
        vec![
            scored(
                10001,
                "Equivariant transformers for protein structure prediction",
                9,
                "structure",
            ),
            scored(10002, "Protein folding landscapes from language models", 8, "folding"),
            scored(
                10003,
                "Diffusion models for de novo protein backbone design",
                6,
                "design",
            ),
            scored(10004, "Roasting curves and acidity in specialty coffee", 3, "other"),
        ],
        10,
    );
    feedback::record_run(&state, "2026-12-07", &state.join("digest-2026-12-07.md"), &tiers).unwrap();

    let b = Browser::start(1280, 900);
    b.goto(&s.url("/"));
    b.wait("the app", "return !!document.querySelector('#menu-button')");
    b.js("document.querySelector('#menu-button').click()");
    b.click("#menu [data-action='digest']");
    b.wait(
        "the cards",
        "return document.querySelectorAll('#digest-body .dg-card').length === 4",
    );
    let first = text_of(&b, "#digest-body .dg-card");
    assert!(
        first.contains("9/10") && first.contains("Equivariant transformers"),
        "{first}"
    );
    assert!(first.contains("Close to your notes on protein folding."), "{first}");
    assert!(text_of(&b, "#digest-count").contains("1 digest · 4 papers"));
    b.screenshot("31-digest-desktop");

    // 👍 on the first, 👎 on the coffee paper: both recorded.
    b.click("#digest-body .dg-card:nth-child(1) .vote");
    b.wait("liked", "return document.querySelector('#digest-body .dg-card:nth-child(1) .vote')?.getAttribute('aria-pressed') === 'true'");
    b.click("#digest-body .dg-card:nth-child(4) .vote:nth-child(2)");
    b.wait("disliked", "return document.querySelector('#digest-body .dg-card:nth-child(4) .vote:nth-child(2)')?.getAttribute('aria-pressed') === 'true'");
    assert_eq!(
        votes(&s),
        vec![
            ("arxiv:2412.10001".to_string(), "up".to_string()),
            ("arxiv:2412.10004".to_string(), "down".to_string())
        ]
    );
    b.screenshot("32-digest-voted-desktop");
    // A second press takes the 👍 back.
    b.click("#digest-body .dg-card:nth-child(1) .vote");
    b.wait("cleared", "return document.querySelector('#digest-body .dg-card:nth-child(1) .vote')?.getAttribute('aria-pressed') === 'false'");
    assert_eq!(votes(&s), vec![("arxiv:2412.10004".to_string(), "down".to_string())]);

    // A digest file's link opens the view at its paper, on a phone.
    b.resize(390, 844);
    b.goto(&s.url("/#digest=arxiv%3A2412.10003"));
    b.wait("focused card", "return document.querySelector('#digest-dialog')?.open && !!document.querySelector('#digest-body .dg-card.focus')");
    assert!(text_of(&b, "#digest-body .dg-card.focus").contains("backbone design"));
    b.screenshot("33-digest-phone");
    assert_only_app_origin(&b.finish(), &s.url(""));

    // The routes refuse what they do not know, saying what to use.
    let r = s.post("/digest/vote", &json!({ "key": "arxiv:2412.10001", "vote": "meh" }));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("up, down or clear"), "{}", r.text());
    let r = s.post("/digest/vote", &json!({ "key": "arxiv:2401.99999", "vote": "up" }));
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("recent digests"), "{}", r.text());
    let r = s.post("/digest/add", &json!({ "key": "arxiv:2401.99999" }));
    assert_eq!(r.status, 404, "{}", r.text());
}
