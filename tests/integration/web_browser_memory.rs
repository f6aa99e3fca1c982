//! Long-term memory in a real browser: the stand-in model asks to remember
//! a fact, the answer says it proposed one, the Memory view shows it
//! waiting; accepted there, the next request to the model carries it in
//! "What I remember about you" and the answer says it used it; forgotten
//! there (with the toast's Undo on offer), the next request is without it.
//! A rejected proposal never reaches the model. Screenshots of the Memory
//! view at desktop and phone widths land in `target/screenshots/`.

use serde_json::json;

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";
const HEADING: &str = "What I remember about you";

fn system_of(llm: &FakeServer, i: usize) -> String {
    llm.requests()[i].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn send(b: &Browser, text: &str, replies: usize) {
    b.type_into("#input", &format!("{text}{ENTER}"));
    b.wait(
        "the reply",
        &format!("return document.querySelectorAll('.msg.assistant .md').length >= {replies} && !document.querySelector('.bubble.streaming')"),
    );
}

fn open_memory(b: &Browser) {
    b.js("document.querySelector('#menu-button').click()");
    b.click("#menu [data-action='memory']");
    b.wait(
        "the Memory view",
        "return !!document.querySelector('#memory-body .mem-sec')",
    );
}

#[test]
fn the_memory_view_reviews_a_proposal_and_the_model_sees_only_what_was_accepted() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[
            (
                "c1",
                "remember",
                vec![r#"{"category":"project","key":"thesis","text":"Writes a PhD thesis on coral reef acoustics."}"#],
            ),
            (
                "c2",
                "remember",
                vec![r#"{"category":"person","key":"advisor","text":"Advisor is Prof. Ito at Kyoto."}"#],
            ),
        ]),
        Wire::Ollama.text(&["Noted — I proposed to remember that."]),
        Wire::Ollama.text(&["Your reef thesis, due in 2027."]),
        Wire::Ollama.text(&["I no longer know about a thesis."]),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    send(
        &b,
        "I am writing a PhD thesis on coral reef acoustics with Prof. Ito.",
        1,
    );
    let note = text_of(&b, ".msg.assistant .mem-notes");
    assert!(note.contains("Proposed 2 facts to remember"), "{note}");
    assert!(
        !system_of(&llm, 1).contains(HEADING),
        "nothing accepted, nothing injected"
    );

    // The Memory view: both wait for review.
    open_memory(&b);
    b.wait(
        "two proposals",
        "return document.querySelectorAll('#memory-body .mem-row.pending').length === 2",
    );
    assert!(text_of(&b, "#memory-count").contains("2 to review"));
    b.screenshot("30-memory-review-desktop");
    // Edit the thesis, then accept it; reject the advisor.
    b.js("[...document.querySelectorAll('#memory-body .mem-row.pending')].find(r => r.textContent.includes('thesis')).querySelector('.acts button:nth-child(2)').click()");
    b.wait(
        "the editor",
        "return !!document.querySelector('#memory-body .mem-edit textarea')",
    );
    b.js("const t = document.querySelector('#memory-body .mem-edit textarea'); t.value = 'Writes a PhD thesis on coral reef acoustics, due 2027.';");
    b.js("document.querySelector('#memory-body .mem-edit').parentElement.querySelector('.acts .btn.primary').click()");
    b.wait(
        "one accepted",
        "return document.querySelectorAll('#memory-body .mem-row:not(.pending)').length === 1",
    );
    b.js("document.querySelector('#memory-body .mem-row.pending .acts .btn.danger').click()");
    b.wait(
        "none pending",
        "return document.querySelectorAll('#memory-body .mem-row.pending').length === 0",
    );
    let accepted = text_of(&b, "#memory-body .mem-row");
    assert!(accepted.contains("due 2027"), "{accepted}");
    b.screenshot("31-memory-accepted-desktop");
    let list = s.get("/memory").json();
    assert_eq!(list["accepted"].as_array().unwrap().len(), 1);
    assert!(list["pending"].as_array().unwrap().is_empty());
    let id = list["accepted"][0]["id"].as_u64().unwrap();
    b.js("document.querySelector('#memory-dialog').close()");

    // The next request carries the accepted fact; the answer says it used it.
    send(&b, "What am I working on?", 2);
    let system = system_of(&llm, 2);
    let at = system.find(HEADING).expect("the summary is injected");
    assert!(
        system[at..].contains("[project] thesis: Writes a PhD thesis on coral reef acoustics, due 2027."),
        "{system}"
    );
    let used = b.js("return [...document.querySelectorAll('.msg.assistant .mem-notes')].map(e => e.textContent)");
    assert!(used.to_string().contains("Used 1 remembered fact"), "{used}");

    // Phone width: the same view, still readable.
    b.resize(400, 800);
    open_memory(&b);
    let m = b.js("return { overflow: document.documentElement.scrollWidth > window.innerWidth + 1, rows: document.querySelectorAll('#memory-body .mem-row').length }");
    assert_eq!(m, json!({ "overflow": false, "rows": 1 }), "{m}");
    b.screenshot("32-memory-phone");

    // Forget it: the toast offers Undo; the next request is without it.
    b.js("document.querySelector('#memory-body .mem-row .acts .btn.danger').click()");
    b.wait(
        "the toast's Undo",
        "return !document.querySelector('#toast').hidden && !!document.querySelector('#toast .toast-action')",
    );
    b.screenshot("33-memory-forgot-phone");
    b.js("document.querySelector('#memory-dialog').close()");
    b.resize(1280, 860);
    send(&b, "And now?", 3);
    assert!(!system_of(&llm, 3).contains(HEADING));
    // The conversation itself names Kyoto; the memory summary never does.
    for i in 0..llm.requests().len() {
        assert!(
            !system_of(&llm, i).contains("Kyoto"),
            "request {i} carries the rejected fact"
        );
    }
    // The Timeline tells the fact's story; the forgetting can be undone.
    let events = s.get("/timeline").json();
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["key"] == format!("memory:{id}"))
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["memory_forgotten", "memory_accepted"]);
    // (The chat's own history events may be newer: pick the fact's.)
    let forgot = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == format!("memory:{id}"))
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    let undone = s.post("/timeline/undo", &json!({ "event": forgot }));
    assert_eq!(undone.status, 200, "{}", undone.text());
    assert_eq!(s.get("/memory").json()["accepted"][0]["id"], json!(id));
    assert_only_app_origin(&b.finish(), &s.url(""));
}
