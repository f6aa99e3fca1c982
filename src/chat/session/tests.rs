use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::llm::transcript::Block;

fn store() -> (tempfile::TempDir, SessionStore) {
    let t = tempfile::tempdir().unwrap();
    let s = SessionStore::new(t.path().join("sessions"));
    (t, s)
}

fn talked(q: &str) -> Session {
    let mut s = Session::new("ollama", "qwen3-vl:30b", true);
    s.begin_turn(q);
    s.messages.push(Message::assistant("an answer"));
    s.display.push(DisplayEntry {
        role: Role::Assistant,
        text: "an answer".into(),
        tools: vec![],
        sources: vec![],
        error: false,
        at: String::new(),
        citations: vec![],
        unsupported_citations: 0,
        not_from_library: false,
        thinking: String::new(),
        plan: String::new(),
        steered: false,
        notices: vec![],
        uncited_paragraphs: 0,
        memory: Vec::new(),
        remembered: Vec::new(),
    });
    s
}

#[test]
fn ids_are_validated_before_any_path() {
    for bad in ["", "../etc", "a/b", "A", "x.json", "a b", &"a".repeat(65), "é"] {
        assert!(!valid_id(bad), "{bad:?}");
        let (_t, st) = store();
        assert!(matches!(st.path(bad), Err(SessionError::BadId(_))));
        assert!(matches!(st.load(bad), Err(SessionError::BadId(_))));
        assert!(matches!(st.delete_file(bad), Err(SessionError::BadId(_))));
    }
    assert!(valid_id(&new_id()));
    assert!(valid_id("0-z"));
}

#[test]
fn v2_round_trip_with_permissions_and_no_empty_files() {
    let (_t, st) = store();
    let empty = Session::new("ollama", "m", true);
    assert!(!st.save(&empty).unwrap(), "an empty session is never written");
    assert!(!st.dir().join(format!("{}.json", empty.id)).exists());

    let mut s = talked("what is in my notes about budgets?");
    s.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            Block::ToolCall {
                id: "c1".into(),
                name: "search_kb".into(),
                arguments: serde_json::json!({"query": "budgets"}),
            },
            Block::ProviderOpaque {
                provider: "anthropic".into(),
                model: "claude".into(),
                data: serde_json::json!({"type": "thinking", "signature": "S"}),
            },
        ],
    });
    s.cost
        .insert("openrouter:acme/x".into(), ModelCost { usd: 0.5, requests: 2 });
    s.served_model = Some("acme/x".into());
    s.pinned = true;
    assert!(st.save(&s).unwrap());
    let back = st.load(&s.id).unwrap();
    assert_eq!(back, s);
    let path = st.path(&s.id).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(st.dir()).unwrap().permissions().mode() & 0o777, 0o700);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in [
        "messages",
        "display",
        "pinned",
        "private",
        "provider",
        "model",
        "kb_only",
        "format_version",
        "cost",
        "served_model",
        "turn_starts",
        "title",
    ] {
        assert!(v.get(key).is_some(), "file lacks {key}");
    }
    assert_eq!(v["format_version"], 2);
}

#[test]
fn a_damaged_or_foreign_file_is_an_error_not_a_crash() {
    let (_t, st) = store();
    std::fs::create_dir_all(st.dir()).unwrap();
    std::fs::write(st.dir().join("abc.json"), "{not json").unwrap();
    assert!(matches!(st.load("abc"), Err(SessionError::Corrupt { .. })));
    assert!(st.list().unwrap().is_empty(), "listing skips it");
    assert!(matches!(st.load("nope"), Err(SessionError::NotFound(_))));
    let mut s = talked("q");
    s.format_version = 1;
    std::fs::write(
        st.dir().join("old.json"),
        serde_json::to_string(&Session { id: "old".into(), ..s }).unwrap(),
    )
    .unwrap();
    assert!(matches!(st.load("old"), Err(SessionError::Corrupt { .. })));
}

#[test]
fn pruning_keeps_pins_and_the_newest_unpinned() {
    let (_t, st) = store();
    let mut ids = Vec::new();
    for i in 0..8 {
        let mut s = talked(&format!("question {i}"));
        s.id = format!("s{i}");
        s.updated = format!("2026-01-01T00:00:{i:02}Z");
        s.pinned = i < 2; // the two oldest are pinned
        st.save(&s).unwrap();
        ids.push(s.id);
    }
    let removed = st.prune(3, "s7").unwrap();
    let mut removed_sorted = removed.clone();
    removed_sorted.sort();
    assert_eq!(removed_sorted, vec!["s2", "s3", "s4"]);
    let left: Vec<String> = st.list().unwrap().into_iter().map(|m| m.id).collect();
    assert_eq!(left, vec!["s1", "s0", "s7", "s6", "s5"], "pinned first, then newest");
}

#[test]
fn rename_trims_caps_and_refuses_empty() {
    let (_t, st) = store();
    let s = talked("q");
    st.save(&s).unwrap();
    assert!(matches!(st.rename(&s.id, "   "), Err(SessionError::EmptyTitle)));
    let long = format!("  {}  ", "é".repeat(300));
    let t = st.rename(&s.id, &long).unwrap();
    assert_eq!(t.chars().count(), MAX_TITLE_CHARS);
    assert_eq!(st.load(&s.id).unwrap().title, t);
    assert!(matches!(st.rename("missing", "x"), Err(SessionError::NotFound(_))));
}

#[test]
fn rollback_removes_the_question_everywhere() {
    let mut s = talked("first");
    let before = s.clone();
    s.begin_turn("second");
    s.messages.push(Message::assistant("partial"));
    assert!(s.rollback_turn());
    assert_eq!(s.messages, before.messages);
    assert_eq!(s.display, before.display);
    assert_eq!(s.turn_starts, before.turn_starts);
}

#[test]
fn usage_keys_by_served_model_and_served_model_stays_true() {
    let mut s = Session::new("openrouter", "openrouter/auto", true);
    let mut u = Usage::new();
    u.insert("acme/picked".into(), ModelCost { usd: 0.25, requests: 1 });
    s.record_usage(&u);
    assert_eq!(s.served_model.as_deref(), Some("acme/picked"));
    assert_eq!(s.cost["openrouter:acme/picked"].requests, 1);
    let mut u = Usage::new();
    u.insert("openrouter/auto".into(), ModelCost { usd: 0.1, requests: 1 });
    s.record_usage(&u);
    assert_eq!(s.served_model, None, "cleared once the model answers for itself");
}

#[test]
fn a_file_with_the_old_indexing_counters_still_loads() {
    // Files written before the indexed history was read back from the
    // knowledge base carried two counters; they are ignored now.
    let (_t, st) = store();
    let s = talked("hello");
    st.save(&s).unwrap();
    let path = st.path(&s.id).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["indexed_exchanges"] = 7.into();
    v["reindex_private"] = true.into();
    std::fs::write(&path, v.to_string()).unwrap();
    assert_eq!(st.load(&s.id).unwrap(), s);
}
