//! `jarvis kb import-zotero` through the real binary, on a Zotero library
//! the test builds with Zotero's own schema (`tests/fixtures/zotero/`):
//! two items, one with a real PDF in `storage/`, a highlight Zotero keeps
//! in its own table and a note; a re-run that adds nothing; changes that
//! replace one item; the same items from a BibTeX export; hostile input
//! (a damaged database, a broken BibTeX entry, attachments that lead out
//! of storage) refused or skipped with the reason; the same import through
//! a running owner.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value;

use crate::support::fs::pdf_fixture as fixture;
use crate::support::owner::{signal, start_owner};
use crate::support::{run, Sandbox};

const SCHEMA: &str = include_str!("../fixtures/zotero/schema.sql");
const LIBRARY: &str = include_str!("../fixtures/zotero/library.sql");

/// `<sandbox>/Zotero`: the database and `storage/ATTACH01/paper.pdf`.
fn zotero(sb: &Sandbox, extra_sql: &str) -> PathBuf {
    let dir = sb.dir.path().join("Zotero");
    std::fs::create_dir_all(dir.join("storage/ATTACH01")).unwrap();
    std::fs::copy(fixture("paper_annotated.pdf"), dir.join("storage/ATTACH01/paper.pdf")).unwrap();
    let conn = Connection::open(dir.join("zotero.sqlite")).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.execute_batch(LIBRARY).unwrap();
    conn.execute_batch(extra_sql).unwrap();
    dir
}

fn sql(dir: &Path, statements: &str) {
    Connection::open(dir.join("zotero.sqlite"))
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

/// Every file under `dir` (recursively) with its size and modification
/// time: a write that leaves the bytes alone still shows.
fn stamps(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.is_dir() {
            out.extend(stamps(&e.path()));
        }
        out.insert(e.path(), (m.len(), m.modified().unwrap()));
    }
    out
}

fn config(sb: &Sandbox) {
    // No model answers here: a full-text import must not need one.
    let closed = crate::support::net::dead_url();
    sb.write_config(&format!("[chat]\nollama_host = \"{closed}\"\n"));
}

fn import(sb: &Sandbox, path: &Path, more: &[&str]) -> Value {
    let mut args = vec!["kb", "import-zotero", path.to_str().unwrap(), "--json"];
    args.extend_from_slice(more);
    let r = sb.run(&args);
    assert!(r.code == 0 || r.code == 1, "{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr))
}

fn keys(v: &Value, list: &str) -> Vec<String> {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap().to_string())
        .collect()
}

fn documents(sb: &Sandbox) -> Vec<Value> {
    let r = sb.run(&["kb", "list", "--json", "--kind", "papers"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    v.as_array()
        .cloned()
        .unwrap_or_else(|| v["documents"].as_array().cloned().unwrap_or_default())
}

fn search(sb: &Sandbox, q: &str) -> String {
    let r = sb.run(&["kb", "search", q, "--json", "-n", "10"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.stdout
}

#[test]
fn a_zotero_library_comes_in_once_and_a_rerun_takes_only_what_changed() {
    let sb = Sandbox::new();
    config(&sb);
    let z = zotero(&sb, "");
    let before = stamps(&z);

    let v = import(&sb, &z, &[]);
    assert_eq!(v["format"], "zotero-sqlite");
    assert_eq!(v["items"], 2, "{v}");
    assert_eq!(keys(&v, "imported"), ["PAPERKEY", "BOOKKEY1"], "{v}");
    let paper = &v["imported"][0];
    assert_eq!(paper["source"], "zotero://select/library/items/PAPERKEY");
    assert_eq!(paper["with_pdf"], true);
    assert_eq!(paper["visibility"], "public");
    assert!(paper["body_chunks"].as_u64().unwrap() >= 1, "{paper}");
    // The PDF's own highlight, Zotero's highlight and the note.
    assert!(paper["annotation_chunks"].as_u64().unwrap() >= 3, "{paper}");
    assert_eq!(v["imported"][1]["with_pdf"], false);
    assert_eq!(stamps(&z), before, "nothing in Zotero's folder was written");

    // Zotero's highlight (with its comment) and the note are searchable.
    let hits = search(&sb, "white band between columns");
    assert!(
        hits.contains("[HIGHLIGHT p.1] a gutter detector finds the white band between columns\\nNote: the key idea"),
        "{hits}"
    );
    let hits = search(&sb, "XY-cut Docstrum methods");
    assert!(hits.contains("[USER NOTE] My reading note"), "{hits}");
    assert!(!hits.contains("alert(1)"), "{hits}");

    let docs = documents(&sb);
    let paper = docs
        .iter()
        .find(|d| d["source"] == "zotero://select/library/items/PAPERKEY")
        .unwrap_or_else(|| panic!("{docs:?}"));
    assert_eq!(paper["title"], "Reading Order in Two-Column Layouts");
    let m = &paper["meta"];
    assert_eq!(m["authors"], "Ada Example, Brian Sample", "{m}");
    assert_eq!(m["doi"], "10.1234/ro.2021");
    assert_eq!(m["year"], 2021);
    assert_eq!(m["venue"], "Journal of Layout");
    assert_eq!(m["url"], "https://example.org/reading-order");
    assert_eq!(m["publication_type"], "journalArticle");
    assert_eq!(m["zotero_key"], "PAPERKEY");
    // A citation key from the first author's family name, as for any paper.
    assert_eq!(m["cite_key"], "example2021reading", "{m}");
    assert_eq!(
        m["tags"], "|Layout/Reading-order|to-read|",
        "collections and tags; not the automatic tag"
    );
    let book = docs.iter().find(|d| d["title"] == "A Book Without a PDF").unwrap();
    assert_eq!(book["meta"]["authors"], "World Health Organization");
    assert_eq!(book["meta"]["cite_key"], "worldhealthorganization1999book", "{book}");
    assert_eq!(book["meta"]["storage_mode"], "abstract");

    // A re-run imports nothing.
    let v = import(&sb, &z, &[]);
    assert_eq!(v["unchanged"], 2, "{v}");
    assert!(
        keys(&v, "imported").is_empty() && keys(&v, "replaced").is_empty(),
        "{v}"
    );
    assert_eq!(stamps(&z), before, "nothing in Zotero's folder was written");

    // A new note replaces that item only.
    sql(
        &z,
        "INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (30, 28, 1, 'NOTE0002');
         INSERT INTO itemNotes (itemID, parentItemID, note) VALUES (30, 1, '<p>Second thoughts on recursive cuts.</p>');",
    );
    let v = import(&sb, &z, &[]);
    assert_eq!(keys(&v, "replaced"), ["PAPERKEY"], "{v}");
    assert_eq!(v["unchanged"], 1);
    assert!(search(&sb, "second thoughts recursive cuts").contains("[USER NOTE] Second thoughts"));

    // A changed PDF replaces it too.
    std::fs::copy(fixture("paper.pdf"), z.join("storage/ATTACH01/paper.pdf")).unwrap();
    let v = import(&sb, &z, &[]);
    assert_eq!(keys(&v, "replaced"), ["PAPERKEY"], "{v}");

    // A PDF that went missing keeps what is stored.
    std::fs::remove_file(z.join("storage/ATTACH01/paper.pdf")).unwrap();
    let v = import(&sb, &z, &[]);
    assert_eq!(keys(&v, "skipped"), ["PAPERKEY"], "{v}");
    assert!(
        v["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("what is stored is kept"),
        "{v}"
    );
    let paper = documents(&sb)
        .into_iter()
        .find(|d| d["source"] == "zotero://select/library/items/PAPERKEY")
        .unwrap();
    assert!(paper["chunks"].as_u64().unwrap() > 3, "{paper}");

    // Plain output: one summary line and a line per item.
    let r = sb.run(&["kb", "import-zotero", z.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("(Zotero database): 2 items — 0 imported, 0 replaced, 1 unchanged, 1 skipped, 0 failed"),
        "{}",
        r.stdout
    );
    assert!(r
        .stdout
        .contains("  skipped PAPERKEY \"Reading Order in Two-Column Layouts\": its PDF cannot be used now"));
    // Off a terminal, the progress bar speaks in plain lines.
    assert!(r.stderr.contains("importing"), "{}", r.stderr);

    // The book is deleted in Zotero: the import says so and keeps it.
    assert!(keys(&import(&sb, &z, &[]), "gone").is_empty());
    sql(
        &z,
        "DELETE FROM collectionItems WHERE itemID = 5; DELETE FROM itemCreators WHERE itemID = 5;
         DELETE FROM itemData WHERE itemID = 5; DELETE FROM items WHERE itemID = 5;",
    );
    let v = import(&sb, &z, &[]);
    assert_eq!(keys(&v, "gone"), ["BOOKKEY1"], "{v}");
    assert_eq!(v["gone"][0]["title"], "A Book Without a PDF");
    assert!(
        documents(&sb).iter().any(|d| d["title"] == "A Book Without a PDF"),
        "deleting stays the user's decision"
    );
    let r = sb.run(&["kb", "import-zotero", z.to_str().unwrap()]);
    assert!(
        r.stdout
            .contains("1 paper(s) imported earlier are no longer in Zotero; they stay in your library")
            && r.stdout.contains("  gone BOOKKEY1 \"A Book Without a PDF\""),
        "{}",
        r.stdout
    );
}

const BIB: &str = r#"@article{example_reading_2021,
  title = {Reading Order in Two-Column Layouts},
  author = {Example, Ada and Sample, Brian},
  journal = {Journal of Layout},
  year = {2021},
  doi = {10.1234/ro.2021},
  keywords = {to-read},
  file = {Full Text PDF:Zotero/storage/ATTACH01/paper.pdf:application/pdf},
}

@book{who_book_1999,
  title = {A Book Without a {PDF}},
  author = {{World Health Organization}},
  year = {1999},
  abstract = {A short abstract about keeping records of books.},
}
"#;

#[test]
fn a_bibtex_export_of_the_same_items_and_its_broken_entries() {
    let sb = Sandbox::new();
    config(&sb);
    let z = zotero(&sb, "");
    let bib = sb.dir.path().join("My Library.bib");
    std::fs::write(&bib, BIB).unwrap();
    let v = import(&sb, &bib, &[]);
    assert_eq!(v["format"], "bibtex");
    assert_eq!(keys(&v, "imported"), ["example_reading_2021", "who_book_1999"], "{v}");
    assert_eq!(
        v["imported"][0]["with_pdf"], true,
        "the file field, relative to the export"
    );
    let docs = documents(&sb);
    let mut titles: Vec<&str> = docs.iter().map(|d| d["title"].as_str().unwrap()).collect();
    titles.sort();
    assert_eq!(titles, ["A Book Without a PDF", "Reading Order in Two-Column Layouts"]);

    // The database after its export: the same papers, recognised and skipped.
    let v = import(&sb, &z, &[]);
    assert!(keys(&v, "imported").is_empty(), "{v}");
    let reasons: Vec<&str> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons[0].contains("already in the knowledge base") && reasons[0].contains("10.1234/ro.2021"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("already"), "{reasons:?}");
    assert_eq!(documents(&sb).len(), 2, "nothing was added twice");

    // A broken entry between two good ones: named with its line, the rest in.
    let broken = sb.dir.path().join("broken.bib");
    std::fs::write(
        &broken,
        "@misc{first_one, title = {A First Note on Tables}, year = 2001}\n\
         @misc{unbalanced, title = {Never {closed}, year = 2002\n\
         @misc{last_one, title = {A Last Note on Figures}, year = 2003}\n",
    )
    .unwrap();
    let v = import(&sb, &broken, &[]);
    assert_eq!(keys(&v, "imported"), ["first_one", "last_one"], "{v}");
    assert_eq!(keys(&v, "skipped"), ["unbalanced"], "{v}");
    assert!(
        v["skipped"][0]["reason"].as_str().unwrap().starts_with("line 2: "),
        "{v}"
    );
}

#[test]
fn hostile_libraries_are_refused_or_skipped_with_a_reason() {
    let sb = Sandbox::new();
    config(&sb);

    // A damaged database: a clear error, nothing added.
    let bad = sb.dir.path().join("Damaged");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("zotero.sqlite"), vec![0x5a; 8192]).unwrap();
    let r = sb.run(&["kb", "import-zotero", bad.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("cannot read the Zotero database"), "{}", r.stderr);
    assert!(r.stderr.contains("export the library"), "{}", r.stderr);
    let r = sb.run(&["kb", "import-zotero", sb.dir.path().join("nowhere").to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no Zotero library at"), "{}", r.stderr);
    // Without a path: ~/Zotero (here the sandbox's HOME, which has none).
    let r = sb.run(&["kb", "import-zotero"]);
    assert!(
        r.stderr
            .contains(&format!("no Zotero library at {}", sb.home().join("Zotero").display())),
        "{}",
        r.stderr
    );

    // Attachments that lead out of storage: by `..`, and by a link. And a
    // file Zotero links (not stores) in the vault's private folder.
    let secret = sb.dir.path().join("secret.pdf");
    std::fs::copy(fixture("paper.pdf"), &secret).unwrap();
    let private = sb.home().join("vault/private/mine.pdf");
    std::fs::create_dir_all(private.parent().unwrap()).unwrap();
    std::fs::copy(fixture("paper.pdf"), &private).unwrap();
    let z = zotero(
        &sb,
        &format!(
            "INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES
                 (40, 22, 1, 'UPUPUP01'), (41, 3, 1, 'ESCAPE01'), (42, 22, 1, 'LINKED01'), (43, 3, 1, 'SYMLINK1'),
                 (44, 22, 1, 'PRIVATE1'), (45, 3, 1, 'PRIVATT1'), (46, 22, 1, 'NOTAPDF1'), (47, 3, 1, 'FAKEPDF1');
             INSERT INTO itemDataValues (valueID, value) VALUES
                 (40, 'Escapes by dots'), (41, 'Escapes by a link'), (42, 'Kept in a private folder'),
                 (43, 'Text pretending to be a PDF');
             INSERT INTO itemData (itemID, fieldID, valueID) VALUES (40, 1, 40), (42, 1, 41), (44, 1, 42), (46, 1, 43);
             INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES
                 (41, 40, 0, 'application/pdf', 'storage:../../secret.pdf'),
                 (43, 42, 0, 'application/pdf', 'storage:paper.pdf'),
                 (45, 44, 2, 'application/pdf', '{}'),
                 (47, 46, 0, 'application/pdf', 'storage:fake.pdf');",
            private.display()
        ),
    );
    std::fs::create_dir_all(z.join("storage/SYMLINK1")).unwrap();
    std::os::unix::fs::symlink(&secret, z.join("storage/SYMLINK1/paper.pdf")).unwrap();
    std::fs::create_dir_all(z.join("storage/FAKEPDF1")).unwrap();
    std::fs::write(z.join("storage/FAKEPDF1/fake.pdf"), "plain text, not a PDF").unwrap();
    let r = sb.run(&["kb", "import-zotero", z.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 1, "an item that failed makes the exit code 1: {}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    // The item whose file is not a PDF failed, named; the others came in.
    assert_eq!(keys(&v, "failed"), ["NOTAPDF1"], "{v}");
    assert!(
        v["failed"][0]["reason"].as_str().unwrap().contains("is not a PDF file"),
        "{v}"
    );
    assert_eq!(
        keys(&v, "imported"),
        ["PAPERKEY", "BOOKKEY1", "UPUPUP01", "LINKED01", "PRIVATE1"],
        "{v}"
    );
    // The vault's one privacy rule holds for a Zotero item too.
    assert_eq!(v["imported"][4]["with_pdf"], true, "{v}");
    assert_eq!(v["imported"][4]["visibility"], "private", "{v}");
    assert_eq!(v["imported"][0]["visibility"], "public", "{v}");
    for (i, key) in [(2, "UPUPUP01"), (3, "LINKED01")] {
        assert_eq!(v["imported"][i]["with_pdf"], false, "{key}: {v}");
    }
    let warnings: Vec<String> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{}: {}", w["key"].as_str().unwrap(), w["warning"].as_str().unwrap()))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("UPUPUP01: imported without its PDF")
                && w.contains("leads out of Zotero's storage folder")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("LINKED01: ") && w.contains("is a link that leads out")),
        "{warnings:?}"
    );
    // The text of the file outside storage never came in.
    let docs = documents(&sb);
    assert!(
        docs.iter()
            .all(|d| d["file_path"].as_str().is_none_or(|p| !p.contains("secret"))),
        "{docs:?}"
    );
}

#[test]
fn the_import_runs_in_a_running_owner_as_it_does_alone() {
    let sb = Sandbox::new();
    config(&sb);
    let z = zotero(&sb, "");
    let mut owner = start_owner(&sb, &["sync"]);
    let v = import(&sb, &z, &[]);
    assert_eq!(keys(&v, "imported"), ["PAPERKEY", "BOOKKEY1"], "{v}");
    // A relative path is the client's, not the owner's.
    let mut c = sb.jarvis();
    c.args(["kb", "import-zotero", "Zotero", "--json"])
        .current_dir(sb.dir.path())
        .stdin(Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["unchanged"], 2, "{v}");
    signal(owner.id(), "-TERM");
    let start = Instant::now();
    while owner.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(60), "the owner did not stop");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_stop_keeps_what_came_in_and_the_next_run_takes_the_rest() {
    let sb = Sandbox::new();
    config(&sb);
    let mut many = String::new();
    for n in 0..120 {
        let id = 100 + n;
        many.push_str(&format!(
            "INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES ({id}, 22, 1, 'MANY{n:04}');
             INSERT INTO itemDataValues (valueID, value) VALUES ({id}, 'Paper number {n} of many');
             INSERT INTO itemData (itemID, fieldID, valueID) VALUES ({id}, 1, {id});"
        ));
    }
    let z = zotero(&sb, &many);
    let mut c = sb.jarvis();
    c.args(["kb", "import-zotero", z.to_str().unwrap()]);
    let mut job = crate::support::Owned::spawn(c);
    // Off a terminal the bar speaks at each tenth: stop after the first.
    let tenth = job.line_matching(Duration::from_secs(240), |l| {
        (l.starts_with("importing: ") && !l.starts_with("importing: 0/")).then_some(())
    });
    assert!(tenth.is_some(), "{}", job.stderr());
    signal(job.id(), "-INT");
    let status = job.wait().unwrap();
    // The pipe is closed; let the reader take its last bytes.
    std::thread::sleep(Duration::from_millis(300));
    let err = job.stderr();
    assert_eq!(status.code(), Some(130), "{err}");
    let done: usize = err
        .split("stopped: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!((10..122).contains(&done), "{err}");
    let v = import(&sb, &z, &[]);
    assert_eq!(v["unchanged"], done, "{v}");
    assert_eq!(v["imported"].as_array().unwrap().len(), 122 - done, "{v}");
}
