//! Hunks: an agent's change cut into pieces a human accepts one by one.
//!
//! Owns: building hunks from `similar`'s grouped ops (the counterpart of
//! `SequenceMatcher.get_grouped_opcodes`) and applying any subset of them.
//! Each group carries exact line ranges on both sides, so applying is
//! arithmetic: the untouched regions plus each hunk taken from whichever
//! side the human chose. What is shown and what is applied come from the
//! same ranges and cannot disagree.
//! Must not: parse a text diff, or classify a hunk by its line counts (a
//! group has context on both sides, so neither side is ever empty).

use serde::Serialize;
use similar::{DiffTag, TextDiff};

/// Context lines around each change.
pub const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HunkKind {
    /// Only insertions.
    Add,
    /// Only deletions.
    Remove,
    /// Anything else.
    Replace,
}

/// One reviewable change with its context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hunk {
    pub index: usize,
    pub kind: HunkKind,
    /// First line (0-based) of the hunk in the old text, and its length.
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    /// The hunk's lines, without line endings.
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// `[start, end)` offsets into `old_lines` / `new_lines` of the lines
    /// that actually change (the rest is context).
    pub old_spans: Vec<[usize; 2]>,
    pub new_spans: Vec<[usize; 2]>,
}

/// Lines with their endings, as the diff and the rebuild see them.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn strip(line: &str) -> String {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
        .to_string()
}

/// The hunks turning `old` into `new`; empty when they are equal.
pub fn compute(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(old, new);
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let mut out = Vec::new();
    for group in diff.grouped_ops(CONTEXT) {
        let changed: Vec<_> = group.iter().filter(|op| op.tag() != DiffTag::Equal).collect();
        if changed.is_empty() {
            continue;
        }
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let kind = if changed.iter().all(|op| op.tag() == DiffTag::Insert) {
            HunkKind::Add
        } else if changed.iter().all(|op| op.tag() == DiffTag::Delete) {
            HunkKind::Remove
        } else {
            HunkKind::Replace
        };
        let spans = |side: fn(&similar::DiffOp) -> std::ops::Range<usize>, base: usize| -> Vec<[usize; 2]> {
            changed
                .iter()
                .map(|op| side(op))
                .filter(|r| !r.is_empty())
                .map(|r| [r.start - base, r.end - base])
                .collect()
        };
        out.push(Hunk {
            index: out.len(),
            kind,
            old_start: old_range.start,
            old_len: old_range.len(),
            new_start: new_range.start,
            new_len: new_range.len(),
            old_lines: old_lines[old_range.clone()].iter().map(|l| strip(l)).collect(),
            new_lines: new_lines[new_range.clone()].iter().map(|l| strip(l)).collect(),
            old_spans: spans(|op| op.old_range(), old_range.start),
            new_spans: spans(|op| op.new_range(), new_range.start),
        });
    }
    out
}

/// The hunks that fill an empty file with `new`, one per part: a part
/// starts at every line opening a Markdown heading of level one or two
/// (outside code fences), so a whole new document — a research report —
/// can be taken part by part instead of all or nothing. Each is an `Add`
/// at line 0 of the empty file; [`apply`] joins the accepted ones in order.
pub fn sections(new: &str) -> Vec<Hunk> {
    let lines = split_lines(new);
    let mut starts = vec![0usize];
    let mut fence = false;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
        }
        let heading = t.starts_with("# ") || t.starts_with("## ");
        if i > 0 && heading && !fence && l.len() - t.len() <= 3 {
            starts.push(i);
        }
    }
    starts.push(lines.len());
    let mut out: Vec<Hunk> = Vec::new();
    for w in starts.windows(2) {
        let (a, b) = (w[0], w[1]);
        if a == b {
            continue;
        }
        out.push(Hunk {
            index: out.len(),
            kind: HunkKind::Add,
            old_start: 0,
            old_len: 0,
            new_start: a,
            new_len: b - a,
            old_lines: Vec::new(),
            new_lines: lines[a..b].iter().map(|l| strip(l)).collect(),
            old_spans: Vec::new(),
            new_spans: vec![[0, b - a]],
        });
    }
    out
}

/// Rebuild the file: `old` with each hunk whose index is in `accepted`
/// taken from `new`. `hunks` must have been computed from this pair.
pub fn apply(old: &str, new: &str, hunks: &[Hunk], accepted: &[usize]) -> String {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let mut out = String::with_capacity(old.len().max(new.len()));
    let mut cursor = 0;
    for h in hunks {
        out.extend(old_lines[cursor..h.old_start].iter().copied());
        if accepted.contains(&h.index) {
            out.extend(new_lines[h.new_start..h.new_start + h.new_len].iter().copied());
        } else {
            out.extend(old_lines[h.old_start..h.old_start + h.old_len].iter().copied());
        }
        cursor = h.old_start + h.old_len;
    }
    out.extend(old_lines[cursor..].iter().copied());
    out
}
