//! Knowledge-base tests with the real model, real fjall, tantivy and arroy.

use serde_json::json;

use super::search::SearchRequest;
use super::*;
use crate::cancel::Cancel;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::index::{Filter, Visibility};
use crate::store::Metadata;

fn embedder() -> Embedder {
    let n = natives();
    Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap()
}

fn reranker() -> CrossEncoder {
    let n = natives();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-cross-encoder");
    CrossEncoder::load(
        &n.ort_dylib,
        &dir.join("model.onnx"),
        &dir.join("tokenizer.json"),
        64,
        1,
    )
    .unwrap()
}

fn open(dir: &Path, rerank: bool) -> Kb {
    Kb::open(dir, embedder(), rerank.then(reranker), KbSettings::default()).unwrap()
}

fn own(doc_type: &str, visibility: &str, source: &str, file: Option<&str>) -> Metadata {
    let mut m = Metadata::new();
    m.insert("doc_type".into(), json!(doc_type));
    m.insert("visibility".into(), json!(visibility));
    m.insert("source".into(), json!(source));
    if let Some(f) = file {
        m.insert("file_path".into(), json!(f));
    }
    m
}

fn note(kb: &Kb, path: &str, visibility: &str, text: &str) -> Vec<ChunkId> {
    kb.add_texts(
        text,
        &Metadata::new(),
        &own("note", visibility, "local", Some(path)),
        "",
        Some(&ReplaceBy::FilePath(path.into())),
        &Actor::Cli,
    )
    .unwrap()
}

fn titles(hits: &[search::Hit]) -> Vec<String> {
    hits.iter()
        .map(|h| {
            h.record
                .meta_str("file_path")
                .or(h.record.meta_str("source"))
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn hybrid_and_dense_search_find_the_right_note() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    note(
        &kb,
        "cats.md",
        "public",
        "The cat sits on the mat and sleeps in the sun.",
    );
    note(
        &kb,
        "tax.md",
        "public",
        "Quarterly tax filings are due at the end of April.",
    );
    note(
        &kb,
        "lora.md",
        "public",
        "LoRA adapts large language models with low-rank updates.",
    );
    let hits = kb.search(&SearchRequest::new("a kitten resting on a rug", 2)).unwrap();
    assert_eq!(titles(&hits)[0], "cats.md");
    let mut dense = SearchRequest::new("a kitten resting on a rug", 2);
    dense.hybrid = Some(false);
    assert_eq!(titles(&kb.search(&dense).unwrap())[0], "cats.md");
    // An exact token is where BM25 earns its place.
    let hits = kb.search(&SearchRequest::new("LoRA", 1)).unwrap();
    assert_eq!(titles(&hits), vec!["lora.md"]);
    assert!(hits[0].bm25_rank == Some(1), "{:?}", hits[0]);
    assert_eq!(kb.agreement().unwrap().store_chunks, 3);
    assert!(kb.agreement().unwrap().ok());
}

/// A private chunk that is the best possible match (identical text) can
/// neither be returned nor scored by a public-only search, with and without
/// hybrid and re-rank.
#[test]
fn a_planted_private_best_match_never_reaches_a_public_search() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), true);
    let query = "flow cytometry measurement of cells";
    let private = note(&kb, "private/secret.md", "private", query);
    note(
        &kb,
        "public1.md",
        "public",
        "How do neural networks rank documents for retrieval?",
    );
    note(
        &kb,
        "public2.md",
        "public",
        "Protein folding models and cell measurement methods.",
    );
    let private_id = private[0];
    for hybrid in [true, false] {
        for rerank in [true, false] {
            let mut req = SearchRequest::new(query, 10);
            req.filter = Filter::public_only();
            req.hybrid = Some(hybrid);
            req.rerank = rerank;
            let hits = kb.search(&req).unwrap();
            assert!(!hits.is_empty());
            for h in &hits {
                assert_ne!(ChunkId(h.record.id), private_id, "hybrid={hybrid} rerank={rerank}");
                assert_eq!(h.record.meta_str("visibility"), Some("public"));
            }
            // Neither leg saw it: the legs themselves are filtered.
            let ix = kb.indexes();
            let pool = ix.bm25.filter_ids(&Filter::public_only()).unwrap();
            assert!(!pool.contains(private_id.0 as u32));
            let qv = kb.embedder().unwrap().embed_query(query).unwrap();
            let dense = ix.flat.as_ref().unwrap().search(&qv, Some(&pool), 50).unwrap();
            assert!(dense.iter().all(|(id, _)| *id != private_id));
            let sparse = ix.bm25.search(query, &Filter::public_only(), 50).unwrap();
            assert!(sparse.iter().all(|(id, _)| *id != private_id));
        }
    }
    // Without the filter it is the best match, so the test above means something.
    let hits = kb.search(&SearchRequest::new(query, 1)).unwrap();
    assert_eq!(ChunkId(hits[0].record.id), private_id);
    // The provider-aware wrapper: cloud gets public results plus the flag.
    let (hits, has_private) = kb
        .search_with_privacy_check(&SearchRequest::new(query, 3), true)
        .unwrap();
    assert!(has_private);
    assert!(hits.iter().all(|h| h.record.meta_str("visibility") == Some("public")));
    let (hits, has_private) = kb
        .search_with_privacy_check(&SearchRequest::new(query, 3), false)
        .unwrap();
    assert!(has_private);
    assert_eq!(ChunkId(hits[0].record.id), private_id);
}

#[test]
fn rerank_reorders_by_the_cross_encoder() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), true);
    note(&kb, "a.md", "public", "the stock market and tax");
    note(&kb, "b.md", "public", "cats and dogs on the mat");
    note(&kb, "c.md", "public", "neural ranking models for retrieval and search");
    let mut req = SearchRequest::new("neural retrieval ranking models", 3);
    // RRF, whose fused scores are small fractions, so the logits stand out.
    req.fusion = Some(crate::kb::search::Fusion::Rrf { dense_share: 0.5 });
    let hits = kb.search(&req).unwrap();
    assert_eq!(titles(&hits)[0], "c.md");
    let scores: Vec<f32> = hits.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // Re-ranked scores are cross-encoder logits, not RRF fractions (< 0.04).
    assert!(scores[0] > 1.0, "{scores:?}");
    req.rerank = false;
    assert!(kb.search(&req).unwrap()[0].score < 0.1);
}

#[test]
fn filters_narrow_records_and_tags_match_exactly() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    let rec = |path: &str, status: &str, tags: &str, x: &str| {
        let mut caller = Metadata::new();
        caller.insert("category".into(), json!("job_application"));
        caller.insert("status".into(), json!(status));
        caller.insert("tags".into(), json!(tags));
        caller.insert("x_venue".into(), json!(x));
        kb.add_texts(
            "Application for a research role.",
            &caller,
            &own("note", "public", "local", Some(path)),
            "",
            None,
            &Actor::Cli,
        )
        .unwrap();
    };
    rec("a.md", "rejected", "|remote-first|", "nature");
    rec("b.md", "drafting", "|remote|", "cell");
    let mut req = SearchRequest::new("research role application", 5);
    req.filter.status = Some("rejected".into());
    assert_eq!(titles(&kb.search(&req).unwrap()), vec!["a.md"]);
    let mut req = SearchRequest::new("research role application", 5);
    req.filter.tags = vec!["remote".into()];
    assert_eq!(titles(&kb.search(&req).unwrap()), vec!["b.md"]);
    let mut req = SearchRequest::new("research role application", 5);
    req.filter.fields = vec![("x_venue".into(), "nature".into())];
    assert_eq!(titles(&kb.search(&req).unwrap()), vec!["a.md"]);
    assert_eq!(kb.metadata_value_counts("tags").unwrap().len(), 2);
    assert_eq!(kb.metadata_key_counts().unwrap()["status"], 2);
}

#[test]
fn replace_delete_and_metadata_only_updates() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    let old = note(&kb, "n.md", "public", "first version about volcanoes");
    let new = note(&kb, "n.md", "public", "second version about the weather");
    assert_eq!(kb.count().unwrap(), 1);
    assert!(kb.store().get(old[0].0).unwrap().is_none());
    let before_vec = kb.store().vector(new[0].0).unwrap().unwrap();
    let seq = kb.store().seq().unwrap();

    // Metadata-only: same ids, same vectors, a meta_updated journal entry.
    assert_eq!(
        kb.update_visibility("n.md", Visibility::Private, &Actor::Cli).unwrap(),
        1
    );
    assert_eq!(kb.store().vector(new[0].0).unwrap().unwrap(), before_vec);
    let j = kb.store().journal_since(seq).unwrap();
    assert_eq!(j.len(), 1, "one metadata-only journal entry");
    assert!(j[0].added.is_empty() && j[0].deleted.is_empty());
    assert_eq!(j[0].meta_updated, vec![new[0].0]);
    let mut req = SearchRequest::new("weather", 5);
    req.filter = Filter::public_only();
    assert!(
        kb.search(&req).unwrap().is_empty(),
        "reclassified note must leave public searches"
    );
    assert_eq!(kb.update_file_path("local", "moved.md", &Actor::Cli).unwrap(), 1);
    assert_eq!(
        kb.store().get(new[0].0).unwrap().unwrap().meta_str("file_path"),
        Some("moved.md")
    );

    assert_eq!(kb.delete_by_metadata("file_path", "moved.md", &Actor::Cli).unwrap(), 1);
    assert_eq!(kb.count().unwrap(), 0);
    assert!(kb.agreement().unwrap().ok());
}

#[test]
fn papers_are_idempotent_by_source_and_title_and_carry_their_header() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    let p = ops::Paper {
        title: "Attention Is All You Need".into(),
        authors: "Vaswani, Shazeer".into(),
        source: "https://arxiv.org/abs/1706.03762".into(),
        ..Default::default()
    };
    assert!(matches!(
        kb.add_paper(&p, "Transformers replace recurrence.", &Actor::Cli)
            .unwrap(),
        ops::PaperAdd::Added(_)
    ));
    assert!(matches!(
        kb.add_paper(&p, "again", &Actor::Cli).unwrap(),
        ops::PaperAdd::Skipped { .. }
    ));
    let other = ops::Paper {
        title: "attention is all you need!".into(),
        source: "https://b/x".into(),
        ..p.clone()
    };
    assert!(matches!(
        kb.add_paper(&other, "dup", &Actor::Cli).unwrap(),
        ops::PaperAdd::Skipped { .. }
    ));
    let rec = kb.store().iter_chunks().next().unwrap().unwrap();
    let rec = kb.store().get(rec.id).unwrap().unwrap();
    assert!(
        rec.embed_text
            .starts_with("Attention Is All You Need — Vaswani, Shazeer\n"),
        "{}",
        rec.embed_text
    );
    assert!(!rec.text.starts_with("Attention Is All"));
    let hits = kb.search(&SearchRequest::new("Shazeer", 1)).unwrap();
    assert_eq!(hits.len(), 1);
    kb.update_paper_metadata(&p.source, Some("Attention!"), None, Some("10.1/x"), &Actor::Cli)
        .unwrap();
    let docs = kb.list_documents(&Filter::default(), 10).unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].title, "Attention!");
    let page = kb.get_document_chunks(&p.source, 1).unwrap();
    assert_eq!(page.total_chunks, 1);
}

#[test]
fn the_model_guard_refuses_until_reindex() {
    let t = tempfile::tempdir().unwrap();
    {
        let kb = open(t.path(), false);
        note(&kb, "a.md", "public", "a note about dogs");
        kb.store()
            .set_meta_string("embed_model", "BAAI/bge-small-en-v1.5")
            .unwrap();
    }
    let kb = open(t.path(), false);
    let err = kb.search(&SearchRequest::new("dogs", 1)).unwrap_err().to_string();
    assert!(err.contains("jarvis kb reindex") && err.contains("bge-small"), "{err}");
    let err = kb
        .add_texts(
            "x",
            &Metadata::new(),
            &own("note", "public", "local", Some("b.md")),
            "",
            None,
            &Actor::Cli,
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("jarvis kb reindex"), "{err}");
    let report = kb.reindex(&|_, _| {}, &Cancel::new()).unwrap();
    assert_eq!(report.chunks, 1);
    assert_eq!(kb.search(&SearchRequest::new("dogs", 1)).unwrap().len(), 1);
    assert!(kb.agreement().unwrap().ok());
    drop(kb);
    // The switch is durable and the old generation is gone.
    let kb = open(t.path(), false);
    assert_eq!(kb.store().generation().unwrap(), 1);
    assert_eq!(kb.store().generations_present().unwrap(), vec![1]);
    assert!(!t.path().join("index/g0").exists());
    assert_eq!(kb.search(&SearchRequest::new("dogs", 1)).unwrap().len(), 1);
}

#[test]
fn reindex_adds_missing_paper_headers_idempotently() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    // A legacy paper chunk without the header in its embedded text.
    let mut caller = Metadata::new();
    caller.insert("title".into(), json!("Old Paper"));
    caller.insert("authors".into(), json!("Ada Lovelace"));
    kb.add_texts(
        "Body of an old paper.",
        &caller,
        &own("paper", "public", "https://x/old", None),
        "",
        None,
        &Actor::Cli,
    )
    .unwrap();
    assert_eq!(kb.reindex(&|_, _| {}, &Cancel::new()).unwrap().headers_added, 1);
    assert_eq!(kb.reindex(&|_, _| {}, &Cancel::new()).unwrap().headers_added, 0);
    let id = kb.store().all_ids().unwrap()[0];
    assert!(kb
        .store()
        .get(id)
        .unwrap()
        .unwrap()
        .embed_text
        .starts_with("Old Paper — Ada Lovelace\n"));
    assert_eq!(kb.search(&SearchRequest::new("Lovelace", 1)).unwrap().len(), 1);
}

#[test]
fn a_lost_derived_index_is_rebuilt_from_the_store_on_open() {
    let t = tempfile::tempdir().unwrap();
    {
        let kb = open(t.path(), false);
        note(&kb, "a.md", "public", "volcanoes erupt lava");
        note(&kb, "b.md", "public", "the weather is rainy");
    }
    std::fs::remove_dir_all(t.path().join("index/g0/bm25")).unwrap();
    // The exact copy is the dense index below the crossover (no arroy
    // trees exist at this size).
    assert!(!t.path().join("index/g0/vectors").exists());
    std::fs::remove_dir_all(t.path().join("index/g0/flat")).unwrap();
    let kb = open(t.path(), false);
    let a = kb.agreement().unwrap();
    assert!(a.ok(), "{a:?}");
    assert_eq!(
        titles(&kb.search(&SearchRequest::new("volcano lava", 1)).unwrap()),
        vec!["a.md"]
    );
}

/// Fail closed: a chunk stored without a visibility (an old store, a bug)
/// or with a misspelt one is private in every search, filter and listing —
/// never shown to a public-only (cloud) search.
#[test]
fn a_missing_or_unknown_visibility_is_private_everywhere() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    note(&kb, "pub.md", "public", "Volcanoes erupt molten basalt lava.");
    // Written below the Kb (as an older version or a bug could have): no
    // visibility at all, and a misspelt one.
    let vecs = kb
        .embedder()
        .unwrap()
        .embed_documents(&["Volcanoes erupt magma and lava.", "Volcano lava flows."])
        .unwrap();
    let mut chunks = Vec::new();
    for ((file, vis), v) in [("none.md", None), ("typo.md", Some("Public"))].into_iter().zip(vecs) {
        let mut m = own("note", "x", "local", Some(file));
        match vis {
            None => m.remove("visibility"),
            Some(s) => m.insert("visibility".into(), json!(s)),
        };
        chunks.push(crate::store::NewChunk {
            text: format!("Volcanoes erupt lava ({file})."),
            embed_text: format!("Volcanoes erupt lava ({file})."),
            meta: m,
            vector: v,
        });
    }
    kb.store().commit(chunks, &[], &kb.cause(&Actor::Cli)).unwrap();
    drop(kb);
    // Reopening replays the journal into both indexes.
    let kb = open(t.path(), false);
    let mut req = SearchRequest::new("volcano lava", 10);
    req.filter = Filter::public_only();
    for hybrid in [true, false] {
        req.hybrid = Some(hybrid);
        assert_eq!(titles(&kb.search(&req).unwrap()), vec!["pub.md"], "hybrid={hybrid}");
    }
    let (hits, private) = kb
        .search_with_privacy_check(&SearchRequest::new("volcano lava", 10), true)
        .unwrap();
    assert_eq!(titles(&hits), vec!["pub.md"]);
    assert!(private, "the unlabelled chunks count as private hits");
    let mut req = SearchRequest::new("volcano lava", 10);
    req.filter.visibility = Some(Visibility::Private);
    let mut private_titles = titles(&kb.search(&req).unwrap());
    private_titles.sort();
    assert_eq!(private_titles, vec!["none.md", "typo.md"]);
    let docs = kb.list_documents(&Filter::default(), 10).unwrap();
    for d in &docs {
        let want = if d.key == "pub.md" {
            Visibility::Public
        } else {
            Visibility::Private
        };
        assert_eq!(d.visibility, want, "{}", d.key);
    }
    assert_eq!(kb.find_document("none.md").unwrap().visibility, Visibility::Private);
    assert!(kb.list_documents(&Filter::public_only(), 10).unwrap().len() == 1);
}

/// A document must carry a valid visibility to be built, prepared or
/// re-labelled; nothing is stored otherwise.
#[test]
fn a_document_without_a_valid_visibility_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    let mut no_vis = own("note", "public", "local", Some("a.md"));
    no_vis.remove("visibility");
    for own_meta in [no_vis, own("note", "Public", "local", Some("a.md")), {
        let mut m = own("note", "public", "local", Some("a.md"));
        m.insert("visibility".into(), json!(true));
        m
    }] {
        let err = kb
            .add_texts("some text", &Metadata::new(), &own_meta, "", None, &Actor::Cli)
            .unwrap_err();
        assert!(matches!(err, KbError::NoVisibility { .. }), "{err}");
        // Built by hand, past build_text_documents: prepare refuses too.
        let doc = Document {
            text: "t".into(),
            embed_text: "t".into(),
            meta: own_meta.clone(),
        };
        assert!(matches!(
            kb.prepare(vec![doc.clone()], &crate::cancel::Cancel::new()),
            Err(KbError::NoVisibility { .. })
        ));
        assert!(matches!(
            kb.prepare_with_vectors(vec![doc], vec![vec![0.0; kb.dims()]]),
            Err(KbError::NoVisibility { .. })
        ));
    }
    // Caller metadata cannot smuggle one in either: own fields win, and
    // a caller's `visibility` is dropped, so the own field is still missing.
    let mut caller = Metadata::new();
    caller.insert("visibility".into(), json!("public"));
    let mut no_vis = own("note", "public", "local", Some("a.md"));
    no_vis.remove("visibility");
    assert!(kb.add_texts("text", &caller, &no_vis, "", None, &Actor::Cli).is_err());
    // Metadata-only updates cannot write an unknown value.
    note(&kb, "b.md", "public", "text");
    let mut f = Metadata::new();
    f.insert("visibility".into(), json!("publik"));
    assert!(matches!(
        kb.update_metadata_fields("b.md", &f, &Actor::Cli),
        Err(KbError::NoVisibility { .. })
    ));
    assert_eq!(kb.count().unwrap(), 1);
}

/// A store read error during a metadata update is returned, never taken
/// for "document absent": BM25 is not stamped past the change, so the next
/// open replays it and the filter field is right in both legs.
#[test]
fn a_store_read_error_in_a_metadata_update_is_returned_and_repaired_on_open() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    note(&kb, "n.md", "public", "Glaciers carve deep valleys.");
    let mut f = Metadata::new();
    f.insert("status".into(), json!("archived"));
    {
        let _fp = crate::failpoint::arm_for_thread("store_get");
        assert!(kb.update_metadata_fields("n.md", &f, &Actor::Cli).is_err());
    }
    let seq = kb.store().seq().unwrap();
    assert!(kb.indexes().bm25.committed_seq().unwrap().unwrap_or(0) < seq);
    drop(kb);
    let kb = open(t.path(), false);
    let mut req = SearchRequest::new("glaciers valleys", 5);
    req.filter.status = Some("archived".into());
    assert_eq!(titles(&kb.search(&req).unwrap()), vec!["n.md"]);
    assert!(kb.agreement().unwrap().ok());
}

/// A full disk between the store's commit and BM25's: the error names the
/// BM25 index and the fix; the index lags the store until the next search
/// (when no write runs) or write catches it up from the journal — never
/// stamped past a change it lacks.
#[test]
fn an_index_that_ran_out_of_disk_catches_up_before_the_next_write_or_search() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    note(&kb, "a.md", "public", "Basalt columns cool into hexagons.");
    let commit = |path: &str, text: &str| {
        kb.add_texts(
            text,
            &Metadata::new(),
            &own("note", "public", "local", Some(path)),
            "",
            Some(&ReplaceBy::FilePath(path.into())),
            &Actor::Cli,
        )
    };
    {
        let _fp = crate::failpoint::arm_for_thread("bm25_commit_disk_full");
        let e = commit("b.md", "Obsidian glass fractures conchoidally.").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("is full") && msg.contains("bm25") && msg.contains("free some space"),
            "{msg}"
        );
        assert_eq!(e.kind(), crate::error_kind::ErrorKind::Unavailable);
    }
    let a = kb.agreement().unwrap();
    assert!(a.bm25_seq.unwrap_or(0) < a.store_seq, "BM25 lags the store: {a:?}");
    // A search with no write running catches up first.
    let hits = kb.search(&SearchRequest::new("obsidian glass", 5)).unwrap();
    assert_eq!(titles(&hits).first().map(String::as_str), Some("b.md"));
    assert!(kb.agreement().unwrap().ok());

    // Again, and this time the next write catches up before it commits.
    {
        let _fp = crate::failpoint::arm_for_thread("bm25_commit_disk_full");
        commit("c.md", "Pumice floats on water.").unwrap_err();
    }
    commit("d.md", "Granite weathers into sand.").unwrap();
    assert!(kb.agreement().unwrap().ok(), "{:?}", kb.agreement().unwrap());
    let hits = kb.search(&SearchRequest::new("pumice floats", 5)).unwrap();
    assert_eq!(titles(&hits).first().map(String::as_str), Some("c.md"));
}

/// A commit builds its BM25 documents from what it commits: a read error
/// right after the store write cannot drop the new document from BM25.
#[test]
fn a_commit_indexes_what_it_committed_even_if_reads_fail() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), false);
    {
        let _fp = crate::failpoint::arm_for_thread("store_get");
        kb.add_texts(
            "Tectonic plates drift slowly.",
            &Metadata::new(),
            &own("note", "public", "local", Some("p.md")),
            "",
            None,
            &Actor::Cli,
        )
        .unwrap();
    }
    let mut req = SearchRequest::new("tectonic", 5);
    req.hybrid = Some(true);
    let hits = kb.search(&req).unwrap();
    assert_eq!(hits[0].bm25_rank, Some(1), "{hits:?}");
}

/// A loader that counts how often it is called.
fn counting_loader() -> (EmbedderLoader, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let loads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&loads);
    let loader: EmbedderLoader = Box::new(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(embedder())
    });
    (loader, loads)
}

/// Start-up cost: opening, counting and listing never load the model; the
/// first search does, once.
#[test]
fn the_embedder_is_loaded_only_when_something_embeds() {
    use std::sync::atomic::Ordering;
    let t = tempfile::tempdir().unwrap();
    let (loader, loads) = counting_loader();
    let spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
    let kb = Kb::open_lazy(t.path(), spec, loader, None, KbSettings::default()).unwrap();
    assert_eq!(kb.store().count().unwrap(), 0);
    assert!(kb.list_documents(&Filter::default(), 10).unwrap().is_empty());
    assert_eq!(kb.model_id(), DEFAULT_MODEL_ID);
    assert!(!kb.embedder_loaded());
    assert_eq!(loads.load(Ordering::SeqCst), 0);
    note(&kb, "a.md", "public", "# Otters\n\nRiver otters eat fish.");
    kb.search(&SearchRequest::new("otters", 3)).unwrap();
    assert!(kb.embedder_loaded());
    assert_eq!(loads.load(Ordering::SeqCst), 1);
}

/// The same for a configured re-ranker: nothing but a re-ranked search
/// loads it, once; a load that fails is that search's error, and a search
/// without re-ranking still works.
#[test]
fn the_reranker_is_loaded_only_by_a_reranked_search() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let open_with = |dir: &Path, fail: bool| {
        let loads = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&loads);
        let lazy = Reranker::Lazy(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            if fail {
                return Err("model.onnx is not an ONNX model".into());
            }
            Ok(reranker())
        }));
        let spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
        let kb = Kb::open_lazy(dir, spec, counting_loader().0, Some(lazy), KbSettings::default()).unwrap();
        (kb, loads)
    };
    let t = tempfile::tempdir().unwrap();
    {
        let (kb, loads) = open_with(t.path(), false);
        note(&kb, "a.md", "public", "cats and dogs on the mat");
        note(&kb, "c.md", "public", "neural ranking models for retrieval and search");
        assert!(kb.list_documents(&Filter::default(), 10).unwrap().len() == 2);
        let mut req = SearchRequest::new("neural retrieval ranking models", 2);
        req.rerank = false;
        kb.search(&req).unwrap();
        assert!(!kb.reranker_loaded());
        assert_eq!(loads.load(Ordering::SeqCst), 0);
        req.rerank = true;
        let hits = kb.search(&req).unwrap();
        assert!(hits[0].score > 1.0, "re-ranked by the cross-encoder: {hits:?}");
        kb.search(&req).unwrap();
        assert!(kb.reranker_loaded());
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }
    let (kb, _) = open_with(t.path(), true);
    let mut req = SearchRequest::new("neural retrieval ranking models", 2);
    let err = kb.search(&req).unwrap_err();
    assert!(matches!(err, KbError::RerankerLoad(_)), "{err}");
    assert!(err.to_string().contains("rag.rerank_model"), "{err}");
    req.rerank = false;
    assert_eq!(kb.search(&req).unwrap().len(), 2);
}

/// An owner unloads a model nobody used for the keep-alive, never one in
/// use or recently used, and the next search loads it again with the same
/// answers.
#[test]
fn an_idle_embedder_is_released_and_reloaded_on_the_next_search() {
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    let t = tempfile::tempdir().unwrap();
    let (loader, loads) = counting_loader();
    let spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
    let kb = Kb::open_lazy(t.path(), spec, loader, None, KbSettings::default()).unwrap();
    assert!(
        !kb.release_idle_embedder(Duration::ZERO),
        "nothing loaded, nothing to release"
    );
    note(&kb, "a.md", "public", "# Otters\n\nRiver otters eat fish.");
    let ids = |kb: &Kb| -> Vec<(u64, Option<usize>)> {
        kb.search(&SearchRequest::new("what do otters eat", 3))
            .unwrap()
            .into_iter()
            .map(|h| (h.record.id, h.dense_rank))
            .collect()
    };
    let before = ids(&kb);
    assert!(kb.embedder_loaded());
    assert!(
        !kb.release_idle_embedder(Duration::from_secs(3600)),
        "used a moment ago"
    );
    assert!(kb.embedder_loaded());
    {
        // In use right now: never unloaded under a running embedding.
        let _busy = kb.embedder().unwrap();
        assert!(!kb.release_idle_embedder(Duration::ZERO));
    }
    assert!(kb.release_idle_embedder(Duration::ZERO));
    assert!(!kb.embedder_loaded());
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    assert_eq!(ids(&kb), before, "the reloaded model answers alike");
    assert_eq!(loads.load(Ordering::SeqCst), 2);
}

/// A knowledge base opened with a model in hand has no way to reload it,
/// so it is never released.
#[test]
fn an_eagerly_opened_embedder_is_never_released() {
    let t = tempfile::tempdir().unwrap();
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    assert!(!kb.release_idle_embedder(std::time::Duration::ZERO));
    assert!(kb.embedder_loaded());
}

/// Every note's source is "local": asking for that source must not return
/// (or, for a cloud model, be stopped by) every note at once.
#[test]
fn a_source_shared_by_many_notes_names_no_single_document() {
    let t = tempfile::tempdir().unwrap();
    let kb = Kb::open(t.path(), embedder(), None, KbSettings::default()).unwrap();
    note(&kb, "otters.md", "public", "# Otters\n\nRiver otters eat fish.");
    note(&kb, "private/diary.md", "private", "# Diary\n\nA private entry.");
    let err = kb.get_document_chunks("local", 1).unwrap_err();
    assert!(
        err.to_string().contains("shared by 2 documents") && err.to_string().contains("file path"),
        "{err}"
    );
    let page = kb.get_document_chunks("otters.md", 1).unwrap();
    assert_eq!(page.total_chunks, 1);
    assert!(page.chunks.iter().all(|c| c.meta_str("file_path") == Some("otters.md")));
    assert_eq!(kb.get_document_chunks("nothing-here", 1).unwrap().total_chunks, 0);
}

/// What BM25 indexes as a title follows the document type: a note's title
/// and file stem are names, a paper's title is a headline (scored as body
/// text by default, matched whole by the exact-name leg).
#[test]
fn a_papers_title_is_a_headline_and_a_notes_title_a_name() {
    let rec = |doc_type: &str, file: Option<&str>| {
        let mut meta = own(doc_type, "public", "local", file);
        meta.insert("title".into(), json!("Graphene under strain"));
        crate::store::ChunkRecord {
            id: 1,
            text: "body".into(),
            embed_text: String::new(),
            meta,
        }
    };
    let paper = index_doc(&rec("paper", None));
    assert!(paper.titles.is_empty(), "{paper:?}");
    assert_eq!(paper.headlines, ["Graphene under strain"]);
    let note = index_doc(&rec("note", Some("notes/strain.md")));
    assert!(note.headlines.is_empty(), "{note:?}");
    assert_eq!(note.titles, ["Graphene under strain", "strain"]);
}

pub(crate) mod aggregate;
mod dense;
mod write_search;
