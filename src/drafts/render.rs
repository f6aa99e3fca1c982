//! The one safe-Markdown renderer: chat replies and the drafts preview.
//!
//! Owns: [`render`] with its [`RenderOptions`] (and [`markdown_to_html`],
//! the preview's preset) — pulldown-cmark with maths, tables,
//! strikethrough, task lists and footnotes. The input is untrusted by
//! assumption (model output can quote a hostile PDF; a draft can be built
//! from one), so for every caller: raw HTML (block and inline) is shown as
//! escaped text, never passed through; link targets other than http(s),
//! mailto, obsidian and relative ones are neutralised to `#` ([`safe_link`]);
//! `$…$` / `$$…$$` become MathML by math-core (browsers render it natively,
//! no script), and maths that fails to convert — or converts into a link —
//! shows as its own source. What differs is the options: the chat turns
//! images into plain links (an `<img>` would be an outbound request the
//! moment a reply renders); the preview keeps relative images only and
//! stamps each top-level block with the 0-based source line it starts on
//! (`data-line`, for scroll sync). A caller may also pass a [`TextHook`]
//! that turns bits of prose into same-page links the renderer writes
//! itself (the chat's `[n]` citations).
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
/// `/path`, `?q`), or http, https, mailto, obsidian. Whitespace and control
/// characters are ignored when looking for the scheme, as browsers do
/// (`java\tscript:` is `javascript:`). A protocol-relative `//host/…` is
/// another site, not a relative path, and is refused.
pub fn safe_link(url: &str) -> bool {
    let squeezed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    let lower = squeezed.to_ascii_lowercase();
    if lower.starts_with("//") || lower.starts_with("\\\\") {
        return false;
    }
    match lower.find([':', '/', '?', '#']) {
        Some(i) if lower.as_bytes()[i] == b':' => {
            let scheme = &lower[..i];
            matches!(scheme, "http" | "https" | "mailto" | "obsidian")
        }
        _ => true,
    }
}

/// How one caller wants Markdown rendered; the safety rules are the same
/// for all of them (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Stamp each top-level block with `data-line` (its 0-based source line).
    pub line_anchors: bool,
    /// What an image becomes.
    pub images: Images,
}

/// What an image becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Images {
    /// A plain link to its target (the alt text as the link text).
    Links,
    /// An `<img>` for a relative source only; any other source is dropped.
    RelativeOnly,
}

impl RenderOptions {
    /// Chat replies and notes shown in the conversation.
    pub const CHAT: RenderOptions = RenderOptions {
        line_anchors: false,
        images: Images::Links,
    };
    /// The drafts preview (inside a frame that runs no script).
    pub const PREVIEW: RenderOptions = RenderOptions {
        line_anchors: true,
        images: Images::RelativeOnly,
    };
}

/// Whether an image source may stay: a relative path only, with no scheme
/// at all. The preview makes no outbound requests, and an image is loaded
/// the moment it renders, so even a scheme that is fine behind a click
/// (`obsidian:` hands the URL to another application) is refused here.
fn safe_image(url: &str) -> bool {
    let squeezed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    safe_link(url) && !squeezed.starts_with("//") && {
        match squeezed.find([':', '/', '?', '#']) {
            Some(i) => squeezed.as_bytes()[i] != b':',
            None => true,
        }
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

fn clean<'a>(ev: Event<'a>, maths: &Maths, opts: &RenderOptions) -> Event<'a> {
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
        }) if opts.images == Images::Links => Event::Start(Tag::Link {
            link_type,
            dest_url: if safe_link(&dest_url) {
                dest_url
            } else {
                CowStr::Borrowed("#")
            },
            title,
            id,
        }),
        Event::End(TagEnd::Image) if opts.images == Images::Links => Event::End(TagEnd::Link),
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

/// Render Markdown to safe HTML with `data-line` anchors and MathML (the
/// drafts preview).
pub fn markdown_to_html(src: &str) -> String {
    render(src, &RenderOptions::PREVIEW)
}

/// A piece of a text run as a caller's [`TextHook`] splits it: text
/// (escaped like any text), or a link to an anchor on the same page that
/// the renderer writes itself — a hook never supplies markup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// `<a class="{class}" href="#{fragment}">{label}</a>`; the fragment
    /// keeps only ASCII letters, digits, `-` and `_`.
    Anchor {
        fragment: String,
        class: &'static str,
        label: String,
    },
}

/// Splits a run of prose (never code, a link's text or maths) into pieces.
pub type TextHook<'h> = &'h dyn Fn(&str) -> Vec<Piece>;

fn anchor(fragment: &str, class: &str, label: &str) -> String {
    let fragment: String = fragment
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect();
    format!(
        "<a class=\"{}\" href=\"#{fragment}\">{}</a>",
        escape_html(class),
        escape_html(label)
    )
}

/// Run `hook` over the prose of one rendered block: adjacent text events
/// are joined first (the parser splits text at every bracket), and text
/// inside code, links and images is left alone.
fn apply_hook<'a>(events: Vec<Event<'a>>, hook: TextHook<'_>) -> Vec<Event<'a>> {
    let mut out = Vec::with_capacity(events.len());
    let mut run = String::new();
    let (mut code, mut link) = (0usize, 0usize);
    let flush = |run: &mut String, out: &mut Vec<Event<'a>>| {
        if run.is_empty() {
            return;
        }
        for piece in hook(run) {
            out.push(match piece {
                Piece::Text(t) => Event::Text(t.into()),
                Piece::Anchor { fragment, class, label } => Event::InlineHtml(anchor(&fragment, class, &label).into()),
            });
        }
        run.clear();
    };
    for ev in events {
        match &ev {
            Event::Text(t) if code == 0 && link == 0 => {
                run.push_str(t);
                continue;
            }
            Event::Start(Tag::CodeBlock(_)) => code += 1,
            Event::End(TagEnd::CodeBlock) => code = code.saturating_sub(1),
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) => link += 1,
            Event::End(TagEnd::Link | TagEnd::Image) => link = link.saturating_sub(1),
            _ => {}
        }
        flush(&mut run, &mut out);
        out.push(ev);
    }
    flush(&mut run, &mut out);
    out
}

/// Render Markdown to HTML that is safe to show (see the module docs).
pub fn render(src: &str, options: &RenderOptions) -> String {
    render_with(src, options, None)
}

/// [`render`], with `hook` splitting prose into text and same-page links
/// (the chat's citation markers).
pub fn render_with(src: &str, options: &RenderOptions, hook: Option<TextHook<'_>>) -> String {
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
        block.push(clean(ev, &maths, options));
        if depth == 0 {
            let mut html = String::new();
            match hook {
                Some(hook) => {
                    pulldown_cmark::html::push_html(&mut html, apply_hook(std::mem::take(&mut block), hook).into_iter())
                }
                None => pulldown_cmark::html::push_html(&mut html, block.drain(..)),
            }
            if options.line_anchors {
                out.push_str(&stamp(&html, block_line));
            } else {
                out.push_str(&html);
            }
        }
    }
    out
}
