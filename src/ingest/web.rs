//! Polite HTTP for adding papers by DOI or URL: Crossref, Unpaywall,
//! bioRxiv's API and whatever host serves a PDF.
//!
//! Owns: the politeness every such request keeps — one request at a time
//! per host across the whole process, at least `host_delay` between two
//! requests to the same host, a User-Agent naming Jarvis and the user's
//! contact address, `Retry-After` honoured on 429/503 (either form, capped
//! by [`MAX_RETRY_WAIT`] so a waiting user hears why instead of waiting an
//! hour), exponential backoff with jitter for transient failures, a cap on
//! the bytes read — and the PDF check: a body is a PDF only when it starts
//! with `%PDF-` and was not declared HTML.
//! Must not: parse any service's answers (callers do) or write anything.
//! arXiv has its own stricter client (`arxiv.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;

use crate::cancel::Cancel;
use crate::llm::error::parse_retry_after;
use crate::llm::retry::{base_delay, jittered, sleep_unless_cancelled, MAX_RETRY_WAIT};

/// The most a JSON answer may weigh.
pub const MAX_JSON_BYTES: u64 = 8 * 1024 * 1024;
/// The most a PDF may weigh.
pub const MAX_PDF_BYTES: u64 = 200 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    #[error("{0:?} is not an http(s) URL")]
    BadUrl(String),
    #[error(
        "{host} could not be reached after {attempts} attempts: {reason} — check your connection or try again later"
    )]
    Unreachable {
        host: String,
        attempts: u32,
        reason: String,
    },
    #[error("{host} is rate limiting Jarvis (HTTP {status}) and asks to wait {wait}s — try again later")]
    RateLimited { host: String, status: u16, wait: u64 },
    #[error("{url} sent more than {limit} bytes; not read")]
    TooLarge { url: String, limit: u64 },
    #[error("stopped; nothing was added")]
    Cancelled,
    #[error(
        "{url} was not fetched: {reason}. A paper on this machine or its network is added as a file: download it and run `jarvis kb add FILE` — or, if you trust every address you add, `jarvis config set papers.allow_local_urls true`"
    )]
    LocalAddress { url: String, reason: String },
}

impl WebError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            WebError::BadUrl(_) | WebError::TooLarge { .. } | WebError::LocalAddress { .. } => ErrorKind::User,
            WebError::Unreachable { .. } | WebError::RateLimited { .. } => ErrorKind::Unavailable,
            WebError::Cancelled => ErrorKind::Cancelled,
        }
    }
}

#[derive(Debug, Clone)]
pub struct WebSettings {
    /// The user's e-mail, named in the User-Agent (Crossref's "polite
    /// pool") and required by Unpaywall; `None` when not configured.
    pub contact_email: Option<String>,
    /// Minimum gap between two requests to one host.
    pub host_delay: Duration,
    pub max_attempts: u32,
    /// First pause before a retry (doubling, with jitter).
    pub backoff: Duration,
    pub timeout: Duration,
    /// Host names that may resolve to a local address: the configured
    /// service endpoints (see [`super::reach`]).
    pub trusted_hosts: Vec<String>,
    /// `papers.allow_local_urls`: any address may be fetched.
    pub allow_local: bool,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            contact_email: None,
            host_delay: Duration::from_secs(1),
            max_attempts: 4,
            backoff: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
            trusted_hosts: Vec::new(),
            allow_local: false,
        }
    }
}

/// One answer: any status the caller has to judge (404, 403, …) comes back
/// here; transient ones were retried first.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Lower-cased, without parameters (`application/pdf`).
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Response {
    /// A PDF by its bytes, and not declared as a web page: a login or
    /// cookie wall answering 200 with HTML is never stored as a PDF.
    pub fn is_pdf(&self) -> bool {
        self.status == 200 && self.body.starts_with(b"%PDF-") && !self.content_type.starts_with("text/")
    }

    /// What this answer is, for a message saying why it was not used.
    pub fn describe(&self) -> String {
        if self.status != 200 {
            return format!("HTTP {}", self.status);
        }
        let ct = if self.content_type.is_empty() {
            "no content type"
        } else {
            &self.content_type
        };
        if self.body.starts_with(b"%PDF-") {
            format!("a PDF declared as {ct}")
        } else {
            format!("{ct}, not a PDF")
        }
    }
}

/// The process-wide per-host gates: held while a request to that host
/// runs (one at a time), remembering when the last one finished.
static HOSTS: Mutex<Option<HashMap<String, Gate>>> = Mutex::new(None);

/// One host's gate: when its last request finished.
type Gate = Arc<Mutex<Option<Instant>>>;

fn gate(host: &str) -> Gate {
    let mut hosts = crate::lock::lock(&HOSTS);
    hosts
        .get_or_insert_with(HashMap::new)
        .entry(host.to_string())
        .or_default()
        .clone()
}

/// `host[:port]` of an http(s) URL, lower-cased.
pub fn host_of(url: &str) -> Option<String> {
    let scheme = url.find("://")?;
    if !matches!(url[..scheme].to_ascii_lowercase().as_str(), "http" | "https") {
        return None;
    }
    let rest = &url[scheme + 3..];
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

pub struct WebClient {
    settings: WebSettings,
    agent: ureq::Agent,
    user_agent: String,
}

impl WebClient {
    pub fn new(settings: WebSettings) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(settings.timeout))
            .http_status_as_error(false)
            .max_redirects(10)
            .build();
        // Every connection, redirects included, resolves through the guard.
        let agent = ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::default(),
            super::reach::GuardedResolver::new(settings.trusted_hosts.clone(), settings.allow_local),
        );
        let user_agent = user_agent(settings.contact_email.as_deref());
        WebClient {
            settings,
            agent,
            user_agent,
        }
    }

    pub fn settings(&self) -> &WebSettings {
        &self.settings
    }

    pub fn user_agent(&self) -> &str {
        &self.user_agent
    }

    /// GET `url` politely. Connection failures, 429, 500 and 502–504 are
    /// retried (a `Retry-After` longer than the backoff wins; one beyond
    /// [`MAX_RETRY_WAIT`] is reported at once); any other status is
    /// returned for the caller to judge.
    pub fn get(&self, url: &str, accept: &str, limit: u64, cancel: &Cancel) -> Result<Response, WebError> {
        let host = host_of(url).ok_or_else(|| WebError::BadUrl(url.to_string()))?;
        let gate = gate(&host);
        let attempts = self.settings.max_attempts.max(1);
        let mut reason = String::new();
        for attempt in 1..=attempts {
            if cancel.is_cancelled() {
                return Err(WebError::Cancelled);
            }
            let outcome = {
                let mut last = crate::lock::lock(&gate);
                if let Some(t) = *last {
                    let gap = t.elapsed();
                    if gap < self.settings.host_delay
                        && !sleep_unless_cancelled(self.settings.host_delay - gap, Some(cancel))
                    {
                        return Err(WebError::Cancelled);
                    }
                }
                let out = self.once(url, accept, limit);
                *last = Some(Instant::now());
                out
            };
            let mut wait = None;
            match outcome {
                Ok((resp, _)) if !matches!(resp.status, 429 | 500 | 502 | 503 | 504) => return Ok(resp),
                Ok((resp, retry_after)) => {
                    if let Some(after) = retry_after {
                        if after > MAX_RETRY_WAIT {
                            return Err(WebError::RateLimited {
                                host,
                                status: resp.status,
                                wait: after.as_secs(),
                            });
                        }
                        wait = Some(after);
                    }
                    reason = format!("HTTP {}", resp.status);
                    if attempt == attempts {
                        if resp.status == 429 {
                            return Err(WebError::RateLimited {
                                host,
                                status: 429,
                                wait: retry_after.map_or(60, |d| d.as_secs()),
                            });
                        }
                        break;
                    }
                }
                Err(Failure::TooLarge) => {
                    return Err(WebError::TooLarge {
                        url: url.to_string(),
                        limit,
                    })
                }
                Err(Failure::Local(reason)) => {
                    return Err(WebError::LocalAddress {
                        url: url.to_string(),
                        reason,
                    })
                }
                Err(Failure::Io(e)) => reason = e,
            }
            tracing::warn!(host = %host, attempt, reason = %reason, "request failed; retrying");
            if attempt < attempts {
                let unit: f64 = rand::rng().random();
                let mut delay = jittered(base_delay(self.settings.backoff, attempt), unit);
                if let Some(after) = wait {
                    delay = delay.max(after);
                }
                if !sleep_unless_cancelled(delay, Some(cancel)) {
                    return Err(WebError::Cancelled);
                }
            }
        }
        Err(WebError::Unreachable { host, attempts, reason })
    }

    fn once(&self, url: &str, accept: &str, limit: u64) -> Result<(Response, Option<Duration>), Failure> {
        let resp = self
            .agent
            .get(url)
            .header("user-agent", &self.user_agent)
            .header("accept", accept)
            .call()
            .map_err(|e| match e {
                ureq::Error::Other(inner) => match inner.downcast::<super::reach::LocalAddress>() {
                    Ok(local) => Failure::Local(local.to_string()),
                    Err(other) => Failure::Io(other.to_string()),
                },
                other => Failure::Io(other.to_string()),
            })?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header("content-type")
            .map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .unwrap_or_default();
        let retry_after = header("retry-after").and_then(|v| parse_retry_after(&v));
        let body = resp
            .into_body()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => Failure::TooLarge,
                other => Failure::Io(other.to_string()),
            })?;
        Ok((
            Response {
                status,
                content_type,
                body,
            },
            retry_after,
        ))
    }
}

enum Failure {
    TooLarge,
    /// Refused by [`super::reach::GuardedResolver`]: never retried.
    Local(String),
    Io(String),
}

/// `Jarvis/<version> (personal research assistant; mailto:<email>)` — the
/// form Crossref asks for to reach a person when something goes wrong.
pub fn user_agent(contact: Option<&str>) -> String {
    let base = format!("Jarvis/{} (personal research assistant", env!("CARGO_PKG_VERSION"));
    match contact {
        Some(c) => format!("{base}; mailto:{c})"),
        None => format!("{base})"),
    }
}

/// A contact address worth sending: one `@`, no spaces or controls, and
/// nothing that could break a header or a query string.
pub fn valid_email(s: &str) -> bool {
    let s = s.trim();
    let Some((user, domain)) = s.split_once('@') else {
        return false;
    };
    !user.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && s.len() <= 254
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "@.-_+".contains(c))
        && s.matches('@').count() == 1
}

/// Percent-encode a path segment or query value (RFC 3986 unreserved kept;
/// a DOI's `/` kept where `keep_slash`, as Crossref and Unpaywall take it).
pub fn encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_from_urls() {
        assert_eq!(
            host_of("https://api.crossref.org/works/10.1/x").as_deref(),
            Some("api.crossref.org")
        );
        assert_eq!(host_of("http://127.0.0.1:8080/x?y").as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(host_of("HTTPS://Example.ORG").as_deref(), Some("example.org"));
        assert_eq!(host_of("ftp://x/y"), None);
        assert_eq!(host_of("https:///x"), None);
    }

    #[test]
    fn the_user_agent_names_jarvis_and_the_contact() {
        let ua = user_agent(Some("ada@example.org"));
        assert!(
            ua.starts_with("Jarvis/") && ua.contains("mailto:ada@example.org"),
            "{ua}"
        );
        assert!(!user_agent(None).contains("mailto"));
    }

    #[test]
    fn only_plain_addresses_are_sent() {
        assert!(valid_email("ada.lovelace+jarvis@example.org"));
        for bad in [
            "",
            "ada",
            "ada@",
            "@x.org",
            "a@b",
            "a b@x.org",
            "a@x.org\r\nX: y",
            "a@@x.org",
            "a@x.org&email=z",
        ] {
            assert!(!valid_email(bad), "{bad:?}");
        }
    }

    #[test]
    fn encoding_keeps_a_doi_readable_and_a_query_safe() {
        assert_eq!(encode("10.1000/a(b)<c>", true), "10.1000/a%28b%29%3Cc%3E");
        assert_eq!(encode("a@b.org&x=1", false), "a%40b.org%26x%3D1");
    }

    #[test]
    fn html_is_never_a_pdf() {
        let r = |ct: &str, body: &[u8]| Response {
            status: 200,
            content_type: ct.into(),
            body: body.to_vec(),
        };
        assert!(r("application/pdf", b"%PDF-1.7 ...").is_pdf());
        assert!(r("application/octet-stream", b"%PDF-1.4").is_pdf());
        assert!(!r("application/pdf", b"<!doctype html>").is_pdf());
        assert!(!r("text/html", b"%PDF-1.4").is_pdf());
        assert!(r("text/html", b"<html>").describe().contains("not a PDF"));
    }

    /// One request at a time per host, with the courtesy gap between them.
    mod host_gate {
        use std::io::{BufRead, BufReader, Write};
        use std::net::TcpListener;
        use std::sync::atomic::{AtomicUsize, Ordering};

        use crate::ingest::web::*;

        /// Two threads asking one host at once: the second waits for the first
        /// and for the gap, so the host never sees two requests in flight.
        #[test]
        fn one_request_at_a_time_per_host_with_the_gap_between() {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/x", listener.local_addr().unwrap());
            let in_flight = Arc::new(AtomicUsize::new(0));
            let max = Arc::new(AtomicUsize::new(0));
            let times = Arc::new(Mutex::new(Vec::new()));
            let (f, m, t) = (in_flight.clone(), max.clone(), times.clone());
            std::thread::spawn(move || {
                for s in listener.incoming() {
                    let Ok(mut s) = s else { break };
                    let (f, m, t) = (f.clone(), m.clone(), t.clone());
                    std::thread::spawn(move || {
                        let mut r = BufReader::new(s.try_clone().unwrap());
                        let mut line = String::new();
                        while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                            line.clear();
                        }
                        let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                        m.fetch_max(now, Ordering::SeqCst);
                        t.lock().unwrap().push(Instant::now());
                        std::thread::sleep(Duration::from_millis(50));
                        f.fetch_sub(1, Ordering::SeqCst);
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
                    });
                }
            });
            let client = Arc::new(WebClient::new(WebSettings {
                host_delay: Duration::from_millis(200),
                trusted_hosts: vec!["127.0.0.1".into()],
                ..WebSettings::default()
            }));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (c, u) = (client.clone(), url.clone());
                    std::thread::spawn(move || c.get(&u, "*/*", 1024, &Cancel::new()).unwrap().status)
                })
                .collect();
            for t in threads {
                assert_eq!(t.join().unwrap(), 200);
            }
            assert_eq!(max.load(Ordering::SeqCst), 1);
            let t = times.lock().unwrap();
            assert_eq!(t.len(), 2);
            // 50 ms serving the first plus the 200 ms gap after it finished.
            assert!(t[1] - t[0] >= Duration::from_millis(240), "{:?}", t[1] - t[0]);
        }
    }

    /// What a fetch may reach: never this machine or its network unless allowed.
    mod reach {
        use std::io::{BufRead, BufReader, Write};
        use std::net::TcpListener;
        use std::sync::atomic::{AtomicUsize, Ordering};

        use crate::ingest::web::*;

        /// A trusted host that redirects to `localhost` (another name for this
        /// machine): the redirect is refused at resolution, at once (no
        /// retries), with the error naming the way out, and the local address
        /// is never asked for anything.
        #[test]
        fn a_redirect_to_this_machine_is_refused_without_retrying() {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            let hits = Arc::new(AtomicUsize::new(0));
            let secret = Arc::new(AtomicUsize::new(0));
            let (h, sec) = (hits.clone(), secret.clone());
            std::thread::spawn(move || {
                for s in listener.incoming() {
                    let Ok(mut s) = s else { break };
                    let mut r = BufReader::new(s.try_clone().unwrap());
                    let mut first = String::new();
                    let _ = r.read_line(&mut first);
                    let mut line = String::new();
                    while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    h.fetch_add(1, Ordering::SeqCst);
                    if first.contains("/secret.pdf") {
                        sec.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = write!(
                        s,
                        "HTTP/1.1 302 Found\r\nlocation: http://localhost:{port}/secret.pdf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                }
            });
            let client = WebClient::new(WebSettings {
                host_delay: Duration::ZERO,
                backoff: Duration::from_millis(1),
                trusted_hosts: vec!["127.0.0.1".into()],
                ..WebSettings::default()
            });
            let err = client
                .get(&format!("http://127.0.0.1:{port}/paper"), "*/*", 1024, &Cancel::new())
                .unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, WebError::LocalAddress { .. }), "{msg}");
            assert!(msg.contains("localhost") && msg.contains("jarvis kb add FILE"), "{msg}");
            assert_eq!(hits.load(Ordering::SeqCst), 1, "retried a refusal");
            assert_eq!(secret.load(Ordering::SeqCst), 0);
        }

        /// An untrusted literal local address is refused before any connection.
        #[test]
        fn an_untrusted_local_address_is_never_contacted() {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/taxes.pdf", listener.local_addr().unwrap());
            listener.set_nonblocking(true).unwrap();
            let client = WebClient::new(WebSettings::default());
            let err = client.get(&url, "*/*", 1024, &Cancel::new()).unwrap_err();
            assert!(matches!(err, WebError::LocalAddress { .. }), "{err}");
            assert!(listener.accept().is_err(), "the local address was contacted");
        }
    }
}
