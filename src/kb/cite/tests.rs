//! Citation keys: derivation, de-duplication, stability as papers arrive
//! and go, inheritance on replace, and the backfill of older stores (real
//! fjall and tantivy; vectors are synthetic, so no model loads).

use serde_json::json;

use super::*;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::kb::{Actor, Document, KbSettings, ReplaceBy};

fn open(dir: &std::path::Path) -> Kb {
    let spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
    Kb::open_lazy(
        dir,
        spec,
        Box::new(|| Err("no model in these tests".into())),
        None,
        KbSettings::default(),
    )
    .unwrap()
}

fn paper_meta(source: &str, title: &str, authors: &str, year: Option<i32>) -> Metadata {
    let mut m = Metadata::new();
    m.insert("doc_type".into(), json!("paper"));
    m.insert("visibility".into(), json!("public"));
    m.insert("source".into(), json!(source));
    m.insert("title".into(), json!(title));
    m.insert("authors".into(), json!(authors));
    if let Some(y) = year {
        m.insert("year".into(), json!(y));
    }
    m
}

/// Commit a paper of two chunks (a body chunk and a highlight).
fn add(kb: &Kb, meta: Metadata, replace: Option<ReplaceBy>) {
    let mut note = meta.clone();
    note.insert("annotation_kind".into(), json!("highlight"));
    let docs = vec![
        Document {
            text: "body".into(),
            embed_text: "body".into(),
            meta,
        },
        Document {
            text: "highlight".into(),
            embed_text: "highlight".into(),
            meta: note,
        },
    ];
    let vectors = vec![vec![0.1; kb.dims()]; docs.len()];
    let prepared = kb.prepare_with_vectors(docs, vectors).unwrap();
    kb.commit(prepared, replace.as_ref(), &Actor::Cli).unwrap();
}

fn keys(kb: &Kb) -> Vec<(String, String)> {
    kb.cite_entries()
        .unwrap()
        .into_iter()
        .map(|e| (e.source, e.key))
        .collect()
}

fn key_of(kb: &Kb, source: &str) -> String {
    keys(kb)
        .into_iter()
        .find(|(s, _)| s == source)
        .map(|(_, k)| k)
        .unwrap_or_else(|| panic!("{source} has no key: {:?}", keys(kb)))
}

#[test]
fn a_key_is_family_year_and_first_significant_word_in_ascii() {
    assert_eq!(
        base_key("Smith", Some(2021), "Protein folding at scale"),
        "smith2021protein"
    );
    assert_eq!(
        base_key("Müller", Some(2019), "The Über-model of things"),
        "muller2019uber"
    );
    assert_eq!(base_key("Ødegaard", Some(2020), "On a theory"), "odegaard2020theory");
    assert_eq!(
        base_key("O'Brien-Łukasiewicz", None, "A 3D view"),
        "obrienlukasiewicz3d"
    );
    assert_eq!(base_key("", Some(1999), ""), "anon1999");
    assert_eq!(
        base_key("van der Berg", Some(2001), "Towards the GPT-4 era"),
        "vanderberg2001gpt"
    );
    assert_eq!(fold("Straße Æsir"), "strasse aesir");
    let a = parse_authors("A. Smith, B. van der Berg and C. Lee Jr.");
    assert_eq!(
        a.iter().map(|a| a.family.as_str()).collect::<Vec<_>>(),
        ["Smith", "van der Berg", "Lee Jr."]
    );
    let b = parse_authors("Smith, Jane; Doe, John; et al.");
    assert_eq!(
        b,
        vec![
            Author {
                given: "Jane".into(),
                family: "Smith".into()
            },
            Author {
                given: "John".into(),
                family: "Doe".into()
            }
        ]
    );
    let mut taken = BTreeSet::new();
    for want in ["smith2021x", "smith2021xa", "smith2021xb"] {
        let k = first_free("smith2021x", &taken);
        assert_eq!(k, want);
        taken.insert(k);
    }
    assert_eq!(suffix(26), "z");
    assert_eq!(suffix(27), "aa");
    assert_eq!(suffix(28), "ab");
}

#[test]
fn keys_are_unique_stable_and_survive_what_arrives_later() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path());
    add(
        &kb,
        paper_meta("https://a", "Protein folding", "Jane Smith", Some(2021)),
        None,
    );
    assert_eq!(key_of(&kb, "https://a"), "smith2021protein");
    add(
        &kb,
        paper_meta("https://b", "Protein design", "John Smith", Some(2021)),
        None,
    );
    add(
        &kb,
        paper_meta("https://c", "Protein dynamics", "Ann Smith", Some(2021)),
        None,
    );
    assert_eq!(key_of(&kb, "https://a"), "smith2021protein", "the first keeps its key");
    assert_eq!(key_of(&kb, "https://b"), "smith2021proteina");
    assert_eq!(key_of(&kb, "https://c"), "smith2021proteinb");

    // Every chunk of a paper carries its key, annotations too.
    for id in kb.store().ids_by(LookupField::Source, "https://b").unwrap() {
        let rec = kb.store().get(id).unwrap().unwrap();
        assert_eq!(rec.meta_str(CITE_KEY), Some("smith2021proteina"));
    }

    // A correction of the title never moves the key.
    kb.update_paper_metadata("https://a", Some("Something else entirely"), None, None, &Actor::Cli)
        .unwrap();
    assert_eq!(key_of(&kb, "https://a"), "smith2021protein");

    // Replacing a paper (same source, new body) hands its key on, and so
    // does a replace across routes (a DOI entry superseding a URL one).
    add(
        &kb,
        paper_meta("https://b", "Protein design", "John Smith", Some(2021)),
        Some(ReplaceBy::Source("https://b".into())),
    );
    assert_eq!(key_of(&kb, "https://b"), "smith2021proteina");
    add(
        &kb,
        paper_meta("https://doi.org/10.1/c", "Protein dynamics", "Ann Smith", Some(2021)),
        Some(ReplaceBy::Source("https://c".into())),
    );
    assert_eq!(key_of(&kb, "https://doi.org/10.1/c"), "smith2021proteinb");

    // Removing one frees nothing for the others: their keys stay.
    kb.delete_by_metadata("source", "https://a", &Actor::Cli).unwrap();
    assert_eq!(key_of(&kb, "https://b"), "smith2021proteina");

    // A key an import brings is kept when free, replaced when taken.
    let mut own = paper_meta("https://d", "Other", "Zed Zhou", Some(2000));
    own.insert(CITE_KEY.into(), json!("Zhou:2000"));
    add(&kb, own, None);
    assert_eq!(key_of(&kb, "https://d"), "Zhou:2000");
    let mut clash = paper_meta("https://e", "Other", "Zed Zhou", Some(2000));
    clash.insert(CITE_KEY.into(), json!("smith2021proteina"));
    add(&kb, clash, None);
    assert_eq!(key_of(&kb, "https://e"), "zhou2000other");

    // Digests and notes have no key.
    let mut digest = paper_meta("digest:2024-01-01", "Weekly digest", "", None);
    digest.insert("doc_type".into(), json!("digest"));
    add(&kb, digest, None);
    assert!(keys(&kb).iter().all(|(s, _)| !s.starts_with("digest:")));

    // The same keys after a reopen.
    let before = keys(&kb);
    drop(kb);
    let kb = open(t.path());
    assert_eq!(keys(&kb), before);
}

#[test]
fn papers_stored_before_keys_existed_get_theirs_once_in_a_stable_order() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path());
    // Straight into the store, as an older Jarvis left them: no key.
    let mut chunks = Vec::new();
    for (source, when) in [("https://late", "2024-02-01"), ("https://early", "2024-01-01")] {
        let mut m = paper_meta(source, "Graph networks", "Li Wei", Some(2018));
        m.insert("date_added".into(), json!(when));
        chunks.push(crate::store::NewChunk {
            text: "t".into(),
            embed_text: "t".into(),
            meta: m,
            vector: vec![0.1; kb.dims()],
        });
    }
    kb.store().commit(chunks, &[], &kb.cause(&Actor::Cli)).unwrap();
    // As an older store: the backfill has not run.
    kb.store().set_meta_string(BACKFILLED, "").unwrap();
    drop(kb);
    let kb = open(t.path());
    assert_eq!(
        kb.store().meta_string(BACKFILLED).unwrap().as_deref(),
        Some("1"),
        "done at open"
    );
    assert_eq!(key_of(&kb, "https://early"), "wei2018graph", "the older one first");
    assert_eq!(key_of(&kb, "https://late"), "wei2018grapha");
    assert_eq!(kb.store().meta_string(BACKFILLED).unwrap().as_deref(), Some("1"));
    assert_eq!(kb.backfill_cite_keys().unwrap(), 0, "nothing left to key");
    // A search still finds them: the metadata update reached BM25 too.
    assert_eq!(kb.ids_where(CITE_KEY, "wei2018grapha").unwrap().len(), 1);
}

#[test]
fn completion_matches_key_title_and_authors_without_accents() {
    let e = CiteEntry::from_meta(
        "s",
        &paper_meta("s", "Über die Quantenmechanik", "José Núñez, Ann Lee", Some(1926)),
    );
    for q in ["nunez", "NÚÑEZ quanten", "lee 1926", "uber"] {
        assert!(e.matches(q), "{q}");
    }
    assert!(!e.matches("smith"));
    assert_eq!(e.authors_short(), "Núñez and Lee");
}
