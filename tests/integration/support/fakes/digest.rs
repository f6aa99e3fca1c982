//! What arXiv (Atom), bioRxiv (JSON) and a scoring model (OpenRouter SSE,
//! Ollama NDJSON) answer the digest, in the real shapes, for a
//! [`Stand`](super::stand::Stand) to serve.

use serde_json::{json, Value};

use super::stand::Answer;

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
pub fn openrouter_reply(text: &str) -> Answer {
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
    Answer {
        status: 200,
        content_type: "text/event-stream",
        headers: Vec::new(),
        body: body.into_bytes(),
    }
}

/// An Ollama streamed reply carrying `text`.
pub fn ollama_reply(text: &str) -> Answer {
    let body = format!(
        "{}\n{}\n",
        json!({"model":"m","message":{"role":"assistant","content":text},"done":false}),
        json!({"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":900,"eval_count":150})
    );
    Answer {
        status: 200,
        content_type: "application/x-ndjson",
        headers: Vec::new(),
        body: body.into_bytes(),
    }
}
