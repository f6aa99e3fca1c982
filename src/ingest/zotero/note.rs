//! Zotero's notes are HTML; the knowledge base stores text. This turns a
//! note into plain text: tags dropped (with everything inside `script`,
//! `style` and comments), blocks as paragraphs (one empty line between, as
//! Markdown reads them), list items as `- `, entities decoded once.
//!
//! Must not: interpret anything — the output is text, and whatever shows
//! it later goes through the one safe renderer like any other text.

use crate::ingest::scholarly::{decode_entities, Markup, Piece};

/// Tags whose end is a line break (the rest are inline and vanish).
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ul",
    "ol",
    "blockquote",
    "pre",
    "tr",
    "table",
    "hr",
];

/// Tags whose content is not text for a reader.
const DROPPED: &[&str] = &["script", "style", "head", "title"];

/// A note's HTML as plain text.
pub(crate) fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut pieces = Markup::new(html);
    while let Some(piece) = pieces.next() {
        let (name, closing) = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Tag { name, closing } => (name, closing),
        };
        if !closing && DROPPED.contains(&name.as_str()) {
            pieces.skip_past_end(&name);
        } else if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
            if name == "li" && !closing {
                out.push_str("- ");
            }
        }
    }
    tidy(&decode_entities(&out))
}

/// Lines trimmed and their inner spaces squashed, control characters
/// dropped, at most one empty line in a row, none at either end.
fn tidy(s: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for line in s.lines() {
        let clean: String = line
            .chars()
            .map(|c| if c == '\t' || c == '\u{a0}' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .collect();
        let squashed = clean.split_whitespace().collect::<Vec<_>>().join(" ");
        if squashed.is_empty() && lines.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        lines.push(squashed);
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zotero_note_reads_as_text() {
        let html = r#"<div data-schema-version="8"><h1>Reading notes</h1>
<p>The <strong>gutter</strong> detector&nbsp;works &amp; is fast.</p>
<ul><li>first point</li><li>second &lt;point&gt;</li></ul>
<p><span class="highlight" data-annotation="%7B%22x%22%3A1%7D">“quoted words”</span></p></div>"#;
        assert_eq!(
            html_to_text(html),
            "Reading notes\n\nThe gutter detector works & is fast.\n\n- first point\n\n- second <point>\n\n“quoted words”"
        );
    }

    #[test]
    fn scripts_styles_and_comments_leave_no_text() {
        let html = "<p>kept</p><script>alert('x')</script><STYLE>p{}</STYLE><!-- hidden --><p>also kept</p>";
        assert_eq!(html_to_text(html), "kept\n\nalso kept");
        // An unclosed script swallows the rest rather than showing code.
        assert_eq!(html_to_text("<p>a</p><script>evil("), "a");
        // A stray `<` is text; an entity is decoded once only.
        assert_eq!(html_to_text("1 < 2 &amp;lt; 3"), "1 < 2 &lt; 3");
    }
}
