//! Pinned context and "send now" against the real wires: the pinned lines
//! are in every request a turn makes; a pinned private note never reaches
//! a cloud model (the answer says it was left out) but reaches a local one
//! (and the session turns private); a queued message marked "send now"
//! reaches the running turn right after its tool round, and stands in the
//! transcript as sent while working.

use std::sync::Arc;
use std::time::Duration;

use jarvis::cancel::Cancel;
use jarvis::chat::pins::PinOp;
use jarvis::chat::queue::{QueueOp, STEER_HEAD};
use jarvis::chat::ChatEvent;

use crate::support::chat::*;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;

fn pin(agent: &jarvis::chat::ChatAgent, text: &str) {
    agent.pins_apply(PinOp::Add { text: text.into() }).expect("pin");
}

#[test]
fn pinned_lines_are_in_every_request_and_a_private_note_stays_off_the_cloud() {
    let fx = fixture(NOTES);
    let wire = Wire::OpenRouter;
    let cloud = FakeServer::start(vec![
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"pasta"}"#])]),
        wire.text(&["Boil it nine minutes."]),
    ]);
    let agent = fx.agent(&cloud);
    pin(&agent, "I write in British English");
    pin(&agent, "@cooking/pasta.md");
    pin(&agent, "@private/diary.md");
    pin(&agent, "Paused line that must not be sent");
    let paused = agent.pinned().items[3].id.clone();
    agent
        .pins_apply(PinOp::Pause {
            id: paused,
            paused: true,
        })
        .expect("pause");

    let s = session(&agent, "openrouter:acme/model-1");
    let reply = agent
        .run_turn(&s, "How long for pasta?", &Events::default().sink(), &Cancel::new())
        .expect("turn")
        .expect("not stopped");
    let sent = bodies(&cloud);
    assert_eq!(sent.len(), 2, "a tool round and the answer");
    for (i, b) in sent.iter().enumerate() {
        assert!(
            b.contains("I write in British English"),
            "request {i} lacks the pin: {b}"
        );
        assert!(b.contains("salted water"), "request {i} lacks the pinned public note");
        assert!(!b.contains("Paused line"), "request {i} carries a paused pin");
        assert!(
            b.contains("pinned private item was left out"),
            "the model is told something was withheld"
        );
        assert!(!b.contains("private/diary.md"), "request {i} names the private note");
    }
    assert_no_private_text(&cloud);
    assert!(
        reply
            .notices
            .iter()
            .any(|n| n.contains("private/diary.md") && n.contains("left out")),
        "the answer says the private note was left out: {:?}",
        reply.notices
    );
    let saved = agent.store().load(&reply.session_id).expect("saved");
    assert!(!saved.private, "nothing private reached this session");
    assert_eq!(
        saved.display.last().unwrap().notices,
        reply.notices,
        "the notice survives a reload"
    );

    // Under a local model the private note is read, and the session is private for good.
    let local = FakeServer::start(vec![Wire::Ollama.text(&["Noted."])]);
    let agent = fx.agent(&local);
    let s = session(&agent, "ollama:qwen3:8b");
    let reply = agent
        .run_turn(
            &s,
            "What did the lawyer say?",
            &Events::default().sink(),
            &Cancel::new(),
        )
        .expect("turn")
        .expect("not stopped");
    assert!(
        bodies(&local)[0].contains(SECRET),
        "a local model gets the pinned private note"
    );
    assert!(reply.notices.is_empty(), "{:?}", reply.notices);
    assert!(reply.private && agent.store().load(&reply.session_id).unwrap().private);
}

#[test]
fn send_now_reaches_the_running_turn_after_its_tool_round() {
    let fx = fixture(NOTES);
    let wire = Wire::Ollama;
    // The first step is slow: time to queue a message and ask to send it now.
    let llm = FakeServer::start(vec![
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"budget"}"#])])
            .after(Duration::from_millis(1500)),
        wire.text(&["The review is on Friday, in euros."]),
        wire.text(&["Next one."]),
    ]);
    let agent = Arc::new(fx.agent(&llm));
    let s = session(&agent, "ollama:qwen3:8b");
    let id = s.lock().unwrap().id.clone();
    let ev = Events::default();
    let worker = {
        let (agent, s, sink) = (agent.clone(), s.clone(), ev.sink());
        std::thread::spawn(move || agent.run_turn(&s, "When is the budget review?", &sink, &Cancel::new()))
    };
    let q = agent
        .queue_apply(
            &id,
            QueueOp::Add {
                text: "Give amounts in euros".into(),
            },
        )
        .expect("queue");
    agent
        .queue_apply(
            &id,
            QueueOp::Add {
                text: "A later question".into(),
            },
        )
        .expect("queue");
    agent
        .queue_apply(
            &id,
            QueueOp::Steer {
                id: q.items[0].id.clone(),
            },
        )
        .expect("send now");
    let reply = worker.join().unwrap().expect("turn").expect("not stopped");

    let bodies = bodies(&llm);
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(!bodies[0].contains("euros"), "the first step ran before the hand-over");
    let second = &bodies[1];
    let head = second
        .find(STEER_HEAD.trim_matches(&['[', ']'][..]))
        .expect("the hand-over line");
    let result = second.find("BEGIN RETRIEVED DATA").expect("the tool result");
    assert!(result < head, "the message follows the round's tool result: {second}");
    assert!(second[head..].contains("Give amounts in euros"));
    assert!(!second.contains("A later question"), "only the one sent now goes in");
    assert!(ev
        .all()
        .iter()
        .any(|e| matches!(e, ChatEvent::Steered { text } if text == "Give amounts in euros")));

    let saved = agent.store().load(&reply.session_id).expect("saved");
    let shown: Vec<(bool, &str)> = saved.display.iter().map(|d| (d.steered, d.text.as_str())).collect();
    assert_eq!(
        shown,
        [
            (false, "When is the budget review?"),
            (true, "Give amounts in euros"),
            (false, "The review is on Friday, in euros."),
        ]
    );
    assert_eq!(
        saved.exchanges().len(),
        1,
        "a message sent while working is no exchange of its own"
    );
    let left = agent.queue(&id);
    assert_eq!(left.items.len(), 1);
    assert_eq!(left.items[0].text, "A later question");
    assert!(!left.held);
}

#[test]
fn a_stopped_turn_gives_back_what_it_took_and_holds_the_queue() {
    let fx = fixture(NOTES);
    let wire = Wire::Ollama;
    let llm = FakeServer::start(vec![
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"budget"}"#])])
            .after(Duration::from_millis(800)),
        wire.text(&["never seen"]).after(Duration::from_secs(30)),
    ]);
    let agent = Arc::new(fx.agent(&llm));
    let s = session(&agent, "ollama:qwen3:8b");
    let id = s.lock().unwrap().id.clone();
    let ev = Events::default();
    let worker = {
        let (agent, s, sink) = (agent.clone(), s.clone(), ev.sink());
        std::thread::spawn(move || agent.run_turn(&s, "When is the budget review?", &sink, &Cancel::new()))
    };
    let q = agent
        .queue_apply(
            &id,
            QueueOp::Add {
                text: "In euros".into(),
            },
        )
        .expect("queue");
    agent
        .queue_apply(
            &id,
            QueueOp::Steer {
                id: q.items[0].id.clone(),
            },
        )
        .expect("send now");
    // Wait for the hand-over, then stop the turn mid-answer.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !ev.all().iter().any(|e| matches!(e, ChatEvent::Steered { .. })) {
        assert!(std::time::Instant::now() < deadline, "no hand-over");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = agent.stop(&id).expect("stop");
    assert!(out.rolled_back);
    assert!(worker.join().unwrap().expect("stopped cleanly").is_none());
    let q = agent.queue(&id);
    assert_eq!(q.items.len(), 1, "the message it took is back");
    assert_eq!(q.items[0].text, "In euros");
    assert!(!q.items[0].steer && q.held, "back in front, and the queue waits");
}

#[test]
fn the_queue_and_pins_change_only_by_a_same_origin_post() {
    use crate::support::web::WebServer;
    use serde_json::json;
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["ok"])]);
    let s = WebServer::with_llm(&llm.url, "");
    let id = s.new_session();
    for (path, body) in [
        (
            "/queue",
            json!({ "session_id": id, "op": "add", "text": "later, please" }),
        ),
        ("/pins", json!({ "op": "add", "text": "I write in British English" })),
    ] {
        let r = s.request(
            "POST",
            path,
            &[("Origin", "http://evil.example"), ("Content-Type", "application/json")],
            Some(body.to_string().as_bytes()),
        );
        assert_eq!(r.status, 403, "{path}: a cross-site change is refused");
        let r = s.post(path, &body);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    // Reading changes nothing, whatever the query says.
    let _ = s.get("/pins?op=add&text=sneaky");
    assert_eq!(s.get("/pins").json()["items"].as_array().unwrap().len(), 1);
    let q = s.get(&format!("/queue?session_id={id}")).json();
    assert_eq!(q["items"][0]["text"], "later, please");
    // A bad id never reaches a path; an unknown item is a 404 naming the fix.
    assert_eq!(s.get("/queue?session_id=../x").status, 400);
    let r = s.post("/queue", &json!({ "session_id": id, "op": "remove", "id": "nope" }));
    assert_eq!(r.status, 404, "{}", r.text());
}

#[test]
fn asking_again_takes_back_only_the_last_exchange() {
    let fx = fixture(NOTES);
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["First."]), Wire::Ollama.text(&["Second."])]);
    let agent = fx.agent(&llm);
    let s = session(&agent, "ollama:qwen3:8b");
    for q in ["one?", "two?"] {
        agent
            .run_turn(&s, q, &Events::default().sink(), &Cancel::new())
            .expect("turn")
            .expect("not stopped");
    }
    let id = s.lock().unwrap().id.clone();
    agent
        .rename(&id, "My own title", &jarvis::kb::Actor::Web)
        .expect("rename");
    assert_eq!(agent.rewind_last(&id).expect("rewind"), "two?");
    let saved = agent.store().load(&id).expect("still saved");
    let texts: Vec<&str> = saved.display.iter().map(|d| d.text.as_str()).collect();
    assert_eq!(texts, ["one?", "First."]);
    assert_eq!(saved.title, "My own title", "the title stays");
    assert_eq!(agent.rewind_last(&id).expect("rewind"), "one?");
    // Emptied: no file, but the conversation is still there to ask again.
    assert!(agent.store().load(&id).is_err());
    assert!(agent.find(&id).is_ok());
    assert!(matches!(
        agent.rewind_last(&id),
        Err(jarvis::chat::ChatError::Session(_) | jarvis::chat::ChatError::NothingToRedo(_))
    ));
}
