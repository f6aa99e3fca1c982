//! Page geometry → reading order, with no PDFium in sight.
//!
//! Input is the positioned glyphs of one page (already normalised, in
//! top-down coordinates); output is words grouped into lines, in the order a
//! person reads them: full-width bands (titles, abstracts spanning the page)
//! top to bottom, and inside a multi-column band every column completely
//! before the next. Keeping this pure makes the heuristics unit-testable and
//! lets annotations reuse exactly the order the converter uses.

/// One character with its box, in points, y growing downwards from the top
/// of the page.
#[derive(Debug, Clone)]
pub(crate) struct Glyph {
    pub c: char,
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
    pub size: f32,
    pub bold: bool,
    /// PDFium saw whitespace (or a generated space/line break) right before
    /// this glyph in content order.
    pub space_before: bool,
}

impl Glyph {
    /// This glyph as the letters of `text` (a ligature, "ﬁ" → "fi"), its
    /// box shared among them; the first keeps the space before it.
    pub fn spelled<'a>(&'a self, text: &'a str) -> impl Iterator<Item = Glyph> + 'a {
        let w = (self.x1 - self.x0) / text.chars().count().max(1) as f32;
        text.chars().enumerate().map(move |(i, c)| Glyph {
            c,
            x0: self.x0 + w * i as f32,
            x1: self.x0 + w * (i + 1) as f32,
            space_before: self.space_before && i == 0,
            ..self.clone()
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Word {
    pub text: String,
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
    pub size: f32,
    pub bold: bool,
}

impl Word {
    pub fn cx(&self) -> f32 {
        (self.x0 + self.x1) / 2.0
    }
    pub fn cy(&self) -> f32 {
        (self.top + self.bottom) / 2.0
    }
    fn height(&self) -> f32 {
        (self.bottom - self.top).max(0.1)
    }
}

/// A run of words on one baseline inside one column (or across the page for
/// spanning lines).
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub words: Vec<Word>,
    pub x0: f32,
    pub x1: f32,
    pub top: f32,
    pub bottom: f32,
    /// Index of the column this line sits in; `None` when it spans a gutter.
    pub column: Option<usize>,
}

impl Line {
    fn from_words(mut words: Vec<Word>, column: Option<usize>) -> Line {
        words.sort_by(|a, b| a.x0.total_cmp(&b.x0));
        let x0 = words.iter().map(|w| w.x0).fold(f32::MAX, f32::min);
        let x1 = words.iter().map(|w| w.x1).fold(f32::MIN, f32::max);
        let top = words.iter().map(|w| w.top).fold(f32::MAX, f32::min);
        let bottom = words.iter().map(|w| w.bottom).fold(f32::MIN, f32::max);
        Line {
            words,
            x0,
            x1,
            top,
            bottom,
            column,
        }
    }

    /// Words joined by single spaces.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for (i, w) in self.words.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&w.text);
        }
        s
    }

    /// The dominant font size (by characters).
    pub fn size(&self) -> f32 {
        let (mut sum, mut n) = (0.0, 0.0);
        for w in &self.words {
            let k = w.text.chars().count() as f32;
            sum += w.size * k;
            n += k;
        }
        if n > 0.0 {
            sum / n
        } else {
            0.0
        }
    }

    pub fn all_bold(&self) -> bool {
        self.words.iter().all(|w| w.bold)
    }

    /// A line of `(text, left edge)` words for unit tests, 5 pt per
    /// character, in column 0.
    #[cfg(test)]
    pub fn of_words(words: &[(&str, f32)], top: f32, size: f32, bold: bool) -> Line {
        let words: Vec<Word> = words
            .iter()
            .map(|&(t, x0)| Word {
                text: t.into(),
                x0,
                x1: x0 + 5.0 * t.chars().count() as f32,
                top,
                bottom: top + size,
                size,
                bold,
            })
            .collect();
        Line::from_words(words, Some(0))
    }

    /// Horizontal gaps wider than `min_gap` split the line into cells
    /// (text, left, right); a line with two or more cells is a candidate
    /// table row.
    pub fn cells(&self, min_gap: f32) -> Vec<Cell> {
        let mut cells: Vec<Cell> = Vec::new();
        let mut prev_x1: Option<f32> = None;
        for w in &self.words {
            match (prev_x1, cells.last_mut()) {
                (Some(p), Some(cell)) if w.x0 - p < min_gap => {
                    cell.text.push(' ');
                    cell.text.push_str(&w.text);
                    cell.x1 = w.x1;
                }
                _ => cells.push(Cell {
                    text: w.text.clone(),
                    x0: w.x0,
                    x1: w.x1,
                }),
            }
            prev_x1 = Some(w.x1);
        }
        cells
    }
}

/// One cell of a candidate table row.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub text: String,
    pub x0: f32,
    pub x1: f32,
}

/// Group glyphs (in content order) into words. A word ends at whitespace,
/// at a jump to another line, or at a horizontal gap too wide for
/// letter spacing — some producers position every word without emitting a
/// space character. How wide is "too wide" is decided per line: where the
/// text layer carries its own spaces, a quarter of the font size; where a
/// long run of glyphs has (almost) none — old TeX output, Type 3 fonts —
/// the gap that separates words is read off the line's own gaps.
pub(crate) fn words_from_glyphs(glyphs: &[Glyph]) -> Vec<Word> {
    let limits = gap_limits(glyphs);
    let mut words = Vec::new();
    let mut cur: Option<Word> = None;
    for (i, g) in glyphs.iter().enumerate() {
        let breaks = match &cur {
            None => false,
            Some(w) => {
                // Ligatures mapped to several characters share one box, so a
                // glyph starting left of the previous one is normal; only one
                // wholly left of the word's start is a jump.
                g.space_before || !same_line(w, g) || g.x0 - w.x1 > limits[i] || g.x1 <= w.x0
            }
        };
        if breaks {
            if let Some(w) = cur.take() {
                words.push(w);
            }
        }
        match &mut cur {
            Some(w) => {
                w.text.push(g.c);
                w.x0 = w.x0.min(g.x0);
                w.x1 = w.x1.max(g.x1);
                w.top = w.top.min(g.top);
                w.bottom = w.bottom.max(g.bottom);
                w.size = w.size.max(g.size);
                w.bold &= g.bold;
            }
            None => {
                cur = Some(Word {
                    text: g.c.to_string(),
                    x0: g.x0,
                    x1: g.x1,
                    top: g.top,
                    bottom: g.bottom,
                    size: g.size,
                    bold: g.bold,
                })
            }
        }
    }
    words.extend(cur);
    words
}

fn same_line(w: &Word, g: &Glyph) -> bool {
    let h = (g.bottom - g.top).max(w.height()).max(1.0);
    let cy = (g.top + g.bottom) / 2.0;
    cy > w.top - 0.2 * h && cy < w.bottom + 0.2 * h
}

/// For each glyph, the widest gap before it that still keeps it in the
/// same word. Glyphs are cut into runs on one line (content order); a run
/// of 12+ glyphs with fewer than one space per 25 is a line whose text
/// layer has no spaces, and its word gap sits between the tight
/// letter-to-letter gaps (the typical gap) and the wider word gaps.
fn gap_limits(glyphs: &[Glyph]) -> Vec<f32> {
    let mut limits: Vec<f32> = glyphs.iter().map(|g| 0.25 * g.size.max(1.0)).collect();
    let mut start = 0;
    while start < glyphs.len() {
        let mut end = start + 1;
        while end < glyphs.len() {
            let (p, g) = (&glyphs[end - 1], &glyphs[end]);
            let h = (g.bottom - g.top).max(p.bottom - p.top).max(1.0);
            let cy = (g.top + g.bottom) / 2.0;
            let on_line = cy > p.top - 0.2 * h && cy < p.bottom + 0.2 * h && g.x0 > p.x0 - 0.5 * h;
            if !on_line {
                break;
            }
            end += 1;
        }
        let run = &glyphs[start..end];
        let spaces = run.iter().skip(1).filter(|g| g.space_before).count();
        if run.len() >= 12 && spaces * 25 < run.len() {
            let mut gaps: Vec<f32> = run
                .windows(2)
                .map(|w| (w[1].x0 - w[0].x1) / w[1].size.max(1.0))
                .collect();
            gaps.sort_by(f32::total_cmp);
            let typical = gaps[gaps.len() / 2];
            let limit = (typical + 0.1).clamp(0.08, 0.25);
            for (l, g) in limits[start..end].iter_mut().zip(run) {
                *l = limit * g.size.max(1.0);
            }
        }
        start = end;
    }
    limits
}

/// Vertical gutters (x ranges) that few text rows cross, with text on
/// both sides: the gaps between columns. Coverage is counted in rows, not
/// words, so a short last column (a dozen rows) still stands out from the
/// gutter beside it, which only a title or a running header crosses.
pub(crate) fn find_gutters(rows: &[Vec<Word>]) -> Vec<(f32, f32)> {
    let words: Vec<&Word> = rows.iter().flatten().collect();
    if words.len() < 40 || rows.len() < 8 {
        return Vec::new();
    }
    let minx = words.iter().map(|w| w.x0).fold(f32::MAX, f32::min).max(0.0);
    let maxx = words.iter().map(|w| w.x1).fold(f32::MIN, f32::max);
    let width = maxx - minx;
    // Hostile coordinates must not turn into a huge allocation; no real
    // page is wider than PDF's 200-inch limit.
    if !(100.0..=14_400.0).contains(&width) {
        return Vec::new();
    }
    let bins = width.ceil() as usize + 1;
    let mut cover = vec![0u32; bins];
    let mut row_cover = vec![false; bins];
    for row in rows {
        row_cover.iter_mut().for_each(|b| *b = false);
        for w in row {
            let a = ((w.x0 - minx).max(0.0) as usize).min(bins - 1);
            let b = ((w.x1 - minx).max(0.0) as usize).min(bins - 1);
            row_cover[a.min(b)..=b.max(a)].iter_mut().for_each(|c| *c = true);
        }
        for (c, hit) in cover.iter_mut().zip(&row_cover) {
            *c += u32::from(*hit);
        }
    }
    let allowed = (rows.len() as f32 * 0.1).max(2.0) as u32;
    let body = median(words.iter().map(|w| w.size)).max(4.0);
    let lo = (width * 0.2) as usize;
    let hi = (width * 0.8) as usize;
    let mut gutters = Vec::new();
    let mut i = lo;
    while i < hi {
        if cover[i] > allowed {
            i += 1;
            continue;
        }
        let start = i;
        while i < bins && cover[i] <= allowed {
            i += 1;
        }
        // Inside a sparse stretch (which may run into a very short last
        // column), the gutter is its emptiest part, give or take a page
        // number or header crossing it.
        let least = cover[start..i].iter().copied().min().unwrap_or(0) + (rows.len() as f32 * 0.05).max(2.0) as u32;
        let mut j = start;
        while j < i {
            if cover[j] > least {
                j += 1;
                continue;
            }
            let s0 = j;
            while j < i && cover[j] <= least {
                j += 1;
            }
            let (g0, g1) = (minx + s0 as f32, minx + j as f32);
            let mid = (g0 + g1) / 2.0;
            if g1 - g0 >= 0.6 * body && mid > minx + width * 0.2 && mid < minx + width * 0.8 {
                let left = words.iter().filter(|w| w.x1 <= g0).count();
                let right = words.iter().filter(|w| w.x0 >= g1).count();
                let n = words.len();
                if left * 20 >= n && right * 20 >= n && !numbers_beyond(rows, (g0, g1)) {
                    gutters.push((g0, g1));
                }
            }
        }
    }
    gutters
}

/// The lane between contents entries and their page numbers, or between a
/// table's text cells and its figures, is not a gutter: on most rows with
/// text on both sides of it, the first word past it is a bare number. The
/// first word of a column line past a real gutter is a word.
fn numbers_beyond(rows: &[Vec<Word>], (g0, g1): (f32, f32)) -> bool {
    let (mut two_sided, mut numbered) = (0usize, 0usize);
    for row in rows {
        if !row.iter().any(|w| w.x1 <= g0) {
            continue;
        }
        let first = row.iter().filter(|w| w.x0 >= g1).min_by(|a, b| a.x0.total_cmp(&b.x0));
        if let Some(w) = first {
            two_sided += 1;
            numbered += usize::from(bare_number(&w.text));
        }
    }
    two_sided >= 3 && numbered * 2 > two_sided
}

/// A page number as printed: digits, or a lower-case roman numeral.
fn bare_number(t: &str) -> bool {
    let n = t.chars().count();
    (1..=4).contains(&n) && t.chars().all(|c| c.is_ascii_digit())
        || (1..=6).contains(&n) && t.chars().all(|c| matches!(c, 'i' | 'v' | 'x' | 'l'))
}

/// The page's gutters, and the rows they were found in. When the whole
/// page shows none, a block that spans the columns may be hiding them — the
/// title and a grid of authors over a two-column first page, a wide figure
/// or table: then the gutter is looked for in the lower (or upper) part of
/// the page alone, and kept only when prose sits on both sides of it there
/// (lines filling most of each side, on most rows), so the empty lane of a
/// table or between contents entries and their page numbers is not taken
/// for one. Outside that part, only rows that look like two column lines
/// are split (see `two_lines`); the rest span, so a wide table keeps its
/// rows.
fn page_gutters(rows: &[Vec<Word>]) -> (Vec<(f32, f32)>, std::ops::Range<usize>) {
    let whole = find_gutters(rows);
    if rows.len() < 16 {
        // On a short page an empty lane is not yet a gutter: a page of
        // contents entries and their page numbers, or a table alone on its
        // page, has one too. Prose fills the width of at least one side,
        // and a column is not a sliver of page numbers.
        if let [one] = whole[..] {
            let (_, left, right) = sides_filled(rows, one);
            let (minx, maxx) = text_extent(rows);
            let wide = |w: f32| w >= 0.3 * (maxx - minx);
            if !(left && wide(one.0 - minx) || right && wide(maxx - one.1)) {
                return (Vec::new(), 0..rows.len());
            }
        }
        return (whole, 0..rows.len());
    }
    if !whole.is_empty() {
        return (whole, 0..rows.len());
    }
    // The first cut past the spanning block wins: sixteenths of the page,
    // up to half of it.
    let n = rows.len();
    for cut in (1..=8).map(|k| k * n / 16) {
        for part in [cut..n, 0..n - cut] {
            let g = find_gutters(&rows[part.clone()]);
            if let [one] = g[..] {
                if prose_both_sides(&rows[part.clone()], one) {
                    return (g, part);
                }
            }
        }
    }
    (Vec::new(), 0..n)
}

/// A row of table cells: on one side of the gutter, words stand further
/// apart than word spaces (more than twice their size) — lines of prose in
/// a column never do.
fn cells_apart(row: &[Word], (g0, g1): (f32, f32)) -> bool {
    let mut ws: Vec<&Word> = row.iter().collect();
    ws.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    ws.windows(2).any(|p| {
        let gap = p[1].x0 - p[0].x1;
        // The gutter itself is not a gap between cells.
        let across_gutter = p[0].x1 <= g0 + 1.0 && p[1].x0 >= g1 - 1.0;
        !across_gutter && gap > 2.0 * p[0].size.max(p[1].size).max(1.0)
    })
}

/// The width of a row's text left of `g0` and right of `g1`.
fn side_widths(row: &[Word], (g0, g1): (f32, f32)) -> (Option<f32>, Option<f32>) {
    let side = |keep: &dyn Fn(&Word) -> bool| {
        let ws: Vec<&Word> = row.iter().filter(|w| keep(w)).collect();
        let x0 = ws.iter().map(|w| w.x0).fold(f32::MAX, f32::min);
        let x1 = ws.iter().map(|w| w.x1).fold(f32::MIN, f32::max);
        (!ws.is_empty()).then_some(x1 - x0)
    };
    (side(&|w: &Word| w.x1 <= g0), side(&|w: &Word| w.x0 >= g1))
}

fn text_extent(rows: &[Vec<Word>]) -> (f32, f32) {
    let words = rows.iter().flatten();
    let minx = words.clone().map(|w| w.x0).fold(f32::MAX, f32::min);
    let maxx = words.map(|w| w.x1).fold(f32::MIN, f32::max);
    (minx, maxx)
}

/// Each side of the gutter has text on a third of the rows or more, and on
/// each side the typical row fills three quarters of that side's width
/// (prose lines run to the column's edge; table cells, contents entries and
/// their page numbers do not).
fn prose_both_sides(rows: &[Vec<Word>], gutter: (f32, f32)) -> bool {
    let (both, left, right) = sides_filled(rows, gutter);
    both && left && right
}

/// Whether each side of the gutter has text on a third of the rows or
/// more, and whether the typical row fills three quarters of the left /
/// right side's width. Not "both sides on most rows": two columns whose
/// baselines do not line up, or a list of contents entries beside a column
/// of prose at a tighter line spacing, share few rows.
fn sides_filled(rows: &[Vec<Word>], gutter: (f32, f32)) -> (bool, bool, bool) {
    let (minx, maxx) = text_extent(rows);
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for row in rows {
        let (l, r) = side_widths(row, gutter);
        left.extend(l);
        right.extend(r);
    }
    let n = rows.len();
    let both = left.len() * 3 >= n && right.len() * 3 >= n;
    let filled = |widths: Vec<f32>, side: f32| median(widths.into_iter()) >= 0.75 * side;
    (both, filled(left, gutter.0 - minx), filled(right, maxx - gutter.1))
}

/// A row outside the part of the page where the gutter was found is split
/// into columns only when it is two column lines side by side (or one
/// column line that fills its column); a row of table cells is not.
fn two_lines(row: &[Word], gutter: (f32, f32), (minx, maxx): (f32, f32)) -> bool {
    let (l, r) = side_widths(row, gutter);
    let full_left = l.is_some_and(|w| w >= 0.75 * (gutter.0 - minx));
    let full_right = r.is_some_and(|w| w >= 0.75 * (maxx - gutter.1));
    (full_left || l.is_none()) && (full_right || r.is_none()) && (full_left || full_right)
}

fn median(it: impl Iterator<Item = f32>) -> f32 {
    let mut v: Vec<f32> = it.collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Words → lines in reading order.
pub(crate) fn reading_order(words: Vec<Word>) -> Vec<Line> {
    // Baselines: cluster words by vertical overlap, top to bottom.
    let mut sorted = words;
    sorted.sort_by(|a, b| a.cy().total_cmp(&b.cy()));
    let mut rows: Vec<Vec<Word>> = Vec::new();
    for w in sorted {
        let joined = rows.last_mut().and_then(|row| {
            let top = row.iter().map(|x| x.top).fold(f32::MAX, f32::min);
            let bottom = row.iter().map(|x| x.bottom).fold(f32::MIN, f32::max);
            let overlap = bottom.min(w.bottom) - top.max(w.top);
            let h = (bottom - top).min(w.height());
            (overlap > 0.5 * h).then_some(row)
        });
        match joined {
            Some(row) => row.push(w),
            None => rows.push(vec![w]),
        }
    }

    let (gutters, found_in) = page_gutters(&rows);
    let extent = text_extent(&rows[found_in.clone()]);
    let all = rows.iter().flatten();
    let text_x0 = all.clone().map(|w| w.x0).fold(f32::MAX, f32::min);
    let text_x1 = all.map(|w| w.x1).fold(f32::MIN, f32::max);
    let column_of = |w: &Word| -> Option<usize> {
        let mut col = 0;
        for (g0, g1) in &gutters {
            let mid = (g0 + g1) / 2.0;
            // Touching the middle half of the gutter: the word belongs to
            // neither column (a centred title, a wide equation).
            let q = (g1 - g0) / 4.0;
            if w.x0 < mid + q && w.x1 > mid - q {
                return None;
            }
            if w.x0 >= mid {
                col += 1;
            }
        }
        Some(col)
    };

    // Split each row at the gutters unless one of its words spans one, or
    // it continues a spanning block as a row of short centred pieces (the
    // author names side by side under a title).
    let mut spanning: Vec<bool> = rows
        .iter()
        .enumerate()
        .map(|(ri, row)| {
            let outside = !found_in.contains(&ri) && gutters.len() == 1 && !two_lines(row, gutters[0], extent);
            outside || row.iter().any(|w| column_of(w).is_none())
        })
        .collect();
    // A wide table: some of its rows cross the gutter, and the rows next to
    // them whose cells stand apart (its empty lane lines up with the
    // gutter) are rows of the same table, not two column lines. Next to
    // means at a table's row spacing: a page number centred under the
    // columns crosses the gutter too, but it stands apart from the last
    // lines, and they are not a table for it.
    if let [gutter] = gutters[..] {
        let close = |a: &[Word], b: &[Word]| {
            let bottom = a.iter().map(|w| w.bottom).fold(f32::MIN, f32::max);
            let top = b.iter().map(|w| w.top).fold(f32::MAX, f32::min);
            let h = a.iter().chain(b).map(Word::height).fold(0.0, f32::max);
            top - bottom <= 1.5 * h
        };
        for ri in 1..rows.len() {
            if spanning[ri - 1] && !spanning[ri] && close(&rows[ri - 1], &rows[ri]) && cells_apart(&rows[ri], gutter) {
                spanning[ri] = true;
            }
        }
        for ri in (0..rows.len().saturating_sub(1)).rev() {
            if spanning[ri + 1] && !spanning[ri] && close(&rows[ri], &rows[ri + 1]) && cells_apart(&rows[ri], gutter) {
                spanning[ri] = true;
            }
        }
    }
    let mut lines = Vec::new();
    let mut prev_spanning: Option<f32> = None;
    for (ri, row) in rows.into_iter().enumerate() {
        let spans = spanning[ri];
        let top = row.iter().map(|w| w.top).fold(f32::MAX, f32::min);
        let h = row.iter().map(Word::height).fold(0.0, f32::max);
        let continues_title = prev_spanning.is_some_and(|bottom| top - bottom < 2.5 * h) && {
            let cols: std::collections::HashSet<Option<usize>> = row.iter().map(column_of).collect();
            let narrow = (text_x1 - text_x0) * 0.3;
            cols.len() > 1
                && cols.iter().all(|c| {
                    let ws: Vec<&Word> = row.iter().filter(|w| column_of(w) == *c).collect();
                    let x0 = ws.iter().map(|w| w.x0).fold(f32::MAX, f32::min);
                    let x1 = ws.iter().map(|w| w.x1).fold(f32::MIN, f32::max);
                    x1 - x0 < narrow && x0 > text_x0 + h
                })
        };
        if gutters.is_empty() || spans || continues_title {
            let col = if gutters.is_empty() { Some(0) } else { None };
            prev_spanning = (!gutters.is_empty()).then(|| row.iter().map(|w| w.bottom).fold(f32::MIN, f32::max));
            lines.push(Line::from_words(row, col));
            continue;
        }
        prev_spanning = None;
        let mut per_col: Vec<Vec<Word>> = vec![Vec::new(); gutters.len() + 1];
        for w in row {
            let c = column_of(&w).unwrap_or(0);
            per_col[c].push(w);
        }
        for (c, ws) in per_col.into_iter().enumerate() {
            if !ws.is_empty() {
                lines.push(Line::from_words(ws, Some(c)));
            }
        }
    }

    // Bands: spanning lines stand alone; between them, columns are read in
    // full one after the other.
    lines.sort_by(|a, b| a.top.total_cmp(&b.top));
    let mut out = Vec::with_capacity(lines.len());
    let mut band: Vec<Line> = Vec::new();
    let flush = |band: &mut Vec<Line>, out: &mut Vec<Line>| {
        band.sort_by(|a, b| a.column.cmp(&b.column).then(a.top.total_cmp(&b.top)));
        out.append(band);
    };
    for line in lines {
        if line.column.is_none() {
            flush(&mut band, &mut out);
            out.push(line);
        } else {
            band.push(line);
        }
    }
    flush(&mut band, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, x0: f32, top: f32) -> Word {
        Word {
            text: text.into(),
            x0,
            x1: x0 + 6.0 * text.len() as f32,
            top,
            bottom: top + 10.0,
            size: 10.0,
            bold: false,
        }
    }

    #[test]
    fn two_columns_are_read_one_after_the_other() {
        let mut words = vec![word("Title", 250.0, 20.0), word("spanning", 290.0, 20.0)];
        for i in 0..30 {
            let y = 50.0 + 12.0 * i as f32;
            words.push(word("left", 50.0, y));
            words.push(word(&format!("L{i}"), 80.0, y));
            words.push(word("right", 320.0, y));
            words.push(word(&format!("R{i}"), 356.0, y));
        }
        let lines = reading_order(words);
        let texts: Vec<String> = lines.iter().map(Line::text).collect();
        assert_eq!(texts[0], "Title spanning");
        assert_eq!(texts[1], "left L0");
        assert_eq!(texts[30], "left L29");
        assert_eq!(texts[31], "right R0");
    }

    #[test]
    fn a_grid_of_authors_over_two_columns_does_not_hide_the_gutter() {
        let mut words = vec![word("Title", 250.0, 20.0), word("spanning", 290.0, 20.0)];
        // Twelve rows of three author names side by side, the middle one
        // across the gutter.
        for i in 0..12 {
            let y = 40.0 + 12.0 * i as f32;
            words.push(word("Author", 60.0, y));
            words.push(word("Middleperson", 206.0, y));
            words.push(word("Another", 400.0, y));
        }
        for i in 0..30 {
            let y = 200.0 + 12.0 * i as f32;
            let mut x = 50.0;
            for t in ["left", "column", "text", &format!("L{i}")] {
                words.push(word(t, x, y));
                x += 6.0 * t.len() as f32 + 4.0;
            }
            let mut x = 320.0;
            for t in ["right", "column", "text", &format!("R{i}")] {
                words.push(word(t, x, y));
                x += 6.0 * t.len() as f32 + 4.0;
            }
        }
        let texts: Vec<String> = reading_order(words).iter().map(Line::text).collect();
        let l0 = texts.iter().position(|t| t == "left column text L0").expect("left");
        let l29 = texts
            .iter()
            .position(|t| t == "left column text L29")
            .expect("left end");
        let r0 = texts.iter().position(|t| t == "right column text R0").expect("right");
        assert!(l0 < l29 && l29 < r0, "{texts:?}");
        assert_eq!(texts[0], "Title spanning");
    }

    #[test]
    fn a_table_with_an_empty_lane_is_not_two_columns() {
        let mut words = Vec::new();
        for i in 0..12 {
            let y = 20.0 + 12.0 * i as f32;
            let mut x = 50.0;
            for t in [
                "Spanning", "prose", "that", "runs", "over", "the", "whole", "width", "of", "the", "page",
            ]
            .iter()
            .cycle()
            .take(14)
            {
                words.push(word(t, x, y));
                x += 6.0 * t.len() as f32 + 4.0;
            }
        }
        // Short cells far apart below: a table, not two columns of prose.
        for i in 0..30 {
            let y = 200.0 + 12.0 * i as f32;
            words.push(word("ab", 50.0, y));
            words.push(word("cd", 200.0, y));
            words.push(word("12", 380.0, y));
            words.push(word("34", 500.0, y));
        }
        let rows: Vec<Vec<Word>> = {
            let mut by_y: Vec<(i32, Vec<Word>)> = Vec::new();
            for w in &words {
                match by_y.iter_mut().find(|(y, _)| *y == w.top as i32) {
                    Some((_, r)) => r.push(w.clone()),
                    None => by_y.push((w.top as i32, vec![w.clone()])),
                }
            }
            by_y.into_iter().map(|(_, r)| r).collect()
        };
        assert_eq!(page_gutters(&rows).0, Vec::new());
        let lines = reading_order(words);
        assert!(lines.iter().all(|l| l.column == Some(0)), "split into columns");
    }

    #[test]
    fn one_column_stays_in_line_order() {
        let mut words = Vec::new();
        for i in 0..30 {
            let y = 50.0 + 12.0 * i as f32;
            // Ragged word positions, as in justified prose.
            let mut x = 50.0 + (i % 3) as f32 * 7.0;
            for t in ["one", "two", "three", "four", "five", "six", "seven"] {
                words.push(word(t, x, y));
                x += 6.0 * t.len() as f32 + 4.0 + (i % 5) as f32;
            }
        }
        let lines = reading_order(words);
        assert_eq!(lines.len(), 30);
        assert!(lines.iter().all(|l| l.words.len() == 7));
    }

    #[test]
    fn wide_gaps_make_cells() {
        let line = Line::from_words(
            vec![
                word("Name", 10.0, 0.0),
                word("Pages/s", 100.0, 0.0),
                word("x", 130.0, 0.0),
            ],
            Some(0),
        );
        let cells: Vec<String> = line.cells(15.0).into_iter().map(|c| c.text).collect();
        assert_eq!(cells, vec!["Name", "Pages/s x"]);
    }
}
