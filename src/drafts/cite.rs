//! The citations a draft makes, and the bibliography a build writes beside
//! it.
//!
//! Owns: reading the keys a `.tex` cites (`\cite{a,b}`, `\citep[p.~3]{a}`,
//! `\textcite{…}`, `\nocite{…}` — any command whose name holds "cite",
//! outside comments) or a `.md` cites (pandoc's `[@a; @b]`, `@a`), the
//! name the `.bib` gets (the first `\bibliography{…}` / `\addbibresource{…}`
//! of the document, else `<stem>.bib`), and writing it through the
//! workspace: only a file Jarvis wrote before (its first line is
//! [`GENERATED_MARK`]) is ever replaced — a `.bib` of the user's own under
//! that name is left as it is.
//! Must not: read the knowledge base (the BibTeX comes from the caller as a
//! [`Bibliography`]; drafts sits below kb), or write except through the
//! workspace's containment policy and `disk`.

use super::workspace::Workspace;
use super::DraftsError;

/// BibTeX for the keys a draft cites, those the library knows (empty when
/// it knows none). Handed in by the composition layer.
pub type Bibliography<'a> = &'a (dyn Fn(&[String]) -> String + Sync);

/// The first line of every `.bib` a build writes; only a file that starts
/// with it is ever rewritten. (BibTeX reads anything outside an entry as a
/// comment.)
pub const GENERATED_MARK: &str = "% Written by Jarvis from your library";

fn push_unique(out: &mut Vec<String>, key: &str) {
    let key = key.trim();
    if !key.is_empty() && key != "*" && !out.iter().any(|k| k == key) {
        out.push(key.to_string());
    }
}

/// `text` without TeX comments (from an unescaped `%` to the line's end).
fn uncommented(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut escaped = false;
        for c in line.chars() {
            if c == '%' && !escaped {
                break;
            }
            escaped = c == '\\' && !escaped;
            out.push(c);
        }
        out.push('\n');
    }
    out
}

/// The `{…}` argument of each command named `wanted(name)`, after a
/// star and up to two `[…]` options.
fn command_args(text: &str, wanted: impl Fn(&str) -> bool) -> Vec<String> {
    let text = uncommented(text);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        if j == start || !wanted(&text[start..j]) {
            i = j.max(start + 1);
            continue;
        }
        let skip_space = |mut k: usize| {
            while k < b.len() && b[k].is_ascii_whitespace() {
                k += 1;
            }
            k
        };
        if j < b.len() && b[j] == b'*' {
            j += 1;
        }
        j = skip_space(j);
        for _ in 0..2 {
            if j < b.len() && b[j] == b'[' {
                match text[j..].find(']') {
                    Some(end) => j = skip_space(j + end + 1),
                    None => break,
                }
            }
        }
        if j < b.len() && b[j] == b'{' {
            if let Some(end) = text[j..].find('}') {
                out.push(text[j + 1..j + end].to_string());
                i = j + end + 1;
                continue;
            }
        }
        i = j.max(start);
    }
    out
}

/// The keys a LaTeX document cites, in order of first use.
pub fn tex_keys(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for arg in command_args(text, |name| name.to_ascii_lowercase().contains("cite")) {
        for k in arg.split(',') {
            push_unique(&mut out, k);
        }
    }
    out
}

/// The `.bib` a LaTeX document names (`\bibliography{refs}` → refs.bib,
/// `\addbibresource{refs.bib}`), else `<stem>.bib`.
pub fn tex_bib_name(text: &str, stem: &str) -> String {
    command_args(text, |name| name == "bibliography" || name == "addbibresource")
        .iter()
        .flat_map(|a| a.split(',').map(str::trim).collect::<Vec<_>>())
        .find(|n| !n.is_empty())
        .map(|n| {
            if n.to_ascii_lowercase().ends_with(".bib") {
                n.to_string()
            } else {
                format!("{n}.bib")
            }
        })
        .unwrap_or_else(|| format!("{stem}.bib"))
}

/// Characters pandoc allows inside a citation key (the last must be a
/// letter, digit or `_`).
fn key_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            '_' | ':' | '.' | '#' | '$' | '%' | '&' | '-' | '+' | '?' | '<' | '>' | '~' | '/'
        )
}

/// The keys a Markdown document cites with pandoc's syntax (`[@a; -@b]`,
/// `@a says`, `@{a}`), in order of first use. An `@` inside a word (an
/// e-mail address) is not a citation.
pub fn md_keys(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c != '@' || (i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) {
            continue;
        }
        let rest = &chars[i + 1..];
        let key: String = if rest.first() == Some(&'{') {
            rest[1..].iter().take_while(|&&c| c != '}').collect()
        } else {
            let mut k: String = rest.iter().take_while(|&&c| key_char(c)).collect();
            while k.ends_with(|c: char| !(c.is_alphanumeric() || c == '_')) {
                k.pop();
            }
            k
        };
        if key.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            push_unique(&mut out, &key);
        }
    }
    out
}

/// Write `bibtex` (with the mark and a note saying for which file) as
/// `name` in the draft, unless a file of the user's own holds that name.
/// Returns whether the draft now has Jarvis's file under `name`.
pub(crate) fn write_bib(
    ws: &Workspace,
    draft_id: &str,
    name: &str,
    for_file: &str,
    bibtex: &str,
) -> Result<bool, DraftsError> {
    let text = format!(
        "{GENERATED_MARK} for {for_file}: the entries it cites, rewritten on every build.\n% To keep changes of your own, save them under another name.\n\n{bibtex}"
    );
    ws.write_generated(draft_id, name, &text, GENERATED_MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_a_tex_file_cites_in_order_outside_comments() {
        let tex = r"\documentclass{article}
\begin{document}
As \citet{smith2021protein} showed \citep[p.~3][see]{lee2020cells, smith2021protein}.
\parencite*{vaswani2017attention} % \cite{commented2020out}
50\% of cases \cite{ doe2019x }.\nocite{*}
\bibliographystyle{plain}
\bibliography{refs,more}
\end{document}";
        assert_eq!(
            tex_keys(tex),
            ["smith2021protein", "lee2020cells", "vaswani2017attention", "doe2019x"]
        );
        assert_eq!(tex_bib_name(tex, "paper"), "refs.bib");
        assert_eq!(tex_bib_name(r"\addbibresource{lib.bib}", "paper"), "lib.bib");
        assert_eq!(tex_bib_name("no bibliography", "paper"), "paper.bib");
        assert_eq!(tex_bib_name(r"% \bibliography{old}", "paper"), "paper.bib");
    }

    #[test]
    fn the_keys_a_markdown_file_cites_and_not_an_email_address() {
        let md = "As [@smith2021protein, p. 3; -@lee2020cells] and @vaswani2017attention. said.\n\
                  Mail me@example.org. See @{odd key}. [@smith2021protein]";
        assert_eq!(
            md_keys(md),
            ["smith2021protein", "lee2020cells", "vaswani2017attention", "odd key"]
        );
    }
}
