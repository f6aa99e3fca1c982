//! The Editor view in a real browser (Debian's chromium, headless) against
//! the real server and a fake model: a suggestion from a chat turn is
//! reviewed hunk by hunk and only the accepted change reaches the disk; a
//! save refused because a second tab saved first leaves the tab dirty; the
//! Markdown preview shows MathML in a frame that never runs script; a
//! compiled PDF goes back to the empty sandbox. Screenshots land in
//! `target/screenshots/editor-*.png` (desktop and phone widths, dark).

use std::time::{Duration, Instant};

use serde_json::json;

use jarvis::drafts::Visibility;

use crate::support::browser::Browser;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";

fn notes() -> String {
    let mut s = String::from("# Field notes\n\n");
    for i in 1..=24 {
        s.push_str(&format!("Line {i} of the notes.\n"));
    }
    s
}

/// Point the running app's model at `llm` (the draft id the fake model
/// names is only known once the server runs).
fn use_llm(s: &WebServer, llm: &FakeServer) {
    s.sandbox.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n",
        llm.url
    ));
    s.app.reload_config().unwrap();
}

fn open_editor(b: &Browser) {
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.click("#view-editor");
    b.wait("the editor", "return !document.querySelector('#editor').hidden");
}

/// Click a control inside the editor once it is scrolled into view (the
/// editor scrolls itself; WebDriver does not reach into it).
fn click_in_editor(b: &Browser, css: &str) {
    b.wait(
        css,
        &format!("const e = document.querySelector({}); if (!e) return false; e.scrollIntoView({{block: 'center'}}); return true", json!(css)),
    );
    b.click(css);
}

fn review_state(b: &Browser) -> serde_json::Value {
    b.js("return { controls: document.querySelectorAll('.rv-controls').length, \
          columns: document.querySelectorAll('.rv-columns').length, \
          adds: document.querySelectorAll('.rv-add').length, \
          dels: document.querySelectorAll('.rv-del').length, \
          readOnly: document.querySelector('.CodeMirror').CodeMirror.getOption('readOnly'), \
          progress: document.querySelector('#rv-progress').textContent }")
}

#[test]
fn a_suggestion_is_reviewed_hunk_by_hunk_and_only_the_accepted_change_is_written() {
    let s = WebServer::with_llm("http://127.0.0.1:9", "");
    let d = s.app.drafts().unwrap();
    let old = notes();
    let meta = d
        .workspace
        .create_draft("Field notes", "notes.md", &old, Visibility::Public, None)
        .unwrap();
    // Three hunks: a replace near the top, an add in the middle, a remove
    // near the end (far enough apart that the context does not merge them).
    let suggested = old
        .replace("Line 2 of the notes.\n", "Line two, reworded.\n")
        .replace("Line 12 of the notes.\n", "Line 12 of the notes.\nAn added line.\n")
        .replace("Line 22 of the notes.\n", "");
    let expected = old
        .replace("Line 2 of the notes.\n", "Line two, reworded.\n")
        .replace("Line 22 of the notes.\n", "");
    // The second suggestion is made against the file after the first review.
    let second = expected.replace("Line 5 of the notes.\n", "Line five, again.\n");
    let args = json!({ "draft_id": meta.id, "filename": "notes.md", "content": suggested }).to_string();
    let args2 = json!({ "draft_id": meta.id, "filename": "notes.md", "content": second }).to_string();
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "propose_draft_edit", vec![args.as_str()])]),
        Wire::Ollama.text(&["I suggested three changes to your notes."]),
        Wire::Ollama.tool_calls(&[("c2", "propose_draft_edit", vec![args2.as_str()])]),
        Wire::Ollama.text(&["One more suggestion."]),
    ]);
    use_llm(&s, &llm);

    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    open_editor(&b);
    b.wait(
        "the draft in the list",
        "return document.querySelector('.draft-file .file-name')?.textContent === 'notes.md'",
    );
    b.click(".draft-file");
    b.wait(
        "the file in a tab",
        "return document.querySelector('.tab.active .tab-open')?.textContent.includes('notes.md')",
    );
    b.screenshot("editor-01-file-desktop");
    assert_eq!(
        b.js("return document.querySelector('#input').placeholder"),
        json!("Ask about notes.md…"),
        "the composer says which file a question is about"
    );

    // Ask from the docked composer; the suggestion opens for review.
    b.type_into("#input", &format!("Tighten my notes{ENTER}"));
    b.wait(
        "three hunks to review",
        "return document.querySelectorAll('.rv-controls').length === 3",
    );
    // The turn carried the open file: the model's system prompt names it.
    let first = &llm.requests()[0].body;
    let system = first["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains(&format!("the draft file \"notes.md\" (draft_id \"{}\")", meta.id)),
        "{system}"
    );
    let st = review_state(&b);
    assert_eq!(st["readOnly"], json!(true), "{st}");
    assert_eq!(st["columns"], json!(1), "the replace as two columns: {st}");
    assert!(
        st["adds"].as_u64().unwrap() >= 1 && st["dels"].as_u64().unwrap() >= 1,
        "{st}"
    );
    assert!(st["progress"].as_str().unwrap().starts_with("0 of 3"), "{st}");
    assert_eq!(
        b.js("return document.querySelector('.tab.active .pending-mark') !== null"),
        json!(true),
        "the ✎ on the tab"
    );
    assert_eq!(
        std::fs::read_to_string(d.workspace.root().join(&meta.id).join("notes.md")).unwrap(),
        old
    );
    let shot = b.screenshot("editor-02-review-desktop");
    eprintln!("review screenshot: {}", shot.display());

    // A suggestion outlives its turn: a reload brings the review back.
    b.goto(&s.url("/"));
    b.wait("the editor again", "return !document.querySelector('#editor').hidden");
    b.wait(
        "the ✎ in the list",
        "return !!document.querySelector('.draft-file .pending-mark')",
    );
    b.click(".draft-file");
    b.wait(
        "the review again",
        "return document.querySelectorAll('.rv-controls').length === 3",
    );

    // Accept the first and third, reject the middle one.
    click_in_editor(&b, ".rv-controls[data-hunk='0'] .rv-accept");
    b.wait(
        "one answered",
        "return document.querySelector('#rv-progress').textContent.startsWith('1 of 3')",
    );
    click_in_editor(&b, ".rv-controls[data-hunk='1'] .rv-reject");
    b.screenshot("editor-03-review-answered-desktop");
    click_in_editor(&b, ".rv-controls[data-hunk='2'] .rv-accept");
    b.wait(
        "the review closes",
        "return document.querySelector('#review-bar').hidden",
    );
    let path = d.workspace.root().join(&meta.id).join("notes.md");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&path).unwrap() != expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        expected,
        "exactly the accepted hunks"
    );
    b.wait(
        "the editor reloaded from disk",
        &format!(
            "return document.querySelector('.CodeMirror').CodeMirror.getValue() === {}",
            json!(expected)
        ),
    );
    assert_eq!(
        b.js("return document.querySelector('.CodeMirror').CodeMirror.getOption('readOnly')"),
        json!(false)
    );
    assert_eq!(
        b.js("return document.querySelector('.tab.active.is-dirty') === null"),
        json!(true),
        "clean after the reload"
    );
    assert!(s.get("/proposals").json()["proposals"].as_array().unwrap().is_empty());

    // At phone width: a second suggestion, one column, Reject all.
    b.resize(390, 844);
    // The first turn may still be settling (the page learnt it was busy
    // when it reloaded): a send waits for the composer to be free.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.get("/sessions").json()["busy"].as_array().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    b.wait("the composer free", "return document.querySelector('#stop').hidden");
    b.type_into("#input", &format!("And line five{ENTER}"));
    // Under load the server may still be closing the first turn (a send
    // refused as busy puts the text back in the box with a toast): send again.
    for _ in 0..5 {
        std::thread::sleep(Duration::from_secs(2));
        if b.js("return document.querySelectorAll('.msg.user').length") == json!(2) {
            break;
        }
        eprintln!(
            "second send not taken yet: {:?}",
            b.js("return document.querySelector('#toast').textContent")
        );
        if b.js("return document.querySelector('#input').value") == json!("And line five") {
            b.type_into("#input", ENTER);
        }
    }
    b.wait(
        "the second review",
        "return document.querySelectorAll('.rv-controls').length === 1",
    );
    assert_eq!(review_state(&b)["columns"], json!(0), "no two columns below 720 px");
    let shot = b.screenshot("editor-04-review-phone");
    eprintln!("review screenshot: {}", shot.display());
    b.click("#rv-reject-all");
    b.wait(
        "the review closes",
        "return document.querySelector('#review-bar').hidden",
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        expected,
        "Reject all writes nothing"
    );
    b.screenshot("editor-05-file-phone");
    assert_eq!(
        b.js("return document.documentElement.scrollWidth <= window.innerWidth + 1"),
        json!(true),
        "no horizontal scrolling at 390 px"
    );
    b.click("#view-chat");
    b.wait("the chat view", "return document.querySelector('#editor').hidden");
    assert_eq!(
        b.js("return document.documentElement.scrollWidth <= window.innerWidth + 1 && document.querySelector('#menu-button').getBoundingClientRect().right <= window.innerWidth"),
        json!(true),
        "the header fits at 390 px"
    );
    b.finish();
}

/// Switch the session to the browser tab `handle`.
fn in_window(b: &Browser, handle: &fantoccini::wd::WindowHandle) {
    b.rt.block_on(b.c.switch_to_window(handle.clone())).unwrap();
}

#[test]
fn a_save_refused_after_a_second_tab_saved_leaves_the_tab_dirty() {
    let s = WebServer::start();
    let d = s.app.drafts().unwrap();
    let meta = d
        .workspace
        .create_draft(
            "Letter",
            "letter.md",
            "Dear reader,\n\nHello.\n",
            Visibility::Public,
            None,
        )
        .unwrap();
    let path = d.workspace.root().join(&meta.id).join("letter.md");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    open_editor(&b);
    b.click(".draft-file");
    b.wait("the tab", "return !!document.querySelector('.tab.active')");
    let first = b.rt.block_on(b.c.window()).unwrap();
    // Type into the first tab (through the editor's own API), unsaved.
    b.js("const cm = document.querySelector('.CodeMirror').CodeMirror; cm.replaceRange('First tab text.\\n', {line: 2, ch: 0});");
    b.wait("dirty", "return !!document.querySelector('.tab.active.is-dirty')");
    // Undoing back to the saved text is clean again: dirtiness is the Doc's.
    b.js("document.querySelector('.CodeMirror').CodeMirror.undo()");
    b.wait(
        "clean after undo",
        "return !document.querySelector('.tab.active.is-dirty')",
    );
    b.js("document.querySelector('.CodeMirror').CodeMirror.redo()");
    b.wait("dirty again", "return !!document.querySelector('.tab.active.is-dirty')");

    // A second browser tab opens the same file, edits and saves first.
    let second = b.rt.block_on(b.c.new_window(true)).unwrap();
    in_window(&b, &second.handle);
    b.goto(&s.url("/"));
    b.wait(
        "the editor in the second tab",
        "return !document.querySelector('#editor').hidden",
    );
    b.click(".draft-file");
    b.wait("the tab", "return !!document.querySelector('.tab.active')");
    b.js("const cm = document.querySelector('.CodeMirror').CodeMirror; cm.replaceRange('Second tab text.\\n', {line: 2, ch: 0});");
    b.click("#ed-save");
    b.wait("saved", "return !document.querySelector('.tab.active.is-dirty')");
    let saved = std::fs::read_to_string(&path).unwrap();
    assert_eq!(saved, "Dear reader,\n\nSecond tab text.\nHello.\n");

    // Back in the first tab: Ctrl+S is refused; the tab stays dirty.
    in_window(&b, &first);
    b.js("document.querySelector('.CodeMirror').CodeMirror.focus()");
    b.keys("\u{E009}s\u{E000}");
    b.wait(
        "the refusal",
        "return document.querySelector('#editor-status').textContent.startsWith('Not saved')",
    );
    assert_eq!(
        b.js("return !!document.querySelector('.tab.active.is-dirty')"),
        json!(true),
        "a refused save leaves the tab dirty"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), saved, "nothing clobbered");
    b.screenshot("editor-06-save-refused-desktop");
    // The way out: reload from disk; this tab's text is one undo away.
    b.click("#ed-reload");
    b.wait(
        "the disk's text",
        &format!(
            "return document.querySelector('.CodeMirror').CodeMirror.getValue() === {} && !document.querySelector('.tab.active.is-dirty')",
            json!(saved)
        ),
    );
    b.js("document.querySelector('.CodeMirror').CodeMirror.undo()");
    assert_eq!(
        b.js("return document.querySelector('.CodeMirror').CodeMirror.getValue()"),
        json!("Dear reader,\n\nFirst tab text.\nHello.\n")
    );
    b.finish();
}

#[test]
fn the_preview_shows_mathml_and_never_runs_script() {
    let s = WebServer::start();
    let d = s.app.drafts().unwrap();
    let mut text = String::from("# Maths\n\nEuler: $e^{i\\pi} + 1 = 0$.\n\n$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$\n\n<script>parent.document.title = 'pwned'</script>\n\n[x](javascript:alert(1))\n\n");
    for i in 1..=60 {
        text.push_str(&format!(
            "Paragraph {i} with enough words to wrap across the preview pane.\n\n"
        ));
    }
    let meta = d
        .workspace
        .create_draft("Maths", "maths.md", &text, Visibility::Public, None)
        .unwrap();
    d.workspace
        .add_draft_file(
            &meta.id,
            "paper.tex",
            &format!(
                "\\documentclass{{article}}\n\\begin{{document}}\n\\section{{Hello}}\nHello $x^2 + y^2 = z^2$.\n{}\\end{{document}}\n",
                (2..=12).map(|i| format!("\\newpage\nPage {i}.\n")).collect::<String>()
            ),
        )
        .unwrap();
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    open_editor(&b);
    b.click(".draft-file[data-file='maths.md']");
    b.wait(
        "MathML in the preview",
        "const f = document.querySelector('#preview-frame'); return !f.hidden && !!f.contentDocument?.querySelector('math')",
    );
    let sb = b.js("return document.querySelector('#preview-frame').getAttribute('sandbox')");
    assert_eq!(sb, json!("allow-same-origin"));
    assert_eq!(
        b.js("return document.querySelector('#preview-frame').contentDocument.querySelector('script') === null && document.title !== 'pwned'"),
        json!(true)
    );
    assert_eq!(
        b.js("return [...document.querySelector('#preview-frame').contentDocument.querySelectorAll('a')].every(a => !a.href.startsWith('javascript'))"),
        json!(true)
    );
    // Scroll sync: the editor's scroll moves the preview.
    b.js("const cm = document.querySelector('.CodeMirror').CodeMirror; cm.scrollTo(0, cm.heightAtLine(60, 'local'));");
    b.wait(
        "the preview follows",
        "return document.querySelector('#preview-frame').contentWindow.scrollY > 200",
    );
    b.screenshot("editor-07-preview-desktop");
    b.resize(390, 844);
    // The sidebar slides away (a short transition) before the picture.
    std::thread::sleep(Duration::from_millis(400));
    b.screenshot("editor-08-preview-phone");
    b.resize(1280, 860);

    // The toolchain decides which build buttons exist.
    let tools = s.get("/drafts").json();
    let latex = tools["latex"].as_bool().unwrap();
    assert_eq!(
        b.js("return !document.querySelector('#ed-export').hidden"),
        json!(tools["pandoc"].as_bool().unwrap())
    );
    b.click(".draft-file[data-file='paper.tex']");
    b.wait(
        "the tex tab",
        "return document.querySelector('.tab.active .tab-open')?.textContent.includes('paper.tex')",
    );
    assert_eq!(
        b.js("return !document.querySelector('#ed-compile').hidden"),
        json!(latex)
    );
    assert_eq!(b.js("return document.querySelector('#ed-preview').hidden"), json!(true));
    if latex {
        let t0 = Instant::now();
        b.click("#ed-compile");
        // The pages are pictures the server drew; the first one shows.
        b.wait(
            "the first page",
            "const i = document.querySelector('#preview-pages img[data-page=\"1\"]'); return !!i && i.complete && i.naturalWidth > 0",
        );
        eprintln!(
            "compile + first page through the editor: {:.1} s (machine busy)",
            t0.elapsed().as_secs_f64()
        );
        // No PDF goes into a frame: the frame is hidden, empty, and back in
        // the empty sandbox.
        assert_eq!(
            b.js("const f = document.querySelector('#preview-frame'); return [f.hidden, f.getAttribute('sandbox'), f.hasAttribute('src')]"),
            json!([true, "", false]),
        );
        assert_eq!(
            b.js("return [document.querySelectorAll('#preview-pages img').length, document.querySelector('#preview-pages img').alt]"),
            json!([12, "Page 1 of 12"])
        );
        assert_eq!(
            b.js("const a = document.querySelector('#preview-download'); return !a.hidden && a.href.startsWith('blob:') && a.download"),
            json!("paper.pdf"),
            "Download PDF stays"
        );
        // Lazy: the last page is not fetched until it is scrolled to.
        assert_eq!(
            b.js("return document.querySelector('#preview-pages img[data-page=\"12\"]').naturalWidth"),
            json!(0),
            "page 12 waits until it is near the view"
        );
        b.screenshot("editor-09-compiled-desktop");
        b.js("document.querySelector('#preview-pages img[data-page=\"12\"]').scrollIntoView()");
        b.wait(
            "the last page",
            "const i = document.querySelector('#preview-pages img[data-page=\"12\"]'); return i.complete && i.naturalWidth > 0",
        );
        assert_eq!(
            b.js("return [document.scrollingElement.scrollTop, document.querySelector('#preview-pages').scrollTop > 1000]"),
            json!([0, true]),
            "the pages scroll inside the preview pane, not the page"
        );
        b.screenshot("editor-10-compiled-last-page-desktop");
        b.resize(390, 844);
        std::thread::sleep(Duration::from_millis(400));
        b.screenshot("editor-11-compiled-phone");
        b.resize(1280, 860);
    }
    // No frame ever had allow-scripts.
    assert_eq!(
        b.js("return [...document.querySelectorAll('iframe')].every(f => f.hasAttribute('sandbox') && !/allow-scripts/.test(f.getAttribute('sandbox')))"),
        json!(true)
    );
    b.finish();
}
