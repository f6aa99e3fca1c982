//! Highlights and typed notes, as the reader left them.
//!
//! Text markup (Highlight, Underline, Squiggly, StrikeOut — any colour)
//! becomes a `highlight` carrying the words whose box centres fall inside
//! the annotation's quad points, joined in reading order. The bounding rect
//! is not used: for a highlight over two lines it covers both lines edge to
//! edge, and PDFium's `for_annotation()` text (which uses it) returns the
//! unhighlighted words too. A comment typed on a highlight (its /Contents,
//! shown in its popup) or a reply note pointing at it (/IRT) becomes the
//! highlight's `note_text`. Sticky (Text) and FreeText notes become
//! `comment`s. Ink (stroke geometry, no text) and everything else are
//! skipped. None of this needs the body to have text: a scanned PDF keeps
//! its notes.

use serde::{Deserialize, Serialize};

use pdfium_render::prelude::*;

use super::layout::{self, Line};
use super::{text, PdfEngine, PdfError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationKind {
    Highlight,
    Comment,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    pub kind: AnnotationKind,
    /// The PDF subtype it came from: Highlight, Underline, Squiggly,
    /// StrikeOut, Text or FreeText.
    pub subtype: String,
    /// 1-based page number.
    pub page: u32,
    /// The marked words (highlights) or the typed text (comments). Empty for
    /// a highlight over an image-only page.
    pub text: String,
    /// The reader's comment on a highlight; "" when none, always "" for
    /// comments.
    pub note_text: String,
    /// Where it sits on its page: one box per marked line of a highlight
    /// (its quad points), the note's rectangle for a comment — each
    /// `[left, top, right, bottom]` as fractions of the page's width and
    /// height from its top-left corner, so any drawing of the page can
    /// outline it. Empty when the PDF gave no geometry (and in documents
    /// read before it was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rects: Vec<[f32; 4]>,
}

/// `rects` as chunk metadata stores them: `l t r b` per box, boxes
/// separated by `;`, four decimals (a tenth of a point on a Letter page).
pub fn rects_to_meta(rects: &[[f32; 4]]) -> String {
    rects
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| format!("{:.4}", v.clamp(0.0, 1.0)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// [`rects_to_meta`] read back; a box that does not parse is left out.
pub fn rects_from_meta(s: &str) -> Vec<[f32; 4]> {
    s.split(';')
        .filter_map(|b| {
            let v: Vec<f32> = b.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            match v[..] {
                [l, t, r, b] if l <= r && t <= b => Some([l, t, r, b]),
                _ => None,
            }
        })
        .collect()
}

impl Annotation {
    /// The text to index: `[HIGHLIGHT p.N] …` or `[USER NOTE p.N] …`, with a
    /// highlight's note after it, so retrieval can tell reader-marked
    /// passages from body prose.
    pub fn chunk_text(&self) -> String {
        match self.kind {
            AnnotationKind::Comment => format!("[USER NOTE p.{}] {}", self.page, self.text),
            AnnotationKind::Highlight if self.note_text.is_empty() => {
                format!("[HIGHLIGHT p.{}] {}", self.page, self.text)
            }
            AnnotationKind::Highlight => {
                format!("[HIGHLIGHT p.{}] {}\nNote: {}", self.page, self.text, self.note_text)
            }
        }
    }
}

/// An axis-aligned box in top-down page coordinates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Area {
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
}

impl Area {
    fn contains(&self, x: f32, y: f32) -> bool {
        x >= self.x0 && x <= self.x1 && y >= self.top && y <= self.bottom
    }
}

/// The words of `lines` (already in reading order) whose centres fall in
/// any of `quads`, joined line by line with de-hyphenation.
pub(crate) fn words_in_quads(lines: &[Line], quads: &[Area]) -> String {
    let mut picked: Vec<String> = Vec::new();
    for line in lines {
        let words: Vec<&str> = line
            .words
            .iter()
            .filter(|w| quads.iter().any(|q| q.contains(w.cx(), w.cy())))
            .map(|w| w.text.as_str())
            .collect();
        if !words.is_empty() {
            picked.push(words.join(" "));
        }
    }
    text::join_lines(picked.iter().map(String::as_str), &Default::default())
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Work in progress for one page: highlights keep the PDF annotation index
/// so replies can find their parent.
struct Found {
    annotation: Annotation,
    index: usize,
    order: usize,
}

/// Extract highlights and typed notes from a PDF held in memory.
pub fn extract_annotations(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Vec<Annotation>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut all = Vec::new();
    for (pi, page) in doc.pages().iter().enumerate() {
        let annots = page.annotations();
        if annots.is_empty() {
            continue;
        }
        let page_no = pi as u32 + 1;
        let height = page.height().value;
        let width = page.width().value;
        let norm = |a: &Area| -> [f32; 4] {
            let (w, h) = (width.max(1.0), height.max(1.0));
            [a.x0 / w, a.top / h, a.x1 / w, a.bottom / h]
        };
        let mut lines: Option<Vec<Line>> = None;
        let mut found: Vec<Found> = Vec::new();
        let mut replies: Vec<(usize, String)> = Vec::new();
        let mut reply_targets: Option<Vec<Option<usize>>> = None;
        for (ai, annot) in annots.iter().enumerate() {
            let subtype = match annot.annotation_type() {
                PdfPageAnnotationType::Highlight => "Highlight",
                PdfPageAnnotationType::Underline => "Underline",
                PdfPageAnnotationType::Squiggly => "Squiggly",
                PdfPageAnnotationType::Strikeout => "StrikeOut",
                PdfPageAnnotationType::Text => "Text",
                PdfPageAnnotationType::FreeText => "FreeText",
                // Popups only display their parent's /Contents; Ink is
                // strokes; the rest carry no reader text.
                _ => continue,
            };
            let contents = annot.contents().map(|c| text::clean(&c)).unwrap_or_default();
            if matches!(subtype, "Text" | "FreeText") {
                if contents.is_empty() {
                    continue;
                }
                let rects: Vec<[f32; 4]> = annot
                    .bounds()
                    .ok()
                    .map(|r| {
                        norm(&Area {
                            x0: r.left().value,
                            x1: r.right().value,
                            top: height - r.top().value,
                            bottom: height - r.bottom().value,
                        })
                    })
                    .into_iter()
                    .collect();
                if subtype == "Text" {
                    let targets = reply_targets.get_or_insert_with(|| engine.reply_targets(bytes, pi, annots.len()));
                    if let Some(parent) = targets.get(ai).copied().flatten() {
                        replies.push((parent, contents));
                        continue;
                    }
                }
                found.push(Found {
                    annotation: Annotation {
                        kind: AnnotationKind::Comment,
                        subtype: subtype.into(),
                        page: page_no,
                        text: contents,
                        note_text: String::new(),
                        rects,
                    },
                    index: ai,
                    order: usize::MAX,
                });
                continue;
            }
            let mut quads: Vec<Area> = annot
                .attachment_points()
                .iter()
                .map(|q| Area {
                    x0: q.left().value,
                    x1: q.right().value,
                    top: height - q.top().value,
                    bottom: height - q.bottom().value,
                })
                .collect();
            if quads.is_empty() {
                // Quad points are required for text markup, but a few
                // writers omit them; the rect is the only geometry left.
                if let Ok(r) = annot.bounds() {
                    quads.push(Area {
                        x0: r.left().value,
                        x1: r.right().value,
                        top: height - r.top().value,
                        bottom: height - r.bottom().value,
                    });
                }
            }
            if lines.is_none() {
                let glyphs = super::page_glyphs(&page, name)?;
                lines = Some(layout::reading_order(layout::words_from_glyphs(&glyphs)));
            }
            let page_lines = lines.as_deref().unwrap_or_default();
            let marked = words_in_quads(page_lines, &quads);
            let order = page_lines
                .iter()
                .position(|l| l.words.iter().any(|w| quads.iter().any(|q| q.contains(w.cx(), w.cy()))))
                .unwrap_or(usize::MAX - 1);
            // Some viewers (macOS Preview among them) copy the selected text
            // into /Contents; that is not a comment.
            let note = if !contents.is_empty() && squash(&contents) == squash(&marked) {
                String::new()
            } else {
                contents
            };
            found.push(Found {
                annotation: Annotation {
                    kind: AnnotationKind::Highlight,
                    subtype: subtype.into(),
                    page: page_no,
                    text: marked,
                    note_text: note,
                    rects: quads.iter().map(norm).collect(),
                },
                index: ai,
                order,
            });
        }
        for (parent, reply) in replies {
            match found.iter_mut().find(|f| f.index == parent) {
                Some(f) if f.annotation.kind == AnnotationKind::Highlight => {
                    let note = &mut f.annotation.note_text;
                    if !note.is_empty() {
                        note.push('\n');
                    }
                    note.push_str(&reply);
                }
                // A reply to a note or to something we skip stands alone.
                _ => found.push(Found {
                    annotation: Annotation {
                        kind: AnnotationKind::Comment,
                        subtype: "Text".into(),
                        page: page_no,
                        text: reply,
                        note_text: String::new(),
                        rects: Vec::new(),
                    },
                    index: usize::MAX,
                    order: usize::MAX,
                }),
            }
        }
        // Highlights in reading order, then notes in the order they were made.
        found.sort_by_key(|f| f.order);
        for f in found {
            let a = f.annotation;
            if a.kind == AnnotationKind::Highlight && a.text.is_empty() && a.note_text.is_empty() {
                tracing::debug!(
                    file = name,
                    page = page_no,
                    "highlight over no text and without a note; nothing to keep"
                );
                continue;
            }
            all.push(a);
        }
    }
    tracing::debug!(file = name, annotations = all.len(), "extracted annotations");
    Ok(all)
}
