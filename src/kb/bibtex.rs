//! BibTeX for the library's papers: one entry per [`CiteEntry`].
//!
//! Owns: the entry type (`@article` for a journal paper, `@inproceedings`
//! for a proceedings paper, `@misc` for a preprint — with `eprint` and
//! `archivePrefix` for arXiv — or anything else), the author list
//! ("Family, Given and …"), titles whose capitals survive a style's
//! lower-casing (a word with a capital past its first letter is braced:
//! `{DNA}`, `{AlphaFold}`), and the escaping that keeps metadata inert.
//! Metadata is untrusted (a PDF's title, a publisher's record): every text
//! field is escaped so no character of it is TeX syntax — `\` `{` `}` `$`
//! `&` `%` `#` `_` `^` `~` become text commands, so braces stay balanced
//! for BibTeX and nothing reaches TeX as a command — and a DOI or URL that
//! would need escaping is left out rather than bent.
//! Must not: read the store (it formats entries it is given).

use super::cite::{Author, CiteEntry};

/// `s` as inert TeX text: specials become text commands, line breaks and
/// other control characters become spaces, runs of space collapse.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for word in s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        escape_into(word, &mut out);
    }
    out
}

fn escape_into(word: &str, out: &mut String) {
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '{' => out.push_str("\\textbraceleft{}"),
            '}' => out.push_str("\\textbraceright{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '~' => out.push_str("\\textasciitilde{}"),
            '$' | '&' | '%' | '#' | '_' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

/// A title: escaped, each word with a capital after its first letter
/// braced so a style's sentence case keeps it (`{DNA}`, `{mRNA}`).
pub fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for word in s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        let protect = word.chars().skip(1).any(char::is_uppercase);
        if protect {
            out.push('{');
        }
        escape_into(word, &mut out);
        if protect {
            out.push('}');
        }
    }
    out
}

/// One name part; braced whole when BibTeX would otherwise split it (a
/// comma, or the word "and").
fn name_part(s: &str) -> String {
    let e = escape(s);
    let splits = s.contains(',') || s.split_whitespace().any(|w| w.eq_ignore_ascii_case("and"));
    if splits {
        format!("{{{e}}}")
    } else {
        e
    }
}

/// "Family, Given and Family, Given"; a name with no given part (an
/// organisation, a single name) is braced so it stays one family name.
pub fn authors(list: &[Author]) -> String {
    list.iter()
        .map(|a| match (a.family.trim(), a.given.trim()) {
            ("", g) => format!("{{{}}}", escape(g)),
            (f, "") => format!("{{{}}}", escape(f)),
            (f, g) => format!("{}, {}", name_part(f), name_part(g)),
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// A DOI, URL or eprint id as BibTeX takes it verbatim; `None` when it
/// holds anything that would need escaping there (braces, a backslash, a
/// percent sign, white space or a control character).
fn verbatim(s: &str) -> Option<&str> {
    let s = s.trim();
    let bad = |c: char| matches!(c, '{' | '}' | '\\' | '%') || c.is_whitespace() || c.is_control();
    (!s.is_empty() && !s.chars().any(bad)).then_some(s)
}

fn is_arxiv(e: &CiteEntry) -> bool {
    e.arxiv_id.is_some() || e.venue.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("arxiv"))
}

fn is_preprint(e: &CiteEntry) -> bool {
    is_arxiv(e)
        || e.publication_type.as_deref() == Some("posted-content")
        || e.venue
            .as_deref()
            .is_some_and(|v| ["biorxiv", "medrxiv"].contains(&v.to_lowercase().as_str()))
}

/// A source that is a web address (not a local file) worth a `url`.
fn web_url(source: &str) -> Option<&str> {
    let lower = source.to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://"))
        .then_some(source)
        .and_then(verbatim)
}

/// One entry, ending with a newline.
pub fn entry(e: &CiteEntry) -> String {
    let mut fields: Vec<(&str, String)> = Vec::new();
    if !e.authors.is_empty() {
        fields.push(("author", authors(&e.authors)));
    }
    if !e.title.is_empty() {
        fields.push(("title", title(&e.title)));
    }
    let kind = if is_preprint(e) {
        if !is_arxiv(e) {
            if let Some(v) = &e.venue {
                fields.push(("howpublished", escape(v)));
            }
        }
        "misc"
    } else if e.publication_type.as_deref() == Some("proceedings-article") && e.venue.is_some() {
        fields.push(("booktitle", escape(e.venue.as_deref().unwrap_or(""))));
        "inproceedings"
    } else if let Some(v) = &e.venue {
        fields.push(("journal", escape(v)));
        "article"
    } else {
        "misc"
    };
    if let Some(y) = e.year {
        fields.push(("year", y.to_string()));
    }
    for (name, value) in [
        ("volume", &e.volume),
        ("number", &e.issue),
        ("pages", &e.pages),
        ("publisher", &e.publisher),
    ] {
        if let Some(v) = value {
            // BibTeX's page ranges are written with `--`.
            let v = if name == "pages" {
                v.replace(['-', '–', '—'], "--").replace("----", "--")
            } else {
                v.clone()
            };
            fields.push((name, escape(&v)));
        }
    }
    if let Some(doi) = e.doi.as_deref().and_then(verbatim) {
        fields.push(("doi", doi.to_string()));
    }
    let arxiv = e.arxiv_id.as_deref().and_then(verbatim);
    if let Some(id) = arxiv {
        fields.push(("eprint", id.to_string()));
        fields.push(("archivePrefix", "arXiv".to_string()));
    }
    let url = match arxiv {
        Some(id) => Some(format!("https://arxiv.org/abs/{id}")),
        None => web_url(&e.source).map(str::to_string),
    };
    if let Some(u) = url {
        fields.push(("url", u));
    }
    let mut out = format!("@{kind}{{{},\n", e.key);
    for (name, value) in fields {
        out.push_str(&format!("  {name} = {{{value}}},\n"));
    }
    out.push_str("}\n");
    out
}

/// Entries one after another, a blank line between them.
pub fn render(entries: &[CiteEntry]) -> String {
    entries.iter().map(entry).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper() -> CiteEntry {
        CiteEntry {
            key: "jumper2021highly".into(),
            source: "https://doi.org/10.1038/s41586-021-03819-2".into(),
            title: "Highly accurate protein structure prediction with AlphaFold".into(),
            authors: vec![
                Author {
                    given: "John".into(),
                    family: "Jumper".into(),
                },
                Author {
                    given: "Richard".into(),
                    family: "Evans".into(),
                },
            ],
            year: Some(2021),
            venue: Some("Nature".into()),
            doi: Some("10.1038/s41586-021-03819-2".into()),
            publication_type: Some("journal-article".into()),
            volume: Some("596".into()),
            pages: Some("583-589".into()),
            ..CiteEntry::default()
        }
    }

    #[test]
    fn a_journal_paper_is_an_article_with_its_capitals_braced() {
        let out = entry(&paper());
        assert!(out.starts_with("@article{jumper2021highly,\n"), "{out}");
        assert!(out.contains("  author = {Jumper, John and Evans, Richard},\n"), "{out}");
        assert!(
            out.contains("  title = {Highly accurate protein structure prediction with {AlphaFold}},\n"),
            "{out}"
        );
        assert!(out.contains("  journal = {Nature},\n  year = {2021},\n"), "{out}");
        assert!(out.contains("  pages = {583--589},\n"), "{out}");
        assert!(out.contains("  doi = {10.1038/s41586-021-03819-2},\n"), "{out}");
        assert!(
            out.contains("  url = {https://doi.org/10.1038/s41586-021-03819-2},\n"),
            "{out}"
        );
        assert!(out.ends_with("}\n"));
    }

    #[test]
    fn a_preprint_is_misc_and_arxiv_carries_its_eprint() {
        let arxiv = CiteEntry {
            key: "vaswani2017attention".into(),
            title: "Attention Is All You Need".into(),
            arxiv_id: Some("1706.03762".into()),
            venue: Some("arXiv".into()),
            year: Some(2017),
            ..CiteEntry::default()
        };
        let out = entry(&arxiv);
        assert!(out.starts_with("@misc{vaswani2017attention,"), "{out}");
        assert!(
            out.contains("eprint = {1706.03762},\n  archivePrefix = {arXiv},"),
            "{out}"
        );
        assert!(out.contains("url = {https://arxiv.org/abs/1706.03762}"), "{out}");
        assert!(!out.contains("journal"), "{out}");
        let biorxiv = CiteEntry {
            key: "lee2020cells".into(),
            venue: Some("bioRxiv".into()),
            publication_type: Some("posted-content".into()),
            ..CiteEntry::default()
        };
        let out = entry(&biorxiv);
        assert!(
            out.starts_with("@misc{lee2020cells,") && out.contains("howpublished = {bioRxiv}"),
            "{out}"
        );
    }

    #[test]
    fn hostile_metadata_comes_out_as_text() {
        let e = CiteEntry {
            key: "evil2024x".into(),
            source: "https://example.org/a}b".into(),
            title: "Oops} \\input{/etc/passwd} $x^2$ 100% #1 a_b ~".into(),
            authors: vec![Author {
                given: "Bob } and \\def".into(),
                family: "Evil, Inc.".into(),
            }],
            venue: Some("J. {Hack}\n@misc{x,".into()),
            doi: Some("10.1/x}\\input{y}".into()),
            ..CiteEntry::default()
        };
        let out = entry(&e);
        // Balanced braces: BibTeX's reader never sees a field end early.
        let mut depth = 0i32;
        for c in out.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            assert!(depth >= 0, "{out}");
        }
        assert_eq!(depth, 0, "{out}");
        assert!(!out.contains("\\input"), "no command survives: {out}");
        assert!(!out.contains("\\def"), "{out}");
        assert!(
            out.contains("\\textbackslash{}input\\textbraceleft{}/etc/passwd\\textbraceright{}"),
            "{out}"
        );
        assert!(
            out.contains("\\$x\\textasciicircum{}2\\$ 100\\% \\#1 a\\_b \\textasciitilde{}"),
            "{out}"
        );
        assert!(
            !out.contains("doi ="),
            "a DOI that would need escaping is left out: {out}"
        );
        assert!(!out.contains("url ="), "{out}");
        assert!(
            out.contains("{Evil, Inc.}, {Bob \\textbraceright{} and \\textbackslash{}def}"),
            "{out}"
        );
        assert_eq!(out.matches('\n').count(), out.lines().count(), "no stray line breaks");
        assert!(!out.contains("\n@misc{x,"), "{out}");
    }

    #[test]
    fn names_without_a_given_part_stay_whole() {
        assert_eq!(
            authors(&[
                Author {
                    given: String::new(),
                    family: "The AlphaFold Team".into()
                },
                Author {
                    given: "Jan".into(),
                    family: "van der Berg".into()
                }
            ]),
            "{The AlphaFold Team} and van der Berg, Jan"
        );
    }
}
