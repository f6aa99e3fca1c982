//! The write spy: a [`WriteLog`] attached to the drafts root of a running
//! web app records the resolved path of every filesystem write the drafts
//! feature makes (every one goes through `drafts::disk`; tidy.rs checks no
//! other drafts code writes). Every drafts chat tool and every drafts web
//! route that writes is driven with normal and hostile arguments, and each
//! recorded path must lie in `$JARVIS_HOME/drafts/<the id it named>/` or in
//! a build's temporary directory; a refused call records nothing at all.
//! The retention sweep is driven the same way. Not seen here: what
//! latexmk and pandoc write in their own process (drafts_build.rs checks
//! that nothing lands outside the build's temporary directory).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use jarvis::cancel::Cancel;
use jarvis::chat::tools::{ToolBox, ToolDeps, VaultSettings};
use jarvis::drafts::disk::{Disk, WriteEvent, WriteLog};
use jarvis::drafts::DraftsHandle;
use jarvis::llm::ToolCall;

use crate::support::chat::{fixture, NOTES};
use crate::support::web::WebServer;

/// Names the containment policy must refuse before any write.
const HOSTILE_NAMES: &[&str] = &[
    "../x.md",
    "../../../../tmp/jarvis-spy-escape.md",
    "/etc/passwd.md",
    "/tmp/jarvis-spy-escape.md",
    "a/b.md",
    "..\\x.md",
    "-latex=pdflatex -shell-escape %O %S.tex",
    "a\0.md",
    "a\u{2215}b.md",
    "a\u{FF0E}\u{FF0E}md",
    ".hidden.md",
    "draft.json",
    "x.sh",
    "",
];

/// Ids that are not ids.
const HOSTILE_IDS: &[&str] = &["..", "../..", "/etc", "a/b", "ABC", "x\0y", ".versions", ""];

struct Spy {
    log: WriteLog,
    /// Canonical `$JARVIS_HOME/drafts`.
    root: PathBuf,
    tmp: PathBuf,
}

impl Spy {
    /// Writes since the last look; each inside `root/<id>/` (the folder
    /// itself included: it is created and removed whole) or in a build's
    /// temporary directory or staged PDF.
    fn inside(&self, id: &str, what: &str) -> Vec<WriteEvent> {
        let events = self.log.take();
        let dir = self.root.join(id);
        for e in &events {
            let in_draft = e.path == dir || e.path.starts_with(&dir);
            let in_build = e.path.strip_prefix(&self.tmp).is_ok_and(|rel| {
                rel.components()
                    .next()
                    .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with("jarvis-build-"))
            });
            assert!(
                in_draft || in_build,
                "{what}: {:?} wrote {} — outside drafts/{id}/ and the build directory\nall writes: {events:#?}",
                e.op,
                e.path.display()
            );
        }
        events
    }

    /// A refused call: nothing written anywhere.
    fn nothing(&self, what: &str) {
        let events = self.log.take();
        assert!(events.is_empty(), "{what} was refused but wrote {events:#?}");
    }
}

fn call(tb: &mut ToolBox<'_>, name: &str, args: Value) -> (bool, String) {
    match tb.dispatch(&ToolCall {
        id: "c".into(),
        name: name.into(),
        arguments: args,
    }) {
        Ok(o) => (!o.is_error, o.content),
        Err(e) => (false, e.to_string()),
    }
}

fn created_id(text: &str) -> String {
    let rest = text
        .split("Created draft ")
        .nth(1)
        .unwrap_or_else(|| panic!("not a creation: {text}"));
    rest.split_whitespace().next().unwrap().to_string()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

#[test]
fn every_write_a_tool_or_a_route_makes_lands_inside_the_draft_it_names() {
    let s = WebServer::start();
    let fx = fixture(NOTES);
    let drafts: DraftsHandle = s.app.drafts().unwrap();
    let log = WriteLog::new();
    assert!(drafts.record_writes(log.clone()));
    let spy = Spy {
        log,
        root: canonical(&s.sandbox.jarvis_home().join("drafts")),
        tmp: Disk::temp_root(),
    };
    assert_eq!(
        drafts.workspace.root(),
        spy.root,
        "the drafts root is $JARVIS_HOME/drafts"
    );
    let outside = s.sandbox.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("target.md"), "not yours\n").unwrap();

    // ---- the chat tools ----
    let deps = ToolDeps {
        drafts: Some(drafts.clone()),
        kb: fx.kb.clone(),
        vault: VaultSettings {
            root: Some(fx.vault.clone()),
            private_dirs: vec!["private".into()],
        },
        papers: None,
        mcp: None,
    };
    let cancel = Cancel::new();
    let mut tb = ToolBox::new(&deps, false, "spy-session", &cancel);

    let (ok, out) = call(
        &mut tb,
        "create_draft",
        json!({"title": "CV", "filename": "cv.md", "content": "# CV\n\none\ntwo\n"}),
    );
    assert!(ok, "{out}");
    let a = created_id(&out);
    let w = spy.inside(&a, "create_draft");
    assert!(
        w.len() >= 4,
        "the folder, draft.json and the file were recorded: {w:#?}"
    );
    for name in HOSTILE_NAMES {
        let (ok, out) = call(
            &mut tb,
            "create_draft",
            json!({"title": "x", "filename": name, "content": "x"}),
        );
        assert!(!ok, "create_draft {name:?}: {out}");
        spy.nothing(&format!("create_draft {name:?}"));
    }
    // A hostile title only becomes a slug of an id.
    let (ok, out) = call(
        &mut tb,
        "create_draft",
        json!({"title": "../../../etc/passwd\0", "filename": "t.md", "content": "t"}),
    );
    assert!(ok, "{out}");
    let t = created_id(&out);
    assert!(!t.contains('.') && !t.contains('/'), "{t}");
    spy.inside(&t, "create_draft with a hostile title");

    let (ok, out) = call(
        &mut tb,
        "create_draft_from",
        json!({"source": "cooking/pasta.md", "filename": "pasta.md"}),
    );
    assert!(ok, "{out}");
    let p = created_id(&out);
    spy.inside(&p, "create_draft_from");
    for args in [
        json!({"source": "cooking/pasta.md", "filename": "../pasta.md"}),
        json!({"source": "cooking/pasta.md", "filename": "/tmp/jarvis-spy-escape.md"}),
        json!({"source": "../../etc/passwd"}),
        json!({"source": "/etc/passwd", "filename": "p.md"}),
    ] {
        let (ok, out) = call(&mut tb, "create_draft_from", args.clone());
        assert!(!ok, "create_draft_from {args}: {out}");
        spy.nothing(&format!("create_draft_from {args}"));
    }

    let (ok, out) = call(
        &mut tb,
        "add_draft_file",
        json!({"draft_id": a, "filename": "refs.bib", "content": "@misc{x}\n"}),
    );
    assert!(ok, "{out}");
    spy.inside(&a, "add_draft_file");
    let (ok, out) = call(
        &mut tb,
        "add_draft_file",
        json!({"draft_id": a, "filename": "cv.md", "content": "clobber"}),
    );
    assert!(!ok, "an existing name is refused: {out}");
    spy.nothing("add_draft_file over an existing file");
    for name in HOSTILE_NAMES {
        let (ok, out) = call(
            &mut tb,
            "add_draft_file",
            json!({"draft_id": a, "filename": name, "content": "x"}),
        );
        assert!(!ok, "add_draft_file {name:?}: {out}");
        spy.nothing(&format!("add_draft_file {name:?}"));
    }
    for id in HOSTILE_IDS {
        let (ok, out) = call(
            &mut tb,
            "add_draft_file",
            json!({"draft_id": id, "filename": "x.md", "content": "x"}),
        );
        assert!(!ok, "add_draft_file in {id:?}: {out}");
        spy.nothing(&format!("add_draft_file in draft {id:?}"));
    }
    // Links planted in the draft: to a file outside, dangling to outside,
    // and `.versions` itself pointing outside.
    let a_dir = spy.root.join(&a);
    std::os::unix::fs::symlink(outside.join("target.md"), a_dir.join("link.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("new.md"), a_dir.join("dangling.md")).unwrap();
    for name in ["link.md", "dangling.md"] {
        let (ok, out) = call(
            &mut tb,
            "add_draft_file",
            json!({"draft_id": a, "filename": name, "content": "x"}),
        );
        assert!(!ok, "add_draft_file through {name}: {out}");
        spy.nothing(&format!("add_draft_file through the planted {name}"));
        let (ok, out) = call(
            &mut tb,
            "propose_draft_edit",
            json!({"draft_id": a, "filename": name, "content": "pwned\n"}),
        );
        assert!(!ok, "propose through {name}: {out}");
        spy.nothing(&format!("propose_draft_edit through {name}"));
    }

    // An over-long name, and a draft folder that is itself a planted link
    // out of the root.
    let long = format!("{}.md", "x".repeat(300));
    std::os::unix::fs::symlink(&outside, spy.root.join("planted-link")).unwrap();
    for args in [
        json!({"draft_id": a, "filename": long, "content": "x"}),
        json!({"draft_id": "planted-link", "filename": "x.md", "content": "x"}),
        json!({"draft_id": "planted-link", "filename": "target.md", "content": "x"}),
    ] {
        let (ok, out) = call(&mut tb, "add_draft_file", args.clone());
        assert!(!ok, "add_draft_file {args}: {out}");
        spy.nothing(&format!("add_draft_file {args}"));
        let (ok, out) = call(&mut tb, "propose_draft_edit", args.clone());
        assert!(!ok, "propose_draft_edit {args}: {out}");
        spy.nothing(&format!("propose_draft_edit {args}"));
    }
    let (ok, out) = call(&mut tb, "create_draft", json!({"filename": long, "content": "x"}));
    assert!(!ok, "{out}");
    spy.nothing("create_draft with an over-long name");

    for (name, args) in [
        ("list_drafts", json!({})),
        ("read_draft", json!({"draft_id": a})),
        ("read_draft", json!({"draft_id": a, "filename": "../../config.toml"})),
        ("read_draft", json!({"draft_id": "..", "filename": "cv.md"})),
    ] {
        call(&mut tb, name, args.clone());
        spy.nothing(&format!("{name} {args} (a read)"));
    }

    let (ok, out) = call(
        &mut tb,
        "propose_draft_edit",
        json!({"draft_id": a, "filename": "cv.md", "content": "# CV\n\nONE\ntwo\nthree\n"}),
    );
    assert!(ok, "{out}");
    spy.nothing("propose_draft_edit (a proposal writes nothing)");
    for args in [
        json!({"draft_id": a, "filename": "../cv.md", "content": "x"}),
        json!({"draft_id": "..", "filename": "cv.md", "content": "x"}),
        json!({"draft_id": a, "filename": "draft.json", "content": "{}"}),
        json!({"draft_id": a, "filename": "nope.md", "content": "x"}),
    ] {
        let (ok, out) = call(&mut tb, "propose_draft_edit", args.clone());
        assert!(!ok, "propose {args}: {out}");
        spy.nothing(&format!("propose_draft_edit {args}"));
    }
    let token = tb.edit_proposals.pop().expect("a proposal").token;

    // ---- the web routes that write ----
    let r = s.post("/apply-edit", &json!({"token": token, "indices": [0]}));
    assert_eq!(r.status, 200, "{}", r.text());
    let w = spy.inside(&a, "/apply-edit");
    assert!(
        w.iter().any(|e| e.path.starts_with(a_dir.join(".versions"))),
        "it snapshotted first: {w:#?}"
    );
    for body in [
        json!({"token": token, "indices": [0]}),
        json!({"token": "../../x", "indices": [0]}),
    ] {
        let r = s.post("/apply-edit", &body);
        assert!(r.status >= 400, "{body}: {}", r.text());
        spy.nothing(&format!("/apply-edit {body}"));
    }

    let r = s.post(
        "/drafts/new",
        &json!({"filename": "notes.md", "title": "Notes", "text": "# N\n\n$x^2$\n"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let n = r.json()["draft_id"].as_str().unwrap().to_string();
    spy.inside(&n, "/drafts/new");
    let r = s.post(
        "/drafts/new",
        &json!({"draft_id": n, "filename": "paper.tex", "text": "\\documentclass{article}\\begin{document}Hi\\end{document}\n"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    spy.inside(&n, "/drafts/new into a draft");
    for name in HOSTILE_NAMES {
        for body in [
            json!({"filename": name, "text": "x"}),
            json!({"draft_id": n, "filename": name, "text": "x"}),
        ] {
            let r = s.post("/drafts/new", &body);
            assert!(r.status >= 400, "{body}: {}", r.text());
            spy.nothing(&format!("/drafts/new {body}"));
        }
    }
    for id in HOSTILE_IDS {
        let body = json!({"draft_id": id, "filename": "x.md", "text": "x"});
        assert!(s.post("/drafts/new", &body).status >= 400);
        spy.nothing(&format!("/drafts/new {body}"));
    }

    let hash = s.get(&format!("/drafts/{n}/file?name=notes.md")).json()["hash"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.post(
        "/drafts/save",
        &json!({"draft_id": n, "filename": "notes.md", "text": "# N\n\nsaved\n", "expect_hash": hash}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    spy.inside(&n, "/drafts/save");
    let r = s.post(
        "/drafts/save",
        &json!({"draft_id": n, "filename": "notes.md", "text": "stale", "expect_hash": hash}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    spy.nothing("/drafts/save with a stale hash");
    let mut hostile_saves: Vec<Value> = HOSTILE_NAMES
        .iter()
        .map(|name| json!({"draft_id": n, "filename": name, "text": "x"}))
        .collect();
    hostile_saves.extend(
        HOSTILE_IDS
            .iter()
            .map(|id| json!({"draft_id": id, "filename": "notes.md", "text": "x"})),
    );
    hostile_saves.push(json!({"draft_id": a, "filename": "link.md", "text": "pwned"}));
    hostile_saves.push(json!({"draft_id": "planted-link", "filename": "target.md", "text": "pwned"}));
    hostile_saves.push(json!({"draft_id": n, "filename": long, "text": "x"}));
    hostile_saves.push(json!({"draft_id": a, "filename": "dangling.md", "text": "pwned"}));
    for body in &hostile_saves {
        let r = s.post("/drafts/save", body);
        assert!(r.status >= 400, "{body}: {}", r.text());
        spy.nothing(&format!("/drafts/save {body}"));
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("target.md")).unwrap(),
        "not yours\n"
    );
    assert!(!outside.join("new.md").exists());

    // `.versions` planted as a link out: the save's snapshot is refused,
    // and what was attempted stayed in the draft.
    std::fs::create_dir_all(outside.join("versions")).unwrap();
    let p_dir = spy.root.join(&p);
    std::os::unix::fs::symlink(outside.join("versions"), p_dir.join(".versions")).unwrap();
    let r = s.post(
        "/drafts/save",
        &json!({"draft_id": p, "filename": "pasta.md", "text": "changed\n"}),
    );
    assert!(r.status >= 400, "{}", r.text());
    spy.inside(&p, "/drafts/save with .versions planted as a link");
    assert_eq!(std::fs::read_dir(outside.join("versions")).unwrap().count(), 0);

    let r = s.post("/drafts/keep", &json!({"draft_id": n, "keep": true}));
    assert_eq!(r.status, 200, "{}", r.text());
    spy.inside(&n, "/drafts/keep");
    for id in HOSTILE_IDS.iter().chain(&["planted-link"]) {
        assert!(s.post("/drafts/keep", &json!({"draft_id": id, "keep": true})).status >= 400);
        spy.nothing(&format!("/drafts/keep {id:?}"));
    }

    let versions = jarvis::drafts::versions::list_versions(&drafts.workspace, &n, "notes.md").unwrap();
    let v = versions[0].version.clone();
    let r = s.post(
        "/drafts/restore",
        &json!({"draft_id": n, "filename": "notes.md", "version": v}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    spy.inside(&n, "/drafts/restore");
    for body in [
        json!({"draft_id": n, "filename": "notes.md", "version": "../../../draft.json"}),
        json!({"draft_id": n, "filename": "notes.md", "version": "1-1/../../x"}),
        json!({"draft_id": n, "filename": "../notes.md", "version": v}),
        json!({"draft_id": "..", "filename": "notes.md", "version": v}),
        json!({"draft_id": a, "filename": "link.md", "version": v}),
    ] {
        let r = s.post("/drafts/restore", &body);
        assert!(r.status >= 400, "{body}: {}", r.text());
        spy.nothing(&format!("/drafts/restore {body}"));
    }

    // Builds: the copy, the temporary folders and the staged PDF only.
    let latex = s.get("/drafts").json()["latex"] == json!(true);
    let pandoc = s.get("/drafts").json()["pandoc"] == json!(true);
    assert!(latex && pandoc, "cargo xtask test installs latexmk and pandoc");
    let r = s.post("/compile", &json!({"draft_id": n, "filename": "paper.tex"}));
    assert_eq!(r.status, 200, "{}", r.text());
    let w = spy.inside(&n, "/compile");
    assert!(w.iter().any(|e| e.path.starts_with(&spy.tmp)), "{w:#?}");
    // A draft citing a library paper: the .bib a build writes lands beside
    // it, under the name the document gives; a hostile name or a planted
    // link is refused and the build goes on without it.
    let kb = s.app.kb().unwrap();
    let mut own = jarvis::store::Metadata::new();
    own.insert("doc_type".into(), json!("paper"));
    own.insert("visibility".into(), json!("public"));
    own.insert("source".into(), json!("https://example.org/p"));
    let mut caller = jarvis::store::Metadata::new();
    caller.insert("title".into(), json!("Spies and their writes"));
    caller.insert("authors".into(), json!("Ada Lovelace"));
    caller.insert("year".into(), json!(1843));
    kb.add_texts("A paper.", &caller, &own, "", None, &jarvis::kb::Actor::Cli)
        .unwrap();
    let n_dir = spy.root.join(&n);
    std::os::unix::fs::symlink(outside.join("target.md"), n_dir.join("linked.bib")).unwrap();
    for (bib, written) in [
        ("refs", true),
        ("../../../../tmp/jarvis-spy-escape", false),
        ("linked", false),
    ] {
        let tex = format!(
            "\\documentclass{{article}}\\begin{{document}}Hi \\cite{{lovelace1843spies}}.\\bibliographystyle{{plain}}\\bibliography{{{bib}}}\\end{{document}}\n"
        );
        let r = s.post(
            "/drafts/save",
            &json!({"draft_id": n, "filename": "paper.tex", "text": tex}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        spy.inside(&n, "/drafts/save of a citing draft");
        let r = s.post("/compile", &json!({"draft_id": n, "filename": "paper.tex"}));
        let w = spy.inside(&n, &format!("/compile writing {bib}.bib"));
        assert_eq!(
            w.iter().any(|e| e.path == n_dir.join(format!("{bib}.bib"))),
            written,
            "{bib}: {w:#?}"
        );
        if written {
            assert_eq!(r.status, 200, "{}", r.text());
        }
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("target.md")).unwrap(),
        "not yours\n",
        "the planted link's target is untouched"
    );
    assert!(!std::path::Path::new("/tmp/jarvis-spy-escape.bib").exists());
    let r = s.post("/export", &json!({"draft_id": n, "filename": "notes.md"}));
    assert_eq!(r.status, 200, "{}", r.text());
    spy.inside(&n, "/export");
    for (route, name) in [
        ("/compile", "../paper.tex"),
        ("/compile", "-latex=pdflatex -shell-escape %O %S.tex"),
        ("/compile", "/etc/passwd.tex"),
        ("/export", "../notes.md"),
        ("/export", "link.md"),
    ] {
        for id in [n.as_str(), a.as_str(), ".."] {
            let body = json!({"draft_id": id, "filename": name});
            let r = s.post(route, &body);
            assert!(r.status >= 400, "{route} {body}: {}", r.text());
            spy.nothing(&format!("{route} {body}"));
        }
    }
    for body in [
        json!({"draft_id": n, "filename": "../x.md"}),
        json!({"draft_id": "../..", "filename": "x.md"}),
    ] {
        assert!(s.post("/reveal", &body).status >= 400);
        spy.nothing(&format!("/reveal {body}"));
    }

    // Delete: the draft's own folder and nothing else.
    for id in HOSTILE_IDS.iter().chain(&["nonexistent-draft", "planted-link"]) {
        let r = s.delete(&format!("/drafts/{}", id.replace('/', "%2F").replace('\0', "%00")));
        assert!(r.status >= 400, "DELETE {id:?}: {}", r.text());
        spy.nothing(&format!("DELETE /drafts/{id:?}"));
    }
    let r = s.delete(&format!("/drafts/{a}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let w = spy.inside(&a, "DELETE /drafts/{id}");
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(!a_dir.exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("target.md")).unwrap(),
        "not yours\n",
        "removing the draft removed the link, not its target"
    );
    assert!(
        spy.root.join("planted-link").exists(),
        "a linked folder is never removed"
    );
    assert!(!outside.join("x.md").exists() && !outside.join("draft.json").exists());

    // The retention sweep (draft_gc): by id, inside the draft only.
    let ws = &drafts.workspace;
    for id in HOSTILE_IDS.iter().chain(&["planted-link"]) {
        assert!(
            jarvis::drafts::retention::prune_drafts(ws, &[id.to_string()]).is_err(),
            "{id:?}"
        );
        spy.nothing(&format!("prune_drafts {id:?}"));
    }
    assert_eq!(
        jarvis::drafts::retention::prune_drafts(ws, std::slice::from_ref(&t)).unwrap(),
        vec![t.clone()]
    );
    assert_eq!(spy.inside(&t, "prune_drafts").len(), 1);
    assert!(
        jarvis::drafts::retention::prune_drafts(ws, std::slice::from_ref(&n))
            .unwrap()
            .is_empty(),
        "a kept draft is skipped"
    );
    spy.nothing("prune_drafts of a kept draft");
}
