//! New papers in one arXiv category, newest first, through the shared
//! [`ArxivClient`] (its process-wide courtesy gap and backoff).
//!
//! The failure modes other digest tools hit are handled here: an empty
//! feed answered with 200 is transient and retried (a category listing is
//! never empty); arXiv's error feed (one entry whose id is an
//! `/api/errors#…` URL) is a failure, not a paper; a window with nothing in
//! it (weekends, holidays) is *quiet*, never an error; the PDF link is the
//! href containing `/pdf/` (the `title="pdf"` attribute went away); ids
//! are canonical without `vN`, legacy ids (`hep-ex/0307015v1`) included.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use time::OffsetDateTime;

use super::{Candidate, Origin, SourceOutcome, SourceStatus};
use crate::cancel::Cancel;
use crate::ingest::arxiv::{parse_arxiv_url, ArxivClient, ArxivError, Attempt};

/// Entries per request (arXiv's own client uses 100).
pub const PAGE: usize = 100;

/// One `<entry>` of a query feed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedEntry {
    /// The `<id>` URL as given (versioned).
    pub id_url: String,
    pub title: String,
    pub summary: String,
    pub authors: Vec<String>,
    /// First version's date (RFC 3339).
    pub published: String,
    pub primary_category: Option<String>,
    pub pdf_url: Option<String>,
}

/// A parsed feed page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedPage {
    pub entries: Vec<FeedEntry>,
    pub total: Option<usize>,
}

fn attr(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

/// Every entry of an arXiv Atom feed. The error feed is an `Err` with
/// arXiv's own message.
pub fn parse_page(xml: &str) -> Result<FeedPage, String> {
    let mut r = Reader::from_str(xml);
    r.config_mut().trim_text(true);
    let mut page = FeedPage::default();
    let mut path: Vec<String> = Vec::new();
    let mut cur: Option<FeedEntry> = None;
    let mut text = String::new();
    let on_element = |e: &BytesStart<'_>, cur: &mut Option<FeedEntry>| {
        let name = e.local_name();
        let Some(entry) = cur.as_mut() else { return };
        match name.as_ref() {
            b"primary_category" => entry.primary_category = attr(e, b"term"),
            b"link" => {
                let href = attr(e, b"href").unwrap_or_default();
                let titled_pdf = attr(e, b"title").as_deref() == Some("pdf");
                let pdf_type = attr(e, b"type").as_deref() == Some("application/pdf");
                if (href.contains("/pdf/") || titled_pdf || pdf_type) && entry.pdf_url.is_none() {
                    entry.pdf_url = Some(href);
                }
            }
            _ => {}
        }
    };
    loop {
        match r.read_event().map_err(|e| format!("the feed is not valid XML: {e}"))? {
            Event::Eof => break,
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name == "entry" {
                    cur = Some(FeedEntry::default());
                }
                on_element(&e, &mut cur);
                path.push(name);
                text.clear();
            }
            Event::Empty(e) => on_element(&e, &mut cur),
            Event::Text(t) => text.push_str(&t.unescape().map_err(|e| e.to_string())?),
            Event::CData(t) => text.push_str(&String::from_utf8_lossy(&t)),
            Event::End(_) => {
                let name = path.pop().unwrap_or_default();
                let parent = path.last().map(String::as_str);
                let value = text.split_whitespace().collect::<Vec<_>>().join(" ");
                match (&mut cur, name.as_str(), parent) {
                    (_, "totalResults", Some("feed")) => page.total = value.parse().ok(),
                    (Some(e), "id", Some("entry")) => e.id_url = value,
                    (Some(e), "title", Some("entry")) => e.title = value,
                    (Some(e), "summary", Some("entry")) => e.summary = value,
                    (Some(e), "published", Some("entry")) => e.published = value,
                    (Some(e), "name", Some("author")) => e.authors.push(value),
                    (Some(_), "entry", _) => {
                        if let Some(e) = cur.take() {
                            if e.id_url.contains("/api/errors") {
                                return Err(format!("arXiv reports an error: {}", e.summary));
                            }
                            page.entries.push(e);
                        }
                    }
                    _ => {}
                }
                text.clear();
            }
            _ => {}
        }
    }
    Ok(page)
}

/// The candidate for a feed entry, `None` when its id is not an arXiv id.
pub fn to_candidate(e: &FeedEntry, via: &str) -> Option<Candidate> {
    let id = parse_arxiv_url(&e.id_url).ok()?;
    let pdf_url = e
        .pdf_url
        .clone()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"));
    Some(Candidate {
        key: format!("arxiv:{}", id.id.to_lowercase()),
        link: id.abs_url(),
        title: e.title.clone(),
        authors: e.authors.clone(),
        abstract_text: e.summary.clone(),
        date: e.published.get(..10).unwrap_or_default().to_string(),
        origin: Origin::Arxiv {
            id: id.id,
            primary_category: e.primary_category.clone(),
            pdf_url,
        },
        via: via.to_string(),
    })
}

/// A category name safe to put in a query (`cs.LG`, `q-bio.QM`, `hep-ex`).
pub fn valid_category(cat: &str) -> bool {
    !cat.is_empty() && cat.len() <= 32 && cat.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// Papers first submitted since `since` in `cat`, at most `cap`, newest
/// first, and how the category fared. Never fails the run: a failure is
/// the outcome's status.
pub fn fetch_category(
    client: &ArxivClient,
    cat: &str,
    cap: usize,
    since: OffsetDateTime,
    cancel: &Cancel,
) -> (Vec<Candidate>, SourceOutcome) {
    let name = format!("arXiv {cat}");
    let outcome = |fetched, status| SourceOutcome {
        name: name.clone(),
        fetched,
        status,
    };
    if !valid_category(cat) {
        return (
            Vec::new(),
            outcome(
                0,
                SourceStatus::Failed(format!(
                    "{cat:?} is not an arXiv category name (e.g. cs.LG, q-bio.QM) — fix `digest.arxiv_categories`"
                )),
            ),
        );
    }
    let since_s = since
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let base = client.settings().api_base.trim_end_matches('/').to_string();
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut newest_seen = 0usize;
    loop {
        if cancel.is_cancelled() {
            return (out.clone(), outcome(out.len(), SourceStatus::Failed("stopped".into())));
        }
        let n = PAGE.min(cap.saturating_sub(out.len()).max(1));
        let url = format!(
            "{base}/api/query?search_query=cat:{cat}&sortBy=submittedDate&sortOrder=descending&start={start}&max_results={n}"
        );
        let first = start == 0;
        let page = client.request(&format!("{name} listing"), &url, |r| match r {
            Err(e) => Attempt::Retry(e),
            Ok((s, _)) if s == 429 || s >= 500 => Attempt::Retry(format!("HTTP {s}")),
            Ok((s, _)) if s != 200 => Attempt::Fail(ArxivError::Rejected {
                what: format!("{name} listing"),
                status: s,
            }),
            Ok((_, body)) => match parse_page(&String::from_utf8_lossy(&body)) {
                // A listing is never empty: an empty page here is arXiv's
                // known transient failure, so try again.
                Ok(p) if p.entries.is_empty() && first => {
                    Attempt::Retry("the API returned an empty feed (a known transient arXiv failure)".into())
                }
                Ok(p) => Attempt::Done(p),
                Err(reason) => Attempt::Fail(ArxivError::BadFeed {
                    id: name.clone(),
                    reason,
                }),
            },
        });
        let page = match page {
            Ok(p) => p,
            Err(e) if out.is_empty() => return (Vec::new(), outcome(0, SourceStatus::Failed(e.to_string()))),
            Err(e) => {
                // Later pages failing: keep what was read, say so.
                tracing::warn!(category = cat, error = %e, "arXiv paging stopped early");
                let n = out.len();
                return (
                    out,
                    outcome(n, SourceStatus::Failed(format!("stopped after {n} papers: {e}"))),
                );
            }
        };
        let got = page.entries.len();
        let mut older = false;
        for e in &page.entries {
            newest_seen += 1;
            // `published` is RFC 3339, so text order is time order.
            if !e.published.is_empty() && e.published.as_str() < since_s.as_str() {
                older = true;
                break;
            }
            if let Some(c) = to_candidate(e, &name) {
                out.push(c);
            }
            if out.len() >= cap {
                break;
            }
        }
        if older || out.len() >= cap || got < n || got == 0 {
            break;
        }
        start += got;
    }
    let fetched = out.len();
    let status = if fetched == 0 && newest_seen > 0 {
        SourceStatus::Quiet(format!("nothing submitted since {}", super::state::day(since)))
    } else {
        SourceStatus::Ok
    };
    (out, outcome(fetched, status))
}
