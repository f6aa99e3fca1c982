//! `jarvis kb add` by DOI, bioRxiv page and PDF address, through the real
//! binary against stand-ins for Crossref, Unpaywall, bioRxiv, arXiv and a
//! publisher on loopback (`[papers]`/`[digest]` base URLs point at them).
//! Real PDFs from tests/fixtures/pdf are what the "publisher" serves.

use std::time::Duration;

use serde_json::Value;

use crate::support::fakes::papers::{biorxiv_details, biorxiv_none, crossref_work, unpaywall};
use crate::support::fakes::stand::{Answer, Stand};
use crate::support::fs::pdf_fixture_bytes;
use crate::support::net::dead_url;
use crate::support::{run, Run, Sandbox};

const DOI: &str = "10.5555/reading.order.2021";
const TITLE: &str = "Reading Order in Converted Papers";
const ABSTRACT: &str = "<jats:title>Abstract</jats:title><jats:p>We measure <jats:italic>reading order</jats:italic> &amp; layout.</jats:p>";

struct Services {
    crossref: Stand,
    unpaywall: Stand,
    biorxiv: Stand,
    publisher: Stand,
    arxiv: Stand,
}

/// Crossref knows `DOI` (with the publisher's PDF link when `publisher_pdf`
/// is set); Unpaywall points at the publisher's `/oa.pdf` when `oa`; the
/// publisher serves paper.pdf at `/oa.pdf`, HTML at `/paywall.pdf`; arXiv
/// has 2101.00001 whose journal DOI is `DOI`.
fn services(oa: bool, publisher_pdf: bool) -> Services {
    let publisher = Stand::start(|req, _| match req.path.as_str() {
        "/oa.pdf" | "/copy.pdf" => Answer::pdf(pdf_fixture_bytes("paper.pdf")),
        "/paywall.pdf" => Answer::html("<!doctype html><title>Sign in</title>%PDF-not really"),
        _ => Answer::status(404, "not here"),
    });
    let pub_url = publisher.url.clone();
    let crossref = Stand::start(move |req, _| {
        if req.path == format!("/works/{DOI}") {
            let link = publisher_pdf.then(|| format!("{pub_url}/paywall.pdf"));
            Answer::json(crossref_work(DOI, TITLE, Some(ABSTRACT), link.as_deref()))
        } else {
            Answer::status(404, "Resource not found.")
        }
    });
    let pub_url = publisher.url.clone();
    let unpaywall = Stand::start(move |req, _| {
        if req.path.starts_with(&format!("/v2/{DOI}?email=")) {
            let pdf = oa.then(|| format!("{pub_url}/oa.pdf"));
            Answer::json(unpaywall(DOI, pdf.as_deref()))
        } else {
            Answer::status(
                404,
                "{\"HTTP_status_code\": 404, \"error\": true, \"message\": \"not found\"}",
            )
        }
    });
    let biorxiv = Stand::start(|req, _| {
        let doi = "10.1101/2020.01.01.000001";
        if req.path == format!("/details/biorxiv/{doi}/na/json") {
            Answer::json(biorxiv_details(doi, "Preprints Have Reading Order Too", 2))
        } else if req.path == format!("/content/{doi}v2.full.pdf") {
            Answer::pdf(pdf_fixture_bytes("paper.pdf"))
        } else if req.path.starts_with("/details/") {
            Answer::json(biorxiv_none())
        } else {
            Answer::status(404, "not here")
        }
    });
    let arxiv = Stand::start(|req, _| {
        if req.path.starts_with("/api/query") {
            Answer {
                status: 200,
                content_type: "application/atom+xml",
                headers: Vec::new(),
                body: arxiv_feed().into_bytes(),
            }
        } else if req.path.starts_with("/pdf/2101.00001") {
            Answer::pdf(pdf_fixture_bytes("paper.pdf"))
        } else {
            Answer::status(404, "not here")
        }
    });
    Services {
        crossref,
        unpaywall,
        biorxiv,
        publisher,
        arxiv,
    }
}

fn arxiv_feed() -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <entry>
    <id>http://arxiv.org/abs/2101.00001v2</id>
    <updated>2021-02-01T00:00:00Z</updated>
    <published>2021-01-01T00:00:00Z</published>
    <title>{TITLE}</title>
    <summary>We measure reading order.</summary>
    <author><name>Ada Example</name></author>
    <arxiv:doi>{DOI}</arxiv:doi>
    <link href="http://arxiv.org/abs/2101.00001v2" rel="alternate" type="text/html"/>
    <arxiv:primary_category term="cs.DL"/>
  </entry>
</feed>"#
    )
}

fn sandbox(s: &Services, email: Option<&str>) -> Sandbox {
    let sb = Sandbox::new();
    let email = email.map(|e| format!("contact_email = \"{e}\"\n")).unwrap_or_default();
    sb.write_config(&format!(
        "[chat]\nollama_host = \"{}\"\n[papers]\n{email}crossref_url = \"{}\"\nunpaywall_url = \"{}\"\narxiv_api_url = \"{}\"\narxiv_pdf_url = \"{}\"\ncourtesy_delay_ms = 0\nhost_delay_ms = 0\nretry_backoff_ms = 10\n[digest]\nbiorxiv_url = \"{}\"\n",
        dead_url(),
        s.crossref.url,
        s.unpaywall.url,
        s.arxiv.url,
        s.arxiv.url,
        s.biorxiv.url
    ));
    sb
}

fn add(sb: &Sandbox, args: &[&str]) -> Run {
    let mut c = sb.jarvis();
    c.args(["kb", "add"]).args(args);
    c.stdin(std::process::Stdio::null());
    run(c)
}

fn json_of(r: &Run) -> Value {
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// Every stored document (`kb list --json`).
fn documents(sb: &Sandbox) -> Vec<Value> {
    let mut c = sb.jarvis();
    c.args(["kb", "list", "--json", "-n", "100"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    v.as_array()
        .cloned()
        .unwrap_or_else(|| v["documents"].as_array().cloned().unwrap_or_default())
}

#[test]
fn a_doi_with_an_open_pdf_is_added_whole_and_its_pdf_url_is_the_same_paper() {
    let s = services(true, false);
    let sb = sandbox(&s, Some("ada@example.org"));
    let v = json_of(&add(&sb, &[&format!("https://doi.org/{DOI}"), "--full-text", "--json"]));
    assert_eq!(v["title"], TITLE, "{v}");
    assert_eq!(v["authors"], "Ada Example, Brian Sample");
    assert_eq!(v["doi"], DOI);
    assert_eq!(v["source"], format!("https://doi.org/{DOI}"));
    assert!(v["body_chunks"].as_u64().unwrap() > 1, "the PDF's full text: {v}");
    // Politely asked: Unpaywall with the address, every service with a
    // User-Agent naming Jarvis and the contact.
    let up = s.unpaywall.seen();
    assert_eq!(up.len(), 1);
    assert!(up[0].path.ends_with("?email=ada%40example.org"), "{}", up[0].path);
    for seen in [s.crossref.seen(), up, s.publisher.seen()] {
        for r in seen {
            assert!(
                r.user_agent.starts_with("Jarvis/") && r.user_agent.contains("mailto:ada@example.org"),
                "{r:?}"
            );
        }
    }
    assert!(s.publisher.seen()[0].accept.contains("application/pdf"));
    let docs = documents(&sb);
    assert_eq!(docs.len(), 1, "{docs:?}");
    let meta = &docs[0]["meta"];
    assert_eq!(meta["year"], 2021, "{meta}");
    assert_eq!(meta["venue"], "Journal of Examples");
    assert_eq!(meta["storage_mode"], "full_text");
    assert_eq!(meta["pdf_url"], format!("{}/oa.pdf", s.publisher.url));

    // The same bytes from another address: recognised, the user asked
    // (no answer on stdin = no), nothing added.
    let other = format!("{}/copy.pdf", s.publisher.url);
    let r = add(&sb, &[&other, "--full-text"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("Replace it with this copy?")
            && r.stderr.contains("the same PDF")
            && r.stderr.contains("not added"),
        "{}",
        r.stderr
    );
    assert_eq!(documents(&sb).len(), 1);
    // Re-adding the DOI itself: unchanged, nothing asked.
    let r = add(&sb, &[DOI, "--full-text"]);
    assert!(
        r.stderr.contains("unchanged") && !r.stderr.contains("Replace"),
        "{}",
        r.stderr
    );
    // Saying yes replaces the DOI's entry: still one paper.
    let v = json_of(&add(&sb, &[&other, "--full-text", "--yes", "--json"]));
    assert_eq!(v["replaced"], true, "{v}");
    let docs = documents(&sb);
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0]["source"], other);
}

#[test]
fn without_a_contact_address_a_doi_adds_metadata_and_abstract_and_its_arxiv_copy_is_the_same_paper() {
    let s = services(true, true);
    let sb = sandbox(&s, None);
    let r = add(&sb, &[&format!("doi:{DOI}"), "--json"]);
    let v = json_of(&r);
    assert_eq!(v["title"], TITLE);
    assert_eq!(v["body_chunks"], 1, "{v}");
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("papers.contact_email"), "{warnings}");
    // The publisher's "PDF" link served a sign-in page: said, not stored.
    assert!(warnings.contains("text/html, not a PDF"), "{warnings}");
    assert!(
        s.unpaywall.seen().is_empty(),
        "Unpaywall is not asked without an address"
    );
    for r in s.crossref.seen() {
        assert!(
            r.user_agent.starts_with("Jarvis/") && !r.user_agent.contains("mailto"),
            "{r:?}"
        );
    }
    let docs = documents(&sb);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["meta"]["storage_mode"], "abstract");
    let mut c = sb.jarvis();
    c.args(["kb", "search", "reading order layout", "--json"]);
    let found = run(c);
    assert!(
        found.stdout.contains("We measure reading order & layout."),
        "{}",
        found.stdout
    );
    assert!(!found.stdout.contains("jats:"), "markup is stripped: {}", found.stdout);

    // The arXiv copy of the same paper (its feed names the journal DOI).
    let r = add(&sb, &["arXiv:2101.00001v2", "--full-text"]);
    assert!(
        r.stderr.contains(&format!("the same DOI {DOI}")) && r.stderr.contains("not added"),
        "{}",
        r.stderr
    );
    assert_eq!(documents(&sb).len(), 1);
}

#[test]
fn a_biorxiv_page_brings_the_preprint_and_its_pdf() {
    let s = services(false, false);
    let sb = sandbox(&s, Some("ada@example.org"));
    let page = format!("{}/content/10.1101/2020.01.01.000001v2.full", s.biorxiv.url);
    let v = json_of(&add(&sb, &[&page, "--full-text", "--json"]));
    assert_eq!(v["title"], "Preprints Have Reading Order Too", "{v}");
    assert_eq!(v["authors"], "S. Sen, J. A. Smith");
    assert_eq!(v["source"], "https://doi.org/10.1101/2020.01.01.000001");
    assert!(v["body_chunks"].as_u64().unwrap() > 1, "{v}");
    let docs = documents(&sb);
    assert_eq!(docs[0]["meta"]["venue"], "bioRxiv");
    assert_eq!(docs[0]["meta"]["year"], 2020);
    // The same preprint by its DOI: the same source, unchanged.
    let r = add(&sb, &["10.1101/2020.01.01.000001", "--full-text"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(documents(&sb).len(), 1);
}

#[test]
fn a_pdf_address_waits_as_long_as_retry_after_says() {
    let publisher = Stand::start(|req, n| match (req.path.as_str(), n) {
        (_, 0) => Answer::status(429, "slow down").with_header("retry-after", "2"),
        ("/paper.pdf", _) => Answer::pdf(pdf_fixture_bytes("paper.pdf")),
        _ => Answer::html("<html>a landing page</html>"),
    });
    let s = services(false, false);
    let sb = sandbox(&s, Some("ada@example.org"));
    let v = json_of(&add(
        &sb,
        &[&format!("{}/paper.pdf", publisher.url), "--full-text", "--json"],
    ));
    assert!(v["body_chunks"].as_u64().unwrap() > 1, "{v}");
    let seen = publisher.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    // The backoff is 10 ms here: only Retry-After explains the wait.
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(1900), "retried after {gap:?}");
    assert_eq!(publisher.max_in_flight(), 1);

    // A web page is not a PDF: a clear error, nothing added.
    let r = add(&sb, &[&format!("{}/landing", publisher.url), "--full-text"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("did not serve a PDF (text/html, not a PDF)"),
        "{}",
        r.stderr
    );
    assert_eq!(documents(&sb).len(), 1);
}

#[test]
fn an_unknown_doi_is_a_clear_error_and_adds_nothing() {
    let s = services(true, false);
    let sb = sandbox(&s, Some("ada@example.org"));
    let r = add(&sb, &["10.5555/no.such.paper", "--full-text"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("no paper has the DOI 10.5555/no.such.paper") && r.stderr.contains("check the DOI"),
        "{}",
        r.stderr
    );
    assert!(documents(&sb).is_empty());
    assert!(s.unpaywall.seen().is_empty());
}

/// A PDF address on this machine (here `localhost`, not one of the
/// configured services) is refused before anything is fetched, with the
/// way out named; `papers.allow_local_urls` lets the user opt in.
#[test]
fn a_pdf_address_on_this_machine_is_refused_unless_allowed() {
    let local = Stand::start(|_, _| Answer::pdf(pdf_fixture_bytes("paper.pdf")));
    let port = local.url.rsplit(':').next().unwrap().to_string();
    let url = format!("http://localhost:{port}/taxes.pdf");
    let s = services(false, false);
    let sb = sandbox(&s, Some("ada@example.org"));
    let r = add(&sb, &[&url, "--full-text"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("on this machine or its local network")
            && r.stderr.contains("jarvis kb add FILE")
            && r.stderr.contains("papers.allow_local_urls"),
        "{}",
        r.stderr
    );
    assert!(local.seen().is_empty(), "the local address was contacted");
    assert!(documents(&sb).is_empty());

    let mut c = sb.jarvis();
    c.args(["config", "set", "papers.allow_local_urls", "true"]);
    assert_eq!(run(c).code, 0);
    let v = json_of(&add(&sb, &[&url, "--full-text", "--json"]));
    assert!(v["body_chunks"].as_u64().unwrap() > 1, "{v}");
    assert_eq!(local.seen().len(), 1);
}
