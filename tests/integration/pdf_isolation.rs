//! PDFium runs in a child `jarvis __pdf-worker` under time and memory
//! limits. These tests call the library's parent side from this (the test)
//! process, with the built `jarvis` binary as the worker, and check that
//! good files convert, bad files fail with a message naming them, and a
//! worker that crashes, hangs or runs out of memory becomes a clear error
//! while this process carries on and the child is reaped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::fs::pdf_fixture;
use crate::support::runtime::{pdf_config, pdf_worker};
use jarvis::app::pdf_isolated::{run_pdf_job_with, IsolatedPdfError, PdfJob, PdfJobOutput, PdfOp};
use jarvis::config::Config;

fn run(cfg: &Config, op: PdfOp, path: &Path, failpoint: Option<&str>) -> Result<PdfJobOutput, IsolatedPdfError> {
    run_pdf_job_with(&pdf_worker(failpoint), cfg, &PdfJob::new(cfg, op, path))
}

/// The child is gone: no process with that pid is still our child (alive or
/// a zombie waiting to be reaped).
fn assert_reaped(pid: u32) {
    let me = std::process::id().to_string();
    if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
        let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:")).map(str::trim);
        assert_ne!(ppid, Some(me.as_str()), "child {pid} is still ours:\n{status}");
    }
}

#[test]
fn a_good_pdf_converts_through_the_child_under_the_default_limits() {
    let (_d, cfg) = pdf_config("");
    assert_eq!(cfg.int("rag.pdf_memory_mb"), 2048);
    assert_eq!(cfg.int("rag.pdf_timeout_seconds"), 120);
    let out = run(&cfg, PdfOp::Convert, &pdf_fixture("paper.pdf"), None).expect("convert in the child");
    let c = out.converted.expect("converted");
    assert!(c.page_count >= 1);
    assert!(
        c.markdown
            .contains("The efficient office staff found the affine flow figures difficult."),
        "{}",
        c.markdown
    );
    assert!(out.annotations.is_none() && out.figures.is_none());
}

#[test]
fn all_returns_annotations_and_figures_with_their_png_bytes() {
    let (_d, cfg) = pdf_config("");
    let out = run(&cfg, PdfOp::All, &pdf_fixture("figures.pdf"), None).expect("all");
    let figs = out.figures.expect("figures");
    assert!(!figs.is_empty());
    assert!(figs.iter().all(|f| f.png.starts_with(b"\x89PNG") && f.width > 0));
    assert!(out.converted.is_some() && out.annotations.is_some());

    // A scanned PDF has no text, but its notes still come back.
    let out = run(&cfg, PdfOp::All, &pdf_fixture("scanned.pdf"), None).expect("all on a scan");
    assert!(out.converted.is_none());
    assert!(out.text_error.expect("text error").contains("no extractable text"));
    assert!(!out.annotations.expect("annotations").is_empty());
}

#[test]
fn bad_files_give_clear_per_file_errors() {
    let (dir, cfg) = pdf_config("");
    let garbage = dir.path().join("garbage.pdf");
    std::fs::write(&garbage, b"this is not a PDF at all\n".repeat(100)).expect("write");
    let truncated = dir.path().join("half.pdf");
    let paper = std::fs::read(pdf_fixture("paper.pdf")).expect("read");
    std::fs::write(&truncated, &paper[..paper.len() / 2]).expect("write");
    // Cut in half, PDFium cannot parse what is left (corrupt); cut just
    // before the end, it rebuilds the cross-references and the missing
    // %%EOF gives it away (truncated). Either is a clear per-file error.
    let cases: [(PathBuf, &str, &[&str]); 5] = [
        (garbage, "garbage.pdf", &["corrupt"]),
        (truncated, "half.pdf", &["truncated", "corrupt"]),
        (pdf_fixture("encrypted.pdf"), "encrypted.pdf", &["password"]),
        (pdf_fixture("empty.pdf"), "empty.pdf", &["no pages"]),
        (dir.path().join("missing.pdf"), "missing.pdf", &["cannot read"]),
    ];
    for (path, name, what) in cases {
        match run(&cfg, PdfOp::Convert, &path, None) {
            Err(e @ IsolatedPdfError::Pdf { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.starts_with(&format!("{name}: ")) && what.iter().any(|w| msg.contains(w)),
                    "{name}: {msg}"
                );
            }
            other => panic!("{name}: expected a PDF error, got {other:?}"),
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn a_crashing_worker_is_a_clear_error_and_is_reaped() {
    let (_d, cfg) = pdf_config("");
    let err = run(
        &cfg,
        PdfOp::Convert,
        &pdf_fixture("paper.pdf"),
        Some("pdf_worker_crash"),
    )
    .expect_err("crash");
    let msg = err.to_string();
    assert!(matches!(err, IsolatedPdfError::Crashed { .. }), "{err:?}");
    assert!(
        msg.starts_with("paper.pdf: PDFium crashed (SIGABRT) while converting it") && msg.contains("malformed"),
        "{msg}"
    );
    assert_reaped(err.pid().expect("pid"));
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn a_hanging_worker_is_killed_at_the_timeout_and_reaped() {
    let (_d, cfg) = pdf_config("[rag]\npdf_timeout_seconds = 2");
    let t = Instant::now();
    let err = run(
        &cfg,
        PdfOp::Annotations,
        &pdf_fixture("paper.pdf"),
        Some("pdf_worker_hang"),
    )
    .expect_err("hang");
    assert!(t.elapsed() < Duration::from_secs(15), "took {:?}", t.elapsed());
    assert!(matches!(err, IsolatedPdfError::TimedOut { seconds: 2, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("paper.pdf: PDFium did not finish within 2 s while reading its annotations"),
        "{msg}"
    );
    assert_reaped(err.pid().expect("pid"));
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn a_worker_past_the_memory_limit_is_a_clear_error_and_is_reaped() {
    let (_d, cfg) = pdf_config("[rag]\npdf_memory_mb = 512");
    let t = Instant::now();
    let err = run(
        &cfg,
        PdfOp::Figures,
        &pdf_fixture("figures.pdf"),
        Some("pdf_worker_oom"),
    )
    .expect_err("oom");
    assert!(
        matches!(err, IsolatedPdfError::OutOfMemory { limit_mb: 512, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("figures.pdf: PDFium ran out of memory (limit 512 MiB) while extracting its figures"),
        "{err}"
    );
    // The limit, not the machine, stopped it: well before any OOM killer.
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    assert_reaped(err.pid().expect("pid"));
}

#[test]
fn real_work_fits_under_a_tight_memory_limit() {
    // Far below the 2 GiB default: PDFium plus the binary need little
    // address space when ONNX Runtime is not loaded.
    let (_d, cfg) = pdf_config("[rag]\npdf_memory_mb = 512");
    let out = run(&cfg, PdfOp::All, &pdf_fixture("paper_annotated.pdf"), None).expect("all under 512 MiB");
    assert!(out.converted.is_some());
}

#[test]
fn a_pdf_summary_on_a_provider_without_document_input_converts_through_the_worker() {
    use crate::support::fakes::llm::FakeServer;
    use crate::support::fakes::wires::Wire;
    use jarvis::llm::{make_provider, SummarySource};

    let (_d, cfg) = pdf_config("");
    // The app fills the hook (it used to be left empty, so this summary
    // failed with "needs the PDF converter").
    let mut settings = jarvis::app::llm::llm_settings(&cfg);
    assert!(settings.pdf_to_text.is_some(), "the app must fill the PDF hook");
    let server = FakeServer::start(vec![Wire::Ollama.text(&["A summary."])]);
    settings.ollama_host = server.url.clone();
    // This process is the test harness; the built binary is the worker.
    settings.pdf_to_text = Some(jarvis::app::llm::pdf_to_text(&cfg, Some(pdf_worker(None))));
    let provider = make_provider("ollama", &settings).expect("provider");
    let summary = provider
        .summarize(
            "Summarise the paper.",
            &SummarySource::Pdf(pdf_fixture("paper.pdf")),
            200,
            None,
        )
        .expect("summary");
    assert_eq!(summary, "A summary.");
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(
        sent.contains("The efficient office staff found the affine flow figures difficult."),
        "the converted text reaches the model: {sent}"
    );
    // A PDF the worker cannot read is a clear error naming the file, not a panic.
    let bad = provider
        .summarize(
            "Summarise the paper.",
            &SummarySource::Pdf(pdf_fixture("encrypted.pdf")),
            200,
            None,
        )
        .expect_err("a bad file fails");
    assert!(bad.to_string().contains("encrypted.pdf"), "{bad}");
}
