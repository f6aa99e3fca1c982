//! arXiv: recognising ids in any URL form, fetching a paper's metadata from
//! the arXiv API (Atom) and its PDF.
//!
//! Owns: `parse_arxiv_url`, the Atom parsing, and the fetch policy: a
//! courtesy delay between requests (arXiv's terms ask for 3 s), retries with
//! exponential backoff and jitter, and — the bug the earlier product shipped
//! with — an empty feed answered with HTTP 200 treated as a transient
//! failure and retried, never as "no such paper" on the first try.
//! Must not: write to the knowledge base or convert PDFs. Base URLs come
//! from config so tests point them at a fake server on loopback.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use quick_xml::events::Event;
use quick_xml::Reader;
use rand::Rng;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArxivError {
    #[error("{0:?} is not an arXiv id or URL — use e.g. 2301.01234, arXiv:2301.01234v2, https://arxiv.org/abs/2301.01234 or hep-ex/0307015")]
    NotAnId(String),
    #[error("arXiv has no paper {0} (the API returned no entry after {1} attempts)")]
    NotFound(String, u32),
    #[error("arXiv request for {what} failed after {attempts} attempts: {reason} — check your connection or try again later")]
    Fetch {
        what: String,
        attempts: u32,
        reason: String,
    },
    /// A definite answer, not a network failure: retrying or checking the
    /// connection would not help, so the message says what would.
    #[error("arXiv answered HTTP {status} for the {what} — {}", rejected_hint(*.status))]
    Rejected { what: String, status: u16 },
    #[error("arXiv returned something that is not a PDF for {0}")]
    NotPdf(String),
    #[error("arXiv's feed for {id} could not be read: {reason}")]
    BadFeed { id: String, reason: String },
}

fn rejected_hint(status: u16) -> &'static str {
    match status {
        404 | 410 => "arXiv has nothing there (a withdrawn paper, one not published yet, or a mistyped id or category); check it, or try again later",
        403 => "arXiv is refusing this client for now; wait an hour before trying again",
        _ => "arXiv refused the request; check the id and try again later",
    }
}

impl ArxivError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            ArxivError::NotAnId(_) => ErrorKind::User,
            ArxivError::NotFound(..) => ErrorKind::NotFound,
            ArxivError::Rejected { status: 404 | 410, .. } => ErrorKind::NotFound,
            ArxivError::Rejected { .. } => ErrorKind::Unavailable,
            ArxivError::Fetch { .. } | ArxivError::NotPdf(_) | ArxivError::BadFeed { .. } => ErrorKind::Unavailable,
        }
    }
}

/// A normalised arXiv identifier: `2301.01234` or `hep-ex/0307015`, with the
/// version kept separately when one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArxivId {
    pub id: String,
    pub version: Option<u32>,
}

impl ArxivId {
    /// `id` plus `vN` when a version was given.
    pub fn versioned(&self) -> String {
        match self.version {
            Some(v) => format!("{}v{v}", self.id),
            None => self.id.clone(),
        }
    }
    /// The canonical abstract URL, used as the paper's `source`.
    pub fn abs_url(&self) -> String {
        format!("https://arxiv.org/abs/{}", self.id)
    }
}

/// Recognise an arXiv id in any of the forms people paste.
pub fn parse_arxiv_url(input: &str) -> Result<ArxivId, ArxivError> {
    let bad = || ArxivError::NotAnId(input.to_string());
    let mut s = input.trim();
    for prefix in ["https://", "http://"] {
        s = s.strip_prefix(prefix).unwrap_or(s);
    }
    for host in ["www.arxiv.org/", "export.arxiv.org/", "arxiv.org/"] {
        if let Some(rest) = s.strip_prefix(host) {
            s = rest;
            for kind in ["abs/", "pdf/", "html/", "format/"] {
                s = s.strip_prefix(kind).unwrap_or(s);
            }
        }
    }
    let lower_prefix = s.get(..6).map(|p| p.eq_ignore_ascii_case("arxiv:")).unwrap_or(false);
    if lower_prefix {
        s = &s[6..];
    }
    let s = s.split(['?', '#']).next().unwrap_or(s).trim_end_matches('/');
    let s = s.strip_suffix(".pdf").unwrap_or(s);
    // Split a trailing version.
    let (base, version) = match s.rfind('v') {
        Some(i) if i > 0 && s[i + 1..].chars().all(|c| c.is_ascii_digit()) && i + 1 < s.len() => {
            (&s[..i], s[i + 1..].parse().ok())
        }
        _ => (s, None),
    };
    let new_style = |b: &str| {
        let mut parts = b.split('.');
        let (Some(yymm), Some(num), None) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        yymm.len() == 4
            && yymm.chars().all(|c| c.is_ascii_digit())
            && (4..=5).contains(&num.len())
            && num.chars().all(|c| c.is_ascii_digit())
    };
    let old_style = |b: &str| {
        let Some((archive, num)) = b.split_once('/') else {
            return false;
        };
        !archive.is_empty()
            && archive
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-' || c == '.' || c.is_ascii_uppercase())
            && num.len() == 7
            && num.chars().all(|c| c.is_ascii_digit())
    };
    if new_style(base) || old_style(base) {
        Ok(ArxivId {
            id: base.to_string(),
            version,
        })
    } else {
        Err(bad())
    }
}

/// Metadata from the API.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ArxivPaper {
    pub id: String,
    pub title: String,
    pub authors: Vec<String>,
    pub summary: String,
    pub doi: Option<String>,
    pub primary_category: Option<String>,
    pub published: Option<String>,
}

/// Where and how politely to fetch.
#[derive(Debug, Clone)]
pub struct ArxivSettings {
    /// Base of the API, e.g. `https://export.arxiv.org` (`/api/query` is added).
    pub api_base: String,
    /// Base for PDFs, e.g. `https://arxiv.org` (`/pdf/<id>` is added).
    pub pdf_base: String,
    /// Minimum gap between two requests.
    pub courtesy_delay: Duration,
    pub max_attempts: u32,
    pub backoff: Duration,
    pub timeout: Duration,
}

impl Default for ArxivSettings {
    fn default() -> Self {
        ArxivSettings {
            api_base: "https://export.arxiv.org".into(),
            pdf_base: "https://arxiv.org".into(),
            courtesy_delay: Duration::from_secs(3),
            max_attempts: 4,
            backoff: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
        }
    }
}

/// A client that keeps the courtesy delay. arXiv's terms count every
/// request from the machine together, so the gap is kept across the whole
/// process (every client, every category fetch, a paper add running
/// alongside the digest), and only one request is in flight at a time.
pub struct ArxivClient {
    settings: ArxivSettings,
    agent: ureq::Agent,
}

/// When the last arXiv request of this process finished; held while a
/// request runs, which is what makes it one connection at a time.
static LAST_REQUEST: Mutex<Option<Instant>> = Mutex::new(None);

/// What one try of a request came to.
pub enum Attempt<T> {
    Done(T),
    /// Transient: try again after a backoff (the reason is logged).
    Retry(String),
    Fail(ArxivError),
}

impl ArxivClient {
    pub fn new(settings: ArxivSettings) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(settings.timeout))
            .http_status_as_error(false)
            .build()
            .new_agent();
        ArxivClient { settings, agent }
    }

    pub fn settings(&self) -> &ArxivSettings {
        &self.settings
    }

    /// Run `f` as this process's one arXiv request in flight, at least the
    /// courtesy delay after the previous one finished.
    fn polite<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut last = crate::lock::lock(&LAST_REQUEST);
        if let Some(t) = *last {
            let gap = t.elapsed();
            if gap < self.settings.courtesy_delay {
                std::thread::sleep(self.settings.courtesy_delay - gap);
            }
        }
        let out = f();
        *last = Some(Instant::now());
        out
    }

    fn with_retries<T>(&self, what: &str, mut f: impl FnMut() -> Attempt<T>) -> Result<T, ArxivError> {
        let attempts = self.settings.max_attempts.max(1);
        let mut reason = String::new();
        for attempt in 1..=attempts {
            match self.polite(&mut f) {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry(r) => {
                    tracing::warn!(what, attempt, reason = %r, "arXiv request failed; retrying");
                    reason = r;
                    if attempt < attempts {
                        let base = self.settings.backoff.mul_f64(2f64.powi(attempt as i32 - 1));
                        let jitter: f64 = rand::rng().random_range(0.0..0.25);
                        std::thread::sleep(base.mul_f64(1.0 + jitter));
                    }
                }
            }
        }
        Err(ArxivError::Fetch {
            what: what.to_string(),
            attempts,
            reason,
        })
    }

    /// GET `url` politely, retrying what `classify` calls transient (with
    /// exponential backoff and up to 25% jitter; arXiv's 429/503 carry no
    /// `Retry-After`, so none is looked for). `classify` sees the status and
    /// body, or the connection error.
    pub fn request<T>(
        &self,
        what: &str,
        url: &str,
        mut classify: impl FnMut(Result<(u16, Vec<u8>), String>) -> Attempt<T>,
    ) -> Result<T, ArxivError> {
        self.with_retries(what, || classify(self.get(url)))
    }

    fn get(&self, url: &str) -> Result<(u16, Vec<u8>), String> {
        let resp = self.agent.get(url).call().map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = resp.into_body().read_to_vec().map_err(|e| e.to_string())?;
        Ok((status, body))
    }

    /// The paper's metadata. An empty feed is retried; only after every
    /// attempt came back empty is the paper reported missing.
    pub fn fetch_metadata(&self, id: &ArxivId) -> Result<ArxivPaper, ArxivError> {
        let url = format!(
            "{}/api/query?id_list={}&max_results=1",
            self.settings.api_base.trim_end_matches('/'),
            id.versioned()
        );
        let mut empty_feeds = 0;
        let result = self.with_retries(&format!("metadata of {}", id.id), || match self.get(&url) {
            Err(e) => Attempt::Retry(e),
            Ok((s, _)) if s == 429 || s >= 500 => Attempt::Retry(format!("HTTP {s}")),
            Ok((s, _)) if s != 200 => Attempt::Fail(ArxivError::Rejected {
                what: format!("metadata of {}", id.id),
                status: s,
            }),
            Ok((_, body)) => match parse_feed(&String::from_utf8_lossy(&body)) {
                Ok(Some(p)) => Attempt::Done(p),
                Ok(None) => {
                    empty_feeds += 1;
                    Attempt::Retry("the API returned an empty feed (a known transient arXiv failure)".into())
                }
                Err(reason) => Attempt::Fail(ArxivError::BadFeed {
                    id: id.id.clone(),
                    reason,
                }),
            },
        });
        match result {
            Err(ArxivError::Fetch { attempts, .. }) if empty_feeds == attempts => {
                Err(ArxivError::NotFound(id.versioned(), attempts))
            }
            other => other,
        }
    }

    /// The PDF bytes (checked to start like a PDF).
    pub fn download_pdf(&self, id: &ArxivId) -> Result<Vec<u8>, ArxivError> {
        let url = format!(
            "{}/pdf/{}",
            self.settings.pdf_base.trim_end_matches('/'),
            id.versioned()
        );
        self.with_retries(&format!("PDF of {}", id.id), || match self.get(&url) {
            Err(e) => Attempt::Retry(e),
            Ok((s, _)) if s == 429 || s >= 500 => Attempt::Retry(format!("HTTP {s}")),
            Ok((200, body)) if body.is_empty() => Attempt::Retry("empty response".into()),
            Ok((200, body)) if body.starts_with(b"%PDF") => Attempt::Done(body),
            Ok((200, _)) => Attempt::Fail(ArxivError::NotPdf(id.versioned())),
            Ok((s, _)) => Attempt::Fail(ArxivError::Rejected {
                what: format!("PDF of {}", id.id),
                status: s,
            }),
        })
    }
}

/// The first `<entry>` of an Atom feed, or None for an empty feed. arXiv
/// reports an unknown id as an entry whose `<id>` is the API error URL.
pub fn parse_feed(xml: &str) -> Result<Option<ArxivPaper>, String> {
    let mut r = Reader::from_str(xml);
    r.config_mut().trim_text(true);
    let mut path: Vec<String> = Vec::new();
    let mut paper = ArxivPaper::default();
    let mut in_entry = false;
    let mut seen_entry = false;
    let mut text = String::new();
    loop {
        match r.read_event().map_err(|e| e.to_string())? {
            Event::Eof => break,
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name == "entry" && !seen_entry {
                    in_entry = true;
                    seen_entry = true;
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(e) if in_entry => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                if name == "primary_category" {
                    for a in e.attributes().flatten() {
                        if a.key.local_name().as_ref() == b"term" {
                            paper.primary_category = a.unescape_value().ok().map(|v| v.into_owned());
                        }
                    }
                }
            }
            Event::Text(t) => text.push_str(&t.unescape().map_err(|e| e.to_string())?),
            Event::CData(t) => text.push_str(&String::from_utf8_lossy(&t)),
            Event::End(_) => {
                let name = path.pop().unwrap_or_default();
                let parent = path.last().map(String::as_str);
                let value = text.split_whitespace().collect::<Vec<_>>().join(" ");
                if in_entry {
                    match (name.as_str(), parent) {
                        ("id", Some("entry")) => paper.id = value,
                        ("title", Some("entry")) => paper.title = value,
                        ("summary", Some("entry")) => paper.summary = value,
                        ("published", Some("entry")) => paper.published = Some(value),
                        ("doi", Some("entry")) => paper.doi = Some(value),
                        ("name", Some("author")) => paper.authors.push(value),
                        ("entry", _) => in_entry = false,
                        _ => {}
                    }
                }
                text.clear();
            }
            _ => {}
        }
    }
    if paper.id.contains("/api/errors") {
        return Err(format!("arXiv reports an error: {}", paper.summary));
    }
    if !seen_entry || paper.title.is_empty() {
        return Ok(None);
    }
    Ok(Some(paper))
}

#[cfg(test)]
mod tests;
