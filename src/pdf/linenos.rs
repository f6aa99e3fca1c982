//! Margin line numbers: the running count a manuscript under review
//! prints beside every line (LaTeX's `lineno`, journals' "draft" and
//! "review" modes). Left in, each number becomes the first word of its
//! line, so no heading starts with its own numbering ("26 1. INTRODUCTION")
//! and the number column looks like a table's first column.
//!
//! Owns the one decision: which digit-only words on a page are such a
//! count. Must not: drop anything a reader would want — a number in the
//! text, a table's row numbers, a page number. Hence the evidence asked
//! for is strict: at least [`MIN_RUN`] digit-only words sharing one right
//! edge, whose values rise down the page by one constant step (1, 2, 5 or
//! 10) for nearly every pair, spread over at least a third of the page's
//! height, each standing apart from the rest of its line, the whole column
//! in a margin (left of every line of text on the page, or right of
//! them). Numbers in the gutter of a two-column page are therefore left
//! in: the left column's text lies beside them.

use super::layout::Word;

/// Numbers a margin column needs: a page of line numbers has dozens, a
/// short numbered list or a table a handful.
const MIN_RUN: usize = 10;

/// Remove a page's margin line numbers from `words` (its words in content
/// order); anything else is returned as it was.
pub(crate) fn drop_line_numbers(words: Vec<Word>, page_height: f32) -> Vec<Word> {
    let numbers: Vec<(usize, u32)> = words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let t = w.text.as_str();
            (t.len() <= 4 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .then(|| t.parse().ok())
                .flatten()
                .map(|v| (i, v))
        })
        .collect();
    if numbers.len() < MIN_RUN {
        return words;
    }
    // Columns of numbers by right edge (lineno right-aligns them).
    let mut columns: Vec<(f32, Vec<(usize, u32)>)> = Vec::new();
    for &(i, v) in &numbers {
        let x1 = words[i].x1;
        match columns.iter_mut().find(|(x, _)| (x - x1).abs() <= 2.0) {
            Some((_, c)) => c.push((i, v)),
            None => columns.push((x1, vec![(i, v)])),
        }
    }
    let mut drop = vec![false; words.len()];
    for (_, mut col) in columns {
        if col.len() < MIN_RUN {
            continue;
        }
        col.sort_by(|a, b| words[a.0].top.total_cmp(&words[b.0].top));
        let span = words[col[col.len() - 1].0].bottom - words[col[0].0].top;
        if span < page_height / 3.0 {
            continue;
        }
        let diffs: Vec<i64> = col.windows(2).map(|p| p[1].1 as i64 - p[0].1 as i64).collect();
        let Some(step) = [1i64, 2, 5, 10]
            .into_iter()
            .max_by_key(|s| diffs.iter().filter(|d| *d == s).count())
        else {
            continue;
        };
        let steady = diffs.iter().filter(|d| **d == step).count();
        if steady * 10 < diffs.len() * 9 {
            continue;
        }
        // Each number stands apart from the rest of its line.
        let apart = col.iter().filter(|(i, _)| stands_apart(&words, *i)).count();
        if apart * 10 < col.len() * 9 {
            continue;
        }
        // And the column sits in a margin, outside every line of text on
        // the page: a table's row numbers (or a listing's) are inside the
        // text block, where the prose above or below them begins.
        let text = words.iter().filter(|w| !w.text.bytes().all(|b| b.is_ascii_digit()));
        let (left, right) = text.fold((f32::MAX, f32::MIN), |(l, r), w| (l.min(w.x0), r.max(w.x1)));
        let x0 = col.iter().map(|(i, _)| words[*i].x0).fold(f32::MAX, f32::min);
        let x1 = col.iter().map(|(i, _)| words[*i].x1).fold(f32::MIN, f32::max);
        if !(x1 <= left - 2.0 || x0 >= right + 2.0) {
            continue;
        }
        for (i, _) in col {
            drop[i] = true;
        }
    }
    words
        .into_iter()
        .zip(drop)
        .filter_map(|(w, d)| (!d).then_some(w))
        .collect()
}

/// Nothing else on the number's line within a font size of it, on either
/// side: a number inside prose has a word a space away on one side at
/// least, even at a line's start or end.
fn stands_apart(words: &[Word], i: usize) -> bool {
    let n = &words[i];
    let size = n.size.max(1.0);
    words
        .iter()
        .enumerate()
        .all(|(j, w)| j == i || (w.cy() - n.cy()).abs() >= 0.5 * size || w.x0 >= n.x1 + size || w.x1 <= n.x0 - size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, x0: f32, top: f32) -> Word {
        Word {
            text: text.into(),
            x0,
            x1: x0 + 5.0 * text.len() as f32,
            top,
            bottom: top + 10.0,
            size: 10.0,
            bold: false,
        }
    }

    /// A page of `n` lines 12 pt apart, each "<number> body text" with the
    /// number right-aligned at x = 60 and the text from x = `text_x`.
    fn page(n: usize, first: u32, step: u32, text_x: f32) -> Vec<Word> {
        let mut out = Vec::new();
        for k in 0..n {
            let top = 72.0 + 12.0 * k as f32;
            let num = (first + step * k as u32).to_string();
            let x0 = 60.0 - 5.0 * num.len() as f32;
            out.push(word(&num, x0, top));
            out.push(word("otters", text_x, top));
            out.push(word("swim", text_x + 40.0, top));
        }
        out
    }

    fn texts(words: &[Word]) -> Vec<&str> {
        words.iter().map(|w| w.text.as_str()).collect()
    }

    #[test]
    fn a_margin_count_down_the_page_is_dropped() {
        let words = page(40, 101, 1, 80.0);
        let kept = drop_line_numbers(words, 792.0);
        assert_eq!(kept.len(), 80);
        assert!(texts(&kept).iter().all(|t| *t == "otters" || *t == "swim"));
        // Every fifth line numbered, as `\modulolinenumbers[5]` does.
        let kept = drop_line_numbers(page(30, 5, 5, 80.0), 792.0);
        assert_eq!(kept.len(), 60);
    }

    #[test]
    fn numbers_that_are_not_a_steady_margin_count_stay() {
        // Too few (a short numbered list).
        assert_eq!(drop_line_numbers(page(8, 1, 1, 80.0), 792.0).len(), 24);
        // Touching the text: numbers that begin their line's sentence.
        assert_eq!(drop_line_numbers(page(40, 1, 1, 62.0), 792.0).len(), 120);
        // Ending their line's sentence, at a shared right edge.
        let mut words = page(40, 1, 1, 80.0);
        for w in words.iter_mut().filter(|w| w.text == "otters") {
            w.x0 = 20.0;
            w.x1 = 52.0;
        }
        assert_eq!(drop_line_numbers(words, 792.0).len(), 120);
        // Not rising steadily (a column of measurements).
        let mut words = page(40, 1, 1, 80.0);
        for (k, w) in words.iter_mut().filter(|w| w.text.parse::<u32>().is_ok()).enumerate() {
            w.text = ((k * 7919) % 997).to_string();
            w.x0 = w.x1 - 5.0 * w.text.len() as f32;
        }
        assert_eq!(drop_line_numbers(words, 792.0).len(), 120);
        // A steady count over a few lines of a tall page (a table's rows).
        assert_eq!(drop_line_numbers(page(12, 1, 1, 80.0), 1500.0).len(), 36);
        // A table's row numbers, inside the text block: a line of prose
        // above the table begins left of them.
        let mut words = page(40, 101, 1, 80.0);
        words.push(word("Problems", 30.0, 50.0));
        words.push(word("below", 80.0, 50.0));
        assert_eq!(drop_line_numbers(words, 792.0).len(), 122);
    }
}
