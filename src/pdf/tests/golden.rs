//! Golden-file tests: small real PDFs (tests/fixtures/pdf, made by
//! make_fixtures.py and make_structure_fixtures.py) converted and compared
//! with the committed Markdown next to them, plus assertions naming the
//! rule each one exercises, so a failure says what broke.
//!
//! After an intended change of output: `JARVIS_BLESS=1 cargo test --lib
//! pdf::tests::golden`, then review the diff of the `.md` files.

use std::path::PathBuf;

use super::{convert, engine, fixture};
use crate::pdf::*;

fn golden(pdf: &str) -> String {
    let md = convert(pdf).markdown;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pdf")
        .join(pdf.replace(".pdf", ".md"));
    compare_golden(pdf, md, &path)
}

/// `md` against the committed golden file at `path` (rewritten first under
/// `JARVIS_BLESS`); a difference panics naming the first differing line.
pub(super) fn compare_golden(pdf: &str, md: String, path: &std::path::Path) -> String {
    if std::env::var_os("JARVIS_BLESS").is_some() {
        std::fs::write(path, &md).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let want = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if md != want {
        let line = md
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(md.lines().count().min(want.lines().count()));
        panic!(
            "{pdf}: Markdown differs from {} at line {}:\n got: {:?}\nwant: {:?}\n(JARVIS_BLESS=1 rewrites the golden file)",
            path.display(),
            line + 1,
            md.lines().nth(line),
            want.lines().nth(line)
        );
    }
    md
}

pub(super) fn paragraph_with<'a>(md: &'a str, needle: &str) -> &'a str {
    md.split("\n\n")
        .find(|p| p.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in:\n{md}"))
}

#[test]
fn two_columns_golden() {
    let md = golden("paper.pdf");
    // Columns: the left column is finished before the right one starts.
    assert!(md.find("LEFTCOLUMNEND.") < md.find("### 1.1 Ligatures"));
    assert!(md.starts_with("# Reading Order in Two-Column Scientific Papers\n"));
}

#[test]
fn numbered_headings_front_matter_page_break_and_a_real_table() {
    let md = golden("structure.pdf");
    let headings: Vec<&str> = md.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headings,
        [
            "# Evidence for Structure in Converted Papers",
            "## Abstract",
            "## 1 Introduction",
            "### 1.1 Numbered headings",
            "## 2 A table and a formula",
            "## 3 Conclusion",
        ],
        "{md}"
    );
    // Front matter: authors and affiliations are plain lines, not a table
    // and not headings.
    assert!(paragraph_with(&md, "Ada Example").contains("Institute of Reading"));
    assert!(!paragraph_with(&md, "Ada Example").contains('|'));
    // The abstract is its own section.
    assert!(paragraph_with(&md, "ABSTRACTSTART").starts_with("ABSTRACTSTART We describe"));
    // A bold lead-in word is not a heading.
    assert!(paragraph_with(&md, "Observation.").starts_with("Observation. A bold first word"));
    // The paragraph across the page break is whole, its footnote after it.
    let across = paragraph_with(&md, "PAGEBREAKSTART");
    assert!(across.contains("PAGEBREAKEND."), "{across}");
    assert!(across.starts_with("The paragraph that crosses the page starts here."));
    assert!(md.find("PAGEBREAKEND") < md.find("A footnote at the foot"));
    // A real table; the formula with wide gaps is not one.
    assert!(
        md.contains("| Converter | Pages per second | Headings |\n| --- | --- | --- |\n| Plain text | 900 | none |")
    );
    assert_eq!(md.lines().filter(|l| l.starts_with("| --- |")).count(), 1, "{md}");
    assert!(paragraph_with(&md, "a = b + c").starts_with("a = b + c"));
}

#[test]
fn old_tex_bitmap_fonts_give_whole_words() {
    let md = golden("oldtex.pdf");
    // Type 3 fonts with a negative font matrix: words from glyph gaps.
    for word in [
        "Introduction",
        "positions",
        "because",
        "producer",
        "between",
        "loosely",
        "document",
    ] {
        assert!(md.contains(word), "{word} missing:\n{md}");
    }
    for broken in ["Intro duction", "p ositions", "b ecause"] {
        assert!(!md.contains(broken), "{broken}:\n{md}");
    }
    assert!(md.starts_with("# Word Boundaries in Bitmap Font Documents\n"), "{md}");
    assert!(md.contains("\n## 1 Introduction\n") && md.contains("\n### 2.1 Gaps relative to the font size\n"));
    // Each paragraph whole: no line of body text became a heading.
    assert_eq!(md.lines().filter(|l| l.starts_with('#')).count(), 5, "{md}");
}

#[test]
fn the_recognised_title_is_reported() {
    assert_eq!(
        convert("structure.pdf").title.as_deref(),
        Some("Evidence for Structure in Converted Papers")
    );
    // The annotated fixture is a one-column page without a title.
    let c = pdf_to_markdown(engine(), "figures.pdf", &fixture("figures.pdf")).expect("convert");
    assert_eq!(c.title, None);
}

#[test]
fn letters_misread_as_dingbats_read_again() {
    // dvips' `aNN` glyph names, mapped to Zapf Dingbats (make_dingbat_fixture.py).
    let md = golden("misread.pdf");
    // OT1 page: ligatures at 11..=15, the en dash at 0x7B.
    assert!(
        md.starts_with("# Letters in Disguise\n\n## 1 Fitting effects by hand\n"),
        "{md}"
    );
    assert!(
        paragraph_with(&md, "Old papers")
            .contains("The efficient, affine fit of a flexible model – first things first –"),
        "{md}"
    );
    assert!(md.contains("the author’s words."), "{md}");
    // T1 page: ligatures at 27..=31, the en dash at 21, é as itself.
    assert!(
        md.contains("The Université de Montréal wrote this page in the EC fonts,"),
        "{md}"
    );
    assert!(
        md.contains("a fluffy office with efficient staff – and a final sentence"),
        "{md}"
    );
    // No map at all: the ligatures arrive as their T1 control codes.
    assert!(
        md.contains("the first office staff defined the efficient workflow."),
        "{md}"
    );
    // Genuine dingbats (the base-14 Zapf Dingbats font) stay as they are.
    assert_eq!(md.matches('✔').count(), 3, "{md}");
    // No dingbat is left from the misread pages.
    let left: Vec<char> = md
        .chars()
        .filter(|&c| dingbats::code_of(c).is_some() && c != '✔')
        .collect();
    assert!(left.is_empty(), "{left:?}\n{md}");
    let c = convert("misread.pdf");
    assert!(c.unreadable_pages.is_empty(), "{:?}", c.unreadable_pages);
}
