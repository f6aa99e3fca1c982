//! PDF → Markdown, rule-based (no model): lines in reading order from
//! `layout`, running headers/footers dropped, pages whose text layer is
//! garbage reported instead of emitted, then the structure rules
//! (`structure`: title, front matter, abstract, headings; `tables`: tables
//! only from aligned columns), then paragraphs re-flowed with
//! de-hyphenation across line, column and page breaks (`blocks`).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::blocks::{self, Block};
use super::layout::{self, Line};
use super::ocr::{Choice, OcrCandidate, OcrInput, OcrNeed, PageText};
use super::structure::{self, Mark};
use super::{flow, tables, text, PdfEngine, PdfError};

/// A converted document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Converted {
    pub markdown: String,
    pub page_count: usize,
    /// Plain text of each page in reading order, running headers and footers
    /// included (a DOI is often printed in one of them).
    pub page_texts: Vec<String>,
    /// The title as the layout shows it (the largest line at the top of the
    /// first page), when there is one.
    #[serde(default)]
    pub title: Option<String>,
    /// 1-based numbers of pages whose text layer is garbage (glyphs mapped
    /// to symbols instead of letters) and that OCR did not read either;
    /// their text is left out.
    #[serde(default)]
    pub unreadable_pages: Vec<usize>,
    /// 1-based numbers of pages whose text is OCR's reading of the page's
    /// picture (a scan, or a text layer that does not read as words).
    #[serde(default)]
    pub ocr_pages: Vec<usize>,
    /// Why pages that needed OCR were not read by it (OCR off, Tesseract
    /// missing), when some were not: for the caller to say.
    #[serde(default)]
    pub ocr_note: Option<String>,
    /// The pages that needed OCR and had no reading of it: what a caller
    /// with OCR at hand has read before converting again.
    #[serde(default)]
    pub ocr_wanted: Vec<OcrCandidate>,
}

struct PageLines {
    lines: Vec<Line>,
    height: f32,
}

/// Convert a PDF held in memory from its text layer alone. `name` is only
/// used in error messages.
pub fn pdf_to_markdown(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Converted, PdfError> {
    pdf_to_markdown_ocr(engine, name, bytes, &OcrInput::default())
}

/// Convert a PDF, taking OCR's reading for the pages that need it (see
/// `ocr`): a scanned page, a text layer that is junk, or one that is
/// suspect and that OCR reads clearly better. Pages that are junk with no
/// better reading are left out and listed; a file with nothing left is an
/// error that says whether OCR was tried.
pub fn pdf_to_markdown_ocr(
    engine: &PdfEngine,
    name: &str,
    bytes: &[u8],
    ocr: &OcrInput,
) -> Result<Converted, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut pages = Vec::new();
    let mut alnum = 0usize;
    let (mut unreadable, mut ocr_pages, mut unread_scans) = (Vec::new(), Vec::new(), Vec::new());
    let mut ocr_wanted = Vec::new();
    for (i, page) in doc.pages().iter().enumerate() {
        let n = i + 1;
        let (glyphs, unmapped) = super::page_glyphs_counted(&page, name)?;
        let height = page.height().value;
        let layer = PageText::of(&glyphs, unmapped);
        let need = layer.need(|| super::ocr::picture_cover(&page));
        let reading = ocr.pages.iter().find(|p| p.page == n);
        if let (Some(need), None) = (need, reading) {
            ocr_wanted.push(OcrCandidate { page: n, need });
        }
        let words = match super::ocr::choose(need, &layer, reading) {
            Choice::TextLayer => {
                if need == Some(OcrNeed::ImageOnly) && reading.is_none() {
                    unread_scans.push(n);
                }
                layer.words
            }
            Choice::Ocr(words) => {
                ocr_pages.push(n);
                words
            }
            Choice::Unreadable => {
                unreadable.push(n);
                pages.push(PageLines {
                    lines: Vec::new(),
                    height,
                });
                continue;
            }
        };
        alnum += words
            .iter()
            .map(|w| w.text.chars().filter(|c| c.is_alphanumeric()).count())
            .sum::<usize>();
        let words = super::linenos::drop_line_numbers(words, height);
        let lines = layout::reading_order(words);
        pages.push(PageLines { lines, height });
    }
    // Why pages that needed OCR have no reading, for errors and warnings.
    let why = || match (&ocr.unavailable, ocr.pages.is_empty()) {
        (Some(r), _) => r.clone(),
        (None, false) => "OCR could not read it either".to_string(),
        (None, true) => "OCR was not tried".to_string(),
    };
    if !unreadable.is_empty() && unreadable.len() == pages.len() {
        return Err(PdfError::Garbled {
            name: name.into(),
            ocr: why(),
        });
    }
    // A stray page number or a scanner's stamp is not a text layer.
    if alnum < 8 {
        return Err(PdfError::NoText {
            name: name.into(),
            ocr: why(),
        });
    }
    if !unreadable.is_empty() {
        tracing::warn!(file = name, pages = ?unreadable, "pages with a garbage text layer left out");
    }
    let ocr_note = (!unreadable.is_empty() || !unread_scans.is_empty()).then(why);
    let page_texts = pages
        .iter()
        .map(|p| p.lines.iter().map(Line::text).collect::<Vec<_>>().join("\n"))
        .collect();
    let (markdown, title) = render(&pages);
    if markdown.trim().is_empty() {
        return Err(PdfError::NoText {
            name: name.into(),
            ocr: why(),
        });
    }
    tracing::debug!(
        file = name,
        pages = pages.len(),
        chars = markdown.len(),
        "converted PDF"
    );
    Ok(Converted {
        markdown,
        page_count: pages.len(),
        page_texts,
        title,
        unreadable_pages: unreadable,
        ocr_pages,
        ocr_note,
        ocr_wanted,
    })
}

/// The repeating key of a header/footer line: case and numbers ignored, so
/// "Page 3 of 12" and "Page 4 of 12" match.
fn running_key(s: &str) -> String {
    let lower = s.to_lowercase();
    let t = lower.trim();
    if !t.is_empty() && t.chars().all(|c| matches!(c, 'i' | 'v' | 'x' | 'l')) {
        return "#".into();
    }
    let mut out = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Indices of running headers, footers and page numbers on each page: lines
/// in the top or bottom margin, set apart from the body by clear space,
/// whose text (numbers ignored) repeats on enough pages. Nothing is dropped
/// from a one-page document.
fn running_lines(pages: &[PageLines]) -> Vec<HashSet<usize>> {
    let candidates: Vec<Vec<(usize, String)>> = pages
        .iter()
        .map(|p| {
            let mut idx: Vec<usize> = (0..p.lines.len()).collect();
            idx.sort_by(|&a, &b| p.lines[a].top.total_cmp(&p.lines[b].top));
            let top = margin_group(&p.lines, idx.iter().copied(), false);
            let mut bottom_first = idx.clone();
            bottom_first.sort_by(|&a, &b| p.lines[b].bottom.total_cmp(&p.lines[a].bottom));
            let bottom = margin_group(&p.lines, bottom_first.into_iter(), true);
            top.into_iter()
                .filter(|&i| p.lines[i].bottom < p.height * 0.12)
                .chain(bottom.into_iter().filter(|&i| p.lines[i].top > p.height * 0.88))
                .map(|i| (i, running_key(&p.lines[i].text())))
                .collect()
        })
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for page in &candidates {
        let unique: HashSet<&str> = page.iter().map(|(_, k)| k.as_str()).collect();
        for k in unique {
            *counts.entry(k).or_default() += 1;
        }
    }
    // A footer in two parts (the journal's name left, the page number
    // right) is two lines side by side on a page split at the gutter, and
    // one line on a page where nothing is split: such a part, of three
    // words or more, also counts on the pages whose margin line holds it
    // whole. A line alone on its row (a title under which a running header
    // repeats its words) does not.
    let within = |k: &str| {
        candidates
            .iter()
            .filter(|page| !page.iter().any(|(_, c)| c == k) && page.iter().any(|(_, c)| contains_words(c, k)))
            .count()
    };
    let needed = (pages.len() / 3).max(2);
    candidates
        .iter()
        .zip(pages)
        .map(|(page, p)| {
            page.iter()
                .filter(|(i, k)| {
                    let n = counts.get(k.as_str()).copied().unwrap_or(0);
                    let l = &p.lines[*i];
                    let beside = || {
                        page.iter().any(|(j, _)| {
                            let o = &p.lines[*j];
                            j != i && o.top < l.bottom && l.top < o.bottom
                        })
                    };
                    n >= needed || k.split(' ').count() >= 3 && beside() && n + within(k) >= needed
                })
                .map(|(i, _)| *i)
                .collect()
        })
        .collect()
}

/// `inner` appears in `outer` as whole words.
fn contains_words(outer: &str, inner: &str) -> bool {
    outer.match_indices(inner).any(|(i, _)| {
        let before = outer[..i].chars().next_back();
        let after = outer[i + inner.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The lines at one edge of a page (`order`: from the edge inwards) that
/// stand apart from the body: up to three lines, ending where a gap wider
/// than the usual space between lines opens. A header sits in the margin
/// with clear space under it; the first lines of the body, however often
/// their words repeat from page to page, follow each other at the body's
/// line spacing, and without such a gap nothing at that edge is a header.
fn margin_group(lines: &[Line], order: impl Iterator<Item = usize>, from_bottom: bool) -> Vec<usize> {
    let mut group = Vec::new();
    // The inner edge of the group so far (bottom when reading down from
    // the top, top when reading up from the bottom).
    let mut edge: Option<f32> = None;
    // The height of the margin's own text: a display formula's tall boxes
    // next to the footer do not make the space between them look narrow.
    let mut margin_h: Option<f32> = None;
    for i in order {
        let l = &lines[i];
        let own = (l.bottom - l.top).max(1.0);
        let h = margin_h.map_or(own, |m| m.min(own));
        margin_h.get_or_insert(own);
        if let Some(e) = edge {
            let gap = if from_bottom { e - l.bottom } else { l.top - e };
            if gap >= 0.9 * h {
                return group;
            }
        }
        if group.len() == 3 {
            return Vec::new();
        }
        group.push(i);
        edge = Some(match (edge, from_bottom) {
            (None, true) => l.top,
            (None, false) => l.bottom,
            (Some(e), true) => e.min(l.top),
            (Some(e), false) => e.max(l.bottom),
        });
    }
    // The whole page is the group: nothing stands apart.
    Vec::new()
}

const BULLETS: &[&str] = &[
    "•", "◦", "▪", "‣", "∙", "·", "–", "-", "*", "○", "■", "□", "►", "✓", "➢",
];

/// A list marker: "- " for bullets, "N. " for numbers, "- (a) " for letters.
fn list_marker(first: &str) -> Option<String> {
    if BULLETS.contains(&first) {
        return Some("- ".into());
    }
    let inner = first.trim_start_matches('(');
    // Split off the last character (not byte: words can be any script).
    let cut = inner.char_indices().next_back().map(|(i, _)| i).unwrap_or(0);
    let (label, close) = inner.split_at(cut);
    if !matches!(close, "." | ")") || label.is_empty() {
        return None;
    }
    if label.len() <= 2 && label.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("{label}. "));
    }
    let lettered = label.len() == 1 && label.chars().all(|c| c.is_ascii_lowercase());
    let roman = label.len() <= 4 && label.chars().all(|c| matches!(c, 'i' | 'v' | 'x'));
    if close == ")" && (lettered || roman) {
        return Some(format!("- {first} "));
    }
    None
}

/// Markdown and the recognised title.
fn render(pages: &[PageLines]) -> (String, Option<String>) {
    let drop = running_lines(pages);
    let kept: Vec<Vec<&Line>> = pages
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            p.lines
                .iter()
                .enumerate()
                .filter(|(i, _)| !drop[pi].contains(i))
                .map(|(_, l)| l)
                .collect()
        })
        .collect();
    let lns = flow::build(&kept);
    let keep_hyphens = text::hyphen_evidence(lns.iter().map(|l| l.text.as_str()));
    let (body, body_bold) = flow::body_style(&lns);
    let shares = flow::style_shares(&lns);
    let heights: Vec<f32> = pages.iter().map(|p| p.height).collect();
    let marks = structure::mark(&lns, &heights, body, body_bold, &shares);
    let found = tables::find_tables(&lns);
    let mut table_at: HashMap<usize, &tables::Table> = HashMap::new();
    let mut in_table = vec![false; lns.len()];
    // Author blocks under a title line up like table columns; they are
    // front matter.
    for t in found
        .iter()
        .filter(|t| marks[t.start..t.end].iter().all(|m| *m == Mark::None))
    {
        table_at.insert(t.start, t);
        in_table[t.start..t.end].iter_mut().for_each(|b| *b = true);
    }

    let mut out: Vec<Block> = Vec::new();
    let mut title: Vec<String> = Vec::new();
    let mut item_text_x0 = 0.0f32;
    // The previous text line, for paragraph continuation.
    let mut prev: Option<usize> = None;
    for (i, l) in lns.iter().enumerate() {
        if let Some(t) = table_at.get(&i) {
            out.push(Block::Table(t.rows.clone()));
            prev = None;
            continue;
        }
        if in_table[i] {
            continue;
        }
        let text = l.text.clone();
        match &marks[i] {
            Mark::Title => {
                title.push(text.clone());
                match out.last_mut() {
                    Some(Block::Title(v)) => v.push(text),
                    _ => out.push(Block::Title(vec![text])),
                }
                prev = None;
                continue;
            }
            Mark::Toc => {
                // Dot leaders between the entry and its page number go.
                let words: Vec<&str> = text.split(' ').filter(|w| !w.chars().all(|c| c == '.')).collect();
                out.push(Block::Item("- ".into(), vec![words.join(" ")]));
                prev = None;
                continue;
            }
            Mark::Front => {
                match out.last_mut() {
                    Some(Block::Front(v)) => v.push(text),
                    _ => out.push(Block::Front(vec![text])),
                }
                prev = None;
                continue;
            }
            Mark::Abstract { rest } => {
                out.push(Block::Heading {
                    style: (i32::MAX, true),
                    depth: Some(1),
                    lines: vec!["Abstract".into()],
                });
                if !rest.is_empty() {
                    out.push(Block::Para {
                        lines: vec![rest.clone()],
                        size: l.size,
                    });
                    prev = Some(i);
                } else {
                    prev = None;
                }
                continue;
            }
            Mark::Heading { style, depth, cont } => {
                let joined = match out.last_mut() {
                    Some(Block::Heading { lines, .. }) if *cont => {
                        lines.push(text.clone());
                        true
                    }
                    _ => false,
                };
                if !joined {
                    out.push(Block::Heading {
                        style: *style,
                        depth: *depth,
                        lines: vec![text],
                    });
                }
                prev = None;
                continue;
            }
            Mark::None => {}
        }
        if l.line.words.len() >= 2 {
            if let Some(m) = l.line.words.first().and_then(|w| list_marker(&w.text)) {
                let rest: Vec<&str> = text.split(' ').skip(1).collect();
                item_text_x0 = l.line.words.get(1).map(|w| w.x0).unwrap_or(l.line.x0);
                out.push(Block::Item(m, vec![rest.join(" ")]));
                prev = Some(i);
                continue;
            }
        }
        let size = l.size.max(1.0);
        let indented = l.line.x0 > l.left + 0.8 * size;
        let continues = prev.is_some_and(|pi| continues_paragraph(&lns[pi], l));
        match out.last_mut() {
            Some(Block::Para { lines, .. }) if continues && !indented => lines.push(text),
            Some(Block::Para { lines, .. }) if continues && flow::starts_lower(&text) => lines.push(text),
            Some(Block::Item(_, v)) if continues && (l.line.x0 - item_text_x0).abs() < 0.6 * size => v.push(text),
            _ => out.push(Block::Para {
                lines: vec![text],
                size: l.size,
            }),
        }
        prev = Some(i);
    }
    let out = blocks::chapter_titles(blocks::mend_breaks(out));
    let title = (!title.is_empty()).then(|| text::join_lines(title.iter().map(String::as_str), &keep_hyphens));
    (blocks::emit(&out, &keep_hyphens), title)
}

/// Does line `l` carry on the paragraph that line `p` is in?
fn continues_paragraph(p: &flow::Ln<'_>, l: &flow::Ln<'_>) -> bool {
    let p_size = p.size.max(1.0);
    let size = l.size.max(1.0);
    // A sentence that visibly goes on (no full stop, lower-case next) goes
    // on across any break, unless the style changes a lot (a footnote).
    let sentence_goes_on = !flow::ends_sentence(&p.text) && flow::starts_lower(&l.text);
    let resized = (p_size - size).abs() > 0.6;
    if sentence_goes_on && (p_size - size).abs() <= 0.15 * p_size {
        return match l.gap_above {
            Some(gap) => gap < 2.0 * size,
            None => true,
        };
    }
    let short = p.line.x1 < p.right - 1.5 * p_size && flow::ends_sentence(&p.text);
    let far = match (p.page == l.page && p.line.column == l.line.column, l.gap_above) {
        (true, Some(gap)) => gap > 0.7 * size || gap < -size,
        (true, None) => true,
        _ => false,
    };
    !short && !far && !resized
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, x0: f32, top: f32, h: f32) -> Line {
        Line::of_words(&[(text, x0)], top, h, false)
    }

    /// A page of body lines at 12 pt spacing down to `last_top`.
    fn body(last_top: f32) -> Vec<Line> {
        let mut v = Vec::new();
        let mut y = 80.0;
        while y <= last_top {
            v.push(line("body text of the page runs on", 60.0, y, 9.0));
            y += 12.0;
        }
        v
    }

    #[test]
    fn a_tall_formula_over_the_footer_does_not_hide_it() {
        let footer = |n: usize| {
            vec![
                line(&format!("{n} / PREPRINT FOR REVIEW"), 60.0, 757.7, 8.8),
                line("Transactions of the Society", 440.0, 757.7, 8.8),
            ]
        };
        let mut pages = Vec::new();
        for n in 1..=3 {
            // The other column's lines run down beside the formula.
            let mut lines = body(730.0);
            if n == 2 {
                // A display formula whose boxes are tall sits 11 pt above
                // the footer: less than its own height, more than a line
                // space of the footer's text.
                lines.push(line("= 1 4 2 h 3 4 2 4 (A2)", 372.0, 713.8, 33.3));
            }
            lines.extend(footer(n));
            pages.push(PageLines { lines, height: 809.9 });
        }
        let drop = running_lines(&pages);
        for (p, d) in pages.iter().zip(&drop) {
            let n = p.lines.len();
            assert!(d.contains(&(n - 1)) && d.contains(&(n - 2)), "{drop:?}");
        }
    }

    #[test]
    fn a_footer_in_two_parts_counts_where_it_is_one_line() {
        let mut pages = Vec::new();
        for n in 1..=4 {
            let mut lines = body(700.0);
            if n == 1 {
                // A title alone on its row, with the same words.
                lines.insert(0, line("Journal of the Fixtures", 200.0, 40.0, 14.0));
                lines.push(line("Journal of the Fixtures", 60.0, 757.7, 8.8));
                lines.push(line("PREPRINT FOR REVIEW / 1", 430.0, 757.7, 8.8));
            } else {
                lines.push(line(
                    &format!("Journal of the Fixtures PREPRINT FOR REVIEW / {n}"),
                    60.0,
                    757.7,
                    8.8,
                ));
            }
            pages.push(PageLines { lines, height: 809.9 });
        }
        let drop = running_lines(&pages);
        let n = pages[0].lines.len();
        assert!(drop[0].contains(&(n - 1)) && drop[0].contains(&(n - 2)), "{drop:?}");
        assert!(!drop[0].contains(&0), "{drop:?}");
        // Words inside a longer word do not count.
        assert!(!contains_words("journal of the fixturesque", "journal of the fixtures"));
        assert!(contains_words(
            "journal of the fixtures preprint",
            "journal of the fixtures"
        ));
    }

    #[test]
    fn running_keys_ignore_numbers() {
        assert_eq!(running_key("Page 3 of 12"), running_key("Page 4 of 12"));
        assert_eq!(running_key("17"), "#");
        assert_eq!(running_key("xiv"), "#");
    }

    #[test]
    fn a_text_layer_of_symbols_is_garbage() {
        let glyph = |c| layout::Glyph {
            c,
            x0: 0.0,
            x1: 5.0,
            top: 0.0,
            bottom: 10.0,
            size: 10.0,
            bold: false,
            space_before: false,
        };
        let garbled = |g: &[layout::Glyph]| PageText::of(g, 0).readability.garbled();
        let symbols: Vec<layout::Glyph> = "#$%&!*+=<>".chars().cycle().take(300).map(glyph).collect();
        assert!(garbled(&symbols));
        let prose: Vec<layout::Glyph> = "Words, with (some) punctuation: 3.2%!"
            .chars()
            .cycle()
            .take(300)
            .map(glyph)
            .collect();
        assert!(!garbled(&prose));
        // A short page (a figure label, an equation) is too little to judge.
        assert!(!garbled(&symbols[..50]));
    }

    #[test]
    fn list_markers() {
        assert_eq!(list_marker("•").as_deref(), Some("- "));
        assert_eq!(list_marker("2.").as_deref(), Some("2. "));
        assert_eq!(list_marker("(a)").as_deref(), Some("- (a) "));
        assert_eq!(list_marker("A."), None);
        assert_eq!(list_marker("1"), None);
        assert_eq!(list_marker("ã"), None);
        assert_eq!(list_marker("(ã)"), None);
    }
}
