//! The scoped refresh against a real knowledge base: each watcher-style
//! change set decides exactly what the full refresh would, touches nothing
//! else, and declines what it cannot vouch for.

use std::fs;
use std::os::unix::fs::symlink;

use super::*;

fn scoped(f: &Fixture, paths: &[PathBuf]) -> Option<VaultReport> {
    refresh_vault_paths(&f.kb, &f.vault, &opts(), paths, &Cancel::new()).unwrap()
}

fn at(f: &Fixture, rel: &str) -> PathBuf {
    f.vault.canonicalize().unwrap().join(rel)
}

#[test]
fn scoped_refresh_decides_only_the_changed_paths_as_the_full_refresh_would() {
    let f = fixture();
    write(&f.vault, "a.md", "# Alpha\nVolcanoes erupt with lava.");
    write(&f.vault, "notes/b.md", "Bees make honey in hives.");
    refresh(&f, &opts());

    // Create: only the new note is looked at (nothing counted unchanged).
    write(&f.vault, "notes/c.md", "# Comet\nComets have icy tails.");
    let r = scoped(&f, &[at(&f, "notes/c.md")]).unwrap();
    assert_eq!(r.added, ["notes/c.md"]);
    assert_eq!((r.unchanged, r.updated.len(), r.deleted.len()), (0, 0, 0), "{r:?}");

    // An atomic save: temp file written, renamed over the note.
    write(&f.vault, "notes/.c.md.tmp", "# Comet\nA marmoset lighthouse now.");
    let tmp = at(&f, "notes/.c.md.tmp");
    fs::rename(&tmp, f.vault.join("notes/c.md")).unwrap();
    let r = scoped(&f, &[tmp, at(&f, "notes/c.md")]).unwrap();
    assert_eq!(r.updated, ["notes/c.md"]);
    assert!(r.added.is_empty() && r.deleted.is_empty(), "{r:?}");

    // Unchanged bytes: decided unchanged, nothing rewritten.
    let seq = f.kb.store().seq().unwrap();
    let r = scoped(&f, &[at(&f, "a.md")]).unwrap();
    assert_eq!(r.unchanged, 1);
    assert_eq!(f.kb.store().seq().unwrap(), seq, "nothing written");

    // A move into private/: the public entry goes, the private one comes.
    fs::rename(f.vault.join("notes/c.md"), f.vault.join("private/c.md")).unwrap();
    let r = scoped(&f, &[at(&f, "notes/c.md"), at(&f, "private/c.md")]).unwrap();
    assert_eq!(r.deleted, ["notes/c.md"]);
    assert_eq!(r.added, ["private/c.md"]);
    assert_eq!(vis_of(&f, "private/c.md").as_deref(), Some("private"));
    assert_eq!(vis_of(&f, "notes/c.md"), None);
    assert!(
        !public_hits(&f, "marmoset lighthouse")
            .iter()
            .any(|p| p.contains("c.md")),
        "a note moved into private/ is not public"
    );

    // Deleted.
    fs::remove_file(f.vault.join("private/c.md")).unwrap();
    let r = scoped(&f, &[at(&f, "private/c.md")]).unwrap();
    assert_eq!(r.deleted, ["private/c.md"]);

    // A folder moved in (a dot in its name: still a folder of notes), then
    // moved out again: one event for the folder, every note under it.
    let outside = f.vault.parent().unwrap().join("incoming");
    write(&outside, "x.md", "Xylophones are loud.");
    write(&outside, "deep/y.md", "Yaks are hairy.");
    fs::rename(&outside, f.vault.join("proj.v2")).unwrap();
    let r = scoped(&f, &[at(&f, "proj.v2")]).unwrap();
    assert_eq!(r.added, ["proj.v2/deep/y.md", "proj.v2/x.md"]);
    fs::rename(f.vault.join("proj.v2"), &outside).unwrap();
    let r = scoped(&f, &[at(&f, "proj.v2")]).unwrap();
    let mut gone = r.deleted.clone();
    gone.sort();
    assert_eq!(gone, ["proj.v2/deep/y.md", "proj.v2/x.md"]);

    // A sibling whose name merely starts the same is not under the folder.
    write(&f.vault, "notes-old/z.md", "Zebras are striped.");
    refresh(&f, &opts());
    let r = scoped(&f, &[at(&f, "notes-ol")]).unwrap();
    assert!(r.deleted.is_empty(), "{r:?}");

    // Dotfiles and dot-folders are ignored, as the walk ignores them.
    write(&f.vault, ".obsidian/workspace.md", "ui");
    let r = scoped(&f, &[at(&f, ".obsidian/workspace.md")]).unwrap();
    assert!(r.added.is_empty(), "{r:?}");

    // The scoped runs left the index exactly as a full refresh wants it.
    let r = refresh(&f, &opts());
    assert!(
        r.added.is_empty() && r.updated.is_empty() && r.deleted.is_empty() && r.reclassified.is_empty(),
        "the full sweep found nothing left to do: {r:?}"
    );
    assert_eq!(r.unchanged, 3, "a.md, notes/b.md, notes-old/z.md");
}

#[test]
fn scoped_refresh_declines_what_it_cannot_vouch_for() {
    let f = fixture();
    write(&f.vault, "private/s.md", "Secret salamanders.");
    write(&f.vault, "real/n.md", "Newts in a pond.");
    symlink(f.vault.join("private/s.md"), f.vault.join("link.md")).unwrap();
    symlink(f.vault.join("real"), f.vault.join("alias")).unwrap();
    refresh(&f, &opts());
    let seq = f.kb.store().seq().unwrap();
    for (what, p) in [
        ("outside the vault", f.vault.parent().unwrap().join("elsewhere.md")),
        ("the vault root itself", f.vault.canonicalize().unwrap()),
        ("a symlinked note", at(&f, "link.md")),
        ("a note through a symlinked folder", at(&f, "alias/n.md")),
        ("a symlinked folder", at(&f, "alias")),
    ] {
        assert!(scoped(&f, &[p]).is_none(), "{what}: the full sweep decides");
    }
    // A folder that came in with a symlink inside it.
    let outside = f.vault.parent().unwrap().join("box");
    write(&outside, "b.md", "Boxes of badgers.");
    symlink(f.vault.join("private"), outside.join("inner")).unwrap();
    fs::rename(&outside, f.vault.join("box")).unwrap();
    assert!(scoped(&f, &[at(&f, "box")]).is_none(), "a symlink inside a new folder");
    assert_eq!(f.kb.store().seq().unwrap(), seq, "declining wrote nothing");
}
