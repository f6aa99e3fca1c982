//! The chat's everyday conveniences in a real browser: the queue above the
//! composer (messages typed during a slow turn run in order, a reload keeps
//! them, a stop pauses them), message actions (copy, regenerate, edit and
//! send again), code blocks (copy, colours), read aloud with and without
//! voices (speechSynthesis stubbed), sidebar date groups and search, the
//! rolled-back notice with no stale title after a reload, the pinned
//! context dialog and the New draft dialog. Screenshots land in
//! `target/screenshots/`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::{End, FakeServer};
use crate::support::fakes::wires::Wire;
use crate::support::web::{add_paper, WebServer};

const ENTER: &str = "\u{E007}";

fn slow() -> crate::support::fakes::llm::Reply {
    let tick = Wire::Ollama.text_events(&[" tick"]).remove(0);
    Wire::Ollama
        .reply(Wire::Ollama.text_events(&["Working"]))
        .with_end(End::Hang {
            trickle: Some(tick),
            every: Duration::from_millis(200),
        })
}

/// The last user message of each request the fake received.
fn questions(llm: &FakeServer) -> Vec<String> {
    llm.requests()
        .iter()
        .map(|r| {
            r.body["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

fn answers(b: &Browser) -> Value {
    b.js("return [...document.querySelectorAll('.msg.assistant .md')].map(e => e.textContent.trim())")
}

fn ready(b: &Browser) {
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.wait(
        "the model label",
        "return document.querySelector('#model-label').textContent.startsWith('ollama')",
    );
}

#[test]
fn queued_messages_run_in_order_survive_a_reload_and_wait_after_a_stop() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.text(&["First answer."]).after(Duration::from_millis(4000)),
        Wire::Ollama.text(&["Second answer."]),
        Wire::Ollama.text(&["Third answer."]),
        slow(),
        Wire::Ollama.text(&["Resumed answer."]),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    ready(&b);

    // Two messages typed while the first answer is slow wait in the queue.
    b.type_into("#input", &format!("first question{ENTER}"));
    b.wait("the turn running", "return !document.querySelector('#stop').hidden");
    b.type_into("#input", &format!("second question{ENTER}"));
    b.type_into("#input", &format!("third question{ENTER}"));
    b.wait(
        "two queued",
        "return document.querySelectorAll('#queue .queue-item').length === 2",
    );
    assert_eq!(b.js("return document.querySelector('#input').value"), json!(""));
    b.screenshot("30-queue-desktop");
    b.wait(
        "all three answers",
        "return document.querySelectorAll('.msg.assistant .md').length === 3 && document.querySelector('#stop').hidden",
    );
    assert_eq!(answers(&b), json!(["First answer.", "Second answer.", "Third answer."]));
    assert_eq!(
        questions(&llm),
        ["first question", "second question", "third question"],
        "the queue ran in order, one turn after another"
    );
    b.wait("the queue empty", "return document.querySelector('#queue').hidden");

    // A turn that hangs; two more queued; a reload keeps them.
    b.type_into("#input", &format!("fourth question{ENTER}"));
    b.wait("running", "return !document.querySelector('#stop').hidden");
    b.type_into("#input", &format!("fifth question{ENTER}"));
    b.type_into("#input", &format!("sixth question{ENTER}"));
    b.wait(
        "two queued",
        "return document.querySelectorAll('#queue .queue-item').length === 2",
    );
    b.goto(&s.url("/"));
    b.wait(
        "the queue after a reload",
        "return document.querySelectorAll('#queue .queue-item').length === 2 && !document.querySelector('#stop').hidden",
    );
    b.screenshot("31-queue-after-reload-desktop");

    // Edit one in place, move it down.
    b.click("#queue .queue-item .queue-text");
    b.wait("the editor", "return !!document.querySelector('#queue .edit-area')");
    b.js("document.querySelector('#queue .edit-area').value = 'fifth question, edited'");
    b.type_into("#queue .edit-area", ENTER);
    b.wait(
        "edited",
        "return document.querySelector('#queue .queue-text')?.textContent === 'fifth question, edited'",
    );
    b.click("#queue .queue-item .msg-act[aria-label='Move down']");
    b.wait(
        "moved",
        "return [...document.querySelectorAll('#queue .queue-text')].map(e => e.textContent).join('|') === 'sixth question|fifth question, edited'",
    );

    // Stop keeps the queue, paused.
    b.click("#stop");
    b.wait(
        "the paused queue",
        "return !!document.querySelector('#queue .btn.primary') && document.querySelector('#queue').textContent.includes('Paused')",
    );
    assert_eq!(
        b.js("return document.querySelectorAll('#queue .queue-item').length"),
        json!(2)
    );
    assert_eq!(llm.requests().len(), 4, "nothing was sent after the stop");
    b.screenshot("32-queue-paused-desktop");
    b.resize(390, 800);
    std::thread::sleep(Duration::from_millis(300));
    let fits: Value = b.js("return document.documentElement.scrollWidth <= window.innerWidth + 1");
    assert_eq!(fits, json!(true), "the queue fits a phone");
    b.screenshot("33-queue-phone");
    b.resize(1280, 860);

    // Resume: the next one runs.
    b.click("#queue .btn.primary");
    b.wait(
        "the resumed answer",
        "return [...document.querySelectorAll('.msg.assistant .md')].some(e => e.textContent.includes('Resumed answer'))",
    );
    // The first queued message went first (the next one may follow at once).
    assert_eq!(questions(&llm)[4], "sixth question");

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}

#[test]
fn message_actions_code_blocks_and_read_aloud() {
    let answer =
        "Use this:\n\n```python\ndef f(x):\n    return x + 1  # add one\n```\n\nAttention is all you need [1].";
    let llm = FakeServer::start(vec![
        Wire::Ollama.text(&["Plain first answer."]),
        Wire::Ollama.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"attention"}"#])]),
        Wire::Ollama.text(&[answer]),
        Wire::Ollama.text(&["Answer to the edited question."]),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    add_paper(&s, "Attention Is All You Need", "https://arxiv.org/abs/1706.03762");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    ready(&b);
    // The clipboard and the voices are the browser's: stand-ins record
    // what the page hands them.
    b.js("window.__copied = []; navigator.clipboard.writeText = async (t) => { window.__copied.push(t); };");
    let stub = |voices: &str| {
        format!(
            "const voices = {voices}; window.__spoken = [];
             window.SpeechSynthesisUtterance = function (t) {{ this.text = t; }};
             Object.defineProperty(window, 'speechSynthesis', {{ configurable: true, value: {{
               getVoices: () => voices, speak: (u) => window.__spoken.push(u.text), cancel: () => {{}},
               addEventListener: () => {{}} }} }});"
        )
    };
    b.js(&stub("[]"));

    b.type_into("#input", &format!("Original question{ENTER}"));
    b.wait(
        "the first answer",
        "return document.querySelector('.msg.assistant .msg-actions') && document.querySelector('#stop').hidden",
    );
    assert_eq!(
        b.js("return document.querySelectorAll('.msg-act.speak').length"),
        json!(0),
        "no voices, no speaker"
    );

    // Regenerate (with a voice now): the exchange is asked again.
    b.js(&stub(
        "[{ name: 'Test voice', lang: 'en-GB', localService: true, default: true }]",
    ));
    b.click(".msg-act.regen");
    b.wait(
        "the regenerated answer",
        "return !!document.querySelector('.msg.assistant .md pre') && document.querySelector('#stop').hidden && !!document.querySelector('.msg-act.speak')",
    );
    let items = b.js("return [...document.querySelectorAll('#messages > li')].map(l => l.className + ': ' + l.textContent.slice(0, 60))");
    assert_eq!(
        b.js("return document.querySelectorAll('.msg.user').length"),
        json!(1),
        "{items}"
    );
    assert_eq!(
        b.js("return document.querySelectorAll('.msg.assistant').length"),
        json!(1),
        "{items}"
    );
    assert_eq!(s.get("/history").json()["entries"].as_array().unwrap().len(), 2);
    assert_eq!(questions(&llm)[1], "Original question");

    // Code: colours and its own Copy.
    b.wait(
        "highlighted code",
        "return !!document.querySelector('.md pre code.hl .tok-keyword')",
    );
    b.click(".md pre .copy-code");
    b.wait("copied code", "return window.__copied.length === 1");
    let code = b.js("return window.__copied[0]");
    assert!(
        code.as_str()
            .unwrap()
            .starts_with("def f(x):\n    return x + 1  # add one"),
        "{code}"
    );
    assert!(!code.as_str().unwrap().contains("Copy"));
    b.screenshot("35-code-block-desktop");
    // The answer's Copy gives the Markdown as written.
    b.click(".msg.assistant .msg-act[aria-label='Copy answer']");
    b.wait("copied answer", "return window.__copied.length === 2");
    assert!(b
        .js("return window.__copied[1]")
        .as_str()
        .unwrap()
        .contains("```python"));

    // Read aloud: words only — no code, no citation markers.
    b.click(".msg-act.speak");
    b.wait("spoken", "return window.__spoken.length === 1");
    let spoken = b.js("return window.__spoken[0]").as_str().unwrap().to_string();
    assert!(
        spoken.contains("Use this") && spoken.contains("Attention is all you need"),
        "{spoken}"
    );
    assert!(
        !spoken.contains("return x") && !spoken.contains("[1]") && !spoken.contains("def f"),
        "{spoken}"
    );
    assert_eq!(
        b.js("return document.querySelector('.msg-act.speak').getAttribute('aria-pressed')"),
        json!("true")
    );
    b.click(".msg-act.speak");
    assert_eq!(
        b.js("return document.querySelector('.msg-act.speak').getAttribute('aria-pressed')"),
        json!("false"),
        "the button stops it"
    );
    b.js("document.querySelector('.msg.assistant').dispatchEvent(new MouseEvent('mouseover', {bubbles: true}))");
    b.screenshot("34-message-actions-desktop");

    // Edit the question and send it again in place.
    // (Shown on hover: clicked from script.)
    b.js("document.querySelector(\".msg.user .msg-act[aria-label='Edit and send again']\").click()");
    b.wait(
        "the edit box",
        "return !!document.querySelector('.msg.user .edit-area')",
    );
    b.js("document.querySelector('.msg.user .edit-area').value = 'An edited question'");
    b.type_into(".msg.user .edit-area", ENTER);
    b.wait(
        "the answer to the edit",
        "return [...document.querySelectorAll('.msg.assistant .md')].some(e => e.textContent.includes('edited question')) && document.querySelector('#stop').hidden",
    );
    let users = b.js("return [...document.querySelectorAll('.msg.user .bubble')].map(e => e.textContent)");
    assert_eq!(users, json!(["An edited question"]));
    let last = llm.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("An edited question") && !last.contains("Original question"),
        "the edited question replaced the original: {last}"
    );
    b.resize(390, 800);
    std::thread::sleep(Duration::from_millis(300));
    b.screenshot("36-message-actions-phone");

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}

#[test]
fn sidebar_groups_search_rolled_back_notice_pins_and_the_new_draft_dialog() {
    let titles = [
        "Attention mechanisms in long documents",
        "Yesterday's reading list for the thesis",
        "Budget planning for the spring conference",
        "An old conversation about residual networks",
    ];
    let mut replies: Vec<_> = titles.iter().map(|_| Wire::Ollama.text(&["Noted."])).collect();
    replies.push(slow());
    let llm = FakeServer::start(replies);
    let s = WebServer::with_llm(&llm.url, "");
    let day = chrono_like_days_ago();
    for (i, t) in titles.iter().enumerate() {
        let id = s.new_session();
        let mut sse = s.chat(&id, t);
        let _ = sse.rest();
        if i > 0 {
            // Moved back in time: yesterday, three and twenty days ago.
            let path = s.sandbox.jarvis_home().join(format!("sessions/{id}.json"));
            let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            v["updated"] = json!(day([1, 3, 20][i - 1]));
            std::fs::write(&path, v.to_string()).unwrap();
        }
    }
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    ready(&b);
    b.wait(
        "the groups",
        "return document.querySelectorAll('#session-list .group-label').length === 4",
    );
    let labels = b.js("return [...document.querySelectorAll('#session-list .group-label')].map(e => e.textContent)");
    assert_eq!(labels[0], "Today");
    assert_eq!(labels[1], "Yesterday");
    assert_eq!(labels[2], "Previous 7 days");
    assert_eq!(labels[3], "Previous 30 days", "{labels}");
    // A title keeps far more than 15 characters on screen: the share of
    // its text that fits, in characters.
    let shown: Value = b.js(
        "const e = [...document.querySelectorAll('#session-list .session:not(.active) .session-name')][0];
         return [Math.floor(e.textContent.length * Math.min(1, e.clientWidth / e.scrollWidth)), e.clientWidth, e.scrollWidth, e.closest('li').clientWidth]",
    );
    assert!(
        shown[0].as_f64().unwrap() >= 22.0,
        "visible title characters, name width, text width, row width: {shown}"
    );
    b.screenshot("37-sidebar-groups-desktop");
    b.type_into("#session-search", "thesis");
    b.wait(
        "filtered",
        "return document.querySelectorAll('#session-list .session').length === 1",
    );
    assert!(text_of(&b, "#session-list").contains("reading list"));
    b.screenshot("38-sidebar-search-desktop");
    b.js("const i = document.querySelector('#session-search'); i.value = ''; i.dispatchEvent(new Event('input'))");

    // A first question stopped: a quiet notice, the question back, no title left.
    b.click("#new-chat");
    b.wait("a fresh chat", "return document.querySelectorAll('.msg').length === 0");
    b.type_into("#input", &format!("A question I will stop{ENTER}"));
    b.wait("running", "return !document.querySelector('#stop').hidden");
    b.click("#stop");
    b.wait(
        "the notice",
        "return document.querySelector('.rolled-back')?.textContent.includes('rolled back')",
    );
    assert_eq!(text_of(&b, "#session-title"), "New chat");
    assert_eq!(
        b.js("return document.querySelector('#input').value"),
        json!("A question I will stop")
    );
    b.screenshot("39-rolled-back-desktop");
    std::thread::sleep(Duration::from_millis(300));
    b.goto(&s.url("/"));
    ready(&b);
    b.wait(
        "the page settled",
        "return document.querySelectorAll('#session-list .session').length === 4",
    );
    assert_eq!(
        text_of(&b, "#session-title"),
        "New chat",
        "no stale title after a reload"
    );
    assert_eq!(b.js("return document.querySelector('#welcome').hidden"), json!(false));

    // Pinned context from the command palette.
    b.keys("\u{E009}k\u{E000}");
    b.wait("palette", "return document.querySelector('#palette').open");
    b.type_into("#palette-input", &format!("pinned{ENTER}"));
    b.wait("the pins dialog", "return document.querySelector('#pins-dialog')?.open");
    b.screenshot("40-pins-empty-desktop");
    for (i, line) in [
        "I write in British English",
        "My thesis is about attention",
        "@cooking/pasta.md",
    ]
    .iter()
    .enumerate()
    {
        b.type_into("#pin-new", &format!("{line}{ENTER}"));
        b.wait(
            "the pin listed",
            &format!(
                "return document.querySelectorAll('#pin-list .pin-item').length === {}",
                i + 1
            ),
        );
    }
    b.click("#pin-list .pin-item:nth-child(2) .pill");
    b.wait(
        "paused",
        "return !!document.querySelector('#pin-list .pin-item.paused')",
    );
    let pins = s.get("/pins").json();
    assert_eq!(pins["items"].as_array().unwrap().len(), 3);
    assert_eq!(pins["items"][1]["paused"], json!(true));
    b.screenshot("41-pins-dialog-desktop");
    b.resize(390, 800);
    std::thread::sleep(Duration::from_millis(300));
    b.screenshot("42-pins-dialog-phone");
    b.js("document.querySelector('#pins-dialog').close()");
    b.click("#toggle-sidebar");
    std::thread::sleep(Duration::from_millis(400));
    b.screenshot("43-sidebar-groups-phone");
    b.js("document.querySelector('#scrim').click()");
    b.resize(1280, 860);

    // New draft: an in-app dialog, not the browser's prompt().
    b.js("window.prompt = () => { throw new Error('the browser prompt is not used'); }");
    b.click("#view-editor");
    // The editor loads on first use: its list says so once it is wired.
    b.wait(
        "the editor",
        "return !document.querySelector('#editor').hidden && !document.querySelector('#drafts-empty').hidden",
    );
    b.click("#ed-new");
    b.wait("the dialog", "return document.querySelector('dialog.ask')?.open");
    b.screenshot("44-new-draft-dialog-desktop");
    b.js("document.querySelector('dialog.ask input').value = 'chapter.md'");
    b.type_into("dialog.ask input", ENTER);
    b.wait(
        "the new tab",
        "return document.querySelector('.tab.active .tab-open')?.textContent === 'chapter.md'",
    );
    b.wait(
        "the strip's empty state",
        "return getComputedStyle(document.querySelector('.strip-empty')).display !== 'none'",
    );
    b.screenshot("45-editor-strip-desktop");

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}

/// An ISO timestamp `n` days before now (the session files' format).
fn chrono_like_days_ago() -> impl Fn(u64) -> String {
    |n| {
        // Exactly n days back: a day ago is always yesterday, whatever the hour.
        let t = std::time::SystemTime::now() - Duration::from_secs(n * 86_400);
        let secs = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }
}
