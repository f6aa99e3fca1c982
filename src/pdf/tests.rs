//! PDF engine tests against real PDFs made by real producers
//! (tests/fixtures/pdf/make_fixtures.py says how each was made).

use std::path::PathBuf;
use std::sync::OnceLock;

use super::*;

pub(super) fn engine() -> &'static PdfEngine {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    let lib = LIB.get_or_init(|| crate::runtime::ensure_for_tests(crate::runtime::PDFIUM_LIB));
    PdfEngine::load(lib).expect("load PDFium")
}

pub(super) fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pdf")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn annotations(name: &str) -> Vec<Annotation> {
    extract_annotations(engine(), name, &fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn convert(name: &str) -> Converted {
    pdf_to_markdown(engine(), name, &fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn pos(md: &str, needle: &str) -> usize {
    md.find(needle).unwrap_or_else(|| panic!("{needle:?} not in:\n{md}"))
}

#[test]
fn a_two_column_latex_paper_reads_column_by_column_with_headings() {
    let c = convert("paper.pdf");
    let md = &c.markdown;
    assert_eq!(c.page_count, 3);
    assert!(
        md.starts_with("# Reading Order in Two-Column Scientific Papers\n"),
        "{md}"
    );
    // The left column is finished before the right one starts.
    let left_end = pos(md, "LEFTCOLUMNEND.");
    assert!(left_end < pos(md, "### 1.1 Ligatures and hyphenation"));
    assert!(pos(md, "## 1 Introduction") < left_end);
    assert!(pos(md, "### 1.1 Ligatures") < pos(md, "## 2 Method"));
    assert!(pos(md, "## 2 Method") < pos(md, "## 3 Results"));
    assert!(pos(md, "## 3 Results") < pos(md, "### 3.1 Discussion"));
    assert!(pos(md, "### 3.1 Discussion") < pos(md, "## 4 Conclusion"));
    assert!(
        md.trim_end()
            // TeX broke "CONCLUSIONMARKER" before a capital, where a hyphen
            // is normally a compound's; with no whole copy of the word in
            // the paper to say otherwise, the hyphen stays (no space).
            .ends_with("The final sentence of the paper is CONCLUSION-MARKER."),
        "{md}"
    );
}

#[test]
fn ligatures_and_line_end_hyphens_are_undone() {
    let md = convert("paper.pdf").markdown;
    assert!(
        md.contains("The efficient office staff found the affine flow figures difficult."),
        "{md}"
    );
    assert!(!md.contains(['\u{FB00}', '\u{FB01}', '\u{FB02}', '\u{FB03}', '\u{FB04}']));
    // pdflatex broke these across lines in the narrow column.
    for word in ["characterisations", "institutionalisation", "Retrieval", "pipelines"] {
        assert!(md.contains(word), "{word} missing");
    }
    for broken in [
        "characteri- sations",
        "Re- trieval",
        "doc- ument",
        "in- stitutionalisation",
    ] {
        assert!(!md.contains(broken), "{broken:?} still broken in:\n{md}");
    }
}

#[test]
fn lists_and_tables_survive() {
    let md = convert("paper.pdf").markdown;
    assert!(
        md.contains(
            "- first we extract characters with their positions;\n- then we group them into lines and columns;"
        ),
        "{md}"
    );
    assert!(md.contains("- finally we emit Markdown blocks."));
    assert!(md.contains("1. Load the document.\n2. Convert every page."), "{md}");
    assert!(
        md.contains(
            "| Converter | Pages/s | Memory |\n| --- | --- | --- |\n| Baseline | 1.2 | 900 |\n| Jarvis | 45.0 | 60 |"
        ),
        "{md}"
    );
}

#[test]
fn running_headers_and_page_numbers_are_dropped_but_kept_in_page_texts() {
    let c = convert("paper.pdf");
    assert!(!c.markdown.contains("Jarvis Fixture Journal"), "{}", c.markdown);
    assert!(
        c.markdown.lines().all(|l| l.trim().parse::<u32>().is_err()),
        "a bare page number survived"
    );
    assert_eq!(c.page_texts.len(), 3);
    assert!(c.page_texts.iter().all(|t| t.contains("Jarvis Fixture Journal")));
}

#[test]
fn highlights_carry_only_the_words_inside_their_quad_points() {
    let a = annotations("annotated.pdf");
    let highlights: Vec<&Annotation> = a.iter().filter(|a| a.kind == AnnotationKind::Highlight).collect();
    let texts: Vec<(&str, &str, u32)> = highlights
        .iter()
        .map(|h| (h.subtype.as_str(), h.text.as_str(), h.page))
        .collect();
    assert_eq!(
        texts,
        vec![
            // Spans two lines; the bounding rect would add "The quick brown
            // fox jumps over the" and "with more words about reading order here."
            ("Highlight", "lazy dog near the river bank. Second line continues", 1),
            ("Highlight", "gradient descent and stochastic optimisation.", 1),
            ("Underline", "fourth line is underlined from start to finish", 1),
            ("Squiggly", "wavy uncertainty", 1),
            ("StrikeOut", "obsolete claim", 1),
            ("Highlight", "yellow highlight", 2),
        ]
    );
    assert!(a.iter().all(|x| !x.text.contains("untouched")));
}

#[test]
fn typed_comments_and_replies_become_the_highlights_note() {
    let a = annotations("annotated.pdf");
    let by_text = |t: &str| {
        a.iter()
            .find(|x| x.text.starts_with(t))
            .unwrap_or_else(|| panic!("{t}: {a:#?}"))
    };
    // Typed into the highlight's popup (its own /Contents).
    assert_eq!(
        by_text("gradient descent").note_text,
        "Check the convergence proof in section 4."
    );
    // A Text note in reply (/IRT) to the first highlight.
    assert_eq!(by_text("lazy dog").note_text, "Reply: this is the key example.");
    assert!(!a
        .iter()
        .any(|x| x.kind == AnnotationKind::Comment && x.text.starts_with("Reply")));
    assert_eq!(by_text("wavy").note_text, "");
}

#[test]
fn sticky_and_free_text_notes_are_comments_and_ink_is_skipped() {
    let a = annotations("annotated.pdf");
    let comments: Vec<(&str, &str, &str)> = a
        .iter()
        .filter(|x| x.kind == AnnotationKind::Comment)
        .map(|x| (x.subtype.as_str(), x.text.as_str(), x.note_text.as_str()))
        .collect();
    assert_eq!(
        comments,
        vec![
            ("Text", "Sticky: remember to cite this page.", ""),
            ("FreeText", "Free text: margin remark.", ""),
        ]
    );
    assert_eq!(a.len(), 8, "ink, popups or extras leaked in: {a:#?}");
    assert_eq!(
        a[0].chunk_text(),
        "[HIGHLIGHT p.1] lazy dog near the river bank. Second line continues\nNote: Reply: this is the key example."
    );
    let sticky = a.iter().find(|x| x.subtype == "Text").expect("sticky");
    assert_eq!(
        sticky.chunk_text(),
        "[USER NOTE p.1] Sticky: remember to cite this page."
    );
}

#[test]
fn a_highlight_across_a_line_break_in_a_latex_column() {
    let a = annotations("paper_annotated.pdf");
    assert_eq!(a.len(), 2, "{a:#?}");
    assert_eq!(
        a[0].text,
        "Retrieval quality depends on how faithfully the original documents are converted"
    );
    assert_eq!(a[0].note_text, "Core claim of the paper.");
    assert_eq!(
        (a[1].subtype.as_str(), a[1].text.as_str()),
        ("Underline", "efficient office staff")
    );
}

#[test]
fn a_scanned_pdf_keeps_its_notes_but_its_body_fails_clearly() {
    let err = pdf_to_markdown(engine(), "scan.pdf", &fixture("scanned.pdf")).expect_err("no text layer");
    assert!(matches!(err, PdfError::NoText { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("scan.pdf") && msg.contains("no extractable text") && msg.contains("OCR"),
        "{msg}"
    );
    let a = annotations("scanned.pdf");
    assert_eq!(a.len(), 2, "{a:#?}");
    assert_eq!(
        (a[0].kind, a[0].text.as_str(), a[0].note_text.as_str()),
        (AnnotationKind::Highlight, "", "Scanned but highlighted.")
    );
    assert_eq!(
        (a[1].kind, a[1].text.as_str()),
        (AnnotationKind::Comment, "A note on a scanned page.")
    );
}

fn all_three(name: &str, bytes: &[u8]) -> Vec<PdfError> {
    vec![
        pdf_to_markdown(engine(), name, bytes).expect_err("convert must fail"),
        extract_annotations(engine(), name, bytes).expect_err("annotations must fail"),
        extract_figures(engine(), name, bytes, 20, 40_000).expect_err("figures must fail"),
    ]
}

#[test]
fn an_encrypted_pdf_names_the_file_and_the_fix() {
    for e in all_three("locked.pdf", &fixture("encrypted.pdf")) {
        assert!(matches!(e, PdfError::Encrypted { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("locked.pdf") && msg.contains("encrypted") && msg.contains("qpdf --decrypt"),
            "{msg}"
        );
    }
}

#[test]
fn truncated_pdfs_are_refused() {
    let bytes = fixture("paper.pdf");
    for cut in [bytes.len() / 2, bytes.len() - 200, 900] {
        for e in all_three("cut.pdf", &bytes[..cut]) {
            assert!(
                matches!(e, PdfError::Truncated { .. } | PdfError::Corrupt { .. }),
                "{cut}: {e:?}"
            );
            assert!(e.to_string().starts_with("cut.pdf: "), "{e}");
        }
    }
}

#[test]
fn zero_pages_and_corrupt_bytes_are_refused() {
    for e in all_three("empty.pdf", &fixture("empty.pdf")) {
        assert!(matches!(e, PdfError::NoPages { .. }), "{e:?}");
        assert_eq!(e.to_string(), "empty.pdf: the PDF has no pages");
    }
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut fake = b"%PDF-1.7\n".to_vec();
    fake.extend_from_slice(&garbage);
    fake.extend_from_slice(b"\n%%EOF\n");
    for (name, bytes) in [
        ("noise.pdf", garbage.clone()),
        ("fake.pdf", fake),
        ("nothing.pdf", Vec::new()),
    ] {
        for e in all_three(name, &bytes) {
            assert!(matches!(e, PdfError::Corrupt { .. }), "{name}: {e:?}");
            assert!(e.to_string().starts_with(&format!("{name}: not a readable PDF")), "{e}");
        }
    }
}

#[test]
fn a_500_page_pdf_converts_and_keeps_its_annotations() {
    // Built with PDFium from the fixtures: 166 × paper.pdf + annotated.pdf.
    let paper_bytes = fixture("paper.pdf");
    let annotated_bytes = fixture("annotated.pdf");
    let big = {
        let p = &engine().pdfium;
        let paper = p.load_pdf_from_byte_slice(&paper_bytes, None).expect("paper");
        let annotated = p.load_pdf_from_byte_slice(&annotated_bytes, None).expect("annotated");
        let mut doc = p.create_new_pdf().expect("new");
        for _ in 0..166 {
            doc.pages_mut().append(&paper).expect("append");
        }
        doc.pages_mut().append(&annotated).expect("append");
        doc.save_to_bytes().expect("save")
    };
    let start = std::time::Instant::now();
    let c = pdf_to_markdown(engine(), "big.pdf", &big).expect("convert");
    let took = start.elapsed();
    assert_eq!(c.page_count, 500);
    assert_eq!(
        c.markdown
            .matches("# Reading Order in Two-Column Scientific Papers\n")
            .count(),
        166
    );
    assert!(!c.markdown.contains("Jarvis Fixture Journal"));
    let a = extract_annotations(engine(), "big.pdf", &big).expect("annotations");
    assert_eq!(a.len(), 8, "{a:#?}");
    assert!(a.iter().all(|x| x.page >= 499));
    eprintln!("500 pages converted in {took:?} (debug build)");
}

#[test]
fn figures_are_deduplicated_filtered_by_size_and_capped() {
    let f = extract_figures(engine(), "figures.pdf", &fixture("figures.pdf"), 20, 40_000).expect("figures");
    let dims: Vec<(u32, u32, u32)> = f.iter().map(|x| (x.page, x.width, x.height)).collect();
    // The photo appears on both pages (kept once), the 40×40 logo is dropped.
    assert_eq!(dims, vec![(1, 240, 200), (2, 320, 180)]);
    for fig in &f {
        let img = image::load_from_memory_with_format(&fig.png, image::ImageFormat::Png).expect("valid PNG");
        assert_eq!((img.width(), img.height()), (fig.width, fig.height));
    }
    let capped = extract_figures(engine(), "figures.pdf", &fixture("figures.pdf"), 1, 40_000).expect("figures");
    assert_eq!(capped.len(), 1);
    let with_logo = extract_figures(engine(), "figures.pdf", &fixture("figures.pdf"), 20, 1_000).expect("figures");
    assert_eq!(with_logo.len(), 3);
    let paper = extract_figures(engine(), "paper.pdf", &fixture("paper.pdf"), 20, 40_000).expect("figures");
    assert_eq!(
        paper.iter().map(|x| (x.page, x.width, x.height)).collect::<Vec<_>>(),
        vec![(1, 300, 200)]
    );
}

#[test]
fn results_serialise_for_a_child_process() {
    let a = annotations("annotated.pdf");
    let json = serde_json::to_string(&a).expect("json");
    assert!(json.contains(r#""kind":"highlight""#) && json.contains(r#""kind":"comment""#));
    let back: Vec<Annotation> = serde_json::from_str(&json).expect("parse");
    assert_eq!(back, a);
    let c = convert("paper.pdf");
    let back: Converted = serde_json::from_str(&serde_json::to_string(&c).expect("json")).expect("parse");
    assert_eq!(back, c);
}

/// Developer aid: `JARVIS_PDF_DUMP=file.pdf cargo test --lib pdf::tests::dump -- --ignored --nocapture`
/// prints the Markdown and annotations of any PDF.
#[test]
#[ignore]
fn dump() {
    let Ok(path) = std::env::var("JARVIS_PDF_DUMP") else {
        return;
    };
    let bytes = std::fs::read(&path).expect("read");
    match pdf_to_markdown(engine(), &path, &bytes) {
        Ok(c) => {
            println!("{}", c.markdown);
            for (i, t) in c.page_texts.iter().enumerate() {
                println!("--- page {}: {:?}", i + 1, t.chars().take(100).collect::<String>());
            }
        }
        Err(e) => println!("convert: {e}"),
    }
    println!("{:#?}", extract_annotations(engine(), &path, &bytes));
}

#[test]
#[ignore]
fn dump_glyphs() {
    let Ok(path) = std::env::var("JARVIS_PDF_DUMP") else {
        return;
    };
    let bytes = std::fs::read(&path).expect("read");
    let doc = engine().open(&path, &bytes).expect("open");
    let page = doc.pages().get(0).expect("page");
    for g in page_glyphs(&page, &path).expect("glyphs").iter().take(120) {
        println!(
            "{:?} size {:.2} x {:.1}-{:.1} y {:.1}-{:.1} sp {}",
            g.c, g.size, g.x0, g.x1, g.top, g.bottom, g.space_before
        );
    }
}

/// A PDF whose objects are `objects` (numbered from 1, object 1 the
/// catalog), with a correct cross-reference table.
fn pdf_of(objects: &[&str]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

#[test]
fn a_cyclic_outline_is_read_to_a_bound_not_forever() {
    // Two entries that are each other's next sibling, and the first its
    // own first child.
    let bytes = pdf_of(&[
        "<< /Type /Catalog /Pages 2 0 R /Outlines 4 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        "<< /Type /Outlines /First 5 0 R /Last 6 0 R /Count 2 >>",
        "<< /Title (One) /Parent 4 0 R /Next 6 0 R /First 5 0 R /Last 5 0 R /Count 1 >>",
        "<< /Title (Two) /Parent 4 0 R /Prev 5 0 R /Next 5 0 R >>",
    ]);
    let o = outline(engine(), "cyclic.pdf", &bytes).expect("outline");
    assert!(o.len() <= MAX_OUTLINE_ENTRIES, "{} entries", o.len());
    assert_eq!(o.first().map(|e| e.title.as_str()), Some("One"));
    assert!(o.iter().all(|e| e.title == "One" || e.title == "Two"));
    assert!(o.iter().all(|e| e.level <= 16));
}

#[test]
fn a_pdf_without_an_outline_has_an_empty_one() {
    let bytes = fixture("paper.pdf");
    assert!(outline(engine(), "paper.pdf", &bytes).expect("outline").is_empty());
}

mod golden;
mod tex;

#[test]
fn annotations_keep_their_boxes_on_the_page() {
    let a = annotations("annotated.pdf");
    for x in &a {
        for r in &x.rects {
            assert!(
                r.iter().all(|v| (0.0..=1.0).contains(v)) && r[0] < r[2] && r[1] < r[3],
                "{x:#?}"
            );
        }
    }
    // One box per marked line: the two-line highlight has two.
    let lazy = a.iter().find(|x| x.text.starts_with("lazy dog")).expect("highlight");
    assert_eq!(lazy.rects.len(), 2, "{lazy:#?}");
    // "yellow highlight" on page 2 sits where pdftotext finds its words
    // (x 279–361 pt of 595, y 53–64 pt of 842 from the top).
    let y = a.iter().find(|x| x.page == 2).expect("page 2");
    let r = y.rects.first().expect("a box");
    let near = |got: f32, want: f32| (got - want).abs() < 0.02;
    assert!(
        near(r[0], 0.469) && near(r[2], 0.606) && r[1] < 0.075 && r[3] > 0.07,
        "{r:?}"
    );
    // A sticky note keeps its rectangle.
    let sticky = a.iter().find(|x| x.subtype == "Text").expect("sticky");
    assert_eq!(sticky.rects.len(), 1);
    // As chunk metadata and back.
    let meta = super::annotations::rects_to_meta(&lazy.rects);
    let back = super::annotations::rects_from_meta(&meta);
    assert_eq!(back.len(), 2);
    assert!(back
        .iter()
        .zip(&lazy.rects)
        .all(|(b, r)| b.iter().zip(r).all(|(x, y)| (x - y).abs() < 1e-3)));
    assert!(super::annotations::rects_from_meta("junk;1 2;0.5 0.5 0.1 0.1").is_empty());
}
