//! Privacy end to end: under a cloud provider no request body the fake
//! receives contains private text — for search_kb, get_document, read_file,
//! search_chat_history and compaction — and a retrieval that would be only
//! private stops the turn with no further request. Under a local provider
//! the first private sighting flags the session private for good.

use std::sync::Arc;

use jarvis::cancel::Cancel;
use jarvis::chat::tools::{PRIVACY_STOP, PRIVATE_CAVEAT};
use jarvis::chat::{ChatEvent, ChatSettings, SwitchError};

use crate::support::chat::*;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;

fn call(wire: Wire, name: &str, args: &str) -> crate::support::fakes::llm::Reply {
    wire.tool_calls(&[("call_1", name, vec![args])])
}

/// One cloud turn whose single tool call should hit a privacy stop.
fn assert_cloud_stop(fx: &Fx, name: &str, args: &str) {
    let wire = Wire::OpenRouter;
    let server = FakeServer::start(vec![call(wire, name, args), wire.text(&["LEAKED ANSWER"])]);
    let agent = fx.agent(&server);
    let s = session(&agent, "openrouter:acme/model-1");
    let ev = Events::default();
    let reply = agent
        .run_turn(&s, "What does my diary say?", &ev.sink(), &Cancel::new())
        .expect("turn")
        .expect("not stopped");
    assert!(
        reply.privacy_stop,
        "{name}: expected a privacy stop, got {:?}",
        reply.text
    );
    assert_eq!(reply.text, PRIVACY_STOP);
    assert_eq!(
        server.requests().len(),
        1,
        "{name}: no further LLM request after the stop"
    );
    assert_no_private_text(&server);
    let saved = agent.store().load(&s.lock().unwrap().id).expect("saved");
    assert!(!saved.private, "a cloud session never saw private text");
    assert_eq!(
        saved.messages.len(),
        2,
        "question + fixed message; the orphaned call is gone"
    );
    assert!(!serde_json::to_string(&saved).unwrap().contains(SECRET));
}

#[test]
fn cloud_retrievals_that_would_be_only_private_stop_the_turn() {
    let fx = fixture(NOTES);
    // search_kb filtered to a category only private notes have.
    assert_cloud_stop(&fx, "search_kb", r#"{"query":"code word","category":"health"}"#);
    assert_cloud_stop(&fx, "get_document", r#"{"source":"private/diary.md"}"#);
    assert_cloud_stop(&fx, "read_file", r#"{"path":"private/diary.md"}"#);
    // A symlink in a public folder pointing into private/ is private: the
    // resolved path decides.
    std::os::unix::fs::symlink(fx.vault.join("private/diary.md"), fx.vault.join("cooking/link.md")).unwrap();
    assert_cloud_stop(&fx, "read_file", r#"{"path":"cooking/link.md"}"#);
}

#[test]
fn cloud_search_with_mixed_results_returns_public_hits_and_the_caveat() {
    let fx = fixture(NOTES);
    let wire = Wire::OpenRouter;
    let server = FakeServer::start(vec![
        call(wire, "search_kb", r#"{"query":"budget for the lawyer code word"}"#),
        wire.text(&["Your budget notes say the review is on Friday."]),
    ]);
    let agent = fx.agent(&server);
    let s = session(&agent, "openrouter:acme/model-1");
    let reply = agent
        .run_turn(&s, "budget?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(!reply.privacy_stop);
    assert_eq!(server.requests().len(), 2);
    assert_no_private_text(&server);
    let second = &bodies(&server)[1];
    assert!(second.contains("BEGIN RETRIEVED DATA") && second.contains("END RETRIEVED DATA"));
    assert!(second.contains(PRIVATE_CAVEAT), "{second}");
    assert!(second.contains("budget"), "public hits are returned");
    assert!(reply.sources.iter().all(|s| !s.location.starts_with("private/")));
}

#[test]
fn chat_history_of_private_sessions_never_reaches_a_cloud_model() {
    let fx = fixture(NOTES);
    let local = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("x", "read_file", vec![r#"{"path":"private/diary.md"}"#])]),
        Wire::Ollama.text(&["The code word is zanzibar-cobalt-4471."]),
    ]);
    let cloud = FakeServer::start(vec![
        call(
            Wire::OpenRouter,
            "search_chat_history",
            r#"{"query":"code word zanzibar lawyer"}"#,
        ),
        Wire::OpenRouter.text(&["nothing"]),
    ]);
    let agent = fx.agent_with(split_settings(&local, &cloud), ChatSettings::default());
    // A local session reads a private note: it turns private, and its
    // exchange is indexed private.
    let private = session(&agent, "ollama:qwen3-vl:30b");
    let r = agent
        .run_turn(
            &private,
            "What is the code word?",
            &Events::default().sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
    assert!(r.private, "the first private sighting flags the session");
    let pid = private.lock().unwrap().id.clone();
    agent.wait_for_history();
    let chunks = fx.kb.ids_where("source", &format!("session:{pid}")).unwrap();
    assert!(!chunks.is_empty(), "the exchange is indexed");
    for id in chunks {
        let rec = fx.kb.store().get(id).unwrap().unwrap();
        assert_eq!(rec.meta_str("visibility"), Some("private"));
        assert_eq!(rec.meta_str("doc_type"), Some("chat"));
    }
    // The private session cannot switch to, or resume under, a cloud model.
    let err = agent.switch_model(&private, "openrouter:acme/model-1").unwrap_err();
    assert!(
        matches!(err, jarvis::chat::ChatError::Switch(SwitchError::PrivateToCloud { .. })),
        "{err}"
    );
    // A cloud session's history search sees only private sessions: stop.
    let c = session(&agent, "openrouter:acme/model-1");
    let r = agent
        .run_turn(
            &c,
            "What was the code word we discussed?",
            &Events::default().sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
    assert!(r.privacy_stop, "{}", r.text);
    assert_eq!(cloud.requests().len(), 1);
    assert_no_private_text(&cloud);
}

#[test]
fn a_session_turning_private_reindexes_its_public_exchanges_private() {
    let fx = fixture(NOTES);
    let local = FakeServer::start(vec![
        Wire::Ollama.text(&["Hello! Ask me about your notes."]),
        Wire::Ollama.tool_calls(&[("x", "get_document", vec![r#"{"source":"private/health.md"}"#])]),
        Wire::Ollama.text(&["Your health note mentions an appointment."]),
    ]);
    let agent = fx.agent(&local);
    let s = session(&agent, "ollama");
    agent
        .run_turn(&s, "hi", &Events::default().sink(), &Cancel::new())
        .unwrap();
    let id = s.lock().unwrap().id.clone();
    agent.wait_for_history();
    let vis = |fx: &Fx| -> Vec<String> {
        fx.kb
            .ids_where("source", &format!("session:{id}"))
            .unwrap()
            .into_iter()
            .map(|c| {
                fx.kb
                    .store()
                    .get(c)
                    .unwrap()
                    .unwrap()
                    .meta_str("visibility")
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(vis(&fx), vec!["public"]);
    let r = agent
        .run_turn(&s, "health?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(r.private);
    // Already when `reply` comes: no public chunk of the session is left,
    // though the history pass may not have run yet.
    let now = vis(&fx);
    assert!(
        !now.is_empty() && now.iter().all(|v| v == "private"),
        "private at once, before the history pass: {now:?}"
    );
    agent.wait_for_history();
    let v = vis(&fx);
    assert_eq!(v.len(), 2, "both exchanges indexed once each: {v:?}");
    assert!(
        v.iter().all(|v| v == "private"),
        "the pre-flip exchange is private now: {v:?}"
    );
    // The history says so, as the agent's doing, and that it is for good.
    let rows = fx.kb.timeline(&jarvis::kb::undo::LogQuery::default()).unwrap();
    let turned = rows
        .iter()
        .find(|r| r.event.kind == jarvis::kb::EventKind::SessionPrivate)
        .expect("a session_private event");
    assert_eq!(turned.event.key, format!("chat:{id}"));
    assert!(turned.event.private);
    assert_eq!(
        turned.event.actor,
        jarvis::kb::Actor::Agent {
            session: id.clone(),
            token: None
        }
    );
    assert!(!turned.undoable);
    assert!(
        turned.why_not.as_deref().unwrap().contains("stays private"),
        "{:?}",
        turned.why_not
    );
}

#[test]
fn compaction_of_a_private_session_runs_on_its_own_local_provider() {
    let fx = fixture(NOTES);
    let local = FakeServer::start(vec![
        Wire::Ollama.text(&["Summary: we talked about the diary."]),
        Wire::Ollama.text(&["Done."]),
    ]);
    let cloud = FakeServer::start(vec![Wire::OpenRouter.text(&["never"])]);
    let chat = ChatSettings {
        compact_after_tokens: 200,
        compact_keep_exchanges: 1,
        ..ChatSettings::default()
    };
    let agent = fx.agent_with(split_settings(&local, &cloud), chat);
    let s = session(&agent, "ollama");
    {
        let mut g = s.lock().unwrap();
        for i in 0..4 {
            g.begin_turn(&format!("question {i} about {SECRET} {}", "pad ".repeat(60)));
            g.messages
                .push(jarvis::llm::Message::assistant(format!("answer {i} {SECRET}")));
            g.display.push(jarvis::chat::session::DisplayEntry {
                role: jarvis::llm::Role::Assistant,
                text: format!("answer {i}"),
                tools: vec![],
                sources: vec![],
                error: false,
                at: String::new(),
                citations: vec![],
                unsupported_citations: 0,
                not_from_library: false,
                thinking: String::new(),
                plan: String::new(),
                steered: false,
                notices: vec![],
                uncited_paragraphs: 0,
                memory: Vec::new(),
                remembered: Vec::new(),
            });
        }
        g.mark_private();
    }
    let ev = Events::default();
    agent
        .run_turn(&s, "and now?", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(ev.all().contains(&ChatEvent::Status {
        state: jarvis::chat::TurnState::Compacting
    }));
    assert!(cloud.requests().is_empty(), "nothing went to the cloud");
    assert_eq!(local.requests().len(), 2, "the summary and the turn, both local");
    let g = s.lock().unwrap();
    assert!(g.messages[0].text().contains("Summary"), "{:?}", g.messages[0]);
    assert_eq!(g.display.len(), 10, "display untouched by compaction");
    drop(g);
    let _ = Arc::strong_count(&fx.kb);
}

#[test]
fn compaction_under_a_cloud_model_sends_no_private_text() {
    let fx = fixture(NOTES);
    let cloud = FakeServer::start(vec![
        Wire::OpenRouter.text(&["Summary of earlier turns."]),
        Wire::OpenRouter.text(&["Fine."]),
    ]);
    let chat = ChatSettings {
        compact_after_tokens: 200,
        compact_keep_exchanges: 1,
        ..ChatSettings::default()
    };
    let agent = fx.agent_with(crate::support::fakes::wires::settings_for(&cloud.url), chat);
    let s = session(&agent, "openrouter:acme/model-1");
    // A public session's history, built by real cloud turns that met the
    // private notes only as privacy stops.
    {
        let mut g = s.lock().unwrap();
        for i in 0..4 {
            g.begin_turn(&format!("public question {i} {}", "pad ".repeat(40)));
            g.messages.push(jarvis::llm::Message::assistant(PRIVACY_STOP));
            g.display.push(jarvis::chat::session::DisplayEntry {
                role: jarvis::llm::Role::Assistant,
                text: PRIVACY_STOP.into(),
                tools: vec![],
                sources: vec![],
                error: false,
                at: String::new(),
                citations: vec![],
                unsupported_citations: 0,
                not_from_library: false,
                thinking: String::new(),
                plan: String::new(),
                steered: false,
                notices: vec![],
                uncited_paragraphs: 0,
                memory: Vec::new(),
                remembered: Vec::new(),
            });
        }
    }
    agent
        .run_turn(&s, "summary?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert_eq!(cloud.requests().len(), 2);
    assert_no_private_text(&cloud);
}
