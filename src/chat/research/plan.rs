//! The planner: one request with no tools that splits a research question
//! into sub-questions, and a tolerant reader of what came back.
//!
//! Owns: the planner's prompt and [`parse_plan`]. Must not: search, or
//! fail a run — a plan that cannot be read becomes the question itself.

/// The planner's request: the question and how to answer.
pub fn prompt(question: &str, max: usize) -> String {
    format!(
        "You plan a research report over the user's own library of notes and papers. Split the question below into at most {max} sub-questions that together cover it, each one answerable by searching the library on its own (name the things to look for; no pronouns pointing at the other sub-questions). Fewer is better when the question is narrow. Reply with the sub-questions only, one per line, numbered 1., 2., … — no preamble, no answers.\n\nQuestion: {question}"
    )
}

/// Longest sub-question kept (a model that wrote a paragraph per line).
const MAX_CHARS: usize = 300;

/// The sub-questions in `text`: a JSON array of strings, or one per line
/// with any list marker (`1.`, `2)`, `-`, `*`) taken off; headings,
/// blank lines, `<think>` blocks and a preamble ending in `:` skipped;
/// duplicates (ignoring case) dropped; at most `max`.
pub fn parse_plan(text: &str, max: usize) -> Vec<String> {
    let text = strip_think(text);
    let mut out: Vec<String> = Vec::new();
    let mut push = |q: &str| {
        let q = q.trim().trim_matches('"').trim();
        let q: String = q.chars().take(MAX_CHARS).collect();
        if q.chars().filter(|c| c.is_alphanumeric()).count() < 3 {
            return;
        }
        if !out.iter().any(|o| o.eq_ignore_ascii_case(&q)) && out.len() < max {
            out.push(q);
        }
    };
    if let Some(list) = json_list(&text) {
        for q in list {
            push(&q);
        }
        return out;
    }
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("```") || line.ends_with(':') {
            continue;
        }
        push(strip_marker(line));
    }
    out
}

/// The text without `<think>…</think>` blocks (a reasoning model writing
/// its thoughts into the answer).
fn strip_think(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("<think>") {
        out.push_str(&rest[..i]);
        match rest[i..].find("</think>") {
            Some(j) => rest = &rest[i + j + "</think>".len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// A JSON array of strings, alone or inside a code fence.
fn json_list(text: &str) -> Option<Vec<String>> {
    let start = text.find('[')?;
    let end = text.rfind(']')?;
    if end <= start
        || !text[..start]
            .trim()
            .trim_start_matches("```json")
            .trim_start_matches("```")
            .trim()
            .is_empty()
    {
        return None;
    }
    serde_json::from_str::<Vec<String>>(&text[start..=end]).ok()
}

/// `1. x`, `2) x`, `- x`, `* x`, `• x`, `**1.** x` → `x`.
fn strip_marker(line: &str) -> &str {
    let l = line.trim_start_matches(['*', '-', '•', ' ']);
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    let l = if digits > 0 {
        l[digits..].trim_start_matches(['.', ')', ':', '*', ' '])
    } else {
        l
    };
    l.trim_end_matches('*').trim()
}
