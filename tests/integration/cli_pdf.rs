//! `jarvis convert-pdf` through the real binary: a local file to stdout or
//! `-o`, a corrupt file, and an arXiv id fetched from a fake loopback
//! server (`papers.arxiv_pdf_url` points at it).

use crate::support::fakes::stand::{Answer, Stand};
use crate::support::fs::{pdf_fixture, pdf_fixture_bytes};
use crate::support::{run, Sandbox};

const MARKER: &str = "The efficient office staff found the affine flow figures difficult.";

#[test]
fn a_local_pdf_converts_to_stdout() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.arg("convert-pdf").arg(pdf_fixture("paper.pdf"));
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains(MARKER), "{}", r.stdout);
}

#[test]
fn dash_o_writes_the_markdown_to_a_file() {
    let sb = Sandbox::new();
    let out = sb.dir.path().join("paper.md");
    let mut c = sb.jarvis();
    c.arg("convert-pdf").arg(pdf_fixture("paper.pdf")).arg("-o").arg(&out);
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
        .arg(pdf_fixture("paper.pdf"))
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

#[test]
fn an_arxiv_id_is_downloaded_and_converted() {
    // Serves the PDF for every request; the paths asked for are recorded.
    let arxiv = Stand::one_at_a_time(|_, _| Answer::pdf(pdf_fixture_bytes("paper.pdf")));
    let base = &arxiv.url;
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "[papers]\narxiv_pdf_url = \"{base}\"\narxiv_api_url = \"{base}\"\ncourtesy_delay_ms = 0\n"
    ));
    let out = sb.dir.path().join("arxiv.md");
    let mut c = sb.jarvis();
    c.args(["convert-pdf", "arXiv:2301.01234v2", "-o"]).arg(&out);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let paths: Vec<String> = arxiv.seen().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, vec!["/pdf/2301.01234v2".to_string()]);
    let md = std::fs::read_to_string(&out).expect("output written");
    assert!(md.contains(MARKER), "{md}");
}
