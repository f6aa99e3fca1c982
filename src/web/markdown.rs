//! Model and note text → safe HTML, rendered server-side.
//!
//! Owns: [`to_html`] — CommonMark (tables, strikethrough, task lists) with
//! `$…$` / `$$…$$` maths as MathML. Untrusted input by assumption (model
//! output can quote a hostile PDF), so: raw HTML is escaped into text, link
//! targets other than http(s)/mailto/obsidian/relative become `#`, and
//! images become plain links (an `<img>` pointing anywhere would be an
//! outbound request the moment a reply renders). The browser parses the
//! result inertly and copies only allowlisted elements into the page, so
//! this is the first of two locks, not the only one.
//! Must not: trust its input, or emit `<img>`, `<script>`, event handlers
//! or `style` attributes.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

/// Whether a link target is allowed to stay.
pub fn safe_url(url: &str) -> bool {
    let u = url.trim();
    let lower = u.to_ascii_lowercase();
    if lower.starts_with('#') || (lower.starts_with('/') && !lower.starts_with("//")) {
        return true;
    }
    match lower.split_once(':') {
        Some((scheme, _)) => {
            // A colon after a slash, `?` or `#` is inside a relative path.
            if scheme.contains(['/', '?', '#']) {
                return true;
            }
            matches!(scheme, "http" | "https" | "mailto" | "obsidian")
        }
        None => !lower.starts_with("//"),
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn math(latex: &str, block: bool) -> String {
    use math_core::{LatexToMathML, MathCoreConfig, MathDisplay};
    let display = if block { MathDisplay::Block } else { MathDisplay::Inline };
    let converted = LatexToMathML::new(MathCoreConfig::default())
        .ok()
        .and_then(|c| c.convert_with_local_state(latex, display).ok())
        .map(|r| r.mathml)
        // `\href` would put a link target into the MathML; keep the source.
        .filter(|m| !m.contains("<a ") && !m.contains("href"));
    match converted {
        Some(m) => m,
        // Maths that fails to convert shows as its own source.
        None if block => format!("<pre class=\"math-src\"><code>{}</code></pre>", escape(latex)),
        None => format!("<code class=\"math-src\">{}</code>", escape(latex)),
    }
}

/// Render Markdown to HTML that is safe to show (see the module docs).
pub fn to_html(text: &str) -> String {
    let opts =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS | Options::ENABLE_MATH;
    let events = Parser::new_ext(text, opts).map(|ev| match ev {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::InlineMath(s) => Event::InlineHtml(CowStr::from(math(&s, false))),
        Event::DisplayMath(s) => Event::Html(CowStr::from(math(&s, true))),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_url(&dest_url) {
                dest_url
            } else {
                CowStr::from("#")
            },
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_url(&dest_url) {
                dest_url
            } else {
                CowStr::from("#")
            },
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
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
