//! Long-term memory end to end on the chat agent, against stand-in models
//! speaking the real wires: a fact the model asks to `remember` waits for
//! review and is not in any request until accepted; accepted, the next
//! request carries it in "What I remember about you"; rejected or
//! forgotten, it is in none; and a fact learned in a private session never
//! reaches a cloud-marked provider, in the summary or through
//! `memory_search`.

use jarvis::cancel::Cancel;
use jarvis::chat::ChatSettings;
use jarvis::kb::Actor;
use jarvis::memory::{search, FactDraft, Memory, MemorySettings, SUMMARY_HEADING};
use jarvis::store::{FactStatus, Provenance};

use crate::support::chat::*;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;

fn ask(agent: &jarvis::chat::ChatAgent, s: &jarvis::chat::SharedSession, q: &str) -> jarvis::chat::Reply {
    agent
        .run_turn(s, q, &Events::default().sink(), &Cancel::new())
        .expect("turn")
        .expect("not stopped")
}

/// The system prompt of request `i` (what follows it is the conversation).
fn system_of(server: &FakeServer, i: usize) -> String {
    let body = &server.requests()[i].body;
    body["messages"][0]["content"]
        .as_str()
        .or_else(|| body["system"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_remembered_fact_reaches_the_model_only_once_accepted_and_not_after_forget() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[(
            "c1",
            "remember",
            vec![r#"{"category":"project","key":"thesis","text":"Writes a PhD thesis on coral reef acoustics."}"#],
        )]),
        Wire::Ollama.text(&["Noted, I proposed to remember that."]),
        Wire::Ollama.text(&["Hello again."]),
        Wire::Ollama.text(&["Your thesis, of course."]),
        Wire::Ollama.text(&["What thesis?"]),
    ]);
    let agent = fx.agent(&server);
    let s = session(&agent, "ollama");
    let sid = s.lock().unwrap().id.clone();
    let r = ask(&agent, &s, "I am writing my PhD thesis on coral reef acoustics.");
    assert_eq!(r.remembered.len(), 1, "the proposal is recorded on the reply");
    assert!(r.memory.is_empty());
    let memory = Memory::new(&fx.kb, &MemorySettings::default());
    let f = memory.get(r.remembered[0]).unwrap();
    assert_eq!(f.status, FactStatus::Pending, "the model cannot accept a fact");
    assert_eq!(f.source.session.as_deref(), Some(sid.as_str()));
    assert_eq!(f.source.message, Some(0), "the question it came from");
    assert!(!f.source.private);
    let saved = agent.store().load(&sid).unwrap();
    assert_eq!(
        saved.display[1].remembered,
        vec![f.id],
        "the saved answer knows what it proposed"
    );

    // Pending: not in the next request.
    let r = ask(&agent, &s, "Hello?");
    assert!(r.memory.is_empty());
    assert!(
        !system_of(&server, 2).contains(SUMMARY_HEADING),
        "{}",
        system_of(&server, 2)
    );

    // Accepted (as the Memory view does, with the user's edit), and a
    // second proposal rejected: the next request carries the one, never the other.
    let edited = FactDraft::new(
        "project",
        "thesis",
        "Writes a PhD thesis on coral reef acoustics, due 2027.",
    );
    memory.accept(f.id, Some(&edited), &Actor::Web).unwrap();
    let bees = memory
        .propose(
            &FactDraft::new("hobby", "bees", "Keeps bees on the roof."),
            Provenance {
                origin: "remember".into(),
                session: Some(sid.clone()),
                at: "2026-01-01T00:00:00Z".into(),
                ..Provenance::default()
            },
            &Actor::Jarvis,
        )
        .unwrap();
    memory.reject(bees.id).unwrap();
    let r = ask(&agent, &s, "What am I working on?");
    assert_eq!(r.memory, vec![f.id], "the reply records the facts in its context");
    let system = system_of(&server, 3);
    let at = system.find(SUMMARY_HEADING).expect("the summary is in the request");
    assert!(
        system[at..].contains("[project] thesis: Writes a PhD thesis on coral reef acoustics, due 2027."),
        "{system}"
    );
    assert_eq!(agent.store().load(&sid).unwrap().display[5].memory, vec![f.id]);

    // Forgotten: gone from search and from the next request.
    memory.forget(f.id, &Actor::Web).unwrap();
    assert!(search(&memory, "thesis", false, 10).unwrap().is_empty());
    let r = ask(&agent, &s, "And now?");
    assert!(r.memory.is_empty());
    assert!(!system_of(&server, 4).contains(SUMMARY_HEADING));
    for (i, req) in server.requests().iter().enumerate() {
        let body = req.body.to_string();
        assert!(!body.contains("Keeps bees"), "request {i} carries the rejected fact");
        if i != 3 {
            assert!(
                !body.contains("due 2027"),
                "request {i} carries the fact outside its accepted span"
            );
        }
    }
}

#[test]
fn a_stopped_or_failed_turn_proposes_nothing() {
    let fx = fixture(NOTES);
    let server = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "remember", vec![r#"{"text":"Prefers answers in German."}"#])]),
        Wire::Ollama.model_not_found(),
    ]);
    let agent = fx.agent(&server);
    let s = session(&agent, "ollama");
    let r = ask(&agent, &s, "Answer in German from now on.");
    assert!(r.error, "the second request failed: {}", r.text);
    assert!(r.remembered.is_empty());
    assert!(Memory::new(&fx.kb, &MemorySettings::default())
        .list()
        .unwrap()
        .is_empty());
}

#[test]
fn a_fact_from_a_private_session_never_reaches_a_cloud_model() {
    let fx = fixture(NOTES);
    let local = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[
            ("x", "read_file", vec![r#"{"path":"private/health.md"}"#]),
            (
                "y",
                "remember",
                vec![r#"{"category":"health","key":"doctor","text":"Sees Dr. Okafor about migraines every March."}"#],
            ),
        ]),
        Wire::Ollama.text(&["Noted."]),
        Wire::Ollama.text(&["You see Dr. Okafor in March."]),
    ]);
    let cloud = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "memory_search", vec![r#"{"query":"which doctor for migraines"}"#])]),
        Wire::OpenRouter.text(&["I have nothing on that."]),
    ]);
    let chat = ChatSettings {
        memory: MemorySettings {
            auto_accept: true,
            ..MemorySettings::default()
        },
        ..ChatSettings::default()
    };
    let agent = fx.agent_with(split_settings(&local, &cloud), chat);
    let private = session(&agent, "ollama:qwen3-vl:30b");
    let r = ask(&agent, &private, "Check my health note and remember who my doctor is.");
    assert!(r.private, "the session read a private note");
    let memory = Memory::new(&fx.kb, &MemorySettings::default());
    let okafor = memory.get(r.remembered[0]).unwrap();
    assert!(okafor.accepted(), "memory.auto_accept took it at once");
    assert!(okafor.private(), "learned in a private session: private");
    // A public fact, so the cloud summary exists and is seen to be cut.
    memory
        .accept(
            memory
                .propose(
                    &FactDraft::new("preference", "style", "Likes answers with a summary first."),
                    Provenance {
                        origin: "user".into(),
                        at: "2026-01-01T00:00:00Z".into(),
                        private: false,
                        ..Provenance::default()
                    },
                    &Actor::Cli,
                )
                .unwrap()
                .id,
            None,
            &Actor::Cli,
        )
        .unwrap();
    // The local model of the private session sees both.
    let r = ask(&agent, &private, "Who is my doctor?");
    assert_eq!(r.memory.len(), 2);
    assert!(system_of(&local, 2).contains("Okafor"));

    let public = session(&agent, "openrouter:acme/model-1");
    let r = ask(&agent, &public, "Which doctor do I see about migraines?");
    assert_eq!(r.memory.len(), 1, "only the public fact: {:?}", r.memory);
    assert_eq!(cloud.requests().len(), 2);
    let bodies = bodies(&cloud);
    assert!(bodies[0].contains(SUMMARY_HEADING) && bodies[0].contains("summary first"));
    assert!(
        bodies[1].contains("No accepted memory fact matches"),
        "memory_search under a cloud model finds nothing private: {}",
        bodies[1]
    );
    for (i, b) in bodies.iter().enumerate() {
        assert!(
            !b.contains("Okafor") && !b.contains("migraines every"),
            "cloud request {i}: {b}"
        );
    }
    assert_no_private_text(&cloud);
    assert!(search(&memory, "Okafor", true, 10).unwrap().is_empty());
    assert_eq!(search(&memory, "Okafor", false, 10).unwrap().len(), 1);
}
