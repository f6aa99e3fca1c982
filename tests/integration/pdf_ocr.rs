//! OCR with the real components: the built `jarvis` as the PDF worker,
//! Debian's Tesseract (`tesseract-ocr` + `tesseract-ocr-eng`, installed by
//! `cargo xtask test`) run through the sandbox, and real pages.
//!
//! The scans are made here: a page of a real LaTeX document drawn by the
//! worker and put back into a PDF as a picture (what a scanner makes). The
//! junk text layers are made here too: a page set in Helvetica whose font
//! carries a `/ToUnicode` map sending every letter to punctuation (the
//! "- \- - - -" of an old TeX paper) or to the next letter (a map off by
//! one) — the page is drawn right, and its text layer decodes to junk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jarvis::app::pdf_isolated::{
    render_page_isolated, run_pdf_job_with, IsolatedPdfError, PdfJob, PdfJobOutput, PdfOp,
};
use jarvis::config::Config;
use jarvis::pdf::readable::{measure, Verdict};

use crate::support::fs::pdf_fixture;
use crate::support::runtime::{pdf_config, pdf_worker};
use crate::support::{run, Sandbox};

/// A real document Debian ships with TeX (package texlive-base, which the
/// set-up's texlive-latex-base depends on): Oren Patashnik's "BibTeXing",
/// typeset with LaTeX, letter paper.
const REAL: &str = "/usr/share/doc/texlive-doc/bibtex/base/btxdoc.pdf";

fn real_document() -> PathBuf {
    let p = PathBuf::from(REAL);
    assert!(
        p.is_file(),
        "{REAL} is missing: install the Debian package texlive-base (`cargo xtask test` does)"
    );
    p
}

fn convert(cfg: &Config, path: &Path) -> Result<PdfJobOutput, IsolatedPdfError> {
    run_pdf_job_with(&pdf_worker(None), cfg, &PdfJob::new(cfg, PdfOp::Convert, path))
}

/// Words of three letters or more, case folded, counted.
fn bag(text: &str) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for w in text.split(|c: char| !c.is_alphabetic()) {
        if w.chars().count() >= 3 {
            *m.entry(w.to_lowercase()).or_default() += 1;
        }
    }
    m
}

/// Share of `reference`'s words (with their counts) that `got` has.
fn word_recall(reference: &str, got: &str) -> f64 {
    let (want, have) = (bag(reference), bag(got));
    let total: usize = want.values().sum();
    let hit: usize = want
        .iter()
        .map(|(w, n)| (*n).min(have.get(w).copied().unwrap_or(0)))
        .sum();
    hit as f64 / total.max(1) as f64
}

/// A PDF of numbered objects (1 is the catalog), with its cross-reference
/// table.
fn pdf_of(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out: Vec<u8> = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
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

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut o = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    o.extend_from_slice(data);
    o.extend_from_slice(b"\nendstream");
    o
}

/// A one-page image-only PDF: `png` drawn over a page `width_pt` wide, the
/// pixels stored uncompressed in gray.
fn scanned_pdf(png: &[u8], width_pt: f32) -> Vec<u8> {
    let img = image::load_from_memory(png).expect("decode the page").into_luma8();
    let (w, h) = img.dimensions();
    let (pw, ph) = (width_pt, width_pt * h as f32 / w as f32);
    let draw = format!("q {pw:.2} 0 0 {ph:.2} 0 0 cm /Im0 Do Q");
    pdf_of(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {pw:.2} {ph:.2}] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>"
        )
        .into_bytes(),
        stream(
            &format!("/Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceGray /BitsPerComponent 8"),
            img.as_raw(),
        ),
        stream("", draw.as_bytes()),
    ])
}

/// Page 4 of the real document (327 words) as a scan, and the text its own text layer
/// gives for that page.
fn scanned_real_page(dir: &Path) -> (PathBuf, String) {
    let (_d, cfg) = pdf_config("[pdf]\nocr = false");
    let real = real_document();
    let text = convert(&cfg, &real)
        .expect("the real document converts")
        .converted
        .expect("converted")
        .page_texts[3]
        .clone();
    // 2400 px over the 612 pt of a letter page: 282 dpi, a scanner's.
    let page = render_page_isolated(&pdf_worker(None), &cfg, &real, "btxdoc.pdf", 4, 2400).expect("draw page 4");
    let scan = dir.join("btxdoc-scan.pdf");
    std::fs::write(&scan, scanned_pdf(&page.png, 612.0)).expect("write the scan");
    (scan, text)
}

/// Plain prose for the junk-layer page (written for this test).
const PROSE: &str = "Scanned libraries are full of papers whose text cannot be copied. \
Some were printed and scanned again, others were set with fonts that carry no map \
from their glyphs to letters, so a reader that trusts the text layer gets symbols \
where the words should be. The converter checks every page for words before it \
keeps the text, and when the check fails it draws the page and reads the picture. \
A page that still makes no sense is left out and the user is told which one it was, \
so that nothing in the knowledge base is noise that only looks like a document. \
This paragraph is long enough to judge: it has the little words that hold \
sentences together, and the longer ones that carry their meaning, in the way an \
ordinary paper does from its first page to the list of references at the end.";

/// A letter page setting [`PROSE`] in Helvetica, whose font's `/ToUnicode`
/// sends each printable code to `map(code)`: drawn right, read wrong.
fn junk_layer_pdf(map: fn(u8) -> char) -> Vec<u8> {
    let mut lines: Vec<String> = Vec::new();
    for word in PROSE.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.len() + word.len() < 82 => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    let mut content = String::from("BT /F1 11 Tf 15 TL 72 720 Td\n");
    for l in &lines {
        content.push_str(&format!(
            "({}) Tj T*\n",
            l.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)")
        ));
    }
    content.push_str("ET");
    let entries: Vec<String> = (0x20u8..=0x7E)
        .map(|code| format!("<{code:02X}> <{:04X}>", map(code) as u32))
        .collect();
    let cmap = format!(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<00> <FF>\nendcodespacerange\n{} beginbfchar\n{}\nendbfchar\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend",
        entries.len(),
        entries.join("\n")
    );
    pdf_of(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /ToUnicode 6 0 R >>".to_vec(),
        stream("", content.as_bytes()),
        stream("", cmap.as_bytes()),
    ])
}

/// Every letter to punctuation, as in the old TeX paper of issue 33.
fn to_punctuation(code: u8) -> char {
    match code {
        b' ' => ' ',
        c if c.is_ascii_alphabetic() => ['-', '\\', '-', '\'', '-'][usize::from(c) % 5],
        c => char::from(c),
    }
}

/// Every letter to the next one: words of letters that are not the words.
fn to_next_letter(code: u8) -> char {
    match code {
        b'z' => 'a',
        b'Z' => 'A',
        c if c.is_ascii_alphabetic() => char::from(c + 1),
        c => char::from(c),
    }
}

#[test]
fn a_scanned_page_of_a_real_document_reads_back_with_ninety_percent_of_its_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (scan, text) = scanned_real_page(dir.path());
    assert!(
        bag(&text).values().sum::<usize>() > 250,
        "page 4 has a real text layer: {text}"
    );
    let (_d, cfg) = pdf_config("");
    let out = convert(&cfg, &scan).expect("the scan converts through OCR");
    let c = out.converted.expect("converted");
    assert_eq!(c.ocr_pages, vec![1]);
    let recall = word_recall(&text, &c.markdown);
    eprintln!("OCR word recall on page 4 of btxdoc.pdf: {recall:.3}");
    assert!(recall >= 0.90, "word recall {recall:.3}:\n{}", c.markdown);
    assert_eq!(measure(&c.markdown).verdict(), Verdict::Reads);
}

#[test]
fn a_text_layer_that_decodes_to_junk_is_read_by_ocr_never_stored_as_junk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_d, cfg) = pdf_config("");
    for (what, map) in [
        ("punctuation", to_punctuation as fn(u8) -> char),
        ("the next letter", to_next_letter),
    ] {
        let path = dir.path().join("junk-layer.pdf");
        std::fs::write(&path, junk_layer_pdf(map)).expect("write");
        let c = convert(&cfg, &path)
            .unwrap_or_else(|e| panic!("letters mapped to {what}: {e}"))
            .converted
            .expect("converted");
        assert_eq!(c.ocr_pages, vec![1], "letters mapped to {what}: {c:?}");
        let recall = word_recall(PROSE, &c.markdown);
        assert!(
            recall >= 0.90,
            "letters mapped to {what}: recall {recall:.3}\n{}",
            c.markdown
        );
        assert_eq!(measure(&c.markdown).verdict(), Verdict::Reads, "{}", c.markdown);
        assert!(!c.markdown.contains("\\-"), "{}", c.markdown);
    }
    // Without OCR the punctuation is not stored either: the file says why.
    let (_d, off) = pdf_config("[pdf]\nocr = false");
    let path = dir.path().join("junk-layer.pdf");
    std::fs::write(&path, junk_layer_pdf(to_punctuation)).expect("write");
    let err = convert(&off, &path).expect_err("nothing readable without OCR");
    let msg = err.to_string();
    assert!(
        msg.starts_with("junk-layer.pdf: no extractable text — the text layer is unreadable on every page")
            && msg.contains("pdf.ocr = false"),
        "{msg}"
    );
}

#[test]
fn pdf_ocr_false_is_respected() {
    // A Tesseract that cannot run would say so; with OCR off it is never
    // asked, and the error says OCR is off.
    let (_d, cfg) = pdf_config("[pdf]\nocr = false\ntesseract = \"/nonexistent/tesseract\"");
    let err = convert(&cfg, &pdf_fixture("scanned.pdf")).expect_err("no text without OCR");
    let msg = err.to_string();
    assert!(
        msg.starts_with("scanned.pdf: no extractable text — scanned or image-only PDF; OCR is off (`pdf.ocr = false`"),
        "{msg}"
    );
    assert!(!msg.contains("cannot be run"), "{msg}");
    // On, the same scan reads (a coarse one: its title comes out whole).
    let (_d, on) = pdf_config("");
    let c = convert(&on, &pdf_fixture("scanned.pdf"))
        .expect("OCR reads the scan")
        .converted
        .expect("converted");
    assert_eq!(c.ocr_pages, vec![1]);
    assert!(c.markdown.contains("Two-Column Scientific Papers"), "{}", c.markdown);
}

#[test]
fn without_tesseract_the_error_names_the_package() {
    let (_d, cfg) = pdf_config("[pdf]\ntesseract = \"/nonexistent/tesseract\"");
    let err = convert(&cfg, &pdf_fixture("scanned.pdf")).expect_err("no OCR, no text");
    let msg = err.to_string();
    assert!(
        msg.starts_with("scanned.pdf: no extractable text — scanned or image-only PDF; OCR needs Tesseract")
            && msg.contains("install the Debian packages tesseract-ocr and tesseract-ocr-eng"),
        "{msg}"
    );
    // A language whose data is not installed names its own package.
    let (_d, cfg) = pdf_config("[pdf]\nocr_languages = [\"eng\", \"xyz\"]");
    let msg = convert(&cfg, &pdf_fixture("scanned.pdf"))
        .expect_err("no such language")
        .to_string();
    assert!(msg.contains("tesseract-ocr-xyz"), "{msg}");
}

#[test]
fn kb_add_marks_the_chunks_ocr_read() {
    let sb = Sandbox::new();
    let (scan, text) = scanned_real_page(sb.dir.path());
    sb.write_config("[chat]\nollama_host = \"http://127.0.0.1:9\"\n");
    let mut c = sb.jarvis();
    c.args(["kb", "add", scan.to_str().expect("path"), "--full-text"])
        .args(["--title", "BibTeXing", "--authors", "Oren Patashnik", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let body = v["body_chunks"].as_u64().expect("body chunks");
    assert!(body >= 1, "{v}");
    let mut c = sb.jarvis();
    c.args(["kb", "schema", "ocr", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["values"]["true"].as_u64(), Some(body), "{v}");
    // What OCR read is searchable like any text.
    let word = bag(&text)
        .into_iter()
        .filter(|(w, _)| w.len() >= 9)
        .map(|(w, _)| w)
        .min()
        .expect("a long word on the page");
    let mut c = sb.jarvis();
    c.args(["kb", "search", &word, "--json", "-n", "3"]);
    let r = run(c);
    assert!(r.stdout.contains("btxdoc-scan.pdf"), "{word}: {}", r.stdout);
}
