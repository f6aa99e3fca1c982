//! A paper from a DOI, a bioRxiv/medRxiv page or a PDF's web address:
//! its metadata and, when an open copy can be found, its PDF.
//!
//! Owns the route for each form:
//! - a DOI: bioRxiv's details API first for `10.1101/…` (bioRxiv, then
//!   medRxiv; a journal under that prefix falls through), else Crossref's
//!   `/works/{doi}`; then the PDF from Unpaywall's open-access locations
//!   (only with `[papers] contact_email`, which its terms require) and the
//!   links the publisher declares as PDF, each kept only if it really is a
//!   PDF (`%PDF-` magic, not declared as HTML); none → metadata and
//!   abstract, with a warning saying why;
//! - a preprint page: the details API for its DOI, the PDF from the page's
//!   own site (`/content/{doi}v{N}.full.pdf`), else Unpaywall;
//! - any other address: it must serve a PDF.
//!
//! An arXiv copy Unpaywall knows of is fetched through the arXiv client,
//! which keeps arXiv's own courtesy rules, and its id is remembered so the
//! same paper added later by arXiv id is recognised.
//! Must not: write to the knowledge base or convert PDFs.

use serde_json::{json, Value};

use super::arxiv::{ArxivClient, ArxivError, ArxivId, ArxivPaper};
use super::doi::{Remote, Server, PREPRINT_PREFIX};
use super::metadata::PdfMetadata;
use super::scholarly::{parse_crossref, parse_preprint, parse_unpaywall, WorkMeta};
use super::web::{encode, valid_email, Response, WebClient, WebError, MAX_JSON_BYTES, MAX_PDF_BYTES};
use crate::cancel::Cancel;
use crate::store::Metadata;

/// PDF candidates tried per paper at most.
const MAX_PDF_TRIES: usize = 4;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    #[error("no paper has the DOI {doi}: {service} does not know it — check the DOI (typos are common), or add the PDF itself")]
    UnknownDoi { doi: String, service: &'static str },
    #[error("{url} did not serve a PDF ({what}) — give the address of the PDF itself, or the paper's DOI")]
    NotPdf { url: String, what: String },
    #[error("{service} answered HTTP {status} for {what} — try again later")]
    Refused {
        service: &'static str,
        status: u16,
        what: String,
    },
    #[error("{service} sent an answer Jarvis cannot read for {what}: {reason}")]
    BadAnswer {
        service: &'static str,
        what: String,
        reason: String,
    },
    #[error(transparent)]
    Web(#[from] WebError),
    #[error(transparent)]
    Arxiv(#[from] ArxivError),
}

impl RemoteError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            RemoteError::UnknownDoi { .. } => ErrorKind::NotFound,
            RemoteError::NotPdf { .. } => ErrorKind::User,
            RemoteError::Refused { .. } | RemoteError::BadAnswer { .. } => ErrorKind::Unavailable,
            RemoteError::Web(e) => e.kind(),
            RemoteError::Arxiv(e) => e.kind(),
        }
    }
}

/// The services' addresses (settings, so tests point them at loopback).
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    pub crossref_base: String,
    pub unpaywall_base: String,
    pub biorxiv_base: String,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        RemoteSettings {
            crossref_base: "https://api.crossref.org".into(),
            unpaywall_base: "https://api.unpaywall.org".into(),
            biorxiv_base: "https://api.biorxiv.org".into(),
        }
    }
}

/// What adding by DOI or URL needs: the polite client and where to ask.
pub struct RemoteSources {
    pub web: WebClient,
    pub settings: RemoteSettings,
}

/// What was found.
#[derive(Debug, Default)]
pub struct Found {
    /// The knowledge-base key: `https://doi.org/<doi>`, or the URL.
    pub source: String,
    /// A file-like name for PDF messages.
    pub name: String,
    pub work: Option<WorkMeta>,
    pub pdf: Option<Vec<u8>>,
    /// Where the PDF came from.
    pub pdf_url: Option<String>,
    /// An arXiv copy of the same paper (without version).
    pub arxiv: Option<ArxivId>,
    pub warnings: Vec<String>,
}

/// `https://doi.org/<doi>`: one source per DOI whatever route found it.
pub fn doi_source(doi: &str) -> String {
    format!("https://doi.org/{doi}")
}

impl RemoteSources {
    pub fn fetch(&self, arxiv: &ArxivClient, remote: &Remote, cancel: &Cancel) -> Result<Found, RemoteError> {
        match remote {
            Remote::Doi(doi) => self.by_doi(arxiv, doi, cancel),
            Remote::Preprint {
                doi,
                server,
                origin,
                version,
            } => self.preprint_page(arxiv, doi, *server, origin, *version, cancel),
            Remote::Url(url) => self.pdf_url(url, cancel),
        }
    }

    fn json(
        &self,
        service: &'static str,
        what: &str,
        url: &str,
        cancel: &Cancel,
    ) -> Result<Option<Value>, RemoteError> {
        let r = self.web.get(url, "application/json", MAX_JSON_BYTES, cancel)?;
        match r.status {
            200 => serde_json::from_slice(&r.body)
                .map(Some)
                .map_err(|e| RemoteError::BadAnswer {
                    service,
                    what: what.to_string(),
                    reason: format!("not JSON ({e})"),
                }),
            404 | 410 => Ok(None),
            status => Err(RemoteError::Refused {
                service,
                status,
                what: what.to_string(),
            }),
        }
    }

    fn crossref(&self, doi: &str, cancel: &Cancel) -> Result<Option<WorkMeta>, RemoteError> {
        let url = format!(
            "{}/works/{}",
            self.settings.crossref_base.trim_end_matches('/'),
            encode(doi, true)
        );
        let Some(v) = self.json("Crossref", doi, &url, cancel)? else {
            return Ok(None);
        };
        parse_crossref(&v).map(Some).ok_or_else(|| RemoteError::BadAnswer {
            service: "Crossref",
            what: doi.to_string(),
            reason: "the work has no DOI field".into(),
        })
    }

    /// The details API's newest version of a preprint, or None.
    fn preprint_meta(
        &self,
        server: Server,
        doi: &str,
        cancel: &Cancel,
    ) -> Result<Option<(WorkMeta, u32)>, RemoteError> {
        let url = format!(
            "{}/details/{}/{}/na/json",
            self.settings.biorxiv_base.trim_end_matches('/'),
            server.api_name(),
            encode(doi, true)
        );
        let Some(v) = self.json(server.label(), doi, &url, cancel)? else {
            return Ok(None);
        };
        Ok(parse_preprint(&v, server.label()))
    }

    fn contact(&self) -> Option<&str> {
        self.web.settings().contact_email.as_deref().filter(|e| valid_email(e))
    }

    /// Unpaywall's record, or a warning saying why there is none.
    fn unpaywall(&self, doi: &str, cancel: &Cancel, warnings: &mut Vec<String>) -> Option<super::scholarly::OaRecord> {
        let Some(email) = self.contact() else {
            warnings.push(
                "no open-access PDF lookup: Unpaywall's terms require your e-mail — set it with `jarvis config set papers.contact_email you@example.org`"
                    .into(),
            );
            return None;
        };
        let url = format!(
            "{}/v2/{}?email={}",
            self.settings.unpaywall_base.trim_end_matches('/'),
            encode(doi, true),
            encode(email, false)
        );
        match self.json("Unpaywall", doi, &url, cancel) {
            Ok(Some(v)) => Some(parse_unpaywall(&v)),
            Ok(None) => {
                warnings.push(format!(
                    "Unpaywall does not know {doi}, so no open-access copy was looked for"
                ));
                None
            }
            Err(RemoteError::Web(WebError::Cancelled)) => None,
            Err(e) => {
                warnings.push(format!("open-access lookup failed: {e}"));
                None
            }
        }
    }

    /// The first candidate that really is a PDF; each refusal is noted.
    fn first_pdf(
        &self,
        candidates: &[String],
        cancel: &Cancel,
        tried: &mut Vec<String>,
    ) -> Result<Option<(String, Vec<u8>)>, RemoteError> {
        for url in candidates.iter().take(MAX_PDF_TRIES) {
            match self.web.get(url, "application/pdf", MAX_PDF_BYTES, cancel) {
                Ok(r) if r.is_pdf() => return Ok(Some((url.clone(), r.body))),
                Ok(r) => tried.push(format!("{url}: {}", r.describe())),
                Err(WebError::Cancelled) => return Err(WebError::Cancelled.into()),
                Err(e) => tried.push(format!("{url}: {e}")),
            }
        }
        Ok(None)
    }

    /// The PDF from `candidates`, else the arXiv copy; a warning otherwise.
    fn locate_pdf(
        &self,
        arxiv: &ArxivClient,
        found: &mut Found,
        candidates: Vec<String>,
        cancel: &Cancel,
    ) -> Result<(), RemoteError> {
        let mut tried = Vec::new();
        // arXiv's copies go through its own client and its courtesy rules.
        let (on_arxiv, elsewhere): (Vec<String>, Vec<String>) = candidates
            .into_iter()
            .partition(|u| super::web::host_of(u).is_some_and(|h| h.ends_with("arxiv.org")));
        if let Some((url, bytes)) = self.first_pdf(&elsewhere, cancel, &mut tried)? {
            found.pdf_url = Some(url);
            found.pdf = Some(bytes);
            return Ok(());
        }
        let arxiv_id = found.arxiv.clone().or_else(|| {
            on_arxiv
                .iter()
                .find_map(|u| super::arxiv::parse_arxiv_url(u).ok())
                .map(|mut a| {
                    a.version = None;
                    a
                })
        });
        if let Some(id) = arxiv_id {
            match arxiv.download_pdf(&id) {
                Ok(bytes) => {
                    found.pdf_url = Some(format!(
                        "{}/pdf/{}",
                        arxiv.settings().pdf_base.trim_end_matches('/'),
                        id.id
                    ));
                    found.pdf = Some(bytes);
                    found.arxiv = Some(id);
                    return Ok(());
                }
                Err(e) => tried.push(format!("arXiv {}: {e}", id.id)),
            }
            found.arxiv = Some(id);
        }
        if cancel.is_cancelled() {
            return Err(WebError::Cancelled.into());
        }
        let why = if tried.is_empty() {
            "no open-access copy is known".to_string()
        } else {
            format!("no copy served a PDF ({})", tried.join("; "))
        };
        found.warnings.push(format!(
            "{why} — added the metadata and abstract only; add the PDF itself later to replace them"
        ));
        Ok(())
    }

    fn by_doi(&self, arxiv: &ArxivClient, doi: &str, cancel: &Cancel) -> Result<Found, RemoteError> {
        let mut found = Found {
            source: doi_source(doi),
            name: format!("doi:{doi}"),
            ..Found::default()
        };
        // A bioRxiv/medRxiv DOI: the preprint server knows it best.
        if doi.starts_with(PREPRINT_PREFIX) {
            for server in [Server::Biorxiv, Server::Medrxiv] {
                if let Some((work, _)) = self.preprint_meta(server, doi, cancel)? {
                    found.work = Some(work);
                    break;
                }
            }
        }
        if found.work.is_none() {
            found.work = Some(self.crossref(doi, cancel)?.ok_or_else(|| RemoteError::UnknownDoi {
                doi: doi.to_string(),
                service: if doi.starts_with(PREPRINT_PREFIX) {
                    "bioRxiv, medRxiv nor Crossref"
                } else {
                    "Crossref"
                },
            })?);
        }
        let mut candidates = Vec::new();
        if let Some(oa) = self.unpaywall(doi, cancel, &mut found.warnings) {
            candidates.extend(oa.pdf_urls);
            found.arxiv = oa.arxiv;
        }
        for link in found.work.as_ref().map(|w| w.pdf_links.clone()).unwrap_or_default() {
            if !candidates.contains(&link) {
                candidates.push(link);
            }
        }
        self.locate_pdf(arxiv, &mut found, candidates, cancel)?;
        if found.pdf.is_some() {
            found.warnings.retain(|w| !w.starts_with("no open-access PDF lookup"));
        }
        Ok(found)
    }

    fn preprint_page(
        &self,
        arxiv: &ArxivClient,
        doi: &str,
        server: Server,
        origin: &str,
        version: Option<u32>,
        cancel: &Cancel,
    ) -> Result<Found, RemoteError> {
        let (work, newest) = self
            .preprint_meta(server, doi, cancel)?
            .ok_or_else(|| RemoteError::UnknownDoi {
                doi: doi.to_string(),
                service: server.label(),
            })?;
        let mut found = Found {
            source: doi_source(doi),
            name: format!("{}:{doi}", server.api_name()),
            work: Some(work),
            ..Found::default()
        };
        let version = version.unwrap_or(newest);
        let page_pdf = format!("{origin}/content/{doi}v{version}.full.pdf");
        let mut tried = Vec::new();
        if let Some((url, bytes)) = self.first_pdf(&[page_pdf], cancel, &mut tried)? {
            found.pdf_url = Some(url);
            found.pdf = Some(bytes);
            return Ok(found);
        }
        let mut candidates = Vec::new();
        if let Some(oa) = self.unpaywall(doi, cancel, &mut found.warnings) {
            candidates.extend(oa.pdf_urls);
            found.arxiv = oa.arxiv;
        }
        self.locate_pdf(arxiv, &mut found, candidates, cancel)?;
        if found.pdf.is_none() {
            found.warnings.insert(
                0,
                format!("{} did not serve its PDF ({})", server.label(), tried.join("; ")),
            );
        }
        Ok(found)
    }

    fn pdf_url(&self, url: &str, cancel: &Cancel) -> Result<Found, RemoteError> {
        let r: Response = self.web.get(url, "application/pdf, */*;q=0.5", MAX_PDF_BYTES, cancel)?;
        if !r.is_pdf() {
            return Err(RemoteError::NotPdf {
                url: url.to_string(),
                what: r.describe(),
            });
        }
        let source = url.split('#').next().unwrap_or(url).to_string();
        let name = source
            .rsplit('/')
            .find(|s| !s.is_empty())
            .map(|s| s.split('?').next().unwrap_or(s).to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "download.pdf".into());
        Ok(Found {
            source,
            name,
            pdf_url: Some(url.to_string()),
            pdf: Some(r.body),
            ..Found::default()
        })
    }
}

impl Found {
    /// Title, authors and DOI for the add flow, the abstract, and the
    /// bibliographic fields stored with every chunk (`extra`).
    pub fn record(&self, extra: &mut Metadata) -> (PdfMetadata, Option<String>) {
        if let Some(a) = &self.arxiv {
            extra.insert("arxiv_id".into(), json!(a.id));
        }
        if let Some(u) = &self.pdf_url {
            extra.insert("pdf_url".into(), json!(u));
        }
        let Some(w) = &self.work else {
            return (PdfMetadata::default(), None);
        };
        work_fields(w, extra);
        (
            PdfMetadata {
                title: Some(w.title.clone()).filter(|t| !t.is_empty()),
                authors: Some(w.authors_line()).filter(|a| !a.is_empty()),
                doi: Some(w.doi.clone()).filter(|d| !d.is_empty()),
            },
            w.abstract_text.clone(),
        )
    }
}

/// The bibliographic fields of a work, as chunk metadata.
pub fn work_fields(w: &WorkMeta, extra: &mut Metadata) {
    if let Some(y) = w.year {
        extra.insert("year".into(), json!(y));
    }
    let strings = [
        ("venue", &w.venue),
        ("publication_type", &w.kind),
        ("publisher", &w.publisher),
        ("volume", &w.volume),
        ("issue", &w.issue),
        ("pages", &w.pages),
    ];
    for (k, v) in strings {
        if let Some(v) = v {
            extra.insert(k.into(), json!(v));
        }
    }
    if !w.authors.is_empty() {
        extra.insert("author_list".into(), json!(w.authors));
    }
}

/// What an arXiv paper adds: its id without version, the year of its
/// first version and arXiv as the venue.
pub fn arxiv_fields(paper: &ArxivPaper, extra: &mut Metadata) {
    let id = super::arxiv::parse_arxiv_url(&paper.id)
        .map(|a| a.id)
        .unwrap_or_else(|_| paper.id.clone());
    if !id.is_empty() {
        extra.insert("arxiv_id".into(), json!(id));
    }
    if let Some(y) = paper
        .published
        .as_deref()
        .and_then(|p| p.get(..4))
        .and_then(|y| y.parse::<i32>().ok())
    {
        extra.insert("year".into(), json!(y));
    }
    extra.insert("venue".into(), json!("arXiv"));
}

/// The entry for a paper whose PDF could not be had: a header line and
/// its abstract (or, with no abstract either, a line saying so).
pub fn abstract_body(title: &str, authors: &str, extra: &Metadata, abstract_text: Option<&str>) -> String {
    let mut cite = vec![title.to_string()];
    if !authors.is_empty() {
        cite.push(authors.to_string());
    }
    let venue = extra.get("venue").and_then(|v| v.as_str());
    match (venue, extra.get("year").and_then(|v| v.as_i64())) {
        (Some(v), Some(y)) => cite.push(format!("{v} ({y})")),
        (Some(v), None) => cite.push(v.to_string()),
        (None, Some(y)) => cite.push(y.to_string()),
        (None, None) => {}
    }
    let mut out = format!("{}.\n\n", cite.join(". "));
    match abstract_text.map(str::trim).filter(|a| !a.is_empty()) {
        Some(a) => {
            out.push_str("Abstract: ");
            out.push_str(a);
        }
        None => {
            out.push_str("No abstract or PDF is available for this paper; only its bibliographic record is stored.")
        }
    }
    out
}
