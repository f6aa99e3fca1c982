//! Stand-ins on 127.0.0.1 for the services `kb add` asks about a DOI or a
//! web address — Crossref, Unpaywall, bioRxiv's details API, a publisher
//! serving PDFs — answering with the shapes their public documentation
//! shows. Each records the requests it got (path, User-Agent, when, and
//! how many were in flight at once) and may answer with extra headers
//! (`Retry-After`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub user_agent: String,
    pub accept: String,
    pub at: Instant,
}

pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(v: Value) -> Answer {
        Answer {
            status: 200,
            content_type: "application/json",
            headers: Vec::new(),
            body: v.to_string().into_bytes(),
        }
    }
    pub fn pdf(bytes: Vec<u8>) -> Answer {
        Answer {
            status: 200,
            content_type: "application/pdf",
            headers: Vec::new(),
            body: bytes,
        }
    }
    pub fn html(text: &str) -> Answer {
        Answer {
            status: 200,
            content_type: "text/html; charset=utf-8",
            headers: Vec::new(),
            body: text.as_bytes().to_vec(),
        }
    }
    pub fn status(status: u16, text: &str) -> Answer {
        Answer {
            status,
            content_type: "text/plain",
            headers: Vec::new(),
            body: text.as_bytes().to_vec(),
        }
    }
    pub fn with_header(mut self, k: &'static str, v: &str) -> Answer {
        self.headers.push((k, v.to_string()));
        self
    }
}

type Handler = dyn Fn(&Seen, usize) -> Answer + Send + Sync;

/// A server answering each request from `handler(request, n)`, `n`
/// counting requests from 0. Connections are served concurrently, so a
/// client that sent two at once would be seen doing it (`max_in_flight`).
pub struct Stand {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Stand {
    pub fn start(handler: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Stand {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen2, max2) = (seen.clone(), max_in_flight.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let (seen, max, in_flight, handler) = (seen2.clone(), max2.clone(), in_flight.clone(), handler.clone());
                std::thread::spawn(move || {
                    let Some(req) = read(&mut stream) else { return };
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(now, Ordering::SeqCst);
                    let n = {
                        let mut s = seen.lock().expect("lock");
                        s.push(req.clone());
                        s.len() - 1
                    };
                    // Long enough for a second request to overlap if sent.
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    let a = handler(&req, n);
                    let mut head = format!(
                        "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                        a.status,
                        a.content_type,
                        a.body.len()
                    );
                    for (k, v) in &a.headers {
                        head.push_str(&format!("{k}: {v}\r\n"));
                    }
                    head.push_str("\r\n");
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(&a.body);
                    let _ = stream.flush();
                });
            }
        });
        Stand {
            url,
            seen,
            max_in_flight,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

fn read(stream: &mut std::net::TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let at = Instant::now();
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut user_agent, mut accept) = (String::new(), String::new());
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("user-agent") {
                user_agent = v.trim().to_string();
            } else if k.eq_ignore_ascii_case("accept") {
                accept = v.trim().to_string();
            }
        }
    }
    Some(Seen {
        path,
        user_agent,
        accept,
        at,
    })
}

/// Crossref's `/works/{doi}` envelope for a journal article (the fields
/// Jarvis reads, in Crossref's own names and nesting).
pub fn crossref_work(doi: &str, title: &str, abstract_jats: Option<&str>, pdf_link: Option<&str>) -> Value {
    let mut m = json!({
        "indexed": {"date-parts": [[2024, 1, 5]], "date-time": "2024-01-05T10:00:00Z", "timestamp": 1704448800000u64},
        "reference-count": 42,
        "publisher": "Example Society",
        "issue": "7",
        "DOI": doi,
        "type": "journal-article",
        "created": {"date-parts": [[2021, 7, 10]]},
        "page": "583-589",
        "source": "Crossref",
        "title": [title],
        "prefix": doi.split('/').next().unwrap_or(""),
        "volume": "596",
        "author": [
            {"given": "Ada", "family": "Example", "sequence": "first", "affiliation": []},
            {"given": "Brian", "family": "Sample", "sequence": "additional", "affiliation": []}
        ],
        "member": "297",
        "container-title": ["Journal of Examples"],
        "issued": {"date-parts": [[2021, 7, 15]]},
        "URL": format!("https://doi.org/{doi}"),
        "link": []
    });
    if let Some(a) = abstract_jats {
        m["abstract"] = json!(a);
    }
    if let Some(l) = pdf_link {
        m["link"] = json!([
            {"URL": l, "content-type": "application/pdf", "content-version": "vor", "intended-application": "text-mining"},
            {"URL": format!("{l}.html"), "content-type": "text/html", "content-version": "vor", "intended-application": "similarity-checking"}
        ]);
    }
    json!({"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": m})
}

/// Unpaywall's DOI object with one open copy at `pdf` (or none).
pub fn unpaywall(doi: &str, pdf: Option<&str>) -> Value {
    let loc = pdf.map(|u| {
        json!({"url": u, "url_for_pdf": u, "url_for_landing_page": format!("https://doi.org/{doi}"),
               "host_type": "repository", "version": "acceptedVersion", "license": "cc-by",
               "evidence": "oa repository (via OAI-PMH doi match)", "is_best": true,
               "pmh_id": null, "endpoint_id": "e1", "repository_institution": "Example University", "updated": "2024-01-01T00:00:00"})
    });
    json!({
        "doi": doi, "doi_url": format!("https://doi.org/{doi}"), "title": "(Unpaywall's copy of the title)",
        "genre": "journal-article", "is_paratext": false, "published_date": "2021-07-15", "year": 2021,
        "journal_name": "Journal of Examples", "journal_issns": "0028-0836", "journal_is_oa": false,
        "journal_is_in_doaj": false, "publisher": "Example Society",
        "is_oa": pdf.is_some(), "oa_status": if pdf.is_some() { "green" } else { "closed" },
        "has_repository_copy": pdf.is_some(),
        "best_oa_location": loc.clone(),
        "first_oa_location": loc.clone(),
        "oa_locations": loc.map(|l| vec![l]).unwrap_or_default(),
        "oa_locations_embargoed": [],
        "updated": "2024-01-01T00:00:00", "data_standard": 2,
        "z_authors": [{"given": "Ada", "family": "Example", "sequence": "first"}]
    })
}

/// bioRxiv's `/details/biorxiv/{doi}/na/json` answer: one row per version.
pub fn biorxiv_details(doi: &str, title: &str, versions: u32) -> Value {
    let rows: Vec<Value> = (1..=versions)
        .map(|v| {
            json!({"doi": doi, "title": title, "authors": "Sen, S.; Smith, J. A.",
                   "author_corresponding": "Jane Smith", "author_corresponding_institution": "Example Institute",
                   "date": format!("2020-1-{}", v + 1), "version": v.to_string(), "type": "new results",
                   "license": "cc_by", "category": "bioinformatics",
                   "jatsxml": format!("https://www.biorxiv.org/content/early/2020/01/0{v}/x.source.xml"),
                   "abstract": "Reading order matters for extracted text.", "published": "NA", "server": "bioRxiv"})
        })
        .collect();
    json!({"messages": [{"status": "ok"}], "collection": rows})
}

/// The details API's answer for a DOI it does not have.
pub fn biorxiv_none() -> Value {
    json!({"messages": [{"status": "no posts found"}], "collection": []})
}
