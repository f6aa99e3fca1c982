use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

#[test]
fn every_url_form_is_recognised() {
    let cases = [
        ("2301.01234", "2301.01234", None),
        ("2301.01234v2", "2301.01234", Some(2)),
        ("arXiv:2301.01234v3", "2301.01234", Some(3)),
        ("https://arxiv.org/abs/2301.01234", "2301.01234", None),
        ("http://arxiv.org/abs/2301.01234v1", "2301.01234", Some(1)),
        ("https://arxiv.org/pdf/2301.01234", "2301.01234", None),
        ("https://arxiv.org/pdf/2301.01234v4.pdf", "2301.01234", Some(4)),
        ("https://www.arxiv.org/abs/1706.03762/", "1706.03762", None),
        ("https://export.arxiv.org/abs/0704.0001", "0704.0001", None),
        ("hep-ex/0307015", "hep-ex/0307015", None),
        ("https://arxiv.org/abs/hep-ex/0307015v1", "hep-ex/0307015", Some(1)),
        ("math.GT/0309136", "math.GT/0309136", None),
        ("https://arxiv.org/abs/2301.01234?context=cs", "2301.01234", None),
    ];
    for (input, id, version) in cases {
        let got = parse_arxiv_url(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!((got.id.as_str(), got.version), (id, version), "{input}");
    }
    for bad in [
        "",
        "hello",
        "https://example.com/abs/2301.01234x",
        "2301.1",
        "12345.67890123",
    ] {
        assert!(parse_arxiv_url(bad).is_err(), "{bad}");
    }
    assert_eq!(
        parse_arxiv_url("2301.01234v2").unwrap().abs_url(),
        "https://arxiv.org/abs/2301.01234"
    );
}

const ENTRY: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title type="html">ArXiv Query</title>
  <id>http://arxiv.org/api/x</id>
  <entry>
    <id>http://arxiv.org/abs/1706.03762v7</id>
    <published>2017-06-12T17:57:34Z</published>
    <title>Attention Is All
      You Need</title>
    <summary>  The dominant sequence transduction models &amp; more.
    </summary>
    <author><name>Ashish Vaswani</name></author>
    <author><name>Noam Shazeer</name></author>
    <arxiv:doi>10.48550/arXiv.1706.03762</arxiv:doi>
    <arxiv:primary_category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>"#;

const EMPTY: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>ArXiv Query</title><id>x</id></feed>"#;

#[test]
fn atom_entries_parse() {
    let p = parse_feed(ENTRY).unwrap().unwrap();
    assert_eq!(p.title, "Attention Is All You Need");
    assert_eq!(p.authors, vec!["Ashish Vaswani", "Noam Shazeer"]);
    assert_eq!(p.summary, "The dominant sequence transduction models & more.");
    assert_eq!(p.doi.as_deref(), Some("10.48550/arXiv.1706.03762"));
    assert_eq!(p.primary_category.as_deref(), Some("cs.CL"));
    assert_eq!(parse_feed(EMPTY).unwrap(), None);
}

/// A loopback server answering requests from a script, recording paths and
/// arrival times.
struct Fake {
    base: String,
    log: Arc<Mutex<Vec<(String, Instant)>>>,
}

fn fake(script: Vec<(u16, Vec<u8>)>) -> Fake {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    std::thread::spawn(move || {
        for (status, body) in script {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            log2.lock().unwrap().push((path, Instant::now()));
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(&body).unwrap();
        }
    });
    Fake { base, log }
}

fn client(f: &Fake, delay_ms: u64) -> ArxivClient {
    ArxivClient::new(ArxivSettings {
        api_base: f.base.clone(),
        pdf_base: f.base.clone(),
        courtesy_delay: Duration::from_millis(delay_ms),
        max_attempts: 3,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(5),
    })
}

#[test]
fn an_empty_feed_is_retried_with_the_courtesy_delay() {
    let f = fake(vec![(200, EMPTY.into()), (503, vec![]), (200, ENTRY.into())]);
    let c = client(&f, 150);
    let id = parse_arxiv_url("1706.03762").unwrap();
    let p = c.fetch_metadata(&id).unwrap();
    assert_eq!(p.title, "Attention Is All You Need");
    let log = f.log.lock().unwrap();
    assert_eq!(log.len(), 3);
    assert!(log[0].0.starts_with("/api/query?id_list=1706.03762"), "{}", log[0].0);
    // The client spaces the *starts* of its requests; arrival times seen by
    // the server can shrink that by connection-setup jitter, so allow 20%.
    for w in log.windows(2) {
        assert!(
            w[1].1 - w[0].1 >= Duration::from_millis(120),
            "courtesy delay not kept: {:?}",
            w[1].1 - w[0].1
        );
    }
}

#[test]
fn only_empty_feeds_mean_not_found() {
    let f = fake(vec![(200, EMPTY.into()), (200, EMPTY.into()), (200, EMPTY.into())]);
    let err = client(&f, 0)
        .fetch_metadata(&parse_arxiv_url("2301.01234").unwrap())
        .unwrap_err();
    assert!(matches!(err, ArxivError::NotFound(_, 3)), "{err}");
}

#[test]
fn pdf_downloads_check_what_they_get() {
    let f = fake(vec![
        (200, b"%PDF-1.5 fake".to_vec()),
        (200, b"<html>captcha</html>".to_vec()),
        (404, vec![]),
    ]);
    let c = client(&f, 0);
    let id = parse_arxiv_url("hep-ex/0307015v1").unwrap();
    assert!(c.download_pdf(&id).unwrap().starts_with(b"%PDF"));
    assert!(matches!(c.download_pdf(&id), Err(ArxivError::NotPdf(_))));
    let err = c.download_pdf(&id).unwrap_err();
    // A definite answer: no "check your connection", and nothing retried.
    assert_eq!(err.kind(), crate::error_kind::ErrorKind::NotFound);
    let err = err.to_string();
    assert!(err.contains("HTTP 404") && err.contains("check it"), "{err}");
    assert!(!err.contains("connection"), "{err}");
    assert_eq!(f.log.lock().unwrap().len(), 3, "the 404 was asked once");
    assert_eq!(f.log.lock().unwrap()[0].0, "/pdf/hep-ex/0307015v1");
}
