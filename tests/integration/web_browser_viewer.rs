//! The source viewer in a real browser: a citation opens a side pane on
//! the note at its heading with the passage marked, a PDF at the cited
//! page (the page's picture beside the highlight's text), and a chat
//! passage as its exchange; the chip is one per document; Escape closes
//! the pane and gives focus back; at phone width the pane is the whole
//! screen with a Back control; a Library row opens the same viewer and the
//! Library filter finds a note by its text. Screenshots land in
//! `target/screenshots/`.

use serde_json::json;

use crate::support::browser::Browser;
use crate::support::cite::web_with_vault;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::web_source::{add_pdf, add_risotto, HIGHLIGHT};

const ENTER: &str = "\u{E007}";
const ESC: &str = "\u{E00C}";

/// Click the `i`-th cite link of the last answer and wait for the pane.
fn open_cite(b: &Browser, answer: usize, view: &str) {
    b.js(&format!(
        "document.querySelectorAll('.msg.assistant')[{answer}].querySelector('.md a.cite').click()"
    ));
    b.wait(
        "the viewer",
        &format!("return document.querySelector('#viewer').open && document.querySelector('#viewer-body').dataset.view === '{view}'"),
    );
}

fn close_with_escape(b: &Browser) {
    b.keys(ESC);
    b.wait("the viewer to close", "return !document.querySelector('#viewer').open");
}

#[test]
fn the_viewer_shows_a_note_heading_a_pdf_page_and_a_chat_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let pdf_key = {
        // The key is the PDF's path, known before the model is scripted.
        dir.path().join("throughput.pdf").display().to_string()
    };
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "get_document", vec![r#"{"source":"cooking/risotto.md"}"#])]),
        Wire::Ollama
            .text(&["Add the stock a ladle at a time and keep stirring [4]; then let it rest off the heat [5]."]),
        Wire::Ollama.tool_calls(&[(
            "c2",
            "get_document",
            vec![&format!(r#"{{"source":{}}}"#, json!(pdf_key))],
        )]),
        Wire::Ollama.text(&["The converter was measured on a two-core machine [1]."]),
        Wire::Ollama.tool_calls(&[("c3", "search_chat_history", vec![r#"{"query":"risotto stock ladle"}"#])]),
        Wire::Ollama.text(&["Earlier we talked about risotto: stock goes in a ladle at a time [1]."]),
    ]);
    let (s, vault) = web_with_vault(&llm.url);
    add_risotto(&s, vault.path());
    assert_eq!(add_pdf(&s, dir.path()), pdf_key);

    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.type_into("#input", &format!("How do I make risotto?{ENTER}"));
    b.wait(
        "the cited answer",
        "return document.querySelectorAll('.msg.assistant .md a.cite').length === 2",
    );
    // Two sections of one note: one chip.
    assert_eq!(
        b.js("return document.querySelectorAll('.msg.assistant .sources .chip').length"),
        json!(1)
    );

    // The note, at its heading, the passage marked.
    open_cite(&b, 0, "note");
    b.wait(
        "the marked passage",
        "return document.querySelector('#viewer .viewer-note h2.cited-heading')?.textContent === 'Stock'",
    );
    let marked =
        b.js("return [...document.querySelectorAll('#viewer .viewer-note .passage')].map((e) => e.textContent)");
    assert_eq!(
        marked,
        json!([
            "Stock",
            "Add hot stock one ladle at a time and stir between ladles, about eighteen minutes in all."
        ])
    );
    assert_eq!(
        b.js("return document.querySelectorAll('#viewer-passages .vp').length"),
        json!(2),
        "both passages cited from the note are listed"
    );
    assert_eq!(
        b.js("return document.querySelector('#viewer-open').getAttribute('href')"),
        json!("obsidian://open?vault=vault&file=cooking%2Frisotto%23Stock")
    );
    // The heading is scrolled into view (to the top when the note is long
    // enough to scroll).
    b.wait(
        "the heading in view",
        "const r = document.querySelector('#viewer .cited-heading').getBoundingClientRect(); const body = document.querySelector('#viewer-body'); const top = body.getBoundingClientRect().top; const canScroll = body.scrollHeight - body.clientHeight > r.top - top; return r.top >= top - 1 && r.bottom <= top + body.clientHeight && (!canScroll || r.top < top + 80)",
    );
    assert_eq!(
        b.js("return document.activeElement.id"),
        json!("viewer-close"),
        "focus moves into the pane"
    );
    b.screenshot("viewer-01-desktop-note");
    // The other passage, from the list.
    b.js("document.querySelectorAll('#viewer-passages .vp')[1].click()");
    b.wait(
        "the second passage",
        "return document.querySelector('#viewer .viewer-note h2.cited-heading')?.textContent === 'Resting'",
    );
    close_with_escape(&b);
    b.wait(
        "focus back on the citation",
        "return document.activeElement.classList.contains('cite')",
    );

    // The PDF at the cited page, the highlight beside it.
    b.type_into("#input", &format!("What machine was the converter measured on?{ENTER}"));
    b.wait(
        "the second answer",
        "return document.querySelectorAll('.msg.assistant')[1]?.querySelector('.md a.cite')",
    );
    open_cite(&b, 1, "pdf");
    b.wait(
        "the page picture",
        "const i = document.querySelector('#viewer .pdf-page'); return i && i.complete && i.naturalWidth > 0",
    );
    assert_eq!(
        b.js("return document.querySelector('#viewer .pdf-nav .pg').textContent"),
        json!("Page 2 of 3")
    );
    assert_eq!(
        b.js("return document.querySelector('#viewer .passage-text blockquote').textContent"),
        json!(HIGHLIGHT)
    );
    // The highlight outlined on the page: a box per line, where its words
    // are (the boxes are fractions of the page, laid over the picture).
    b.wait(
        "the highlight's boxes",
        "return document.querySelectorAll('#viewer .pdf-mark:not([hidden])').length === 2",
    );
    let boxes = b.js("const i = document.querySelector('#viewer .pdf-page').getBoundingClientRect(); return [...document.querySelectorAll('#viewer .pdf-mark')].map((m) => { const r = m.getBoundingClientRect(); return [(r.left - i.left) / i.width, (r.top - i.top) / i.height, (r.right - i.left) / i.width]; })");
    let boxes = boxes.as_array().unwrap();
    let near = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.01;
    assert!(
        near(&boxes[0][0], 0.678)
            && near(&boxes[0][1], 0.068)
            && near(&boxes[1][0], 0.508)
            && near(&boxes[1][2], 0.905),
        "{boxes:?}"
    );
    b.screenshot("viewer-02-desktop-pdf");
    // The next page has no box; back on the cited page it is there again.
    b.js("document.querySelector('#viewer .pdf-nav button[aria-label=\"Next page\"]').click()");
    b.wait(
        "page 3 without the box",
        "return document.querySelector('#viewer .pdf-nav .pg').textContent === 'Page 3 of 3' && document.querySelectorAll('#viewer .pdf-mark:not([hidden])').length === 0",
    );
    b.js("document.querySelector('#viewer .pdf-nav button[aria-label=\"Previous page\"]').click()");
    b.wait(
        "page 2 with the box",
        "return document.querySelectorAll('#viewer .pdf-mark:not([hidden])').length === 2",
    );
    b.resize(390, 844);
    b.screenshot("viewer-02b-phone-pdf-highlight");
    b.resize(1280, 860);
    close_with_escape(&b);

    // A chat passage: the exchange of the earlier session. Wait until the
    // first session's exchanges are indexed, then ask in a new one.
    let kb = s.app.kb().unwrap();
    let t0 = std::time::Instant::now();
    while kb
        .list_documents(&jarvis::index::Filter::default(), usize::MAX)
        .unwrap()
        .iter()
        .all(|d| d.doc_type != "chat")
    {
        assert!(t0.elapsed().as_secs() < 60, "the chat history was never indexed");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    b.click("#new-chat");
    b.wait(
        "a fresh session",
        "return document.querySelectorAll('.msg.assistant').length === 0",
    );
    b.type_into("#input", &format!("What did we say about risotto?{ENTER}"));
    b.wait(
        "the chat answer",
        "return document.querySelector('.msg.assistant .md a.cite')",
    );
    open_cite(&b, 0, "chat");
    let said = b.js("return [...document.querySelectorAll('#viewer .vmsg')].map((m) => m.className + ': ' + m.querySelector('.bubble').textContent)");
    let said = said.as_array().unwrap();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0]
            .as_str()
            .unwrap()
            .starts_with("vmsg user: How do I make risotto?"),
        "{said:?}"
    );
    assert!(
        said[1].as_str().unwrap().contains("Add the stock a ladle at a time"),
        "{said:?}"
    );
    b.screenshot("viewer-03-desktop-chat");
    close_with_escape(&b);

    // The Library: the filter finds the note by its text, the row opens it.
    b.js("document.querySelector('#open-library').click()");
    b.js("document.querySelector('[data-kind=notes]').click()");
    b.type_into("#library-search", "carnaroli");
    b.wait(
        "the text match",
        "return document.querySelectorAll('#library-body tbody tr').length === 1 && document.querySelector('#library-body .found')?.textContent.includes('carnaroli')",
    );
    assert_eq!(
        b.js("return document.querySelector('#library-body .open-btn .sub').textContent"),
        json!("cooking/risotto.md"),
        "found by its text, not its title or path"
    );
    assert_eq!(
        b.js("return document.querySelector('#library-body .found').textContent.startsWith('…Rice Use carnaroli')"),
        json!(true),
        "the words around the match, without Markdown marks"
    );
    b.js("document.querySelector('#library-body .open-btn').click()");
    b.wait(
        "the note from the Library",
        "return document.querySelector('#viewer').open && document.querySelector('#viewer-body').dataset.view === 'note'",
    );
    b.screenshot("viewer-04-desktop-library");
    close_with_escape(&b);
    assert_eq!(
        b.js("return document.querySelector('#library-dialog').open"),
        json!(true),
        "Escape closes the viewer, not the Library under it"
    );

    // On a phone: the pane is the whole screen, with a Back control.
    b.resize(390, 844);
    let sessions = s.get("/sessions").json();
    let first = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| {
            x["title"].as_str().unwrap_or("").contains("risotto?")
                && x["title"].as_str().unwrap_or("").starts_with("How")
        })
        .unwrap_or_else(|| panic!("{sessions}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(s.post(&format!("/sessions/{first}/resume"), &json!({})).status, 200);
    b.goto(&s.url("/"));
    b.wait(
        "the first session",
        "return document.querySelectorAll('.msg.assistant .md a.cite').length === 3",
    );
    let overflow = b.js("return document.documentElement.scrollWidth - window.innerWidth");
    assert_eq!(overflow, json!(0), "chips fit 390 px");
    b.screenshot("viewer-05-phone-chips");
    open_cite(&b, 0, "note");
    let rect = b.js("const r = document.querySelector('#viewer').getBoundingClientRect(); return [r.left, r.width]");
    assert_eq!(rect, json!([0, 390]), "full screen");
    assert_eq!(
        b.js("return [getComputedStyle(document.querySelector('#viewer-close .back-word')).display !== 'none', getComputedStyle(document.querySelector('#viewer-close .x')).display]"),
        json!([true, "none"]),
        "a Back control, not a cross"
    );
    b.screenshot("viewer-06-phone-note");
    b.click("#viewer-close");
    b.wait("the viewer to close", "return !document.querySelector('#viewer').open");
    open_cite(&b, 1, "pdf");
    b.wait(
        "the page picture",
        "const i = document.querySelector('#viewer .pdf-page'); return i && i.complete && i.naturalWidth > 0",
    );
    b.screenshot("viewer-07-phone-pdf");
}
