//! The readers without a database: BibTeX (tolerant of a broken entry),
//! CSL-JSON, the mapping of Zotero's fields, where attachments may be read
//! from, and finding the library.

use std::path::Path;

use super::attach::{AttachmentAt, Resolver};
use super::item::{to_entry, year_of, Creator, RawAttachment, RawItem};
use super::*;

const BIB: &str = r#"
% Exported by Zotero
@string{jl = "Journal of " # {Layout}}

@article{example_reading_2021,
  title = {Reading Order in {Two-Column} Layouts},
  author = {Example, Ada and Sample, Brian and others},
  journal = jl,
  year = 2021,
  month = jul,
  doi = {https://doi.org/10.1234/RO.2021},
  keywords = {to-read, layout},
  annote = {My reading note: compare with the XY-cut \& Docstrum.},
  file = {Full Text PDF:storage/ATTACH01/paper.pdf:application/pdf;Snapshot:storage/ATTACH01/page.html:text/html},
}

@misc{broken_entry,
  title = {An unclosed {brace in the title},
  year = {2020},
}

@book{who_book_1999,
  title = "A Book Without a {PDF}",
  author = {{World Health Organization}},
  year = {1999},
  eprint = {2101.00001}, archivePrefix = {arXiv},
}
"#;

#[test]
fn bibtex_reads_every_good_entry_and_names_the_broken_one() {
    let (items, skipped) = bibtex::read(BIB, Path::new("/lib/export.bib"));
    let keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["example_reading_2021", "who_book_1999"]);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].key, "broken_entry");
    // The title's extra brace swallows the entry's end: the entry is cut
    // at the next line that starts one.
    assert!(skipped[0].reason.contains("a brace is missing"), "{skipped:?}");
    assert!(skipped[0].reason.starts_with("line 17:"), "{skipped:?}");

    let a = &items[0];
    assert_eq!(a.source, "bibtex:/lib/export.bib#example_reading_2021");
    assert_eq!(a.item_type, "journalArticle");
    assert_eq!(a.fields["title"], "Reading Order in Two-Column Layouts");
    assert_eq!(a.fields["publicationTitle"], "Journal of Layout", "@string and # joins");
    assert_eq!(a.fields["date"], "2021");
    assert_eq!(a.fields["DOI"], "https://doi.org/10.1234/RO.2021");
    let names: Vec<(&str, &str)> = a.creators.iter().map(|c| (c.first.as_str(), c.last.as_str())).collect();
    assert_eq!(
        names,
        [("Ada", "Example"), ("Brian", "Sample")],
        "`and others` is not a person"
    );
    assert_eq!(a.tags, ["to-read", "layout"]);
    assert_eq!(a.notes, ["My reading note: compare with the XY-cut & Docstrum."]);
    assert_eq!(a.attachments.len(), 2);
    assert_eq!(
        a.attachments[0].at,
        AttachmentAt::Export("storage/ATTACH01/paper.pdf".into())
    );
    assert_eq!(a.attachments[0].content_type, "application/pdf");

    let b = &items[1];
    assert_eq!(b.fields["title"], "A Book Without a PDF");
    assert_eq!(b.creators[0].last, "World Health Organization");
    assert_eq!(b.fields["extra"], "arXiv: 2101.00001");
}

#[test]
fn bibtex_names_in_every_written_form() {
    let src =
        "@misc{n, author = {Ada Example and Ludwig van Beethoven and\n  Hopper, Grace and {Layout Group}}, title={T}}";
    let (items, _) = bibtex::read(src, Path::new("/x.bib"));
    let names: Vec<(&str, &str)> = items[0]
        .creators
        .iter()
        .map(|c| (c.first.as_str(), c.last.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("Ada", "Example"),
            ("Ludwig", "van Beethoven"),
            ("Grace", "Hopper"),
            ("", "Layout Group")
        ]
    );
}

#[test]
fn bibtex_survives_hostile_shapes() {
    // Nothing but junk, a lone `@`, an entry that never closes at the end.
    for src in [
        "",
        "just text, no entries",
        "mail me @ home",
        "@article{k,",
        "@article{k, title = {x",
    ] {
        let (items, _) = bibtex::read(src, Path::new("/x.bib"));
        assert!(items.is_empty(), "{src:?}");
    }
    let (items, skipped) = bibtex::read("@article{k, title = {x}\n@book{b, title={Fine}}", Path::new("/x.bib"));
    assert_eq!(items.len(), 1, "the entry after a missing comma-or-brace still reads");
    assert_eq!(items[0].key, "b");
    assert_eq!(skipped.len(), 1);
    // A key used twice: the first wins, the second is named.
    let (items, skipped) = bibtex::read("@misc{a, title={One}} @misc{a, title={Two}}", Path::new("/x.bib"));
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].fields["title"], "One");
    assert!(skipped[0].reason.contains("twice"));
}

#[test]
fn csl_json_reads_each_item_on_its_own() {
    let src = r#"[
      {"id": "http://zotero.org/users/local/abcd/items/PAPERKEY", "type": "article-journal",
       "title": "Reading Order in Two-Column Layouts",
       "author": [{"family": "Example", "given": "Ada"}, {"literal": "Layout Group"}],
       "issued": {"date-parts": [["2021", 7, 15]]}, "container-title": "Journal of Layout",
       "DOI": "10.1234/ro.2021", "abstract": "We detect the gutter.", "keyword": "to-read, layout",
       "volume": 12, "note": "arXiv: 2101.00001"},
      {"id": "bad", "title": ["not", "a", "string"]},
      {"id": "plain", "type": "book", "title": "A Book", "issued": {"raw": "1999"}}
    ]"#;
    let (items, skipped) = csl::read(src, Path::new("/lib/export.json")).unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].key, "bad");
    let a = &items[0];
    assert_eq!(a.item_type, "journalArticle");
    assert_eq!(a.fields["date"], "2021");
    assert_eq!(a.fields["volume"], "12");
    assert_eq!(a.zotero_key.as_deref(), Some("PAPERKEY"));
    assert_eq!(a.creators[1].last, "Layout Group");
    assert_eq!(items[1].fields["date"], "1999");
    assert!(csl::read("{not json", Path::new("/x.json")).is_err());
    assert!(csl::read("42", Path::new("/x.json")).is_err());
}

fn raw(fields: &[(&str, &str)]) -> RawItem {
    RawItem {
        key: "K".into(),
        source: "zotero://select/library/items/K".into(),
        item_type: "journalArticle".into(),
        fields: fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..RawItem::default()
    }
}

#[test]
fn zotero_fields_become_the_papers_metadata() {
    let mut r = raw(&[
        ("title", "T"),
        ("date", "2019-00-00 Spring 2019"),
        ("proceedingsTitle", "Proc. of Layout"),
        ("extra", "Citation Key: x\nDOI: 10.5555/ABC\narXiv: 1706.03762"),
        ("url", "https://example.org"),
    ]);
    r.creators = vec![
        Creator {
            first: "Ed".into(),
            last: "Itor".into(),
            kind: "editor".into(),
        },
        Creator {
            first: "Ada".into(),
            last: "Example".into(),
            kind: "author".into(),
        },
    ];
    r.collections = vec!["Layout/Reading order".into()];
    r.tags = vec!["to read".into(), "a|b".into()];
    r.zotero_key = Some("K".into());
    r.zotero_library = Some(1);
    let e = to_entry(r, &Resolver::default()).unwrap();
    let f = &e.item.fields;
    assert_eq!(
        e.item.authors,
        ["Ada Example"],
        "editors are not authors when authors exist"
    );
    assert_eq!(
        f["author_list"],
        serde_json::json!([{"given": "Ada", "family": "Example"}]),
        "the shape citation keys read"
    );
    assert_eq!(
        e.item.doi.as_deref(),
        Some("10.5555/abc"),
        "a DOI from Extra, normalised"
    );
    assert_eq!(f["year"], 2019);
    assert_eq!(f["venue"], "Proc. of Layout");
    assert_eq!(f["arxiv_id"], "1706.03762");
    assert_eq!(f["tags"], "|Layout/Reading-order|a-b|to-read|");
    assert_eq!(f["zotero_key"], "K");
    assert_eq!(f["publication_type"], "journalArticle");
    assert!(e.item.pdf.is_none() && e.attachment_problem.is_none());

    let mut trashed = raw(&[("title", "T")]);
    trashed.trashed = true;
    assert!(to_entry(trashed, &Resolver::default())
        .unwrap_err()
        .reason
        .contains("trash"));
    assert!(to_entry(raw(&[]), &Resolver::default())
        .unwrap_err()
        .reason
        .contains("no title and no PDF"));
}

#[test]
fn years_are_found_in_the_forms_zotero_keeps() {
    assert_eq!(year_of("2021-07-15 July 15, 2021"), Some(2021));
    assert_eq!(year_of("Spring 1999"), Some(1999));
    assert_eq!(year_of("0000-00-00 n.d."), None);
    assert_eq!(year_of("12345"), None);
}

fn stored(key: &str, name: &str) -> RawAttachment {
    RawAttachment {
        at: AttachmentAt::Stored {
            key: key.into(),
            name: name.into(),
        },
        content_type: "application/pdf".into(),
        annotations: Vec::new(),
    }
}

#[test]
fn attachments_never_leave_storage() {
    let t = tempfile::tempdir().unwrap();
    let storage = t.path().join("storage");
    std::fs::create_dir_all(storage.join("GOODKEY1")).unwrap();
    std::fs::create_dir_all(storage.join("LINKKEY1")).unwrap();
    std::fs::write(storage.join("GOODKEY1/paper.pdf"), b"%PDF-1.4").unwrap();
    let outside = t.path().join("secret.pdf");
    std::fs::write(&outside, b"%PDF-1.4 secret").unwrap();
    std::os::unix::fs::symlink(&outside, storage.join("LINKKEY1/paper.pdf")).unwrap();
    let r = Resolver {
        storage: Some(storage.clone()),
        ..Resolver::default()
    };
    let ok = r.resolve(&stored("GOODKEY1", "paper.pdf").at).unwrap();
    assert_eq!(ok, std::fs::canonicalize(storage.join("GOODKEY1/paper.pdf")).unwrap());
    let up = r.resolve(&stored("GOODKEY1", "../../secret.pdf").at).unwrap_err();
    assert!(up.contains("leads out of Zotero's storage folder"), "{up}");
    let link = r.resolve(&stored("LINKKEY1", "paper.pdf").at).unwrap_err();
    assert!(link.contains("is a link that leads out"), "{link}");
    let key = r.resolve(&stored("../GOODKEY1", "paper.pdf").at).unwrap_err();
    assert!(key.contains("not a Zotero attachment key"), "{key}");
    let gone = r.resolve(&stored("GOODKEY1", "other.pdf").at).unwrap_err();
    assert!(gone.contains("not on this machine"), "{gone}");
    let base = r
        .resolve(&AttachmentAt::BaseRelative("papers/a.pdf".into()))
        .unwrap_err();
    assert!(base.contains("--base-dir"), "{base}");
    // An item whose PDF escapes is still read, with the reason kept.
    let mut item = raw(&[("title", "T")]);
    item.attachments = vec![stored("LINKKEY1", "paper.pdf"), stored("GOODKEY1", "paper.pdf")];
    let e = to_entry(item, &r).unwrap();
    assert!(e.item.pdf.is_none());
    assert!(e.attachment_problem.unwrap().contains("leads out"));
    assert!(e.warnings[0].contains("1 more PDF"), "{:?}", e.warnings);
}

#[test]
fn the_library_is_found_by_folder_file_or_content() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let e = locate(None, Some(home)).unwrap_err();
    assert!(
        matches!(e, ZoteroError::NotFound { .. }) && e.to_string().contains("Data Directory"),
        "{e}"
    );
    std::fs::create_dir_all(home.join("Zotero")).unwrap();
    std::fs::write(home.join("Zotero/zotero.sqlite"), b"SQLite format 3\0").unwrap();
    let l = locate(None, Some(home)).unwrap();
    assert_eq!(l.format, Format::ZoteroSqlite);
    assert_eq!(l.data_dir.as_deref(), Some(home.join("Zotero").as_path()));
    std::fs::write(home.join("lib.txt"), "  @article{x, title={T}}").unwrap();
    assert_eq!(
        locate(Some(&home.join("lib.txt")), None).unwrap().format,
        Format::Bibtex
    );
    std::fs::write(home.join("lib.data"), "[{\"id\": 1}]").unwrap();
    assert_eq!(
        locate(Some(&home.join("lib.data")), None).unwrap().format,
        Format::CslJson
    );
    std::fs::write(home.join("notes.txt"), "hello").unwrap();
    assert!(matches!(
        locate(Some(&home.join("notes.txt")), None),
        Err(ZoteroError::Unrecognised { .. })
    ));
}
