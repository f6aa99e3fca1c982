//! PDF → Markdown, rule-based (no model): lines in reading order from
//! `layout`, then running headers/footers dropped, headings picked by font
//! size and weight relative to the body text, paragraphs re-flowed with
//! de-hyphenation, list items and table rows kept as such.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::layout::{self, Line};
use super::{text, PdfEngine, PdfError};

/// A converted document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Converted {
    pub markdown: String,
    pub page_count: usize,
    /// Plain text of each page in reading order, running headers and footers
    /// included (a DOI is often printed in one of them).
    pub page_texts: Vec<String>,
}

struct PageLines {
    lines: Vec<Line>,
    height: f32,
}

/// Convert a PDF held in memory. `name` is only used in error messages.
pub fn pdf_to_markdown(engine: &PdfEngine, name: &str, bytes: &[u8]) -> Result<Converted, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut pages = Vec::new();
    let mut alnum = 0usize;
    for page in doc.pages().iter() {
        let glyphs = super::page_glyphs(&page, name)?;
        alnum += glyphs.iter().filter(|g| g.c.is_alphanumeric()).count();
        let lines = layout::reading_order(layout::words_from_glyphs(&glyphs));
        pages.push(PageLines {
            lines,
            height: page.height().value,
        });
    }
    // A stray page number or a scanner's stamp is not a text layer.
    if alnum < 8 {
        return Err(PdfError::NoText { name: name.into() });
    }
    let page_texts = pages
        .iter()
        .map(|p| p.lines.iter().map(Line::text).collect::<Vec<_>>().join("\n"))
        .collect();
    let markdown = render(&pages);
    if markdown.trim().is_empty() {
        return Err(PdfError::NoText { name: name.into() });
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
/// in the top or bottom margin whose text (numbers ignored) repeats on
/// enough pages. Nothing is dropped from a one-page document.
fn running_lines(pages: &[PageLines]) -> Vec<HashSet<usize>> {
    let candidates: Vec<Vec<(usize, String)>> = pages
        .iter()
        .map(|p| {
            let mut idx: Vec<usize> = (0..p.lines.len()).collect();
            idx.sort_by(|&a, &b| p.lines[a].top.total_cmp(&p.lines[b].top));
            let top = idx.iter().take(3).filter(|&&i| p.lines[i].bottom < p.height * 0.12);
            let bottom = idx.iter().rev().take(3).filter(|&&i| p.lines[i].top > p.height * 0.88);
            top.chain(bottom)
                .map(|&i| (i, running_key(&p.lines[i].text())))
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
    let needed = (pages.len() / 3).max(2);
    candidates
        .iter()
        .map(|page| {
            page.iter()
                .filter(|(_, k)| counts.get(k.as_str()).copied().unwrap_or(0) >= needed)
                .map(|(i, _)| *i)
                .collect()
        })
        .collect()
}

/// Heading style: font size in half points and weight.
type Style = (i32, bool);

fn style(line: &Line) -> Style {
    ((line.size() * 2.0).round() as i32, line.all_bold())
}

fn body_size(pages: &[PageLines]) -> f32 {
    let mut hist: HashMap<i32, usize> = HashMap::new();
    for l in pages.iter().flat_map(|p| &p.lines) {
        *hist.entry((l.size() * 2.0).round() as i32).or_default() += l.text().chars().count();
    }
    hist.into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(s, _)| s as f32 / 2.0)
        .unwrap_or(10.0)
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

enum Role {
    Heading(Style),
    Item(String),
    Row(Vec<String>),
    Text,
}

enum Block {
    Heading(Style, Vec<String>),
    Para(Vec<String>),
    Item(String, Vec<String>),
    Table(Vec<Vec<String>>),
}

/// Left and right text edges of each column of a page.
fn column_edges(lines: &[&Line]) -> HashMap<Option<usize>, (f32, f32)> {
    let mut by_col: HashMap<Option<usize>, (Vec<f32>, Vec<f32>)> = HashMap::new();
    for l in lines {
        let e = by_col.entry(l.column).or_default();
        e.0.push(l.x0);
        e.1.push(l.x1);
    }
    by_col
        .into_iter()
        .map(|(c, (mut x0, mut x1))| {
            x0.sort_by(f32::total_cmp);
            x1.sort_by(f32::total_cmp);
            (c, (x0[x0.len() / 10], x1[x1.len() * 9 / 10]))
        })
        .collect()
}

fn ends_sentence(s: &str) -> bool {
    s.trim_end().ends_with(['.', '!', '?', ':'])
}

fn render(pages: &[PageLines]) -> String {
    let body = body_size(pages);
    let drop = running_lines(pages);
    let keep_hyphens = text::hyphenated_words(
        pages
            .iter()
            .flat_map(|p| &p.lines)
            .map(|l| l.text())
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
    );

    let mut blocks: Vec<Block> = Vec::new();
    // The previous line and the geometry it was judged against.
    let mut prev: Option<(&Line, f32, f32, usize)> = None;
    let mut item_text_x0 = 0.0f32;
    for (pi, page) in pages.iter().enumerate() {
        let lines: Vec<&Line> = page
            .lines
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop[pi].contains(i))
            .map(|(_, l)| l)
            .collect();
        let edges = column_edges(&lines);
        let roles: Vec<Role> = classify(&lines, body);
        for (line, role) in lines.iter().copied().zip(roles) {
            let size = line.size().max(1.0);
            let (left, right) = edges.get(&line.column).copied().unwrap_or((line.x0, line.x1));
            let text = line.text();
            match role {
                Role::Heading(st) => {
                    let same = matches!(blocks.last(), Some(Block::Heading(s, _)) if *s == st)
                        && prev.is_some_and(|(p, _, _, pp)| pp == pi && line.top - p.bottom < size);
                    match blocks.last_mut() {
                        Some(Block::Heading(_, v)) if same => v.push(text),
                        _ => blocks.push(Block::Heading(st, vec![text])),
                    }
                }
                Role::Item(marker) => {
                    let rest: Vec<&str> = text.split(' ').skip(1).collect();
                    item_text_x0 = line.words.get(1).map(|w| w.x0).unwrap_or(line.x0);
                    blocks.push(Block::Item(marker, vec![rest.join(" ")]));
                }
                Role::Row(cells) => match blocks.last_mut() {
                    Some(Block::Table(rows)) if prev.is_some_and(|(_, _, _, pp)| pp == pi) => rows.push(cells),
                    _ => blocks.push(Block::Table(vec![cells])),
                },
                Role::Text => {
                    let indented = line.x0 > left + 0.8 * size;
                    let continues = match prev {
                        None => false,
                        Some((p, _, p_right, pp)) => {
                            let p_size = p.size().max(1.0);
                            let short = p.x1 < p_right - 1.5 * p_size && ends_sentence(&p.text());
                            let same_flow = pp == pi && p.column == line.column;
                            let gap = line.top - p.bottom;
                            let far = same_flow && (gap > 0.7 * size || gap < -size);
                            let resized = (p_size - size).abs() > 0.6;
                            !short && !far && !resized
                        }
                    };
                    match blocks.last_mut() {
                        Some(Block::Para(v)) if continues && !indented => v.push(text),
                        Some(Block::Item(_, v)) if continues && (line.x0 - item_text_x0).abs() < 0.6 * size => {
                            v.push(text)
                        }
                        _ => blocks.push(Block::Para(vec![text])),
                    }
                }
            }
            prev = Some((line, left, right, pi));
        }
    }
    emit(&blocks, &keep_hyphens)
}

/// Decide what each line of a page is. Table rows need a neighbour that is
/// also a row: one line with a wide gap is more likely a stray alignment.
fn classify(lines: &[&Line], body: f32) -> Vec<Role> {
    let mut roles: Vec<Role> = lines
        .iter()
        .map(|l| {
            let size = l.size();
            let words = l.words.len();
            let has_letters = l.words.iter().any(|w| w.text.chars().any(char::is_alphabetic));
            let t = l.text();
            let headingish = words <= 15 && has_letters && !t.ends_with([',', ';']);
            if headingish && (size >= body * 1.15 || (l.all_bold() && size >= body * 0.9 && !t.ends_with('.'))) {
                return Role::Heading(style(l));
            }
            if words >= 2 {
                if let Some(m) = l.words.first().and_then(|w| list_marker(&w.text)) {
                    return Role::Item(m);
                }
            }
            let cells = l.cells(size.max(1.0));
            if cells.len() >= 2 {
                return Role::Row(cells);
            }
            Role::Text
        })
        .collect();
    let is_row: Vec<bool> = roles.iter().map(|r| matches!(r, Role::Row(_))).collect();
    for (i, r) in roles.iter_mut().enumerate() {
        let neighbour = (i > 0 && is_row[i - 1]) || is_row.get(i + 1).copied().unwrap_or(false);
        if matches!(r, Role::Row(_)) && !neighbour {
            *r = Role::Text;
        }
    }
    roles
}

fn emit(blocks: &[Block], keep: &HashSet<String>) -> String {
    // Heading levels: biggest style first; bold before regular at a size.
    let mut styles: Vec<Style> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading(s, _) => Some(*s),
            _ => None,
        })
        .collect();
    styles.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    styles.dedup();
    let level = |s: &Style| styles.iter().position(|x| x == s).map(|i| i + 1).unwrap_or(3).min(3);

    let mut out = String::new();
    let mut last_was_item = false;
    for b in blocks {
        let is_item = matches!(b, Block::Item(..));
        if !out.is_empty() {
            out.push_str(if is_item && last_was_item { "\n" } else { "\n\n" });
        }
        last_was_item = is_item;
        match b {
            Block::Heading(s, lines) => {
                out.push_str(&"#".repeat(level(s)));
                out.push(' ');
                out.push_str(&text::join_lines(lines.iter().map(String::as_str), keep));
            }
            Block::Para(lines) => out.push_str(&text::join_lines(lines.iter().map(String::as_str), keep)),
            Block::Item(marker, lines) => {
                out.push_str(marker);
                out.push_str(&text::join_lines(lines.iter().map(String::as_str), keep));
            }
            Block::Table(rows) => {
                let width = rows.iter().map(Vec::len).max().unwrap_or(0);
                for (i, row) in rows.iter().enumerate() {
                    out.push('|');
                    for c in 0..width {
                        let cell = row.get(c).map(|s| s.replace('|', "\\|")).unwrap_or_default();
                        out.push(' ');
                        out.push_str(&cell);
                        out.push_str(" |");
                    }
                    out.push('\n');
                    if i == 0 {
                        out.push('|');
                        out.push_str(&" --- |".repeat(width));
                        out.push('\n');
                    }
                }
                out.pop();
            }
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_keys_ignore_numbers() {
        assert_eq!(running_key("Page 3 of 12"), running_key("Page 4 of 12"));
        assert_eq!(running_key("17"), "#");
        assert_eq!(running_key("xiv"), "#");
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
