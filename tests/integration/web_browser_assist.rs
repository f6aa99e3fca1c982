//! The assistant's extras in a real browser against fake models: the
//! model's reasoning as a folded, dimmed block (live and after a reload).
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
