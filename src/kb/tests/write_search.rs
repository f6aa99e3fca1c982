//! A search runs while a long write is embedding, instead of queueing
//! behind all of it (the real model; no timing assertions: the write is
//! stopped only after the search has answered, so a search that had to
//! wait for the write would find it finished).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::cancel::Cancel;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::kb::search::SearchRequest;
use crate::kb::stage::{build_text_documents, Document};
use crate::kb::*;
use crate::store::Metadata;

fn open(dir: &Path) -> Kb {
    let n = natives();
    let e = Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap();
    Kb::open(dir, e, None, KbSettings::default()).unwrap()
}

fn docs(path: &str, text: &str) -> Vec<Document> {
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!("note"));
    own.insert("visibility".into(), json!("public"));
    own.insert("source".into(), json!("local"));
    own.insert("file_path".into(), json!(path));
    build_text_documents(text, &Metadata::new(), &own, "", kb_chunking()).unwrap()
}

fn kb_chunking() -> crate::kb::chunker::ChunkerConfig {
    crate::kb::chunker::ChunkerConfig {
        chunk_size: 200,
        chunk_overlap: 20,
    }
}

#[test]
fn a_search_answers_while_a_long_write_is_still_embedding() {
    let t = tempfile::tempdir().unwrap();
    let kb = Arc::new(open(t.path()));
    let small = kb
        .prepare(docs("otters.md", "# Otters\n\nRiver otters eat fish."), &Cancel::new())
        .unwrap();
    kb.commit(small, Some(&ReplaceBy::FilePath("otters.md".into())), &Actor::Cli)
        .unwrap();

    // A big note: many batches of the embedder.
    let sentence = "Badgers dig long tunnels under the meadow and sleep there all winter. ";
    let big = docs("badgers.md", &sentence.repeat(1500));
    assert!(big.len() > 400, "{} chunks", big.len());
    let cancel = Cancel::new();
    let finished = Arc::new(AtomicBool::new(false));
    let writer = {
        let (kb, cancel, finished) = (kb.clone(), cancel.clone(), finished.clone());
        std::thread::spawn(move || {
            let r = kb.prepare(big, &cancel);
            finished.store(true, Ordering::SeqCst);
            r
        })
    };
    // Wait until the write holds the embedder (it is mid-way).
    while kb.embedder.try_lock().is_ok() && !finished.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let hits = kb.search(&SearchRequest::new("what do otters eat", 3)).unwrap();
    assert!(!hits.is_empty());
    let write_done_before_search = finished.load(Ordering::SeqCst);
    cancel.cancel();
    let r = writer.join().unwrap();
    assert!(
        !write_done_before_search,
        "the search waited for the whole write to embed"
    );
    assert!(matches!(r, Err(KbError::Cancelled)), "{:?}", r.map(|p| p.len()));
}

/// Embedding a write batch by batch gives the very vectors one call gives.
#[test]
fn batched_write_embedding_matches_one_call() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path());
    let text: String = (0..60)
        .map(|i| format!("Paragraph {i} talks about {} things.\n\n", "many ".repeat(i % 7)))
        .collect();
    let d = docs("p.md", &text);
    let texts: Vec<&str> = d.iter().map(|x| x.embed_text.as_str()).collect();
    let whole = kb.embedder().unwrap().embed_documents(&texts).unwrap();
    let prepared = kb.prepare(d, &Cancel::new()).unwrap();
    let batched: Vec<Vec<f32>> = prepared.0.iter().map(|c| c.vector.clone()).collect();
    assert_eq!(batched, whole);
}
