//! Golden-file tests on PDFs the test suite makes itself: each
//! `tests/fixtures/pdf/tex/NAME.tex` is compiled with the installed pdfTeX
//! (`cargo xtask test` installs it, see xtask/src/setup.rs), converted, and
//! compared with the committed `NAME.md` next to it; assertions then name
//! the rule each document exercises, so a failure says which rule broke.
//!
//! After an intended change of output: `JARVIS_BLESS=1 cargo test --lib
//! pdf::tests::tex`, then review the diff of the `.md` files.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::engine;
use super::golden::{compare_golden, paragraph_with};
use crate::pdf::*;

fn tex_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf/tex")
}

/// The PDF pdfTeX makes of `NAME.tex` (compiled once per test run; twice
/// over, so a table of contents is filled in).
fn tex_pdf(name: &str) -> Arc<Vec<u8>> {
    type Cache = Mutex<HashMap<String, Arc<OnceLock<Arc<Vec<u8>>>>>>;
    static BUILT: OnceLock<Cache> = OnceLock::new();
    let cell = {
        let mut map = crate::lock::lock(BUILT.get_or_init(Default::default));
        map.entry(name.to_string()).or_default().clone()
    };
    cell.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir for pdflatex");
        let src = tex_dir().join(format!("{name}.tex"));
        std::fs::copy(&src, dir.path().join(format!("{name}.tex")))
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        for _ in 0..2 {
            // The test suite's own fixture build, not product code: a plain
            // child with the test's environment is what pdfTeX needs.
            #[allow(clippy::disallowed_methods)]
            let out = std::process::Command::new("pdflatex")
                .args(["-interaction=nonstopmode", "-halt-on-error", &format!("{name}.tex")])
                .current_dir(dir.path())
                // The same bytes every run (no creation date in the file).
                .env("SOURCE_DATE_EPOCH", "1700000000")
                .env("FORCE_SOURCE_DATE", "1")
                .output()
                .expect("run pdflatex (installed by `cargo xtask test`: texlive-latex-base)");
            assert!(
                out.status.success(),
                "pdflatex {name}.tex failed:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        Arc::new(std::fs::read(dir.path().join(format!("{name}.pdf"))).expect("pdflatex wrote the PDF"))
    })
    .clone()
}

fn converted(name: &str) -> Converted {
    let bytes = tex_pdf(name);
    pdf_to_markdown(engine(), &format!("{name}.pdf"), &bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn golden_tex(name: &str) -> String {
    let md = converted(name).markdown;
    compare_golden(&format!("{name}.pdf"), md, &tex_dir().join(format!("{name}.md")))
}

fn headings(md: &str) -> Vec<&str> {
    md.lines().filter(|l| l.starts_with('#')).collect()
}

#[test]
fn a_running_header_goes_but_a_body_line_repeated_at_page_tops_stays() {
    let md = golden_tex("journal");
    // The header (with its page number) stands apart from the body in the
    // top margin of every page: dropped.
    assert!(!md.contains("PROCEEDINGS OF THE FIXTURE WORKSHOP"), "{md}");
    // The body line that opens pages 2–4 repeats as often, inside the top
    // 12 % of the page, but follows the next line at the body's spacing.
    assert_eq!(
        md.matches("Logbook entry: every figure below comes from one machine.")
            .count(),
        3,
        "{md}"
    );
}

#[test]
fn text_that_looks_like_markdown_is_escaped() {
    let md = golden_tex("journal");
    assert!(md.contains("\n\\#include <stdio.h> is the line"), "{md}");
    assert!(md.contains("\n\\> marks a quoted reply"), "{md}");
    assert!(md.contains("\n1999\\. The year the format was fixed"), "{md}");
    assert!(
        !md.lines().any(|l| l.starts_with("#include") || l.starts_with("> ")),
        "{md}"
    );
}

#[test]
fn contents_entries_are_list_items_read_in_rows() {
    let md = golden_tex("journal");
    // The contents page: entries (bold section lines set like headings,
    // and dotted subsection lines) are list items with their page numbers,
    // read in rows — a short page of entries and page numbers is not two
    // columns.
    let contents = paragraph_with(&md, "- 1 Introduction");
    assert!(
        contents.starts_with("- 1 Introduction 2\n- 2 Method 2\n- 2.1 Setup 2\n"),
        "{md}"
    );
    assert!(contents.contains("\n- 4 Conclusion 4"), "{md}");
}

#[test]
fn a_caption_set_like_a_heading_is_not_one() {
    let md = golden_tex("journal");
    assert!(md.contains("\nTable 2: Speeds on one machine\n"), "{md}");
    // Headings are the sections of the body, once each; the caption set in
    // large bold ("Table 2: …") is not one.
    assert_eq!(
        headings(&md),
        [
            "# Contents",
            "# 1 Introduction",
            "# 2 Method",
            "## 2.1 Setup",
            "## 2.2 Measurements",
            "# 3 Results",
            "# 4 Conclusion",
        ],
        "{md}"
    );
}

#[test]
fn a_gutter_hidden_by_a_spanning_author_grid_is_found_below_it() {
    let md = golden_tex("gutter");
    // The left column is finished before the right one starts: the claims
    // come out in the order they were written, each sentence whole.
    let mut at = 0;
    for n in 1..=80 {
        let claim = format!("Claim {n} holds for every column of the page.");
        let pos = md[at..]
            .find(&claim)
            .unwrap_or_else(|| panic!("{claim:?} missing or out of order:\n{md}"));
        at += pos + claim.len();
    }
    // The grid itself is front matter under the title, not a table.
    assert!(
        md.starts_with("# Columns Under a Grid of Authors\n\nAda Example Ben Sample Cleo Fixture\n"),
        "{md}"
    );
    assert!(!md.contains('|'), "{md}");
}

#[test]
fn lines_set_like_headings_that_are_labels_are_not_headings() {
    let md = golden_tex("headings");
    // Only the sections are headings: not a theorem's head on its own line,
    // a keywords line, a formula made large by its integral sign, the same
    // bold label over three panels of a figure, a label straight above a
    // caption, or an affiliation line.
    assert_eq!(
        headings(&md),
        [
            "# Evidence",
            "## 1 Results",
            "### 1.1 Discussion",
            "## Acknowledgements"
        ],
        "{md}"
    );
    for line in ["Keywords: layout analysis, headings, evidence", "Example Image"] {
        assert!(md.contains(&format!("\n{line}\n")), "{line}:\n{md}");
    }
    // The theorem's head opens its paragraph; the affiliation is text.
    assert!(
        paragraph_with(&md, "Theorem 1").starts_with("Theorem 1 Every heading"),
        "{md}"
    );
    assert!(
        paragraph_with(&md, "Institute of Reading").starts_with("Institute of Reading, University"),
        "{md}"
    );
    assert_eq!(md.matches("\nPanel Result\n").count(), 3, "{md}");
}

#[test]
fn a_full_width_table_above_two_columns_keeps_its_rows() {
    let md = golden_tex("widetable");
    // The table's empty lane lines up with the gutter below it; its rows
    // are cells apart, so they stay whole rows of one table.
    assert!(
        md.contains(
            "| Ion | First setting | Second setting | Third setting | Fourth setting |\n| --- | --- | --- | --- | --- |\n| K | (2e) + (2f) | (4i) | (2c) + (2d) | (4f) |\n"
        ),
        "{md}"
    );
    assert!(md.contains("\n| Ag | (1a) | (4k) | (3b) | (4h) |\n"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with("| --- |")).count(), 1, "{md}");
    // And the columns under it still read one after the other.
    let mut at = 0;
    for n in 1..=160 {
        let claim = format!("Claim {n} holds for every column of the page.");
        let pos = md[at..]
            .find(&claim)
            .unwrap_or_else(|| panic!("{claim:?} missing or out of order:\n{md}"));
        at += pos + claim.len();
    }
}

#[test]
fn contents_in_one_column_beside_prose_stay_apart_from_it() {
    let md = golden_tex("frontcontents");
    // The lane between the entries and their page numbers is not the
    // gutter (the first word past it is a number on every entry row); the
    // gutter under the spanning title block is, though the entries share
    // few rows with the prose beside them. The entries are list items, in
    // order, once each, and no page number is read into the prose.
    let contents = paragraph_with(&md, "- 1 Introduction");
    assert!(
        contents.starts_with("- 1 Introduction 1\n- 2 Installation 2\n- 3 Changes from Older Versions 2\n"),
        "{md}"
    );
    assert!(contents.ends_with("\n- 16 What This Package Cannot Do 2"), "{md}");
    let mut at = 0;
    for n in 1..=425 {
        let claim = format!("Claim {n} is read in its column.");
        let pos = md[at..]
            .find(&claim)
            .unwrap_or_else(|| panic!("{claim:?} missing or out of order:\n{md}"));
        at += pos + claim.len();
    }
    // A line of prose ending in a number is not an entry; the date under
    // the title is not a heading numbered 20; a bold paragraph of three
    // lines in the abstract is a paragraph.
    assert!(!md.contains("\n- in its column"), "{md}");
    assert!(md.contains("\n20 April 1999\n"), "{md}");
    assert!(
        paragraph_with(&md, "This short package").starts_with("This short package sets papers for one society"),
        "{md}"
    );
    assert!(
        paragraph_with(&md, "This document is version").starts_with("This document is version 4.0 of the twentieth"),
        "{md}"
    );
    assert_eq!(
        headings(&md),
        [
            "# Contents Beside the Abstract",
            "## Contents",
            "## Abstract",
            "## 1 Introduction",
            "## 2 Installation",
            "## 3 Changes from Older Versions",
            "## 4 Options to the Package"
        ],
        "{md}"
    );
}

#[test]
fn the_outline_of_a_hyperref_paper_is_read_depth_first_with_its_levels() {
    let bytes = tex_pdf("outline");
    let got: Vec<(usize, String)> = outline(engine(), "outline.pdf", &bytes)
        .expect("outline")
        .into_iter()
        .map(|e| (e.level, e.title))
        .collect();
    let want = [
        (1, "Introduction"),
        (1, "Method"),
        (2, "Field data"),
        (3, "Night counts"),
        (2, "Analysis"),
        (1, "Results and discussion"),
    ];
    let want: Vec<(usize, String)> = want.iter().map(|(l, t)| (*l, t.to_string())).collect();
    assert_eq!(got, want);
}

#[test]
fn margin_line_numbers_are_dropped_and_headings_keep_their_own_numbers() {
    let md = golden_tex("linenos");
    // No title: the first heading stands for it, as H1.
    assert_eq!(
        headings(&md),
        vec![
            "# 1 Introduction",
            "## 2 Method",
            "### 2.1 Field data",
            "### 2.2 Analysis",
            "## 3 Results"
        ]
    );
    // No line starts with the margin count, and the prose reads whole.
    assert!(
        md.lines()
            .all(|l| l.split(' ').next().is_none_or(|w| w.parse::<u32>().is_err())),
        "{md}"
    );
    assert!(
        paragraph_with(&md, "Otters are semi-aquatic").contains("for its referees."),
        "{md}"
    );
}

#[test]
fn numbered_capitals_and_numbered_bold_at_body_size_are_headings() {
    let md = golden_tex("capsheads");
    // Levels from the numbering (no title, no size steps to rank).
    assert_eq!(
        headings(&md),
        vec!["# 1 INTRODUCTION", "## 1.1 Field data", "# 2 RESULTS AND DISCUSSION"]
    );
    // A line of capitals with no number of its own stays in its paragraph.
    assert!(paragraph_with(&md, "THE SURVEY TEAM").contains("simple model."), "{md}");
}
