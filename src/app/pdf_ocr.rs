//! Conversions with OCR: the PDF worker says which pages need it, draws
//! them, Tesseract reads each picture, and the worker converts again with
//! those readings.
//!
//! Owns: the `[pdf]` settings' meaning (`pdf.ocr` off means one plain
//! conversion whose errors say so), the rounds between worker and
//! Tesseract — pages drawn [`BATCH`] at a time at [`OCR_DPI`] into a
//! temporary folder and deleted once read, so neither a worker run nor the
//! disk grows with the document — and turning Tesseract's pixels into
//! points. A Tesseract that cannot run at all (not installed, a language
//! missing) stops the reading and its message travels in
//! [`OcrInput::unavailable`]; one page that fails is logged and left to
//! the converter's rules (a junk page stays out, and says so).
//! Must not: touch PDFium (the worker does), or spawn anything but through
//! `crate::ocr`.

use std::time::Instant;

use super::pdf_isolated::{run_worker_once, IsolatedPdfError, OcrRender, PdfJob, PdfJobOutput, PdfOp, WorkerCommand};
use crate::config::Config;
use crate::ocr::{self, OcrError, OcrSettings};
use crate::pdf::{OcrImage, OcrInput, OcrPage, OcrWord};

/// Resolution pages are drawn at for OCR: Tesseract reads body text best
/// at around 300 dpi.
pub const OCR_DPI: u32 = 300;
/// Pages drawn per worker run.
const BATCH: usize = 4;

/// What `pdf.ocr = false` makes the errors say.
pub const OCR_OFF: &str = "OCR is off (`pdf.ocr = false`; set it to true to read scanned pages)";

/// Tesseract as `[pdf]` configures it.
pub fn ocr_settings(cfg: &Config) -> OcrSettings {
    OcrSettings {
        program: cfg.str("pdf.tesseract").into(),
        languages: cfg.list("pdf.ocr_languages"),
        timeout: std::time::Duration::from_secs(u64::try_from(cfg.int("pdf.ocr_timeout_seconds")).unwrap_or(120)),
        memory_mb: u64::try_from(cfg.int("pdf.ocr_memory_mb")).unwrap_or(1024),
    }
}

/// Run a conversion (`req.op` is `Convert`), with OCR for the pages that
/// need it unless `pdf.ocr` is off.
pub(super) fn convert(
    worker: &WorkerCommand,
    cfg: &Config,
    req: &PdfJob,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<PdfJobOutput, IsolatedPdfError> {
    let mut job = req.clone();
    if req.ocr.is_some() {
        // The caller brought its own readings.
        return run_worker_once(worker, cfg, &job, stop);
    }
    if !cfg.bool("pdf.ocr") {
        job.ocr = Some(OcrInput {
            pages: Vec::new(),
            unavailable: Some(OCR_OFF.into()),
        });
        return run_worker_once(worker, cfg, &job, stop);
    }
    job.ocr_plan = true;
    let first = run_worker_once(worker, cfg, &job, stop)?;
    if first.ocr_candidates.is_empty() {
        return Ok(first);
    }
    let pages: Vec<usize> = first.ocr_candidates.iter().map(|c| c.page).collect();
    tracing::info!(file = %req.name, pages = ?pages, "reading pages with OCR");
    let input = read_pages(worker, cfg, req, &pages, stop)?;
    job.ocr_plan = false;
    job.ocr = Some(input);
    run_worker_once(worker, cfg, &job, stop)
}

/// Draw `pages` and read each with Tesseract.
fn read_pages(
    worker: &WorkerCommand,
    cfg: &Config,
    req: &PdfJob,
    pages: &[usize],
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<OcrInput, IsolatedPdfError> {
    let settings = ocr_settings(cfg);
    let mut input = OcrInput::default();
    let dir = tempfile::Builder::new()
        .prefix("jarvis-ocr-")
        .tempdir()
        .map_err(|e| IsolatedPdfError::Worker {
            name: req.name.clone(),
            ending: "not started".into(),
            detail: format!("cannot make a folder for the pages to read: {e}"),
            pid: 0,
        })?;
    let started = Instant::now();
    let mut failed: Vec<(usize, String)> = Vec::new();
    'batches: for batch in pages.chunks(BATCH) {
        let mut draw = req.clone();
        draw.op = PdfOp::OcrRender;
        draw.ocr_render = Some(OcrRender {
            pages: batch.to_vec(),
            dir: dir.path().to_path_buf(),
            dpi: OCR_DPI,
        });
        let images = run_worker_once(worker, cfg, &draw, stop)?.ocr_images;
        for image in images {
            let read = ocr::read(&settings, &image.path, (image.scale * 72.0).round() as u32, stop);
            // Each picture is a few hundred KiB to a few MiB: gone once read.
            if let Err(e) = std::fs::remove_file(&image.path) {
                tracing::debug!(path = %image.path.display(), error = %e, "cannot remove a page picture");
            }
            match read {
                Ok(words) => input.pages.push(page_of(&image, words)),
                Err(OcrError::Stopped) => {
                    return Err(IsolatedPdfError::Worker {
                        name: req.name.clone(),
                        ending: "stopped".into(),
                        detail: "the work was stopped before it finished".into(),
                        pid: 0,
                    })
                }
                Err(e) if e.is_setup() => {
                    tracing::warn!(file = %req.name, error = %e, "OCR cannot run");
                    input.unavailable = Some(e.to_string());
                    break 'batches;
                }
                Err(e) => {
                    tracing::warn!(file = %req.name, page = image.page, error = %e, "OCR failed on a page");
                    failed.push((image.page, e.to_string()));
                }
            }
        }
    }
    if input.unavailable.is_none() && input.pages.is_empty() {
        if let Some((page, e)) = failed.first() {
            input.unavailable = Some(format!("OCR failed on page {page}: {e}"));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        file = %req.name,
        read = input.pages.len(),
        failed = failed.len(),
        seconds,
        per_page = seconds / pages.len().max(1) as f64,
        "OCR done"
    );
    Ok(input)
}

/// Tesseract's words, from pixels of the picture to points of the page.
pub fn page_of(image: &OcrImage, words: Vec<ocr::Word>) -> OcrPage {
    let s = image.scale.max(f32::MIN_POSITIVE);
    OcrPage {
        page: image.page,
        words: words
            .into_iter()
            .map(|w| OcrWord {
                x0: w.left as f32 / s,
                top: w.top as f32 / s,
                x1: (w.left + w.width) as f32 / s,
                bottom: (w.top + w.height) as f32 / s,
                line: w.line,
                text: w.text,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn pixels_become_points_and_lines_stay_apart() {
        let image = OcrImage {
            page: 3,
            path: PathBuf::from("page-3.png"),
            width: 2550,
            height: 3300,
            scale: 300.0 / 72.0,
        };
        let word = |text: &str, left, line| ocr::Word {
            text: text.into(),
            left,
            top: 300,
            width: 250,
            height: 50,
            confidence: 95.0,
            line,
        };
        let page = page_of(&image, vec![word("Scans", 300, 1), word("read", 600, 2)]);
        assert_eq!(page.page, 3);
        let w = &page.words[0];
        assert!((w.x0 - 72.0).abs() < 1e-3 && (w.x1 - 132.0).abs() < 1e-3, "{w:?}");
        assert!((w.top - 72.0).abs() < 1e-3 && (w.bottom - 84.0).abs() < 1e-3, "{w:?}");
        assert_ne!(page.words[0].line, page.words[1].line);
    }

    #[test]
    fn a_request_with_a_box_past_f32_is_refused() {
        let req = |x: &str| {
            format!(
                r#"{{"job":{{"op":"convert","path":"/x.pdf","name":"x.pdf","max_figures":0,"min_pixels":0,"ocr":{{"pages":[{{"page":1,"words":[{{"text":"a","x0":{x},"top":0,"x1":1,"bottom":1,"line":1}}]}}],"unavailable":null}}}},"pdfium":"/p.so"}}"#
            )
        };
        let ok = crate::app::pdf_isolated::decode_request(req("1.5").as_bytes()).expect("a finite box");
        let again = crate::app::pdf_isolated::decode_request(&ok.encode().expect("encode")).expect("round trip");
        assert_eq!(format!("{ok:?}"), format!("{again:?}"));
        assert!(crate::app::pdf_isolated::decode_request(req("1e39").as_bytes()).is_err());
    }
}
