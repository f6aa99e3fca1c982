use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::embed::Embedder;
use crate::index::Filter;
use crate::kb::search::SearchRequest;
use crate::kb::{Kb, KbSettings};
use crate::store::LookupField;

fn kb_at(dir: &Path, settings: KbSettings) -> Kb {
    let n = natives();
    let e = Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap();
    Kb::open(dir, e, None, settings).unwrap()
}

struct Fixture {
    _t: tempfile::TempDir,
    vault: PathBuf,
    kb: Kb,
}

fn fixture() -> Fixture {
    let t = tempfile::tempdir().unwrap();
    let vault = t.path().join("vault");
    fs::create_dir_all(vault.join("private")).unwrap();
    fs::create_dir_all(vault.join("research/private")).unwrap();
    fs::create_dir_all(vault.join(".obsidian")).unwrap();
    fs::create_dir_all(vault.join(".trash")).unwrap();
    let kb = kb_at(&t.path().join("rag"), KbSettings::default());
    Fixture { _t: t, vault, kb }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn opts() -> VaultOptions {
    VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: Actor::Cli,
    }
}

fn refresh(f: &Fixture, o: &VaultOptions) -> VaultReport {
    refresh_vault(&f.kb, &f.vault, o, &|_, _| {}, &Cancel::new()).unwrap()
}

fn vis_of(f: &Fixture, rel: &str) -> Option<String> {
    let ids = f.kb.store().ids_by(LookupField::FilePath, rel).unwrap();
    ids.first().map(|id| {
        f.kb.store()
            .get(*id)
            .unwrap()
            .unwrap()
            .meta_str("visibility")
            .unwrap()
            .to_string()
    })
}

fn public_hits(f: &Fixture, q: &str) -> Vec<String> {
    let mut req = SearchRequest::new(q, 10);
    req.filter = Filter::public_only();
    f.kb.search(&req)
        .unwrap()
        .iter()
        .map(|h| h.record.meta_str("file_path").unwrap_or("").to_string())
        .collect()
}

#[test]
fn the_visibility_policy_uses_the_resolved_top_level_folder() {
    let f = fixture();
    write(&f.vault, "a.md", "x");
    write(&f.vault, "private/s.md", "x");
    write(&f.vault, "research/private/n.md", "x");
    symlink(f.vault.join("private/s.md"), f.vault.join("link.md")).unwrap();
    let outside = f.vault.parent().unwrap().join("outside.md");
    fs::write(&outside, "x").unwrap();
    symlink(&outside, f.vault.join("escape.md")).unwrap();
    let dirs = vec!["private".to_string()];
    let v = |rel: &str| get_visibility(&f.vault.join(rel), &f.vault, &dirs);
    assert_eq!(v("a.md"), Some(Visibility::Public));
    assert_eq!(v("private/s.md"), Some(Visibility::Private));
    assert_eq!(
        v("research/private/n.md"),
        Some(Visibility::Public),
        "top level only, by contract"
    );
    assert_eq!(
        v("link.md"),
        Some(Visibility::Private),
        "a symlink into private/ is private"
    );
    assert_eq!(v("escape.md"), None, "outside the vault is not indexed");
}

#[test]
fn refresh_adds_updates_deletes_renames_and_skips() {
    let f = fixture();
    write(&f.vault, "a.md", "# Alpha\nVolcanoes erupt with lava.");
    write(&f.vault, "b.md", "Bees make honey in hives.");
    write(&f.vault, "notes/c.md", "Comets have icy tails.");
    write(&f.vault, "empty.md", "");
    write(&f.vault, ".obsidian/workspace.md", "ui state");
    write(&f.vault, ".trash/old.md", "trashed");
    write(&f.vault, ".hidden.md", "dotfile");
    write(&f.vault, "pic.png", "not markdown");
    let r = refresh(&f, &opts());
    assert_eq!(r.added, vec!["a.md", "b.md", "notes/c.md"]);
    assert!(
        r.skipped
            .iter()
            .any(|(p, why)| p == "empty.md" && why.contains("empty")),
        "{:?}",
        r.skipped
    );
    assert_eq!(f.kb.count_unique_documents().unwrap(), 3);
    let title = f.kb.list_documents(&Filter::default(), 10).unwrap();
    assert!(title.iter().any(|d| d.title == "Alpha"));

    // No-op refresh: nothing re-embedded or rewritten.
    let seq = f.kb.store().seq().unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(
        (r.added.len(), r.updated.len(), r.deleted.len(), r.unchanged),
        (0, 0, 0, 3)
    );
    assert_eq!(f.kb.store().seq().unwrap(), seq);

    // Change, delete, rename.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write(&f.vault, "a.md", "# Alpha\nGlaciers carve valleys.");
    fs::remove_file(f.vault.join("b.md")).unwrap();
    fs::rename(f.vault.join("notes/c.md"), f.vault.join("notes/comets.md")).unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.updated, vec!["a.md"]);
    assert_eq!(r.added, vec!["notes/comets.md"]);
    let mut deleted = r.deleted.clone();
    deleted.sort();
    assert_eq!(deleted, vec!["b.md", "notes/c.md"]);
    assert_eq!(public_hits(&f, "glaciers valleys")[0], "a.md");
    let a = f.kb.store().ids_by(LookupField::FilePath, "a.md").unwrap();
    assert_eq!(a.len(), 1);
    assert!(
        !f.kb.store().get(a[0]).unwrap().unwrap().text.contains("Volcanoes"),
        "old content is gone"
    );
    assert!(f
        .kb
        .store()
        .ids_by(LookupField::FilePath, "notes/c.md")
        .unwrap()
        .is_empty());
    assert!(f.kb.agreement().unwrap().ok());
}

#[test]
fn moving_into_private_and_changing_private_dirs_reclassify_without_reembedding() {
    let f = fixture();
    write(&f.vault, "diary.md", "Secret plans for the surprise party.");
    write(&f.vault, "journal/day.md", "Today I walked the dog by the river.");
    refresh(&f, &opts());
    assert!(public_hits(&f, "surprise party plans").contains(&"diary.md".to_string()));

    // Moved into private/: the old public entry goes, the new one is private.
    fs::rename(f.vault.join("diary.md"), f.vault.join("private/diary.md")).unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.added, vec!["private/diary.md"]);
    assert_eq!(r.deleted, vec!["diary.md"]);
    assert_eq!(vis_of(&f, "private/diary.md").as_deref(), Some("private"));
    assert!(public_hits(&f, "surprise party plans")
        .iter()
        .all(|p| !p.contains("diary")));

    // A config change: journal/ becomes private. Metadata-only.
    let ids = f.kb.store().ids_by(LookupField::FilePath, "journal/day.md").unwrap();
    let before = f.kb.store().vector(ids[0]).unwrap();
    let o = VaultOptions {
        private_dirs: vec!["private".into(), "journal".into()],
        force: false,
        actor: Actor::Cli,
    };
    let r = refresh(&f, &o);
    assert_eq!(r.reclassified, vec!["journal/day.md"]);
    assert!(r.updated.is_empty());
    assert_eq!(
        f.kb.store().ids_by(LookupField::FilePath, "journal/day.md").unwrap(),
        ids,
        "same chunks"
    );
    assert_eq!(f.kb.store().vector(ids[0]).unwrap(), before, "not re-embedded");
    assert_eq!(vis_of(&f, "journal/day.md").as_deref(), Some("private"));
    assert!(public_hits(&f, "walked the dog by the river").is_empty());
}

#[test]
fn frontmatter_cannot_set_jarvis_fields_and_bad_bytes_are_indexed_lossily() {
    let f = fixture();
    write(
        &f.vault,
        "private/sneaky.md",
        "---\nvisibility: public\ndoc_type: paper\nsource: https://evil\n---\nhidden text\n",
    );
    fs::write(f.vault.join("latin1.md"), b"caf\xe9 au lait and croissants\n").unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(vis_of(&f, "private/sneaky.md").as_deref(), Some("private"));
    let id = f.kb.store().ids_by(LookupField::FilePath, "private/sneaky.md").unwrap()[0];
    let rec = f.kb.store().get(id).unwrap().unwrap();
    assert_eq!(rec.meta_str("doc_type"), Some("note"));
    assert_eq!(rec.meta_str("source"), Some("local"));
    assert_eq!(rec.meta_str("x_visibility"), Some("public"));
    assert!(
        !rec.text.contains("visibility:"),
        "frontmatter is stripped from the body"
    );
    assert!(
        r.warnings.iter().any(|(p, w)| p == "latin1.md" && w.contains("UTF-8")),
        "{:?}",
        r.warnings
    );
    let id = f.kb.store().ids_by(LookupField::FilePath, "latin1.md").unwrap()[0];
    assert!(f
        .kb
        .store()
        .get(id)
        .unwrap()
        .unwrap()
        .text
        .contains("caf\u{fffd} au lait"));
}

#[test]
fn schema_migration_reembeds_notes_below_the_embed_schema() {
    let f = fixture();
    write(&f.vault, "plain.md", "Just a plain note about tea.");
    write(&f.vault, "rec.md", "---\nstatus: open\n---\nA record about coffee.");
    write(&f.vault, "Drinks/Hot/cocoa.md", "# Hot cocoa\nMilk and cocoa.");
    refresh(&f, &opts());
    // Schema 4 put the title in front of every chunk's embedded text,
    // schema 5 the note's folders in front of the title.
    let embedded = |rel: &str| {
        let id = f.kb.store().ids_by(LookupField::FilePath, rel).unwrap()[0];
        f.kb.store().get(id).unwrap().unwrap().embed_text
    };
    assert!(embedded("plain.md").starts_with("plain\n"), "{}", embedded("plain.md"));
    assert!(embedded("rec.md").starts_with("rec — open\n"), "{}", embedded("rec.md"));
    let cocoa = embedded("Drinks/Hot/cocoa.md");
    assert!(cocoa.starts_with("Drinks › Hot › Hot cocoa\n"), "{cocoa}");
    // Notes indexed under schema 4 (before the folders) are all
    // re-embedded, frontmatter or not; a second refresh has nothing to do.
    let old: Metadata = [("meta_schema".to_string(), json!(4))].into_iter().collect();
    f.kb.update_metadata_fields("plain.md", &old, &Actor::Cli).unwrap();
    f.kb.update_metadata_fields("rec.md", &old, &Actor::Cli).unwrap();
    let plain_ids = f.kb.store().ids_by(LookupField::FilePath, "plain.md").unwrap();
    let rec_ids = f.kb.store().ids_by(LookupField::FilePath, "rec.md").unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.restamped, 0);
    assert_eq!(r.updated, vec!["plain.md", "rec.md"]);
    assert_ne!(
        f.kb.store().ids_by(LookupField::FilePath, "plain.md").unwrap(),
        plain_ids
    );
    assert_ne!(f.kb.store().ids_by(LookupField::FilePath, "rec.md").unwrap(), rec_ids);
    let r = refresh(&f, &opts());
    assert_eq!(r.unchanged, 3);
}

#[test]
fn force_rebuilds_and_a_missing_vault_changes_nothing() {
    let f = fixture();
    write(&f.vault, "a.md", "alpha");
    refresh(&f, &opts());
    let before = f.kb.store().ids_by(LookupField::FilePath, "a.md").unwrap();
    let r = refresh(&f, &VaultOptions { force: true, ..opts() });
    assert_eq!(r.added, vec!["a.md"]);
    assert_ne!(f.kb.store().ids_by(LookupField::FilePath, "a.md").unwrap(), before);
    let err = refresh_vault(&f.kb, &f.vault.join("nope"), &opts(), &|_, _| {}, &Cancel::new()).unwrap_err();
    assert!(err.to_string().contains("does not exist") && err.to_string().contains("nothing was changed"));
    assert_eq!(f.kb.count_unique_documents().unwrap(), 1);
}

#[test]
fn symlink_loops_terminate() {
    let f = fixture();
    write(&f.vault, "d/n.md", "a note in a loop");
    symlink(f.vault.join("d"), f.vault.join("d/again")).unwrap();
    symlink(f.vault.clone(), f.vault.join("d/root")).unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.added, vec!["d/n.md"]);
    assert!(
        r.skipped.iter().any(|(_, why)| why.contains("symlink loop")),
        "{:?}",
        r.skipped
    );
}

#[test]
fn a_one_megabyte_note_is_indexed() {
    let t = tempfile::tempdir().unwrap();
    let vault = t.path().join("vault");
    // Big chunks keep the embedding work (and the test) short.
    let kb = kb_at(
        &t.path().join("rag"),
        KbSettings {
            chunk_size: 16384,
            chunk_overlap: 128,
            ..KbSettings::default()
        },
    );
    let para = "The quick brown fox jumps over the lazy dog near the riverbank. ".repeat(16);
    let mut text = String::from("# Big\n\n");
    while text.len() < 1_000_000 {
        text.push_str(&para);
        text.push_str("\n\n");
    }
    write(&vault, "big.md", &text);
    let r = refresh_vault(&kb, &vault, &opts(), &|_, _| {}, &Cancel::new()).unwrap();
    assert_eq!(r.added, vec!["big.md"]);
    let chunks = kb.store().ids_by(LookupField::FilePath, "big.md").unwrap().len();
    assert!(chunks >= 60, "{chunks} chunks");
}

/// A note over `vault.max_note_bytes` is skipped with a message that
/// names the limit and the fix, and a note that grows past it loses its
/// old (now untrue) entry; the others index as usual.
#[test]
fn a_note_over_the_size_cap_is_skipped_with_a_message() {
    let t = tempfile::tempdir().unwrap();
    let vault = t.path().join("vault");
    let kb = kb_at(
        &t.path().join("rag"),
        KbSettings {
            max_note_bytes: 20_000,
            ..KbSettings::default()
        },
    );
    // One line, no breaks at all: the shape that stalled the index.
    write(&vault, "huge.md", &"x".repeat(50_000));
    write(&vault, "grows.md", "# Grows\n\nA short note for now.\n");
    write(&vault, "small.md", "# Small\n\nOtters eat fish.\n");
    let r = refresh_vault(&kb, &vault, &opts(), &|_, _| {}, &Cancel::new()).unwrap();
    assert_eq!(r.added, vec!["grows.md", "small.md"]);
    let (_, why) = r.skipped.iter().find(|(p, _)| p == "huge.md").expect("huge.md skipped");
    assert!(
        why.contains("50000 bytes") && why.contains("vault.max_note_bytes (20000)") && why.contains("config set"),
        "{why}"
    );
    assert!(kb.store().ids_by(LookupField::FilePath, "huge.md").unwrap().is_empty());

    // A new size: the refresh looks at it again.
    write(&vault, "grows.md", &"A long line. ".repeat(3_000));
    let r = refresh_vault(&kb, &vault, &opts(), &|_, _| {}, &Cancel::new()).unwrap();
    let (_, why) = r
        .skipped
        .iter()
        .find(|(p, _)| p == "grows.md")
        .expect("grows.md skipped");
    assert!(why.contains("old entry was removed"), "{why}");
    assert!(kb.store().ids_by(LookupField::FilePath, "grows.md").unwrap().is_empty());
    assert!(!kb.store().ids_by(LookupField::FilePath, "small.md").unwrap().is_empty());
}

/// The record header does the work: the body never says "rejected" or
/// "job", yet the rejected job application ranks first; and filters only
/// narrow within the privacy-filtered pool.
#[test]
fn records_are_found_through_their_header() {
    let f = fixture();
    write(&f.vault, "jobs/acme.md", "---\ntype: job_application\ncompany: Acme Bio\nstatus: rejected\napplied: 2024-02-01\n---\nSent the CV and a cover letter on Monday. The interview with the hiring manager was friendly.\n");
    write(&f.vault, "jobs/globex.md", "---\ntype: job_application\ncompany: Globex\nstatus: drafting\n---\nStill polishing the cover letter for this one.\n");
    write(
        &f.vault,
        "private/jobs/initech.md",
        "---\ntype: job_application\ncompany: Initech\nstatus: rejected\n---\nSent the CV; heard nothing back.\n",
    );
    write(
        &f.vault,
        "recipes/bread.md",
        "Mix flour, water, salt and yeast; bake at 230 degrees.\n",
    );
    write(
        &f.vault,
        "meetings/standup.md",
        "---\ntype: meeting\n---\nDiscussed the sprint backlog and blockers.\n",
    );
    refresh(&f, &opts());
    let hits = public_hits(&f, "jobs I was rejected from");
    assert_eq!(hits[0], "jobs/acme.md", "{hits:?}");
    let mut req = SearchRequest::new("jobs I was rejected from", 10);
    req.filter = Filter::public_only();
    req.filter.status = Some("rejected".into());
    let hits: Vec<String> =
        f.kb.search(&req)
            .unwrap()
            .iter()
            .map(|h| h.record.meta_str("file_path").unwrap().to_string())
            .collect();
    assert_eq!(
        hits,
        vec!["jobs/acme.md"],
        "the private rejected record stays out of the public pool"
    );
    let schema = f.kb.metadata_value_counts("category").unwrap();
    assert_eq!(schema.get("job_application"), Some(&3));
}

#[test]
fn a_bulk_refresh_commits_many_whole_notes_per_commit() {
    let f = fixture();
    let n = GROUP_NOTES * 2 + 5;
    for i in 0..n {
        write(
            &f.vault,
            &format!("bulk/{i:03}.md"),
            &format!("# Note {i}\n\nBody of note number {i}."),
        );
    }
    let before = f.kb.store().seq().unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.added.len(), n);
    // Three groups (128 + 128 + 5 notes), not one commit per note.
    assert_eq!(f.kb.store().seq().unwrap() - before, 3);
    assert!(f.kb.agreement().unwrap().ok());
    // Every note is whole and findable.
    for i in [0, GROUP_NOTES, n - 1] {
        let ids =
            f.kb.store()
                .ids_by(LookupField::FilePath, &format!("bulk/{i:03}.md"))
                .unwrap();
        assert_eq!(ids.len(), 1, "note {i}");
    }
    // Deleting many notes is grouped too, and a no-op refresh commits nothing.
    for i in 0..GROUP_NOTES + 1 {
        fs::remove_file(f.vault.join(format!("bulk/{i:03}.md"))).unwrap();
    }
    let before = f.kb.store().seq().unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.deleted.len(), GROUP_NOTES + 1);
    assert_eq!(f.kb.store().seq().unwrap() - before, 2);
    let before = f.kb.store().seq().unwrap();
    let r = refresh(&f, &opts());
    assert_eq!(r.unchanged, n - GROUP_NOTES - 1);
    assert_eq!(f.kb.store().seq().unwrap(), before);
    assert_eq!(f.kb.store().files().unwrap().len(), n - GROUP_NOTES - 1);
}

#[test]
fn a_stop_during_a_bulk_refresh_leaves_whole_groups_only() {
    let f = fixture();
    for i in 0..GROUP_NOTES + 10 {
        write(&f.vault, &format!("s/{i:03}.md"), &format!("Stop test note {i}."));
    }
    let cancel = Cancel::new();
    let c = cancel.clone();
    // Stop as the file after the first full group is reached.
    let err = refresh_vault(
        &f.kb,
        &f.vault,
        &opts(),
        &move |done, _| {
            if done == GROUP_NOTES + 3 {
                c.cancel();
            }
        },
        &cancel,
    )
    .unwrap_err();
    assert!(matches!(err, VaultError::Cancelled), "{err}");
    assert_eq!(f.kb.store().files().unwrap().len(), GROUP_NOTES);
    assert!(f.kb.agreement().unwrap().ok());
    // The next refresh finishes the rest.
    let r = refresh(&f, &opts());
    assert_eq!(r.added.len(), 10);
}

mod retrieval;
mod scoped;
