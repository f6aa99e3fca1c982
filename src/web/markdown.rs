//! Model and note text → safe HTML for the conversation view.
//!
//! The renderer itself is the one in `drafts::render` (chat and the drafts
//! preview share every safety rule); this module only fixes the chat's
//! options: images become plain links (an `<img>` pointing anywhere would be
//! an outbound request the moment a reply renders), and no line anchors.
//! The browser parses the result inertly and copies only allowlisted
//! elements into the page, so this is the first of two locks, not the only
//! one. The tests below are the chat's half of the renderer's spec.
//! Must not: render Markdown itself, or emit `<img>`, `<script>`, event
//! handlers or `style` attributes.

use crate::chat::cite::{split_markers, Segment};
use crate::drafts::render::{render, render_with, Images, Piece, RenderOptions};

/// Whether a link target is allowed to stay (the renderer's one policy).
pub use crate::drafts::render::safe_link as safe_url;

/// Render Markdown to HTML that is safe to show in the conversation.
pub fn to_html(text: &str) -> String {
    render(text, &RenderOptions::CHAT)
}

/// A note for the source viewer: [`to_html`]'s rules, with each top-level
/// block stamped `data-line` (its 0-based source line) so the viewer can
/// scroll to a heading and mark a passage by line. Front matter is blanked
/// line for line (not rendered, not renumbering what follows).
pub fn to_html_lines(text: &str) -> String {
    let options = RenderOptions {
        line_anchors: true,
        images: Images::Links,
    };
    render(&blank_front_matter(text), &options)
}

/// `text` with a leading `---` … `---` block replaced by as many empty
/// lines.
fn blank_front_matter(text: &str) -> String {
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return text.to_string();
    }
    let Some(end) = text
        .split_inclusive('\n')
        .skip(1)
        .position(|l| matches!(l.trim_end(), "---" | "..."))
    else {
        return text.to_string();
    };
    let mut out = "\n".repeat(end + 2);
    out.extend(text.split_inclusive('\n').skip(end + 2));
    out
}

/// [`to_html`] for an answer whose `[n]` markers name the passages in
/// `cited`: each such number becomes `<a class="cite" href="#cite-n">n</a>`
/// (written by the renderer, never taken from the text); a marker naming
/// anything else stays text.
pub fn to_html_cited(text: &str, cited: &[u32]) -> String {
    if cited.is_empty() {
        return to_html(text);
    }
    let hook = |run: &str| -> Vec<Piece> {
        split_markers(run)
            .into_iter()
            .flat_map(|seg| match seg {
                Segment::Marker(ns) if ns.iter().all(|n| cited.contains(n)) => ns
                    .into_iter()
                    .map(|n| Piece::Anchor {
                        fragment: format!("cite-{n}"),
                        class: "cite",
                        label: n.to_string(),
                    })
                    .collect(),
                Segment::Marker(ns) => {
                    let list: Vec<String> = ns.iter().map(u32::to_string).collect();
                    vec![Piece::Text(format!("[{}]", list.join(", ")))]
                }
                Segment::Text(t) => vec![Piece::Text(t.to_string())],
            })
            .collect()
    };
    render_with(text, &RenderOptions::CHAT, Some(&hook))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_text_and_scripts_never_survive() {
        let h = to_html("hi <script>alert(1)</script> <img src=x onerror=alert(1)>\n\n<div onclick=x>block</div>");
        assert!(!h.contains("<script"), "{h}");
        assert!(!h.contains("<img"), "{h}");
        assert!(!h.contains("<div"), "{h}");
        assert!(h.contains("&lt;script&gt;"), "{h}");
    }

    #[test]
    fn dangerous_links_are_neutralised_and_images_become_links() {
        let h = to_html("[a](javascript:alert(1)) [b](JaVaScRiPt:x) [c](data:text/html,x) [d](https://ok.example/p) [e](obsidian://open?vault=v&file=n)");
        assert!(!h.to_lowercase().contains("javascript:"), "{h}");
        assert!(!h.contains("data:"), "{h}");
        assert!(h.contains("href=\"https://ok.example/p\""), "{h}");
        assert!(h.contains("obsidian://open"), "{h}");
        let h = to_html("![x](https://tracker.example/pixel.png)");
        assert!(!h.contains("<img"), "{h}");
        assert!(h.contains("<a href=\"https://tracker.example/pixel.png\""), "{h}");
    }

    #[test]
    fn maths_becomes_mathml_and_bad_maths_shows_its_source() {
        let h = to_html("Euler: $e^{i\\pi} + 1 = 0$ and\n\n$$\\frac{a}{b}$$");
        assert!(h.contains("<math"), "{h}");
        assert!(h.contains("<mfrac"), "{h}");
        let h = to_html("$\\href{javascript:alert(1)}{x}$");
        assert!(!h.contains("href=\"javascript"), "{h}");
        let h = to_html("$\\frac{a}{$");
        assert!(!h.contains("<script"), "{h}");
    }

    #[test]
    fn code_blocks_tables_and_lists_render() {
        let h =
            to_html("```rust\nfn main() { let x = 1 < 2; }\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n");
        assert!(h.contains("<pre><code class=\"language-rust\">"), "{h}");
        assert!(h.contains("1 &lt; 2"), "{h}");
        assert!(h.contains("<table>"), "{h}");
        assert!(h.contains("checkbox"), "{h}");
    }

    #[test]
    fn cited_markers_become_same_page_links_and_nothing_else_does() {
        let h = to_html_cited(
            "Sync keeps history [1][2]. Also [1, 3] and [9].\n\n`code [1]` and [a [1]](https://x)\n\n```\n[2]\n```\n\n<b>[2]</b>",
            &[1, 2],
        );
        assert!(
            h.contains("history <a class=\"cite\" href=\"#cite-1\">1</a><a class=\"cite\" href=\"#cite-2\">2</a>."),
            "{h}"
        );
        assert!(
            h.contains("Also [1, 3] and [9]."),
            "a marker naming anything uncited stays text: {h}"
        );
        assert!(h.contains("<code>code [1]</code>"), "{h}");
        assert!(h.contains(">a [1]</a>"), "no link inside a link: {h}");
        assert!(h.contains("<pre><code>[2]\n</code></pre>"), "{h}");
        assert!(
            h.contains("&lt;b&gt;<a class=\"cite\" href=\"#cite-2\">2</a>&lt;/b&gt;"),
            "raw HTML stays text: {h}"
        );
        assert_eq!(h.matches("class=\"cite\"").count(), 3, "{h}");
        assert_eq!(to_html_cited("plain [1]", &[]), to_html("plain [1]"));
    }

    #[test]
    fn a_viewed_note_keeps_its_line_numbers_and_hides_its_front_matter() {
        let h = to_html_lines("---\ntags: [a]\n---\n# Pasta\n\nBoil <b>it</b>.\n\n![x](https://t.example/p.png)\n");
        assert!(!h.contains("tags"), "{h}");
        assert!(h.contains("<h1 data-line=\"3\">Pasta</h1>"), "{h}");
        assert!(h.contains("<p data-line=\"5\">Boil &lt;b&gt;it&lt;/b&gt;.</p>"), "{h}");
        assert!(!h.contains("<img"), "{h}");
        assert_eq!(blank_front_matter("---\nno end"), "---\nno end");
        assert_eq!(blank_front_matter("# a\n---\n"), "# a\n---\n");
    }

    #[test]
    fn url_policy() {
        for ok in [
            "https://a",
            "http://a",
            "mailto:x@y",
            "obsidian://open?x",
            "#frag",
            "/path",
            "rel/path",
            "a?b=c:d",
        ] {
            assert!(safe_url(ok), "{ok}");
        }
        for bad in [
            "javascript:x",
            " javascript:x",
            "vbscript:x",
            "data:x",
            "file:///etc/passwd",
            "//evil.example/x",
        ] {
            assert!(!safe_url(bad), "{bad}");
        }
    }
}
