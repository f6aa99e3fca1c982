use super::*;
use crate::store::{Actor, Cause, NewChunk};
use serde_json::json;

/// A write by the user at the command line, keeping removed chunks.
fn cause() -> Cause {
    Cause::new(Actor::Cli, true)
}

fn rec(text: &str, pairs: &[(&str, serde_json::Value)]) -> NewChunk {
    let mut meta = Metadata::new();
    for (k, v) in pairs {
        meta.insert((*k).into(), v.clone());
    }
    NewChunk {
        text: text.into(),
        embed_text: text.into(),
        meta,
        vector: vec![1.0, 0.0],
    }
}

fn note(file: &str, vis: &str) -> NewChunk {
    rec(
        file,
        &[
            ("doc_type", json!("note")),
            ("source", json!("local")),
            ("file_path", json!(file)),
            ("visibility", json!(vis)),
            ("category", json!("work")),
        ],
    )
}

fn paper(source: &str, vis: &str) -> NewChunk {
    rec(
        source,
        &[
            ("doc_type", json!("paper")),
            ("source", json!(source)),
            ("visibility", json!(vis)),
            ("status", json!(3)),
        ],
    )
}

/// The summary as a full pass over the chunks computes it — the code path
/// a store without the summary takes on open, not the per-commit one.
/// The totals as the sum of the summary's entries.
fn summed(s: &Store) -> DocTotals {
    let mut t = DocTotals::default();
    for (k, e) in s.docs().unwrap() {
        t.apply(&k, &e, 1);
    }
    t
}

fn rebuilt(s: &Store) -> Vec<(String, DocEntry)> {
    assert_eq!(s.doc_totals().unwrap(), summed(s), "the totals follow the summary");
    let mut by_doc: BTreeMap<String, Vec<Metadata>> = BTreeMap::new();
    for r in s.iter_chunk_meta() {
        let r = r.unwrap();
        by_doc.entry(doc_key(&r.meta).to_string()).or_default().push(r.meta);
    }
    by_doc
        .into_iter()
        .filter_map(|(k, m)| DocEntry::from_chunks(&m).map(|e| (k, e)))
        .collect()
}

#[test]
fn the_summary_follows_every_commit_and_metadata_update() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let (_, a) = s
        .commit(
            vec![
                note("a.md", "public"),
                note("a.md", "public"),
                paper("arxiv:1", "public"),
            ],
            &[],
            &cause(),
        )
        .unwrap();
    let docs = s.docs().unwrap();
    assert_eq!(docs.len(), 2);
    let (k, e) = &docs[0];
    assert_eq!(k, "a.md");
    assert_eq!(e.chunks, 2);
    assert_eq!(e.doc_type, "note");
    assert_eq!(e.category.as_deref(), Some("work"));
    assert_eq!(e.chunks_by_type, BTreeMap::from([("note".to_string(), 2)]));
    let (k, e) = &docs[1];
    assert_eq!(k, "arxiv:1");
    assert_eq!(e.status.as_deref(), Some("3"), "a number is counted in its JSON form");
    assert!(!e.legacy_private_paper);
    let t = s.doc_totals().unwrap();
    assert_eq!((t.documents, t.chunks), (2, 3));
    assert_eq!(
        t.docs_by_type,
        BTreeMap::from([("note".into(), 1), ("paper".into(), 1)])
    );
    assert_eq!(t.categories, BTreeMap::from([("work".into(), 1)]));
    assert_eq!(t.statuses, BTreeMap::from([("3".into(), 1)]));
    assert_eq!(s.docs().unwrap(), rebuilt(&s));

    // One of a.md's two chunks goes: the note stays, with one chunk.
    s.commit(vec![], &[a[0]], &cause()).unwrap();
    assert_eq!(s.docs().unwrap()[0].1.chunks, 1);
    assert_eq!(s.docs().unwrap(), rebuilt(&s));

    // A paper chunk made private is flagged; a chunk moved to another
    // note leaves the first document empty, so its entry goes.
    let mut f = Metadata::new();
    f.insert("visibility".into(), json!("private"));
    s.update_metadata(&[a[2]], &f, &cause()).unwrap();
    assert!(s.docs().unwrap()[1].1.legacy_private_paper);
    assert_eq!(
        s.doc_totals().unwrap().legacy_private_papers,
        vec!["arxiv:1".to_string()]
    );
    let mut f = Metadata::new();
    f.insert("file_path".into(), json!("b.md"));
    s.update_metadata(&[a[1]], &f, &cause()).unwrap();
    let keys: Vec<_> = s.docs().unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec!["arxiv:1", "b.md"]);
    assert_eq!(s.docs().unwrap(), rebuilt(&s));

    // Whole documents replaced and deleted in one commit.
    let b_ids = s.ids_by(LookupField::FilePath, "b.md").unwrap();
    let p_ids = s.ids_by(LookupField::Source, "arxiv:1").unwrap();
    let gone: Vec<_> = b_ids.iter().chain(&p_ids).copied().collect();
    s.commit(
        vec![note("b.md", "private"), note("b.md", "private"), note("c.md", "public")],
        &gone,
        &cause(),
    )
    .unwrap();
    let docs = s.docs().unwrap();
    assert_eq!(
        docs.iter().map(|(k, e)| (k.as_str(), e.chunks)).collect::<Vec<_>>(),
        vec![("b.md", 2), ("c.md", 1)]
    );
    assert_eq!(docs, rebuilt(&s));
}

#[test]
fn chunks_without_a_source_or_path_are_one_document() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let (_, ids) = s
        .commit(
            vec![rec("x", &[("doc_type", json!("misc"))]), rec("y", &[])],
            &[],
            &cause(),
        )
        .unwrap();
    let docs = s.docs().unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].0, "");
    assert_eq!(docs[0].1.chunks, 2);
    assert_eq!(docs[0].1.chunks_by_type, BTreeMap::from([("misc".to_string(), 1)]));
    s.commit(vec![], &ids, &cause()).unwrap();
    assert!(s.docs().unwrap().is_empty());
    assert_eq!(s.doc_totals().unwrap(), DocTotals::default());
}

#[test]
fn a_store_without_the_summary_gets_it_built_once_on_open() {
    let t = tempfile::tempdir().unwrap();
    let want = {
        let s = Store::open(t.path()).unwrap();
        s.commit(vec![note("a.md", "public"), paper("doi:9", "public")], &[], &cause())
            .unwrap();
        let want = s.docs().unwrap();
        // What a store from before the summary looks like.
        let mut b = s.h().unwrap().db.batch();
        b.remove(&s.h().unwrap().docs, entry_key("a.md"));
        b.remove(&s.h().unwrap().docs, entry_key("doi:9"));
        b.remove(&s.h().unwrap().meta, DOCS_MAP);
        b.remove(&s.h().unwrap().meta, DOC_TOTALS);
        b.commit().unwrap();
        assert!(s.docs().unwrap().is_empty());
        want
    };
    let s = Store::open(t.path()).unwrap();
    assert_eq!(want.len(), 2);
    assert_eq!(s.docs().unwrap(), want);
    assert_eq!(s.doc_totals().unwrap(), summed(&s));
    assert_eq!(s.doc_totals().unwrap().documents, 2);
}

#[test]
fn a_very_long_document_key_is_stored_hashed_and_read_back_whole() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let long = format!("https://example.org/{}", "x".repeat(5000));
    s.commit(vec![paper(&long, "public"), paper("arxiv:2", "public")], &[], &cause())
        .unwrap();
    let keys: Vec<_> = s.docs().unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec!["arxiv:2".to_string(), long]);
}
