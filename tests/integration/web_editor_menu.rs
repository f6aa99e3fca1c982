//! The editor's file menu in a real browser: opened from the keyboard
//! (Shift+F10 on a focused file row) and by right-click, moved through with
//! the arrow keys, closed by Escape with focus back on the row; it reviews
//! or discards a waiting suggestion (the file untouched), keeps a draft,
//! adds a file, closes a tab and deletes a draft. Screenshot:
//! `target/screenshots/editor-12-file-menu-desktop.png`.

use std::time::Duration;

use serde_json::json;

use jarvis::drafts::Visibility;

use crate::support::browser::Browser;
use crate::support::web::WebServer;

const SHIFT_F10: &str = "\u{E008}\u{E03A}\u{E000}";
const DOWN: &str = "\u{E015}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";

fn labels(b: &Browser) -> Vec<String> {
    serde_json::from_value(
        b.js("return [...document.querySelectorAll('.ctx-menu [role=menuitem]')].map(x => x.textContent)"),
    )
    .unwrap()
}

fn focused(b: &Browser) -> String {
    b.js("return document.activeElement ? document.activeElement.textContent : ''")
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Press Down until the item named `label` has focus, then Enter.
fn choose(b: &Browser, label: &str) {
    for _ in 0..12 {
        if focused(b).starts_with(label) {
            b.keys(ENTER);
            return;
        }
        b.keys(DOWN);
    }
    panic!("no menu item {label:?} in {:?}", labels(b));
}

fn menu_from_keyboard(b: &Browser, row: &str) {
    b.js(&format!("document.querySelector({}).focus()", json!(row)));
    b.keys(SHIFT_F10);
    b.wait(
        "the menu",
        "return !!document.querySelector('.ctx-menu') && document.activeElement.getAttribute('role') === 'menuitem'",
    );
}

fn right_click(b: &Browser, css: &str) {
    b.js(&format!(
        "const e = document.querySelector({}); const r = e.getBoundingClientRect(); \
         e.dispatchEvent(new MouseEvent('contextmenu', {{bubbles: true, cancelable: true, button: 2, clientX: r.left + 20, clientY: r.top + 8}}))",
        json!(css)
    ));
    b.wait("the menu", "return !!document.querySelector('.ctx-menu')");
}

#[test]
fn the_file_menu_reviews_discards_keeps_adds_and_deletes_from_keyboard_and_mouse() {
    let s = WebServer::start();
    let d = s.app.drafts().unwrap();
    let text = "# Menu notes\n\nOne.\nTwo.\nThree.\n";
    let meta = d
        .workspace
        .create_draft("Menu notes", "notes.md", text, Visibility::Public, None)
        .unwrap();
    let id = meta.id.clone();
    d.proposals
        .propose_edit(
            &d.workspace,
            &id,
            "notes.md",
            "# Menu notes\n\nOne.\nTwo, reworded.\nThree.\n",
            None,
        )
        .unwrap();
    let row = ".draft-file[data-file='notes.md']";

    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.click("#view-editor");
    b.wait(
        "the waiting mark",
        &format!(
            "return !!document.querySelector({}) ",
            json!(format!("{row} .pending-mark"))
        ),
    );

    // Keyboard: Shift+F10 on the focused row opens it, focus on the first item.
    menu_from_keyboard(&b, row);
    let l = labels(&b);
    for want in [
        "Open notes.md",
        "Review the suggested change",
        "Discard the suggested change",
        "New file in “Menu notes”…",
        "History…",
        "Keep (never cleaned up)",
        "Show in file manager",
        "Delete draft “Menu notes”…",
    ] {
        assert!(l.iter().any(|x| x == want), "{want:?} in {l:?}");
    }
    assert_eq!(focused(&b), "Open notes.md");
    assert_eq!(
        b.js("const m = document.querySelector('.ctx-menu').getBoundingClientRect(); return m.right <= innerWidth && m.bottom <= innerHeight"),
        json!(true),
        "the menu stays inside the window"
    );
    b.screenshot("editor-12-file-menu-desktop");
    b.keys(DOWN);
    assert_eq!(focused(&b), "Review the suggested change");
    b.keys(ESCAPE);
    assert_eq!(b.js("return document.querySelector('.ctx-menu') === null"), json!(true));
    assert_eq!(
        b.js(&format!(
            "return document.activeElement === document.querySelector({})",
            json!(row)
        )),
        json!(true),
        "Escape hands focus back to the row"
    );

    // Review from the menu: the review opens.
    menu_from_keyboard(&b, row);
    choose(&b, "Review the suggested change");
    b.wait("the review", "return !document.querySelector('#review-bar').hidden && document.querySelectorAll('.rv-controls').length === 1");

    // Discard from a right-click: nothing is written, the mark goes.
    right_click(&b, row);
    b.click(".ctx-menu [role=menuitem]:nth-child(3)");
    b.wait("no review", "return document.querySelector('#review-bar').hidden");
    b.wait(
        "no mark",
        &format!(
            "return !document.querySelector({})",
            json!(format!("{row} .pending-mark"))
        ),
    );
    assert_eq!(s.get("/proposals").json()["proposals"], json!([]));
    assert_eq!(
        d.workspace.read_file(&id, "notes.md").unwrap().text,
        text,
        "discarding writes nothing"
    );
    let l = {
        right_click(&b, row);
        let l = labels(&b);
        b.keys(ESCAPE);
        l
    };
    assert!(!l.iter().any(|x| x.contains("suggested")), "{l:?}");

    // Keep, from the keyboard.
    menu_from_keyboard(&b, row);
    choose(&b, "Keep (never cleaned up)");
    b.wait("the kept mark", "return !!document.querySelector('.draft .keep-mark')");
    assert!(d.workspace.meta(&id).unwrap().keep);

    // A new file in this draft: the name comes from the in-app dialog.
    b.js("window.prompt = () => { throw new Error('the browser prompt is not used'); }");
    menu_from_keyboard(&b, row);
    choose(&b, "New file in");
    b.wait(
        "the new-file dialog",
        "return document.querySelector('dialog.ask')?.open",
    );
    b.keys(&format!("second.md{ENTER}"));
    b.wait(
        "the new tab",
        "return document.querySelector('.tab.active .tab-open')?.textContent === 'second.md'",
    );
    assert!(d.workspace.read_file(&id, "second.md").is_ok());

    // A tab has the same menu plus Close tab.
    right_click(&b, ".tab.active .tab-open");
    let l = labels(&b);
    assert!(
        l.iter().any(|x| x == "Close tab") && l.iter().any(|x| x == "Show in file manager"),
        "{l:?}"
    );
    choose(&b, "Close tab");
    b.wait("one tab left", "return document.querySelectorAll('.tab').length === 1");

    // Delete the draft (after the confirmation).
    b.js("window.confirm = () => true");
    menu_from_keyboard(&b, row);
    choose(&b, "Delete draft");
    b.wait(
        "no drafts",
        "return document.querySelectorAll('.draft').length === 0 && document.querySelectorAll('.tab').length === 0",
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(s.get("/drafts").json()["drafts"], json!([]));
    assert!(!s.sandbox.jarvis_home().join("drafts").join(&id).exists());
    b.finish();
}
