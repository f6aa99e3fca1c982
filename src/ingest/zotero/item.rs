//! Zotero's item model as the import needs it — the shape all three
//! readers (the database, BibTeX, CSL-JSON) produce — and its mapping to a
//! [`LibraryItem`]: Zotero's field names to Jarvis's metadata, creators to
//! authors, the date to a year, collections and tags to `tags`, the first
//! PDF attachment to the paper's file.
//!
//! Must not: touch the file system except through [`Resolver`], which
//! decides whether an attachment may be read.

use std::collections::BTreeMap;

use serde_json::json;

use super::attach::{AttachmentAt, Resolver};
use super::{Entry, Skipped};
use crate::ingest::paper::LibraryItem;
use crate::pdf::Annotation;
use crate::store::Metadata;

/// One item as a reader found it.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawItem {
    /// How the summary names it: Zotero's item key, or the export's
    /// citation key or id.
    pub key: String,
    /// The stored `source` (see [`LibraryItem::source`]).
    pub source: String,
    /// Zotero's item type (`journalArticle`, `conferencePaper`…).
    pub item_type: String,
    /// By Zotero's field names: `title`, `date`, `DOI`, `publicationTitle`,
    /// `abstractNote`, `url`, `extra`…
    pub fields: BTreeMap<String, String>,
    pub creators: Vec<Creator>,
    /// Collection paths (`Parent/Child`).
    pub collections: Vec<String>,
    pub tags: Vec<String>,
    /// Plain text.
    pub notes: Vec<String>,
    pub attachments: Vec<RawAttachment>,
    /// In Zotero's trash.
    pub trashed: bool,
    /// Zotero's item key and library id, when the reader knows them.
    pub zotero_key: Option<String>,
    pub zotero_library: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Creator {
    pub first: String,
    pub last: String,
    /// `author`, `editor`… (empty when the reader cannot tell).
    pub kind: String,
}

impl Creator {
    fn display(&self) -> String {
        match (self.first.trim(), self.last.trim()) {
            ("", l) => l.to_string(),
            (f, "") => f.to_string(),
            (f, l) => format!("{f} {l}"),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct RawAttachment {
    pub at: AttachmentAt,
    /// The MIME type the library recorded ("" when none).
    pub content_type: String,
    /// The reader's annotations kept by the library for this file.
    pub annotations: Vec<Annotation>,
}

impl RawAttachment {
    /// A PDF by its recorded type, or by its name when no type is recorded.
    fn is_pdf(&self) -> bool {
        let ct = self.content_type.to_ascii_lowercase();
        if !ct.is_empty() {
            return ct == "application/pdf";
        }
        self.at.name().to_ascii_lowercase().ends_with(".pdf")
    }
}

/// The venue, from the first of these fields an item has (journals,
/// proceedings, books, sites, theses).
const VENUE_FIELDS: &[&str] = &[
    "publicationTitle",
    "proceedingsTitle",
    "bookTitle",
    "conferenceName",
    "websiteTitle",
    "blogTitle",
    "forumTitle",
    "repository",
    "university",
    "institution",
];

/// The year a Zotero date names: Zotero stores `2021-07-15 July 15, 2021`
/// (its SQL form, then what the user typed); an export holds only the
/// latter. The first four-digit run that reads as a plausible year.
pub(crate) fn year_of(date: &str) -> Option<i64> {
    let bytes = date.as_bytes();
    let mut i = 0;
    while i + 4 <= bytes.len() {
        let run = &bytes[i..i + 4];
        let before = i.checked_sub(1).map(|j| bytes[j].is_ascii_digit()).unwrap_or(false);
        let after = bytes.get(i + 4).is_some_and(u8::is_ascii_digit);
        if run.iter().all(u8::is_ascii_digit) && !before && !after {
            let y: i64 = date[i..i + 4].parse().ok()?;
            if (1000..=2999).contains(&y) {
                return Some(y);
            }
        }
        i += 1;
    }
    None
}

/// `DOI: …` and `arXiv: …` lines of Zotero's Extra field (where it keeps
/// a DOI for item types without a DOI field).
fn from_extra(extra: &str, key: &str) -> Option<String> {
    extra.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(key).then(|| v.trim().to_string())
    })
}

/// `|a|b|` as the vault's frontmatter stores tags: one policy for both.
fn tags_value(collections: &[String], tags: &[String]) -> Option<serde_json::Value> {
    let all = collections.iter().chain(tags).map(|t| t.replace('|', "-"));
    let v = crate::ingest::frontmatter::tags_value(all.collect::<Vec<_>>().iter().map(String::as_str));
    (!v.is_null()).then_some(v)
}

/// The item as the add flow takes it, with its PDF found (or why not).
pub(crate) fn to_entry(raw: RawItem, resolver: &Resolver) -> Result<Entry, Skipped> {
    let field = |k: &str| raw.fields.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let title = field("title").map(str::to_string);
    let skip = |reason: String| Skipped {
        key: raw.key.clone(),
        title: title.clone().unwrap_or_default(),
        reason,
    };
    if raw.trashed {
        return Err(skip("it is in Zotero's trash".into()));
    }
    let mut warnings = Vec::new();
    // The first PDF, in the library's order; the others are named.
    let mut pdfs = raw.attachments.iter().filter(|a| a.is_pdf());
    let first = pdfs.next();
    let more = pdfs.count();
    if more > 0 {
        warnings.push(format!(
            "{more} more PDF attachment(s) not imported: the first one, {}, was",
            first.map(|a| a.at.name()).unwrap_or_default()
        ));
    }
    let (pdf, attachment_problem) = match first.map(|a| resolver.resolve(&a.at)) {
        None => (None, None),
        Some(Ok(p)) => (Some(p), None),
        Some(Err(why)) => (None, Some(why)),
    };
    if title.is_none() && pdf.is_none() {
        return Err(skip(match &attachment_problem {
            Some(why) => format!("it has no title, and its PDF cannot be used: {why}"),
            None => "it has no title and no PDF: nothing to add".into(),
        }));
    }

    let chosen: Vec<&Creator> = {
        let named: Vec<&Creator> = raw.creators.iter().filter(|c| c.kind == "author").collect();
        // No creator marked as author (an edited book, an export that does
        // not say): every creator, in order.
        if named.is_empty() {
            raw.creators.iter().collect()
        } else {
            named
        }
    };
    let chosen: Vec<&Creator> = chosen.into_iter().filter(|c| !c.display().is_empty()).collect();
    let authors: Vec<String> = chosen.iter().map(|c| c.display()).collect();
    let extra = field("extra").unwrap_or("");
    let doi = field("DOI")
        .map(str::to_string)
        .or_else(|| from_extra(extra, "DOI"))
        .and_then(|d| crate::ingest::doi::normalise_doi(&d));
    let url = field("url").map(str::to_string);
    let arxiv_id = url
        .as_deref()
        .filter(|u| u.to_ascii_lowercase().contains("arxiv.org/"))
        .and_then(|u| crate::ingest::arxiv::parse_arxiv_url(u).ok())
        .or_else(|| doi.as_deref().and_then(crate::ingest::doi::arxiv_of_doi))
        .or_else(|| from_extra(extra, "arXiv").and_then(|a| crate::ingest::arxiv::parse_arxiv_url(&a).ok()))
        .map(|a| a.id);

    let mut fields = Metadata::new();
    if let Some(y) = field("date").and_then(year_of) {
        fields.insert("year".into(), json!(y));
    }
    if let Some(v) = VENUE_FIELDS.iter().find_map(|k| field(k)) {
        fields.insert("venue".into(), json!(v));
    }
    for (k, zotero) in [
        ("publisher", "publisher"),
        ("volume", "volume"),
        ("issue", "issue"),
        ("pages", "pages"),
    ] {
        if let Some(v) = field(zotero) {
            fields.insert(k.into(), json!(v));
        }
    }
    if !raw.item_type.is_empty() {
        fields.insert("publication_type".into(), json!(raw.item_type));
    }
    if let Some(u) = &url {
        fields.insert("url".into(), json!(u));
    }
    if let Some(a) = arxiv_id {
        fields.insert("arxiv_id".into(), json!(a));
    }
    if !chosen.is_empty() {
        // The shape a DOI record's authors are stored in, which citation
        // keys and BibTeX read the family name from.
        let people: Vec<serde_json::Value> = chosen
            .iter()
            .map(|c| json!({"given": c.first.trim(), "family": c.last.trim()}))
            .collect();
        fields.insert("author_list".into(), json!(people));
    }
    if let Some(key) = &raw.zotero_key {
        fields.insert("zotero_key".into(), json!(key));
    }
    if let Some(library) = raw.zotero_library {
        fields.insert("zotero_library".into(), json!(library));
    }
    if let Some(t) = tags_value(&raw.collections, &raw.tags) {
        fields.insert("tags".into(), t);
    }
    // Kept even when the file is not here (not synced yet, say): the
    // reader's highlights are in the library, not in the file.
    let annotations = first.map(|a| a.annotations.clone()).unwrap_or_default();
    Ok(Entry {
        key: raw.key.clone(),
        item: LibraryItem {
            source: raw.source.clone(),
            pdf,
            title,
            authors,
            doi,
            abstract_text: field("abstractNote").map(str::to_string),
            fields,
            annotations,
            notes: raw.notes.clone(),
        },
        attachment_problem,
        warnings,
    })
}
