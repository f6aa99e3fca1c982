//! The event log at the store level: one event per changed document in the
//! commit's own batch, kept copies for undo, the baseline, retention and
//! the replay audit.

use serde_json::json;

use super::*;
use crate::store::{NewChunk, Store, StoreOptions};

fn paper(text: &str, source: &str) -> NewChunk {
    let mut meta = Metadata::new();
    meta.insert("source".into(), json!(source));
    meta.insert("doc_type".into(), json!("paper"));
    meta.insert("visibility".into(), json!("public"));
    meta.insert("title".into(), json!(format!("Paper {source}")));
    meta.insert("content_hash".into(), json!(format!("hash-{text}")));
    NewChunk {
        text: text.into(),
        embed_text: format!("H\n{text}"),
        meta,
        vector: vec![0.25, -1.0, text.len() as f32],
    }
}

fn note(text: &str, path: &str) -> NewChunk {
    let mut c = paper(text, "local");
    c.meta.insert("doc_type".into(), json!("note"));
    c.meta.insert("file_path".into(), json!(path));
    c
}

fn by(actor: Actor) -> Cause {
    Cause::new(actor, true)
}

fn events(s: &Store) -> Vec<Event> {
    let mut out = Vec::new();
    s.scan_events(0, |e| {
        out.push(e);
        true
    })
    .unwrap();
    out
}

fn ids_of(s: &Store, source: &str) -> Vec<ChunkId> {
    s.ids_by(crate::store::LookupField::Source, source).unwrap()
}

#[test]
fn every_commit_writes_one_event_per_document_with_its_actor() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let agent = Actor::Agent {
        session: "s1".into(),
        token: Some("tok".into()),
    };
    s.commit(
        vec![paper("a1", "p:a"), paper("a2", "p:a"), paper("b1", "p:b")],
        &[],
        &by(Actor::Cli),
    )
    .unwrap();
    let old = ids_of(&s, "p:a");
    s.commit(vec![paper("a3", "p:a")], &old, &by(Actor::job("pdf_scan")))
        .unwrap();
    s.commit(vec![], &ids_of(&s, "p:b"), &by(agent.clone())).unwrap();
    let ev = events(&s);
    let kinds: Vec<_> = ev.iter().map(|e| (e.id, e.key.as_str(), e.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            (1, "p:a", EventKind::Added),
            (2, "p:b", EventKind::Added),
            (3, "p:a", EventKind::Replaced),
            (4, "p:b", EventKind::Removed),
        ]
    );
    assert_eq!(ev[0].actor, Actor::Cli);
    assert_eq!(ev[2].actor, Actor::job("pdf_scan"));
    assert_eq!(ev[3].actor, agent);
    assert_eq!(ev[0].seq, ev[1].seq, "one commit, one seq");
    assert_eq!(ev[0].title, "Paper p:a");
    assert_eq!(ev[2].before, ev[0].after);
    assert_eq!(ev[2].after.as_ref().map(|a| a.chunks), Some(1));
    assert_eq!(
        ev[2].after.as_ref().and_then(|a| a.content_hash.as_deref()),
        Some("hash-a3")
    );
    assert_eq!(ev[3].after, None);
    // The replaced and removed chunks are kept, with their vectors.
    assert!(matches!(ev[2].kept, Kept::Copies { chunks: 2, gen: 0, .. }));
    assert_eq!(s.kept_chunks(3).unwrap().iter().map(|k| k.id).collect::<Vec<_>>(), old);
    assert_eq!(ev[0].kept, Kept::Nothing);
    assert_eq!(s.log_state("p:a").unwrap(), ev[2].after);
    assert_eq!(s.doc_state("p:a").unwrap(), ev[2].after);
    let audit = s.audit_log().unwrap();
    assert!(audit.ok(), "{audit:?}");
    assert_eq!((audit.events, audit.matched), (4, 1));
    // Ids resume after a reopen.
    drop(s);
    let s = Store::open(t.path()).unwrap();
    s.commit(vec![paper("c", "p:c")], &[], &by(Actor::Web)).unwrap();
    assert_eq!(
        events(&s).last().map(|e| (e.id, e.actor.clone())),
        Some((5, Actor::Web))
    );
}

#[test]
fn notes_and_a_zero_retention_keep_no_copies() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    s.commit(vec![note("n", "a.md"), paper("p", "p:x")], &[], &by(Actor::Cli))
        .unwrap();
    let note_ids = s.ids_by(crate::store::LookupField::FilePath, "a.md").unwrap();
    s.commit(vec![], &note_ids, &by(Actor::job("vault_refresh"))).unwrap();
    s.commit(vec![], &ids_of(&s, "p:x"), &Cause::new(Actor::Cli, false))
        .unwrap();
    let ev = events(&s);
    assert_eq!(ev[2].kept, Kept::FromFile, "a note's file is the truth");
    assert_eq!(ev[3].kept, Kept::Off);
    assert_eq!(s.log_size().unwrap().kept_chunks, 0);
}

#[test]
fn a_restore_puts_back_the_very_records_and_vectors() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let (_, ids) = s
        .commit(vec![paper("x1", "p:x"), paper("x2", "p:x")], &[], &by(Actor::Cli))
        .unwrap();
    let before: Vec<_> = ids.iter().map(|&i| (s.get(i).unwrap(), s.vector(i).unwrap())).collect();
    s.commit(vec![], &ids, &by(Actor::Web)).unwrap();
    assert!(s.get(ids[0]).unwrap().is_none());
    let kept = s.kept_chunks(2).unwrap();
    let mut undo = by(Actor::Cli);
    undo.undo_of = Some(2);
    let (seq, restored) = s.restore(kept, &[], &undo).unwrap();
    assert_eq!(restored.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), ids);
    let after: Vec<_> = ids.iter().map(|&i| (s.get(i).unwrap(), s.vector(i).unwrap())).collect();
    assert_eq!(after, before);
    assert_eq!(s.journal_since(seq - 1).unwrap()[0].added, ids);
    let ev = events(&s);
    assert_eq!(ev[2].undo_of, Some(2));
    assert_eq!(ev[2].kind, EventKind::Added);
    assert_eq!(ev[2].after, ev[0].after, "the document is what it was");
    assert_eq!(s.doc_totals().unwrap().chunks, 2);
    assert!(s.audit_log().unwrap().ok());
}

#[test]
fn a_metadata_edit_carries_its_previous_values() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let (_, ids) = s
        .commit(vec![paper("x1", "p:x"), paper("x2", "p:x")], &[], &by(Actor::Cli))
        .unwrap();
    let mut f = Metadata::new();
    f.insert("title".into(), json!("Better"));
    f.insert("doi".into(), json!("10.1/x"));
    s.update_metadata(&ids, &f, &by(Actor::Web)).unwrap();
    let e = events(&s).pop().unwrap();
    assert_eq!(e.kind, EventKind::MetadataSet);
    assert_eq!(e.fields, f);
    assert_eq!(e.title, "Better");
    assert_eq!(e.prior.len(), 1, "both chunks had the same values");
    assert_eq!(e.prior[0].ids, ids);
    assert_eq!(e.prior[0].fields.get("title"), Some(&json!("Paper p:x")));
    assert_eq!(e.prior[0].fields.get("doi"), Some(&serde_json::Value::Null));
    // Putting them back returns the document to its first state.
    s.update_metadata_many(&[(&ids, &e.prior[0].fields)], &by(Actor::Cli))
        .unwrap();
    assert_eq!(s.doc_state("p:x").unwrap(), events(&s)[0].after);
    assert!(!s.get(ids[0]).unwrap().unwrap().meta.contains_key("doi"));
    assert!(s.audit_log().unwrap().ok());
}

#[test]
fn a_store_from_before_the_log_gets_a_baseline_once() {
    let t = tempfile::tempdir().unwrap();
    {
        let s = Store::open(t.path()).unwrap();
        s.commit(vec![paper("a", "p:a"), note("n", "n.md")], &[], &by(Actor::Cli))
            .unwrap();
        // What a store made before the log looks like: no events at all.
        let h = s.h().unwrap();
        let mut b = h.db.batch();
        for ks in [&h.events, &h.logstate] {
            for g in ks.iter() {
                b.remove(ks, g.key().unwrap());
            }
        }
        for k in [crate::store::history::LOGSTATE, "log_started", NEXT_EVENT] {
            b.remove(&h.meta, k);
        }
        b.commit().unwrap();
    }
    let s = Store::open(t.path()).unwrap();
    let ev = events(&s);
    assert_eq!(ev.len(), 2);
    assert!(ev
        .iter()
        .all(|e| e.kind == EventKind::Present && e.actor == Actor::Jarvis));
    assert!(s.audit_log().unwrap().ok());
    drop(s);
    let s = Store::open(t.path()).unwrap();
    assert_eq!(events(&s).len(), 2, "written once");
}

#[test]
fn the_audit_names_the_event_a_change_behind_the_logs_back_contradicts() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    s.commit(
        vec![paper("a1", "p:a"), paper("a2", "p:a"), paper("b", "p:b")],
        &[],
        &by(Actor::Cli),
    )
    .unwrap();
    let victim = ids_of(&s, "p:a")[1];
    {
        let _armed = crate::failpoint::arm_for_thread("log_skipped");
        s.commit(vec![], &[victim], &by(Actor::Cli)).unwrap();
        s.commit(vec![paper("c", "p:c")], &[], &by(Actor::Cli)).unwrap();
    }
    let audit = s.audit_log().unwrap();
    assert!(!audit.ok());
    assert_eq!(audit.matched, 1);
    assert_eq!(audit.differing.len(), 1);
    assert_eq!(audit.differing[0].key, "p:a");
    assert_eq!(audit.differing[0].event, Some(1));
    assert_eq!(audit.differing[0].store.as_ref().map(|d| d.chunks), Some(1));
    assert_eq!(audit.extra.len(), 1, "p:c has no event");
    assert_eq!(audit.extra[0].event, None);
    assert_eq!(audit.first_differing_event, Some(1));
}

#[test]
fn an_unfinished_bulk_commit_leaves_no_event() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open_with(t.path(), StoreOptions { bulk_write_bytes: 1 }).unwrap();
    s.commit(vec![paper("a", "p:a")], &[], &by(Actor::Cli)).unwrap();
    let err = {
        let _armed = crate::failpoint::arm_for_thread("store_bulk_batch");
        s.commit(
            vec![paper("a2", "p:a"), paper("b", "p:b")],
            &ids_of(&s, "p:a"),
            &by(Actor::Cli),
        )
    };
    assert!(err.is_err());
    assert_eq!(events(&s).len(), 1);
    assert!(s.event(2).unwrap().is_none());
    assert!(s.audit_log().unwrap().ok(), "{:?}", s.audit_log());
    assert_eq!(s.log_state("p:b").unwrap(), None);
    s.commit(vec![paper("b", "p:b")], &[], &by(Actor::Cli)).unwrap();
    assert_eq!(events(&s).iter().map(|e| e.id).collect::<Vec<_>>(), vec![1, 2]);
    assert!(s.audit_log().unwrap().ok());
}

#[test]
fn retention_drops_kept_copies_and_zero_drops_them_all() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    s.commit(vec![paper("a", "p:a")], &[], &by(Actor::Cli)).unwrap();
    s.commit(vec![], &ids_of(&s, "p:a"), &by(Actor::Cli)).unwrap();
    assert_eq!(s.drop_expired_copies(30).unwrap(), 0);
    assert_eq!(s.kept_chunks(2).unwrap().len(), 1);
    let size = s.log_size().unwrap();
    assert_eq!((size.events, size.kept_events, size.kept_chunks), (2, 1, 1));
    assert_eq!(s.drop_expired_copies(0).unwrap(), 1);
    assert!(s.kept_chunks(2).unwrap().is_empty());
    let after = s.log_size().unwrap();
    assert_eq!(
        (after.events, after.kept_events, after.kept_chunks, after.kept_bytes),
        (2, 0, 0, 0)
    );
    assert_eq!(after.event_bytes, size.event_bytes);
    // The event itself stays: the log is append-only.
    assert!(matches!(s.event(2).unwrap().map(|e| e.kept), Some(Kept::Copies { .. })));
}
