//! `jarvis runtime check`: load every native piece for real and report.
//!
//! Each check unpacks (or finds) its files, loads the library, and does one
//! real unit of work with it: embedding a sentence, opening a PDF. A failure
//! in one piece is reported and the others still run.

use std::path::PathBuf;
use std::time::Instant;

use crate::config::Config;
use crate::runtime::{self, Overrides, Provenance, Resolved};

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileReport {
    pub name: String,
    pub path: PathBuf,
    pub sha256: String,
    pub provenance: Provenance,
}

impl From<&Resolved> for FileReport {
    fn from(r: &Resolved) -> Self {
        FileReport {
            name: r.name.clone(),
            path: r.path.clone(),
            sha256: r.sha256.clone(),
            provenance: r.provenance.clone(),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PieceReport {
    /// "onnxruntime", "embedding model" or "pdfium".
    pub piece: String,
    pub ok: bool,
    /// What it is, e.g. "ONNX Runtime 1.32.0".
    pub version: String,
    pub files: Vec<FileReport>,
    /// Time to unpack/verify the files.
    pub unpack_ms: f64,
    /// Time to load the library or model.
    pub load_ms: f64,
    /// What the real unit of work showed.
    pub detail: String,
    pub error: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RuntimeReport {
    pub ok: bool,
    pub pieces: Vec<PieceReport>,
}

pub fn overrides(cfg: &Config) -> Overrides {
    Overrides {
        onnxruntime: cfg.path("runtime.onnxruntime"),
        pdfium: cfg.path("runtime.pdfium"),
        model_dir: cfg.path("runtime.model_dir"),
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn what(name: &str, configured: bool) -> String {
    if configured {
        return "configured by you".into();
    }
    runtime::piece(name).map(|p| p.what.to_string()).unwrap_or_default()
}

pub fn check(cfg: &Config) -> RuntimeReport {
    let o = overrides(cfg);
    let pieces = vec![check_pdfium(cfg, &o)];
    RuntimeReport {
        ok: pieces.iter().all(|p| p.ok),
        pieces,
    }
}

fn check_pdfium(cfg: &Config, o: &Overrides) -> PieceReport {
    let mut r = PieceReport {
        piece: "pdfium".into(),
        ok: false,
        version: what(runtime::PDFIUM_LIB, o.pdfium.is_some()),
        files: vec![],
        unpack_ms: 0.0,
        load_ms: 0.0,
        detail: String::new(),
        error: None,
    };
    let t = Instant::now();
    let lib = match runtime::resolve_pdfium(&cfg.home, o) {
        Ok(l) => l,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.unpack_ms = ms(t);
    r.files.push((&lib).into());
    let t = Instant::now();
    let engine = match crate::pdf::PdfEngine::load(&lib.path) {
        Ok(e) => e,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.load_ms = ms(t);
    match engine.probe("probe.pdf", crate::pdf::PROBE_PDF) {
        Ok(p) if p.first_page_text.contains(crate::pdf::PROBE_TEXT) => {
            r.ok = true;
            r.detail = format!(
                "opened probe.pdf: {} page, text {:?}",
                p.pages,
                p.first_page_text.trim()
            );
        }
        Ok(p) => {
            r.error = Some(format!(
                "PDFium opened probe.pdf but extracted {:?} instead of {:?} — the library is not working correctly",
                p.first_page_text,
                crate::pdf::PROBE_TEXT
            ))
        }
        Err(e) => r.error = Some(e.to_string()),
    }
    r
}
