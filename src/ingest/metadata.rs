//! Title, authors and DOI for local PDFs, which arrive with nothing but a
//! file name.
//!
//! Owns: the DOI pattern search over the first pages (cheap and exact when
//! printed), one small `complete()` call for title and authors, and the
//! policy every add path shares: explicit values always win, and inference
//! is skipped entirely once all three are given.
//! Must not: fail an add. Every inference failure is logged and degrades to
//! "unknown".

use serde::Deserialize;

use crate::cancel::Cancel;
use crate::llm::transcript::Message;
use crate::llm::ChatProvider;

/// How much of the first pages the model sees.
const MAX_PROMPT_CHARS: usize = 6000;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PdfMetadata {
    pub title: Option<String>,
    pub authors: Option<String>,
    pub doi: Option<String>,
}

impl PdfMetadata {
    pub fn complete(&self) -> bool {
        self.title.is_some() && self.authors.is_some() && self.doi.is_some()
    }
}

/// The first DOI printed in `text` (`10.NNNN/…`), without trailing
/// punctuation.
pub fn find_doi(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(pos) = text[from..].find("10.") {
        let start = from + pos;
        from = start + 3;
        // Not in the middle of a longer number.
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let rest = &text[start + 3..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if !(4..=9).contains(&digits) || !rest[digits..].starts_with('/') {
            continue;
        }
        let suffix: String = rest[digits + 1..].chars().take_while(|c| !c.is_whitespace()).collect();
        let suffix = suffix.trim_end_matches(['.', ',', ';', ')', ']', '}', '"', '\'']);
        if !suffix.is_empty() {
            return Some(format!("10.{}/{}", &rest[..digits], suffix));
        }
    }
    None
}

#[derive(Deserialize)]
struct Reply {
    title: Option<String>,
    authors: Option<AuthorList>,
    doi: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AuthorList {
    List(Vec<String>),
    One(String),
}

/// Pull `{…}` out of a reply that may wrap it in prose or a code fence.
fn parse_reply(reply: &str) -> Option<Reply> {
    let start = reply.find('{')?;
    let end = reply.rfind('}')?;
    serde_json::from_str(reply.get(start..=end)?).ok()
}

fn clean(s: Option<String>) -> Option<String> {
    s.map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("null") && !v.eq_ignore_ascii_case("unknown"))
}

/// Infer what is missing from the first pages' text. `provider` may be
/// None (no model available): then only the DOI pattern runs.
pub fn infer(
    first_pages: &str,
    provider: Option<&dyn ChatProvider>,
    prompt_template: &str,
    cancel: Option<&Cancel>,
) -> PdfMetadata {
    let mut meta = PdfMetadata {
        doi: find_doi(first_pages),
        ..PdfMetadata::default()
    };
    let Some(provider) = provider else { return meta };
    let text: String = first_pages.chars().take(MAX_PROMPT_CHARS).collect();
    let prompt = prompt_template.replace("{text}", &text);
    let reply = match provider.complete_reusable(
        &[Message::user(prompt)],
        400,
        None,
        &|reply: &str| parse_reply(reply).is_some(),
        cancel,
        &mut crate::llm::stream::ignore,
    ) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(provider = provider.provider_name(), model = provider.model(), error = %e,
                "metadata inference failed; the PDF is added without an inferred title/authors");
            return meta;
        }
    };
    let Some(parsed) = parse_reply(&reply) else {
        tracing::warn!(reply = %reply.chars().take(200).collect::<String>(), "metadata inference gave no JSON object; ignored");
        return meta;
    };
    meta.title = clean(parsed.title).filter(|t| usable_title(t));
    meta.authors = clean(parsed.authors.map(|a| match a {
        AuthorList::List(v) => v.join(", "),
        AuthorList::One(s) => s,
    }));
    if meta.doi.is_none() {
        // A model-suggested DOI must at least look like one.
        meta.doi = clean(parsed.doi).and_then(|d| find_doi(&d));
    }
    meta
}

/// A model's title answer is usable when it is title-sized and not a
/// placeholder or a remark about the task — small local models answer
/// "Untitled", "N/A" or "Here is the JSON…". An unusable answer leaves the
/// title to the converter's recognised one (then the file name).
fn usable_title(title: &str) -> bool {
    let n = title.chars().count();
    let lower = title.to_lowercase();
    let placeholder = [
        "untitled",
        "title",
        "n/a",
        "none",
        "unknown title",
        "no title",
        "not found",
        "not available",
    ]
    .contains(&lower.trim_end_matches('.'));
    let remark = ["here is", "here's", "the title", "i could", "i can", "sorry", "{"]
        .iter()
        .any(|p| lower.starts_with(p));
    (3..=300).contains(&n) && !placeholder && !remark && title.chars().any(char::is_alphabetic)
}

/// The shared policy: explicit values win; inference runs only for what is
/// still unset, and not at all when everything was given.
pub fn resolve(explicit: &PdfMetadata, infer_missing: impl FnOnce() -> PdfMetadata) -> PdfMetadata {
    if explicit.complete() {
        return explicit.clone();
    }
    let inferred = infer_missing();
    PdfMetadata {
        title: explicit.title.clone().or(inferred.title),
        authors: explicit.authors.clone().or(inferred.authors),
        doi: explicit.doi.clone().or(inferred.doi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_and_remark_titles_are_unusable() {
        assert!(usable_title("Otters in the Wild: A Field Study"));
        assert!(usable_title("JSONiq for Scientists"));
        assert!(!usable_title("Here is the JSON you asked for"));
        assert!(!usable_title("Untitled"));
        assert!(!usable_title("N/A"));
        assert!(!usable_title("42"));
    }

    #[test]
    fn dois_are_found_and_trimmed() {
        assert_eq!(
            find_doi("see https://doi.org/10.1038/s41586-021-03819-2."),
            Some("10.1038/s41586-021-03819-2".into())
        );
        assert_eq!(
            find_doi("DOI: 10.48550/arXiv.1706.03762)"),
            Some("10.48550/arXiv.1706.03762".into())
        );
        assert_eq!(find_doi("version 210.1234/x and 10.12/x"), None);
        assert_eq!(find_doi("nothing here"), None);
    }

    #[test]
    fn replies_are_read_leniently() {
        let r = parse_reply(
            "Sure!\n```json\n{\"title\": \"A  Paper\", \"authors\": [\"Ada\", \"Alan\"], \"doi\": null}\n```",
        )
        .unwrap();
        assert_eq!(clean(r.title).as_deref(), Some("A Paper"));
        assert!(matches!(r.authors, Some(AuthorList::List(ref v)) if v.len() == 2));
        let r = parse_reply("{\"title\": null, \"authors\": \"Ada Lovelace\"}").unwrap();
        assert!(r.title.is_none());
        assert!(parse_reply("no json at all").is_none());
    }

    #[test]
    fn explicit_values_win_and_skip_inference_when_complete() {
        let all = PdfMetadata {
            title: Some("T".into()),
            authors: Some("A".into()),
            doi: Some("10.1234/x".into()),
        };
        let r = resolve(&all, || panic!("inference must not run"));
        assert_eq!(r, all);
        let some = PdfMetadata {
            title: Some("Mine".into()),
            ..Default::default()
        };
        let r = resolve(&some, || PdfMetadata {
            title: Some("Inferred".into()),
            authors: Some("Bob".into()),
            doi: None,
        });
        assert_eq!(r.title.as_deref(), Some("Mine"));
        assert_eq!(r.authors.as_deref(), Some("Bob"));
    }
}
