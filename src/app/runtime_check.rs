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
    let pieces = vec![check_onnx(cfg, &o), check_pdfium(cfg, &o)];
    RuntimeReport {
        ok: pieces.iter().all(|p| p.ok),
        pieces,
    }
}

/// The sentence `runtime check` embeds, and one it should be close to.
const PROBE_SENTENCES: [&str; 2] = ["The cat sits on the mat.", "A kitten is resting on a rug."];

fn empty(piece: &str, version: String) -> PieceReport {
    PieceReport {
        piece: piece.into(),
        ok: false,
        version,
        files: vec![],
        unpack_ms: 0.0,
        load_ms: 0.0,
        detail: String::new(),
        error: None,
    }
}

/// ONNX Runtime and the embedding model together: the only real test of the
/// library is running the model.
fn check_onnx(cfg: &Config, o: &Overrides) -> PieceReport {
    use crate::embed::{self, Embedder, ModelFiles};
    let mut r = empty(
        "onnxruntime + embedding model",
        what(runtime::ORT_LIB, o.onnxruntime.is_some()),
    );
    let t = Instant::now();
    let resolved = runtime::resolve_onnxruntime(&cfg.home, o)
        .and_then(|lib| runtime::resolve_model(&cfg.home, o).map(|(m, tok)| (lib, m, tok)));
    let (lib, model, tokenizer) = match resolved {
        Ok(x) => x,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.unpack_ms = ms(t);
    r.files = vec![(&lib).into(), (&model).into(), (&tokenizer).into()];
    let model_id = if o.model_dir.is_some() {
        cfg.str("rag.embed_model")
    } else {
        embed::DEFAULT_MODEL_ID.to_string()
    };
    let spec = match embed::lookup(&model_id) {
        Ok(s) => s,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    let files = ModelFiles {
        model: model.path.clone(),
        tokenizer: tokenizer.path.clone(),
    };
    let t = Instant::now();
    let mut embedder = match Embedder::load(&lib.path, &files, spec, None, cfg.int("runtime.threads") as usize) {
        Ok(e) => e,
        Err(e) => {
            r.error = Some(e.to_string());
            return r;
        }
    };
    r.load_ms = ms(t);
    if let Some(v) = embed::ort_version() {
        r.version = format!("ONNX Runtime {v}; model {}", spec.id);
    } else {
        r.version = format!("{}; model {}", r.version, spec.id);
    }
    let t = Instant::now();
    match embedder.embed_documents(&PROBE_SENTENCES) {
        Ok(v) if v.len() == 2 && v[0].len() == spec.dims => {
            let sim = embed::cosine(&v[0], &v[1]);
            r.ok = true;
            r.detail = format!(
                "embedded {:?} → {}-d in {:.0} ms; cosine to a paraphrase {:.3}",
                PROBE_SENTENCES[0],
                v[0].len(),
                ms(t),
                sim
            );
        }
        Ok(v) => {
            r.error = Some(format!(
                "the model returned {} vectors of {} dimensions, expected 2 of {} — the model files do not match `{}`",
                v.len(),
                v.first().map_or(0, Vec::len),
                spec.dims,
                spec.id
            ))
        }
        Err(e) => r.error = Some(e.to_string()),
    }
    r
}

fn check_pdfium(cfg: &Config, o: &Overrides) -> PieceReport {
    let mut r = empty("pdfium", what(runtime::PDFIUM_LIB, o.pdfium.is_some()));
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
