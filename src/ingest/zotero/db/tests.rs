//! Reading Zotero's database: a small library built on Zotero's own
//! schema (`tests/fixtures/zotero/schema.sql`), its write-ahead log, the
//! trash, and files that are not a Zotero database at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::read;
use crate::ingest::zotero::attach::AttachmentAt;
use crate::ingest::zotero::ZoteroError;
use crate::pdf::AnnotationKind;

const SCHEMA: &str = include_str!("../../../../tests/fixtures/zotero/schema.sql");
const LIBRARY: &str = include_str!("../../../../tests/fixtures/zotero/library.sql");

fn build(dir: &Path, extra: &str) -> PathBuf {
    let db = dir.join("zotero.sqlite");
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(LIBRARY).unwrap();
    conn.execute_batch(extra).unwrap();
    db
}

/// Every file under `dir` with its size and modification time.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        out.insert(e.path(), (m.len(), m.modified().unwrap()));
    }
    out
}

#[test]
fn the_library_reads_as_items_with_their_children() {
    let t = tempfile::tempdir().unwrap();
    let db = build(t.path(), "");
    let before = listing(t.path());
    let (items, skipped) = read(&db).unwrap();
    assert_eq!(listing(t.path()), before, "nothing is written beside the database");
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(items.len(), 2, "{items:?}");

    let paper = &items[0];
    assert_eq!(paper.key, "PAPERKEY");
    assert_eq!(paper.source, "zotero://select/library/items/PAPERKEY");
    assert_eq!(paper.item_type, "journalArticle");
    assert_eq!(paper.fields["title"], "Reading Order in Two-Column Layouts");
    assert_eq!(paper.fields["date"], "2021-07-15 July 15, 2021");
    assert_eq!(paper.fields["publicationTitle"], "Journal of Layout");
    let names: Vec<(&str, &str, &str)> = paper
        .creators
        .iter()
        .map(|c| (c.first.as_str(), c.last.as_str(), c.kind.as_str()))
        .collect();
    assert_eq!(names, [("Ada", "Example", "author"), ("Brian", "Sample", "author")]);
    assert_eq!(paper.collections, ["Layout/Reading order"]);
    assert_eq!(paper.tags, ["to-read"], "the publisher's automatic tag is left out");
    assert_eq!(
        paper.notes,
        ["My reading note: compare with the XY-cut & the Docstrum methods."],
        "HTML becomes text and the script's content is gone"
    );
    assert_eq!(paper.attachments.len(), 1);
    let a = &paper.attachments[0];
    assert_eq!(
        a.at,
        AttachmentAt::Stored {
            key: "ATTACH01".into(),
            name: "paper.pdf".into()
        }
    );
    assert_eq!(a.content_type, "application/pdf");
    assert_eq!(a.annotations.len(), 1);
    let h = &a.annotations[0];
    assert_eq!((h.kind, h.page), (AnnotationKind::Highlight, 1));
    assert_eq!(h.text, "a gutter detector finds the white band between columns");
    assert_eq!(h.note_text, "the key idea");
    assert_eq!(
        (paper.zotero_key.as_deref(), paper.zotero_library),
        (Some("PAPERKEY"), Some(1))
    );

    let book = &items[1];
    assert_eq!(book.key, "BOOKKEY1");
    assert_eq!(book.creators[0].last, "World Health Organization");
    assert_eq!(book.collections, ["Layout"]);
    assert!(book.attachments.is_empty());
}

#[test]
fn trash_feeds_groups_standalone_notes_and_zotero_own_annotations() {
    let t = tempfile::tempdir().unwrap();
    let db = build(
        t.path(),
        "INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (2, 'group', 1, 1), (3, 'feed', 0, 0);
         INSERT INTO groups (groupID, libraryID, name, description, version) VALUES (4711, 2, 'Lab', '', 0);
         INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES
             (10, 22, 1, 'TRASHED1'), (11, 28, 1, 'LONENOTE'), (12, 22, 2, 'GROUPKEY'), (13, 22, 3, 'FEEDITEM'),
             (14, 1, 1, 'ANNOT002'), (15, 1, 1, 'ANNOT003'), (16, 1, 1, 'ANNOT004');
         INSERT INTO deletedItems (itemID) VALUES (10), (15);
         INSERT INTO itemNotes (itemID, parentItemID, note) VALUES (11, NULL, '<p>Ideas for next week</p>');
         INSERT INTO itemAnnotations (itemID, parentItemID, type, text, comment, sortIndex, position, isExternal) VALUES
             (14, 2, 1, 'already in the PDF file', '', '00000|000001|00000', '{\"pageIndex\":1}', 1),
             (15, 2, 1, 'deleted highlight', '', '00000|000002|00000', '{\"pageIndex\":1}', 0),
             (16, 2, 3, '', 'an image region with a comment', '00001|000000|00000', '{\"pageIndex\":2}', 0);",
    );
    let (items, skipped) = read(&db).unwrap();
    let keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(
        keys,
        ["PAPERKEY", "BOOKKEY1", "TRASHED1", "GROUPKEY"],
        "a feed's items are not the user's"
    );
    assert!(items[2].trashed);
    assert_eq!(items[3].source, "zotero://select/groups/4711/items/GROUPKEY");
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].key, "LONENOTE");
    assert!(skipped[0].reason.contains("standalone note"), "{skipped:?}");
    // The imported-from-file and the trashed annotations are left out;
    // an image region counts by its comment.
    let notes: Vec<(AnnotationKind, u32, &str)> = items[0].attachments[0]
        .annotations
        .iter()
        .map(|a| (a.kind, a.page, a.text.as_str()))
        .collect();
    assert_eq!(
        notes,
        [
            (
                AnnotationKind::Highlight,
                1,
                "a gutter detector finds the white band between columns"
            ),
            (AnnotationKind::Comment, 3, "an image region with a comment")
        ]
    );
}

#[test]
fn what_is_only_in_the_write_ahead_log_is_read_and_the_live_files_are_untouched() {
    let t = tempfile::tempdir().unwrap();
    let db = build(t.path(), "");
    // Zotero's side: a connection in WAL mode with a write not yet
    // checkpointed into the main file, still open.
    let zotero = Connection::open(&db).unwrap();
    zotero
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (20, 22, 1, 'WALONLY1');",
        )
        .unwrap();
    assert!(t.path().join("zotero.sqlite-wal").exists());
    let before = listing(t.path());
    let (items, _) = read(&db).unwrap();
    assert!(items.iter().any(|i| i.key == "WALONLY1"), "the copy includes the -wal");
    assert_eq!(
        listing(t.path()),
        before,
        "no -shm, journal or lock file was made beside the live database"
    );
    drop(zotero);
}

#[test]
fn a_damaged_or_foreign_file_is_a_clear_error() {
    let t = tempfile::tempdir().unwrap();
    let junk = t.path().join("zotero.sqlite");
    std::fs::write(&junk, b"this is not a database at all, just text pretending").unwrap();
    let e = read(&junk).unwrap_err();
    assert!(matches!(e, ZoteroError::Database { .. }), "{e:?}");
    assert!(e.to_string().contains("export the library"), "{e}");

    // The right header, the rest cut off.
    let t2 = tempfile::tempdir().unwrap();
    let db = build(t2.path(), "");
    let bytes = std::fs::read(&db).unwrap();
    let cut = t.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let e = read(&cut).unwrap_err();
    assert!(matches!(e, ZoteroError::Database { .. }), "{e:?}");

    let other = t.path().join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);")
        .unwrap();
    let e = read(&other).unwrap_err();
    assert!(matches!(e, ZoteroError::NotZotero { .. }), "{e:?}");
    assert!(e.to_string().contains("items"), "{e}");
}
