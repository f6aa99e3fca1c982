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

mod annotations;
mod blocks;
mod convert;
mod dingbats;
mod figures;
mod flow;
mod layout;
mod linenos;
mod ocr;
pub mod readable;
mod render;
mod structure;
mod tables;
mod text;

pub use annotations::extract_annotations;
pub use annotations::{rects_from_meta, rects_to_meta, Annotation, AnnotationKind};
pub use convert::Converted;
pub use convert::{pdf_to_markdown, pdf_to_markdown_ocr};
pub use figures::extract_figures;
pub use figures::Figure;
pub use ocr::{
    ocr_candidates, render_for_ocr, text_layer_pages, OcrCandidate, OcrImage, OcrInput, OcrNeed, OcrPage, OcrWord,
};
pub use render::{clamp_width, render_page, PageImage, MAX_RENDER_PAGES};

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
    #[error("{name}: the PDF is encrypted (password-protected); save an unprotected copy (e.g. `qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) and use that")]
    Encrypted { name: String },
    #[error("{name}: not a readable PDF ({reason}); the file is corrupt — download or export it again")]
    Corrupt { name: String, reason: String },
    #[error("{name}: the file ends early (no %%EOF marker in its last bytes), so it is truncated — download it again")]
    Truncated { name: String },
    #[error("{name}: the PDF has no pages")]
    NoPages { name: String },
    /// `ocr` says what OCR did or why it did not run ("OCR is off …",
    /// "OCR needs Tesseract … install …", "OCR could not read it either").
    #[error("{name}: no extractable text — scanned or image-only PDF; {ocr} (its highlights and notes can still be extracted)")]
    NoText { name: String, ocr: String },
    /// Every page's text layer is garbage (fonts without a usable Unicode
    /// mapping): what would come out is symbols, not words.
    #[error("{name}: no extractable text — the text layer is unreadable on every page (its fonts map glyphs to symbols, not letters); {ocr} — export the PDF again from its source, or print it to a new PDF")]
    Garbled { name: String, ocr: String },
}

impl PdfError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            PdfError::Load { .. } => ErrorKind::User,
            PdfError::AlreadyLoaded { .. } => ErrorKind::Conflict,
            PdfError::Open { .. }
            | PdfError::Read { .. }
            | PdfError::Encrypted { .. }
            | PdfError::Corrupt { .. }
            | PdfError::Truncated { .. }
            | PdfError::NoPages { .. }
            | PdfError::NoText { .. }
            | PdfError::Garbled { .. } => ErrorKind::User,
        }
    }
}

/// A loaded PDFium. There is at most one per process: PDFium's global state
/// is initialised once and pdfium-render keeps its bindings in a static.
pub struct PdfEngine {
    pdfium: Pdfium,
    /// A second handle on the same library for the few calls pdfium-render
    /// does not wrap (following an annotation's /IRT link). It goes through
    /// the same process-wide lock as `pdfium`.
    raw: Box<dyn PdfiumLibraryBindings>,
    path: PathBuf,
}

static ENGINE: OnceLock<PdfEngine> = OnceLock::new();

impl PdfEngine {
    /// Bind PDFium from `lib` (once per process; later calls with the same
    /// path return the same engine).
    pub fn load(lib: &Path) -> Result<&'static PdfEngine, PdfError> {
        // pdfium-render's bindings are a process global: two threads binding
        // at once make the second fail with "already initialized", so the
        // first load is serialised.
        static LOADING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = crate::lock::lock(&LOADING);
        if let Some(e) = ENGINE.get() {
            // The same library unpacked in two places (tests, or two
            // JARVIS_HOMEs in one process) is the same library.
            let same_bytes = || {
                let hash = |p: &Path| crate::runtime::sha256_file(p).ok();
                hash(&e.path).is_some_and(|a| Some(a) == hash(lib))
            };
            return if e.path == lib || same_bytes() {
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
        let raw = Pdfium::bind_to_library(lib).map_err(|e| PdfError::Load {
            path: lib.to_path_buf(),
            reason: e.to_string(),
        })?;
        let engine = PdfEngine {
            pdfium: Pdfium::new(bindings),
            raw,
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

    /// For each annotation on page `page` (0-based), the index of the
    /// annotation it replies to (/IRT), if any. pdfium-render exposes no
    /// linked annotations, so this opens the document a second time through
    /// the raw bindings; it only runs for pages with Text notes. Any failure
    /// means "no replies": the notes then stand alone as comments.
    #[allow(unsafe_code)]
    pub(crate) fn reply_targets(&self, bytes: &[u8], page: usize, count: usize) -> Vec<Option<usize>> {
        let b = self.raw.as_ref();
        let mut out = vec![None; count];
        let Ok(page) = i32::try_from(page) else { return out };
        // SAFETY: every handle is checked for null before use and closed
        // after its last use, children before parents; `bytes` outlives the
        // document; PDFium was initialised by `Pdfium::new` in `load`.
        unsafe {
            let doc = b.FPDF_LoadMemDocument64(bytes, None);
            if doc.is_null() {
                return out;
            }
            let p = b.FPDF_LoadPage(doc, page);
            if !p.is_null() {
                let n = usize::try_from(b.FPDFPage_GetAnnotCount(p)).unwrap_or(0).min(count);
                for (i, slot) in out.iter_mut().enumerate().take(n) {
                    let a = b.FPDFPage_GetAnnot(p, i as i32);
                    if a.is_null() {
                        continue;
                    }
                    if b.FPDFAnnot_HasKey(a, "IRT") != 0 {
                        let parent = b.FPDFAnnot_GetLinkedAnnot(a, "IRT");
                        if !parent.is_null() {
                            *slot = usize::try_from(b.FPDFPage_GetAnnotIndex(p, parent)).ok();
                            b.FPDFPage_CloseAnnot(parent);
                        }
                    }
                    b.FPDFPage_CloseAnnot(a);
                }
                b.FPDF_ClosePage(p);
            }
            b.FPDF_CloseDocument(doc);
        }
        out
    }

    /// Open a PDF for reading, turning PDFium's error codes into errors
    /// that name the file and say what is wrong with it.
    pub(crate) fn open<'a>(&'a self, name: &str, bytes: &'a [u8]) -> Result<PdfDocument<'a>, PdfError> {
        let head = &bytes[..bytes.len().min(1024)];
        if !head.windows(5).any(|w| w == b"%PDF-") {
            return Err(PdfError::Corrupt {
                name: name.into(),
                reason: "no %PDF- header".into(),
            });
        }
        let doc = self
            .pdfium
            .load_pdf_from_byte_slice(bytes, None)
            .map_err(|e| open_error(name, e))?;
        // PDFium quietly rebuilds a missing cross-reference table, so a
        // half-downloaded file would "open" with pages missing. Every
        // complete PDF ends with %%EOF (possibly followed by a little junk).
        let tail = &bytes[bytes.len().saturating_sub(2048)..];
        if !tail.windows(5).any(|w| w == b"%%EOF") {
            return Err(PdfError::Truncated { name: name.into() });
        }
        if doc.pages().is_empty() {
            return Err(PdfError::NoPages { name: name.into() });
        }
        Ok(doc)
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

fn open_error(name: &str, e: PdfiumError) -> PdfError {
    let name = name.to_string();
    match e {
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::PasswordError)
        | PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::SecurityError) => PdfError::Encrypted { name },
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::FormatError) => PdfError::Corrupt {
            name,
            reason: "PDFium cannot parse its structure".into(),
        },
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::FileError) => PdfError::Corrupt {
            name,
            reason: "PDFium cannot read it as a file".into(),
        },
        other => PdfError::Open {
            name,
            reason: other.to_string(),
        },
    }
}

pub(crate) fn read_error(name: &str, what: &str, e: PdfiumError) -> PdfError {
    PdfError::Read {
        name: name.into(),
        reason: format!("{what}: {e}"),
    }
}

#[derive(Debug, Clone)]
pub struct Probe {
    pub pages: usize,
    pub first_page_text: String,
}

/// PDFium's own plain text of every page (`FPDFText_GetText`), with no
/// layout analysis: the yardstick the quality benchmark measures the
/// converter's word recovery against. Letters PDFium misread as dingbats
/// (dvips' bitmap fonts, see `dingbats`) and TeX ligatures passed through
/// as control codes are put back here too: that is decoding, not layout,
/// and a yardstick of dingbats measures nothing.
pub fn plain_text(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Vec<String>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut out = Vec::new();
    for page in doc.pages().iter() {
        let text = page.text().map_err(|e| read_error(name, "page text", e))?;
        let all = text.all();
        let all = dingbats::mend_text(&all).unwrap_or(all);
        out.push(text::mend_ligatures(&all));
    }
    Ok(out)
}

/// One entry of a PDF's outline (its bookmarks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineEntry {
    /// 1 for a top-level entry.
    pub level: usize,
    pub title: String,
}

/// Most outline entries [`outline`] reads: a damaged or hostile file can
/// make its bookmark tree cyclic, and PDFium follows sibling links as
/// they are.
pub const MAX_OUTLINE_ENTRIES: usize = 5000;
const MAX_OUTLINE_DEPTH: usize = 16;

/// The document's outline, depth first (at most [`MAX_OUTLINE_ENTRIES`]
/// entries, 16 levels deep). The quality benchmark checks the converter's
/// headings against it; a LaTeX paper made with hyperref has one.
pub fn outline(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Vec<OutlineEntry>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let bookmarks = doc.bookmarks();
    let mut out = Vec::new();
    let mut stack: Vec<_> = bookmarks.root().map(|b| (b, 1)).into_iter().collect();
    while let Some((b, level)) = stack.pop() {
        if out.len() >= MAX_OUTLINE_ENTRIES {
            break;
        }
        // Popped in reverse: the children come before the next sibling.
        if let Some(next) = b.next_sibling() {
            stack.push((next, level));
        }
        if level < MAX_OUTLINE_DEPTH {
            if let Some(child) = b.first_child() {
                stack.push((child, level + 1));
            }
        }
        out.push(OutlineEntry {
            level,
            title: b.title().unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Every character of a page as a [`layout::Glyph`], in content order,
/// normalised (ligatures split, odd spaces folded), in top-down coordinates.
/// Rotated characters (margin stamps such as arXiv's) are left out: they
/// are not part of the running text.
pub(crate) fn page_glyphs(page: &PdfPage<'_>, name: &str) -> Result<Vec<layout::Glyph>, PdfError> {
    page_glyphs_counted(page, name).map(|(g, _)| g)
}

/// [`page_glyphs`] and how many characters it left out as unmapped
/// (private-use code points and control codes: glyphs whose font gives no
/// Unicode for them), which the readability check counts against a page.
pub(crate) fn page_glyphs_counted(page: &PdfPage<'_>, name: &str) -> Result<(Vec<layout::Glyph>, usize), PdfError> {
    let height = page.height().value;
    let text = page.text().map_err(|e| read_error(name, "page text", e))?;
    let chars = text.chars();
    let mut out = Vec::with_capacity(chars.len());
    let mut space = false;
    let mut font_cache: Option<(String, bool)> = None;
    // Glyphs that may be letters PDFium misread as dingbats (see
    // `dingbats`), by index into `out`, with the code their name carried.
    let mut misread: Vec<(usize, u8)> = Vec::new();
    let mut letters = 0usize;
    let mut unmapped = 0usize;
    for (k, ch) in chars.iter().enumerate() {
        let Some(c) = ch.unicode_char() else {
            unmapped += 1;
            continue;
        };
        let code = dingbats::code_of(c).filter(|_| !dingbats::genuine_dingbat_font(&ch.font_name()));
        if code.is_none() && c.is_alphanumeric() {
            letters += 1;
        }
        let norm = match text::tex_ligature(c) {
            // Only inside or at the edge of a word, and not in a math font
            // (TeX's big delimiters sit at the same codes in cmex).
            Some(lig)
                if (out.last().is_some_and(|g: &layout::Glyph| g.c.is_alphabetic()) && !space
                    || chars
                        .get(k + 1)
                        .ok()
                        .and_then(|n| n.unicode_char())
                        .is_some_and(char::is_alphabetic))
                    && !text::math_font(&ch.font_name()) =>
            {
                text::Norm::Text(lig)
            }
            _ => text::normalise(c),
        };
        let piece = match norm {
            text::Norm::Skip => {
                if c.is_control() || ('\u{E000}'..='\u{F8FF}').contains(&c) {
                    unmapped += 1;
                }
                continue;
            }
            text::Norm::Space => {
                space = true;
                continue;
            }
            text::Norm::Text(t) => t,
            text::Norm::Keep(_) => "",
        };
        if ch
            .angle_degrees()
            .is_ok_and(|a| (a % 360.0).abs() > 1.0 && (a % 360.0 - 360.0).abs() > 1.0)
        {
            space = true;
            continue;
        }
        let Ok(b) = ch.loose_bounds() else { continue };
        // Some producers (ps2pdf with Type 3 bitmap fonts) flip the font
        // matrix, so the size comes out negative; a missing size falls back
        // to the glyph box height.
        let size = match ch.scaled_font_size().value.abs() {
            s if s >= 1.0 && s.is_finite() => s,
            _ => (b.top().value - b.bottom().value).abs().max(1.0),
        };
        let bold = match ch.font_weight() {
            Some(w) if weight_value(w) >= 600 => true,
            _ => {
                // Embedded subset fonts often report weight 400 whatever they
                // look like; the PostScript name says "Bold" or "CMBX".
                let fname = ch.font_name();
                match &font_cache {
                    Some((n, b)) if *n == fname => *b,
                    _ => {
                        let b = bold_name(&fname);
                        font_cache = Some((fname, b));
                        b
                    }
                }
            }
        };
        let (x0, x1) = (b.left().value, b.right().value);
        let (top, bottom) = (height - b.top().value, height - b.bottom().value);
        if let Some(code) = code {
            misread.push((out.len(), code));
        }
        let glyph = layout::Glyph {
            c,
            x0,
            x1,
            top,
            bottom,
            size,
            bold,
            space_before: space,
        };
        if piece.is_empty() {
            out.push(glyph);
        } else {
            // A ligature: its box shared among the letters it stands for.
            out.extend(glyph.spelled(piece));
        }
        space = false;
    }
    dingbats::mend_glyphs(&mut out, &misread, letters);
    Ok((out, unmapped))
}

fn weight_value(w: PdfFontWeight) -> u32 {
    match w {
        PdfFontWeight::Weight100 => 100,
        PdfFontWeight::Weight200 => 200,
        PdfFontWeight::Weight300 => 300,
        PdfFontWeight::Weight400Normal => 400,
        PdfFontWeight::Weight500 => 500,
        PdfFontWeight::Weight600 => 600,
        PdfFontWeight::Weight700Bold => 700,
        PdfFontWeight::Weight800 => 800,
        PdfFontWeight::Weight900 => 900,
        PdfFontWeight::Custom(v) => v,
    }
}

fn bold_name(font: &str) -> bool {
    let f = font.to_ascii_lowercase();
    // Subset prefixes ("ABCDEF+") don't matter; the style words do.
    ["bold", "black", "heavy", "semibold", "demi", "cmbx", "cmb10", "-bx"]
        .iter()
        .any(|k| f.contains(k))
}

#[cfg(test)]
mod tests;
