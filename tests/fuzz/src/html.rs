//! What "inert" means for the renderer's output, checked the way a browser
//! would read it: every `<` in escaped output opens a tag, so each tag's
//! name and attributes are read and held against the rules — no element
//! that runs or loads anything, no event handler or style attribute, and no
//! link whose scheme (after entity decoding and the whitespace browsers
//! ignore) is anything but http, https, mailto or obsidian.

/// Elements that execute, load, embed or submit.
const FORBIDDEN: &[&str] = &[
    "script",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "applet",
    "style",
    "link",
    "meta",
    "base",
    "form",
    "button",
    "textarea",
    "select",
    "svg",
    "template",
    "noscript",
    "xmp",
    "plaintext",
    "portal",
    "audio",
    "video",
    "source",
    "track",
    "image",
    "foreignobject",
    "animate",
    "set",
    "annotation-xml",
    "marquee",
    "dialog",
];

/// Attributes that run code or restyle the page whatever their value.
const FORBIDDEN_ATTRS: &[&str] = &[
    "style",
    "srcdoc",
    "formaction",
    "action",
    "xlink:href",
    "background",
    "poster",
    "dynsrc",
    "lowsrc",
    "srcset",
    "ping",
    "http-equiv",
];

/// Panics (the fuzzer's finding) when `html` is not inert.
pub fn assert_inert(html: &str, relative_images: bool) {
    if let Err(e) = check_inert(html, relative_images) {
        panic!("{e}");
    }
}

/// The checker proves itself once per run: each known-bad output must be
/// caught and each good one let through, or the run stops here (a checker
/// that accepts everything would make every fuzz run pass).
pub fn self_check() {
    let good = [
        ("<table><tr><th style=\"text-align: right\">b</th></tr></table>", false),
        (
            "<math><mspace style=\"margin-left:-0.1667em;\"/><mo>!</mo></math>",
            false,
        ),
        (
            "<p><a href=\"https%7F%7F://example.org\">a relative path</a></p>",
            false,
        ),
        ("<p>hi &lt;script&gt;</p><a href=\"https://x.example/\">x</a>", false),
        ("<p><img src=\"fig/a.png\" alt=\"a\"></p>", true),
        ("<p><a href=\"obsidian://open?vault=v&amp;file=n\">n</a></p>", false),
        (
            "<li><input disabled=\"\" type=\"checkbox\" checked=\"\"/>\ndone</li>",
            false,
        ),
    ];
    let bad = [
        ("<td style=\"text-align: right; background: red\">x</td>", false),
        ("<mspace style=\"background:url(x)\"/>", false),
        ("<p style=\"margin-left:-1em;\">x</p>", false),
        ("<a href=\" java\tscript:alert(1)\">x</a>", false),
        ("<p><img src=\"fig/a.png\"></p>", false),
        ("<script>alert(1)</script>", false),
        ("<a href=\"jav&#x61;script:alert(1)\">x</a>", false),
        ("<a href=\"java\tscript:x\">x</a>", false),
        ("<a href=\"&#100;ata:text/html,x\">x</a>", false),
        ("<p onclick=\"x\">x</p>", false),
        ("<p style=\"x\">x</p>", false),
        ("<img src=\"//evil.example/x.png\">", true),
        ("<img src=\"https://evil.example/x.png\">", true),
        ("a < b", false),
        ("<input type=\"text\" disabled>", false),
        ("<input type=\"checkbox\">", false),
    ];
    for (h, img) in good {
        if let Err(e) = check_inert(h, img) {
            panic!("the HTML checker refuses good output {h:?}: {e}");
        }
    }
    for (h, img) in bad {
        assert!(check_inert(h, img).is_err(), "the HTML checker misses {h:?}");
    }
}

/// `Err` naming the first thing in `html` that is not inert.
pub fn check_inert(html: &str, relative_images: bool) -> Result<(), String> {
    let mut i = 0;
    while let Some(off) = html[i..].find('<') {
        let start = i + off;
        let (tag, end) = read_tag(html, start);
        i = end.max(start + 1);
        let at = snippet(html, start);
        let Some(tag) = tag else {
            return Err(format!(
                "a bare `<` or markup declaration in the output at {start}: {at:?}"
            ));
        };
        if tag.closing {
            continue;
        }
        let name = tag.name.to_ascii_lowercase();
        if FORBIDDEN.contains(&name.as_str()) {
            return Err(format!("forbidden element <{name}>: {at:?}"));
        }
        // A task list's box is the one input the renderer may emit: a
        // disabled checkbox, which submits and runs nothing.
        if name == "input" {
            let has = |k: &str, v: Option<&str>| {
                tag.attrs
                    .iter()
                    .any(|(a, val)| a.eq_ignore_ascii_case(k) && v.is_none_or(|v| val.eq_ignore_ascii_case(v)))
            };
            if !(has("type", Some("checkbox")) && has("disabled", None)) {
                return Err(format!("an input that is not a disabled checkbox: {at:?}"));
            }
        }
        if name == "img" && !relative_images {
            return Err(format!("an <img> in the chat preset: {at:?}"));
        }
        for (attr, value) in &tag.attrs {
            let attr = attr.to_ascii_lowercase();
            if attr.starts_with("on") {
                return Err(format!("event handler {attr}: {at:?}"));
            }
            if attr == "style" && is_math_spacing(&name, value) {
                continue;
            }
            if FORBIDDEN_ATTRS.contains(&attr.as_str()) {
                return Err(format!("forbidden attribute {attr}: {at:?}"));
            }
            if !matches!(attr.as_str(), "href" | "src" | "cite" | "data" | "codebase") {
                continue;
            }
            let url = decode_entities(value);
            let scheme = scheme_of(&url);
            if name == "img" && attr == "src" {
                let squeezed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
                if scheme.is_some() || squeezed.starts_with("//") || squeezed.starts_with("\\\\") {
                    return Err(format!("an image that is not a relative path: {url:?}"));
                }
            } else if let Some(s) = scheme.filter(|s| !matches!(s.as_str(), "http" | "https" | "mailto" | "obsidian")) {
                return Err(format!("a {s}: link survived: {url:?}"));
            }
        }
    }
    Ok(())
}

struct Tag {
    name: String,
    closing: bool,
    attrs: Vec<(String, String)>,
}

fn snippet(html: &str, at: usize) -> &str {
    let mut end = (at + 120).min(html.len());
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    &html[at..end]
}

/// Read the tag that starts at `html[start] == '<'`: `None` if what follows
/// is not a tag name (text the renderer failed to escape).
fn read_tag(html: &str, start: usize) -> (Option<Tag>, usize) {
    let b = html.as_bytes();
    let mut i = start + 1;
    let closing = b.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let name_start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'-' || b[i] == b':') {
        i += 1;
    }
    if i == name_start || !b[name_start].is_ascii_alphabetic() {
        return (None, start + 1);
    }
    let name = html[name_start..i].to_string();
    let mut attrs = Vec::new();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] == b'>' {
            i += 1;
            break;
        }
        let a = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        let attr = html[a..i].to_string();
        let mut value = String::new();
        if b.get(i) == Some(&b'=') {
            i += 1;
            match b.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    let v = i + 1;
                    let close = html[v..].find(q as char).map_or(b.len(), |o| v + o);
                    value = html[v..close].to_string();
                    i = (close + 1).min(b.len());
                }
                _ => {
                    let v = i;
                    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                        i += 1;
                    }
                    value = html[v..i].to_string();
                }
            }
        }
        if attr.is_empty() {
            i += 1;
            continue;
        }
        attrs.push((attr, value));
    }
    (Some(Tag { name, closing, attrs }), i)
}

/// Character references as a browser decodes them in an attribute (numeric
/// ones with or without the `;`, and the named ones that matter here).
fn decode_entities(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        rest = &rest[p..];
        let body = &rest[1..];
        if let Some(num) = body.strip_prefix('#') {
            let (hex, digits) = match num.strip_prefix(['x', 'X']) {
                Some(h) => (true, h),
                None => (false, num),
            };
            let len = digits
                .bytes()
                .take_while(|c| if hex { c.is_ascii_hexdigit() } else { c.is_ascii_digit() })
                .count();
            if len > 0 {
                let n = u32::from_str_radix(&digits[..len.min(8)], if hex { 16 } else { 10 }).unwrap_or(0xFFFD);
                out.push(char::from_u32(n).unwrap_or('\u{FFFD}'));
                let used = 1 + 1 + usize::from(hex) + len;
                rest = &rest[used..];
                if let Some(r) = rest.strip_prefix(';') {
                    rest = r;
                }
                continue;
            }
        }
        let named = [
            ("amp;", '&'),
            ("lt;", '<'),
            ("gt;", '>'),
            ("quot;", '"'),
            ("apos;", '\''),
            ("colon;", ':'),
            ("tab;", '\t'),
            ("newline;", '\n'),
            ("nbsp;", '\u{a0}'),
        ];
        if let Some((n, c)) = named.iter().find(|(n, _)| body.to_ascii_lowercase().starts_with(n)) {
            out.push(*c);
            rest = &rest[1 + n.len()..];
            continue;
        }
        out.push('&');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

/// The URL's scheme as a browser finds it (whitespace and control
/// characters ignored), lowercased; `None` for a relative URL.
fn scheme_of(url: &str) -> Option<String> {
    let squeezed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    let lower = squeezed.to_ascii_lowercase();
    let i = lower.find([':', '/', '?', '#'])?;
    if lower.as_bytes()[i] != b':' {
        return None;
    }
    // Only a well-formed scheme makes the URL absolute in a browser (URL
    // standard: an ASCII letter, then letters, digits, `+`, `-`, `.`);
    // anything else before the `:` (`https%7F`) is a relative path.
    let candidate = &lower[..i];
    let mut chars = candidate.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    well_formed.then(|| candidate.to_string())
}

/// Generated styles only. math-core's own spacing: `<mspace style="margin-left:-0.1667em;">` for
/// `\!` and primes. The value is generated, never taken from the input;
/// it is allowed in exactly this form and nowhere else.
fn is_math_spacing(element: &str, value: &str) -> bool {
    // pulldown-cmark's table alignment: `<th style="text-align: right">`,
    // one of three fixed values, never taken from the input.
    if matches!(element, "th" | "td") {
        return matches!(value, "text-align: left" | "text-align: center" | "text-align: right");
    }
    if element != "mspace" {
        return false;
    }
    value.split_terminator(';').all(|decl| {
        let Some((prop, len)) = decl.split_once(':') else {
            return false;
        };
        let num = len.trim().strip_suffix("em").unwrap_or("x");
        let num = num.strip_prefix('-').unwrap_or(num);
        matches!(prop.trim(), "margin-left" | "margin-right")
            && !num.is_empty()
            && num.chars().all(|c| c.is_ascii_digit() || c == '.')
    }) && !value.is_empty()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checker_finds_what_it_must() {
        super::self_check();
    }
}
