//! Markdown preview, rendered server-side into HTML that cannot run.
//!
//! Owns: [`markdown_to_html`] — pulldown-cmark with maths on; raw HTML
//! (block and inline) shown as escaped text, never passed through; links
//! other than http(s), mailto and relative ones neutralised to `#`, and
//! images only from relative paths; each top-level block stamped with the
//! 0-based source line it starts on (`data-line`, for scroll sync);
//! `$…$` / `$$…$$` converted to MathML by math-core (browsers render it
//! natively — the preview frame runs no script), maths that fails to
//! convert shown as its own source.
//! Must not: emit markup taken from the document, or a `javascript:` (or
//! any other active) URL.

use math_core::{LatexToMathML, MathCoreConfig, MathDisplay};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

/// Escape text for HTML content or a quoted attribute.
pub fn escape_html(s: &str) -> String {
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

/// Whether a link target may stay: no scheme (relative, `#anchor`,
/// `/path`, `?q`), or http, https, mailto. Whitespace and control
/// characters are ignored when looking for the scheme, as browsers do
/// (`java\tscript:` is `javascript:`).
pub fn safe_link(url: &str) -> bool {
    let squeezed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    let lower = squeezed.to_ascii_lowercase();
    match lower.find([':', '/', '?', '#']) {
        Some(i) if lower.as_bytes()[i] == b':' => {
            let scheme = &lower[..i];
            matches!(scheme, "http" | "https" | "mailto")
        }
        _ => true,
    }
}

/// Whether an image source may stay: relative only (the preview makes no
/// outbound requests).
fn safe_image(url: &str) -> bool {
    safe_link(url) && {
        let l = url.trim().to_ascii_lowercase();
        !(l.starts_with("http:") || l.starts_with("https:") || l.starts_with("mailto:") || l.starts_with("//"))
    }
}

struct Maths(Option<LatexToMathML>);

impl Maths {
    fn new() -> Self {
        Maths(LatexToMathML::new(MathCoreConfig::default()).ok())
    }

    /// MathML for `latex`, or its source in a marked `<code>` when it does
    /// not convert (or converts into a link, which maths has no need of).
    fn render(&self, latex: &str, display: bool) -> String {
        let mode = if display {
            MathDisplay::Block
        } else {
            MathDisplay::Inline
        };
        let converted = self
            .0
            .as_ref()
            .and_then(|c| c.convert_with_local_state(latex, mode).ok());
        match converted {
            Some(r) if !r.mathml.contains("<a ") && !r.mathml.contains("href") => r.mathml,
            _ => {
                let fence = if display { "$$" } else { "$" };
                format!(
                    "<code class=\"math-error\" title=\"this maths could not be rendered\">{}</code>",
                    escape_html(&format!("{fence}{latex}{fence}"))
                )
            }
        }
    }
}

fn clean<'a>(ev: Event<'a>, maths: &Maths) -> Event<'a> {
    match ev {
        // Raw HTML becomes visible source: a block as a code block, inline
        // as text (pulldown-cmark escapes Text).
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::CodeBlock),
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
        Event::InlineMath(s) => Event::InlineHtml(maths.render(&s, false).into()),
        Event::DisplayMath(s) => Event::InlineHtml(maths.render(&s, true).into()),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_link(&dest_url) {
                dest_url
            } else {
                CowStr::Borrowed("#")
            },
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: if safe_image(&dest_url) {
                dest_url
            } else {
                CowStr::Borrowed("")
            },
            title,
            id,
        }),
        other => other,
    }
}

/// Put ` data-line="N"` into the first tag of a rendered block.
fn stamp(html: &str, line: usize) -> String {
    let Some(lt) = html.find('<') else {
        return html.to_string();
    };
    let name_end = html[lt + 1..]
        .find(|c: char| !c.is_ascii_alphanumeric())
        .map(|i| lt + 1 + i)
        .unwrap_or(html.len());
    if name_end == lt + 1 {
        return html.to_string();
    }
    format!("{} data-line=\"{line}\"{}", &html[..name_end], &html[name_end..])
}

/// Render Markdown to safe HTML with `data-line` anchors and MathML.
pub fn markdown_to_html(src: &str) -> String {
    let opts = Options::ENABLE_MATH
        | Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let maths = Maths::new();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| line_starts.partition_point(|&s| s <= offset).saturating_sub(1);
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth = 0usize;
    let mut block: Vec<Event<'_>> = Vec::new();
    let mut block_line = 0;
    for (ev, range) in Parser::new_ext(src, opts).into_offset_iter() {
        if depth == 0 {
            block_line = line_of(range.start);
        }
        match &ev {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
        block.push(clean(ev, &maths));
        if depth == 0 {
            let mut html = String::new();
            pulldown_cmark::html::push_html(&mut html, block.drain(..));
            out.push_str(&stamp(&html, block_line));
        }
    }
    out
}
