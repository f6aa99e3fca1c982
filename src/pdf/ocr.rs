//! The PDF side of OCR: which pages need it, each drawn as a picture for
//! the reader, and the reader's words taken back in as a page's text.
//!
//! A page needs OCR when its text layer is junk ([`readable`] says
//! [`Verdict::Junk`]: few letters among many symbols, or letter runs that
//! form no words), when it only may be ([`Verdict::Suspect`]: OCR then decides),
//! or when it has next to no text but a picture covering half of it (a
//! scanned page). The reading itself happens elsewhere (the app runs
//! Tesseract through the sandbox); words come back in points, with the
//! line OCR put each in.
//! Must not: run anything, or know which OCR program read the page.

use std::collections::HashSet;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use image::ImageEncoder as _;
use pdfium_render::prelude::*;
use serde::{Deserialize, Serialize};

use super::layout::{self, Glyph, Word};
use super::readable::{self, Readability, Verdict};
use super::{read_error, PdfEngine, PdfError};

/// Why a page is to be read by OCR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OcrNeed {
    /// Next to no text, a picture over half the page: a scan.
    ImageOnly,
    /// Text that may not read (math, code, a partly broken font): OCR's
    /// reading is compared with it.
    Suspect,
    /// Text that is junk beyond doubt.
    Junk,
}

/// A page that needs OCR, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OcrCandidate {
    pub page: usize,
    pub need: OcrNeed,
}

/// One word OCR read, in points from the page's top-left corner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrWord {
    pub text: String,
    pub x0: f32,
    pub top: f32,
    pub x1: f32,
    pub bottom: f32,
    /// The line OCR put the word in (any number unique within the page).
    pub line: u32,
}

/// A page OCR read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrPage {
    /// 1-based.
    pub page: usize,
    pub words: Vec<OcrWord>,
}

/// What OCR gives a conversion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OcrInput {
    pub pages: Vec<OcrPage>,
    /// Why pages that needed OCR have no reading (OCR off, Tesseract not
    /// installed, a page that failed): said in the errors and warnings.
    pub unavailable: Option<String>,
}

/// A page drawn for OCR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrImage {
    /// 1-based.
    pub page: usize,
    /// A grayscale PNG.
    pub path: PathBuf,
    pub width: u32,
    pub height: u32,
    /// Pixels per point (the resolution in dots per inch over 72).
    pub scale: f32,
}

/// The widest or tallest picture drawn for OCR: a page larger than
/// 20 inches at 300 dpi is drawn at a lower resolution instead.
pub const MAX_OCR_SIDE: u32 = 6000;
/// Letters and digits under which a page counts as having no text.
const NO_TEXT_CHARS: usize = 20;
/// Share of the page a picture must cover for an almost textless page to
/// be taken for a scan.
const SCAN_COVER: f32 = 0.5;
/// Share of OCR's words that the text layer must also have for the text
/// layer to stand when it was only suspect: then both say the same, and
/// the text layer spells it exactly.
const AGREEMENT: f64 = 0.8;
/// Fewest OCR words for [`AGREEMENT`] to be measured.
const AGREEMENT_MIN_WORDS: usize = 20;
/// How much better OCR must read than a suspect text layer to replace it.
const BETTER_BY: f64 = 0.1;

/// A page's text layer as the converter sees it.
pub(crate) struct PageText {
    pub words: Vec<Word>,
    pub readability: Readability,
}

impl PageText {
    /// `unmapped`: characters of the page the text layer had no Unicode
    /// for (see `page_glyphs_counted`).
    pub fn of(glyphs: &[Glyph], unmapped: usize) -> PageText {
        let words = layout::words_from_glyphs(glyphs);
        let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let mut readability = readable::measure(&text.join(" "));
        readability.unmapped = unmapped;
        PageText { words, readability }
    }

    /// What this page needs; `cover` measures how much of the page its
    /// pictures cover (only asked for a page with next to no text).
    pub fn need(&self, cover: impl FnOnce() -> f32) -> Option<OcrNeed> {
        match self.readability.verdict() {
            Verdict::Junk => Some(OcrNeed::Junk),
            Verdict::Suspect => Some(OcrNeed::Suspect),
            Verdict::Reads => None,
            Verdict::TooShort if self.readability.alnum < NO_TEXT_CHARS && cover() >= SCAN_COVER => {
                Some(OcrNeed::ImageOnly)
            }
            Verdict::TooShort => None,
        }
    }
}

/// Where a page's text comes from in the end.
pub(crate) enum Choice {
    TextLayer,
    Ocr(Vec<Word>),
    /// Junk with no better reading: left out, and said.
    Unreadable,
}

/// Choose between a page's text layer and OCR's reading of it.
///
/// Without a reading, junk is left out and everything else stays as it
/// is. With one: a text layer that says what OCR read (agreement) stands,
/// since it spells it exactly — a table of contents of dot leaders or a
/// page of code only looked odd; otherwise OCR's reading is taken for junk
/// whenever it reads (or is a few words, as on a chart), and for a suspect
/// page only when it reads clearly better.
pub(crate) fn choose(need: Option<OcrNeed>, layer: &PageText, ocr: Option<&OcrPage>) -> Choice {
    let Some(need) = need else {
        return Choice::TextLayer;
    };
    let Some(page) = ocr else {
        return match need {
            OcrNeed::Junk => Choice::Unreadable,
            OcrNeed::Suspect | OcrNeed::ImageOnly => Choice::TextLayer,
        };
    };
    let r = readable::measure(&ocr_text(page));
    let agrees = agreement(page, &layer.words).is_some_and(|a| a >= AGREEMENT);
    // A few words that are mostly words: a chart's labels, a scan's caption.
    let few_words = r.verdict() == Verdict::TooShort && r.lettered > 0 && r.word_share() >= 0.5;
    match need {
        OcrNeed::Junk if agrees => Choice::TextLayer,
        OcrNeed::Junk => match r.verdict() {
            Verdict::Reads | Verdict::Suspect => Choice::Ocr(ocr_words(page)),
            Verdict::TooShort if few_words => Choice::Ocr(ocr_words(page)),
            Verdict::TooShort | Verdict::Junk => Choice::Unreadable,
        },
        OcrNeed::Suspect => {
            let better = r.verdict() == Verdict::Reads && r.value() >= layer.readability.value() + BETTER_BY;
            if better && !agrees {
                Choice::Ocr(ocr_words(page))
            } else {
                Choice::TextLayer
            }
        }
        // OCR's noise on a photograph is not text.
        OcrNeed::ImageOnly if matches!(r.verdict(), Verdict::Reads | Verdict::Suspect) || few_words => {
            Choice::Ocr(ocr_words(page))
        }
        OcrNeed::ImageOnly => Choice::TextLayer,
    }
}

fn ocr_text(p: &OcrPage) -> String {
    p.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
}

/// Share of OCR's words (three letters or more, case folded) that the text
/// layer has too; `None` when OCR read fewer than [`AGREEMENT_MIN_WORDS`]
/// such words (too few to say).
fn agreement(p: &OcrPage, layer: &[Word]) -> Option<f64> {
    let key = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphabetic())
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect()
    };
    let have: HashSet<String> = layer.iter().flat_map(|w| key(&w.text)).collect();
    let ocr: Vec<String> = p.words.iter().flat_map(|w| key(&w.text)).collect();
    if ocr.len() < AGREEMENT_MIN_WORDS {
        return None;
    }
    Some(ocr.iter().filter(|w| have.contains(*w)).count() as f64 / ocr.len() as f64)
}

/// OCR's words as the layout's words: every word of a line spans the
/// line's height (so the line stays one line in reading order), and the
/// font size is estimated from that height and the letters on the line —
/// a line with ascenders and descenders is about 0.94 em tall, one in
/// small letters only about half that.
pub(crate) fn ocr_words(p: &OcrPage) -> Vec<Word> {
    let mut lines: Vec<(u32, f32, f32, String)> = Vec::new();
    for w in &p.words {
        match lines.iter_mut().find(|l| l.0 == w.line) {
            Some(l) => {
                l.1 = l.1.min(w.top);
                l.2 = l.2.max(w.bottom);
                l.3.push_str(&w.text);
            }
            None => lines.push((w.line, w.top, w.bottom, w.text.clone())),
        }
    }
    p.words
        .iter()
        .filter(|w| !w.text.trim().is_empty())
        .filter_map(|w| {
            let (_, top, bottom, letters) = lines.iter().find(|l| l.0 == w.line)?;
            let ascent = if letters
                .chars()
                .any(|c| c.is_uppercase() || c.is_ascii_digit() || "bdfhklt()[]{}/|'\"!?".contains(c))
            {
                0.72
            } else {
                0.47
            };
            let descent = if letters.chars().any(|c| "gjpqy,;()[]{}|".contains(c)) {
                0.22
            } else {
                0.0
            };
            let size = ((bottom - top) / (ascent + descent)).max(1.0);
            Some(Word {
                text: w.text.clone(),
                x0: w.x0,
                x1: w.x1.max(w.x0),
                top: *top,
                bottom: *bottom,
                size,
                bold: false,
            })
        })
        .collect()
}

/// The share of `page` its pictures cover (overlaps counted twice, capped
/// at 1): a scanned page is one picture over all of it.
pub(crate) fn picture_cover(page: &PdfPage<'_>) -> f32 {
    let area = (page.width().value * page.height().value).max(1.0);
    let mut covered = 0.0f32;
    for object in page.objects().iter() {
        if object.object_type() != PdfPageObjectType::Image {
            continue;
        }
        if let Ok(b) = object.bounds() {
            covered += (b.width().value * b.height().value).abs();
        }
    }
    (covered / area).min(1.0)
}

/// The pages of a PDF that need OCR, in page order.
pub fn ocr_candidates(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Vec<OcrCandidate>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut out = Vec::new();
    for (i, page) in doc.pages().iter().enumerate() {
        let (glyphs, unmapped) = super::page_glyphs_counted(&page, name)?;
        if let Some(need) = PageText::of(&glyphs, unmapped).need(|| picture_cover(&page)) {
            out.push(OcrCandidate { page: i + 1, need });
        }
    }
    Ok(out)
}

/// Each page's text layer as the readability check sees it: its words in
/// content order, joined by spaces (for `cargo xtask bench pdf
/// --readability`, which measures the check against real pages).
pub fn text_layer_pages(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Vec<String>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut out = Vec::new();
    for page in doc.pages().iter() {
        let glyphs = super::page_glyphs(&page, name)?;
        let words: Vec<String> = layout::words_from_glyphs(&glyphs).into_iter().map(|w| w.text).collect();
        out.push(words.join(" "));
    }
    Ok(out)
}

/// Draw `pages` (1-based) at `dpi` as grayscale PNGs in `dir`
/// (`page-N.png`), on white, forms drawn, each side at most
/// [`MAX_OCR_SIDE`] pixels.
pub fn render_for_ocr(
    engine: &PdfEngine,
    name: &str,
    bytes: &[u8],
    pages: &[usize],
    dpi: u32,
    dir: &Path,
) -> Result<Vec<OcrImage>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let count = doc.pages().len() as usize;
    let mut out = Vec::with_capacity(pages.len());
    for &n in pages {
        if n == 0 || n > count {
            return Err(PdfError::Read {
                name: name.into(),
                reason: format!("there is no page {n}; the document has {count}"),
            });
        }
        let page = doc
            .pages()
            .get((n - 1) as PdfPageIndex)
            .map_err(|e| read_error(name, "page", e))?;
        let (w, h) = (page.width().value.max(1.0), page.height().value.max(1.0));
        let scale = (dpi.max(1) as f32 / 72.0).min(MAX_OCR_SIDE as f32 / w.max(h));
        let config = PdfRenderConfig::new()
            .scale_page_by_factor(scale)
            .set_clear_color(PdfColor::WHITE)
            .render_form_data(true);
        let bitmap = page
            .render_with_config(&config)
            .map_err(|e| read_error(name, "drawing the page for OCR", e))?;
        let image = bitmap
            .as_image()
            .map_err(|e| read_error(name, "reading the drawn page", e))?
            .into_luma8();
        let (width, height) = image.dimensions();
        let path = dir.join(format!("page-{n}.png"));
        let mut png = Vec::new();
        image::codecs::png::PngEncoder::new_with_quality(
            Cursor::new(&mut png),
            image::codecs::png::CompressionType::Fast,
            image::codecs::png::FilterType::Adaptive,
        )
        .write_image(&image, width, height, image::ExtendedColorType::L8)
        .and_then(|()| std::fs::write(&path, &png).map_err(image::ImageError::IoError))
        .map_err(|e| PdfError::Read {
            name: name.into(),
            reason: format!("writing page {n} for OCR to {}: {e}", path.display()),
        })?;
        out.push(OcrImage {
            page: n,
            path,
            width,
            height,
            scale: width as f32 / w,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, x0: f32, line: u32) -> OcrWord {
        OcrWord {
            text: text.into(),
            x0,
            top: 100.0 + line as f32 * 14.0,
            x1: x0 + 6.0 * text.len() as f32,
            bottom: 109.0 + line as f32 * 14.0,
            line,
        }
    }

    fn layer(text: &str) -> PageText {
        let words: Vec<Word> = text
            .split(' ')
            .enumerate()
            .map(|(i, t)| Word {
                text: t.into(),
                x0: i as f32 * 30.0,
                x1: i as f32 * 30.0 + 25.0,
                top: 0.0,
                bottom: 10.0,
                size: 10.0,
                bold: false,
            })
            .collect();
        PageText {
            readability: readable::measure(text),
            words,
        }
    }

    fn page(text: &str) -> OcrPage {
        OcrPage {
            page: 1,
            words: text
                .split(' ')
                .enumerate()
                .map(|(i, t)| word(t, (i % 10) as f32 * 50.0, (i / 10) as u32))
                .collect(),
        }
    }

    const PROSE: &str = "the reader of this page sees words that are printed in the usual way and it \
        reads them one after the other as a person would do in the course of a day and the text \
        says what it says with all of the little words that hold the sentences together";

    #[test]
    fn junk_goes_to_ocr_when_ocr_reads_and_is_left_out_when_not() {
        let junk = layer(&"- \\- -- . \\ ;".repeat(10));
        assert!(matches!(
            choose(Some(OcrNeed::Junk), &junk, Some(&page(PROSE))),
            Choice::Ocr(_)
        ));
        assert!(matches!(
            choose(Some(OcrNeed::Junk), &junk, Some(&page(&"| ~ = .".repeat(10)))),
            Choice::Unreadable
        ));
        assert!(matches!(choose(Some(OcrNeed::Junk), &junk, None), Choice::Unreadable));
    }

    #[test]
    fn a_suspect_text_layer_stands_when_ocr_says_the_same() {
        let code = "x <- rnorm(100) ; y <- x^2 + 1 ; fit <- lm(y ~ x) ; summary(fit) ; plot(x, y) ; ".repeat(4);
        let l = layer(&code);
        assert!(matches!(
            choose(Some(OcrNeed::Suspect), &l, Some(&page(&code))),
            Choice::TextLayer
        ));
        // A page whose fonts broke the words: OCR reads it, and says
        // something else.
        let broken = layer(&PROSE.replace('e', "\u{2022}").replace('t', "+"));
        assert!(matches!(
            choose(Some(OcrNeed::Suspect), &broken, Some(&page(PROSE))),
            Choice::Ocr(_)
        ));
        assert!(matches!(
            choose(Some(OcrNeed::Suspect), &broken, None),
            Choice::TextLayer
        ));
    }

    #[test]
    fn ocr_words_share_their_line_and_get_a_size() {
        let p = OcrPage {
            page: 1,
            words: vec![
                word("Typography", 10.0, 0),
                word("jumps", 80.0, 0),
                word("now", 10.0, 1),
            ],
        };
        let w = ocr_words(&p);
        assert_eq!(w.len(), 3);
        assert_eq!((w[0].top, w[0].bottom), (w[1].top, w[1].bottom));
        // 9 pt tall with ascenders and descenders ≈ 9.6 pt; "now" has
        // neither, so the same box means a larger type.
        assert!((w[0].size - 9.0 / 0.94).abs() < 0.01, "{}", w[0].size);
        assert!(w[2].size > 15.0, "{}", w[2].size);
    }
}
