//! `jarvis convert-pdf` through the real binary: a local file to stdout or
//! `-o`, a corrupt file, and an arXiv id fetched from a fake loopback
//! server (`papers.arxiv_pdf_url` points at it).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::support::{run, Sandbox};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pdf")
        .join(name)
}

const MARKER: &str = "The efficient office staff found the affine flow figures difficult.";

#[test]
fn a_local_pdf_converts_to_stdout() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.arg("convert-pdf").arg(fixture("paper.pdf"));
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(MARKER), "{}", r.stdout);
}

#[test]
fn dash_o_writes_the_markdown_to_a_file() {
    let sb = Sandbox::new();
    let out = sb.dir.path().join("paper.md");
    let mut c = sb.jarvis();
    c.arg("convert-pdf").arg(fixture("paper.pdf")).arg("-o").arg(&out);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let md = std::fs::read_to_string(&out).expect("output written");
    assert!(md.contains(MARKER), "{md}");
}

#[test]
fn a_corrupt_file_fails_with_a_message_naming_it() {
    let sb = Sandbox::new();
    let bad = sb.dir.path().join("broken.pdf");
    std::fs::write(&bad, b"%PDF-1.7\nnot really a PDF\n").expect("write");
    let mut c = sb.jarvis();
    c.arg("convert-pdf").arg(&bad);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("broken.pdf:"), "{}", r.stderr);

    let mut c = sb.jarvis();
    c.arg("convert-pdf").arg("no/such/file.pdf");
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("no/such/file.pdf: no such file"), "{}", r.stderr);
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn a_crash_in_the_worker_is_reported_and_the_command_exits_cleanly() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.arg("convert-pdf")
        .arg(fixture("paper.pdf"))
        .env("JARVIS_FAILPOINT", "pdf_worker_crash");
    let r = run(c);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("paper.pdf: PDFium crashed (SIGABRT) while converting it"),
        "{}",
        r.stderr
    );
}

/// Serves `body` for every request, recording the paths asked for.
fn fake_arxiv(body: Vec<u8>) -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", l.local_addr().expect("addr"));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = paths.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut r = BufReader::new(s.try_clone().expect("clone"));
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            seen.lock()
                .expect("lock")
                .push(line.split_whitespace().nth(1).unwrap_or("").to_string());
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    (base, paths)
}

#[test]
fn an_arxiv_id_is_downloaded_and_converted() {
    let (base, paths) = fake_arxiv(std::fs::read(fixture("paper.pdf")).expect("fixture"));
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "[papers]\narxiv_pdf_url = \"{base}\"\narxiv_api_url = \"{base}\"\ncourtesy_delay_ms = 0\n"
    ));
    let out = sb.dir.path().join("arxiv.md");
    let mut c = sb.jarvis();
    c.args(["convert-pdf", "arXiv:2301.01234v2", "-o"]).arg(&out);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(*paths.lock().expect("lock"), vec!["/pdf/2301.01234v2".to_string()]);
    let md = std::fs::read_to_string(&out).expect("output written");
    assert!(md.contains(MARKER), "{md}");
}
