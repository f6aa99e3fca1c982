//! The event log in a real browser: the agent removes a paper after the
//! human's confirmation, the user removes another in the Library and takes
//! it back with the toast's Undo, and the Timeline shows every change —
//! the agent's visibly the agent's, with the session and the confirmation
//! token — with its Undo; the agent's suggested draft edit, applied by the
//! human, shows as the agent's too, and the kind filter finds it.
//! Screenshots land in `target/screenshots/`.

use serde_json::json;

use jarvis::drafts::Visibility;

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::web::{add_paper, WebServer};

const ENTER: &str = "\u{E007}";
const ATTENTION: &str = "https://arxiv.org/abs/1706.03762";
const BERT: &str = "https://arxiv.org/abs/1810.04805";

fn papers(s: &WebServer) -> Vec<String> {
    let mut out: Vec<String> = s.get("/documents?kind=papers").json()["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["source"].as_str().unwrap_or("").to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn the_timeline_shows_the_agents_removal_and_undo_brings_papers_back() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "remove_document", vec![&format!(r#"{{"source":"{ATTENTION}"}}"#)])]),
        Wire::Ollama.text(&["I have asked you to confirm the removal."]),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    add_paper(&s, "Attention Is All You Need", ATTENTION);
    add_paper(&s, "BERT", BERT);
    // The agent's suggested edit to a draft, applied by the human's answer.
    let d = s.app.drafts().unwrap();
    let draft = d
        .workspace
        .create_draft(
            "Chapter one",
            "ch.md",
            "first\nsecond\n",
            Visibility::Public,
            Some("s-draft"),
        )
        .unwrap();
    let p = d
        .proposals
        .propose_edit(&d.workspace, &draft.id, "ch.md", "first\nthe second\n", Some("s-draft"))
        .unwrap();
    let r = s.post("/apply-edit", &json!({ "token": p.token, "indices": [0] }));
    assert_eq!(r.status, 200, "{}", r.text());
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );

    // The agent asks; the human confirms; the paper goes.
    b.type_into("#input", &format!("Remove the attention paper{ENTER}"));
    b.wait(
        "answerable once the reply is saved",
        "return document.querySelector('.card.confirm .btn.danger')?.disabled === false",
    );
    b.click(".card.confirm .btn.danger");
    b.wait(
        "the outcome",
        "return document.querySelector('.card.confirm .outcome')?.textContent.includes('No files were touched')",
    );
    assert_eq!(papers(&s), vec![BERT.to_string()]);

    // The user removes BERT in the Library; the toast offers Undo.
    b.click("#open-library");
    b.wait(
        "the library row",
        "return document.querySelectorAll('#library-body tbody tr').length === 1",
    );
    b.click("#library-body tbody tr .acts button:last-child");
    b.wait(
        "removal confirm",
        "return !!document.querySelector('#library-body .confirm-row .btn.danger')",
    );
    b.click("#library-body .confirm-row .btn.danger");
    b.wait(
        "the toast's Undo",
        "return !document.querySelector('#toast').hidden && !!document.querySelector('#toast .toast-action')",
    );
    assert!(papers(&s).is_empty());
    b.screenshot("21-removal-toast-undo-desktop");
    b.click("#toast .toast-action");
    b.wait(
        "BERT back in the Library",
        "return [...document.querySelectorAll('#library-body tbody .t')].some(e => e.textContent === 'BERT')",
    );
    assert_eq!(papers(&s), vec![BERT.to_string()]);
    b.js("document.querySelector('#library-dialog').close()");

    // The Timeline: newest first, the agent's removal marked as the agent's.
    b.js("document.querySelector('#menu-button').click()");
    b.click("#menu [data-action='timeline']");
    b.wait(
        "the timeline rows",
        "return document.querySelectorAll('#timeline-body .tl-row').length >= 5",
    );
    let agent = text_of(&b, "#timeline-body .tl-row.by-agent");
    assert!(agent.contains("Attention Is All You Need"), "{agent}");
    assert!(agent.contains("the agent in chat"), "{agent}");
    assert!(agent.contains("after your confirmation"), "{agent}");
    assert!(
        b.js("return !!document.querySelector('#timeline-body .tl-row.by-agent .acts button')")
            .as_bool()
            .unwrap(),
        "the agent's removal can be undone"
    );
    let first = text_of(&b, "#timeline-body .tl-row");
    assert!(
        first.to_lowercase().contains("undo of #"),
        "the undo is the newest event: {first}"
    );
    let rows = s.get("/timeline").json();
    let removal = rows["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["actor"]["by"] == "agent")
        .unwrap()
        .clone();
    assert_eq!(removal["kind"], "removed");
    assert!(removal["actor"]["session"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(removal["actor"]["token"].as_str().is_some_and(|t| !t.is_empty()));
    let edit = text_of(&b, "#timeline-body .tl-row.by-agent:has(.k-draft_edit_applied)");
    assert!(
        edit.to_lowercase().contains("suggested edit applied to draft"),
        "{edit}"
    );
    assert!(edit.contains("Chapter one"), "{edit}");
    assert!(edit.contains("1 suggested change to ch.md"), "{edit}");
    assert!(edit.contains("the agent in chat s-draft"), "{edit}");
    b.screenshot("22-timeline-desktop");

    // Undo the agent's removal from the Timeline.
    b.click("#timeline-body .tl-row.by-agent .acts button");
    b.wait(
        "the undo on top",
        &format!(
            "return (document.querySelector('#timeline-body .tl-row .tl-kind')?.textContent || '').startsWith('Undo of #{}')",
            removal["id"]
        ),
    );
    assert_eq!(papers(&s), vec![ATTENTION.to_string(), BERT.to_string()]);
    // A refused undo says why, and changes nothing.
    let again = s.post("/timeline/undo", &json!({ "event": removal["id"] }));
    assert_eq!(again.status, 409, "{}", again.text());
    assert!(again.text().contains("added again"), "{}", again.text());
    b.screenshot("23-timeline-after-undo-desktop");
    // The "What" filter lists the kinds of files' records too.
    b.js("const k = document.querySelector('#timeline-kind'); k.value = 'draft_edit_applied'; k.dispatchEvent(new Event('change'))");
    b.wait(
        "only the draft edit",
        "return document.querySelectorAll('#timeline-body .tl-row').length === 1 && !!document.querySelector('#timeline-body .k-draft_edit_applied')",
    );
    b.screenshot("24-timeline-draft-filter-desktop");
    assert_only_app_origin(&b.finish(), &s.url(""));
}
