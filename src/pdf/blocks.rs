//! Markdown blocks: mending paragraphs that a column or page break (and
//! the footnotes, captions or floats that sit at it) cut mid-sentence, then
//! writing the blocks out with heading levels from numbering and size.

use std::collections::HashSet;

use super::flow::{ends_sentence, starts_lower};
use super::text;

#[derive(Debug)]
pub(crate) enum Block {
    Title(Vec<String>),
    /// Authors and affiliations: kept as lines.
    Front(Vec<String>),
    Heading {
        style: (i32, bool),
        depth: Option<usize>,
        lines: Vec<String>,
    },
    Para {
        lines: Vec<String>,
        size: f32,
    },
    Item(String, Vec<String>),
    Table(Vec<Vec<String>>),
}

/// The style key the abstract's label gets (not one a real line has).
pub(crate) const ABSTRACT_STYLE: (i32, bool) = (i32::MAX, true);

/// How many blocks (footnotes, captions, tables) may stand between the two
/// halves of a paragraph cut by a break.
const LOOKAHEAD: usize = 4;

/// A chapter's label on its own line ("Chapter 3", "Part II", "Appendix
/// A"), as book and report classes set it, and the chapter's title under
/// it (as large or larger) are one heading, "Chapter 3: Cox model", at the
/// label's level: two headings would leave an empty section named
/// "Chapter 3".
pub(crate) fn chapter_titles(blocks: Vec<Block>) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::with_capacity(blocks.len());
    for b in blocks {
        if let (
            Some(Block::Heading {
                lines: label,
                style: (label_size, _),
                ..
            }),
            Block::Heading {
                lines: title,
                style: (title_size, _),
                ..
            },
        ) = (out.last_mut(), &b)
        {
            // The title is set at least as large as its label; a smaller
            // heading under "Appendix A" is the appendix's first section,
            // and a second label ("Part II" / "Appendix A") is no title.
            let title = title.join(" ");
            let labelled = title.split_whitespace().next().is_some_and(chapter_word);
            if label.len() == 1 && is_chapter_label(&label[0]) && title_size >= label_size && !labelled {
                label[0] = format!("{}: {title}", label[0]);
                continue;
            }
        }
        out.push(b);
    }
    out
}

/// "Chapter 3", "CHAPTER 3", "Part II", "Appendix A": the word and a
/// number or a letter, nothing else.
fn is_chapter_label(t: &str) -> bool {
    let mut words = t.split_whitespace();
    let (Some(word), Some(n), None) = (words.next(), words.next(), words.next()) else {
        return false;
    };
    let numeral = n.chars().all(|c| c.is_ascii_digit())
        || n.chars().all(|c| matches!(c, 'I' | 'V' | 'X' | 'L'))
        || (n.len() == 1 && n.chars().all(|c| c.is_ascii_uppercase()));
    chapter_word(word) && numeral
}

/// The words that name a book's divisions.
fn chapter_word(w: &str) -> bool {
    ["chapter", "part", "appendix"].contains(&w.to_lowercase().as_str())
}

/// Join a paragraph (or list item) that stops mid-sentence with the next
/// paragraph of the same size that starts in lower case, across the
/// footnotes, captions and tables that a column or page break put between
/// them. Those stay where they were, after the mended paragraph.
pub(crate) fn mend_breaks(blocks: Vec<Block>) -> Vec<Block> {
    let mut slots: Vec<Option<Block>> = blocks.into_iter().map(Some).collect();
    let mut i = 0;
    while i < slots.len() {
        let (open, size) = match &slots[i] {
            Some(Block::Para { lines, size, .. }) => (lines.last().is_some_and(|l| !ends_sentence(l)), Some(*size)),
            Some(Block::Item(_, lines)) => (lines.last().is_some_and(|l| !ends_sentence(l)), None),
            _ => (false, None),
        };
        if !open {
            i += 1;
            continue;
        }
        let mut found = None;
        let end = slots.len().min(i + 1 + LOOKAHEAD);
        for (j, slot) in slots.iter().enumerate().take(end).skip(i + 1) {
            match slot {
                None | Some(Block::Table(_)) => continue,
                Some(Block::Para { lines, size: s, .. }) => {
                    let same = size.is_none_or(|z| (z - s).abs() <= 0.15 * z.max(1.0));
                    let lower = lines.first().is_some_and(|l| starts_lower(l));
                    if same && lower {
                        found = Some(j);
                        break;
                    }
                    if same {
                        break;
                    }
                }
                Some(_) => break,
            }
        }
        // Mended: look again from the same block, its new end may be
        // cut by the next break too.
        let Some(Block::Para { lines: tail, .. }) = found.and_then(|j| slots[j].take()) else {
            i += 1;
            continue;
        };
        if let Some(Block::Para { lines, .. } | Block::Item(_, lines)) = &mut slots[i] {
            lines.extend(tail);
        }
    }
    slots.into_iter().flatten().collect()
}

pub(crate) fn emit(blocks: &[Block], keep: &HashSet<String>) -> String {
    let has_title = blocks.iter().any(|b| matches!(b, Block::Title(_)));
    let base = if has_title { 2 } else { 1 };
    // Unnumbered headings: levels by size, biggest first; bold before
    // regular at a size.
    let mut styles: Vec<(i32, bool)> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading { style, .. } if *style != ABSTRACT_STYLE => Some(*style),
            _ => None,
        })
        .collect();
    styles.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    styles.dedup();
    let level = |style: &(i32, bool), depth: &Option<usize>| -> usize {
        let l = match depth {
            _ if *style == ABSTRACT_STYLE => base,
            Some(d) => base + d - 1,
            None => base + styles.iter().position(|x| x == style).unwrap_or(2),
        };
        l.min(3)
    };
    let join = |lines: &[String]| text::join_lines(lines.iter().map(String::as_str), keep);

    let mut out = String::new();
    let mut last_was_item = false;
    for b in blocks {
        let is_item = matches!(b, Block::Item(..));
        if !out.is_empty() {
            out.push_str(if is_item && last_was_item { "\n" } else { "\n\n" });
        }
        last_was_item = is_item;
        match b {
            Block::Title(lines) => {
                out.push_str("# ");
                out.push_str(&join(lines));
            }
            Block::Front(lines) => {
                let lines: Vec<String> = lines.iter().map(|l| escape_start(l)).collect();
                out.push_str(&lines.join("\n"));
            }
            Block::Heading { style, depth, lines } => {
                out.push_str(&"#".repeat(level(style, depth)));
                out.push(' ');
                out.push_str(&join(lines));
            }
            Block::Para { lines, .. } => out.push_str(&escape_start(&join(lines))),
            Block::Item(marker, lines) => {
                out.push_str(marker);
                out.push_str(&escape_start(&join(lines)));
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

/// Text from the PDF that would open a Markdown block at the start of a
/// line (`#include` as a heading, `> ` as a quote, `1999. ` as a list,
/// `---` as a rule, `<div` as HTML) gets a backslash, so it stays text.
pub(crate) fn escape_start(s: &str) -> String {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let second = chars.next();
    let escape = match first {
        '#' | '>' | '<' | '=' => true,
        '-' | '*' | '+' | '_' => second.is_none_or(|c| c == ' ' || c == first),
        '`' | '~' => s.starts_with("```") || s.starts_with("~~~"),
        d if d.is_ascii_digit() => {
            let digits = s.chars().take_while(char::is_ascii_digit).count();
            let rest = &s[digits..];
            if digits <= 9 && (rest.starts_with(". ") || rest.starts_with(") ") || rest == "." || rest == ")") {
                return format!("{}\\{rest}", &s[..digits]);
            }
            false
        }
        _ => false,
    };
    if escape {
        format!("\\{s}")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn para(s: &str, size: f32) -> Block {
        Block::Para {
            lines: vec![s.into()],
            size,
        }
    }

    #[test]
    fn text_that_looks_like_markup_stays_text() {
        assert_eq!(escape_start("#include <stdio.h>"), "\\#include <stdio.h>");
        assert_eq!(escape_start("> quoted"), "\\> quoted");
        assert_eq!(escape_start("- dash"), "\\- dash");
        assert_eq!(escape_start("---"), "\\---");
        assert_eq!(escape_start("1999. The year"), "1999\\. The year");
        assert_eq!(escape_start("3) third"), "3\\) third");
        assert_eq!(escape_start("```rust"), "\\```rust");
        assert_eq!(escape_start("*Corresponding author"), "*Corresponding author");
        assert_eq!(escape_start("3.5 GHz is fast"), "3.5 GHz is fast");
        assert_eq!(escape_start("Plain text"), "Plain text");
        assert_eq!(escape_start(""), "");
        let md = emit(&[para("#define N 10", 10.0)], &HashSet::new());
        assert_eq!(md, "\\#define N 10\n");
    }

    #[test]
    fn a_paragraph_cut_by_a_footnote_is_mended() {
        let blocks = vec![
            para("The method ran for over two", 10.0),
            para("1 A footnote.", 8.0),
            para("decades without failing.", 10.0),
            para("Next paragraph.", 10.0),
        ];
        let md = emit(&mend_breaks(blocks), &HashSet::new());
        assert_eq!(
            md,
            "The method ran for over two decades without failing.\n\n1 A footnote.\n\nNext paragraph.\n"
        );
    }

    #[test]
    fn a_chapter_label_and_its_title_are_one_heading() {
        let heading = |t: &str, size: i32| Block::Heading {
            style: (size, true),
            depth: None,
            lines: vec![t.to_string()],
        };
        let blocks = vec![
            heading("Chapter 3", 20),
            heading("Cox model", 24),
            para("The most common model.", 10.0),
            heading("Part II", 20),
            heading("Appendix A", 20),
            heading("Methods", 14),
        ];
        let md = emit(&chapter_titles(blocks), &HashSet::new());
        assert_eq!(
            md,
            "# Chapter 3: Cox model\n\nThe most common model.\n\n# Part II\n\n# Appendix A\n\n## Methods\n"
        );
    }
}
