//! Retrieval through real vault ingest: title, alias and heading fields,
//! the exact-name signal, document-level results and `kb eval`, with the
//! real model, fjall, tantivy and arroy.

use std::fs;

use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::embed::Embedder;
use crate::index::Filter;
use crate::ingest::vault::*;
use crate::kb::eval::{parse_known_items, EvalOptions};
use crate::kb::search::SearchRequest;
use crate::kb::{Kb, KbSettings};

struct Fixture {
    _t: tempfile::TempDir,
    vault: PathBuf,
    kb: Kb,
}

fn fixture(notes: &[(&str, &str)]) -> Fixture {
    let t = tempfile::tempdir().unwrap();
    let vault = t.path().join("vault");
    for (rel, text) in notes {
        let p = vault.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    let n = natives();
    let e = Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap();
    let kb = Kb::open(&t.path().join("rag"), e, None, KbSettings::default()).unwrap();
    let opts = VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: Actor::Cli,
    };
    refresh_vault(&kb, &vault, &opts, &|_, _| {}, &crate::cancel::Cancel::new()).unwrap();
    Fixture { _t: t, vault, kb }
}

fn top_paths(kb: &Kb, query: &str, filter: Filter) -> Vec<String> {
    let mut req = SearchRequest::new(query, 5);
    req.filter = filter;
    kb.search_documents(&req).unwrap().into_iter().map(|d| d.key).collect()
}

/// Filler notes that talk about many things, so BM25 statistics are not
/// degenerate and the dense leg has plausible distractors.
fn filler() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "Editing/Basic syntax.md",
            "# Basic syntax\n\nBold, italics and lists. Markdown formatting basics for notes, with headings and quotes.\n",
        ),
        (
            "Editing/Tables.md",
            "# Tables\n\nUse vertical bars to separate columns in markdown. Advanced tables can align columns.\n",
        ),
        (
            "Sync/Plans.md",
            "# Plans\n\nStorage limits and pricing for syncing your vault across devices.\n",
        ),
        (
            "Misc/Colours.md",
            "# Colours\n\nThemes change the colours of the interface; accent colours are configurable.\n",
        ),
    ]
}

#[test]
fn an_alias_only_query_finds_its_note_at_rank_one() {
    let mut notes = filler();
    // The alias appears nowhere in the note's text or title.
    notes.push((
        "Editing/Advanced formatting syntax.md",
        "---\naliases:\n  - Kestrel Layout\n---\nLearn how to add tables, footnotes and math to your notes.\n\n## Footnotes\n\nFootnotes go at the end.\n",
    ));
    let f = fixture(&notes);
    let top = top_paths(&f.kb, "kestrel layout", Filter::default());
    assert_eq!(
        top.first().map(String::as_str),
        Some("Editing/Advanced formatting syntax.md"),
        "{top:?}"
    );
    // Chunk level too: the note's chunks lead, flagged as a name match.
    let hits = f.kb.search(&SearchRequest::new("Kestrel Layout", 3)).unwrap();
    assert!(hits[0].name_match);
    assert_eq!(
        hits[0].record.meta_str("file_path"),
        Some("Editing/Advanced formatting syntax.md")
    );
    // Stored as a list, not the old comma-joined x_aliases.
    assert_eq!(hits[0].record.meta.get("aliases"), Some(&json!(["Kestrel Layout"])));
}

#[test]
fn a_title_query_beats_a_body_only_mention() {
    let mut notes = filler();
    notes.push((
        "Plugins/Canvas.md",
        "Canvas is a core plugin for visual note-taking on an infinite board.\n",
    ));
    // Mentions "canvas" in passing, several times, but is about something else.
    notes.push((
        "Misc/Screenshots.md",
        "# Screenshots\n\nTake screenshots of a canvas, a note or a graph; a canvas screenshot is a PNG. Crop the canvas afterwards.\n",
    ));
    let f = fixture(&notes);
    let top = top_paths(&f.kb, "canvas", Filter::default());
    assert_eq!(top.first().map(String::as_str), Some("Plugins/Canvas.md"), "{top:?}");
}

#[test]
fn a_private_notes_alias_never_surfaces_in_a_public_search() {
    let mut notes = filler();
    notes.push((
        "private/Diagnosis.md",
        "---\naliases: [Heron Protocol]\n---\nMy medical notes.\n",
    ));
    notes.push((
        "Public/Herons.md",
        "# Birds\n\nA protocol for counting herons by the river.\n",
    ));
    let f = fixture(&notes);
    // Everything allowed: the exact alias wins.
    let all = top_paths(&f.kb, "Heron Protocol", Filter::default());
    assert_eq!(all.first().map(String::as_str), Some("private/Diagnosis.md"), "{all:?}");
    // Public only: never, at any depth, at chunk or document level.
    let public = top_paths(&f.kb, "Heron Protocol", Filter::public_only());
    assert!(!public.iter().any(|p| p.starts_with("private/")), "{public:?}");
    assert_eq!(public.first().map(String::as_str), Some("Public/Herons.md"));
    let mut req = SearchRequest::new("Heron Protocol", 50);
    req.filter = Filter::public_only();
    let hits = f.kb.search(&req).unwrap();
    assert!(hits.iter().all(|h| h.record.meta_str("visibility") == Some("public")));
    assert!(hits.iter().all(|h| !h.name_match));
    let (hits, private) =
        f.kb.search_with_privacy_check(&SearchRequest::new("Heron Protocol", 5), true)
            .unwrap();
    assert!(private, "the caveat flag must be set");
    assert!(hits.iter().all(|h| h.record.meta_str("visibility") == Some("public")));
}

#[test]
fn document_results_collapse_chunks_and_kb_eval_scores_them() {
    let mut notes = filler();
    let long: String = (0..12)
        .map(|i| {
            format!("## Part {i}\n\nRiver otters swim in cold water and eat fish, part {i} of the otter story.\n\n")
        })
        .collect();
    let long_note = format!("# Otters\n\n{long}");
    notes.push(("Animals/Otters.md", long_note.as_str()));
    let f = fixture(&notes);
    let mut req = SearchRequest::new("river otters", 3);
    req.filter = Filter::default();
    let docs = f.kb.search_documents(&req).unwrap();
    assert_eq!(docs[0].key, "Animals/Otters.md");
    assert!(docs[0].more >= 3, "{}", docs[0].more);
    let keys: Vec<&str> = docs.iter().map(|d| d.key.as_str()).collect();
    let mut distinct = keys.clone();
    distinct.dedup();
    assert_eq!(keys.len(), distinct.len(), "each document once: {keys:?}");

    let set = parse_known_items(
        "{\"query\": \"river otters\", \"answer\": \"Animals/Otters.md\"}\n{\"query\": \"storage pricing\", \"answer\": \"Sync/Plans.md\"}\n{\"query\": \"otters\", \"answer\": \"Nowhere.md\"}\n",
    )
    .unwrap();
    let opts = EvalOptions {
        group_docs: true,
        ..EvalOptions::default()
    };
    let r =
        f.kb.evaluate(&set, &opts, &|_, _| {}, &crate::cancel::Cancel::new())
            .unwrap();
    assert_eq!(r.per_query[0].rank, Some(1));
    assert_eq!(r.per_query[1].rank, Some(1));
    assert_eq!(r.per_query[2].rank, None);
    assert!((r.hit1 - 2.0 / 3.0).abs() < 1e-9);
    assert!((r.mrr10 - 2.0 / 3.0).abs() < 1e-9);
    assert!(r.latency_p95_ms >= r.latency_p50_ms);
    let _ = &f.vault;
}
