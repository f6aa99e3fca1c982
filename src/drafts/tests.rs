//! Drafts against a real temporary drafts root.

use std::path::Path;

use proptest::prelude::*;

use super::hunks::{self, HunkKind};
use super::proposals::Proposals;
use super::render::{markdown_to_html, safe_link};
use super::retention;
use super::versions;
use super::workspace::{check_name, Visibility, Workspace};
use super::{DraftSettings, DraftsError};

fn ws() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = Workspace::open(DraftSettings::with_root(dir.path().join("drafts"))).expect("open");
    (dir, ws)
}

/// Every file under `dir` with its bytes, for before/after comparisons.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let e = e.expect("entry");
            let p = e.path();
            let t = e.file_type().expect("type");
            if t.is_dir() {
                stack.push(p);
            } else {
                let bytes = if t.is_symlink() {
                    b"<link>".to_vec()
                } else {
                    std::fs::read(&p).expect("read")
                };
                out.push((p.strip_prefix(dir).expect("prefix").display().to_string(), bytes));
            }
        }
    }
    out.sort();
    out
}

const HOSTILE: &[&str] = &[
    "../x.md",
    "..",
    ".",
    "",
    "/etc/passwd",
    "/tmp/x.md",
    "a/b.md",
    "a\\b.md",
    "..\\x.md",
    "-latex=pdflatex -shell-escape %O %S.tex",
    "-x.tex",
    "x\0.md",
    "x\n.md",
    "x\u{7f}.md",
    ".hidden.md",
    ".versions",
    "draft.json",
    "DRAFT.JSON",
    "a\u{2215}b.md",                // DIVISION SLASH
    "a\u{2044}b.md",                // FRACTION SLASH
    "a\u{ff0f}b.md",                // FULLWIDTH SOLIDUS
    "\u{ff0e}\u{ff0e}\u{ff0f}x.md", // FULLWIDTH FULL STOP ×2 + SOLIDUS
    "x\u{2024}md",                  // ONE DOT LEADER
    "x\u{200b}.md",                 // ZERO WIDTH SPACE
    "x\u{202e}dm.exe",              // RIGHT-TO-LEFT OVERRIDE
    "x.exe",
    "x.sh",
    "x",
    "x.md ",
    "x.md.",
    "a..b.md",
];

#[test]
fn containment_refuses_every_hostile_name() {
    let (_t, ws) = ws();
    let d = ws
        .create_draft("CV", "cv.md", "# CV\n", Visibility::Public, None)
        .expect("create");
    let long = format!("{}.md", "a".repeat(200));
    for name in HOSTILE.iter().copied().chain([long.as_str()]) {
        let err = ws.resolve(&d.id, name).expect_err(name);
        assert!(matches!(err, DraftsError::BadName { .. }), "{name:?}: {err}");
        assert!(ws.add_draft_file(&d.id, name, "x").is_err(), "{name:?}");
        assert!(ws.read_file(&d.id, name).is_err(), "{name:?}");
        assert!(ws.save_draft_file(&d.id, name, "x", None).is_err(), "{name:?}");
    }
    // Good names pass, in any script.
    for name in [
        "cv.md",
        "Lebenslauf (2026).tex",
        "refs.bib",
        "données.csv",
        "fig-1.png",
        "notes v2.txt",
    ] {
        check_name(name, &ws.settings().extensions).expect(name);
    }
    // Bad ids.
    for id in ["../x", "", "A", "a/b", "a.b", &"a".repeat(65), "x\0"] {
        assert!(
            matches!(ws.resolve(id, "cv.md"), Err(DraftsError::BadId { .. })),
            "{id:?}"
        );
    }
}

#[test]
fn a_planted_symlink_cannot_reach_out() {
    let (t, ws) = ws();
    let d = ws
        .create_draft("CV", "cv.md", "# CV\n", Visibility::Public, None)
        .expect("create");
    let other = ws
        .create_draft("Other", "o.md", "other\n", Visibility::Private, None)
        .expect("create");
    let outside = t.path().join("outside.md");
    std::fs::write(&outside, "secret").expect("write");
    let dir = ws.root().join(&d.id);
    std::os::unix::fs::symlink(&outside, dir.join("link.md")).expect("symlink");
    std::os::unix::fs::symlink(ws.root().join(&other.id).join("o.md"), dir.join("cross.md")).expect("symlink");
    std::os::unix::fs::symlink(t.path().join("nowhere.md"), dir.join("dangling.md")).expect("symlink");
    for name in ["link.md", "cross.md", "dangling.md"] {
        let err = ws.resolve(&d.id, name).expect_err(name);
        assert!(matches!(err, DraftsError::Escapes { .. }), "{name}: {err}");
        assert!(ws.read_file(&d.id, name).is_err());
        assert!(ws.save_draft_file(&d.id, name, "pwned", None).is_err());
    }
    assert_eq!(std::fs::read_to_string(&outside).expect("read"), "secret");
    assert!(!t.path().join("nowhere.md").exists());
    // A whole draft folder replaced by a link to outside.
    let evil = t.path().join("evil");
    std::fs::create_dir(&evil).expect("mkdir");
    std::fs::write(evil.join("cv.md"), "outside").expect("write");
    std::os::unix::fs::symlink(&evil, ws.root().join("20260101-evil-0000")).expect("symlink");
    let err = ws.resolve("20260101-evil-0000", "cv.md").expect_err("linked folder");
    assert!(matches!(err, DraftsError::Escapes { .. }), "{err}");
    assert!(ws.add_draft_file("20260101-evil-0000", "new.md", "x").is_err());
    assert!(!evil.join("new.md").exists());
    // `.versions` replaced by a link: snapshots refuse rather than write out.
    std::os::unix::fs::symlink(&evil, dir.join(".versions")).expect("symlink");
    assert!(ws.save_draft_file(&d.id, "cv.md", "changed\n", None).is_err());
    assert_eq!(tree(&evil).len(), 1);
}

#[test]
fn create_add_save_and_versions() {
    let (_t, ws) = ws();
    let d = ws
        .create_draft("My CV for ACME!", "cv.md", "one\n", Visibility::Private, Some("sess-1"))
        .expect("create");
    // A private draft's id is opaque (it is shown where its title is not);
    // a public one's reads like its title.
    assert!(!d.id.contains("cv") && !d.id.contains("acme"), "{}", d.id);
    assert!(
        crate::drafts::workspace::valid_id(&d.id) && d.id.len() == 21,
        "{}",
        d.id
    );
    let (_t2, other) = self::ws();
    let public = other
        .create_draft("My CV for ACME!", "cv.md", "one\n", Visibility::Public, None)
        .expect("create");
    assert!(public.id.contains("-my-cv-for-acme-"), "{}", public.id);
    assert_eq!(ws.meta(&d.id).expect("meta").visibility, Visibility::Private);
    assert_eq!(ws.meta(&d.id).expect("meta").session_id.as_deref(), Some("sess-1"));
    assert!(matches!(
        ws.add_draft_file(&d.id, "cv.md", "again"),
        Err(DraftsError::Exists { .. })
    ));
    ws.add_draft_file(&d.id, "refs.bib", "@book{}\n").expect("add");
    assert_eq!(ws.files(&d.id).expect("files"), ["cv.md", "refs.bib"]);
    let f = ws.read_file(&d.id, "cv.md").expect("read");
    let h2 = ws
        .save_draft_file(&d.id, "cv.md", "two\n", Some(&f.hash))
        .expect("save");
    // A second tab still holding the first hash is refused; nothing written.
    let err = ws
        .save_draft_file(&d.id, "cv.md", "from tab 2\n", Some(&f.hash))
        .expect_err("stale save");
    assert!(matches!(err, DraftsError::Moved { .. }));
    assert_eq!(ws.read_file(&d.id, "cv.md").expect("read").text, "two\n");
    ws.save_draft_file(&d.id, "cv.md", "three\n", Some(&h2)).expect("save");
    let vs = versions::list_versions(&ws, &d.id, "cv.md").expect("versions");
    assert_eq!(vs.len(), 2);
    assert_eq!(
        versions::read_version(&ws, &d.id, "cv.md", &vs[0].version).expect("v"),
        "two\n"
    );
    assert_eq!(
        versions::read_version(&ws, &d.id, "cv.md", &vs[1].version).expect("v"),
        "one\n"
    );
    versions::restore_version(&ws, &d.id, "cv.md", &vs[1].version).expect("restore");
    assert_eq!(ws.read_file(&d.id, "cv.md").expect("read").text, "one\n");
    // The restore snapshotted "three" first, so it is undoable.
    let vs = versions::list_versions(&ws, &d.id, "cv.md").expect("versions");
    assert_eq!(
        versions::read_version(&ws, &d.id, "cv.md", &vs[0].version).expect("v"),
        "three\n"
    );
    for bad in ["../../x", "1", "1-2-3", "a-1", ""] {
        assert!(versions::read_version(&ws, &d.id, "cv.md", bad).is_err(), "{bad}");
    }
    // Size cap.
    let big = "x".repeat(2_000_001);
    assert!(matches!(
        ws.save_draft_file(&d.id, "cv.md", &big, None),
        Err(DraftsError::TooLarge { .. })
    ));
    let list = ws.list_drafts().expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].files, ["cv.md", "refs.bib"]);
}

#[test]
fn propose_writes_nothing_and_apply_is_one_shot() {
    let (_t, ws) = ws();
    let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
    let d = ws
        .create_draft("t", "doc.md", old, Visibility::Public, None)
        .expect("create");
    let before = tree(ws.root());
    let props = Proposals::new();
    let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n";
    let p = props.propose_edit(&ws, &d.id, "doc.md", new, None).expect("propose");
    assert_eq!(tree(ws.root()), before, "propose wrote something");
    assert_eq!(p.hunks.len(), 2);
    assert_eq!(p.hunks[0].kind, HunkKind::Replace);
    assert_eq!(p.hunks[1].kind, HunkKind::Add);
    // Context on both sides, but only the changed line is in the spans.
    assert_eq!(p.hunks[0].old_lines, ["a", "b", "c", "d", "e"]);
    assert_eq!(p.hunks[0].old_spans, [[1, 2]]);
    assert_eq!(p.hunks[0].new_spans, [[1, 2]]);
    assert_eq!(p.hunks[1].old_spans, Vec::<[usize; 2]>::new());
    assert!(matches!(
        props.apply_hunks(&ws, &p.token, &[7]),
        Err(DraftsError::BadHunk { .. })
    ));
    let applied = props.apply_hunks(&ws, &p.token, &[1]).expect("apply");
    assert_eq!(ws.read_file(&d.id, "doc.md").expect("read").text, format!("{old}n\n"));
    assert!(applied.snapshot.is_some());
    assert!(matches!(
        props.apply_hunks(&ws, &p.token, &[0]),
        Err(DraftsError::NoProposal)
    ));
    // Stale: the file moved after the proposal.
    let p = props
        .propose_edit(&ws, &d.id, "doc.md", "zzz\n", None)
        .expect("propose");
    ws.save_draft_file(&d.id, "doc.md", "human edit\n", None).expect("save");
    assert!(matches!(
        props.apply_hunks(&ws, &p.token, &[0]),
        Err(DraftsError::Stale { .. })
    ));
    assert_eq!(ws.read_file(&d.id, "doc.md").expect("read").text, "human edit\n");
    assert!(matches!(
        props.propose_edit(&ws, &d.id, "doc.md", "human edit\n", None),
        Err(DraftsError::NoChange { .. })
    ));
    assert!(props.propose_edit(&ws, &d.id, "missing.md", "x", None).is_err());
}

#[test]
fn hunk_kinds_come_from_the_op_tags() {
    let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    let h = hunks::compute(old, "1\n2\n3\n4\n6\n7\n8\n9\n");
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].kind, HunkKind::Remove);
    assert_eq!(h[0].old_spans, [[3, 4]]);
    assert!(h[0].new_spans.is_empty());
    assert!(!h[0].new_lines.is_empty(), "context on the new side too");
    assert!(hunks::compute(old, old).is_empty());
}

fn lines_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "", "x y"]), 0..40)
        .prop_map(|v| v.iter().map(|l| format!("{l}\n")).collect::<String>())
}

proptest! {
    #[test]
    fn any_subset_of_hunks_applies_exactly(old in lines_strategy(), new in lines_strategy(), mask in any::<u64>(), tail_nl in any::<bool>()) {
        let new = if tail_nl { new } else { new.trim_end_matches('\n').to_string() };
        let hs = hunks::compute(&old, &new);
        let all: Vec<usize> = (0..hs.len()).collect();
        prop_assert_eq!(hunks::apply(&old, &new, &hs, &all), new.clone());
        prop_assert_eq!(hunks::apply(&old, &new, &hs, &[]), old.clone());
        let chosen: Vec<usize> = all.iter().copied().filter(|i| mask & (1 << (i % 64)) != 0).collect();
        // Expected: take each hunk's range from the chosen side, by hand.
        let ol = hunks::split_lines(&old);
        let nl = hunks::split_lines(&new);
        let mut expected = String::new();
        let mut cur = 0;
        for h in &hs {
            expected.extend(ol[cur..h.old_start].iter().copied());
            if chosen.contains(&h.index) {
                expected.extend(nl[h.new_start..h.new_start + h.new_len].iter().copied());
            } else {
                expected.extend(ol[h.old_start..h.old_start + h.old_len].iter().copied());
            }
            cur = h.old_start + h.old_len;
        }
        expected.extend(ol[cur..].iter().copied());
        let got = hunks::apply(&old, &new, &hs, &chosen);
        prop_assert_eq!(&got, &expected);
        // A subset is itself a clean edit: its own diff against the old
        // text only touches lines inside the chosen hunks.
        for h in &hs {
            prop_assert!(h.kind == HunkKind::Replace || h.old_spans.is_empty() || h.new_spans.is_empty());
            prop_assert!(!h.old_spans.is_empty() || !h.new_spans.is_empty());
        }
    }
}

#[test]
fn proposals_through_the_workspace_match_any_subset() {
    let (_t, ws) = ws();
    let old: String = (0..30).map(|i| format!("line {i}\n")).collect();
    let d = ws
        .create_draft("t", "doc.md", &old, Visibility::Public, None)
        .expect("create");
    let mut new_lines: Vec<String> = (0..30).map(|i| format!("line {i}\n")).collect();
    new_lines[2] = "changed 2\n".into();
    new_lines.remove(15);
    new_lines.insert(25, "inserted\n".into());
    let new: String = new_lines.concat();
    let props = Proposals::new();
    let p = props.propose_edit(&ws, &d.id, "doc.md", &new, None).expect("propose");
    assert_eq!(p.hunks.len(), 3);
    let applied = props.apply_hunks(&ws, &p.token, &[0, 2]).expect("apply");
    let text = ws.read_file(&d.id, "doc.md").expect("read").text;
    assert_eq!(text, hunks::apply(&old, &new, &p.hunks, &[0, 2]));
    assert!(text.contains("changed 2") && text.contains("inserted") && text.contains("line 15\n"));
    assert_eq!(applied.hash, super::content_hash(text.as_bytes()));
}

#[test]
fn retention_sweeps_by_id_and_skips_keep() {
    let (_t, ws) = ws();
    let a = ws.create_draft("a", "a.md", "a", Visibility::Public, None).expect("a");
    let b = ws.create_draft("b", "b.md", "b", Visibility::Public, None).expect("b");
    ws.set_keep(&b.id, true).expect("keep");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(40 * 86_400);
    assert!(retention::stale_drafts(&ws, std::time::SystemTime::now(), 30)
        .expect("stale")
        .is_empty());
    assert!(retention::stale_drafts(&ws, later, 0).expect("disabled").is_empty());
    let stale = retention::stale_drafts(&ws, later, 30).expect("stale");
    assert_eq!(stale, vec![a.id.clone()]);
    // Asking to prune a keep draft anyway is refused quietly.
    let removed = retention::prune_drafts(&ws, &[a.id.clone(), b.id.clone()]).expect("prune");
    assert_eq!(removed, vec![a.id.clone()]);
    assert!(ws.meta(&a.id).is_err());
    assert!(ws.meta(&b.id).is_ok());
    assert!(retention::prune_drafts(&ws, &["../../etc".to_string()]).is_err());
    retention::delete_draft(&ws, &b.id).expect("delete");
    assert!(ws.list_drafts().expect("list").is_empty());
}

#[test]
fn markdown_is_escaped_and_anchored() {
    let src = "# Title\n\nSome *text* <script>alert(1)</script> here.\n\n<div onclick=\"x()\">raw</div>\n\n\
               [bad](javascript:alert(1)) [bad2](  JaVa\tScRiPt:alert(1)) [data](data:text/html,hi) \
               [ok](https://example.org) [rel](other.md#x) [mail](mailto:a@b.c)\n\n\
               ![img](https://tracker.example/p.png) ![local](fig.png)\n\n\
               Inline $x^2$ and display\n\n$$\\frac{a}{b}$$\n\nBroken $\\frac{a$ maths.\n\n\
               Link maths $\\href{javascript:alert(1)}{x}$\n\n- one\n- two\n";
    let html = markdown_to_html(src);
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<div"), "{html}");
    assert!(html.contains("&lt;script&gt;"), "{html}");
    assert!(!html.to_ascii_lowercase().contains("javascript:alert(1)\""), "{html}");
    assert!(
        !html.contains("href=\"javascript") && !html.contains("href=\"data:"),
        "{html}"
    );
    assert!(html.contains("href=\"https://example.org\""));
    assert!(html.contains("href=\"other.md#x\""));
    assert!(html.contains("href=\"mailto:a@b.c\""));
    assert!(!html.contains("tracker.example"), "{html}");
    assert!(html.contains("src=\"fig.png\""));
    assert!(html.contains("<h1 data-line=\"0\">"), "{html}");
    assert!(html.contains("<p data-line=\"2\">"), "{html}");
    assert!(
        html.contains("<ul data-line=\"22\">") || html.contains("<ul data-line="),
        "{html}"
    );
    assert!(html.contains("<math"), "{html}");
    assert!(html.contains("display=\"block\""), "{html}");
    assert!(html.contains("class=\"math-error\""), "{html}");
    assert!(html.contains("$\\frac{a$"), "{html}");
    assert!(!html.contains("<a href=\"javascript"), "{html}");
    // The \text of maths is escaped, not markup.
    let html = markdown_to_html("$\\text{<img src=x onerror=alert(1)>}$\n");
    assert!(!html.contains("<img"), "{html}");
}

#[test]
fn data_lines_follow_the_source() {
    let src = "para one\n\n```\ncode\n```\n\n> quote\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
    let html = markdown_to_html(src);
    for (tag, line) in [("p", 0), ("pre", 2), ("blockquote", 6), ("hr", 8), ("table", 10)] {
        assert!(
            html.contains(&format!("<{tag} data-line=\"{line}\"")),
            "{tag}@{line}: {html}"
        );
    }
}

#[test]
fn link_policy() {
    for ok in [
        "https://a.b",
        "http://a",
        "mailto:x@y",
        "rel.md",
        "#top",
        "/abs",
        "?q=1",
        "a/b:c",
    ] {
        assert!(safe_link(ok), "{ok}");
    }
    for bad in [
        "javascript:x",
        "JAVASCRIPT:x",
        " javascript:x",
        "java\nscript:x",
        "vbscript:x",
        "data:x",
        "file:///etc/passwd",
    ] {
        assert!(!safe_link(bad), "{bad}");
    }
}

#[test]
fn one_renderer_two_presets() {
    use super::render::{render, RenderOptions};
    let src = "# T\n\n![pic](fig.png) [off](//evil.example/x) [o](obsidian://open?x)\n\n<b>raw</b>\n";
    let chat = render(src, &RenderOptions::CHAT);
    let preview = render(src, &RenderOptions::PREVIEW);
    // Same safety rules for both.
    for h in [&chat, &preview] {
        assert!(!h.contains("evil.example"), "{h}");
        assert!(!h.contains("<b>"), "{h}");
        assert!(h.contains("href=\"obsidian://open?x\""), "{h}");
    }
    // Options differ only where asked.
    assert!(!chat.contains("data-line"), "{chat}");
    assert!(!chat.contains("<img"), "{chat}");
    assert!(chat.contains("<a href=\"fig.png\">pic</a>"), "{chat}");
    assert!(preview.contains("<h1 data-line=\"0\">"), "{preview}");
    assert!(preview.contains("<img src=\"fig.png\""), "{preview}");
    assert!(!safe_link("\\\\evil.example\\x"));
}

#[test]
fn the_preview_loads_only_relative_images() {
    use super::render::{render, RenderOptions};
    // Found by the markdown_preview fuzz target: an image pointing at
    // `obsidian:` would hand a URL to another application on render.
    for src in [
        "obsidian://open?vault=v&file=n",
        "OBSIDIAN:x",
        "https://x.example/a.png",
        "mailto:a@b.example",
        "//x.example/a.png",
        "javascript:alert(1)",
        "data:image/png;base64,AA",
    ] {
        let h = render(&format!("![p]({src})"), &RenderOptions::PREVIEW);
        // The image stays as its alt text with nothing to load.
        assert!(h.contains("<img src=\"\" alt=\"p\""), "{src} -> {h}");
    }
    for src in ["fig.png", "figs/a%20b.png", "./a.png", "a.png?x=1", "a.png#f"] {
        let h = render(&format!("![p]({src})"), &RenderOptions::PREVIEW);
        assert!(h.contains(&format!("<img src=\"{src}\"")), "{src} -> {h}");
    }
}

#[test]
fn a_drafts_root_inside_the_vault_is_refused_before_anything_is_made() {
    let t = tempfile::tempdir().unwrap();
    let vault = t.path().join("vault");
    std::fs::create_dir(&vault).unwrap();
    let with_vault = |root: std::path::PathBuf| {
        let mut s = DraftSettings::with_root(root);
        s.vault = Some(vault.clone());
        s
    };
    let inside = vault.join("notes/drafts");
    let e = Workspace::open(with_vault(inside.clone())).unwrap_err();
    assert!(matches!(e, DraftsError::InsideVault { .. }), "{e}");
    assert!(e.to_string().contains("drafts.dir"), "{e}");
    assert!(!vault.join("notes").exists(), "nothing was created");
    // Reached through a link, it is still inside.
    std::os::unix::fs::symlink(&vault, t.path().join("alias")).unwrap();
    let e = Workspace::open(with_vault(t.path().join("alias/drafts"))).unwrap_err();
    assert!(matches!(e, DraftsError::InsideVault { .. }), "{e}");
    // Beside the vault (even with a name that starts like it) is fine.
    Workspace::open(with_vault(t.path().join("vault-drafts"))).expect("outside the vault");
    Workspace::open(with_vault(t.path().join("drafts"))).expect("outside the vault");
}
