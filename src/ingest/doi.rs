//! Recognising what a user pasted when it is not a local file or an arXiv
//! id: a DOI in any of its written forms, a bioRxiv/medRxiv page, or any
//! other web address (which must then serve a PDF).
//!
//! Owns: DOI normalisation (prefixes, percent-escapes, trailing
//! punctuation, case — DOIs are case-insensitive, so they are compared and
//! stored lower-cased), the preprint-page pattern (`…/content/10.1101/…`)
//! and arXiv's own DataCite DOIs (`10.48550/arXiv.<id>`), which are routed
//! to the arXiv client.
//! Must not: fetch anything.

use super::arxiv::{parse_arxiv_url, ArxivId};

/// bioRxiv and medRxiv share the DOI prefix and the API, not the server name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Biorxiv,
    Medrxiv,
}

impl Server {
    /// The name the details API takes (`/details/{server}/{doi}`).
    pub fn api_name(self) -> &'static str {
        match self {
            Server::Biorxiv => "biorxiv",
            Server::Medrxiv => "medrxiv",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Server::Biorxiv => "bioRxiv",
            Server::Medrxiv => "medRxiv",
        }
    }
}

/// A remote paper, as recognised from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remote {
    /// A DOI, normalised (lower case, no prefix).
    Doi(String),
    /// A bioRxiv/medRxiv page; `origin` is the page's `scheme://host`,
    /// where its PDF lives.
    Preprint {
        doi: String,
        server: Server,
        origin: String,
        version: Option<u32>,
    },
    /// Any other http(s) address: it must serve a PDF.
    Url(String),
}

impl Remote {
    /// How the paper is named to a person: its DOI address, its preprint
    /// page's DOI on its server, or the address as given.
    pub fn label(&self) -> String {
        match self {
            Remote::Doi(d) => format!("https://doi.org/{d}"),
            Remote::Preprint { doi, server, .. } => format!("{} {doi}", server.label()),
            Remote::Url(u) => u.clone(),
        }
    }
}

/// The bioRxiv/medRxiv DOI prefix.
pub const PREPRINT_PREFIX: &str = "10.1101/";

/// Recognise `s` as a remote paper; `None` for anything that is neither a
/// DOI nor an http(s) URL.
pub fn parse_remote(s: &str) -> Option<Remote> {
    let s = s.trim();
    if let Some(p) = parse_preprint_page(s) {
        return Some(p);
    }
    if let Some(d) = normalise_doi(s) {
        return Some(Remote::Doi(d));
    }
    let lower = s.to_ascii_lowercase();
    if (lower.starts_with("https://") || lower.starts_with("http://"))
        && super::web::host_of(s).is_some()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Some(Remote::Url(s.to_string()));
    }
    None
}

/// arXiv's own DOI (`10.48550/arXiv.2301.01234`) as an arXiv id.
pub fn arxiv_of_doi(doi: &str) -> Option<ArxivId> {
    let rest = doi.to_ascii_lowercase();
    let rest = rest.strip_prefix("10.48550/arxiv.")?;
    parse_arxiv_url(rest).ok()
}

/// A DOI in any written form — `10.1038/x`, `doi:10.1038/x`,
/// `https://doi.org/10.1038/x`, `http://dx.doi.org/10.1038%2Fx` — as
/// `10.1038/x` in lower case; `None` when `s` is not one.
pub fn normalise_doi(s: &str) -> Option<String> {
    let mut d = s.trim();
    let lower = d.to_ascii_lowercase();
    for prefix in [
        "https://doi.org/",
        "http://doi.org/",
        "https://dx.doi.org/",
        "http://dx.doi.org/",
        "https://www.doi.org/",
        "doi.org/",
        "doi:",
        "doi: ",
    ] {
        if lower.starts_with(prefix) {
            d = d[prefix.len()..].trim_start();
            break;
        }
    }
    let d = percent_decode(d.split(['?', '#']).next().unwrap_or(d));
    let d = d.trim_end_matches(['.', ',', ';', ')', ']', '}', '"', '\'']);
    valid_doi(d).then(|| d.to_lowercase())
}

/// A DOI Jarvis will use: `10.<registrant>/<suffix>`, registrant digits
/// (with dots for sub-registrants), printable characters only, no spaces,
/// quotes or angle brackets, short enough to be a key.
pub fn valid_doi(d: &str) -> bool {
    let Some(rest) = d.strip_prefix("10.") else {
        return false;
    };
    let Some((registrant, suffix)) = rest.split_once('/') else {
        return false;
    };
    !registrant.is_empty()
        && registrant.chars().all(|c| c.is_ascii_digit() || c == '.')
        && registrant.starts_with(|c: char| c.is_ascii_digit())
        && !suffix.is_empty()
        && d.len() <= 300
        && d.chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '"' | '<' | '>' | '\\' | '`'))
}

/// `%2F` → `/`; a malformed escape is kept as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit() {
            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `https://www.biorxiv.org/content/10.1101/2020.09.09.123456v2.full.pdf`
/// and its siblings (`.full`, `.abstract`, no version, a medRxiv host).
fn parse_preprint_page(s: &str) -> Option<Remote> {
    let lower = s.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        return None;
    }
    let host = super::web::host_of(s)?;
    let scheme_end = s.find("://")? + 3;
    let origin = format!("{}{}", &s[..scheme_end].to_ascii_lowercase(), host);
    let path = &s[scheme_end..];
    let path = &path[path.find('/')?..];
    let rest = path.strip_prefix("/content/")?;
    if !rest.starts_with(PREPRINT_PREFIX) {
        return None;
    }
    let tail = &rest[PREPRINT_PREFIX.len()..];
    let mut id = tail.split(['?', '#', '/']).next()?.to_string();
    for ext in [
        ".full.pdf+html",
        ".full.pdf",
        ".full-text",
        ".full",
        ".abstract",
        ".article-info",
        ".article-metrics",
        ".supplementary-material",
        ".pdf",
    ] {
        if let Some(stripped) = id.strip_suffix(ext) {
            id = stripped.to_string();
            break;
        }
    }
    let mut version = None;
    if let Some(i) = id.rfind('v') {
        let digits = &id[i + 1..];
        if i > 0 && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
            version = digits.parse().ok();
            id.truncate(i);
        }
    }
    let doi = format!("{PREPRINT_PREFIX}{id}").to_lowercase();
    if !valid_doi(&doi) || !id.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let server = if host.contains("medrxiv") {
        Server::Medrxiv
    } else {
        Server::Biorxiv
    };
    Some(Remote::Preprint {
        doi,
        server,
        origin,
        version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dois_in_every_written_form() {
        for s in [
            "10.1038/s41586-021-03819-2",
            "doi:10.1038/S41586-021-03819-2",
            "https://doi.org/10.1038/s41586-021-03819-2",
            "http://dx.doi.org/10.1038%2Fs41586-021-03819-2",
            " https://doi.org/10.1038/s41586-021-03819-2. ",
        ] {
            assert_eq!(
                parse_remote(s),
                Some(Remote::Doi("10.1038/s41586-021-03819-2".into())),
                "{s}"
            );
        }
        assert_eq!(normalise_doi("10.1000.10/abc"), Some("10.1000.10/abc".into()));
        for bad in [
            "10.1038",
            "10./x",
            "11.1038/x",
            "10.1038/",
            "10.1038/a b",
            "10.12/<script>",
        ] {
            assert_eq!(normalise_doi(bad), None, "{bad}");
        }
    }

    #[test]
    fn preprint_pages_give_doi_server_origin_and_version() {
        let r = parse_remote("https://www.biorxiv.org/content/10.1101/2020.09.09.123456v2.full.pdf").unwrap();
        assert_eq!(
            r,
            Remote::Preprint {
                doi: "10.1101/2020.09.09.123456".into(),
                server: Server::Biorxiv,
                origin: "https://www.biorxiv.org".into(),
                version: Some(2),
            }
        );
        let r = parse_remote("https://www.medrxiv.org/content/10.1101/2021.01.02.21249135v1?versioned=true").unwrap();
        assert!(
            matches!(
                r,
                Remote::Preprint {
                    server: Server::Medrxiv,
                    version: Some(1),
                    ..
                }
            ),
            "{r:?}"
        );
        let r = parse_remote("http://127.0.0.1:4000/content/10.1101/123456").unwrap();
        assert!(
            matches!(&r, Remote::Preprint { doi, origin, version: None, .. } if doi == "10.1101/123456" && origin == "http://127.0.0.1:4000"),
            "{r:?}"
        );
        // A bioRxiv DOI typed as a DOI stays a DOI (the API is asked first).
        assert_eq!(
            parse_remote("10.1101/2020.09.09.123456"),
            Some(Remote::Doi("10.1101/2020.09.09.123456".into()))
        );
    }

    #[test]
    fn other_addresses_are_urls_and_arxiv_dois_are_arxiv() {
        assert_eq!(
            parse_remote("https://example.org/paper.pdf"),
            Some(Remote::Url("https://example.org/paper.pdf".into()))
        );
        assert_eq!(parse_remote("not a thing"), None);
        assert_eq!(parse_remote("https://exa mple.org/x"), None);
        assert_eq!(
            arxiv_of_doi("10.48550/arXiv.1706.03762").map(|a| a.id),
            Some("1706.03762".into())
        );
        assert_eq!(arxiv_of_doi("10.1038/x"), None);
    }
}
