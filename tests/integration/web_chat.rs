//! The chat routes over HTTP against fake Ollama servers speaking the real
//! wire: SSE framing and incremental arrival, stop mid-stream (early end,
//! `stopped` event, rollback, upstream closed), busy 409s, sessions,
//! history with rendered Markdown, model switching, confirmations.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fakes::llm::{End, FakeServer};
use crate::support::fakes::wires::Wire;
use crate::support::web::WebServer;

/// An Ollama stream that sends `first`, then one more token every `every`
/// for up to two minutes (a slow model that would take far longer than any stop).
fn slow_stream(first: &str, every: Duration) -> crate::support::fakes::llm::Reply {
    let tick = Wire::Ollama.text_events(&[" tick"]).remove(0);
    Wire::Ollama
        .reply(Wire::Ollama.text_events(&[first]))
        .with_end(End::Hang {
            trickle: Some(tick),
            every,
        })
}

#[test]
fn a_turn_streams_incrementally_and_its_reply_is_rendered_and_saved() {
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["Hello ", "**world**", " <script>x</script>"])]);
    let s = WebServer::with_llm(&llm.url, "");
    let id = s.new_session();
    let mut st = s.chat(&id, "Say hello");
    assert_eq!(st.status, 200, "{:?}", st.error);
    let events: Vec<_> = st.rest().into_iter().map(|a| a.data).collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"status"), "{types:?}");
    assert_eq!(types.last(), Some(&"reply"), "{types:?}");
    assert!(types.contains(&"text"), "{types:?}");
    let reply = events.last().unwrap();
    assert_eq!(reply["text"], "Hello **world** <script>x</script>");
    let html = reply["html"].as_str().unwrap();
    assert!(html.contains("<strong>world</strong>"), "{html}");
    assert!(!html.contains("<script>"), "model text never becomes markup: {html}");
    // Saved: listed, with history for a page refresh.
    let list = s.get("/sessions").json();
    assert!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == id.as_str()),
        "{list}"
    );
    assert_eq!(list["busy"], json!([]));
    let h = s.get(&format!("/history?session_id={id}")).json();
    let entries = h["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{h}");
    assert_eq!(entries[0]["role"], "user");
    assert!(entries[1]["html"].as_str().unwrap().contains("<strong>world</strong>"));
    let info = s.get(&format!("/info?session_id={id}")).json();
    assert!(info["provider"].as_str().unwrap().starts_with("ollama"), "{info}");
    assert_eq!(info["provider_kind"], "local");
    // Resume and the active session survive.
    let r = s.post(&format!("/sessions/{id}/resume"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["busy"], false);
    assert_eq!(s.get("/sessions/active").json()["session"]["id"], id.as_str());
}

#[test]
fn events_arrive_as_they_happen_and_stop_ends_the_stream_at_once_with_a_rollback() {
    // A tool round, then a model that streams for up to two minutes.
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c1", "kb_stats", vec!["{}"])]),
        slow_stream("Once", Duration::from_millis(150)),
    ]);
    let s = WebServer::with_llm(&llm.url, "");
    let id = s.new_session();
    let started = Instant::now();
    let mut st = s.chat(&id, "Tell me a long story");
    assert_eq!(st.status, 200, "{:?}", st.error);
    // Not buffered to the end: status and the tool box's events arrive
    // while the model is still streaming (the turn cannot end on its own for minutes).
    // Read up to the first streamed text: only then is the second model
    // request certainly open at the fake, so the stop below must close a
    // live connection (stopping earlier races the request being sent, and
    // the fake would never see a connection to close).
    // The question is saved before the first event, so a page that lists
    // sessions when it sees that event finds this new one (under load the
    // sidebar used to miss it for the whole first turn).
    let first = st.next().expect("a first event");
    assert_eq!(first.data["type"], "status", "{:?}", first.data);
    let listed = s.get("/sessions").json();
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["id"] == id.as_str()),
        "listed at the first event: {listed}"
    );
    let mut seen = vec!["status".to_string()];
    while !seen.contains(&"text".to_string()) {
        let a = st.next().expect("stream ended early");
        seen.push(a.data["type"].as_str().unwrap().to_string());
    }
    assert_eq!(seen[..3], ["status", "tool_start", "tool_finish"], "{seen:?}");
    assert!(llm.closed.try_recv().is_err(), "the model is still streaming");
    // Busy while it runs: a second message and a delete are refused.
    assert_eq!(s.get("/sessions").json()["busy"], json!([id]));
    let again = s.chat(&id, "another");
    assert_eq!(again.status, 409, "{:?}", again.error);
    assert_eq!(s.delete(&format!("/sessions/{id}")).status, 409);
    assert_eq!(
        s.post("/model", &json!({"session_id": id, "spec": "ollama:other"}))
            .status,
        409
    );
    // Stop: the stream ends with `stopped`, long before the fake would end it.
    let t0 = Instant::now();
    let r = s.post("/chat/stop", &json!({ "session_id": id }));
    let stop_latency = t0.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["stopped"], true);
    assert_eq!(r.json()["rolled_back"], true);
    let rest = st.rest();
    let last = rest.last().expect("a stopped event");
    assert_eq!(last.data["type"], "stopped", "{rest:?}");
    assert!(
        rest.iter().all(|a| a.data["type"] != "reply"),
        "a stopped turn has no reply"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "the stream ended early");
    eprintln!("stop latency over HTTP: {stop_latency:?}");
    // Upstream closed: the fake saw the connection go.
    llm.closed
        .recv_timeout(Duration::from_secs(5))
        .expect("the model connection was closed");
    // Rolled back: nothing of the turn remains; the session is free.
    let h = s.get(&format!("/history?session_id={id}")).json();
    assert_eq!(h["entries"], json!([]), "{h}");
    assert_eq!(s.get("/sessions").json()["busy"], json!([]));
    // Stopping again: nothing runs.
    assert_eq!(s.post("/chat/stop", &json!({ "session_id": id })).status, 404);
}

#[test]
fn two_sessions_stream_at_once_and_switching_never_interrupts_either() {
    let llm = FakeServer::start(vec![slow_stream("A", Duration::from_millis(100))]);
    let s = WebServer::with_llm(&llm.url, "");
    let a = s.new_session();
    let b = s.new_session();
    let mut sa = s.chat(&a, "first");
    let mut sb = s.chat(&b, "second");
    assert_eq!((sa.status, sb.status), (200, 200));
    for st in [&mut sa, &mut sb] {
        assert_eq!(st.next().expect("streaming").data["type"], "status");
    }
    let mut busy = s.get("/sessions").json()["busy"].as_array().unwrap().clone();
    busy.sort_by_key(|v| v.as_str().unwrap().to_string());
    let mut want = vec![json!(a), json!(b)];
    want.sort_by_key(|v| v.as_str().unwrap().to_string());
    assert_eq!(busy, want);
    // Switching the viewed session mid-turn: the turn keeps running.
    let r = s.post(&format!("/sessions/{a}/resume"), &json!({})).json();
    assert_eq!(r["busy"], true, "{r}");
    assert_eq!(
        s.get("/sessions").json()["busy"].as_array().unwrap().len(),
        2,
        "both still run"
    );
    // Stop one; the other runs on.
    assert_eq!(s.post("/chat/stop", &json!({ "session_id": a })).status, 200);
    assert_eq!(sa.rest().last().unwrap().data["type"], "stopped");
    assert_eq!(s.get("/sessions").json()["busy"], json!([b]));
    assert_eq!(s.post("/chat/stop", &json!({ "session_id": b })).status, 200);
    assert_eq!(sb.rest().last().unwrap().data["type"], "stopped");
}

#[test]
fn session_routes_rename_pin_delete_and_their_errors() {
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["Fine."])]);
    let s = WebServer::with_llm(&llm.url, "");
    let id = s.new_session();
    s.chat(&id, "How are you?").rest();
    let r = s.post(&format!("/sessions/{id}/rename"), &json!({ "title": "  Greetings  " }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["title"], "Greetings");
    assert_eq!(
        s.post(&format!("/sessions/{id}/rename"), &json!({ "title": "  " }))
            .status,
        404
    );
    assert_eq!(s.post("/sessions/nope-1/rename", &json!({ "title": "x" })).status, 404);
    assert_eq!(
        s.post(&format!("/sessions/{id}/pin"), &json!({ "pinned": true }))
            .status,
        200
    );
    let list = s.get("/sessions").json();
    let row = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(row["pinned"], true);
    assert_eq!(row["title"], "Greetings");
    assert_eq!(s.delete(&format!("/sessions/{id}")).status, 200);
    assert_eq!(s.delete(&format!("/sessions/{id}")).status, 404);
    assert_eq!(s.post(&format!("/sessions/{id}/resume"), &json!({})).status, 404);
    let r = s.chat("nope-2", "hello");
    assert_eq!(r.status, 404, "{:?}", r.error);
    let r = s.chat(&s.new_session(), "   ");
    assert_eq!(r.status, 400, "{:?}", r.error);
    // Malformed and traversal ids: refused before any path is built.
    for bad in [
        "..",
        "..%2F..%2Fetc%2Fpasswd",
        "A",
        "a%00b",
        "a.json",
        &"a".repeat(65),
        "%2e%2e",
    ] {
        let r = s.post(&format!("/sessions/{bad}/resume"), &json!({}));
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(
            r.json()["error"].as_str().unwrap().contains("malformed id"),
            "{}",
            r.text()
        );
        assert_eq!(s.delete(&format!("/sessions/{bad}")).status, 400, "{bad}");
    }
    let r = s.chat("../../etc", "x");
    assert_eq!(r.status, 400, "{:?}", r.error);
    assert_eq!(s.get("/history?session_id=..%2Fx").status, 400);
    // Confirming a token nobody issued.
    let r = s.post("/confirm-action", &json!({ "token": "made-up", "confirmed": true }));
    assert_eq!(r.status, 409, "{}", r.text());
}

#[test]
fn model_switching_validates_like_the_picker_says() {
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["ok"])]);
    let s = WebServer::with_llm(
        &llm.url,
        "anthropic_api_key = \"sk-ant-test-0123456789abcdef\"\n[models]\nollama = [\"small:1b\"]\n",
    );
    let id = s.new_session();
    // The picker also offers what the (fake, loopback) Ollama has installed.
    llm.set_installed(&["tiny:270m"]);
    let m = s.get(&format!("/models?session_id={id}")).json();
    let specs: Vec<&str> = m["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["spec"].as_str().unwrap())
        .collect();
    assert!(specs.contains(&"ollama:small:1b"), "{m}");
    assert!(specs.contains(&"ollama:tiny:270m"), "{m}");
    let tiny = m["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["spec"] == "ollama:tiny:270m")
        .unwrap();
    assert_eq!(tiny["installed"], true, "{m}");
    assert_eq!(tiny["local"], true, "{m}");
    assert!(m.get("ollama_note").is_none(), "{m}");
    assert_eq!(m["private"], false);
    let r = s.post("/model", &json!({ "session_id": id, "spec": "ollama:small:1b" }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        s.get(&format!("/info?session_id={id}")).json()["provider"],
        "ollama:small:1b"
    );
    let r = s.post("/model", &json!({ "session_id": id, "spec": "nosuch:model" }));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.post("/model", &json!({ "session_id": id, "spec": "openrouter:acme/m" }));
    assert_eq!(r.status, 400, "missing credentials: {}", r.text());
    let r = s.post("/model", &json!({ "session_id": id, "spec": "anthropic" }));
    assert_eq!(r.status, 200, "{}", r.text());
    // A private session cannot move to a cloud model (409), local is fine.
    let chat = s.app.chat().unwrap();
    let mut private = chat.new_session(Some("ollama"), None).unwrap();
    private.begin_turn("a private question");
    private.mark_private();
    let pid = private.id.clone();
    chat.store().save(&private).unwrap();
    let r = s.post("/model", &json!({ "session_id": pid, "spec": "anthropic:claude-x" }));
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("private"), "{}", r.text());
    let m = s.get(&format!("/models?session_id={pid}")).json();
    assert_eq!(m["private"], true, "{m}");
    assert_eq!(
        s.post("/model", &json!({ "session_id": pid, "spec": "ollama:small:1b" }))
            .status,
        200
    );
    assert_eq!(
        s.post("/model", &json!({ "session_id": "nope-3", "spec": "ollama" }))
            .status,
        404
    );
}

#[test]
fn prompts_settings_and_the_db_only_toggle() {
    let llm = FakeServer::start(vec![Wire::Ollama.text(&["ok"])]);
    let s = WebServer::with_llm(&llm.url, "");
    let list = s.get("/prompts").json();
    let names: Vec<&str> = list["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"system.md"), "{list}");
    let one = s.get("/prompts/system").json();
    assert_eq!(one["differs"], false);
    let r = s.post("/prompts/system.md", &json!({ "text": "Be brief." }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["differs"], true);
    assert_eq!(s.get("/prompts/system.md").json()["text"], "Be brief.");
    assert!(s.get("/prompts").json()["prompts"][0]["differs"].as_bool().unwrap());
    assert_eq!(s.post("/prompts/system.md", &json!({ "text": "  " })).status, 400);
    let r = s.post("/prompts/system.md/reset", &json!({}));
    assert_eq!(r.json()["differs"], false);
    assert_ne!(r.json()["text"], "Be brief.");
    assert_eq!(s.get("/prompts/nope").status, 404);
    assert_eq!(s.get("/prompts/..%2Fconfig.toml").status, 404);
    // Response style persists to config.toml.
    assert_eq!(
        s.post("/settings", &json!({ "response_style": "Use bullet points" }))
            .status,
        200
    );
    assert_eq!(s.get("/settings").json()["response_style"], "Use bullet points");
    let cfg = std::fs::read_to_string(s.sandbox.config_file()).unwrap();
    assert!(cfg.contains("Use bullet points"), "{cfg}");
    assert_eq!(s.post("/settings", &json!({ "response_style": "a\nb" })).status, 400);
    let sum = s.get("/config/summary").json();
    assert!(
        sum["sections"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["section"] == "chat"),
        "{sum}"
    );
    assert!(!sum.to_string().contains("sk-"), "no secret in the summary");
    // DB only: per session and the default for new ones.
    let id = s.new_session();
    assert_eq!(
        s.post("/config", &json!({ "kb_only": false, "session_id": id })).status,
        200
    );
    let r = s.post(&format!("/sessions/{id}/resume"), &json!({})).json();
    assert_eq!(r["session"]["kb_only"], false, "{r}");
    let fresh = s.post("/sessions/new", &json!({})).json();
    assert_eq!(fresh["session"]["kb_only"], false, "{fresh}");
}
