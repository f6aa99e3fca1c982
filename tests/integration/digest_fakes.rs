//! Fake arXiv (Atom), bioRxiv (JSON) and scoring-model (OpenRouter SSE,
//! Ollama NDJSON) servers on 127.0.0.1 for the digest tests, answering
//! from a handler so a test decides per request, plus builders for
//! responses of the real shapes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Req {
    pub path: String,
    pub body: String,
    pub at: Instant,
}

pub struct Resp {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn atom(body: String) -> Resp {
        Resp {
            status: 200,
            content_type: "application/atom+xml",
            body: body.into_bytes(),
        }
    }
    pub fn json(body: Value) -> Resp {
        Resp {
            status: 200,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
        }
    }
    pub fn status(status: u16, body: &str) -> Resp {
        Resp {
            status,
            content_type: "text/plain",
            body: body.as_bytes().to_vec(),
        }
    }
    pub fn pdf(bytes: Vec<u8>) -> Resp {
        Resp {
            status: 200,
            content_type: "application/pdf",
            body: bytes,
        }
    }
}

type Handler = dyn Fn(&Req, usize) -> Resp + Send + Sync;

/// A server answering each request from `handler(request, n)` (`n`
/// counts requests from 0), one connection at a time.
pub struct Fake {
    pub url: String,
    reqs: Arc<Mutex<Vec<Req>>>,
}

impl Fake {
    pub fn start(handler: impl Fn(&Req, usize) -> Resp + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let reqs = Arc::new(Mutex::new(Vec::new()));
        let recorded = reqs.clone();
        let handler: Arc<Handler> = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let Some(req) = read(&mut stream) else { continue };
                let n = {
                    let mut r = recorded.lock().expect("lock");
                    r.push(req.clone());
                    r.len() - 1
                };
                let resp = handler(&req, n);
                let head = format!(
                    "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    resp.status,
                    resp.content_type,
                    resp.body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&resp.body);
                let _ = stream.flush();
            }
        });
        Fake { url, reqs }
    }

    pub fn requests(&self) -> Vec<Req> {
        self.reqs.lock().expect("lock").clone()
    }
}

fn read(stream: &mut std::net::TcpStream) -> Option<Req> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let at = Instant::now();
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Req {
        path,
        body: String::from_utf8_lossy(&body).into_owned(),
        at,
    })
}

/// One arXiv entry for [`atom`].
#[derive(Debug, Clone)]
pub struct Entry {
    /// Versioned, e.g. `2412.00001v2` or `hep-ex/0307015v1`.
    pub id: String,
    pub title: String,
    pub summary: String,
    pub published: String,
    pub category: String,
    /// `title="pdf"` on the PDF link (the old shape) or not (the new one).
    pub titled_pdf_link: bool,
}

pub fn entry(id: &str, title: &str, summary: &str, published: &str) -> Entry {
    Entry {
        id: id.into(),
        title: title.into(),
        summary: summary.into(),
        published: published.into(),
        category: "cs.LG".into(),
        titled_pdf_link: false,
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An arXiv API query feed holding `entries` (empty: the known bogus
/// empty 200 feed).
pub fn atom(entries: &[Entry], total: usize) -> String {
    let mut s = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <id>https://arxiv.org/api/x</id><title>arXiv Query</title><updated>2026-12-07T00:00:00-05:00</updated>
  <opensearch:itemsPerPage>100</opensearch:itemsPerPage><opensearch:totalResults>{total}</opensearch:totalResults><opensearch:startIndex>0</opensearch:startIndex>
"#
    );
    for e in entries {
        let pdf = if e.titled_pdf_link {
            format!(
                r#"<link title="pdf" href="https://arxiv.org/pdf/{}" rel="related" type="application/pdf"/>"#,
                e.id
            )
        } else {
            format!(
                r#"<link href="https://arxiv.org/pdf/{}" rel="alternate" type="application/pdf"/>"#,
                e.id
            )
        };
        s.push_str(&format!(
            r#"  <entry>
    <id>http://arxiv.org/abs/{id}</id>
    <title>{title}</title>
    <updated>{p}</updated>
    <link href="https://arxiv.org/abs/{id}" rel="alternate" type="text/html"/>
    {pdf}
    <summary>{summary}</summary>
    <category term="{cat}" scheme="http://arxiv.org/schemas/atom"/>
    <published>{p}</published>
    <arxiv:primary_category term="{cat}"/>
    <author><name>Ada Example</name></author>
    <author><name>Grace Sample</name><arxiv:affiliation>Somewhere</arxiv:affiliation></author>
  </entry>
"#,
            id = e.id,
            title = esc(&e.title),
            summary = esc(&e.summary),
            p = e.published,
            cat = e.category,
        ));
    }
    s.push_str("</feed>\n");
    s
}

/// arXiv's error feed.
pub fn atom_error(message: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">
  <opensearch:totalResults>1</opensearch:totalResults>
  <entry><id>http://arxiv.org/api/errors#{m}</id><title>Error</title><summary>{m}</summary>
  <updated>2026-12-07T00:00:00-05:00</updated><link href="http://arxiv.org/api/errors#{m}" rel="alternate" type="text/html"/>
  <author><name>arXiv api core</name></author></entry>
</feed>
"#,
        m = message
    )
}

/// A bioRxiv record (the details API's shape; numbers as strings).
pub fn biorxiv_record(doi: &str, title: &str, abstract_text: &str, date: &str, version: &str) -> Value {
    json!({
        "doi": doi, "title": title, "authors": "Sen, S.; Roe, R.",
        "author_corresponding": "S. Sen", "author_corresponding_institution": "A University",
        "date": date, "version": version, "type": "new results", "license": "cc_by",
        "category": "bioinformatics", "jatsxml": format!("https://www.biorxiv.org/content/early/x/{doi}.source.xml"),
        "abstract": abstract_text, "published": "NA", "server": "bioRxiv"
    })
}

/// A details-API page; `total` as the API reports it (it may overstate).
pub fn biorxiv_page(records: Vec<Value>, cursor: usize, total: usize) -> Value {
    if records.is_empty() {
        return json!({"messages": [{"status": "no posts found"}], "collection": []});
    }
    json!({
        "messages": [{"status": "ok", "interval": "x", "cursor": cursor.to_string(), "count": records.len(), "count_new_papers": records.len().to_string(), "total": total.to_string()}],
        "collection": records
    })
}

/// The papers in a scoring request: (number, title) pairs.
pub fn papers_in(body: &str) -> Vec<(usize, String)> {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let text: String = v["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|x| x["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(rest) = l.strip_prefix('[') {
            if let Some((n, tail)) = rest.split_once(']') {
                if tail.trim_start().starts_with("id:") {
                    if let (Ok(n), Some(t)) = (n.parse(), lines.peek()) {
                        out.push((n, t.trim_start_matches("Title: ").to_string()));
                    }
                }
            }
        }
    }
    out
}

/// An OpenRouter streamed reply carrying `text`, with usage and cost.
pub fn openrouter_reply(text: &str) -> Resp {
    let mut body = String::new();
    // Split the text so the client has to join deltas.
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map(|(i, _)| i)
        .unwrap_or(0);
    for part in [&text[..mid], &text[mid..]] {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"model":"acme/model-1","choices":[{"index":0,"delta":{"content":part}}]})
        ));
    }
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})
    ));
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"model":"acme/model-1","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":200,"cost":0.0021}})
    ));
    body.push_str("data: [DONE]\n\n");
    Resp {
        status: 200,
        content_type: "text/event-stream",
        body: body.into_bytes(),
    }
}

/// An Ollama streamed reply carrying `text`.
pub fn ollama_reply(text: &str) -> Resp {
    let body = format!(
        "{}\n{}\n",
        json!({"model":"m","message":{"role":"assistant","content":text},"done":false}),
        json!({"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":900,"eval_count":150})
    );
    Resp {
        status: 200,
        content_type: "application/x-ndjson",
        body: body.into_bytes(),
    }
}
