//! Changes to records kept in files go into the history through the web
//! routes that make them: a draft edit applied (the agent's, after the
//! human's answer under its token), a draft version restored, a draft
//! deleted, a prompt and a setting edited. Undo puts back the inverse each
//! event captured when it was written and appends `undo of N`; a later
//! change to the same file refuses it with the reason.

use serde_json::{json, Value};

use jarvis::drafts::Visibility;

use crate::support::web::WebServer;

fn events(s: &WebServer, kind: &str) -> Vec<Value> {
    let r = s.get(&format!("/timeline?kind={kind}"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["events"].as_array().unwrap().clone()
}

fn undo(s: &WebServer, id: &Value) -> crate::support::web::Resp {
    s.post("/timeline/undo", &json!({ "event": id }))
}

#[test]
fn an_applied_draft_edit_is_the_agents_and_undo_puts_the_earlier_text_back() {
    let s = WebServer::start();
    let d = s.app.drafts().unwrap();
    let old: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let meta = d
        .workspace
        .create_draft("Chapter", "ch.md", &old, Visibility::Public, Some("s-7"))
        .unwrap();
    let new = old.replace("line 3\n", "line three\n");
    let p = d
        .proposals
        .propose_edit(&d.workspace, &meta.id, "ch.md", &new, Some("s-7"))
        .unwrap();
    let r = s.post("/apply-edit", &json!({ "token": p.token, "indices": [0] }));
    assert_eq!(r.status, 200, "{}", r.text());
    let recorded = &r.json()["history"];
    assert!(recorded["event"].is_u64(), "{recorded}");
    assert!(recorded.get("history_warning").is_none(), "{recorded}");
    assert_eq!(d.workspace.read_file(&meta.id, "ch.md").unwrap().text, new);

    let applied = events(&s, "draft_edit_applied");
    assert_eq!(applied.len(), 1, "{applied:?}");
    let e = &applied[0];
    assert_eq!(e["id"], recorded["event"]);
    assert_eq!(e["actor"]["by"], "agent");
    assert_eq!(e["actor"]["session"], "s-7");
    assert_eq!(e["actor"]["token"], json!(p.token));
    assert_eq!(e["key"], format!("draft:{}/ch.md", meta.id));
    assert_eq!(e["title"], "Chapter");
    assert_eq!(e["undoable"], true, "{e}");
    assert!(
        e["actor_label"].as_str().unwrap().contains("the agent in chat s-7"),
        "{e}"
    );
    // No draft text in the log: a version id and a hash.
    assert!(!e.to_string().contains("line three"), "{e}");

    // Undo: the earlier text is back, and the undo is an event of its own.
    let u = undo(&s, &e["id"]);
    assert_eq!(u.status, 200, "{}", u.text());
    assert_eq!(d.workspace.read_file(&meta.id, "ch.md").unwrap().text, old);
    let restored = events(&s, "undo");
    assert_eq!(restored.len(), 1, "{restored:?}");
    assert_eq!(restored[0]["undo_of"], e["id"]);
    assert_eq!(restored[0]["kind"], "draft_restored");
    assert_eq!(restored[0]["actor"]["by"], "web");
    // The edit itself now has a later event: refused, naming it.
    let again = undo(&s, &e["id"]);
    assert_eq!(again.status, 409, "{}", again.text());
    assert!(
        again.text().contains(&format!("event {}", restored[0]["id"])),
        "{}",
        again.text()
    );
    // The undo can be undone in turn: the agent's text returns.
    let redo = undo(&s, &restored[0]["id"]);
    assert_eq!(redo.status, 200, "{}", redo.text());
    assert_eq!(d.workspace.read_file(&meta.id, "ch.md").unwrap().text, new);
}

#[test]
fn an_undo_is_refused_when_the_file_changed_since_and_a_deleted_draft_says_why() {
    let s = WebServer::start();
    let d = s.app.drafts().unwrap();
    let meta = d
        .workspace
        .create_draft("Notes", "n.md", "one\n", Visibility::Public, None)
        .unwrap();
    let first = d.workspace.read_file(&meta.id, "n.md").unwrap();
    d.workspace
        .save_draft_file(&meta.id, "n.md", "two\n", Some(&first.hash))
        .unwrap();
    let version = d.workspace.read_file(&meta.id, "n.md").unwrap();
    let versions = jarvis::drafts::versions::list_versions(&d.workspace, &meta.id, "n.md").unwrap();
    // Restore "one" from the web: the web user's event.
    let r = s.post(
        "/drafts/restore",
        &json!({ "draft_id": meta.id, "filename": "n.md", "version": versions[0].version }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let restore = &events(&s, "draft_restored")[0];
    assert_eq!(restore["actor"]["by"], "web");
    assert_eq!(restore["undoable"], true, "{restore}");
    // A save in the editor since (not an event of its own): undo refused,
    // the file untouched.
    let now = d.workspace.read_file(&meta.id, "n.md").unwrap();
    assert_eq!(now.text, "one\n");
    assert_ne!(now.hash, version.hash);
    d.workspace
        .save_draft_file(&meta.id, "n.md", "three\n", Some(&now.hash))
        .unwrap();
    let row = &events(&s, "draft_restored")[0];
    assert_eq!(row["undoable"], false, "{row}");
    assert!(row["why_not"].as_str().unwrap().contains("changed since"), "{row}");
    let refused = undo(&s, &restore["id"]);
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(refused.text().contains("changed since"), "{}", refused.text());
    assert_eq!(d.workspace.read_file(&meta.id, "n.md").unwrap().text, "three\n");

    // Deleting the draft is recorded, and the Timeline says why it cannot
    // be undone.
    let del = s.delete(&format!("/drafts/{}", meta.id));
    assert_eq!(del.status, 200, "{}", del.text());
    let gone = &events(&s, "draft_deleted")[0];
    assert_eq!(gone["actor"]["by"], "web");
    assert_eq!(gone["key"], format!("draft:{}", meta.id));
    assert_eq!(gone["undoable"], false);
    assert!(gone["why_not"].as_str().unwrap().contains("keeps no copy"), "{gone}");
    let r = undo(&s, &gone["id"]);
    assert_eq!(r.status, 409, "{}", r.text());
}

#[test]
fn prompt_and_setting_edits_are_recorded_and_undone() {
    let s = WebServer::start();
    let original = s.get("/prompts/system").json()["text"].as_str().unwrap().to_string();
    let r = s.post("/prompts/system", &json!({ "text": "Be brief." }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["history"]["event"].is_u64(), "{}", r.text());
    let edit = &events(&s, "prompt_edited")[0];
    assert_eq!(edit["actor"]["by"], "web");
    assert_eq!(edit["key"], "prompt:system.md");
    assert_eq!(edit["kept"]["state"], "copies", "{edit}");
    let u = undo(&s, &edit["id"]);
    assert_eq!(u.status, 200, "{}", u.text());
    assert_eq!(s.get("/prompts/system").json()["text"].as_str().unwrap(), original);

    let r = s.post("/settings", &json!({ "response_style": "Answer in French." }));
    assert_eq!(r.status, 200, "{}", r.text());
    let set = &events(&s, "setting_edited")[0];
    assert_eq!(set["key"], "setting:chat.response_style");
    assert_eq!(set["actor"]["by"], "web");
    assert!(
        set["record"]["detail"].as_str().unwrap().contains("Answer in French."),
        "{set}"
    );
    assert_eq!(set["undoable"], true, "{set}");
    let before = set["record"]["inverse"].as_str().unwrap().to_string();
    let u = undo(&s, &set["id"]);
    assert_eq!(u.status, 200, "{}", u.text());
    assert_eq!(s.get("/settings").json()["response_style"].as_str().unwrap(), before);
    let undone = &events(&s, "undo")[0];
    assert_eq!(undone["undo_of"], set["id"]);
    assert_eq!(undone["kind"], "setting_edited");
    // The audit of the store is not disturbed by events of files.
    assert!(s.app.audit().unwrap().ok());
}

#[test]
fn a_chat_rename_is_the_web_users_and_undo_gives_the_old_title_back() {
    let s = WebServer::start();
    let chat = s.app.chat().unwrap();
    let mut session = jarvis::chat::Session::new("ollama", "qwen3", false);
    session.title = "Tides".into();
    session.begin_turn("why do tides lag the moon?");
    chat.store().save(&session).unwrap();
    let id = session.id.clone();

    let r = s.post(&format!("/sessions/{id}/rename"), &json!({ "title": "Ocean tides" }));
    assert_eq!(r.status, 200, "{}", r.text());
    let renamed = &events(&s, "session_renamed")[0];
    assert_eq!(renamed["key"], format!("chat:{id}"));
    assert_eq!(renamed["actor"]["by"], "web");
    assert_eq!(renamed["record"]["inverse"], "Tides");
    assert_eq!(renamed["undoable"], true, "{renamed}");
    let u = undo(&s, &renamed["id"]);
    assert_eq!(u.status, 200, "{}", u.text());
    assert_eq!(chat.store().load(&id).unwrap().title, "Tides");
    let back = &events(&s, "undo")[0];
    assert_eq!(back["undo_of"], renamed["id"]);
    assert_eq!(back["kind"], "session_renamed");

    // Deleting it is recorded and cannot be undone, and says why.
    let d = s.delete(&format!("/sessions/{id}"));
    assert_eq!(d.status, 200, "{}", d.text());
    let gone = &events(&s, "session_deleted")[0];
    assert_eq!(gone["actor"]["by"], "web");
    assert_eq!(gone["title"], "Tides");
    assert_eq!(gone["undoable"], false);
    assert!(
        gone["why_not"].as_str().unwrap().contains("keeps no copy of a chat"),
        "{gone}"
    );
}
