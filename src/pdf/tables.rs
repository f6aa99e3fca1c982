//! Tables from evidence: a run of lines is a table only when it has
//! several rows split by wide gaps into cells whose edges line up from row
//! to row. One line with a wide gap, justified prose with loose spacing or
//! a line of one-word "cells" is not a table.

use super::flow::Ln;
use super::layout::Cell;

/// A table found in the line sequence: lines `start..end`, as rows of
/// cells laid out in a common set of columns.
#[derive(Debug)]
pub(crate) struct Table {
    pub start: usize,
    pub end: usize,
    pub rows: Vec<Vec<String>>,
}

/// Fewest rows that make a table.
const MIN_ROWS: usize = 3;

/// Tables in `lns`, in order, not overlapping.
pub(crate) fn find_tables(lns: &[Ln<'_>]) -> Vec<Table> {
    let cells: Vec<Vec<Cell>> = lns.iter().map(|l| l.line.cells(l.size.max(1.0))).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lns.len() {
        if cells[i].len() < 2 {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < lns.len()
            && cells[j].len() >= 2
            && lns[j].page == lns[i].page
            && lns[j].line.column == lns[j - 1].line.column
            && lns[j].line.top - lns[j - 1].line.bottom < 2.5 * lns[j].size.max(1.0)
            && lns[j].line.top > lns[j - 1].line.top
        {
            j += 1;
        }
        if j - i >= MIN_ROWS {
            if let Some(rows) = aligned(&cells[i..j], lns[i].size.max(1.0)) {
                out.push(Table { start: i, end: j, rows });
            }
        }
        i = j;
    }
    out
}

/// The rows laid out in columns when the cells line up; None when they
/// don't.
fn aligned(rows: &[Vec<Cell>], size: f32) -> Option<Vec<Vec<String>>> {
    let n = rows.len();
    let tol = 0.6 * size;
    let need = MIN_ROWS.max((n * 3).div_ceil(5));
    // How many rows have a cell edge (left, right or centre) near x.
    let support = |x: f32, edge: fn(&Cell) -> f32| {
        rows.iter()
            .filter(|r| r.iter().any(|c| (edge(c) - x).abs() <= tol))
            .count()
    };
    let left: fn(&Cell) -> f32 = |c| c.x0;
    let right: fn(&Cell) -> f32 = |c| c.x1;
    let centre: fn(&Cell) -> f32 = |c| (c.x0 + c.x1) / 2.0;
    let mut explained = 0usize;
    let mut inner = 0usize;
    for r in rows {
        for c in r.iter().skip(1) {
            inner += 1;
            if [left, right, centre].iter().any(|e| support(e(c), *e) >= need) {
                explained += 1;
            }
        }
    }
    if inner == 0 || explained * 4 < inner * 3 {
        return None;
    }
    // Prose in cells is not a table (a definition list, loose justified text).
    let words: usize = rows.iter().flatten().map(|c| c.text.split(' ').count()).sum();
    let count: usize = rows.iter().map(Vec::len).sum();
    if words > 6 * count {
        return None;
    }
    // Columns: those of the row with the most cells; other rows' cells go
    // to the column they overlap most (or whose centre is nearest).
    let template = rows.iter().max_by_key(|r| r.len())?;
    let width = template.len();
    let mut out = Vec::with_capacity(n);
    for r in rows {
        let mut row = vec![String::new(); width];
        for c in r {
            let best = (0..width)
                .min_by(|&a, &b| {
                    let d = |k: usize| {
                        let t = &template[k];
                        let overlap = c.x1.min(t.x1) - c.x0.max(t.x0);
                        let dist = ((c.x0 + c.x1) / 2.0 - (t.x0 + t.x1) / 2.0).abs();
                        if overlap > 0.0 {
                            -overlap
                        } else {
                            dist
                        }
                    };
                    d(a).total_cmp(&d(b))
                })
                .unwrap_or(0);
            let cell = &mut row[best];
            if !cell.is_empty() {
                cell.push(' ');
            }
            cell.push_str(&c.text);
        }
        out.push(row);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(text: &str, x0: f32) -> Cell {
        Cell {
            text: text.into(),
            x0,
            x1: x0 + 6.0 * text.len() as f32,
        }
    }

    #[test]
    fn aligned_cells_make_a_table_and_ragged_words_do_not() {
        let rows = vec![
            vec![cell("Converter", 10.0), cell("Pages/s", 100.0), cell("Memory", 160.0)],
            vec![cell("Baseline", 10.0), cell("1.2", 118.0), cell("900", 172.0)],
            vec![cell("Jarvis", 10.0), cell("45.0", 112.0), cell("60", 178.0)],
        ];
        let t = aligned(&rows, 10.0).expect("a table");
        assert_eq!(t[2], vec!["Jarvis", "45.0", "60"]);
        // One word per "cell", nothing lines up: prose with wide spaces.
        let ragged = vec![
            vec![cell("the", 10.0), cell("quick", 47.0), cell("fox", 120.0)],
            vec![cell("jumps", 10.0), cell("over", 75.0), cell("lazy", 150.0)],
            vec![cell("dog", 10.0), cell("and", 61.0), cell("cat", 99.0)],
        ];
        assert!(aligned(&ragged, 10.0).is_none());
    }
}
