//! Undo, the timeline and the audit with the real model, fjall, tantivy
//! and the vector copies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::super::search::SearchRequest;
use super::super::*;
use super::LogQuery;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::store::{EventKind, Metadata};

fn embedder() -> Embedder {
    let n = natives();
    Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap()
}

/// A knowledge base that loads the model only when something embeds, and
/// counts the loads.
fn open_counting(dir: &Path, settings: KbSettings) -> (Kb, Arc<AtomicUsize>) {
    let loads = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&loads);
    let loader: EmbedderLoader = Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(embedder())
    });
    let spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
    (Kb::open_lazy(dir, spec, loader, None, settings).unwrap(), loads)
}

fn add_paper(kb: &Kb, source: &str, title: &str, body: &str) {
    let p = ops::Paper {
        title: title.into(),
        authors: "A. Author".into(),
        source: source.into(),
        ..ops::Paper::default()
    };
    kb.add_paper(&p, body, &Actor::Cli).unwrap();
}

fn add_note(kb: &Kb, path: &str, text: &str) {
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!("note"));
    own.insert("visibility".into(), json!("public"));
    own.insert("source".into(), json!("local"));
    own.insert("file_path".into(), json!(path));
    kb.add_texts(
        text,
        &Metadata::new(),
        &own,
        "",
        Some(&ReplaceBy::FilePath(path.into())),
        &Actor::job("vault_refresh"),
    )
    .unwrap();
}

fn snapshot(kb: &Kb, source: &str) -> Vec<(ChunkRecord, Vec<f32>)> {
    let mut ids = kb.store().doc_ids(source).unwrap();
    ids.sort_unstable();
    ids.iter()
        .map(|&i| {
            (
                kb.store().get(i).unwrap().unwrap(),
                kb.store().vector(i).unwrap().unwrap(),
            )
        })
        .collect()
}

fn last_event(kb: &Kb) -> Event {
    let rows = kb
        .timeline(&LogQuery {
            limit: 1,
            ..LogQuery::default()
        })
        .unwrap();
    rows[0].event.clone()
}

const BODY: &str = "Otters use stones as tools to crack open shellfish on their bellies.\n\n\
                    Sea otters hold hands while sleeping so they do not drift apart.";

#[test]
fn undo_of_a_removal_restores_chunks_and_vectors_without_embedding() {
    let t = tempfile::tempdir().unwrap();
    let before = {
        let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
        add_paper(&kb, "arxiv:otters", "Tool use in sea otters", BODY);
        snapshot(&kb, "arxiv:otters")
    };
    // Reopened lazily: the model is never loaded unless something embeds.
    let (kb, loads) = open_counting(t.path(), KbSettings::default());
    let doc = kb.find_document("arxiv:otters").unwrap();
    let agent = Actor::Agent {
        session: "chat-1".into(),
        token: Some("tok-9".into()),
    };
    kb.remove_document(&doc, &agent).unwrap();
    let removal = last_event(&kb);
    assert_eq!((removal.kind, &removal.actor), (EventKind::Removed, &agent));
    assert!(kb.store().doc_ids("arxiv:otters").unwrap().is_empty());

    let undone = kb.undo(None, &Actor::Cli).unwrap();
    assert_eq!(
        undone.of.id, removal.id,
        "a confirmed agent removal is the user's to undo"
    );
    assert_eq!(loads.load(Ordering::SeqCst), 0, "nothing was embedded");
    assert_eq!(snapshot(&kb, "arxiv:otters"), before, "the same chunks and vectors");
    let undo = last_event(&kb);
    assert_eq!(Some(undo.id), undone.event);
    assert_eq!((undo.undo_of, undo.actor.clone()), (Some(removal.id), Actor::Cli));
    assert!(kb.audit().unwrap().ok());
    assert!(kb.agreement().unwrap().ok());
    let hits = kb
        .search(&SearchRequest::new("otters crack shellfish with stones", 3))
        .unwrap();
    assert_eq!(hits[0].record.meta_str("source"), Some("arxiv:otters"));
    assert!(
        hits.iter().any(|h| h.dense_rank.is_some()),
        "the vectors are back in the dense index"
    );

    // The undo is undoable in turn: it removes the document again.
    kb.undo(Some(undo.id), &Actor::Web).unwrap();
    assert!(kb.store().doc_ids("arxiv:otters").unwrap().is_empty());
    assert!(kb.audit().unwrap().ok());
}

#[test]
fn undo_is_refused_after_a_conflicting_re_add_and_past_retention() {
    let t = tempfile::tempdir().unwrap();
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    add_paper(&kb, "arxiv:a", "Paper A", BODY);
    kb.remove_document(&kb.find_document("arxiv:a").unwrap(), &Actor::Web)
        .unwrap();
    let removal = last_event(&kb).id;
    add_paper(&kb, "arxiv:a", "Paper A", "A different body this time around.");
    let err = kb.undo(Some(removal), &Actor::Cli).unwrap_err();
    assert!(matches!(err, KbError::UndoRefused { .. }), "{err}");
    assert!(err.to_string().contains("added again"), "{err}");

    add_paper(&kb, "arxiv:b", "Paper B", BODY);
    kb.remove_document(&kb.find_document("arxiv:b").unwrap(), &Actor::Cli)
        .unwrap();
    let old = last_event(&kb).id;
    kb.store().backdate_event(old, "2020-01-01T00:00:00Z").unwrap();
    let err = kb.undo(Some(old), &Actor::Cli).unwrap_err().to_string();
    assert!(
        err.contains("past retention") && err.contains("history.keep_days = 30"),
        "{err}"
    );
    // The daily `history_gc` run drops what retention no longer keeps, and
    // nothing else (event `removal` is recent: its copies stay).
    let kept_before = kb.log_size().unwrap().kept_events;
    assert_eq!(kb.expire_kept_copies().unwrap(), (1, 30));
    assert!(kb.store().kept_chunks(old).unwrap().is_empty());
    assert!(!kb.store().kept_chunks(removal).unwrap().is_empty());
    assert_eq!(kb.log_size().unwrap().kept_events, kept_before - 1);
    assert_eq!(kb.expire_kept_copies().unwrap(), (0, 30));
    // The next open drops what retention no longer keeps; the reason stays clear.
    drop(kb);
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    assert!(kb.store().kept_chunks(old).unwrap().is_empty());
    let err = kb.undo(Some(old), &Actor::Cli).unwrap_err().to_string();
    assert!(err.contains("past retention"), "{err}");
    let rows = kb.timeline(&LogQuery::default()).unwrap();
    let row = rows.iter().find(|r| r.event.id == old).unwrap();
    assert!(!row.undoable && row.why_not.as_deref().is_some_and(|w| w.contains("retention")));
}

#[test]
fn a_metadata_edit_is_reverted_and_a_note_points_to_its_file() {
    let t = tempfile::tempdir().unwrap();
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    add_paper(&kb, "arxiv:m", "Wrong title", BODY);
    kb.update_paper_metadata("arxiv:m", Some("Right title"), None, Some("10.1/m"), &Actor::Web)
        .unwrap();
    let edited = snapshot(&kb, "arxiv:m");
    assert_eq!(edited[0].0.meta_str("title"), Some("Right title"));
    add_note(&kb, "otters.md", "# Otters\n\nRiver otters eat fish.");
    let ids = kb.store().doc_ids("otters.md").unwrap();
    kb.delete_by_metadata("file_path", "otters.md", &Actor::job("vault_refresh"))
        .unwrap();
    assert!(!ids.is_empty());
    // A bare undo skips the job's removal and takes the user's last change.
    let undone = kb.undo(None, &Actor::Cli).unwrap();
    assert_eq!(undone.of.kind, EventKind::MetadataSet);
    let back = snapshot(&kb, "arxiv:m");
    assert_eq!(back[0].0.meta_str("title"), Some("Wrong title"));
    assert!(!back[0].0.meta.contains_key("doi"));
    assert_eq!(
        back.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
        edited.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>()
    );
    let note_removal = kb
        .timeline(&LogQuery {
            kind: Some("removed".into()),
            ..LogQuery::default()
        })
        .unwrap()[0]
        .event
        .id;
    let err = kb.undo(Some(note_removal), &Actor::Cli).unwrap_err().to_string();
    assert!(err.contains("the file is the truth"), "{err}");
    assert!(kb.audit().unwrap().ok());
}

#[test]
fn the_audit_finds_a_chunk_deleted_behind_the_logs_back() {
    let t = tempfile::tempdir().unwrap();
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    add_paper(&kb, "arxiv:x", "Paper X", BODY);
    add_paper(&kb, "arxiv:y", "Paper Y", BODY);
    assert!(kb.audit().unwrap().ok());
    let x_added = kb
        .timeline(&LogQuery::default())
        .unwrap()
        .into_iter()
        .find(|r| r.event.key == "arxiv:x")
        .unwrap()
        .event
        .id;
    let victim = kb.store().doc_ids("arxiv:x").unwrap()[0];
    {
        let _armed = crate::failpoint::arm_for_thread("log_skipped");
        kb.commit_ids(crate::kb::stage::Prepared::default(), &[victim], &Actor::Cli)
            .unwrap();
    }
    let audit = kb.audit().unwrap();
    assert!(!audit.ok());
    assert_eq!(audit.matched, 1, "{audit:?}");
    // Its one chunk is gone: missing from the store, named by its add.
    assert_eq!(audit.missing.len(), 1);
    assert_eq!(audit.missing[0].key, "arxiv:x");
    assert_eq!(audit.first_differing_event, Some(x_added));
    // An undo does not build on a document the log no longer describes.
    kb.remove_document(&kb.find_document("arxiv:y").unwrap(), &Actor::Cli)
        .unwrap();
    let err = kb.undo(Some(x_added), &Actor::Cli).unwrap_err().to_string();
    assert!(err.contains("kb audit"), "{err}");
}

#[test]
fn zero_retention_keeps_nothing_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let settings = KbSettings {
        keep_days: 0,
        ..KbSettings::default()
    };
    let kb = Kb::open(t.path(), embedder(), None, settings).unwrap();
    add_paper(&kb, "arxiv:z", "Paper Z", BODY);
    kb.remove_document(&kb.find_document("arxiv:z").unwrap(), &Actor::Cli)
        .unwrap();
    assert_eq!(kb.log_size().unwrap().kept_chunks, 0);
    let err = kb.undo(None, &Actor::Cli).unwrap_err().to_string();
    assert!(err.contains("keep_days"), "{err}");
}

#[test]
fn a_restored_paper_whose_citation_key_was_taken_since_gets_the_next_one() {
    let t = tempfile::tempdir().unwrap();
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    let key_of = |kb: &Kb, source: &str| {
        let id = kb.store().doc_ids(source).unwrap()[0];
        let rec = kb.store().get(id).unwrap().unwrap();
        rec.meta_str(crate::kb::cite::CITE_KEY).unwrap().to_string()
    };
    add_paper(&kb, "arxiv:first", "Otter tools", BODY);
    let first = key_of(&kb, "arxiv:first");
    kb.remove_document(&kb.find_document("arxiv:first").unwrap(), &Actor::Cli)
        .unwrap();
    let removal = last_event(&kb).id;
    add_paper(
        &kb,
        "arxiv:second",
        "Otter tools",
        "Another body about otters and their stones.",
    );
    assert_eq!(
        key_of(&kb, "arxiv:second"),
        first,
        "the freed key went to the new paper"
    );
    kb.undo(Some(removal), &Actor::Cli).unwrap();
    let restored = key_of(&kb, "arxiv:first");
    assert_ne!(restored, first, "two papers never share a key");
    assert!(restored.starts_with(&first), "{restored} follows {first}");
    assert!(kb.audit().unwrap().ok());
}
