//! What the assistant shows and decides around an answer: the model's
//! reasoning streamed as `thinking` (and never sent back), over every wire.

use jarvis::cancel::Cancel;
use jarvis::chat::ChatEvent;
use jarvis::llm::Block;
use serde_json::json;

use crate::support::chat::*;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::{sse, Wire};

/// An OpenAI-compatible stream whose reasoning comes as `reasoning_content`
/// (DeepSeek, vLLM, llama.cpp), not OpenRouter's `reasoning`.
fn reasoning_content(thought: &str, text: &str) -> crate::support::fakes::llm::Reply {
    let w = Wire::OpenRouter;
    let mut v = vec![sse(
        None,
        &json!({"choices":[{"index":0,"delta":{"reasoning_content":thought}}]}),
    )];
    v.extend(w.text_events(&[text]));
    v.extend(w.finish("stop"));
    w.reply(v)
}

#[test]
fn thinking_streams_from_every_wire_is_kept_for_display_and_never_sent_back() {
    let fx = fixture(NOTES);
    let cases: Vec<(&str, &str, crate::support::fakes::llm::Reply)> = vec![
        (
            "ollama",
            "ollama-thought-1",
            Wire::Ollama.thinking("ollama-thought-1", "Nine minutes."),
        ),
        (
            "anthropic",
            "anthropic-thought-2",
            Wire::Anthropic.thinking("anthropic-thought-2", "Nine minutes."),
        ),
        (
            "openrouter:acme/model-1",
            "openrouter-thought-3",
            Wire::OpenRouter.thinking("openrouter-thought-3", "Nine minutes."),
        ),
        (
            "openrouter:acme/model-1",
            "deepseek-thought-4",
            reasoning_content("deepseek-thought-4", "Nine minutes."),
        ),
    ];
    for (spec, thought, first) in cases {
        let wire = match spec {
            "ollama" => Wire::Ollama,
            "anthropic" => Wire::Anthropic,
            _ => Wire::OpenRouter,
        };
        let server = FakeServer::start(vec![first, wire.text(&["Salted water."])]);
        let agent = fx.agent(&server);
        let s = session(&agent, spec);
        let ev = Events::default();
        let reply = agent
            .run_turn(&s, "How long do I boil pasta?", &ev.sink(), &Cancel::new())
            .unwrap()
            .unwrap();
        assert_eq!(reply.text, "Nine minutes.", "{spec}");
        let streamed: String = ev
            .all()
            .iter()
            .filter_map(|e| match e {
                ChatEvent::Thinking { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, thought, "{spec}: the reasoning streams as thinking events");
        // Never as the answer's text.
        assert!(ev
            .all()
            .iter()
            .all(|e| !matches!(e, ChatEvent::Text { text } if text.contains(thought))));
        {
            let g = s.lock().unwrap();
            let last = g.display.last().unwrap();
            assert_eq!(last.thinking, thought, "{spec}: the display keeps it");
            assert!(
                g.messages
                    .iter()
                    .flat_map(|m| m.content.iter())
                    .all(|b| !matches!(b, Block::ProviderOpaque { .. })),
                "{spec}: the saved transcript keeps no reasoning"
            );
        }
        agent
            .run_turn(&s, "And the water?", &ev.sink(), &Cancel::new())
            .unwrap()
            .unwrap();
        let bodies = bodies(&server);
        assert_eq!(bodies.len(), 2, "{spec}");
        assert!(
            !bodies[1].contains(thought) && !bodies[1].contains("SIG123"),
            "{spec}: the next request carries no reasoning: {}",
            bodies[1]
        );
        assert!(bodies[1].contains("Nine minutes."), "{spec}: the answer itself stays");
    }
}
