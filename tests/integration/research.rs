//! Research reports end to end: sub-agents on a stand-in model running in
//! parallel, the report in a new draft as a suggested change with its
//! citations checked, a stop mid-way leaving no draft and no sub-agent
//! running, and — under a cloud model served over the real wire — no
//! private passage in any request body.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jarvis::chat::research::{AgentState, ReportDelivery, ResearchEvent, ResearchSettings};
use jarvis::chat::tools::{ToolDeps, VaultSettings};
use jarvis::chat::{
    CachedProviders, ChatAgent, ChatDeps, ChatEvent, ChatSettings, ProviderSource, SessionStore, TurnContext,
};
use jarvis::drafts::{DraftSettings, DraftsHandle};
use jarvis::paths::JarvisHome;
use serde_json::Value;

use crate::support::chat::*;
use crate::support::fakes::llm::Reply as Canned;
use crate::support::fakes::stand::{Answer, Stand};
use crate::support::fakes::wires::{settings_for, Wire};
use crate::support::research::{Source, SPEC};

fn agent(fx: &Fx, providers: Arc<dyn ProviderSource>, drafts: &DraftsHandle) -> Arc<ChatAgent> {
    let settings = ChatSettings {
        research: ResearchSettings {
            concurrency: 2,
            ..ResearchSettings::default()
        },
        ..ChatSettings::default()
    };
    Arc::new(ChatAgent::new(ChatDeps {
        tools: ToolDeps {
            drafts: Some(drafts.clone()),
            kb: fx.kb.clone(),
            vault: VaultSettings {
                root: Some(fx.vault.clone()),
                private_dirs: vec!["private".into()],
            },
            papers: None,
            mcp: None,
        },
        providers,
        home: JarvisHome::at(fx.sb.jarvis_home()),
        sessions: SessionStore::new(fx.sb.jarvis_home().join("sessions")),
        settings,
    }))
}

fn drafts(fx: &Fx) -> DraftsHandle {
    DraftsHandle::open(DraftSettings::with_root(fx.sb.dir.path().join("drafts-root"))).expect("drafts")
}

fn research() -> TurnContext {
    TurnContext {
        research: Some(ReportDelivery::Suggest),
        ..TurnContext::default()
    }
}

fn research_events(ev: &Events) -> Vec<ResearchEvent> {
    ev.all()
        .into_iter()
        .filter_map(|e| match e {
            ChatEvent::Research(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn two_subagents_in_parallel_write_a_report_draft_with_citations() {
    let fx = fixture(NOTES);
    let d = drafts(&fx);
    let src = Arc::new(Source::new(&[
        "How long does pasta boil?",
        "When is the budget review?",
    ]));
    let counters = src.model.counters.clone();
    let agent = agent(&fx, src, &d);
    let s = session(&agent, SPEC);
    let ev = Events::default();
    let turn = agent.begin_turn(&s).expect("turn");
    let reply = turn
        .run("Pasta and the budget: what do my notes say?", &research(), &ev.sink())
        .expect("research")
        .expect("not stopped");

    // The plan, both sub-agents done, in parallel.
    let rev = research_events(&ev);
    assert!(
        matches!(&rev[0], ResearchEvent::Plan { questions } if questions.len() == 2),
        "{rev:?}"
    );
    for i in 0..2 {
        assert!(
            rev.iter().any(
                |e| matches!(e, ResearchEvent::Agent { index, state: AgentState::Done { cited: 1, .. } } if *index == i)
            ),
            "sub-agent {i} answered citing a passage: {rev:?}"
        );
        assert!(rev
            .iter()
            .any(|e| matches!(e, ResearchEvent::Tool { index, name, .. } if *index == i && name == "search_kb")));
    }
    assert_eq!(
        counters.max_in_flight.load(Ordering::SeqCst),
        2,
        "the two sub-agents ran at once"
    );
    assert!(rev.contains(&ResearchEvent::Writing));

    // The reply: the report with checked citations, the made-up [9] gone.
    assert!(!reply.error, "{}", reply.text);
    assert_eq!(reply.unsupported_citations, 1);
    let cited: Vec<&str> = reply.citations.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(reply.citations.len(), 2, "{cited:?}");
    assert!(
        cited.contains(&"cooking/pasta.md") && cited.contains(&"work/budget.md"),
        "{cited:?}"
    );
    assert!(
        !reply.text.contains("[9]") && reply.text.contains("[2]"),
        "{}",
        reply.text
    );
    assert!(
        reply
            .text
            .starts_with("The report is in the new draft “Research: Pasta and the budget"),
        "{}",
        reply.text
    );

    // The draft: new, its file empty, the report waiting in parts.
    let Some(ResearchEvent::Report {
        draft_id,
        filename,
        suggested: true,
        ..
    }) = rev.iter().find(|e| matches!(e, ResearchEvent::Report { .. })).cloned()
    else {
        panic!("no report event: {rev:?}");
    };
    assert_eq!(filename, "report.md");
    assert_eq!(d.workspace.read_file(&draft_id, "report.md").unwrap().text, "");
    let pending = d.proposals.pending(Some(&draft_id));
    assert_eq!(pending.len(), 1);
    let p = &pending[0];
    assert!(p.hunks.len() >= 4, "one part per section: {}", p.hunks.len());
    assert!(ev
        .all()
        .iter()
        .any(|e| matches!(e, ChatEvent::EditProposal { token, .. } if *token == p.token)));
    // Taking every part writes the report with its sources listed.
    let all: Vec<usize> = (0..p.hunks.len()).collect();
    d.proposals.apply_hunks(&d.workspace, &p.token, &all).expect("apply");
    let text = d.workspace.read_file(&draft_id, "report.md").unwrap().text;
    assert!(text.starts_with("# Pasta and the budget"), "{text}");
    assert!(
        text.contains("## Sources") && text.contains("work/budget.md") && text.contains("cooking/pasta.md"),
        "{text}"
    );
    assert!(
        text.contains("1. How long does pasta boil?\n2. When is the budget review?"),
        "{text}"
    );

    // The session keeps the question and the report with its citations.
    let saved = agent.store().load(&reply.session_id).expect("saved");
    let last = saved.display.last().expect("reply");
    assert_eq!(last.citations.len(), 2);
    assert_eq!(saved.display.len(), 2);
    assert!(agent.busy().is_empty());
}

/// The built-in `/research QUESTION`, typed in an ordinary message (no
/// Research switch), runs the same research turn: a plan, a report in a new
/// draft waiting as a suggested change, and the question saved without
/// the command word.
#[test]
fn slash_research_in_a_plain_message_runs_a_research_report() {
    let fx = fixture(NOTES);
    let d = drafts(&fx);
    let src = Arc::new(Source::new(&[
        "How long does pasta boil?",
        "When is the budget review?",
    ]));
    let agent = agent(&fx, src, &d);
    let s = session(&agent, SPEC);
    let ev = Events::default();
    let turn = agent.begin_turn(&s).expect("turn");
    let reply = turn
        .run(
            "/research Pasta and the budget: what do my notes say?",
            &TurnContext::default(),
            &ev.sink(),
        )
        .expect("research")
        .expect("not stopped");
    let rev = research_events(&ev);
    assert!(matches!(&rev[0], ResearchEvent::Plan { .. }), "{rev:?}");
    assert!(
        reply.text.starts_with("The report is in the new draft"),
        "{}",
        reply.text
    );
    assert_eq!(d.proposals.pending(None).len(), 1, "the report waits for review");
    let saved = agent.store().load(&reply.session_id).expect("saved");
    assert_eq!(saved.display[0].text, "Pasta and the budget: what do my notes say?");
    // The history records the chat a research run started and, as the
    // local run read the private note, that it turned private — newest
    // first, as a chat turn's.
    let kinds: Vec<String> = fx
        .kb
        .timeline(&jarvis::kb::undo::LogQuery::default())
        .unwrap()
        .into_iter()
        .map(|r| r.event)
        .filter(|e| e.key == format!("chat:{}", reply.session_id))
        .map(|e| e.kind.as_str().to_string())
        .collect();
    assert_eq!(kinds, ["session_private", "session_created"]);
}

#[test]
fn a_stop_mid_way_leaves_no_draft_and_no_running_subagent() {
    let fx = fixture(NOTES);
    let d = drafts(&fx);
    let src = Arc::new(Source::new(&["pasta?", "budget?", "travel?"]));
    src.model.hold.store(true, Ordering::SeqCst);
    let counters = src.model.counters.clone();
    let agent = agent(&fx, src, &d);
    let s = session(&agent, SPEC);
    let id = s.lock().unwrap().id.clone();
    let ev = Events::default();
    let turn = agent.begin_turn(&s).expect("turn");
    let sink = ev.sink();
    let worker = std::thread::spawn(move || turn.run("pasta, budget, travel?", &research(), &sink));
    let t = Instant::now();
    while counters.in_flight.load(Ordering::SeqCst) < 2 {
        assert!(t.elapsed() < Duration::from_secs(60), "the sub-agents never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = agent.stop(&id).expect("stop");
    assert!(out.rolled_back);
    let result = worker.join().expect("worker");
    assert!(matches!(result, Ok(None)), "{result:?}");
    assert_eq!(
        counters.in_flight.load(Ordering::SeqCst),
        0,
        "no sub-agent request left running"
    );
    assert_eq!(
        counters.subagent_requests.load(Ordering::SeqCst),
        2,
        "the third sub-agent never started"
    );
    assert!(matches!(ev.all().last(), Some(ChatEvent::Stopped)));
    assert!(!ev
        .all()
        .iter()
        .any(|e| matches!(e, ChatEvent::Research(ResearchEvent::Report { .. }))));
    assert!(d.workspace.list_drafts().unwrap().is_empty(), "no draft");
    assert!(d.proposals.pending(None).is_empty(), "no suggestion");
    assert!(agent.busy().is_empty());
    assert!(
        agent.store().load(&id).is_err(),
        "the new session held only the question: gone"
    );
}

/// What the cloud stand-in answers, by what the request is.
fn cloud_answer(body: &str) -> Answer {
    let wire = Wire::OpenRouter;
    let chunks = |r: Canned| match r {
        Canned::Stream { chunks, .. } => chunks.concat(),
        _ => unreachable!(),
    };
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let last_user = v["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    let has_result = v["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    let text = |t: &str| {
        let mut c = wire.text_events(&[t]);
        c.extend(wire.finish("stop"));
        c.concat()
    };
    let sse = if last_user.contains("You plan a research report") {
        text("1. What is the budget for the lawyer?\n2. What did my diary say?")
    } else if last_user.contains("You write a research report") || has_result {
        // The report, and a sub-agent's answer once it has passages.
        text("The budget review is on Friday [1].")
    } else if last_user.contains("sub-question: What did my diary") {
        chunks(wire.tool_calls(&[("c1", "get_document", vec![r#"{"source":"private/diary.md"}"#])]))
    } else {
        chunks(wire.tool_calls(&[(
            "c1",
            "search_kb",
            vec![r#"{"query":"budget for the lawyer code word"}"#],
        )]))
    };
    Answer::ok("text/event-stream", sse.into_bytes())
}

#[test]
fn under_a_cloud_model_no_private_passage_reaches_any_request() {
    let fx = fixture(NOTES);
    let d = drafts(&fx);
    let server = Stand::start(|seen, _| cloud_answer(&seen.body));
    let agent = agent(&fx, Arc::new(CachedProviders::new(settings_for(&server.url))), &d);
    let s = session(&agent, "openrouter:acme/model-1");
    let ev = Events::default();
    let turn = agent.begin_turn(&s).expect("turn");
    let reply = turn
        .run("The lawyer's budget and my diary?", &research(), &ev.sink())
        .expect("research")
        .expect("not stopped");
    let seen = server.seen();
    assert!(seen.len() >= 5, "plan, two sub-agents, the report: {}", seen.len());
    for (i, r) in seen.iter().enumerate() {
        for w in SECRET_WORDS.iter().chain([&SECRET]) {
            assert!(!r.body.contains(w), "request {i} carries private text {w:?}");
        }
    }
    let rev = research_events(&ev);
    assert!(
        rev.iter().any(|e| matches!(
            e,
            ResearchEvent::Agent {
                state: AgentState::Private,
                ..
            }
        )),
        "the diary's sub-agent hit the privacy stop: {rev:?}"
    );
    assert!(!reply.private && !reply.error, "{}", reply.text);
    assert_eq!(reply.citations.len(), 1);
    assert!(!reply.citations[0].key.starts_with("private/"), "{:?}", reply.citations);
    let drafts = d.workspace.list_drafts().unwrap();
    assert_eq!(drafts.len(), 1);
    assert_eq!(drafts[0].meta.visibility, jarvis::drafts::Visibility::Public);
}

/// `jarvis research` from a terminal with no `serve` running: the plan and
/// the sub-agent on stderr, the report on stdout, and — nobody being there
/// to review a suggestion — the report as the new draft's file.
#[test]
fn jarvis_research_writes_the_report_as_a_new_drafts_file() {
    use crate::support::fakes::llm::FakeServer;
    let wire = Wire::Ollama;
    let llm = FakeServer::start(vec![
        wire.text(&["1. How long does pasta boil?"]),
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"How long does pasta boil?"}"#])]),
        wire.text(&["Nine minutes in salted water [1]."]),
        wire.text(&["Pasta boils for nine minutes [1]."]),
    ]);
    let sb = crate::support::Sandbox::new();
    let vault = sb.dir.path().join("vault");
    crate::support::fs::write(
        &vault,
        "notes/pasta.md",
        "# Pasta\n\nBoil pasta for nine minutes in salted water.\n",
    );
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n[vault]\npath = \"{}\"\n[research]\nconcurrency = 1\n",
        llm.url,
        vault.display()
    ));
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"]).stdin(std::process::Stdio::null());
    let r = crate::support::run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut c = sb.jarvis();
    c.args(["research", "How long does pasta boil?"])
        .stdin(std::process::Stdio::null());
    let r = crate::support::run(c);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Pasta boils for nine minutes [1]."), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("plan: 1 sub-question\n  1. How long does pasta boil?"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("[1] done: cites 1 of"), "{}", r.stderr);
    let id = r
        .stderr
        .split("report: draft ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no draft named: {}", r.stderr))
        .to_string();
    let text = std::fs::read_to_string(sb.jarvis_home().join("drafts").join(&id).join("report.md")).unwrap();
    assert!(
        text.starts_with("# How long does pasta boil?\n\nPasta boils for nine minutes [1]."),
        "{text}"
    );
    assert!(
        text.contains("## Sources\n\n- [1] ") && text.contains("notes/pasta.md"),
        "{text}"
    );
}
