//! Research in the real browser: the composer's Research switch, the
//! run's progress inside the answer (the plan, each sub-agent's state),
//! the report with its citations and the "Review in the editor" card, and
//! the report draft's review part by part — desktop and phone. The model
//! is a stand-in on the Ollama wire that answers by what each request is
//! (planner, sub-agent, report writer), slow enough for the progress to be
//! seen. Screenshots land in `target/screenshots/`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::browser::Browser;
use crate::support::chat::NOTES;
use crate::support::fakes::llm::Reply as Canned;
use crate::support::fakes::stand::{Answer, Stand};
use crate::support::fakes::wires::Wire;
use crate::support::fs::write;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";

const REPORT: &str = "Your notes cover both: pasta boils for nine minutes in salted water [1], and the quarterly budget review is on Friday [2].\n\n## Cooking\n\nBoil the pasta in salted water for nine minutes; garlic and oil make a budget dinner [1].\n\n## The budget\n\nThe quarterly review is on Friday, and travel spending is over plan [2].\n\n## Open questions\n\nThe notes do not say who attends the review.";

/// The stand-in's answer to one request on the Ollama wire.
fn answer(path: &str, body: &str) -> Answer {
    let wire = Wire::Ollama;
    if path == "/api/tags" {
        // The model indicator's probe: the model is installed.
        return Answer::json(json!({ "models": [{ "name": "qwen3-vl:30b", "model": "qwen3-vl:30b", "size": 1 }] }));
    }
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let msgs = v["messages"].as_array().cloned().unwrap_or_default();
    let last_user = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    let text = |t: &str| {
        let mut c = wire.text_events(&[t]);
        c.extend(wire.finish("stop"));
        c.concat()
    };
    let ndjson = if last_user.contains("You plan a research report") {
        text("1. How long does pasta boil?\n2. When is the budget review?")
    } else if last_user.contains("You write a research report") {
        std::thread::sleep(Duration::from_millis(600));
        text(REPORT)
    } else if msgs.iter().any(|m| m["role"] == "tool") {
        // Slow enough for the progress to be on screen a while.
        std::thread::sleep(Duration::from_millis(1500));
        text("The note says so [1].")
    } else {
        let sub = last_user.split("Your sub-question: ").nth(1).unwrap_or("pasta");
        match wire.tool_calls(&[("c1", "search_kb", vec![&json!({ "query": sub }).to_string()])]) {
            Canned::Stream { chunks, .. } => chunks.concat(),
            _ => unreachable!(),
        }
    };
    Answer::ok("application/x-ndjson", ndjson.into_bytes())
}

fn web(llm_url: &str) -> (WebServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    for (rel, text) in NOTES.iter().filter(|(p, _)| !p.starts_with("private/")) {
        write(&vault, rel, text);
    }
    let s = WebServer::with_llm(
        llm_url,
        &format!(
            "\n[vault]\npath = \"{}\"\n\n[research]\nconcurrency = 2\n",
            vault.display()
        ),
    );
    let opts = jarvis::ingest::vault::VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    jarvis::ingest::vault::refresh_vault(
        &s.app.kb().unwrap(),
        &vault,
        &opts,
        &|_, _| {},
        &jarvis::cancel::Cancel::new(),
    )
    .unwrap();
    (s, dir)
}

#[test]
fn research_runs_from_the_composer_and_its_report_is_reviewed_in_parts() {
    let llm = Stand::start(|seen, _| answer(&seen.path, &seen.body));
    let (s, _dir) = web(&llm.url);
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.click("#research");
    assert_eq!(
        b.js("return [document.querySelector('#research').getAttribute('aria-checked'), document.querySelector('#input').placeholder]"),
        json!(["true", "Research a question in your library…"])
    );
    b.type_into("#input", &format!("Pasta and the budget: what do my notes say?{ENTER}"));
    b.wait(
        "both sub-agents at work",
        "return document.querySelectorAll('.research-progress li[data-state=\"running\"]').length === 2",
    );
    assert_eq!(
        b.js("return [...document.querySelectorAll('.research-q')].map((e) => e.textContent)"),
        json!(["How long does pasta boil?", "When is the budget review?"])
    );
    assert_eq!(
        b.js("return document.querySelector('#research').getAttribute('aria-checked')"),
        json!("false"),
        "a research question is one message: the switch is off again"
    );
    b.screenshot("research-01-desktop-progress");
    b.wait(
        "the report",
        "return document.querySelectorAll('.msg.assistant .md a.cite').length >= 4 && document.querySelector('.proposal-card')",
    );
    assert_eq!(
        b.js("return [...document.querySelectorAll('.research-progress li')].map((l) => l.dataset.state)"),
        json!(["done", "done"])
    );
    assert!(b
        .js("return document.querySelector('.research-progress .research-step').textContent")
        .as_str()
        .unwrap()
        .contains("suggested change"));
    assert_eq!(
        b.js("return document.querySelectorAll('.msg.assistant .status-badge.not-library').length"),
        json!(0),
        "a cited report carries no library label"
    );
    b.screenshot("research-02-desktop-report");

    // The draft: the report waits as a suggestion, one part per section.
    b.js("document.querySelector('.proposal-card button').click()");
    b.wait(
        "the report's review",
        "return document.querySelectorAll('.rv-controls').length >= 5",
    );
    let progress = b.js("return document.querySelector('#rv-progress').textContent");
    assert!(progress.as_str().unwrap().starts_with("0 of "), "{progress}");
    b.screenshot("research-03-desktop-draft-review");

    // Phone width: the same report and its review.
    b.resize(390, 844);
    b.screenshot("research-04-phone-draft-review");
    b.js("document.querySelector('#view-chat').click()");
    b.wait(
        "the chat again",
        "return document.querySelector('#view-chat').getAttribute('aria-selected') === 'true' && document.querySelector('.research-progress')",
    );
    b.js("document.querySelector('.research-progress').scrollIntoView({block: 'start'})");
    b.screenshot("research-05-phone-report");
    let overflow = b.js("return document.documentElement.scrollWidth - document.documentElement.clientWidth");
    assert_eq!(overflow, json!(0), "nothing wider than the phone");
}
