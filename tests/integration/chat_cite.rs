//! Answers you can check: a stand-in model that cites `[1]` and a made-up
//! `[7]` — `[7]` is removed and counted, `[1]` resolves to the right note,
//! heading and chunk in the reply, in `jarvis ask --json`, in the SSE
//! stream and after a reload — and abstention both ways (an empty search
//! is labelled "not from your library" when own knowledge is allowed, and
//! answered with what was searched and nothing found when it is not).

use jarvis::cancel::Cancel;
use jarvis::chat::cite::Citation;
use jarvis::llm::{Block, Role};
use serde_json::Value;

use crate::support::chat::*;
use crate::support::cite::{cited_turn, web_with_vault, CHECKED, QUESTION};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::run;

/// The script: one search, then the answer citing [1] and [7].
fn script(wire: Wire) -> FakeServer {
    FakeServer::start(cited_turn(wire))
}

/// What the model was shown as passage 1 names the pasta note (so `[1]`
/// is that note's chunk, not whatever ranked first by luck).
fn passage_one_is_pasta(server: &FakeServer) {
    let shown = &bodies(server)[1];
    let at = shown.find("--- [1] ---").expect("passages are numbered for the model");
    let next = shown[at..].find("--- [2] ---").map_or(shown.len(), |i| at + i);
    assert!(shown[at..next].contains("cooking/pasta.md"), "{}", &shown[at..next]);
}

/// `c` is the pasta note's one chunk, as stored.
fn is_pasta_chunk(fx_kb: &jarvis::kb::Kb, key: &str, section: &str, chunk_id: Option<u64>) {
    assert_eq!(key, "cooking/pasta.md");
    assert_eq!(section, "Pasta", "the heading the passage sits under");
    let ids = fx_kb.ids_where("file_path", "cooking/pasta.md").unwrap();
    assert!(
        chunk_id.is_some_and(|id| ids.contains(&id)),
        "{chunk_id:?} not in {ids:?}"
    );
}

fn check_citation(c: &Citation, kb: &jarvis::kb::Kb) {
    assert_eq!(c.n, 1);
    assert_eq!(c.kind, "note");
    assert_eq!(c.source, "local");
    assert_eq!(c.path.as_deref(), Some("cooking/pasta.md"));
    assert!(c.text.contains("Boil the pasta in salted water"), "{}", c.text);
    is_pasta_chunk(kb, &c.key, &c.section, c.chunk_id);
}

#[test]
fn a_made_up_marker_is_removed_and_counted_and_a_real_one_resolves_on_every_wire() {
    let fx = fixture(NOTES);
    for wire in [Wire::Ollama, Wire::Anthropic, Wire::OpenRouter] {
        let server = script(wire);
        let agent = fx.agent(&server);
        let spec = match wire {
            Wire::OpenRouter => "openrouter:acme/model-1",
            other => other.spec(),
        };
        let s = session(&agent, spec);
        let ev = Events::default();
        let reply = agent
            .run_turn(&s, QUESTION, &ev.sink(), &Cancel::new())
            .unwrap()
            .unwrap();
        passage_one_is_pasta(&server);
        assert_eq!(reply.text, CHECKED, "{wire:?}");
        assert_eq!(reply.unsupported_citations, 1, "{wire:?}");
        assert_eq!(reply.citations.len(), 1, "{wire:?}");
        check_citation(&reply.citations[0], &fx.kb);
        assert!(!reply.not_from_library);
        assert!(
            reply.evidence.passages.len() >= reply.citations.len(),
            "every passage the search returned is kept for an evaluation"
        );
        // The system prompt asked for the markers.
        assert!(
            bodies(&server)[0].contains("[n]"),
            "{wire:?}: the citation rule is in the prompt"
        );
        // Saved with the session: a reload shows the same links.
        let id = s.lock().unwrap().id.clone();
        let saved = agent.store().load(&id).unwrap();
        let last = saved.display.last().unwrap();
        assert_eq!(last.text, CHECKED);
        assert_eq!(last.citations, reply.citations);
        assert_eq!(last.unsupported_citations, 1);
        agent.wait_for_history();
    }
}

#[test]
fn ask_json_carries_the_citations_and_the_removed_count() {
    let fx = fixture(NOTES);
    let server = script(Wire::Ollama);
    fx.sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n\n[vault]\npath = \"{}\"\n",
        server.url,
        fx.vault.display()
    ));
    let Fx { sb, kb, .. } = fx;
    let ids = kb.ids_where("file_path", "cooking/pasta.md").unwrap();
    drop(kb); // one owner at a time: the binary opens the knowledge base
    let mut c = sb.jarvis();
    c.args(["ask", QUESTION, "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    assert_eq!(v["text"], CHECKED);
    assert_eq!(v["unsupported_citations"], 1);
    assert_eq!(v["not_from_library"], false);
    let cites = v["citations"].as_array().unwrap();
    assert_eq!(cites.len(), 1, "{v}");
    let c = &cites[0];
    assert_eq!(c["n"], 1);
    assert_eq!(c["key"], "cooking/pasta.md");
    assert_eq!(c["path"], "cooking/pasta.md");
    assert_eq!(c["source"], "local");
    assert_eq!(c["section"], "Pasta");
    assert!(ids.contains(&c["chunk_id"].as_u64().unwrap()), "{c}");
    assert!(c["text"].as_str().unwrap().contains("Boil the pasta"), "{c}");
    assert!(
        v.get("evidence").is_none(),
        "what only an evaluation needs stays in process"
    );
    // The terminal form names the citation and the removal.
    let server = script(Wire::Ollama);
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n",
        server.url
    ));
    let mut c = sb.jarvis();
    c.args(["ask", QUESTION]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("[1] → cooking/pasta.md § Pasta"), "{}", r.stderr);
    assert!(r.stderr.contains("1 citation named no passage"), "{}", r.stderr);
}

#[test]
fn the_sse_reply_and_the_reloaded_history_carry_the_same_links() {
    let llm = script(Wire::Ollama);
    let (s, _vault) = web_with_vault(&llm.url);
    let kb = s.app.kb().unwrap();
    let id = s.new_session();
    let mut st = s.chat(&id, QUESTION);
    assert_eq!(st.status, 200, "{:?}", st.error);
    let events: Vec<Value> = st.rest().into_iter().map(|a| a.data).collect();
    let reply = events.last().unwrap();
    assert_eq!(reply["type"], "reply", "{events:?}");
    assert_eq!(reply["text"], CHECKED);
    assert_eq!(reply["unsupported_citations"], 1);
    let check = |c: &Value, sources: &Value| {
        assert_eq!(c["n"], 1);
        assert_eq!(c["key"], "cooking/pasta.md");
        assert_eq!(c["section"], "Pasta");
        let chunk = c["chunk_id"].as_u64();
        is_pasta_chunk(&kb, "cooking/pasta.md", "Pasta", chunk);
        assert!(c["href"]
            .as_str()
            .unwrap()
            .starts_with("obsidian://open?vault=vault&file=cooking%2Fpasta"));
        // The chip it points at is the pasta note's.
        let chip = &sources[c["chip"].as_u64().unwrap() as usize];
        assert_eq!(chip["label"], "Pasta", "{sources}");
    };
    check(&reply["citations"][0], &reply["sources"]);
    let html = reply["html"].as_str().unwrap();
    assert!(html.contains(r##"<a class="cite" href="#cite-1">1</a>"##), "{html}");
    assert!(!html.contains("[7]") && !html.contains("cite-7"), "{html}");
    // A reload (what a page refresh fetches) shows the same links.
    let h = s.get(&format!("/history?session_id={id}")).json();
    let entry = &h["entries"][1];
    assert_eq!(entry["text"], CHECKED);
    assert_eq!(entry["unsupported_citations"], 1);
    assert_eq!(entry["citations"], reply["citations"], "{h}");
    assert_eq!(entry["html"], reply["html"]);
    check(&entry["citations"][0], &entry["sources"]);
}

#[test]
fn a_session_file_from_before_citations_still_loads() {
    let fx = fixture(&[]);
    let server = FakeServer::start(vec![Wire::Ollama.text(&["Hello."])]);
    let agent = fx.agent(&server);
    let s = session(&agent, "ollama");
    agent
        .run_turn(&s, "hi", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    let id = s.lock().unwrap().id.clone();
    let path = agent.store().path(&id).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("citations"),
        "nothing is written for an answer with none"
    );
    let saved = agent.store().load(&id).unwrap();
    assert!(saved.display[1].citations.is_empty());
    assert!(!saved.display[1].not_from_library, "no search, no label");
}

/// An empty library, one search, and a model that answers anyway.
fn abstain(kb_only: bool) -> (jarvis::chat::Reply, jarvis::chat::Session) {
    let fx = fixture(&[]);
    let wire = Wire::Ollama;
    let server = FakeServer::start(vec![
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"ferry timetable to Skye"}"#])]),
        wire.text(&["The ferry leaves Mallaig at nine [1]."]),
    ]);
    let agent = fx.agent(&server);
    let s = std::sync::Arc::new(std::sync::Mutex::new(
        agent.new_session(Some("ollama"), Some(kb_only)).unwrap(),
    ));
    let reply = agent
        .run_turn(
            &s,
            "When does the ferry to Skye leave?",
            &Events::default().sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
    let prompt = bodies(&server)[0].clone();
    if kb_only {
        assert!(prompt.contains("say what you searched for and that the library has nothing on it"));
    } else {
        assert!(prompt.contains("use_own_knowledge"));
    }
    let id = s.lock().unwrap().id.clone();
    (reply, agent.store().load(&id).unwrap())
}

#[test]
fn an_empty_search_is_labelled_not_from_your_library_when_own_knowledge_is_allowed() {
    let (reply, saved) = abstain(false);
    assert!(reply.not_from_library);
    assert_eq!(
        reply.text, "The ferry leaves Mallaig at nine.",
        "the made-up [1] is gone"
    );
    assert_eq!(reply.unsupported_citations, 1);
    assert!(reply.citations.is_empty());
    assert!(saved.display[1].not_from_library, "the label survives a reload");
}

#[test]
fn an_empty_search_says_what_was_searched_and_nothing_found_when_it_is_not() {
    let (reply, saved) = abstain(true);
    assert!(reply.not_from_library);
    assert!(reply.evidence.replaced);
    assert!(
        reply.text.contains("Your library has nothing on this"),
        "{}",
        reply.text
    );
    assert!(reply.text.contains("“ferry timetable to Skye”"), "{}", reply.text);
    assert!(
        !reply.text.contains("Mallaig"),
        "no answer from the model's own knowledge"
    );
    assert_eq!(saved.display[1].text, reply.text);
    // The transcript says the same, so the next turn does not build on the
    // answer the human never saw; the search itself stays.
    let last = saved.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.text(), reply.text);
    assert!(saved
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .any(|b| matches!(b, Block::ToolCall { name, .. } if name == "search_kb")));
}

/// An answer that cites a passage but also says something in a paragraph
/// citing nothing: labelled "partly not from your library" (the count of
/// such paragraphs), saved with the session and sent with the reply.
#[test]
fn a_cited_answer_with_an_uncited_paragraph_is_partly_not_from_the_library() {
    let fx = fixture(NOTES);
    let wire = Wire::Ollama;
    let server = FakeServer::start(vec![
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"boil pasta minutes"}"#])]),
        wire.text(&[
            "Boil it for nine minutes in salted water [1].\n\nMost Italians also say the water should taste like the sea, and that oil in the water is a myth.\n\nHope that helps!",
        ]),
    ]);
    let agent = fx.agent(&server);
    let s = session(&agent, "ollama");
    let reply = agent
        .run_turn(&s, QUESTION, &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert_eq!(reply.citations.len(), 1);
    assert!(!reply.not_from_library);
    assert_eq!(
        reply.uncited_paragraphs, 1,
        "the claim about Italians; not the sign-off"
    );
    let saved = agent.store().load(&reply.session_id).unwrap();
    assert_eq!(saved.display.last().unwrap().uncited_paragraphs, 1);
}
