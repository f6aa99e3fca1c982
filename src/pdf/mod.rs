//! PDFium, through pdfium-render: the only module that touches PDF internals.
//!
//! Owns: binding the PDFium shared library once per process and every read
//! of a PDF's pages, text, annotations and images.
//! Must not: write to the knowledge base or know about documents, chunks or
//! providers. PDFium is C++ and real PDFs are hostile, so callers outside
//! `runtime check` are expected to run this in a child process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pdfium_render::prelude::*;

/// The one-page PDF `runtime check` opens.
pub const PROBE_PDF: &[u8] = include_bytes!("../../assets/runtime/probe.pdf");
/// The text PROBE_PDF carries.
pub const PROBE_TEXT: &str = "Jarvis runtime probe";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PdfError {
    #[error("cannot load PDFium from {path}: {reason} — point `runtime.pdfium` at a working libpdfium.so or unset it to use the bundled one")]
    Load { path: PathBuf, reason: String },
    #[error("PDFium is already loaded from {loaded}; restart jarvis to load it from {requested}")]
    AlreadyLoaded { loaded: PathBuf, requested: PathBuf },
    #[error("{name}: cannot open the PDF: {reason}")]
    Open { name: String, reason: String },
    #[error("{name}: {reason}")]
    Read { name: String, reason: String },
}

/// A loaded PDFium. There is at most one per process: PDFium's global state
/// is initialised once and pdfium-render keeps its bindings in a static.
pub struct PdfEngine {
    pdfium: Pdfium,
    path: PathBuf,
}

static ENGINE: OnceLock<PdfEngine> = OnceLock::new();

impl PdfEngine {
    /// Bind PDFium from `lib` (once per process; later calls with the same
    /// path return the same engine).
    pub fn load(lib: &Path) -> Result<&'static PdfEngine, PdfError> {
        if let Some(e) = ENGINE.get() {
            return if e.path == lib {
                Ok(e)
            } else {
                Err(PdfError::AlreadyLoaded {
                    loaded: e.path.clone(),
                    requested: lib.to_path_buf(),
                })
            };
        }
        let bindings = Pdfium::bind_to_library(lib).map_err(|e| PdfError::Load {
            path: lib.to_path_buf(),
            reason: e.to_string(),
        })?;
        let engine = PdfEngine {
            pdfium: Pdfium::new(bindings),
            path: lib.to_path_buf(),
        };
        // A racing thread may have won; either way one engine exists.
        let _ = ENGINE.set(engine);
        ENGINE.get().ok_or_else(|| PdfError::Load {
            path: lib.to_path_buf(),
            reason: "initialisation raced".into(),
        })
    }

    pub fn library_path(&self) -> &Path {
        &self.path
    }

    /// Open a PDF from memory and return its page count and the text of its
    /// first page: enough to prove the library works end to end.
    pub fn probe(&self, name: &str, bytes: &[u8]) -> Result<Probe, PdfError> {
        let doc = self
            .pdfium
            .load_pdf_from_byte_slice(bytes, None)
            .map_err(|e| PdfError::Open {
                name: name.into(),
                reason: e.to_string(),
            })?;
        let pages = doc.pages();
        let count = pages.len();
        let first_page_text = match count {
            0 => String::new(),
            _ => {
                let page = pages.get(0).map_err(|e| PdfError::Read {
                    name: name.into(),
                    reason: e.to_string(),
                })?;
                let text = page.text().map_err(|e| PdfError::Read {
                    name: name.into(),
                    reason: e.to_string(),
                })?;
                text.all()
            }
        };
        Ok(Probe {
            pages: count as usize,
            first_page_text,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Probe {
    pub pages: usize,
    pub first_page_text: String,
}
