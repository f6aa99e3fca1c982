//! What the assistant shows and decides around an answer: the model's
//! reasoning streamed as `thinking` (and never sent back), over every wire;
//! profiles (the tools a request offers, `switch_profile` mid-turn); the
//! planning phase; custom commands in a turn and in `jarvis ask`.

use std::sync::{Arc, Mutex};

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

/// Every tool name a request offered (Ollama's and OpenAI's shape).
fn offered(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The system prompt of an Ollama request.
fn system_of(body: &serde_json::Value) -> String {
    body["messages"][0]["content"].as_str().unwrap_or("").to_string()
}

#[test]
fn a_profile_offers_only_its_tools_and_switch_profile_changes_the_next_rounds_tools() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![
        // Not the writing partner's: refused without running.
        Wire::Ollama.tool_calls(&[("c1", "remove_document", vec![r#"{"source":"cooking/pasta.md"}"#])]),
        Wire::Ollama.tool_calls(&[("c2", "switch_profile", vec![r#"{"profile":"librarian"}"#])]),
        Wire::Ollama.tool_calls(&[("c3", "kb_stats", vec!["{}"])]),
        Wire::Ollama.text(&["The library holds four notes."]),
    ]);
    let agent = fx.agent(&server);
    let s = Arc::new(Mutex::new(
        agent.new_session_as(Some("ollama"), None, Some("writing")).unwrap(),
    ));
    let ev = Events::default();
    agent
        .run_turn(&s, "Tidy up my library", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let writing = offered(&reqs[0].body);
    assert!(writing.contains(&"propose_draft_edit".to_string()), "{writing:?}");
    assert!(writing.contains(&"switch_profile".to_string()), "{writing:?}");
    for absent in ["remove_document", "kb_stats", "index_vault", "update_document_metadata"] {
        assert!(!writing.contains(&absent.to_string()), "{absent} offered: {writing:?}");
    }
    assert!(system_of(&reqs[0].body).contains("Profile for this conversation: Writing partner."));
    assert_eq!(reqs[0].body["options"]["temperature"], 0.7);
    // The refused call's result says why; the note is still there.
    let refused = reqs[1].body.to_string();
    assert!(
        refused.contains("not available in this conversation's profile"),
        "{refused}"
    );
    assert!(
        !ev.all().iter().any(|e| matches!(e, ChatEvent::Confirm { .. })),
        "the refused removal asked nothing"
    );
    assert_eq!(offered(&reqs[1].body), writing, "the same profile until the switch");
    // The switch takes effect for the very next round.
    let librarian = offered(&reqs[2].body);
    assert!(librarian.contains(&"remove_document".to_string()), "{librarian:?}");
    assert!(librarian.contains(&"kb_stats".to_string()), "{librarian:?}");
    assert!(!librarian.contains(&"propose_draft_edit".to_string()), "{librarian:?}");
    assert!(system_of(&reqs[2].body).contains("Profile for this conversation: Librarian."));
    assert_eq!(reqs[2].body["options"]["temperature"], 0.2);
    let events = ev.all();
    let start = events
        .iter()
        .position(|e| matches!(e, ChatEvent::ToolStart { name, .. } if name == "switch_profile"))
        .expect("switch_profile ran");
    let switched = events
        .iter()
        .position(|e| matches!(e, ChatEvent::ProfileSwitched { id, name } if id == "librarian" && name == "Librarian"))
        .expect("profile_switched");
    assert!(start < switched);
    // Saved with the session, and the stats tool ran under the new profile.
    let id = s.lock().unwrap().id.clone();
    assert_eq!(agent.store().load(&id).unwrap().profile, "librarian");
    assert!(events
        .iter()
        .any(|e| matches!(e, ChatEvent::ToolFinish { name, is_error: false, .. } if name == "kb_stats")));
}

#[test]
fn planning_emits_a_plan_before_the_first_tool_and_direct_means_none() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![
        // The planning call, then the loop.
        Wire::Ollama.text(&["Plan:\n1. search_kb for the pasta note\n2. answer with its time, cited"]),
        Wire::Ollama.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"pasta"}"#])]),
        Wire::Ollama.text(&["Nine minutes [1]."]),
        // Second question: the planner says DIRECT.
        Wire::Ollama.text(&["DIRECT"]),
        Wire::Ollama.text(&["You're welcome."]),
    ]);
    let agent = fx.agent(&server);
    let s = Arc::new(Mutex::new(
        agent.new_session_as(Some("ollama"), None, Some("research")).unwrap(),
    ));
    let ev = Events::default();
    agent
        .run_turn(&s, "How long do I boil pasta?", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    let events = ev.all();
    let plan = events
        .iter()
        .position(|e| matches!(e, ChatEvent::Plan { text } if text == "1. search_kb for the pasta note\n2. answer with its time, cited"))
        .expect("plan_ready");
    let tool = events
        .iter()
        .position(|e| matches!(e, ChatEvent::ToolStart { .. }))
        .expect("a tool ran");
    assert!(plan < tool, "the plan comes before the first tool event");
    let reqs = server.requests();
    assert!(offered(&reqs[0].body).is_empty(), "the planning call offers no tools");
    assert!(reqs[0].body.to_string().contains("DIRECT"));
    for r in &reqs[1..3] {
        let sys = system_of(&r.body);
        assert!(
            sys.contains("Plan for this request") && sys.contains("1. search_kb for the pasta note"),
            "{sys}"
        );
    }
    assert_eq!(
        s.lock().unwrap().display.last().unwrap().plan,
        "1. search_kb for the pasta note\n2. answer with its time, cited"
    );

    let ev = Events::default();
    agent
        .run_turn(&s, "Thanks!", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(
        !ev.all().iter().any(|e| matches!(e, ChatEvent::Plan { .. })),
        "DIRECT: no plan"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert!(!system_of(&reqs[4].body).contains("Plan for this request"));
    // No plan from the earlier turn lingers in the transcript either.
    assert!(!reqs[4].body.to_string().contains("Plan for this request"));

    // A profile without planning makes no planning call at all.
    let quiet = FakeServer::start(vec![Wire::Ollama.text(&["Sure."])]);
    let agent = fx.agent(&quiet);
    let s = Arc::new(Mutex::new(
        agent.new_session_as(Some("ollama"), None, Some("writing")).unwrap(),
    ));
    agent.run_turn(&s, "Hello", &ev.sink(), &Cancel::new()).unwrap();
    assert_eq!(quiet.requests().len(), 1);
}

#[test]
fn a_custom_command_line_runs_as_its_expansion_in_a_turn_and_in_jarvis_ask() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![
        Wire::Ollama.text(&["Summary."]),
        Wire::Ollama.text(&["Summary again."]),
    ]);
    let agent = fx.agent(&server);
    let s = session(&agent, "ollama");
    let ev = Events::default();
    agent
        .run_turn(&s, "/summarize foo bar", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    let body = &server.requests()[0].body;
    let last = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        last.starts_with("Summarise what my notes and papers say about foo."),
        "$1 is foo: {last}"
    );
    assert!(last.ends_with("\n\nbar"), "the unasked argument is appended: {last}");
    assert_eq!(
        s.lock().unwrap().display[0].text,
        "/summarize foo bar",
        "the bubble shows what was typed"
    );

    // The same through the binary.
    fx.sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n\n[vault]\npath = \"{}\"\n",
        server.url,
        fx.vault.display()
    ));
    let Fx { sb, kb, .. } = fx;
    drop(agent);
    drop(kb);
    let r = sb.run(&["ask", "/summarize foo bar"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("Summary again."), "{}", r.stdout);
    let body = &server.requests()[1].body;
    let last = body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        last.starts_with("Summarise what my notes and papers say about foo."),
        "{last}"
    );
    let r = sb.run(&["ask", "hi", "--profile", "nope"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("no profile \"nope\""), "{}", r.stderr);
}
