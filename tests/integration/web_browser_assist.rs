//! The assistant's extras in a real browser against fake models: the
//! model's reasoning as a folded, dimmed block (live and after a reload),
//! the profile picker and the plan card, custom commands (the slash menu,
//! the dialog, `/summarize foo bar` expanded).
//! Screenshots land in `target/screenshots/`.

use crate::support::browser::Browser;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";

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
fn thinking_shows_folded_and_dimmed_apart_from_the_answer_and_survives_a_reload() {
    let thought = "The user asks about pasta. Nine minutes is the usual time for dried spaghetti; mention salt.";
    let llm = FakeServer::start(vec![Wire::Ollama.thinking(thought, "Boil it for **nine minutes**.")]);
    let s = WebServer::with_llm(&llm.url, "");
    for (w, h, name) in [(1280, 860, "desktop"), (390, 844, "phone")] {
        let b = Browser::start(w, h);
        b.goto(&s.url("/"));
        ready(&b);
        if name == "desktop" {
            b.type_into("#input", &format!("How long do I boil pasta?{ENTER}"));
            b.wait(
                "the answer",
                "return document.querySelector('.msg.assistant .md strong')?.textContent === 'nine minutes'",
            );
        } else {
            // The phone opens the same conversation from the saved file.
            b.wait(
                "the saved answer",
                "return document.querySelector('.msg.assistant .md strong')?.textContent === 'nine minutes'",
            );
        }
        let v = b.js(
            "const t = document.querySelector('.msg.assistant .thinking-box');
             if (!t) return null;
             return { open: t.open, text: t.querySelector('.thinking-text').textContent,
                      label: t.querySelector('summary').textContent,
                      opacity: Number(getComputedStyle(t).opacity),
                      inAnswer: document.querySelector('.msg.assistant .bubble').textContent.includes('Nine minutes is') }",
        );
        assert_eq!(v["open"], false, "{name}: folded: {v}");
        assert_eq!(v["text"], thought, "{name}: {v}");
        assert!(v["label"].as_str().unwrap().starts_with("Reasoning"), "{name}: {v}");
        assert!(v["opacity"].as_f64().unwrap() < 1.0, "{name}: dimmed: {v}");
        assert_eq!(v["inAnswer"], false, "{name}: never part of the answer: {v}");
        b.screenshot(&format!("assist-thinking-folded-{name}"));
        b.click(".msg.assistant .thinking-box summary");
        b.wait(
            "the reasoning opens",
            "return document.querySelector('.msg.assistant .thinking-box').open",
        );
        b.screenshot(&format!("assist-thinking-open-{name}"));
        b.finish();
    }
}

const TAB: &str = "\u{E004}";

#[test]
fn the_profile_picker_the_plan_card_and_a_switch_in_the_browser() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.text(&["1. kb_stats to see what the library holds\n2. search_kb for the budget review\n3. answer with the date, cited"]),
        Wire::Ollama.tool_calls(&[("c1", "kb_stats", vec!["{}"])]),
        Wire::Ollama.text(&["The review is on **Friday**."]),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    ready(&b);
    b.wait(
        "the profile picker",
        "return document.querySelectorAll('#profile-picker .profile-card').length === 4",
    );
    let names = b.js("return [...document.querySelectorAll('#profile-picker .pc-name')].map((e) => e.textContent)");
    assert_eq!(
        names,
        serde_json::json!(["Default", "Librarian", "Research assistant", "Writing partner"])
    );
    b.screenshot("assist-profile-picker-desktop");
    b.click("#profile-picker [data-profile='research']");
    b.wait(
        "the research profile chosen",
        "return document.querySelector('#profile-picker [data-profile=research]').getAttribute('aria-checked') === 'true' && document.querySelector('#profile-badge').textContent === 'Research assistant' && !document.querySelector('#profile-badge').hidden",
    );
    b.type_into("#input", &format!("When is the budget review?{ENTER}"));
    b.wait(
        "the answer",
        "return document.querySelector('.msg.assistant .md strong')?.textContent === 'Friday'",
    );
    let v = b.js(
        "const li = document.querySelector('.msg.assistant');
         const kids = [...li.children];
         const plan = li.querySelector('.plan-card');
         return { steps: plan ? [...plan.querySelectorAll('li')].map((x) => x.textContent) : null,
                  planFirst: kids.indexOf(plan) < kids.indexOf(li.querySelector('.bubble')) && kids.indexOf(plan) < kids.indexOf(li.querySelector('.tools-box')),
                  folded: plan && !plan.open }",
    );
    assert_eq!(
        v["steps"],
        serde_json::json!([
            "kb_stats to see what the library holds",
            "search_kb for the budget review",
            "answer with the date, cited"
        ]),
        "{v}"
    );
    assert_eq!(
        v["planFirst"], true,
        "the plan sits above the tools and the answer: {v}"
    );
    assert_eq!(v["folded"], true, "folded once answered: {v}");
    b.click(".msg.assistant .plan-card summary");
    b.screenshot("assist-plan-card-desktop");
    // The planning request and the loop's: the plan is in the loop's system prompt.
    let reqs = llm.requests();
    assert!(reqs[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("1. kb_stats to see what the library holds"));
    b.finish();

    // A phone opens the same conversation: the saved plan, folded; then a
    // new chat shows the picker.
    let p = Browser::start(390, 844);
    p.goto(&s.url("/"));
    p.wait(
        "the saved plan",
        "return document.querySelectorAll('.msg.assistant .plan-card li').length === 3",
    );
    p.click(".msg.assistant .plan-card summary");
    p.screenshot("assist-plan-card-phone");
    p.js("document.querySelector('#new-chat').click()");
    p.wait(
        "the picker on a new chat",
        "return !document.querySelector('#welcome').hidden && document.querySelectorAll('#profile-picker .profile-card').length === 4",
    );
    p.screenshot("assist-profile-picker-phone");
    p.finish();
}

#[test]
fn custom_commands_slash_menu_dialog_and_expansion_in_the_browser() {
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["A summary of foo."])]);
    let s = WebServer::with_llm(&llm.url, "");
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    ready(&b);
    b.type_into("#input", "/");
    b.wait(
        "the slash menu",
        "return !document.querySelector('#slash-menu').hidden && [...document.querySelectorAll('#slash-menu .sl-name')].map((e) => e.textContent).includes('/summarize')",
    );
    let rows = b.js("return [...document.querySelectorAll('#slash-menu li')].map((li) => li.textContent)");
    let rows = rows.as_array().unwrap();
    assert!(
        rows[0].as_str().unwrap().starts_with("/new"),
        "built-ins first: {rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.as_str().unwrap().starts_with("/summarizetopic [focus]")),
        "with the argument hint: {rows:?}"
    );
    b.screenshot("assist-slash-menu-desktop");
    b.type_into("#input", "su");
    b.wait(
        "the menu filtered",
        "return [...document.querySelectorAll('#slash-menu .sl-name')].map((e) => e.textContent).join() === '/summarize'",
    );
    b.keys(TAB);
    b.wait(
        "completed",
        "return document.querySelector('#input').value === '/summarize '",
    );
    b.type_into("#input", &format!("foo bar{ENTER}"));
    b.wait(
        "the answer",
        "return document.querySelector('.msg.assistant .md')?.textContent.includes('A summary of foo.')",
    );
    assert_eq!(
        b.js("return document.querySelector('.msg.user .bubble').textContent"),
        "/summarize foo bar"
    );
    let body = llm.requests()[0].body.clone();
    let last = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        last.starts_with("Summarise what my notes and papers say about foo.") && last.ends_with("\n\nbar"),
        "expanded with $1=foo: {last}"
    );

    // /commands opens the dialog; the preview follows the template and arguments.
    b.type_into("#input", &format!("/commands{ENTER}"));
    b.wait("the dialog", "return document.querySelector('#commands-dialog')?.open");
    b.wait(
        "the list",
        "return [...document.querySelectorAll('#cmd-list .cmd-item .sl-name')].map((e) => e.textContent).join() === '/compare,/explain,/summarize'",
    );
    b.js("[...document.querySelectorAll('#cmd-list .cmd-item')].find((x) => x.textContent.startsWith('/summarize')).click()");
    b.type_into("#cmd-args", "tides \"the moon\"");
    b.wait(
        "the live preview",
        "return document.querySelector('#cmd-preview').textContent.startsWith('Summarise what my notes and papers say about tides.') && document.querySelector('#cmd-preview').textContent.endsWith('the moon')",
    );
    b.screenshot("assist-command-dialog-desktop");
    // Create, duplicate, delete.
    b.click("#cmd-new");
    b.type_into("#cmd-name", "tldr");
    b.type_into("#cmd-desc", "The gist in three lines");
    b.type_into("#cmd-template", "Give me the gist of $ARGUMENTS in three lines.");
    b.click("#cmd-form button[type=submit]");
    b.wait(
        "saved",
        "return [...document.querySelectorAll('#cmd-list .cmd-item .sl-name')].some((e) => e.textContent === '/tldr')",
    );
    b.click("#cmd-duplicate");
    b.wait(
        "duplicated",
        "return document.querySelector('#cmd-name').value === 'tldr-copy'",
    );
    b.js("window.confirm = () => true");
    b.click("#cmd-delete");
    b.wait(
        "deleted",
        "return ![...document.querySelectorAll('#cmd-list .cmd-item .sl-name')].some((e) => e.textContent === '/tldr-copy')",
    );
    let listed = s.get("/commands").json();
    let names: Vec<&str> = listed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compare", "explain", "summarize", "tldr"]);
    // A built-in name is refused.
    b.click("#cmd-new");
    b.type_into("#cmd-name", "new");
    b.type_into("#cmd-template", "x");
    b.click("#cmd-form button[type=submit]");
    b.wait(
        "the refusal",
        "return !document.querySelector('#cmd-error').hidden && document.querySelector('#cmd-error').textContent.includes('built-in')",
    );
    b.resize(390, 844);
    b.click("#cmd-list .cmd-item");
    b.screenshot("assist-command-dialog-phone");
    b.js("document.querySelector('#commands-dialog').close()");
    b.type_into("#input", "/");
    b.wait(
        "the slash menu on a phone",
        "return !document.querySelector('#slash-menu').hidden",
    );
    b.screenshot("assist-slash-menu-phone");
    b.finish();
}
