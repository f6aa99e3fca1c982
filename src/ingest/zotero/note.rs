//! Zotero's notes are HTML; the knowledge base stores text. This turns a
//! note into plain text: tags dropped (with everything inside `script`,
//! `style` and comments), blocks as paragraphs (one empty line between, as
//! Markdown reads them), list items as `- `, entities decoded once.
//!
//! Must not: interpret anything — the output is text, and whatever shows
//! it later goes through the one safe renderer like any other text.

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
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let after = &rest[lt + 1..];
        if let Some(comment) = after.strip_prefix("!--") {
            rest = comment.find("-->").map(|e| &comment[e + 3..]).unwrap_or("");
            continue;
        }
        let Some(gt) = after.find('>') else {
            // An unclosed `<` is text, not a tag.
            out.push('<');
            rest = after;
            continue;
        };
        let tag = &after[..gt];
        let closing = tag.starts_with('/');
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        rest = &after[gt + 1..];
        if !closing && DROPPED.contains(&name.as_str()) {
            // Skip to the matching end tag (or the end of the note).
            let end = format!("</{name}");
            rest = find_ci(rest, &end)
                .map(|i| {
                    let tail = &rest[i..];
                    tail.find('>').map(|g| &tail[g + 1..]).unwrap_or("")
                })
                .unwrap_or("");
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
            if name == "li" && !closing {
                out.push_str("- ");
            }
        }
    }
    out.push_str(rest);
    let text = crate::ingest::scholarly::decode_entities(&out);
    tidy(&text)
}

/// Case-insensitive `find` of an ASCII needle.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    (0..h.len().saturating_sub(n.len() - 1)).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
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
