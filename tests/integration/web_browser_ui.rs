//! More of the web app in a real browser: the failed-turn card's Retry and
//! Switch model against fake models, the light colour scheme, and a phone
//! width. Screenshots land in `target/screenshots/`.

use serde_json::{json, Value};

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::web::{add_paper, WebServer};

const ENTER: &str = "\u{E007}";

/// The model named in each request the fake received, in order.
fn models_asked(llm: &FakeServer) -> Vec<String> {
    llm.requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_string())
        .collect()
}

fn last_assistant_text(b: &Browser) -> String {
    b.js("const m = [...document.querySelectorAll('.msg.assistant .md')]; return m.length ? m[m.length - 1].textContent : ''")
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_failed_turn_offers_retry_and_switch_model_and_both_recover() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.model_not_found(),
        Wire::Ollama.text(&["Recovered on the retry."]),
        Wire::Ollama.model_not_found(),
        Wire::Ollama.text(&["Answered by the small model."]),
    ]);
    let s = WebServer::with_llm(&llm.url, "[models]\nollama = [\"small:1b\"]\n");
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
    let first_model = text_of(&b, "#model-label");

    // The model call fails: the saved ⚠️ reply and a card with both ways out.
    b.type_into("#input", &format!("hello{ENTER}"));
    b.wait(
        "the error card",
        "return document.querySelector('.card.error h3')?.textContent === 'This turn failed'",
    );
    assert!(
        last_assistant_text(&b).contains("not found"),
        "the reply says why: {}",
        last_assistant_text(&b)
    );
    let buttons = b.js("return [...document.querySelectorAll('.card.error button')].map(e => e.textContent)");
    assert_eq!(buttons, json!(["Retry", "Switch model"]));
    b.wait("Send again", "return document.querySelector('#stop').hidden");
    b.screenshot("13-error-card-desktop");

    // Retry asks the same question again, on the same model, and succeeds.
    b.click(".card.error .btn.primary");
    b.wait(
        "the retried answer",
        "return [...document.querySelectorAll('.msg.assistant .md')].some(e => e.textContent.includes('Recovered on the retry'))",
    );
    let users = b.js("return [...document.querySelectorAll('.msg.user')].map(e => e.textContent)");
    assert_eq!(users, json!(["hello", "hello"]), "the retry re-sent the question");
    assert_eq!(llm.requests().len(), 2);
    assert_eq!(
        llm.requests()[1].body["messages"].to_string().matches("hello").count(),
        2
    );
    b.wait("Send again", "return document.querySelector('#stop').hidden");

    // Fails again: Switch model opens the picker; the retry goes to the new model.
    b.type_into("#input", &format!("and now?{ENTER}"));
    b.wait(
        "a second error card",
        "return document.querySelectorAll('.card.error').length === 2",
    );
    b.wait("Send again", "return document.querySelector('#stop').hidden");
    b.js("[...document.querySelectorAll('.card.error')].pop().querySelectorAll('button')[1].click()");
    b.wait("the picker", "return document.querySelector('#model-dialog').open");
    b.wait(
        "the catalogue",
        "return [...document.querySelectorAll('#model-list .spec')].some(e => e.textContent === 'ollama:small:1b')",
    );
    b.screenshot("14-error-switch-model-desktop");
    b.js("[...document.querySelectorAll('#model-list button')].find(e => e.textContent.includes('small:1b')).click()");
    b.wait(
        "switched",
        "return document.querySelector('#model-label').textContent === 'ollama:small:1b' && !document.querySelector('#model-dialog').open",
    );
    assert_ne!(first_model, "ollama:small:1b");
    b.js("[...document.querySelectorAll('.card.error')].pop().querySelector('.btn.primary').click()");
    b.wait(
        "the small model's answer",
        "return [...document.querySelectorAll('.msg.assistant .md')].some(e => e.textContent.includes('Answered by the small model'))",
    );
    let models = models_asked(&llm);
    assert_eq!(models.len(), 4, "{models:?}");
    assert_eq!(models[3], "small:1b", "the retry used the new model: {models:?}");
    assert_ne!(models[2], "small:1b", "the failed call was on the old one: {models:?}");
    b.screenshot("15-error-recovered-desktop");
    // The dark scheme (the default) meets AA too, including the faint text
    // (session times, the composer hint) that is small by design.
    let dark = contrast_of(
        &b,
        &[
            ("reply text", ".msg.assistant .md p"),
            ("user bubble", ".msg.user .bubble"),
            ("session title", "#session-title"),
            ("sidebar entry", "#session-list .session-name"),
            ("error card text", ".card.error .desc"),
            ("primary button", ".card.error .btn.primary"),
            ("model pill", "#model-label"),
            ("composer", "#input"),
        ],
    );
    let faint = faint_contrast(&b);
    eprintln!("dark-scheme contrast: {dark} faint: {faint}");
    for (what, ratio) in dark.as_object().unwrap().iter().chain(faint.as_object().unwrap()) {
        let r = ratio.as_f64().unwrap();
        assert!(r >= 4.5, "{what}: contrast {r:.2} < 4.5 in the dark scheme");
    }
    // The server agrees: the session's model is the new one.
    let sessions = s.get("/sessions").json();
    let listed = sessions["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{sessions}");
    assert_eq!(listed[0]["model"], "small:1b", "{sessions}");

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}

#[test]
fn the_light_scheme_and_a_phone_width_look_right() {
    let answer = "Attention replaces recurrence.\n\n```python\nscores = q @ k.T\n```\n\n> A quoted line.\n\n| model | layers |\n|---|---|\n| base | 6 |";
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"attention"}"#])]),
        Wire::Ollama.text(&[answer]),
        Wire::Ollama.model_not_found(),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    add_paper(&s, "Attention Is All You Need", "https://arxiv.org/abs/1706.03762");
    add_paper(&s, "Deep Residual Learning", "https://arxiv.org/abs/1512.03385");
    let b = Browser::start_light(1280, 860);
    b.goto(&s.url("/"));
    assert_eq!(
        b.js("return matchMedia('(prefers-color-scheme: light)').matches"),
        json!(true),
        "the browser asks for the light scheme"
    );
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    b.screenshot("16-welcome-light");
    b.type_into("#input", &format!("What is attention?{ENTER}"));
    b.wait(
        "the rendered reply",
        "return [...document.querySelectorAll('.msg.assistant .md')].some(e => e.textContent.includes('replaces recurrence'))",
    );
    b.wait("Send again", "return document.querySelector('#stop').hidden");
    b.type_into("#input", &format!("and BERT?{ENTER}"));
    b.wait("the error card", "return !!document.querySelector('.card.error')");
    b.wait("Send again", "return document.querySelector('#stop').hidden");
    b.js("document.querySelector('#input').value = 'A half-typed follow-up'");
    // Contrast where it matters: body text, muted text, a button, the
    // user's bubble, chips and the error card (WCAG AA: 4.5 for text).
    let contrast = contrast_report(&b);
    eprintln!("light-scheme contrast: {contrast}");
    for (what, ratio) in contrast.as_object().unwrap() {
        let r = ratio.as_f64().unwrap();
        assert!(
            r >= 4.5,
            "{what}: contrast {r:.2} < 4.5 in the light scheme ({contrast})"
        );
    }
    let faint = faint_contrast(&b);
    eprintln!("light-scheme faint contrast: {faint}");
    for (what, ratio) in faint.as_object().unwrap() {
        let r = ratio.as_f64().unwrap();
        assert!(r >= 4.5, "{what}: contrast {r:.2} < 4.5 in the light scheme");
    }
    b.screenshot("17-chat-light");
    b.click("#open-library");
    b.wait(
        "library rows",
        "return document.querySelectorAll('#library-body tbody tr').length === 2",
    );
    let lib = library_contrast(&b);
    eprintln!("light-scheme library contrast: {lib}");
    for (what, ratio) in lib.as_object().unwrap() {
        let r = ratio.as_f64().unwrap();
        assert!(r >= 4.5, "library {what}: contrast {r:.2} < 4.5 ({lib})");
    }
    b.screenshot("18-library-light");
    b.js("document.querySelector('#library-dialog').close()");

    // A phone: the Chat/Editor switch goes icon-only, the title keeps room.
    b.resize(400, 800);
    b.goto(&s.url("/"));
    b.wait("composer", "return !!document.querySelector('#input')");
    b.wait(
        "the session listed",
        "return !!document.querySelector('#session-list .session-open')",
    );
    b.js("document.querySelector('#session-list .session-open').click()");
    b.wait(
        "the conversation",
        "return [...document.querySelectorAll('.msg.assistant .md')].some(e => e.textContent.includes('replaces recurrence'))",
    );
    b.wait(
        "the failed turn's card after the reload",
        "return document.querySelector('.card.error .btn.primary')?.textContent === 'Retry'",
    );
    let m: Value = b.js(
        "const t = document.querySelector('#session-title'); const sw = document.querySelector('#view-switch');
         const label = document.querySelector('#view-chat .vs-label');
         return { title: t.getBoundingClientRect().width, switch: sw.getBoundingClientRect().width,
                  label_shown: !!label && label.getBoundingClientRect().width > 2,
                  names: [...sw.querySelectorAll('[role=tab]')].map(b => b.textContent.trim()),
                  overflow: document.documentElement.scrollWidth > window.innerWidth + 1 }",
    );
    eprintln!("400 px topbar: {m}");
    b.screenshot("19-chat-400-light");
    assert_eq!(m["overflow"], json!(false), "no horizontal scrolling at 400 px: {m}");
    assert_eq!(m["label_shown"], json!(false), "icon-only switch at 400 px: {m}");
    assert_eq!(
        m["names"],
        json!(["Chat", "Editor"]),
        "the tabs keep their names for a screen reader: {m}"
    );
    assert!(
        m["title"].as_f64().unwrap() >= 120.0,
        "the session title keeps room: {m}"
    );
    b.click("#view-editor");
    b.wait(
        "the editor view",
        "return document.querySelector('#view-editor').getAttribute('aria-selected') === 'true'",
    );
    b.screenshot("20-editor-400-light");

    let origin = s.origin();
    let urls = b.finish();
    assert_only_app_origin(&urls, &origin);
}

/// WCAG contrast of foreground against the nearest opaque background, for
/// named elements of the chat view. The ratio of the element's computed
/// colour to its effective background.
const CONTRAST_JS: &str = r#"
function rgb(s) { const m = s.match(/[\d.]+/g); return m ? m.map(Number) : [0, 0, 0, 0]; }
function lum([r, g, b]) {
  const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}
function bg(el) {
  for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] > 0.9) return c;
  }
  return [255, 255, 255];
}
function ratio(el) {
  if (!el) return null;
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg(el));
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}
const out = {};
for (const [name, css] of arguments[0]) {
  const r = ratio(document.querySelector(css));
  if (r !== null) out[name] = Math.round(r * 100) / 100;
}
return out;
"#;

fn contrast_of(b: &Browser, targets: &[(&str, &str)]) -> Value {
    let v = b.js_args(CONTRAST_JS, vec![json!(targets)]);
    assert_eq!(
        v.as_object().map(|o| o.len()),
        Some(targets.len()),
        "every element was found: {v}"
    );
    v
}

fn contrast_report(b: &Browser) -> Value {
    contrast_of(
        b,
        &[
            ("reply text", ".msg.assistant .md p"),
            ("user bubble", ".msg.user .bubble"),
            ("session title", "#session-title"),
            ("sidebar entry", "#session-list .session-name"),
            ("source chip", ".msg.assistant .chip .t"),
            ("tool name", ".tools-box .tool .nm"),
            ("error card text", ".card.error .desc"),
            ("primary button", ".card.error .btn.primary"),
            ("model pill", "#model-label"),
            ("composer", "#input"),
        ],
    )
}

/// Text drawn in `--faint`: the smallest, least prominent text on the page.
fn faint_contrast(b: &Browser) -> Value {
    contrast_of(
        b,
        &[
            ("session time", "#session-list .session-when"),
            ("composer hint", "#composer-hint"),
        ],
    )
}

fn library_contrast(b: &Browser) -> Value {
    contrast_of(
        b,
        &[
            ("title cell", "#library-body tbody .t"),
            ("search box", "#library-search"),
            ("header", "#library-body thead th"),
        ],
    )
}
