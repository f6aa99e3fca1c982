//! The drafts tools through a real chat turn (fake model servers speaking
//! the real wires): creation is free, an edit is only a proposal (nothing
//! written, the invariant line verbatim, an `edit_proposal` event), every
//! write lands inside the drafts root, and a private draft never reaches a
//! cloud model.

use std::path::Path;
use std::sync::Arc;

use jarvis::cancel::Cancel;
use jarvis::chat::tools::{ToolDeps, VaultSettings};
use jarvis::chat::{CachedProviders, ChatAgent, ChatDeps, ChatEvent, ChatSettings, SessionStore};
use jarvis::drafts::proposals::INVARIANT_LINE;
use jarvis::drafts::{DraftSettings, DraftsHandle, Visibility};
use jarvis::llm::LlmSettings;
use jarvis::paths::JarvisHome;

use crate::support::chat::*;
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::{settings_for, Wire};
use crate::support::fs::tree;

fn agent(fx: &Fx, llm: LlmSettings, drafts: &DraftsHandle) -> ChatAgent {
    ChatAgent::new(ChatDeps {
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
        providers: Arc::new(CachedProviders::new(llm)),
        home: JarvisHome::at(fx.sb.jarvis_home()),
        sessions: SessionStore::new(fx.sb.jarvis_home().join("sessions")),
        settings: ChatSettings::default(),
    })
}

/// The files under `dir`, as strings (the spy compares prefixes).
fn paths(dir: &Path) -> Vec<String> {
    tree(dir).into_iter().map(|(p, _)| p.display().to_string()).collect()
}

#[test]
fn create_is_free_edit_is_a_proposal_and_writes_stay_in_the_sandbox() {
    let fx = fixture(NOTES);
    let root = fx.sb.dir.path().join("drafts-root");
    let drafts = DraftsHandle::open(DraftSettings::with_root(&root)).unwrap();
    let vault_before = tree(&fx.vault);
    let home_before: Vec<String> = paths(fx.sb.dir.path());
    let server = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[(
            "c1",
            "create_draft",
            vec![r##"{"title":"CV for ACME","filename":"cv.md","content":"# CV\n\none\ntwo\nthree\n"}"##],
        )]),
        Wire::Ollama.tool_calls(&[(
            "c2",
            "create_draft",
            vec![r#"{"filename":"../escape.md","content":"x"}"#],
        )]),
        Wire::Ollama.text(&["Created."]),
    ]);
    let a = agent(&fx, settings_for(&server.url), &drafts);
    let s = session(&a, "ollama");
    a.run_turn(&s, "draft my CV", &Events::default().sink(), &Cancel::new())
        .unwrap();
    let list = drafts.workspace.list_drafts().unwrap();
    assert_eq!(list.len(), 1, "exactly the one good draft was created");
    let id = list[0].meta.id.clone();
    assert_eq!(list[0].meta.visibility, Visibility::Public);
    assert!(!fx.sb.dir.path().join("escape.md").exists());
    assert!(!root.join("escape.md").exists());

    // Now a proposal: nothing is written, the invariant line goes back
    // verbatim, and the human gets an edit_proposal event.
    let args = format!(r##"{{"draft_id":"{id}","filename":"cv.md","content":"# CV\n\none\nTWO\nthree\n"}}"##);
    let server = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c3", "propose_draft_edit", vec![args.as_str()])]),
        Wire::Ollama.text(&["Proposed."]),
    ]);
    let a = agent(&fx, settings_for(&server.url), &drafts);
    let s = session(&a, "ollama");
    let events = Events::default();
    let before = tree(&root);
    a.run_turn(&s, "make two loud", &events.sink(), &Cancel::new()).unwrap();
    assert_eq!(tree(&root), before, "a proposal wrote something");
    assert!(
        bodies(&server).iter().any(|b| b.contains(INVARIANT_LINE)),
        "the invariant line reached the model"
    );
    let proposal = events
        .all()
        .into_iter()
        .find_map(|e| match e {
            ChatEvent::EditProposal {
                token, hunks, message, ..
            } => Some((token, hunks, message)),
            _ => None,
        })
        .expect("an edit_proposal event");
    assert_eq!(proposal.2, INVARIANT_LINE);
    assert_eq!(proposal.1.len(), 1);
    // The human accepts: only then does the file change.
    drafts
        .proposals
        .apply_hunks(&drafts.workspace, &proposal.0, &[0])
        .unwrap();
    assert_eq!(
        drafts.workspace.read_file(&id, "cv.md").unwrap().text,
        "# CV\n\none\nTWO\nthree\n"
    );

    // The spy: every file that appeared is inside the drafts root or is
    // the sessions' own bookkeeping; the vault is untouched.
    assert_eq!(tree(&fx.vault), vault_before, "the vault changed");
    let root_s = root.display().to_string();
    let sessions = fx.sb.jarvis_home().join("sessions").display().to_string();
    for p in paths(fx.sb.dir.path()) {
        if !home_before.contains(&p) {
            assert!(
                p.starts_with(&root_s)
                    || p.starts_with(&sessions)
                    || p.contains("/prompts/")
                    || p.contains("/rag")
                    || p.contains("/logs"),
                "a tool dispatch wrote outside the sandbox: {p}"
            );
        }
    }
}

#[test]
fn a_private_draft_hard_stops_a_cloud_model() {
    let fx = fixture(NOTES);
    let drafts = DraftsHandle::open(DraftSettings::with_root(fx.sb.dir.path().join("drafts-root"))).unwrap();
    let meta = drafts
        .workspace
        .create_draft(
            "secret plans",
            "plan.md",
            &format!("The code is {SECRET}.\n"),
            Visibility::Private,
            None,
        )
        .unwrap();
    let args = format!(r#"{{"draft_id":"{}"}}"#, meta.id);
    let cloud = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "list_drafts", vec!["{}"])]),
        Wire::OpenRouter.tool_calls(&[("c2", "read_draft", vec![args.as_str()])]),
        Wire::OpenRouter.text(&["done"]),
    ]);
    let a = agent(&fx, settings_for(&cloud.url), &drafts);
    let s = session(&a, "openrouter:acme/model-1");
    let r = a
        .run_turn(&s, "read my plans", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(r.privacy_stop, "{}", r.text);
    assert_no_private_text(&cloud);
    for b in bodies(&cloud) {
        assert!(!b.contains("secret plans"), "a private draft's title reached the cloud");
    }
}

/// The system prompt of the first request `server` received.
fn system_of(server: &FakeServer) -> String {
    let body = &server.requests()[0].body;
    // Ollama and OpenRouter both send the system prompt as the first message.
    body["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn the_file_open_in_the_editor_is_named_in_the_prompt_except_a_private_one_to_a_cloud_model() {
    use jarvis::chat::{OpenFile, TurnContext};
    let fx = fixture(NOTES);
    let drafts = DraftsHandle::open(DraftSettings::with_root(fx.sb.dir.path().join("drafts-root"))).unwrap();
    let public = drafts
        .workspace
        .create_draft("cv", "cv.md", "# CV\n", Visibility::Public, None)
        .unwrap();
    let private = drafts
        .workspace
        .create_draft(
            "secret plans",
            "plan.md",
            &format!("The code is {SECRET}.\n"),
            Visibility::Private,
            None,
        )
        .unwrap();
    let ctx = |id: &str, name: &str| TurnContext {
        open_file: Some(OpenFile {
            draft_id: id.to_string(),
            filename: name.to_string(),
        }),
        ..TurnContext::default()
    };
    let turn = |spec: &str, wire: Wire, context: &TurnContext| {
        let server = FakeServer::start(vec![wire.text(&["ok"])]);
        let a = agent(&fx, settings_for(&server.url), &drafts);
        let s = session(&a, spec);
        a.run_turn_in(
            &s,
            "tighten this file",
            context,
            &Events::default().sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
        system_of(&server)
    };
    let note = format!("the draft file \"cv.md\" (draft_id \"{}\")", public.id);

    // Local: the open file is named, with how to read and change it.
    let sys = turn("ollama", Wire::Ollama, &ctx(&public.id, "cv.md"));
    assert!(sys.contains(&note), "{sys}");
    assert!(
        sys.contains("read_draft") && sys.contains("propose_draft_edit"),
        "{sys}"
    );
    // Without an open file there is no such line.
    let sys = turn("ollama", Wire::Ollama, &TurnContext::default());
    assert!(!sys.contains("Open in the editor"), "{sys}");
    // Cloud: a public draft is named…
    let sys = turn("openrouter:acme/model-1", Wire::OpenRouter, &ctx(&public.id, "cv.md"));
    assert!(sys.contains(&note), "{sys}");
    // …a private one is not, not even its id or file name.
    let sys = turn(
        "openrouter:acme/model-1",
        Wire::OpenRouter,
        &ctx(&private.id, "plan.md"),
    );
    assert!(
        !sys.contains("Open in the editor") && !sys.contains(&private.id) && !sys.contains("plan.md"),
        "{sys}"
    );
    // A local model may hear about the private one (no cloud in the loop).
    let sys = turn("ollama", Wire::Ollama, &ctx(&private.id, "plan.md"));
    assert!(sys.contains("plan.md"), "{sys}");
    // A file that is gone is not named.
    let sys = turn("ollama", Wire::Ollama, &ctx(&public.id, "gone.md"));
    assert!(!sys.contains("Open in the editor"), "{sys}");
    let sys = turn("ollama", Wire::Ollama, &ctx("no-such-draft", "cv.md"));
    assert!(!sys.contains("Open in the editor"), "{sys}");
}

/// A cloud session that makes a draft from a private note (an injected
/// instruction can name one) gets the draft — private, on disk — but
/// neither the note's title in the tool's reply nor a draft id built from
/// it, and `list_drafts` shows it no more than its content.
#[test]
fn a_draft_from_a_private_note_names_nothing_private_to_a_cloud_model() {
    let mut notes = NOTES.to_vec();
    notes.push((
        "private/lawyer.md",
        "# Divorce lawyer Hargreaves\n\nMeeting notes: zanzibar-cobalt-4471.",
    ));
    let fx = fixture(&notes);
    let drafts = DraftsHandle::open(DraftSettings::with_root(fx.sb.dir.path().join("drafts-root"))).unwrap();
    let cloud = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "create_draft_from", vec![r#"{"source":"private/lawyer.md"}"#])]),
        Wire::OpenRouter.tool_calls(&[("c2", "list_drafts", vec!["{}"])]),
        Wire::OpenRouter.text(&["done"]),
    ]);
    let a = agent(&fx, settings_for(&cloud.url), &drafts);
    let s = session(&a, "openrouter:acme/model-1");
    let r = a
        .run_turn(
            &s,
            "make a draft from my notes",
            &Events::default().sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
    assert!(!r.privacy_stop, "{}", r.text);
    let list = drafts.workspace.list_drafts().unwrap();
    assert_eq!(list.len(), 1, "the draft was made");
    let d = &list[0].meta;
    assert_eq!(d.visibility, Visibility::Private);
    assert_eq!(d.title, "Divorce lawyer Hargreaves", "the human sees its title");
    assert!(
        !d.id.to_lowercase().contains("hargreaves") && !d.id.contains("lawyer"),
        "{}",
        d.id
    );
    assert_no_private_text(&cloud);
    let b = bodies(&cloud);
    assert!(b[1].contains("Created private draft"), "{}", b[1]);
    // The listing holds the count line and nothing else — not even the id.
    assert!(
        b[2].contains(r#""content":"BEGIN RETRIEVED DATA\n(1 private draft not listed: this session uses a cloud model)\nEND RETRIEVED DATA""#),
        "{}",
        b[2]
    );
}
