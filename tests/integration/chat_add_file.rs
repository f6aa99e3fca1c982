//! The privacy hole of `add_document`, closed: through the application's
//! own chat agent (the real paper pipeline, the isolated PDF worker) and the
//! real binary's `kb add`.
//!
//! - a session on a cloud model that asks to add local PDFs (one anywhere,
//!   one in the vault's `private/`) adds nothing, gets a refusal, and no
//!   request it sends carries the PDFs' text;
//! - a session on a local model only proposes: a confirmation naming the
//!   file appears, "no" adds nothing, "yes" adds it — private when it is in
//!   `private/`, which then never reaches a cloud session;
//! - `kb add` of a PDF in `private/` stores it private, and a PDF added
//!   public before this rule is re-added private.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use jarvis::cancel::Cancel;
use jarvis::chat::tools::ConfirmAction;
use jarvis::chat::ChatEvent;

use crate::support::chat::{session, Events};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::fs::{pdf_fixture, pdf_fixture_bytes};
use crate::support::net::dead_url;
use crate::support::{run, Sandbox};

/// A sentence only the fixture PDF holds.
const PDF_TEXT: &str = "LEFTCOLUMNEND";

struct World {
    sb: Sandbox,
    vault: PathBuf,
    /// A PDF outside the vault (`~/Documents/taxes.pdf`).
    taxes: PathBuf,
    /// A PDF in the vault's private folder.
    medical: PathBuf,
}

fn world() -> World {
    let sb = Sandbox::new();
    // Not `~/vault`, the default `vault.path`: one test adds a PDF with no
    // vault configured first.
    let vault = sb.home().join("Notes");
    std::fs::create_dir_all(vault.join("private")).unwrap();
    std::fs::write(vault.join("notes.md"), "# Notes\n\nNothing private here.\n").unwrap();
    let docs = sb.home().join("Documents");
    std::fs::create_dir_all(&docs).unwrap();
    let taxes = docs.join("taxes.pdf");
    let medical = vault.join("private/medical.pdf");
    std::fs::copy(pdf_fixture("paper.pdf"), &taxes).unwrap();
    // Other bytes (a comment after the end), so the two files are two
    // papers to the duplicate check, not one paper twice.
    let mut other = pdf_fixture_bytes("paper.pdf");
    other.extend_from_slice(b"\n% medical copy\n");
    std::fs::write(&medical, other).unwrap();
    World {
        sb,
        vault,
        taxes,
        medical,
    }
}

impl World {
    /// `ollama` goes to `local`; the server `cloud` (an OpenAI-compatible
    /// service on loopback, not claimed local) is a cloud model.
    fn app(&self, local: &FakeServer, cloud: &FakeServer) -> Arc<jarvis::app::App> {
        self.sb.write_config(&format!(
            "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n\n[vault]\npath = \"{}\"\n\n\
             [servers.cloud]\nbase_url = \"{}/v1\"\nmodel = \"m1\"\nlocal = false\n",
            local.url,
            self.vault.display(),
            cloud.url
        ));
        crate::support::web::open_app(jarvis::paths::JarvisHome::at(self.sb.jarvis_home()))
    }
}

/// Title, authors and DOI given: no metadata inference, so the only model
/// requests are the turns'.
fn add_call(wire: Wire, id: &str, path: &Path) -> crate::support::fakes::llm::Reply {
    let title = path.file_stem().unwrap().to_string_lossy();
    // One DOI per file: two different papers, not one paper by two routes.
    let args = format!(
        r#"{{"source":"{}","mode":"full_text","title":"{title}","authors":"Me","doi":"10.1/{title}"}}"#,
        path.display()
    );
    wire.tool_calls(&[(id, "add_document", vec![&args])])
}

fn confirms(ev: &Events) -> Vec<(String, String, ConfirmAction)> {
    ev.all()
        .into_iter()
        .filter_map(|e| match e {
            ChatEvent::Confirm {
                token,
                description,
                action,
            } => Some((token, description, action)),
            _ => None,
        })
        .collect()
}

fn source_of(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

fn stored(app: &jarvis::app::App, p: &Path) -> Option<jarvis::kb::ops::DocumentRef> {
    app.kb().unwrap().find_document(&source_of(p)).ok()
}

#[test]
fn a_cloud_session_cannot_add_a_local_pdf_and_never_sees_its_text() {
    let w = world();
    let local = FakeServer::start(vec![Wire::Ollama.text(&["unused"])]);
    let cloud = FakeServer::start(vec![
        add_call(Wire::OpenRouter, "c1", &w.taxes),
        add_call(Wire::OpenRouter, "c2", &w.medical),
        // Then it tries to read what it "added".
        Wire::OpenRouter.tool_calls(&[(
            "c3",
            "search_kb",
            vec![r#"{"query":"left column ends here with a marker sentence"}"#],
        )]),
        Wire::OpenRouter.text(&["Done."]),
    ]);
    let app = w.app(&local, &cloud);
    let agent = app.chat().unwrap();
    let s = session(&agent, "cloud:m1");
    let ev = Events::default();
    let reply = agent
        .run_turn(&s, "Please add my tax return.", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(!reply.privacy_stop, "{}", reply.text);
    assert!(confirms(&ev).is_empty(), "a cloud session is refused, not asked");
    assert!(agent.pending_for(&reply.session_id).is_empty());
    assert!(stored(&app, &w.taxes).is_none(), "nothing was added");
    assert!(stored(&app, &w.medical).is_none(), "nothing was added");
    let bodies: Vec<String> = cloud.requests().iter().map(|r| r.body.to_string()).collect();
    assert_eq!(bodies.len(), 4, "the refusals go back to the model");
    for b in &bodies[1..3] {
        assert!(
            b.contains("cannot add local files") && b.contains("Nothing was read"),
            "{b}"
        );
    }
    for (i, b) in bodies.iter().enumerate() {
        assert!(!b.contains(PDF_TEXT), "request {i} carries the PDF's text");
    }
    assert!(local.requests().is_empty(), "nothing went to the local model either");
}

#[test]
fn a_local_session_asks_first_and_a_private_folders_pdf_is_added_private() {
    let w = world();
    let local = FakeServer::start(vec![
        add_call(Wire::Ollama, "a", &w.taxes),
        Wire::Ollama.text(&["I asked you to confirm."]),
        add_call(Wire::Ollama, "b", &w.taxes),
        Wire::Ollama.text(&["I asked again."]),
        add_call(Wire::Ollama, "c", &w.medical),
        Wire::Ollama.text(&["And the medical one."]),
    ]);
    let cloud = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[(
            "x",
            "search_kb",
            vec![r#"{"query":"left column ends here with a marker sentence LEFTCOLUMNEND"}"#],
        )]),
        Wire::OpenRouter.text(&["Nothing."]),
    ]);
    let app = w.app(&local, &cloud);
    let agent = app.chat().unwrap();
    let s = session(&agent, "ollama");
    let turn = |q: &str| {
        let ev = Events::default();
        agent.run_turn(&s, q, &ev.sink(), &Cancel::new()).unwrap().unwrap();
        let c = confirms(&ev);
        assert_eq!(c.len(), 1, "one confirmation per proposed file: {:?}", ev.all());
        c.into_iter().next().unwrap()
    };

    // 1. Proposed, then declined: nothing read, nothing added.
    let (token, description, action) = turn("add ~/Documents/taxes.pdf");
    assert_eq!(action, ConfirmAction::Add);
    let taxes = w.taxes.canonicalize().unwrap();
    assert!(description.contains(&taxes.display().to_string()), "{description}");
    assert!(description.contains("It will be public"), "{description}");
    assert!(stored(&app, &w.taxes).is_none(), "proposing adds nothing");
    let tool_reply = &local.requests()[1].body.to_string();
    assert!(tool_reply.contains("confirmation dialog"), "{tool_reply}");
    assert!(!tool_reply.contains(PDF_TEXT), "the file was not read");
    let said = agent.confirm_action(&token, false).unwrap();
    assert!(said.contains("Did not add"), "{said}");
    assert!(stored(&app, &w.taxes).is_none());
    assert!(agent.confirm_action(&token, true).is_err(), "a token is used once");

    // 2. Proposed again and accepted: added, public.
    let (token, _, _) = turn("add it after all");
    let said = agent.confirm_action(&token, true).unwrap();
    assert!(said.starts_with("Added"), "{said}");
    let doc = stored(&app, &w.taxes).expect("added after the yes");
    assert!(!doc.visibility.is_private());

    // 3. The PDF in the vault's private folder: the card says private, and
    //    so is what is stored.
    let (token, description, _) = turn("add vault/private/medical.pdf");
    assert!(description.contains("It will be private"), "{description}");
    let said = agent.confirm_action(&token, true).unwrap();
    assert!(said.contains("It is private"), "{said}");
    let doc = stored(&app, &w.medical).expect("added after the yes");
    assert!(doc.visibility.is_private(), "a private folder's PDF is private");

    // Its text never reaches a cloud session: only the public copy's
    // passages come back, and none of the private one's.
    let cs = session(&agent, "cloud:m1");
    agent
        .run_turn(
            &cs,
            "what do my documents say?",
            &Events::default().sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
    let medical = source_of(&w.medical);
    for r in cloud.requests() {
        assert!(
            !r.body.to_string().contains(&medical),
            "the private PDF reached the cloud"
        );
    }
}

#[test]
fn kb_add_of_a_pdf_in_the_private_folder_stores_it_private() {
    let w = world();
    let closed = dead_url();
    // First without a vault configured: the PDF lands public, as before
    // this rule existed.
    w.sb.write_config(&format!("[chat]\nollama_host = \"{closed}\"\n"));
    let add = || {
        let mut c = w.sb.jarvis();
        c.args(["kb", "add", w.medical.to_str().unwrap(), "--full-text", "--json"]);
        let r = run(c);
        assert_eq!(r.code, 0, "{}", r.stderr);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()
    };
    assert_eq!(add()["visibility"], "public");
    // With the vault configured, the same unchanged bytes are re-added
    // private rather than skipped as unchanged.
    w.sb.write_config(&format!(
        "[chat]\nollama_host = \"{closed}\"\n\n[vault]\npath = \"{}\"\n",
        w.vault.display()
    ));
    let v = add();
    assert_eq!(v["visibility"], "private", "{v}");
    assert!(v["skipped"].is_null(), "{v}");
    let hits = |visibility: &str| {
        let mut c = w.sb.jarvis();
        c.args(["kb", "search", PDF_TEXT, "--visibility", visibility, "--json"]);
        let r = run(c);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["results"].as_array().unwrap().len()
    };
    assert_eq!(hits("public"), 0, "no public copy is left");
    assert!(hits("private") > 0);
    // A private paper by the vault's rule is not a legacy one.
    let mut c = w.sb.jarvis();
    c.args(["kb", "stats"]);
    let r = run(c);
    assert!(!r.stderr.contains("private paper"), "{}", r.stderr);
}

/// A web address on this machine is a local file by another route: a
/// cloud session is refused and nothing is fetched; a local session only
/// proposes, and the fetch happens after the human's yes.
#[test]
fn a_local_web_address_is_treated_like_a_local_file() {
    use crate::support::fakes::stand::{Answer, Stand};
    let w = world();
    let docs = Stand::start(|_, _| Answer::pdf(pdf_fixture_bytes("paper.pdf")));
    let url = format!("{}/taxes.pdf", docs.url);
    let call = |wire: Wire, id: &str| {
        let args = format!(r#"{{"source":"{url}","mode":"full_text","title":"Taxes","authors":"Me"}}"#);
        wire.tool_calls(&[(id, "add_document", vec![&args])])
    };
    let local = FakeServer::start(vec![call(Wire::Ollama, "l1"), Wire::Ollama.text(&["Asked."])]);
    let cloud = FakeServer::start(vec![call(Wire::OpenRouter, "c1"), Wire::OpenRouter.text(&["Refused."])]);
    w.sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n\n[vault]\npath = \"{}\"\n\n\
         [papers]\nallow_local_urls = true\nhost_delay_ms = 0\n\n\
         [servers.cloud]\nbase_url = \"{}/v1\"\nmodel = \"m1\"\nlocal = false\n",
        local.url,
        w.vault.display(),
        cloud.url
    ));
    let app = crate::support::web::open_app(jarvis::paths::JarvisHome::at(w.sb.jarvis_home()));
    let agent = app.chat().unwrap();

    let ev = Events::default();
    let cs = session(&agent, "cloud:m1");
    agent
        .run_turn(&cs, "add my taxes", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert!(confirms(&ev).is_empty(), "a cloud session is refused, not asked");
    let refusal = cloud.requests()[1].body.to_string();
    assert!(refusal.contains("on this machine or its local network"), "{refusal}");
    assert!(
        docs.seen().is_empty(),
        "a cloud session made Jarvis fetch a local address"
    );

    let ev = Events::default();
    let ls = session(&agent, "ollama");
    agent
        .run_turn(&ls, "add my taxes", &ev.sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    let c = confirms(&ev);
    assert_eq!(c.len(), 1, "{:?}", ev.all());
    let (token, description, action) = c.into_iter().next().unwrap();
    assert_eq!(action, ConfirmAction::Add);
    assert!(description.contains(&url), "{description}");
    assert!(docs.seen().is_empty(), "fetched before the yes");
    let said = agent.confirm_action(&token, true).unwrap();
    assert!(said.starts_with("Added"), "{said}");
    assert_eq!(docs.seen().len(), 1);
}
