//! The document as one sequence of body lines in reading order (running
//! headers and footers already out), each with the context the structure
//! rules need: its page, its column's edges, the space above and below it
//! within its column, and its style.

use std::collections::HashMap;

use super::layout::Line;

/// One body line and its neighbourhood.
#[derive(Debug)]
pub(crate) struct Ln<'a> {
    pub line: &'a Line,
    pub page: usize,
    pub text: String,
    /// Dominant font size of the line.
    pub size: f32,
    pub bold: bool,
    /// Left and right text edges of the line's column on its page.
    pub left: f32,
    pub right: f32,
    /// Space to the line above in the same column of the same page; None
    /// when the line starts a column, a page or follows a spanning block.
    pub gap_above: Option<f32>,
    /// Space to the line below, likewise.
    pub gap_below: Option<f32>,
}

impl Ln<'_> {
    /// Size in half points plus weight: what "the same style" means.
    pub fn style(&self) -> (i32, bool) {
        ((self.size * 2.0).round() as i32, self.bold)
    }

    pub fn same_style(&self, other: &Ln<'_>) -> bool {
        (self.size - other.size).abs() <= 0.6 && self.bold == other.bold
    }

    /// The line as wide as its column (prose that wraps), give or take.
    pub fn full_width(&self) -> bool {
        self.line.x1 > self.right - 2.0 * self.size.max(1.0)
    }
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

/// Flatten pages (lines in reading order, minus the dropped ones) into one
/// sequence.
pub(crate) fn build<'a>(pages: &[Vec<&'a Line>]) -> Vec<Ln<'a>> {
    let mut out: Vec<Ln<'a>> = Vec::new();
    for (pi, lines) in pages.iter().enumerate() {
        let edges = column_edges(lines);
        let first = out.len();
        for l in lines {
            let (left, right) = edges.get(&l.column).copied().unwrap_or((l.x0, l.x1));
            out.push(Ln {
                line: l,
                page: pi,
                text: l.text(),
                size: l.size(),
                bold: l.all_bold(),
                left,
                right,
                gap_above: None,
                gap_below: None,
            });
        }
        for i in first + 1..out.len() {
            let (a, b) = (out[i - 1].line, out[i].line);
            if a.column == b.column && b.top >= a.top {
                let gap = b.top - a.bottom;
                out[i].gap_above = Some(gap);
                out[i - 1].gap_below = Some(gap);
            }
        }
    }
    out
}

/// The dominant body font size (by characters), and whether body text is
/// bold (some producers report every glyph as bold).
pub(crate) fn body_style(lns: &[Ln<'_>]) -> (f32, bool) {
    let mut hist: HashMap<(i32, bool), usize> = HashMap::new();
    for l in lns {
        *hist.entry(l.style()).or_default() += l.text.chars().count();
    }
    hist.into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|((s, b), _)| (s as f32 / 2.0, b))
        .unwrap_or((10.0, false))
}

/// Share of all characters set in each style.
pub(crate) fn style_shares(lns: &[Ln<'_>]) -> HashMap<(i32, bool), f32> {
    let mut hist: HashMap<(i32, bool), usize> = HashMap::new();
    let mut total = 0usize;
    for l in lns {
        let n = l.text.chars().count();
        *hist.entry(l.style()).or_default() += n;
        total += n;
    }
    hist.into_iter()
        .map(|(k, n)| (k, n as f32 / total.max(1) as f32))
        .collect()
}

/// A line that ends a sentence (or a clause that introduces what follows).
pub(crate) fn ends_sentence(s: &str) -> bool {
    let t = s
        .trim_end()
        .trim_end_matches(['"', '\'', ')', ']', '\u{201D}', '\u{2019}', '*']);
    t.ends_with(['.', '!', '?', ':', ';'])
}

/// The first letter of the text is lower case (a continuing sentence).
pub(crate) fn starts_lower(s: &str) -> bool {
    s.chars().find(|c| c.is_alphanumeric()).is_some_and(char::is_lowercase)
}
