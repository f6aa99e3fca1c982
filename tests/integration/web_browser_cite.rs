//! Citations in a real browser: a valid `[n]` is a small link (the made-up
//! one is gone), it is reachable by keyboard, and following it flashes the
//! source chip it names and opens the source viewer — live, after a reload
//! and at phone width; an answer citing nothing after a search carries
//! "Not from your library".
//! Screenshots land in `target/screenshots/`.

use serde_json::json;

use crate::support::browser::Browser;
use crate::support::cite::{cited_turn, web_with_vault, CHECKED, QUESTION};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;

const ENTER: &str = "\u{E007}";

/// The first answer's cite links and whether following one flashes the
/// chip numbered with it.
fn follow_first_cite(b: &Browser, how: &str) {
    b.js("document.querySelectorAll('.chip.flash').forEach((c) => c.classList.remove('flash'))");
    match how {
        "click" => b.click(".msg.assistant .md a.cite"),
        _ => {
            b.js("document.querySelector('.msg.assistant .md a.cite').focus()");
            b.keys(ENTER);
        }
    }
    b.wait(
        "the cited chip to flash",
        "return document.querySelector('.msg.assistant .chip.flash .n')?.textContent === '1'",
    );
    assert_eq!(
        b.js("return location.hash"),
        json!(""),
        "following a citation does not navigate"
    );
    // It also opens the source viewer on the cited note (its own test is
    // web_browser_viewer); Escape closes it.
    b.wait(
        "the source viewer",
        "return document.querySelector('#viewer').open && document.querySelector('#viewer-title').textContent === 'Pasta'",
    );
    b.keys("\u{E00C}");
    b.wait("the viewer to close", "return !document.querySelector('#viewer').open");
}

#[test]
fn a_citation_is_a_link_to_its_chip_live_after_a_reload_and_on_a_phone() {
    let mut replies = cited_turn(Wire::Ollama);
    replies.push(Wire::Ollama.tool_calls(&[("c2", "search_kb", vec![r#"{"query":"ferry timetable"}"#])]));
    replies.push(Wire::Ollama.text(&["Your notes say nothing about ferries; I searched for a ferry timetable."]));
    let llm = FakeServer::start(replies);
    let (s, _vault) = web_with_vault(&llm.url);
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.type_into("#input", &format!("{QUESTION}{ENTER}"));
    b.wait(
        "the cited answer",
        "return document.querySelectorAll('.msg.assistant .md a.cite').length === 1",
    );
    let text = b.js("return document.querySelector('.msg.assistant .md').textContent");
    let shown = text.as_str().unwrap();
    assert!(!shown.contains("[7]"), "the made-up marker is gone: {shown}");
    assert!(shown.contains("invented in 1154."), "{shown}");
    assert_eq!(
        b.js("return document.querySelector('.msg.assistant .md a.cite').title"),
        json!("[1] — Pasta — Pasta"),
        "the link names its note and heading"
    );
    assert!(b
        .js("return document.querySelector('.msg.assistant .meta-line').textContent")
        .as_str()
        .unwrap()
        .contains("1 citation named no source and was removed"));
    follow_first_cite(&b, "click");
    b.screenshot("cite-01-desktop-link-and-chip");

    // The second answer cites nothing it found: labelled.
    b.type_into("#input", &format!("When does the ferry leave?{ENTER}"));
    b.wait(
        "the label",
        "return document.querySelectorAll('.msg.assistant')[1]?.querySelector('.not-library')?.textContent === 'Not from your library'",
    );
    assert_eq!(
        b.js("return document.querySelectorAll('.msg.assistant')[0].querySelector('.not-library')"),
        json!(null),
        "the cited answer carries no label"
    );
    b.screenshot("cite-02-desktop-not-from-library");

    // A reload shows the same links and label, and the keyboard follows them.
    b.goto(&s.url("/"));
    b.wait(
        "the reloaded answer",
        "return document.querySelectorAll('.msg.assistant .md a.cite').length === 1",
    );
    // The link shows its number alone; the text around it is the checked
    // answer's.
    let reloaded = b.js("return document.querySelector('.msg.assistant .md').textContent");
    assert_eq!(reloaded.as_str().unwrap().trim(), CHECKED.replace("[1]", "1"));
    assert_eq!(
        b.js("return document.querySelectorAll('.not-library').length"),
        json!(1)
    );
    follow_first_cite(&b, "keyboard");

    // At phone width the link and the chips fit the screen.
    b.resize(390, 844);
    b.goto(&s.url("/"));
    b.wait(
        "the answer on a phone",
        "return document.querySelectorAll('.msg.assistant .md a.cite').length === 1",
    );
    follow_first_cite(&b, "click");
    let overflow = b.js("return document.documentElement.scrollWidth - window.innerWidth");
    assert_eq!(overflow, json!(0), "nothing sticks out sideways at 390 px");
    b.screenshot("cite-03-phone");
}
