//! `jarvis kb add` through the real binary: a local PDF in full text, the
//! duplicate question, an unreachable model in summary mode, and Ctrl-C in
//! the middle of an add — each leaving the knowledge base whole.

use crate::support::fs::pdf_fixture;
use crate::support::net::dead_url;
use crate::support::owner::signal;
use crate::support::{run, Sandbox};

fn chunk_count(sb: &Sandbox) -> usize {
    let mut c = sb.jarvis();
    c.args(["kb", "stats", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    v["chunks"].as_u64().unwrap_or(0) as usize
}

#[test]
fn add_a_local_pdf_then_decline_and_accept_the_duplicate() {
    let sb = Sandbox::new();
    sb.write_config(&format!("[chat]\nollama_host = \"{}\"\n", dead_url()));
    // A copy, so the test can save "new highlights" into it later.
    let pdf = sb.dir.path().join("paper_annotated.pdf");
    std::fs::copy(pdf_fixture("paper_annotated.pdf"), &pdf).unwrap();
    let mut c = sb.jarvis();
    c.args([
        "kb",
        "add",
        pdf.to_str().unwrap(),
        "--full-text",
        "--title",
        "Reading Order",
        "--authors",
        "Ada Example",
    ])
    .args(["--doi", "10.1234/ro", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["title"], "Reading Order");
    assert!(v["annotation_chunks"].as_u64().unwrap() >= 1, "{v}");
    let n = chunk_count(&sb);
    assert!(n > 2);

    // The highlight is searchable as its own chunk.
    let mut c = sb.jarvis();
    c.args(["kb", "search", "faithfully converted", "--json", "-n", "10"]);
    let r = run(c);
    assert!(r.stdout.contains("[HIGHLIGHT p.1]"), "{}", r.stdout);

    // Re-adding the same bytes says so and does nothing, asking nothing.
    let mut c = sb.jarvis();
    c.args([
        "kb",
        "add",
        pdf.to_str().unwrap(),
        "--full-text",
        "--title",
        "Reading Order",
        "--authors",
        "A",
        "--doi",
        "10.1/x",
    ]);
    c.stdin(std::process::Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains("Replace it") && r.stderr.contains("unchanged") && r.stderr.contains("not added"),
        "{}",
        r.stderr
    );
    assert_eq!(chunk_count(&sb), n);
    // Changed bytes (a highlight saved since) replace in one commit: same
    // count, no second copy, no question.
    let mut bytes = std::fs::read(&pdf).unwrap();
    bytes.extend_from_slice(b"\n% saved again\n");
    std::fs::write(&pdf, bytes).unwrap();
    let mut c = sb.jarvis();
    c.args([
        "kb",
        "add",
        pdf.to_str().unwrap(),
        "--full-text",
        "--title",
        "Reading Order",
        "--authors",
        "A",
        "--doi",
        "10.1/x",
    ]);
    c.stdin(std::process::Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("replaced Reading Order"), "{}", r.stdout);
    assert_eq!(chunk_count(&sb), n);
}

#[test]
fn summary_mode_with_no_model_running_fails_clearly_and_adds_nothing() {
    let sb = Sandbox::new();
    sb.write_config(&format!("[chat]\nollama_host = \"{}\"\n", dead_url()));
    let mut c = sb.jarvis();
    c.args(["kb", "add", pdf_fixture("paper.pdf").to_str().unwrap()]);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("ollama serve") && r.stderr.contains("nothing was added"),
        "{}",
        r.stderr
    );
    assert_eq!(chunk_count(&sb), 0);
    let mut c = sb.jarvis();
    c.args(["kb", "add", "not-a-file-or-id"]);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("not a PDF file, an arXiv id, a DOI or a web address"),
        "{}",
        r.stderr
    );
}

#[test]
fn ctrl_c_in_the_middle_of_an_add_leaves_nothing() {
    let sb = Sandbox::new();
    // A "model" that accepts the connection and never answers: the add
    // blocks in the summary step, after download/convert/annotations.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let _hold = std::thread::spawn(move || {
        let mut conns = Vec::new();
        while let Ok((s, _)) = l.accept() {
            conns.push(s);
        }
    });
    sb.write_config(&format!("[chat]\nollama_host = \"{url}\"\n"));
    let mut c = sb.jarvis();
    c.args([
        "kb",
        "add",
        pdf_fixture("paper_annotated.pdf").to_str().unwrap(),
        "--title",
        "T",
        "--authors",
        "A",
        "--doi",
        "10.1/t",
    ]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    // Give it time to load the model and reach the summary request.
    std::thread::sleep(std::time::Duration::from_secs(6));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the add should still be waiting for the model"
    );
    signal(child.id(), "-INT");
    let ended = child.wait().unwrap();
    assert!(!ended.success());
    assert_eq!(chunk_count(&sb), 0, "an interrupted add leaves nothing behind");
    let mut c = sb.jarvis();
    c.args(["kb", "doctor"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn a_pdf_that_crashes_the_worker_is_a_per_file_error_and_adds_nothing() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    // The failpoint makes the PDF worker child abort as a malformed file
    // crashing PDFium would; `jarvis` itself must survive and say so.
    c.args([
        "kb",
        "add",
        pdf_fixture("paper.pdf").to_str().unwrap(),
        "--full-text",
        "--title",
        "T",
        "--authors",
        "A",
    ])
    .args(["--doi", "10.1/t"])
    .env("JARVIS_FAILPOINT", "pdf_worker_crash");
    let r = run(c);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("paper.pdf") && r.stderr.contains("crashed"),
        "{}",
        r.stderr
    );
    assert_eq!(chunk_count(&sb), 0);
}
