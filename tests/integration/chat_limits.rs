//! A misbehaving model cannot hang a turn, and tool failures are written
//! down: stand-in models that stream chat-template debris forever, repeat
//! themselves, or say nothing at all, through the agent in process and
//! through the web app's SSE route; and `logs/chat.log` after a failed
//! tool call, with the configured API keys nowhere in it.

use std::time::{Duration, Instant};

use jarvis::cancel::Cancel;
use jarvis::chat::ChatSettings;

use crate::support::chat::*;
use crate::support::fakes::llm::{End, FakeServer, Reply};
use crate::support::fakes::wires::{settings_for, Wire, OPENROUTER_KEY};
use crate::support::web::WebServer;

/// A stream that starts like an answer, then sends `debris` every 10 ms
/// for up to two minutes — far past any budget these tests set.
fn forever(wire: Wire, first: &str, debris: &str) -> Reply {
    let tick = wire.text_events(&[debris]).pop().expect("one event");
    wire.reply(wire.text_events(&[first])).with_end(End::Hang {
        trickle: Some(tick),
        every: Duration::from_millis(10),
    })
}

const CHATML: &str = "<|im_start|>user\nWhat else can you do?<|im_end|>\n<|im_start|>assistant\nI can";

fn limited(budget_secs: u64) -> ChatSettings {
    ChatSettings {
        turn_timeout: Duration::from_secs(budget_secs),
        ..ChatSettings::default()
    }
}

#[test]
fn a_model_streaming_template_markers_forever_is_ended_with_a_message_naming_it() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![forever(Wire::Ollama, "Sure! ", CHATML)]);
    let agent = fx.agent_with(settings_for(&server.url), limited(90));
    let s = session(&agent, "ollama:gemma3:270m");
    let ev = Events::default();
    let t = Instant::now();
    let reply = agent
        .run_turn(&s, "How long for pasta?", &ev.sink(), &Cancel::new())
        .unwrap()
        .expect("a reply, not a stop");
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(45),
        "ended by the watch, not the budget: {took:?}"
    );
    assert!(reply.error, "{}", reply.text);
    for want in [
        "ollama:gemma3:270m",
        "chat-template markers (im_start)",
        "larger model",
        "another server",
    ] {
        assert!(reply.text.contains(want), "{want:?} missing: {}", reply.text);
    }
    server
        .closed
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream was closed, so the server stops generating");
    // Nothing of the debris is kept: the question and the message only.
    let saved = agent.store().load(&reply.session_id).unwrap();
    assert_eq!(saved.messages.len(), 2);
    let text = serde_json::to_string(&saved).unwrap();
    assert!(
        !text.contains("<|im_start|>") && !text.contains("What else can you do"),
        "{text}"
    );
    // The marker itself was never shown as text.
    let shown: String = ev
        .all()
        .into_iter()
        .filter_map(|e| match e {
            jarvis::chat::ChatEvent::Text { text } => Some(text),
            _ => None,
        })
        .collect();
    assert!(!shown.contains("<|im_start|>"), "{shown}");
    let log = std::fs::read_to_string(fx.sb.jarvis_home().join("logs/chat.log")).unwrap();
    assert!(log.contains("outcome=runaway_template"), "{log}");
}

#[test]
fn a_model_repeating_itself_is_ended_and_a_silent_one_by_the_turn_budget() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![forever(
        Wire::OpenRouter,
        "Let me think. ",
        "I will search the notes now. ",
    )]);
    let agent = fx.agent_with(settings_for(&server.url), limited(90));
    let s = session(&agent, "openrouter:acme/model-1");
    let reply = agent
        .run_turn(&s, "pasta?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(reply.error);
    assert!(
        reply.text.contains("kept repeating") && reply.text.contains("openrouter:acme/model-1"),
        "{}",
        reply.text
    );
    // A model that says nothing at all (a server stuck loading): the
    // budget ends the turn, not the 10 s read timeout.
    let silent = FakeServer::start(vec![Reply::Silent]);
    let agent = fx.agent_with(settings_for(&silent.url), limited(3));
    let s = session(&agent, "ollama");
    let t = Instant::now();
    let reply = agent
        .run_turn(&s, "and now?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(9), "{:?}", t.elapsed());
    assert!(reply.error);
    assert!(
        reply.text.contains("time budget of 3 s") && reply.text.contains("chat.turn_timeout_secs"),
        "{}",
        reply.text
    );
    // The question and the message are saved; the session goes on.
    assert_eq!(agent.store().load(&reply.session_id).unwrap().messages.len(), 2);
}

#[test]
fn the_web_route_ends_a_runaway_turn_with_the_named_message() {
    let llm = FakeServer::start(vec![forever(Wire::Ollama, "Hello", CHATML)]);
    let s = WebServer::with_llm(&llm.url, "turn_timeout_secs = 90\n");
    let id = s.new_session();
    let t = Instant::now();
    let mut st = s.chat(&id, "Say hello");
    assert_eq!(st.status, 200, "{:?}", st.error);
    let events: Vec<_> = st.rest().into_iter().map(|a| a.data).collect();
    assert!(t.elapsed() < Duration::from_secs(45), "{:?}", t.elapsed());
    let reply = events.last().expect("events");
    assert_eq!(reply["type"], "reply", "{events:?}");
    assert_eq!(reply["error"], true);
    let text = reply["text"].as_str().unwrap();
    assert!(
        text.contains("chat-template markers") && text.contains("ollama"),
        "{text}"
    );
    assert_eq!(s.get("/sessions").json()["busy"], serde_json::json!([]));
}

#[test]
fn chat_log_has_the_full_error_of_a_failed_tool_and_no_api_key() {
    let fx = fixture(NOTES);
    // The model quotes the configured key in its arguments, and passes a
    // secret under a key-bearing name.
    let args = format!(r#"{{"source":"missing/{OPENROUTER_KEY}.md","api_token":"hunter2-hunter2-hunter2"}}"#);
    let server = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "get_document", vec![&args])]),
        Wire::OpenRouter.text(&["There is no such note."]),
    ]);
    let agent = fx.agent(&server);
    let s = session(&agent, "openrouter:acme/model-1");
    let reply = agent
        .run_turn(&s, "open my missing note", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(!reply.error);
    assert!(reply.tools.iter().any(|t| t.is_error), "the tool failed");
    let log = std::fs::read_to_string(fx.sb.jarvis_home().join("logs/chat.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "one tool error, one turn: {log}");
    let tool = lines[0];
    assert!(
        tool.contains("tool_error") && tool.contains("tool=get_document"),
        "{tool}"
    );
    assert!(tool.contains(&format!("session={}", reply.session_id)), "{tool}");
    assert!(
        tool.contains("no document has source or path") && tool.contains("list_documents showed"),
        "the whole error: {tool}"
    );
    let turn = lines[1];
    assert!(
        turn.contains(" turn ") && turn.contains("model=openrouter:acme/model-1"),
        "{turn}"
    );
    assert!(turn.contains("rounds=2") && turn.contains("outcome=reply"), "{turn}");
    assert!(turn.contains("tokens_in=6") && turn.contains("tokens_out=4"), "{turn}");
    for secret in [
        OPENROUTER_KEY,
        "hunter2-hunter2-hunter2",
        crate::support::fakes::wires::ANTHROPIC_KEY,
    ] {
        assert!(!log.contains(secret), "{secret} in chat.log: {log}");
    }
    assert!(log.contains("[REDACTED]"), "{log}");
}
