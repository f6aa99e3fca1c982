//! Tests of `structure`: numbering, the label rules, and the heading
//! rules on small hand-built pages.

use super::*;

#[test]
fn section_numbers() {
    assert_eq!(numbering("2.1 Related Work"), Some(2));
    assert_eq!(numbering("IV. EXPERIMENTS"), Some(1));
    assert_eq!(numbering("A.1 Proofs"), Some(2));
    assert_eq!(numbering("3 Results"), Some(1));
    assert_eq!(numbering("A Survey of Things"), None);
    assert_eq!(numbering("1999 was a year"), None);
    assert_eq!(numbering("2 the rest"), None);
    assert_eq!(numbering("2.5 times larger"), None);
    assert_eq!(numbering("1.2.2 glp set graph name"), Some(3));
    assert_eq!(numbering("Introduction"), None);
}

use crate::pdf::layout::Line;

fn row(words: &[(&str, f32)], top: f32, size: f32, bold: bool) -> Line {
    Line::of_words(words, top, size, bold)
}

/// Words of `text` from x = 72, 5 pt per character and a 3 pt space.
fn sentence(text: &str, top: f32, size: f32, bold: bool) -> Line {
    let ws: Vec<(&str, f32)> = text
        .split(' ')
        .scan(72.0f32, |x, w| {
            let at = *x;
            *x += 5.0 * w.chars().count() as f32 + 3.0;
            Some((w, at))
        })
        .collect();
    row(&ws, top, size, bold)
}

fn prose(top: f32) -> Line {
    sentence(
        "body text of the page runs on to the right edge of the column here.",
        top,
        10.0,
        false,
    )
}

/// `n` lines of body text 12 pt apart from `y`; the `y` after them.
fn paragraph(lines: &mut Vec<Line>, y: f32, n: usize) -> f32 {
    lines.extend((0..n).map(|k| prose(y + 12.0 * k as f32)));
    y + 12.0 * n as f32
}

/// Line `i` is a heading, with the numbering depth given (or unnumbered).
#[track_caller]
fn assert_heading(marks: &[Mark], i: usize, depth: Option<usize>) {
    assert!(
        matches!(&marks[i], Mark::Heading { depth: d, .. } if *d == depth),
        "line {i}: {:?}",
        marks[i]
    );
}

/// The structure pass over pages of lines, as `convert` runs it.
fn marks_of(pages: &[Vec<&Line>]) -> Vec<Mark> {
    let lns = crate::pdf::flow::build(pages);
    let (body, bold) = crate::pdf::flow::body_style(&lns);
    let shares = crate::pdf::flow::style_shares(&lns);
    mark(&lns, &vec![792.0; pages.len()], body, bold, &shares)
}

/// Bold at body size is a heading only when it stands apart: with space
/// above or below, words at word spacing, and not introducing a colon.
#[test]
fn bold_labels_in_tables_and_before_colons_are_not_headings() {
    let mut lines = Vec::new();
    let mut y = 80.0;
    y = paragraph(&mut lines, y, 12);
    y += 12.0;
    let heading = lines.len();
    lines.push(row(&[("Computational", 72.0), ("details", 142.0)], y, 10.0, true));
    y += 22.0;
    y = paragraph(&mut lines, y, 6);
    y += 12.0;
    // A table: a column header in bold, words in columns; then a row
    // label in bold with only row spacing above and below.
    let header = lines.len();
    lines.push(row(&[("Intercept", 200.0), ("Slope", 380.0)], y, 10.0, true));
    y += 12.0;
    lines.push(row(&[("Bias", 200.0), ("MAE", 260.0), ("RMSE", 320.0)], y, 10.0, false));
    // Rows 4.5 pt apart (quantreg's crq.pdf: 4.3 pt at 11 pt).
    y += 14.5;
    let label = lines.len();
    lines.push(row(&[("Portnoy", 90.0)], y, 10.0, true));
    y += 14.5;
    lines.push(row(
        &[("n", 100.0), ("=", 110.0), ("100", 120.0), ("0.063", 200.0)],
        y,
        10.0,
        false,
    ));
    y += 24.0;
    let colon = lines.len();
    lines.push(row(&[("Affiliation:", 72.0)], y, 10.0, true));
    y += 22.0;
    paragraph(&mut lines, y, 4);
    // The table goes on at the top of the next page: a row label with
    // no line above it (space above unknown) and a row under it.
    let next = [
        row(&[("Powell", 90.0)], 80.0, 10.0, true),
        row(
            &[("n", 100.0), ("=", 110.0), ("400", 120.0), ("0.041", 200.0)],
            94.5,
            10.0,
            false,
        ),
        prose(106.5),
        prose(118.5),
        prose(130.5),
    ];
    let marks = marks_of(&[lines.iter().collect(), next.iter().collect()]);
    assert_heading(&marks, heading, None);
    assert_eq!(marks[header], Mark::None, "words in columns");
    assert_eq!(marks[label], Mark::None, "a row label");
    assert_eq!(marks[colon], Mark::None, "a label before a colon");
    let top = lines.len();
    assert_eq!(marks.len(), top + next.len(), "one mark per line");
    assert_eq!(marks[top], Mark::None, "a row label at the top of a page");
}

#[test]
fn a_date_alone_is_not_a_heading() {
    for d in ["20 April 1999", "April 20, 1999", "Dec. 2026", "December 2007"] {
        assert!(is_date(d), "{d}");
    }
    for t in ["20 Results", "May 2020 Update", "3 Changes in 1999", "April"] {
        assert!(!is_date(t), "{t}");
    }
}

#[test]
fn page_numbers_end_contents_entries() {
    assert!(ends_in_page_number("1 Introduction 2"));
    assert!(ends_in_page_number("Canvas size . . . . . . 32"));
    assert!(!ends_in_page_number("Chapter"));
    assert!(!ends_in_page_number("12"));
    assert!(!ends_in_page_number("as shown in (1)"));
    assert!(!ends_in_page_number("measured in 20061"));
    assert!(ends_in_page_number("Cd 87"));
}

#[test]
fn headings_are_words_not_labels_math_or_bylines() {
    assert!(heading_words("Related Work"));
    assert!(heading_words("Proof of the Main Theorem"));
    assert!(heading_words("Examples"));
    assert!(heading_words("Acknowledgements"));
    assert!(heading_words("3.1 data/version.csv"));
    assert!(heading_words("Do"));
    assert!(heading_words("Example"));
    assert!(heading_words("KEYWORDS"));
    assert!(heading_words("Seeking-assistance"));
    assert!(heading_words("Hp500c"));
    // A line of math, panel letters.
    assert!(!heading_words("Ey Z 0 t\u{3b5} Lx,yx(s)\u{3d5}(x) ds"));
    assert!(!heading_words("A B"));
    // Theorem-like run-in heads.
    assert!(!heading_words("Theorem 1"));
    assert!(!heading_words("Lemma 3.2 (Key lemma)"));
    assert!(!heading_words("Definition (Gutter)"));
    assert!(!heading_words("Proof:"));
    assert!(!heading_words("Keywords: layout, headings"));
    // Code listings' comments and prompts.
    assert!(!heading_words("// Return result"));
    assert!(!heading_words("# [1] FALSE"));
    assert!(!heading_words("> fm <- lm(y ~ x)"));
    // Bylines.
    assert!(!heading_words("Univ. of Universe, Sun"));
    assert!(!heading_words("Institute of Reading, University of Examples"));
    assert!(!heading_words("ada@example.org"));
    assert!(!heading_words(
        "Sir J.K. Krishnana,c,\u{2217},1 (Researcher), Han Thaneb,d , William"
    ));
}

#[test]
fn captions_are_labels() {
    assert!(is_caption("Table 1: Frequency of Special Characters"));
    assert!(is_caption("Figure 3.2. The pipeline"));
    assert!(is_caption("Fig. 4. Results"));
    assert!(is_caption("Table A1"));
    assert!(!is_caption("Tables and Figures"));
    assert!(!is_caption("Table"));
    assert!(!is_caption("Table of Contents"));
    assert!(is_caption("TABLE IV"));
    assert!(!is_caption("2 Figures of merit"));
    assert!(is_figure_caption("Figure 1: Example Image"));
    assert!(is_figure_caption("FIG. 2. Use the figure* environment"));
    assert!(!is_figure_caption("Figure 2 shows the pipeline"));
    assert!(!is_figure_caption("Table 1: Speeds"));
}

/// A manual's entry named after its routine ("1.2.2 glp set graph name —
/// assign (change) graph name", glpk's graphs.pdf, bold at body size):
/// its three-part number makes it a heading although a lower-case word
/// follows the number and it is longer than an unnumbered bold label may be.
#[test]
fn a_three_part_number_before_a_routine_name_is_a_heading() {
    let mut lines = Vec::new();
    let mut y = 80.0;
    y = paragraph(&mut lines, y, 12);
    y += 12.0;
    let entry = lines.len();
    lines.push(sentence(
        "1.2.2 glp set graph name \u{2014} assign (change) graph name",
        y,
        10.0,
        true,
    ));
    y += 22.0;
    paragraph(&mut lines, y, 6);
    let marks = marks_of(&[lines.iter().collect()]);
    assert_heading(&marks, entry, Some(3));
}

/// A first page as the pinp template sets it (Rcpp's vignettes): a title
/// whose long first line spans the gutter and whose second line does not,
/// bylines, then an abstract with no label, small and bold, and a section
/// number set a little under the body size. The title is one, the front
/// matter ends where the abstract's sentences start, and the section is a
/// heading, not a byline.
#[test]
fn an_unlabelled_small_abstract_ends_the_front_matter() {
    let mut title = sentence("Exposing functions and classes", 60.0, 22.0, true);
    title.column = None;
    let mut lines = vec![
        title,
        sentence("with modules", 86.0, 22.0, true),
        sentence("Ada Lovelace and Charles Babbage", 120.0, 8.0, false),
        sentence("This version was compiled on January 11, 2022", 132.0, 6.0, false),
    ];
    let abs = lines.len();
    let text = "this note discusses the modules that allow programmers to expose the functions and";
    for k in 0..3 {
        lines.push(sentence(text, 150.0 + 9.0 * k as f32, 7.0, true));
    }
    let section = lines.len();
    lines.push(sentence("1. Motivation", 200.0, 8.7, true));
    let mut y = 214.0;
    for _ in 0..20 {
        lines.push(sentence(text, y, 9.0, false));
        y += 11.0;
    }
    let marks = marks_of(&[lines.iter().collect()]);
    assert_eq!(marks[0], Mark::Title);
    assert_eq!(marks[1], Mark::Title, "the title's second line, in another column");
    assert_eq!(marks[2], Mark::Front);
    assert_eq!(marks[abs], Mark::None, "the abstract is a paragraph, not front matter");
    assert_heading(&marks, section, Some(1));
}

/// Text inside a vector figure set like headings (Rcpp's bootstrap plot:
/// "Mean Bootstrap", its axis ticks, "Samples", then the caption) is the
/// figure's, not a section, and so is a plot's title over its legend and
/// axis ticks with no caption near; a heading with prose under it stays one
/// even when a caption comes a few lines later.
#[test]
fn panel_titles_before_a_caption_are_not_headings() {
    let mut lines = vec![sentence("Extending R with C++", 40.0, 20.0, true)];
    let y = paragraph(&mut lines, 80.0, 12);
    let panel = lines.len();
    lines.push(sentence("Mean Bootstrap", y + 14.0, 14.0, true));
    lines.push(sentence("20.0 20.5 21.0 21.5", y + 36.0, 7.0, false));
    let axis = lines.len();
    lines.push(sentence("Samples", y + 48.0, 12.0, true));
    lines.push(sentence(
        "Fig. 2. Results of the bootstrapping procedure for the sample mean.",
        y + 70.0,
        9.0,
        false,
    ));
    let y = paragraph(&mut lines, y + 90.0, 6);
    let section = lines.len();
    lines.push(sentence("Rcpp in Packages", y + 14.0, 14.0, true));
    let y = paragraph(&mut lines, y + 36.0, 2);
    lines.push(sentence("Fig. 3. A second figure.", y + 14.0, 9.0, false));
    let y = paragraph(&mut lines, y + 30.0, 6);
    // A plot with no caption near it: its legend, then its axis ticks.
    let legend = lines.len();
    lines.push(sentence("Males", y + 14.0, 14.0, true));
    lines.push(sentence("Performance Score =0", y + 36.0, 7.0, false));
    lines.push(sentence("Performance Score =1", y + 46.0, 7.0, false));
    lines.push(sentence("0.0 0.5 1.0 1.5 2.0 2.5", y + 60.0, 7.0, false));
    paragraph(&mut lines, y + 80.0, 6);
    let marks = marks_of(&[lines.iter().collect()]);
    assert_eq!(marks[legend], Mark::None, "a plot's title over its legend");
    assert_eq!(marks[panel], Mark::None, "a panel title");
    assert_eq!(marks[axis], Mark::None, "an axis title");
    assert_heading(&marks, section, None);
}

#[test]
fn axis_ticks_step_steadily() {
    assert!(axis_ticks("0.0 0.5 1.0 1.5 2.0 2.5"));
    assert!(axis_ticks("0 200 400 600"));
    assert!(axis_ticks("\u{2212}2 \u{2212}1 0 1"));
    assert!(!axis_ticks("20.0 20.5 21.0"), "three is too few");
    assert!(!axis_ticks("1 2 4 8"));
    assert!(!axis_ticks("3 3 3 3"));
    assert!(!axis_ticks("0 1 2 3 apples"));
}
