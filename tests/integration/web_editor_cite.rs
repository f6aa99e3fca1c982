//! Citation completion in the real browser (Debian's chromium, headless):
//! typing `\cite{` in a .tex draft or `[@` in a .md draft offers the
//! library's keys, narrows as you type (key, title, authors), is driven by
//! the keyboard, and shows a hostile title as text. Screenshots land in
//! `target/screenshots/editor-cite-*.png`.

use serde_json::{json, Value};

use jarvis::drafts::Visibility;
use jarvis::store::Metadata;

use crate::support::browser::Browser;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";
const TAB: &str = "\u{E004}";
const DOWN: &str = "\u{E015}";
const ESCAPE: &str = "\u{E00C}";

/// A title that would be markup if it were ever inserted as HTML.
const HOSTILE: &str = "<img src=x onerror=\"document.title='pwned'\"> Evil}\\input{/etc/passwd}";

fn seed(s: &WebServer) {
    let kb = s.app.kb().unwrap();
    for (source, fields) in [
        (
            "https://doi.org/10.1038/s41586-021-03819-2",
            json!({"title": "Highly accurate protein structure prediction with AlphaFold",
                   "authors": "John Jumper, Richard Evans, Alexander Pritzel", "year": 2021, "venue": "Nature"}),
        ),
        (
            "https://doi.org/10.1/folding",
            json!({"title": "Highly parallel protein folding on small machines", "authors": "Jane Jumper", "year": 2021, "venue": "Bioinformatics"}),
        ),
        (
            "https://arxiv.org/abs/1706.03762",
            json!({"title": "Attention Is All You Need", "authors": "Ashish Vaswani, Noam Shazeer", "year": 2017, "venue": "arXiv", "arxiv_id": "1706.03762"}),
        ),
        (
            "file:///papers/evil.pdf",
            json!({"title": HOSTILE, "authors": "Mallory Evil", "year": 2024}),
        ),
    ] {
        let mut own = Metadata::new();
        own.insert("doc_type".into(), json!("paper"));
        own.insert("visibility".into(), json!("public"));
        own.insert("source".into(), json!(source));
        let caller: Metadata = fields.as_object().unwrap().clone().into_iter().collect();
        kb.add_texts("A summary.", &caller, &own, "", None, &jarvis::kb::Actor::Cli)
            .unwrap();
    }
}

fn open_file(b: &Browser, name: &str) {
    b.wait(
        name,
        &format!(
            "const f = [...document.querySelectorAll('.draft-file')].find(x => x.dataset.file === {}); if (!f) return false; f.click(); return true",
            json!(name)
        ),
    );
    b.wait(
        "the file in the editor",
        &format!(
            "return document.querySelector('.tab.active .tab-open')?.textContent.includes({})",
            json!(name)
        ),
    );
}

/// Put the cursor at the end of line `line` (0-based) and focus the editor.
fn cursor_at_end(b: &Browser, line: u32) {
    b.js(&format!(
        "const cm = document.querySelector('.CodeMirror').CodeMirror; cm.focus(); cm.setCursor({{line: {line}, ch: cm.getLine({line}).length}}); return true"
    ));
}

/// The open list: its rows' keys and which is selected.
fn shown(b: &Browser) -> Value {
    b.js(
        "const box = document.querySelector('#cite-pop'); if (!box || box.hidden) return null; \
          const rows = [...box.querySelectorAll('.cite-item')]; \
          return { keys: rows.map(r => r.querySelector('.cite-key').textContent), \
                   selected: rows.findIndex(r => r.getAttribute('aria-selected') === 'true') }",
    )
}

fn wait_keys(b: &Browser, what: &str, keys: &[&str]) {
    b.wait(
        what,
        &format!(
            "const box = document.querySelector('#cite-pop'); if (!box || box.hidden) return false; \
             return JSON.stringify([...box.querySelectorAll('.cite-key')].map(k => k.textContent)) === {}",
            json!(json!(keys).to_string())
        ),
    );
}

fn text(b: &Browser) -> String {
    b.js("return document.querySelector('.CodeMirror').CodeMirror.getValue()")
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn cite_completion_offers_library_keys_as_you_type() {
    let s = WebServer::start();
    seed(&s);
    // The route itself: plain JSON rows, matched on every word.
    let r = s.get("/library/cite?q=jumper%20alphafold");
    assert_eq!(r.status, 200, "{}", r.text());
    let rows = r.json()["entries"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["key"], "jumper2021highly");
    assert_eq!(rows[0]["authors"], "Jumper et al.");

    let d = s.app.drafts().unwrap();
    let meta = d
        .workspace
        .create_draft(
            "Protein paper",
            "paper.tex",
            "\\documentclass{article}\n\\begin{document}\nStructure prediction is now accurate \n\\end{document}\n",
            Visibility::Public,
            None,
        )
        .unwrap();
    d.workspace
        .add_draft_file(&meta.id, "notes.md", "# Notes\n\nAttention replaced recurrence \n")
        .unwrap();

    let b = Browser::start(1280, 820);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.click("#view-editor");
    b.wait("the editor", "return !document.querySelector('#editor').hidden");
    open_file(&b, "paper.tex");

    // \cite{ opens the list with every paper, the newest first.
    cursor_at_end(&b, 2);
    b.keys("\\cite{");
    wait_keys(
        &b,
        "every paper",
        &[
            "evil2024img",
            "vaswani2017attention",
            "jumper2021highlya",
            "jumper2021highly",
        ],
    );
    // Typing narrows it: a key prefix first.
    b.keys("jum");
    wait_keys(&b, "the Jumpers", &["jumper2021highlya", "jumper2021highly"]);
    b.screenshot("editor-cite-tex-desktop");
    assert_eq!(shown(&b)["selected"], json!(0));
    b.keys(DOWN);
    b.wait(
        "the second row selected",
        "return document.querySelectorAll('.cite-item')[1]?.getAttribute('aria-selected') === 'true'",
    );
    b.keys(ENTER);
    b.wait(
        "the key inserted",
        "return document.querySelector('.CodeMirror').CodeMirror.getLine(2).endsWith('\\\\cite{jumper2021highly')",
    );
    assert_eq!(shown(&b), Value::Null, "the list closed");

    // The next key after a comma, found by a title word; Tab inserts.
    b.keys(", attention");
    wait_keys(&b, "by title", &["vaswani2017attention"]);
    b.keys(TAB);
    b.wait(
        "the second key",
        "return document.querySelector('.CodeMirror').CodeMirror.getLine(2).endsWith('{jumper2021highly, vaswani2017attention')",
    );
    b.keys("}");
    assert_eq!(shown(&b), Value::Null);
    assert!(
        text(&b).contains("accurate \\cite{jumper2021highly, vaswani2017attention}\n"),
        "{}",
        text(&b)
    );
    // Esc closes without inserting; nothing matching says so.
    b.keys(" \\citep{zzz");
    b.wait(
        "the empty state",
        "return document.querySelector('.cite-empty')?.textContent.startsWith('No paper in the library matches')",
    );
    b.keys(ESCAPE);
    b.wait("closed", "return document.querySelector('#cite-pop').hidden");
    assert!(text(&b).contains("\\citep{zzz\n"), "{}", text(&b));

    // Markdown: [@ opens it; a hostile title is text, never markup.
    open_file(&b, "notes.md");
    cursor_at_end(&b, 2);
    b.keys("[@");
    b.wait(
        "the list in Markdown",
        "return !document.querySelector('#cite-pop').hidden",
    );
    b.keys("evil");
    wait_keys(&b, "the hostile paper", &["evil2024img"]);
    assert_eq!(
        b.js("return document.querySelector('.cite-item .cite-title').textContent"),
        json!(HOSTILE)
    );
    assert_eq!(
        b.js("return document.querySelectorAll('#cite-pop img').length"),
        json!(0)
    );
    assert_ne!(b.js("return document.title"), json!("pwned"));
    b.screenshot("editor-cite-hostile-desktop");
    b.keys(ESCAPE);
    b.wait("closed again", "return document.querySelector('#cite-pop').hidden");
    b.keys("; @vas");
    wait_keys(&b, "the list after `; @`", &["vaswani2017attention"]);
    b.screenshot("editor-cite-md-desktop");
    b.keys(ENTER);
    b.keys("]");
    assert!(
        text(&b).contains("recurrence [@evil; @vaswani2017attention]"),
        "{}",
        text(&b)
    );
    let reqs = b.finish();
    crate::support::browser::assert_only_app_origin(&reqs, &s.origin());
}
