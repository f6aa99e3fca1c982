//! Builds in the Editor view in a real browser (Debian's chromium, headless,
//! at 2 device pixels per CSS pixel) against the real server and real
//! latexmk: the compiled PDF's page pictures are drawn as wide as the pane ×
//! devicePixelRatio, in steps, and drawn again when the pane's width
//! settles at another step (a drag fires one redraw, not one per frame); a
//! failed build's log shows in the preview pane — monospace, scrollable,
//! the first error on top and marked in the log, a jump to its line — with
//! a way back to the last good PDF. Screenshots:
//! `target/screenshots/editor-13…16-*.png`.

use std::time::Instant;

use serde_json::json;

use jarvis::drafts::Visibility;

use crate::support::browser::Browser;
use crate::support::web::WebServer;

/// What build.js should ask for at the pane's current width.
const EXPECTED_WIDTH: &str =
    "const pane = document.querySelector('.preview-pane').getBoundingClientRect().width - 24; \
     const css = Math.max(0, Math.min(900, pane)); \
     return Math.min(2400, Math.max(200, Math.ceil(css * devicePixelRatio / 200) * 200));";

const PAGE_REQUESTS: &str =
    "return performance.getEntriesByType('resource').filter(e => e.name.includes('/pages?')).length";

fn good_tex() -> String {
    let mut s = String::from("\\documentclass{article}\n\\begin{document}\n\\section{Results}\n");
    for i in 1..=3 {
        s.push_str(&format!(
            "Page {i}: the quick brown fox jumps over the lazy dog, $e^{{i\\pi}} + 1 = 0$.\n\\newpage\n"
        ));
    }
    s.push_str("\\end{document}\n");
    s
}

const BROKEN_TEX: &str = "\\documentclass{article}\n\\begin{document}\n\\section{Broken}\nSome text.\nHere \\undefinedcommandxyz{} fails.\n\\end{document}\n";

/// The pages on screen are drawn at the width the pane asks for.
fn wait_for_sharp_pages(b: &Browser, what: &str) -> u64 {
    let want = b.js(EXPECTED_WIDTH).as_u64().unwrap();
    b.wait(
        what,
        &format!(
            "const p = document.querySelector('#preview-pages'); const i = p.querySelector('img[data-page=\"1\"]'); \
             return !p.hidden && !!i && i.complete && i.naturalWidth === {want} && p.dataset.width === '{want}'"
        ),
    );
    want
}

#[test]
fn pages_follow_the_pane_width_and_a_failed_build_shows_its_log_in_the_pane() {
    let s = WebServer::start();
    let d = s.app.drafts().unwrap();
    let meta = d
        .workspace
        .create_draft("Paper", "paper.tex", &good_tex(), Visibility::Public, None)
        .unwrap();
    if s.get("/drafts").json()["latex"] != json!(true) {
        panic!("latexmk is installed by cargo xtask test");
    }
    let b = Browser::start_scaled(1280, 860, 2);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.click("#view-editor");
    b.wait("the editor", "return !document.querySelector('#editor').hidden");
    b.click(".draft-file[data-file='paper.tex']");
    b.wait(
        "the tex tab",
        "return document.querySelector('.tab.active .tab-open')?.textContent.includes('paper.tex')",
    );
    assert_eq!(b.js("return devicePixelRatio"), json!(2));
    let t0 = Instant::now();
    b.click("#ed-compile");
    let wide = wait_for_sharp_pages(&b, "the pages at the first width");
    eprintln!(
        "compile + first page in the browser: {:.1} s (busy machine, debug)",
        t0.elapsed().as_secs_f64()
    );
    let shot = b.screenshot("editor-13-pages-1280");
    eprintln!("pages at 1280 px: {} (drawn {wide} px wide)", shot.display());

    // Another window width puts the preview under the source: wider pane,
    // wider pictures, drawn again once the resize settles.
    let before = b.js(PAGE_REQUESTS).as_u64().unwrap();
    b.resize(1000, 860);
    let second = wait_for_sharp_pages(&b, "the pages redrawn at the second width");
    assert_ne!(wide, second, "the pane width changed the picture width");
    let shot = b.screenshot("editor-14-pages-1000");
    eprintln!("pages at 1000 px: {} (drawn {second} px wide)", shot.display());
    let after_resize = b.js(PAGE_REQUESTS).as_u64().unwrap();
    assert!(after_resize > before);

    // A drag: the pane narrows over 25 steps; the pages are drawn again
    // once, at the width it settles at — not once per step.
    let before = b.js(PAGE_REQUESTS).as_u64().unwrap();
    b.js("window.__dragDone = false; const p = document.querySelector('.preview-pane'); let w = 760; \
          const step = () => { p.style.width = w + 'px'; w -= 18; if (w > 310) setTimeout(step, 15); else window.__dragDone = true; }; step();");
    b.wait("the drag to end", "return window.__dragDone === true");
    let narrow = wait_for_sharp_pages(&b, "the pages after the drag");
    assert!(narrow < second, "{narrow} < {second}");
    std::thread::sleep(std::time::Duration::from_millis(600));
    let redraws = b.js(PAGE_REQUESTS).as_u64().unwrap() - before;
    eprintln!("a 25-step drag fired {redraws} redraw(s)");
    assert!(
        (1..=2).contains(&redraws),
        "a drag is drawn once it settles, not per step: {redraws}"
    );
    b.js("document.querySelector('.preview-pane').style.width = ''");
    wait_for_sharp_pages(&b, "the pages back at the pane's width");
    b.resize(1280, 860);
    let back = wait_for_sharp_pages(&b, "the pages back at 1280");
    assert_eq!(back, wide);
    let good_build = b.js("return document.querySelector('#preview-pages img').src");

    // A failed build: the log in the pane, its first error on top.
    b.js(&format!(
        "document.querySelector('.CodeMirror').CodeMirror.setValue({})",
        json!(BROKEN_TEX)
    ));
    b.click("#ed-compile");
    b.wait(
        "the failed build's log in the pane",
        "return !document.querySelector('#build-failed').hidden",
    );
    assert_eq!(
        b.js("return document.querySelector('#log-dialog')"),
        json!(null),
        "no dialog"
    );
    let err = b.js("return document.querySelector('#build-error').textContent");
    let err = err.as_str().unwrap();
    assert!(err.starts_with("! Undefined control sequence."), "{err}");
    assert!(err.contains("l.5 Here \\undefinedcommandxyz"), "{err}");
    assert_eq!(
        b.js("const m = document.querySelector('#build-log mark.log-error'); return m && m.textContent"),
        json!("! Undefined control sequence.")
    );
    assert_eq!(
        b.js("const g = document.querySelector('#build-goto'); return !g.hidden && g.textContent"),
        json!("Go to line 5")
    );
    assert_eq!(
        b.js("const l = document.querySelector('#build-log'); return [/mono/i.test(getComputedStyle(l).fontFamily), l.scrollHeight > l.clientHeight, getComputedStyle(l).overflowY]"),
        json!([true, true, "auto"]),
        "monospace and scrollable"
    );
    assert_eq!(
        b.js("return [document.querySelector('#preview-pages').hidden, document.querySelector('#preview-download').hidden, document.querySelector('#preview-frame').hidden]"),
        json!([true, true, true])
    );
    assert_eq!(
        b.js("return document.querySelector('#build-back').textContent"),
        json!("Back to the last good PDF")
    );
    let shot = b.screenshot("editor-15-build-failed-1280");
    eprintln!("failed build: {}", shot.display());
    b.resize(390, 844);
    std::thread::sleep(std::time::Duration::from_millis(400));
    b.js("document.querySelector('#build-failed').scrollIntoView()");
    b.screenshot("editor-16-build-failed-phone");
    b.resize(1280, 860);

    b.click("#build-goto");
    assert_eq!(
        b.js(
            "const cm = document.querySelector('.CodeMirror').CodeMirror; return [cm.getCursor().line, cm.hasFocus()]"
        ),
        json!([4, true]),
        "the cursor is on the line TeX names"
    );
    b.click("#build-back");
    b.wait(
        "the last good PDF again",
        "return document.querySelector('#build-failed').hidden && !document.querySelector('#preview-pages').hidden",
    );
    assert_eq!(
        b.js("return document.querySelector('#preview-pages img').src"),
        good_build,
        "the same build as before the failure"
    );
    // The draft on disk holds the broken text the build was made from (a
    // build saves first); the folder holds no build output.
    let files = d.workspace.files(&meta.id).unwrap();
    assert_eq!(files, vec!["paper.tex".to_string()]);
    b.finish();
}
