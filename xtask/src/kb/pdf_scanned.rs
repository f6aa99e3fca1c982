//! `cargo xtask bench pdf --quality --scanned [FILES]`: the scanned-paper
//! set. Real papers (R vignettes of the `--papers` set, by default the
//! first [`PAGES`] pages of [`SCANNED`]) are drawn at 300 dpi and put back
//! together as image-only PDFs — what a scanner makes — which then go
//! through the converter's OCR path in process: the pages that need OCR
//! (`pdf::ocr_candidates`), each drawn (`pdf::render_for_ocr`) and read by
//! Tesseract through the sandbox (`ocr::read`, the `[pdf]` defaults), and
//! the conversion with those readings (`pdf::pdf_to_markdown_ocr`).
//!
//! Per paper it prints the word recall of the Markdown against the
//! original's text layer (PDFium's plain text of the same pages, the
//! quality harness's bag of words), the recall of Tesseract's raw words
//! (what OCR read before layout), and seconds per page for OCR alone and
//! for the whole path. Figures only; the load average is printed beside
//! them, since a shared machine slows Tesseract down.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use jarvis::app::pdf_ocr::{ocr_settings, page_of, OCR_DPI};
use jarvis::pdf::{ocr_candidates, pdf_to_markdown_ocr, plain_text, render_for_ocr, OcrInput, PdfEngine};

/// Pages taken from each paper.
const PAGES: usize = 3;

/// The papers, under `usr/lib/R/` of the `--papers` set: one- and
/// two-column JSS and R News layouts, code listings, formulas, and
/// PLSvGLS's bitmap fonts.
const SCANNED: &[&str] = &[
    "site-library/zoo/doc/zoo.pdf",
    "site-library/sandwich/doc/sandwich.pdf",
    "library/survival/doc/survival.pdf",
    "site-library/coin/doc/coin.pdf",
    "site-library/Rcpp/doc/Rcpp-introduction.pdf",
    "site-library/partykit/doc/partykit.pdf",
    "site-library/spatstat/doc/getstart.pdf",
    "site-library/mvtnorm/doc/MVT_Rnews.pdf",
    "site-library/lme4/doc/PLSvGLS.pdf",
    "site-library/flexmix/doc/flexmix-intro.pdf",
];

struct Row {
    name: String,
    pages: usize,
    hit: usize,
    total: usize,
    raw_hit: usize,
    ocr: Duration,
    all: Duration,
}

/// The default set: [`SCANNED`] from the papers set (fetched on first use).
pub fn default_files(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let all = crate::pdf_papers::files(root)?;
    Ok(SCANNED
        .iter()
        .filter_map(|s| all.iter().find(|p| p.ends_with(s)).cloned())
        .collect())
}

pub fn run(root: &Path, files: &[PathBuf]) -> anyhow::Result<()> {
    let home_dir = tempfile::tempdir().context("temp JARVIS_HOME")?;
    let home = jarvis::paths::JarvisHome::at(home_dir.path());
    let lib = jarvis::runtime::ensure_bundled(&home, jarvis::runtime::PDFIUM_LIB).context("unpack PDFium")?;
    let engine = PdfEngine::load(&lib.path)?;
    let cfg = crate::common::config(root)?;
    let settings = ocr_settings(&cfg);
    println!(
        "scanned-paper set: first {PAGES} pages of each paper drawn at {OCR_DPI} dpi as an image-only PDF, read back by {} ({})\nload average before: {}\n",
        settings.program.display(),
        settings.languages.join("+"),
        crate::common::load_average()
    );
    println!(
        "{:<44} {:>5} {:>7} {:>9} {:>9} {:>9}",
        "paper", "pages", "recall", "raw OCR", "OCR s/p", "all s/p"
    );
    let mut rows = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).with_context(|| format!("read {name}"))?;
        let plain = plain_text(engine, &name, &bytes)?;
        let n = plain.len().min(PAGES);
        let want = crate::pdf_quality::bag(&plain[..n].join("\n"));
        let work = tempfile::tempdir()?;
        let pages: Vec<usize> = (1..=n).collect();
        let drawn = render_for_ocr(engine, &name, &bytes, &pages, OCR_DPI, work.path())?;
        let scan = image_pdf(&drawn.iter().map(|d| (d.path.as_path(), d.scale)).collect::<Vec<_>>())?;
        for d in &drawn {
            std::fs::remove_file(&d.path)?;
        }
        let scan_name = format!("{name} (scanned)");
        // From here on, what ingest does with a scan.
        let start = Instant::now();
        let mut ocr_time = Duration::ZERO;
        let wanted: Vec<usize> = ocr_candidates(engine, &scan_name, &scan)?
            .into_iter()
            .map(|c| c.page)
            .collect();
        let mut input = OcrInput::default();
        let mut raw = String::new();
        for image in render_for_ocr(engine, &scan_name, &scan, &wanted, OCR_DPI, work.path())? {
            let t = Instant::now();
            let words = jarvis::ocr::read(&settings, &image.path, OCR_DPI, None)?;
            ocr_time += t.elapsed();
            for w in &words {
                raw.push_str(&w.text);
                raw.push(' ');
            }
            input.pages.push(page_of(&image, words));
        }
        let markdown = match pdf_to_markdown_ocr(engine, &scan_name, &scan, &input) {
            Ok(c) => c.markdown,
            Err(e) => {
                println!("{:<44} failed: {e}", short(&name));
                String::new()
            }
        };
        let all = start.elapsed();
        let (hit, total) = recall(&want, &crate::pdf_quality::bag(&markdown));
        let (raw_hit, _) = recall(&want, &crate::pdf_quality::bag(&raw));
        let row = Row {
            name,
            pages: n,
            hit,
            total,
            raw_hit,
            ocr: ocr_time,
            all,
        };
        println!(
            "{:<44} {:>5} {:>7.3} {:>9.3} {:>9.1} {:>9.1}",
            short(&row.name),
            row.pages,
            ratio(row.hit, row.total),
            ratio(row.raw_hit, row.total),
            row.ocr.as_secs_f64() / n.max(1) as f64,
            row.all.as_secs_f64() / n.max(1) as f64,
        );
        rows.push(row);
    }
    anyhow::ensure!(!rows.is_empty(), "no paper read");
    let pages: usize = rows.iter().map(|r| r.pages).sum();
    let sum = |f: fn(&Row) -> usize| rows.iter().map(f).sum::<usize>();
    let mut recalls: Vec<f64> = rows.iter().map(|r| ratio(r.hit, r.total)).collect();
    recalls.sort_by(f64::total_cmp);
    println!(
        "\n{} papers, {pages} pages: word recall pooled {:.3}, median {:.3}, worst {:.3}; Tesseract's raw words {:.3}",
        rows.len(),
        ratio(sum(|r| r.hit), sum(|r| r.total)),
        recalls[recalls.len() / 2],
        recalls[0],
        ratio(sum(|r| r.raw_hit), sum(|r| r.total)),
    );
    println!(
        "speed: OCR {:.1} s/page, whole path {:.1} s/page (one Tesseract at a time, one thread); load average after: {}",
        rows.iter().map(|r| r.ocr.as_secs_f64()).sum::<f64>() / pages as f64,
        rows.iter().map(|r| r.all.as_secs_f64()).sum::<f64>() / pages as f64,
        crate::common::load_average()
    );
    Ok(())
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

fn recall(want: &HashMap<String, usize>, got: &HashMap<String, usize>) -> (usize, usize) {
    let total = want.values().sum();
    let hit = want
        .iter()
        .map(|(w, n)| (*n).min(got.get(w).copied().unwrap_or(0)))
        .sum();
    (hit, total)
}

/// An image-only PDF, one page per grayscale PNG (`scale`: its pixels per
/// point), the pixels stored uncompressed: what a scanner makes, without
/// a text layer.
fn image_pdf(pages: &[(&Path, f32)]) -> anyhow::Result<Vec<u8>> {
    let mut out: Vec<u8> = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 3 + 3 * i)).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
    ];
    for (i, (png, scale)) in pages.iter().enumerate() {
        let img = image::open(png)?.into_luma8();
        let (w, h) = img.dimensions();
        let (pw, ph) = (w as f32 / scale, h as f32 / scale);
        let (image, content) = (4 + 3 * i, 5 + 3 * i);
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {pw:.2} {ph:.2}] /Resources << /XObject << /Im0 {image} 0 R >> >> /Contents {content} 0 R >>"
            )
            .into_bytes(),
        );
        let mut obj = format!(
            "<< /Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceGray /BitsPerComponent 8 /Length {} >>\nstream\n",
            img.as_raw().len()
        )
        .into_bytes();
        obj.extend_from_slice(img.as_raw());
        obj.extend_from_slice(b"\nendstream");
        objects.push(obj);
        let draw = format!("q {pw:.2} 0 0 {ph:.2} 0 0 cm /Im0 Do Q");
        objects.push(format!("<< /Length {} >>\nstream\n{draw}\nendstream", draw.len()).into_bytes());
    }
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
    Ok(out)
}

fn short(name: &str) -> String {
    let n = name.chars().count();
    if n <= 44 {
        name.to_string()
    } else {
        format!("…{}", name.chars().skip(n - 43).collect::<String>())
    }
}
