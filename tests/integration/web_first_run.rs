//! The first run: an empty `$JARVIS_HOME` opens the web app on the set-up
//! panel (vault → model → first index → a search), in a real browser with
//! a stand-in Ollama on loopback; the model indicator tells a server that
//! answers from one that does not; a key given to the panel is stored 0600
//! and never sent back. Screenshots land in `target/screenshots/first-run-*`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::net::dead_url;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";

/// Three notes, one of them private.
fn vault(root: &Path) -> PathBuf {
    let v = root.join("notes");
    std::fs::create_dir_all(v.join("private")).unwrap();
    std::fs::write(
        v.join("volcano.md"),
        "# Volcanoes\n\nBasalt lava flows from shield volcanoes such as Mauna Loa.\n",
    )
    .unwrap();
    std::fs::write(v.join("bread.md"), "# Bread\n\nSourdough needs a lively starter.\n").unwrap();
    std::fs::write(v.join("private/diary.md"), "# Diary\n\nA quiet walk by the lake.\n").unwrap();
    v
}

/// Set a `<select>` or `<input>` by id the way a person would (events fire).
fn set_value(b: &Browser, id: &str, value: &str) {
    b.js_args(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1]; \
         e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));",
        vec![json!(id), json!(value)],
    );
}

fn no_horizontal_overflow(b: &Browser, what: &str) {
    let wide = b.js(
        "const d = document.querySelector('#setup-dialog'); const w = d.clientWidth; \
         return [...d.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > d.getBoundingClientRect().right + 1).map(e => e.tagName + '#' + e.id + '.' + e.className).slice(0, 8)",
    );
    let v = b.js("const d = document.querySelector('#setup-dialog'); \
         return [d.scrollWidth, d.clientWidth, document.documentElement.scrollWidth, window.innerWidth]");
    let n = |i: usize| v[i].as_u64().unwrap_or(0);
    assert!(
        n(0) <= n(1) + 1 && n(2) <= n(3) + 1,
        "{what} overflows sideways: {v}; wider: {wide}"
    );
}

#[test]
fn an_empty_home_opens_on_the_set_up_panel_and_ends_with_a_search_that_answers() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"where does basalt come from"}"#])]),
        Wire::Ollama
            .text(&["Basalt lava comes from **shield volcanoes** such as Mauna Loa — your note *Volcanoes* says so."]),
    ]);
    llm.set_installed(&["qwen3-vl:30b", "small:1b"]);
    let s = WebServer::fresh(&[("OLLAMA_HOST", &llm.url)]);
    let notes = vault(s.sandbox.dir.path());
    let b = Browser::start(1280, 900);
    b.goto(&s.url("/"));
    b.wait(
        "the first-run panel",
        "return document.querySelector('#setup-dialog').open",
    );
    b.wait(
        "the Ollama step",
        "const e = document.querySelector('#ollama-offer'); return e && e.textContent.includes('2 installed')",
    );
    assert!(
        b.js("return document.querySelector('#index-start').disabled") == json!(true),
        "indexing waits for a notes folder"
    );
    b.screenshot("first-run-01-panel");

    // Step 1: a folder that is not there, one inside Jarvis's own home, then the real one.
    set_value(&b, "vault-path", "/no/such/folder");
    b.click("#vault-form button[type=submit]");
    b.wait(
        "the refusal",
        "return document.querySelector('#vault-status').textContent.includes('does not exist')",
    );
    let inside = s.sandbox.jarvis_home().join("notes");
    std::fs::create_dir_all(&inside).unwrap();
    set_value(&b, "vault-path", &inside.display().to_string());
    b.click("#vault-form button[type=submit]");
    b.wait(
        "the refusal",
        "return document.querySelector('#vault-status').textContent.includes('inside Jarvis')",
    );
    set_value(&b, "vault-path", &notes.display().to_string());
    b.click("#vault-form button[type=submit]");
    b.wait(
        "the folder accepted",
        "return document.querySelector('#vault-status').textContent.includes('3 notes found')",
    );
    assert_eq!(
        b.js("return document.querySelector('#index-start').disabled"),
        json!(false)
    );

    // Step 2: the stand-in Ollama's installed models are offered; pick one.
    let offered = b.js("return [...document.querySelectorAll('#setup-ollama-model option')].map(o => o.value)");
    assert!(
        offered.as_array().is_some_and(|a| a.contains(&json!("small:1b"))),
        "{offered}"
    );
    set_value(&b, "setup-ollama-model", "small:1b");
    b.click("#model-setup-form button[type=submit]");
    b.wait(
        "the model saved and answering",
        "const e = document.querySelector('#model-status'); return e.classList.contains('ok') && e.textContent.includes('ollama:small:1b')",
    );
    b.screenshot("first-run-02-vault-and-model");

    // Step 3: the first index, its progress drawn as it goes.
    b.js("window.__progress = []; new MutationObserver(() => window.__progress.push(document.querySelector('#index-status').textContent)).observe(document.querySelector('#index-status'), {childList: true, characterData: true, subtree: true});");
    b.click("#index-start");
    b.wait(
        "the index finished",
        "return document.querySelector('#index-status').textContent.includes('notes indexed')",
    );
    let seen = b.js("return window.__progress");
    assert!(
        seen.as_array()
            .is_some_and(|a| a.iter().any(|t| t.as_str().unwrap_or("").starts_with("Indexing…"))),
        "progress was shown while indexing: {seen}"
    );
    assert!(
        text_of(&b, "#index-status").contains("3 notes indexed"),
        "{}",
        text_of(&b, "#index-status")
    );
    b.screenshot("first-run-03-indexed");

    // Step 4: a search answers — no model involved.
    let chats_before = llm.requests().len();
    b.type_into("#try-q", &format!("basalt lava{ENTER}"));
    b.wait(
        "a search hit",
        "return document.querySelector('#try-hits').textContent.includes('volcano.md')",
    );
    assert_eq!(llm.requests().len(), chats_before, "a search asks no model");
    b.screenshot("first-run-04-search");

    // What the panel did is what `jarvis config set` would have done.
    let config = std::fs::read_to_string(s.sandbox.config_file()).unwrap();
    assert!(config.contains(&notes.display().to_string()), "{config}");
    assert!(config.contains("ollama:small:1b"), "{config}");

    // Done: the panel does not come back, the indicator is green, and a chat works.
    b.click("#setup-done");
    b.wait(
        "the panel closed",
        "return !document.querySelector('#setup-dialog').open",
    );
    b.goto(&s.url("/"));
    b.wait(
        "the model indicator",
        "return document.querySelector('#model-button').dataset.state === 'ready'",
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        b.js("return document.querySelector('#setup-dialog').open"),
        json!(false),
        "the panel never appears again once set"
    );
    assert_eq!(text_of(&b, "#model-label"), "ollama:small:1b");
    assert!(b.js("return document.querySelector('#setup-notices').hidden") == json!(true));
    b.type_into("#input", &format!("Where does basalt come from?{ENTER}"));
    b.wait(
        "the reply with its source",
        "return document.querySelector('#messages').textContent.includes('Mauna Loa') && document.querySelector('.sources .chip')",
    );
    // The README's picture of the chat view (docs/web-chat.png) is this one.
    b.screenshot("first-run-05-chat");

    // Phone width: the panel (from the menu) fits without sideways scrolling.
    b.resize(390, 844);
    std::thread::sleep(std::time::Duration::from_millis(600));
    b.click("#menu-button");
    b.click("#menu [data-action=setup]");
    b.wait("the panel", "return document.querySelector('#setup-dialog').open");
    b.wait(
        "the steps marked done",
        "return document.querySelectorAll('.setup-step.done').length >= 2",
    );
    b.screenshot("first-run-06-phone");
    no_horizontal_overflow(&b, "the set-up panel at phone width");
    let reqs = b.finish();
    assert_only_app_origin(&reqs, &s.origin());
}

#[test]
fn with_nothing_listening_the_indicator_is_not_green_the_box_says_why_and_search_still_answers() {
    let dead = dead_url();
    let scratch = tempfile::tempdir().unwrap();
    let notes = vault(scratch.path());
    let notes_s = notes.display().to_string();
    // The vault chosen from a terminal (VAULT_PATH), the model never chosen.
    let s = WebServer::fresh(&[("OLLAMA_HOST", &dead), ("VAULT_PATH", &notes_s)]);
    let r = s.get("/setup").json();
    assert_eq!(
        r["first_run"], false,
        "a vault chosen elsewhere is a set-up under way: {r}"
    );
    assert_eq!(r["model"]["state"], "unreachable", "{r}");
    assert!(r["model"]["message"].as_str().unwrap().contains(&dead), "{r}");
    let r = s.post("/setup/index", &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    for _ in 0..600 {
        if s.get("/setup/index").json()["running"] == false {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let p = s.get("/setup/index").json();
    assert_eq!(p["failed"], false, "{p}");

    let b = Browser::start(1100, 800);
    b.goto(&s.url("/"));
    b.wait(
        "the indicator",
        "return document.querySelector('#model-button').dataset.state === 'down'",
    );
    let dot = b.js("return getComputedStyle(document.querySelector('#model-button .dot')).backgroundColor");
    assert!(
        !dot.as_str().unwrap_or("").contains("95, 211, 162"),
        "the dot is not green when nothing answers: {dot}"
    );
    let title = b.js("return document.querySelector('#model-button').title");
    assert!(title.as_str().unwrap_or("").contains("not ready"), "{title}");
    b.wait("the notice", "return !document.querySelector('#setup-notices').hidden");
    let notice = text_of(&b, "#setup-notices");
    assert!(
        notice.contains("not answering") && notice.contains("ollama serve") && notice.contains("jarvis config set"),
        "{notice}"
    );
    assert!(text_of(&b, "#send").contains("Search"));
    b.type_into("#input", &format!("sourdough starter{ENTER}"));
    b.wait(
        "search results in the conversation",
        "const c = document.querySelector('.search-card'); return c && c.textContent.includes('bread.md')",
    );
    assert!(text_of(&b, ".search-card").contains("no model was asked"));
    b.screenshot("first-run-07-no-model");

    // A vault that vanished is shown with its fix.
    std::fs::rename(&notes, scratch.path().join("moved")).unwrap();
    b.goto(&s.url("/"));
    b.wait(
        "the vault notice",
        "return document.querySelector('#setup-notices').textContent.includes('does not exist')",
    );
    assert!(text_of(&b, "#setup-notices").contains("vault.path"));
    b.screenshot("first-run-08-vault-missing");
    b.resize(390, 844);
    // The sidebar slides away as the layout narrows: let it settle.
    std::thread::sleep(std::time::Duration::from_millis(600));
    b.screenshot("first-run-09-notices-phone");
    let fits = b.js("return document.documentElement.scrollWidth <= window.innerWidth + 1");
    assert_eq!(fits, json!(true), "the notices fit a phone");
}

#[test]
fn a_key_from_the_panel_is_stored_0600_and_never_sent_back() {
    let s = WebServer::fresh(&[]);
    let secret = "sk-ant-FIRSTRUN-0123456789-secret";
    let r = s.post("/setup/model", &json!({ "kind": "anthropic", "api_key": secret }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!r.text().contains(secret), "{}", r.text());
    assert_eq!(r.json()["state"], "ready", "{}", r.text());
    let file = s.sandbox.config_file();
    assert!(std::fs::read_to_string(&file).unwrap().contains(secret));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let or_secret = "sk-or-FIRSTRUN-abcdef-secret";
    let r = s.post(
        "/setup/model",
        &json!({ "kind": "openrouter", "api_key": or_secret, "model": "acme/model-1" }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for path in ["/setup", "/info", "/config/summary", "/models", "/settings"] {
        let body = s.get(path).text();
        assert!(
            !body.contains(secret) && !body.contains(or_secret) && !body.contains("FIRSTRUN"),
            "{path} echoed a key: {body}"
        );
    }
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

    // An OpenAI-compatible server on this machine: written as
    // `[servers.local]` (the keys `jarvis config set servers.…` writes),
    // local, probed through its /models.
    let server = FakeServer::start(vec![Wire::OpenRouter.text(&["ok"])]);
    let r = s.post(
        "/setup/model",
        &json!({ "kind": "server", "base_url": format!("{}/v1", server.url), "model": "stand-in", "api_key": "sk-local-FIRSTRUN" }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let m = r.json();
    assert_eq!(
        (m["state"].as_str(), m["local"].as_bool()),
        (Some("ready"), Some(true)),
        "{m}"
    );
    assert!(!r.text().contains("FIRSTRUN"), "{}", r.text());
    let config = std::fs::read_to_string(&file).unwrap();
    assert!(
        config.contains("[servers.local]") && config.contains("provider = \"local\""),
        "{config}"
    );
    assert!(server.requests().is_empty(), "the probe is no chat request");

    // Every change is a POST behind the same-origin check.
    let evil = s.request(
        "POST",
        "/setup/model",
        &[("Origin", "http://evil.example"), ("Content-Type", "application/json")],
        Some(br#"{"kind":"anthropic","api_key":"x"}"#),
    );
    assert_eq!(evil.status, 403, "{}", evil.text());
    for path in ["/setup/vault", "/setup/model", "/setup/finish"] {
        assert_eq!(s.get(path).status, 405, "{path} changes nothing on GET");
    }
    // Missing pieces are named.
    let r = s.post("/setup/model", &json!({ "kind": "openrouter", "api_key": "k" }));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("model"), "{}", r.text());
    let r = s.post("/setup/model", &json!({ "kind": "ollama", "model": " " }));
    assert_eq!(r.status, 400, "{}", r.text());
}
