//! The web app in a real browser (Debian's chromium, headless) against the
//! real server and fake LLM servers. Screenshots of the main views land in
//! `target/screenshots/`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::{End, FakeServer};
use crate::support::fakes::wires::Wire;
use crate::support::web::{add_paper, WebServer};

const ENTER: &str = "\u{E007}";
const ESC: &str = "\u{E00C}";

fn slow() -> crate::support::fakes::llm::Reply {
    let tick = Wire::Ollama.text_events(&[" tick"]).remove(0);
    Wire::Ollama
        .reply(Wire::Ollama.text_events(&["Once"]))
        .with_end(End::Hang {
            trickle: Some(tick),
            every: Duration::from_millis(200),
        })
}

#[test]
fn chat_streams_tools_confirms_a_removal_cancels_one_and_stops_a_turn() {
    let pdf_dir = tempfile::tempdir().unwrap();
    let pdf = pdf_dir.path().join("attention.pdf");
    std::fs::write(&pdf, b"%PDF-1.4 stand-in").unwrap();
    let pdf_s = pdf.display().to_string();
    let answer = "The **Transformer** relies on attention alone.\n\n```python\nscores = q @ k.T / sqrt(d)\n```\n\n$$\\mathrm{softmax}\\left(\\frac{QK^T}{\\sqrt{d_k}}\\right)V$$\n\n- parallel\n- no recurrence";
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"attention"}"#])]),
        Wire::Ollama.text(&[answer]),
        Wire::Ollama.tool_calls(&[(
            "c2",
            "remove_document",
            vec![&format!(r#"{{"source":{}}}"#, json!(pdf_s))],
        )]),
        Wire::Ollama.text(&["I have asked you to confirm the removal."]),
        Wire::Ollama.tool_calls(&[(
            "c3",
            "remove_document",
            vec![r#"{"source":"https://arxiv.org/abs/1810.04805"}"#],
        )]),
        Wire::Ollama.text(&["Waiting for your answer."]),
        slow(),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    add_paper(&s, "Attention Is All You Need", &pdf_s);
    add_paper(&s, "BERT", "https://arxiv.org/abs/1810.04805");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.wait(
        "the model label",
        "return document.querySelector('#model-label').textContent.startsWith('ollama')",
    );
    b.screenshot("01-welcome-desktop");

    // Send with Enter; the tool box fills, the reply renders as Markdown.
    b.type_into("#input", &format!("What is attention?{ENTER}"));
    b.wait(
        "the tool box",
        "return document.querySelector('.tools-box .tool .nm')?.textContent === 'search_kb'",
    );
    b.wait(
        "the rendered reply",
        "return document.querySelector('.msg.assistant .md strong')?.textContent === 'Transformer'",
    );
    assert!(
        b.js("return !!document.querySelector('.msg.assistant .md math')")
            .as_bool()
            .unwrap(),
        "maths as MathML"
    );
    assert!(b
        .js("return !!document.querySelector('.msg.assistant .md pre code')")
        .as_bool()
        .unwrap());
    assert_eq!(b.js("return document.querySelectorAll('.msg.user').length"), json!(1));
    b.wait(
        "the sidebar entry",
        "return document.querySelectorAll('#session-list .session').length === 1",
    );
    b.screenshot("02-chat-desktop");

    // A removal the model asks for waits for the human; Confirm removes it.
    b.type_into("#input", &format!("Remove the attention paper{ENTER}"));
    b.wait(
        "the confirmation card",
        "return !!document.querySelector('.card.confirm .invariant')",
    );
    let inv = text_of(&b, ".card.confirm .invariant");
    assert!(
        inv.starts_with("Database entry only — files on disk are never touched by jarvis"),
        "{inv}"
    );
    b.wait(
        "answerable once the reply is saved",
        "return document.querySelector('.card.confirm .btn.danger')?.disabled === false",
    );
    b.screenshot("03-confirm-desktop");
    b.click(".card.confirm .btn.danger");
    b.wait(
        "the outcome",
        "return document.querySelector('.card.confirm .outcome')?.textContent.includes('No files were touched')",
    );
    let docs = s.get("/documents?kind=papers").json();
    assert_eq!(docs["documents"].as_array().unwrap().len(), 1, "{docs}");
    assert!(pdf.exists(), "the PDF is never touched");

    // A second request: Cancel keeps the paper.
    b.type_into("#input", &format!("Remove BERT too{ENTER}"));
    b.wait("the second card", "return document.querySelectorAll('.card.confirm').length === 2 && document.querySelectorAll('.card.confirm')[1].querySelector('.btn.ghost')?.disabled === false");
    b.js("document.querySelectorAll('.card.confirm')[1].querySelector('.btn.ghost').click()");
    let kept = b.wait(
        "the answer",
        "return document.querySelectorAll('.card.confirm')[1].querySelector('.outcome:not([hidden])')?.textContent",
    );
    assert!(kept.as_str().unwrap().starts_with("Kept"), "{kept}");
    assert_eq!(
        s.get("/documents?kind=papers").json()["documents"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Stop a running turn: Stop beside Send (which now queues), Esc stops, the text comes back.
    b.type_into("#input", &format!("Tell me a very long story{ENTER}"));
    b.wait(
        "the stop button",
        "return !document.querySelector('#stop').hidden && document.querySelector('#send').textContent === 'Queue'",
    );
    b.wait(
        "the busy dot",
        "return !!document.querySelector('#session-list .busy-dot')",
    );
    b.screenshot("04-working-desktop");
    b.keys(ESC);
    b.wait(
        "the text back in the composer",
        "return document.querySelector('#input').value === 'Tell me a very long story'",
    );
    b.wait("Send again", "return document.querySelector('#stop').hidden");
    assert_eq!(
        b.js("return [...document.querySelectorAll('.msg.user')].some(m => m.textContent.includes('very long story'))"),
        json!(false)
    );
    // The stream ends first; the rollback lands right after it.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let h = s.get("/history").json();
        if h["entries"].as_array().unwrap().len() == 6 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the stopped turn was not rolled back: {h}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}

#[test]
fn sessions_in_parallel_reload_resume_library_prompts_models_and_a_narrow_screen() {
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["First answer."]), slow()]);
    let s = WebServer::with_llm(&llm.url, "[models]\nollama = [\"small:1b\"]\n");
    add_paper(&s, "Attention Is All You Need", "https://arxiv.org/abs/1706.03762");
    add_paper(&s, "Deep Residual Learning", "https://arxiv.org/abs/1512.03385");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.type_into("#input", &format!("hello{ENTER}"));
    b.wait(
        "the first reply",
        "return document.querySelector('.msg.assistant .md')?.textContent.includes('First answer')",
    );
    b.wait(
        "the session row",
        "return document.querySelectorAll('#session-list .session').length === 1",
    );
    b.wait(
        "the turn settled",
        "return document.querySelector('#stop').hidden && !document.querySelector('#session-list .busy-dot')",
    );
    std::thread::sleep(Duration::from_millis(300));

    // Rename and pin from the sidebar.
    b.click("#session-list .session .tools button[aria-label^='Rename']");
    b.wait("the rename box", "return !!document.querySelector('.rename-input')");
    b.js("document.querySelector('.rename-input').value = ''");
    b.type_into(".rename-input", &format!("Greetings{ENTER}"));
    b.wait(
        "the new title",
        "return document.querySelector('#session-list .session-name')?.textContent === 'Greetings'",
    );
    b.click("#session-list .session .tools button[aria-label^='Pin']");
    b.wait(
        "the pinned group",
        "return document.querySelector('#session-list .group-label')?.textContent === 'Pinned'",
    );

    // Two sessions mid-turn at once; switching never interrupts either.
    b.type_into("#input", &format!("a long question{ENTER}"));
    b.wait("busy 1", "return !document.querySelector('#stop').hidden");
    b.click("#new-chat");
    b.wait(
        "a fresh chat",
        "return document.querySelectorAll('.msg').length === 0 && document.querySelector('#stop').hidden",
    );
    b.type_into("#input", &format!("another long question{ENTER}"));
    b.wait(
        "two busy dots",
        "return document.querySelectorAll('#session-list .busy-dot').length === 2",
    );
    b.screenshot("05-two-sessions-desktop");
    // Half-typed text stays with its session.
    b.type_into("#input", "draft for two");
    b.click("#session-list .session:not(.active) .session-open");
    b.wait(
        "session 1 on screen",
        "return document.querySelector('#session-title').textContent === 'Greetings'",
    );
    b.wait("its live turn", "return [...document.querySelectorAll('.msg.user')].some(m => m.textContent === 'a long question') && !document.querySelector('#stop').hidden");
    assert_eq!(b.js("return document.querySelector('#input').value"), json!(""));
    let busy = s.get("/sessions").json()["busy"].as_array().unwrap().len();
    assert_eq!(busy, 2, "switching interrupted nothing");
    b.click("#stop");
    b.wait(
        "stopped, text back",
        "return document.querySelector('#input').value === 'a long question'",
    );
    b.js("document.querySelector('#input').value = ''");
    b.click("#session-list .session:not(.active) .session-open");
    b.wait(
        "session 2 with its draft",
        "return document.querySelector('#input').value === 'draft for two' && !document.querySelector('#stop').hidden",
    );

    // Reload mid-turn: the page resumes into the running turn.
    b.goto(&s.url("/"));
    b.wait(
        "working after reload",
        "return !!document.querySelector('.working') && !document.querySelector('#stop').hidden",
    );
    assert!(text_of(&b, "#messages").contains("another long question"));
    b.screenshot("05b-resumed-after-reload-desktop");
    b.click("#stop");
    b.wait(
        "rolled back after stop",
        "return !document.querySelector('.working') && document.querySelectorAll('.msg.user').length === 0",
    );
    assert_eq!(s.get("/sessions").json()["busy"], json!([]));

    // Library: search, inline edit.
    b.click("#open-library");
    b.wait(
        "library rows",
        "return document.querySelectorAll('#library-body tbody tr').length === 2",
    );
    b.screenshot("06-library-desktop");
    b.type_into("#library-search", "residual");
    b.wait(
        "filtered",
        "return document.querySelectorAll('#library-body tbody tr').length === 1",
    );
    b.click("#library-body tbody tr .acts button");
    b.wait(
        "edit inputs",
        "return !!document.querySelector('#library-body tbody input')",
    );
    b.js("document.querySelector('#library-body tbody input').value = 'ResNet'");
    b.click("#library-body tbody .btn.primary");
    b.wait(
        "saved title",
        "return document.querySelector('#library-body tbody .t')?.textContent === 'ResNet'",
    );
    let docs = s.get("/documents?kind=papers&q=resnet").json();
    assert_eq!(docs["documents"][0]["title"], "ResNet");
    // Two-step removal states the invariant line before anything happens.
    b.click("#library-body tbody tr .acts button:last-child");
    b.wait("removal confirm", "return document.querySelector('#library-body .invariant')?.textContent.includes('https://arxiv.org/abs/1512.03385')");
    b.screenshot("07-library-remove-desktop");
    b.click("#library-body .confirm-row .btn.ghost");
    b.js("document.querySelector('#library-dialog').close()");

    // Prompts: edit, the "differs" marker, revert.
    b.js("document.querySelector('#menu-button').click()");
    b.click("#menu [data-action='prompts']");
    b.wait(
        "the system prompt",
        "return document.querySelector('#prompt-text').value.length > 20",
    );
    b.type_into("#prompt-text", " Always be kind.");
    b.click("#prompt-save");
    b.wait(
        "differs marker",
        "return !document.querySelector('#prompt-differs').hidden",
    );
    b.screenshot("08-prompts-desktop");
    b.click("#prompt-revert");
    b.wait("reverted", "return document.querySelector('#prompt-differs').hidden && !document.querySelector('#prompt-text').value.includes('Always be kind')");
    b.js("document.querySelector('#prompts-dialog').close()");

    // Model picker: switch from the catalogue.
    b.click("#model-button");
    b.wait(
        "catalogue",
        "return [...document.querySelectorAll('#model-list .spec')].some(e => e.textContent === 'ollama:small:1b')",
    );
    b.screenshot("09-models-desktop");
    b.js("[...document.querySelectorAll('#model-list button')].find(e => e.textContent.includes('small:1b')).click()");
    b.wait(
        "switched",
        "return document.querySelector('#model-label').textContent === 'ollama:small:1b'",
    );

    // Command palette: Ctrl+K, type, Enter.
    b.keys("\u{E009}k\u{E000}");
    b.wait("palette", "return document.querySelector('#palette').open");
    b.type_into("#palette-input", &format!("library{ENTER}"));
    b.wait(
        "library via palette",
        "return document.querySelector('#library-dialog').open",
    );
    b.js("document.querySelector('#library-dialog').close()");

    // Narrow screen.
    b.resize(380, 800);
    b.goto(&s.url("/"));
    b.wait("composer", "return !!document.querySelector('#input')");
    b.wait("history", "return document.querySelectorAll('.msg').length >= 0 && document.querySelector('#model-label').textContent !== 'model'");
    b.js("document.querySelector('#session-list .session-open').click()");
    b.wait(
        "the pinned conversation",
        "return document.querySelector('.msg.assistant .md')?.textContent.includes('First answer')",
    );
    let overflow: Value = b.js("return document.documentElement.scrollWidth <= window.innerWidth + 1");
    assert_eq!(overflow, json!(true), "no horizontal scrolling at 380 px");
    b.screenshot("10-chat-380");
    b.click("#toggle-sidebar");
    b.wait(
        "sidebar open",
        "return document.querySelector('#app').classList.contains('sidebar-open')",
    );
    std::thread::sleep(Duration::from_millis(300));
    b.screenshot("11-sidebar-380");
    b.js("document.querySelector('#scrim').click()");
    b.js("document.querySelector('#open-library').click()");
    b.wait(
        "library rows",
        "return document.querySelectorAll('#library-body tbody tr').length === 2",
    );
    b.screenshot("12-library-380");

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}
