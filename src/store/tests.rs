use super::*;
use serde_json::json;

/// A write by the user at the command line, keeping removed chunks.
fn cause() -> Cause {
    Cause::new(Actor::Cli, true)
}

fn chunk(text: &str, source: &str, file: Option<&str>) -> NewChunk {
    let mut meta = Metadata::new();
    meta.insert("source".into(), json!(source));
    meta.insert("doc_type".into(), json!("note"));
    if let Some(f) = file {
        meta.insert("file_path".into(), json!(f));
    }
    NewChunk {
        text: text.into(),
        embed_text: format!("H\n{text}"),
        meta,
        vector: vec![0.5, -1.0, 2.0],
    }
}

#[test]
fn commit_assigns_ids_journals_and_reads_back() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    assert_eq!(s.seq().unwrap(), 0);
    let (seq, ids) = s
        .commit(
            vec![chunk("a", "local", Some("n/a.md")), chunk("b", "local", Some("n/b.md"))],
            &[],
            &cause(),
        )
        .unwrap();
    assert_eq!(seq, 1);
    assert_eq!(ids.len(), 2);
    let r = s.get(ids[0]).unwrap().unwrap();
    assert_eq!(r.text, "a");
    assert_eq!(r.embed_text, "H\na");
    assert_eq!(s.vector(ids[1]).unwrap().unwrap(), vec![0.5, -1.0, 2.0]);
    assert_eq!(s.ids_by(LookupField::FilePath, "n/a.md").unwrap(), vec![ids[0]]);
    assert_eq!(s.ids_by(LookupField::Source, "local").unwrap(), ids);

    // Replace: delete + add in one commit; ids are never reused.
    let (seq, new) = s
        .commit(vec![chunk("a2", "local", Some("n/a.md"))], &[ids[0]], &cause())
        .unwrap();
    assert_eq!(seq, 2);
    assert!(new[0] > ids[1]);
    assert!(s.get(ids[0]).unwrap().is_none());
    assert!(s.vector(ids[0]).unwrap().is_none());
    assert_eq!(s.ids_by(LookupField::FilePath, "n/a.md").unwrap(), new);
    let j = s.journal_since(1).unwrap();
    assert_eq!(
        j,
        vec![JournalEntry {
            seq: 2,
            added: new.clone(),
            deleted: vec![ids[0]],
            meta_updated: vec![]
        }]
    );
    assert_eq!(s.count().unwrap(), 2);
}

#[test]
fn metadata_updates_move_lookups_and_keep_vectors() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let (_, ids) = s
        .commit(vec![chunk("a", "local", Some("old.md"))], &[], &cause())
        .unwrap();
    let mut f = Metadata::new();
    f.insert("file_path".into(), json!("new.md"));
    f.insert("visibility".into(), json!("private"));
    let seq = s.update_metadata(&ids, &f, &cause()).unwrap();
    assert!(s.ids_by(LookupField::FilePath, "old.md").unwrap().is_empty());
    assert_eq!(s.ids_by(LookupField::FilePath, "new.md").unwrap(), ids);
    let r = s.get(ids[0]).unwrap().unwrap();
    assert_eq!(r.meta_str("visibility"), Some("private"));
    assert_eq!(s.vector(ids[0]).unwrap().unwrap(), vec![0.5, -1.0, 2.0]);
    assert_eq!(s.journal_since(seq - 1).unwrap()[0].meta_updated, ids);
}

#[test]
fn survives_reopen_and_prunes_journal() {
    let t = tempfile::tempdir().unwrap();
    {
        let s = Store::open(t.path()).unwrap();
        s.commit(vec![chunk("a", "x", None)], &[], &cause()).unwrap();
        s.commit(vec![chunk("b", "y", None)], &[], &cause()).unwrap();
        s.set_meta_string("embed_model", "m").unwrap();
    }
    let s = Store::open(t.path()).unwrap();
    assert_eq!(s.seq().unwrap(), 2);
    assert_eq!(s.count().unwrap(), 2);
    assert_eq!(s.meta_string("embed_model").unwrap().as_deref(), Some("m"));
    s.prune_journal(1).unwrap();
    assert_eq!(s.journal_since(0).unwrap().len(), 1);
}

#[test]
fn a_second_owner_is_refused_with_the_holder_named() {
    let t = tempfile::tempdir().unwrap();
    let _s = Store::open(t.path()).unwrap();
    let err = match Store::open(t.path()) {
        Err(e) => e,
        Ok(_) => panic!("second open must fail"),
    };
    let msg = err.to_string();
    assert!(msg.contains(&format!("pid {}", std::process::id())), "{msg}");
    assert!(msg.contains("in use by"), "{msg}");
}

#[test]
fn generations_switch_atomically() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let (_, ids) = s.commit(vec![chunk("a", "x", None)], &[], &cause()).unwrap();
    assert_eq!(s.generation().unwrap(), 0);
    s.put_embeddings(1, &[(ids[0], "new header\na".into(), vec![9.0])])
        .unwrap();
    // Not visible until the switch.
    assert_eq!(s.get(ids[0]).unwrap().unwrap().embed_text, "H\na");
    assert_eq!(s.generations_present().unwrap(), vec![0, 1]);
    let seq = s.switch_generation(1, "model-b").unwrap();
    assert_eq!(seq, 2);
    assert_eq!(s.get(ids[0]).unwrap().unwrap().embed_text, "new header\na");
    assert_eq!(s.vector(ids[0]).unwrap().unwrap(), vec![9.0]);
    assert_eq!(s.meta_string("embed_model").unwrap().as_deref(), Some("model-b"));
    s.drop_generation(0).unwrap();
    assert_eq!(s.generations_present().unwrap(), vec![1]);
    // New commits land in the current generation.
    let (_, more) = s.commit(vec![chunk("b", "y", None)], &[], &cause()).unwrap();
    assert_eq!(s.embedding(1, more[0]).unwrap().unwrap().0, "H\nb");
}

fn noted(text: &str, file: &str, hash: &str) -> NewChunk {
    let mut c = chunk(text, "local", Some(file));
    c.meta.insert("content_hash".into(), json!(hash));
    c.meta.insert("mtime".into(), json!(1_700_000_000));
    c.meta.insert("file_size".into(), json!(42));
    c.meta.insert("meta_schema".into(), json!(4));
    c.meta.insert("visibility".into(), json!("public"));
    c
}

fn paths(s: &Store) -> Vec<(String, Option<String>)> {
    s.files()
        .unwrap()
        .into_iter()
        .map(|(p, e)| (p, e.content_hash))
        .collect()
}

#[test]
fn the_per_file_map_follows_every_commit_in_the_same_batch() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    // Two files, one with two chunks; a chunk without a path is not a file.
    let (_, a) = s
        .commit(
            vec![
                noted("a0", "a.md", "h1"),
                noted("a1", "a.md", "h1"),
                noted("b0", "b.md", "h2"),
                chunk("p", "paper", None),
            ],
            &[],
            &cause(),
        )
        .unwrap();
    assert_eq!(
        paths(&s),
        vec![("a.md".into(), Some("h1".into())), ("b.md".into(), Some("h2".into()))]
    );
    let e = s.file("a.md").unwrap().unwrap();
    assert_eq!(
        (e.mtime, e.file_size, e.meta_schema),
        (Some(1_700_000_000), Some(42), Some(4))
    );
    assert_eq!(
        (e.doc_type.as_deref(), e.visibility.as_deref()),
        (Some("note"), Some("public"))
    );

    // Deleting one chunk of a.md keeps its entry; deleting the last drops it.
    s.commit(vec![], &[a[0]], &cause()).unwrap();
    assert!(s.file("a.md").unwrap().is_some());
    s.commit(vec![], &[a[1]], &cause()).unwrap();
    assert!(s.file("a.md").unwrap().is_none());

    // Replace in one commit: the entry is the new version's.
    s.commit(vec![noted("b0'", "b.md", "h3")], &[a[2]], &cause()).unwrap();
    assert_eq!(paths(&s), vec![("b.md".into(), Some("h3".into()))]);

    // A metadata update rewrites the entry; a move renames it.
    let ids = s.ids_by(LookupField::FilePath, "b.md").unwrap();
    let mut f = Metadata::new();
    f.insert("visibility".into(), json!("private"));
    s.update_metadata(&ids, &f, &cause()).unwrap();
    assert_eq!(s.file("b.md").unwrap().unwrap().visibility.as_deref(), Some("private"));
    let mut f = Metadata::new();
    f.insert("file_path".into(), json!("c.md"));
    s.update_metadata(&ids, &f, &cause()).unwrap();
    assert_eq!(paths(&s), vec![("c.md".into(), Some("h3".into()))]);
}

#[test]
fn a_store_without_the_map_gets_it_built_once_on_open() {
    let t = tempfile::tempdir().unwrap();
    {
        let s = Store::open(t.path()).unwrap();
        s.commit(
            vec![noted("a0", "a.md", "h1"), noted("b0", "b.md", "h2")],
            &[],
            &cause(),
        )
        .unwrap();
        // What a store from before the map looks like: no entries, no mark.
        let mut b = s.h().unwrap().db.batch();
        b.remove(&s.h().unwrap().files, "a.md");
        b.remove(&s.h().unwrap().files, "b.md");
        b.remove(&s.h().unwrap().meta, "files_map");
        b.commit().unwrap();
        assert!(s.files().unwrap().is_empty());
    }
    let s = Store::open(t.path()).unwrap();
    assert_eq!(
        paths(&s),
        vec![("a.md".into(), Some("h1".into())), ("b.md".into(), Some("h2".into()))]
    );
}

fn bulk_store(dir: &Path) -> Store {
    Store::open_with(dir, StoreOptions { bulk_write_bytes: 1 }).unwrap()
}

fn journal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("store"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jnl"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn big(i: usize, file: &str) -> NewChunk {
    // Text and vector that do not compress (the journal compresses values).
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let words: Vec<String> = (0..300).map(|_| format!("{:x}", next() % 0xfffff)).collect();
    let mut c = noted(&words.join(" "), file, "h");
    c.vector = (0..384).map(|_| (next() % 1000) as f32 / 7.0).collect();
    c
}

#[test]
fn a_bulk_commit_keeps_its_records_and_vectors_out_of_the_journal() {
    let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let batch: Vec<_> = (0..200).map(|i| big(i, &format!("n{}.md", i / 4))).collect();
    let never = StoreOptions {
        bulk_write_bytes: usize::MAX,
    };
    let plain = Store::open_with(t1.path(), never).unwrap();
    plain.commit(batch.clone(), &[], &cause()).unwrap();
    let bulk = bulk_store(t2.path());
    let (_, ids) = bulk.commit(batch.clone(), &[], &cause()).unwrap();
    // A journal in use is preallocated; the replay on open cuts it to what
    // it holds (what the next open reads again).
    drop((plain, bulk));
    let _plain = Store::open_with(t1.path(), never).unwrap();
    let bulk = bulk_store(t2.path());
    let (jp, jb) = (journal_bytes(t1.path()), journal_bytes(t2.path()));

    // ~1 MB of text and vectors once compressed: all of it in the plain store's journal,
    // almost none of it in the bulk one's.
    assert!(jp > 800_000, "plain journal {jp}");
    assert!(jb < jp / 10, "bulk journal {jb} vs plain {jp}");
    assert_eq!(bulk.count().unwrap(), 200);
    let r = bulk.get(ids[7]).unwrap().unwrap();
    assert_eq!(r.text, batch[7].text);
    assert_eq!(r.embed_text, batch[7].embed_text);
    assert_eq!(bulk.vector(ids[7]).unwrap().unwrap(), batch[7].vector);
    assert_eq!(bulk.ids_by(LookupField::FilePath, "n1.md").unwrap(), ids[4..8].to_vec());
    assert_eq!(bulk.files().unwrap().len(), 50);
    assert_eq!(bulk.docs().unwrap().len(), 50);
    assert_eq!(bulk.journal_since(0).unwrap()[0].added, ids);
    // Replacing one note deletes through the batch and adds through ingestion.
    let (_, new) = bulk.commit(vec![big(1000, "n1.md")], &ids[4..8], &cause()).unwrap();
    assert!(bulk.get(ids[4]).unwrap().is_none());
    assert_eq!(bulk.ids_by(LookupField::FilePath, "n1.md").unwrap(), new);
    assert_eq!(bulk.count().unwrap(), 197);
}

#[test]
fn the_records_of_an_unfinished_bulk_commit_are_invisible_and_removed_on_open() {
    let t = tempfile::tempdir().unwrap();
    let kept = {
        let s = bulk_store(t.path());
        let (_, kept) = s.commit(vec![big(0, "a.md")], &[], &cause()).unwrap();
        // What a crash between the ingestion and the batch leaves: records
        // and vectors at and above next_id, nothing else.
        let next = s.meta_u64(NEXT_ID).unwrap();
        let orphans: Vec<_> = (next..next + 3).collect();
        let recs = orphans
            .iter()
            .map(|&id| {
                let rec = ChunkRecord {
                    id,
                    text: "orphan".into(),
                    embed_text: String::new(),
                    meta: big(9, "orphan.md").meta,
                };
                (be(id).to_vec(), serde_json::to_vec(&rec).unwrap())
            })
            .collect();
        s.ingest(&s.h().unwrap().chunks, recs).unwrap();
        let vecs = orphans
            .iter()
            .map(|&id| (embed_key(0, id).to_vec(), encode_embed("orphan", &[1.0; 384])))
            .collect();
        s.ingest(&s.h().unwrap().embeds, vecs).unwrap();
        let looks = orphans
            .iter()
            .map(|&id| (lookup_key(b'f', "orphan.md", id), Vec::new()))
            .collect();
        s.ingest(&s.h().unwrap().by_key, looks).unwrap();
        // Then the map entries, which overwrite in place: a.md's with a
        // hash its committed chunks do not have, and the orphan file's.
        let file = |hash: &str| FileEntry {
            content_hash: Some(hash.into()),
            ..FileEntry::default()
        };
        let files = vec![
            (b"a.md".to_vec(), serde_json::to_vec(&file("not-committed")).unwrap()),
            (b"orphan.md".to_vec(), serde_json::to_vec(&file("orphan")).unwrap()),
        ];
        s.ingest(&s.h().unwrap().files, files).unwrap();
        let entry = |n| DocEntry {
            doc_type: "note".into(),
            chunks: n,
            ..DocEntry::default()
        };
        let mut docs = vec![
            (docs::entry_key("a.md"), docs::encode("a.md", entry(7)).unwrap()),
            (
                docs::entry_key("orphan.md"),
                docs::encode("orphan.md", entry(3)).unwrap(),
            ),
        ];
        docs.sort();
        s.ingest(&s.h().unwrap().docs, docs).unwrap();
        assert!(s.ids_by(LookupField::FilePath, "orphan.md").unwrap().is_empty());
        assert_eq!(s.all_ids().unwrap(), kept);
        assert_eq!(s.count().unwrap(), 1);
        assert_eq!(s.iter_chunks().count(), 1);
        assert_eq!(s.iter_chunk_meta().count(), 1);
        kept
    };
    let s = bulk_store(t.path());
    let next = s.meta_u64(NEXT_ID).unwrap();
    assert_eq!(
        s.h().unwrap().chunks.range(be(next)..).count(),
        0,
        "orphan records removed"
    );
    // Both maps say again what the committed chunks say.
    assert_eq!(paths(&s), vec![("a.md".into(), Some("h".into()))]);
    let docs = s.docs().unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!((docs[0].0.as_str(), docs[0].1.chunks), ("a.md", 1));
    assert_eq!(
        (s.doc_totals().unwrap().documents, s.doc_totals().unwrap().chunks),
        (1, 1)
    );
    assert_eq!(
        s.h().unwrap().embeds.range(embed_key(0, next)..).count(),
        0,
        "orphan vectors removed"
    );
    assert_eq!(
        s.h().unwrap().by_key.prefix(lookup_prefix(b'f', "orphan.md")).count(),
        0,
        "orphan lookups removed"
    );
    // Their ids are given out again, to a commit that finishes.
    let (_, ids) = s.commit(vec![big(1, "b.md")], &[], &cause()).unwrap();
    assert_eq!(ids, vec![next]);
    assert_eq!(s.get(next).unwrap().unwrap().text, big(1, "b.md").text);
    assert_eq!(s.all_ids().unwrap(), vec![kept[0], next]);
}

#[test]
fn small_keyspaces_reach_tables_long_before_fjall_s_default_memtable_size() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    // ~1 MB into the lookups and the per-file map, 64 KB per commit.
    for round in 0..16 {
        let batch = (0..64)
            .map(|i| noted("x", &format!("{round}/{i}/{}.md", "p".repeat(900)), "h"))
            .collect();
        s.commit(batch, &[], &cause()).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while s.h().unwrap().files.disk_space() == 0 || s.h().unwrap().by_key.disk_space() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the small keyspaces were never flushed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_source_or_path_too_long_for_a_key_is_refused_and_nothing_is_written() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let long = "x".repeat(70_000);
    let err = s
        .commit(
            vec![chunk("a", "local", Some("ok.md")), chunk("b", &long, None)],
            &[],
            &cause(),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::LookupTooLong {
                field: "source",
                len: 70_000
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("shorten it"));
    assert_eq!(s.count().unwrap(), 0);
    assert_eq!(s.seq().unwrap(), 0);
    let (_, ids) = s
        .commit(vec![chunk("a", "local", Some("ok.md"))], &[], &cause())
        .unwrap();
    let mut f = Metadata::new();
    f.insert("file_path".into(), json!(long));
    assert!(matches!(
        s.update_metadata(&ids, &f, &cause()),
        Err(StoreError::LookupTooLong { field: "file_path", .. })
    ));
    assert_eq!(s.ids_by(LookupField::FilePath, "ok.md").unwrap(), ids);
}

/// Hex that does not compress (the journal compresses).
fn noise(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from_digit((x % 16) as u32, 16).unwrap_or('0')
        })
        .collect()
}

#[test]
fn a_bulk_commit_keeps_its_per_file_and_per_document_entries_out_of_the_journal() {
    let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // 200 one-chunk notes with 900-byte paths: each path is the key of a
    // lookup, a per-file entry and a per-document entry (~540 KB of keys).
    let batch: Vec<_> = (0..200)
        .map(|i| noted("x", &format!("{}.md", noise(i, 900)), "h"))
        .collect();
    let never = StoreOptions {
        bulk_write_bytes: usize::MAX,
    };
    let plain = Store::open_with(t1.path(), never).unwrap();
    plain.commit(batch.clone(), &[], &cause()).unwrap();
    let bulk = bulk_store(t2.path());
    bulk.commit(batch.clone(), &[], &cause()).unwrap();
    drop((plain, bulk));
    let plain = Store::open_with(t1.path(), never).unwrap();
    let bulk = bulk_store(t2.path());
    let (jp, jb) = (journal_bytes(t1.path()), journal_bytes(t2.path()));
    assert!(jp > 500_000, "plain journal {jp}");
    // What is left: the journal entry, the totals, the counters.
    assert!(jb < 20_000, "bulk journal {jb} (plain {jp})");
    assert_eq!(bulk.files().unwrap(), plain.files().unwrap());
    assert_eq!(bulk.docs().unwrap(), plain.docs().unwrap());
    assert_eq!(bulk.doc_totals().unwrap(), plain.doc_totals().unwrap());
}

#[test]
fn a_bulk_commit_that_fails_before_its_batch_leaves_the_maps_as_they_were() {
    let t = tempfile::tempdir().unwrap();
    let s = bulk_store(t.path());
    let (_, a) = s.commit(vec![big(0, "a.md"), big(1, "a.md")], &[], &cause()).unwrap();
    let before = (
        paths(&s),
        s.docs().unwrap(),
        s.doc_totals().unwrap(),
        s.all_ids().unwrap(),
    );
    // Replace a.md with a new version and add b.md; the batch fails after
    // every ingestion.
    let mut a2 = big(2, "a.md");
    a2.meta.insert("content_hash".into(), json!("h2"));
    let err = {
        let _armed = crate::failpoint::arm_for_thread("store_bulk_batch");
        s.commit(vec![a2.clone(), big(3, "b.md")], &a, &cause()).unwrap_err()
    };
    assert!(err.to_string().contains("store_bulk_batch"), "{err}");
    let after = (
        paths(&s),
        s.docs().unwrap(),
        s.doc_totals().unwrap(),
        s.all_ids().unwrap(),
    );
    assert_eq!(
        after, before,
        "nothing of the failed commit is visible, in this process"
    );
    // The same commit then lands whole, on the same ids.
    let (_, ids) = s.commit(vec![a2, big(3, "b.md")], &a, &cause()).unwrap();
    assert_eq!(ids, vec![a[1] + 1, a[1] + 2]);
    assert_eq!(
        paths(&s),
        vec![("a.md".into(), Some("h2".into())), ("b.md".into(), Some("h".into()))]
    );
    assert_eq!(s.doc_totals().unwrap().chunks, 2);
}
