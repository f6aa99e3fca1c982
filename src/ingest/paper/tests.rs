//! `add_document` with the real PDF engine (in process), the real model and
//! stores, a fake arXiv server on loopback, and a stub chat provider.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::embed::Embedder;
use crate::index::Filter;
use crate::ingest::arxiv::ArxivSettings;
use crate::kb::search::SearchRequest;
use crate::kb::KbSettings;
use crate::llm::provider::{ToolCall, ToolError, ToolOutcome, ToolSpec, TurnEnd, Usage};
use crate::llm::transcript::Message;
use crate::llm::SummarySource;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pdf")
        .join(name)
}

fn pdf_tools() -> InProcessPdf {
    let lib = crate::runtime::ensure_for_tests(crate::runtime::PDFIUM_LIB);
    InProcessPdf {
        engine: crate::pdf::PdfEngine::load(&lib).unwrap(),
    }
}

fn kb(dir: &Path) -> Kb {
    let n = natives();
    let e = Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap();
    Kb::open(dir, e, None, KbSettings::default()).unwrap()
}

/// A provider that answers from a script and records what it was asked.
#[derive(Default)]
struct Stub {
    calls: Mutex<Vec<String>>,
    fail_images_on_page_call: Option<usize>,
    /// This many summaries/captions fail first with a transient 503.
    transient_failures: Mutex<usize>,
}

impl Stub {
    fn transient(&self) -> Result<(), CallError> {
        let mut left = self.transient_failures.lock().unwrap();
        if *left == 0 {
            return Ok(());
        }
        *left -= 1;
        Err(CallError::Llm(crate::llm::LlmError::Server {
            provider: "ollama".into(),
            status: Some(503),
            message: "overloaded — try again".into(),
        }))
    }
}

impl ChatProvider for Stub {
    fn provider_name(&self) -> &str {
        "ollama"
    }
    fn model(&self) -> &str {
        "stub"
    }
    fn complete(&self, m: &[Message], _: u32, _: Option<u32>, _: Option<&Cancel>) -> Result<String, CallError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("complete:{}", m[0].text().len()));
        Ok("{\"title\": \"Inferred Title\", \"authors\": [\"Ada Example\", \"Brian Sample\"]}".into())
    }
    fn summarize(&self, prompt: &str, src: &SummarySource, _: u32, _: Option<&Cancel>) -> Result<String, CallError> {
        let kind = match src {
            SummarySource::Text(t) => format!("text:{}", t.len()),
            SummarySource::Pdf(_) => "pdf".into(),
        };
        self.calls.lock().unwrap().push(format!("summarize:{kind}:{prompt}"));
        self.transient()?;
        Ok("This paper studies reading order in two-column layouts and proposes a gutter detector.".into())
    }
    fn agentic_turn(
        &self,
        _: &mut Vec<Message>,
        _: &[ToolSpec],
        _: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        _: &str,
        _: Option<&Cancel>,
    ) -> Result<TurnEnd, CallError> {
        unreachable!("not used by add_document")
    }
    fn describe_image(&self, image: &[u8], _: &str, _: Option<&Cancel>) -> Result<String, CallError> {
        let mut calls = self.calls.lock().unwrap();
        calls.push(format!("image:{}", image.len()));
        drop(calls);
        self.transient()?;
        let calls = self.calls.lock().unwrap();
        if self.fail_images_on_page_call == Some(calls.iter().filter(|c| c.starts_with("image")).count()) {
            return Err(CallError::Llm(crate::llm::LlmError::config("vision model refused")));
        }
        assert!(image.starts_with(b"\x89PNG"), "figures are sent as PNG");
        Ok("A bar chart comparing throughput of two converters.".into())
    }
    fn pop_usage(&self) -> Option<Usage> {
        None
    }
}

fn settings() -> AddSettings {
    AddSettings {
        figure_captions: false,
        figure_max_per_doc: 20,
        figure_min_pixels: 1000,
        metadata_prompt: crate::prompts::default_of(crate::prompts::PDF_METADATA).unwrap(),
        summary_prompt: crate::prompts::default_of(crate::prompts::PAPER_SUMMARY).unwrap(),
        provider_is_cloud: false,
        llm_retry_backoff: Duration::from_millis(5),
        vault_root: None,
        private_dirs: Vec::new(),
    }
}

fn arxiv_client(base: &str) -> ArxivClient {
    ArxivClient::new(ArxivSettings {
        api_base: base.into(),
        pdf_base: base.into(),
        courtesy_delay: Duration::from_millis(10),
        max_attempts: 3,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(5),
    })
}

fn no_arxiv() -> ArxivClient {
    arxiv_client("http://127.0.0.1:9")
}

fn run(kb: &Kb, provider: Option<&dyn ChatProvider>, req: &AddRequest, confirm: bool) -> Result<AddReport, AddError> {
    run_with(kb, provider, req, confirm, &no_arxiv(), &settings(), &Cancel::new())
}

fn run_with(
    kb: &Kb,
    provider: Option<&dyn ChatProvider>,
    req: &AddRequest,
    confirm: bool,
    arxiv: &ArxivClient,
    s: &AddSettings,
    cancel: &Cancel,
) -> Result<AddReport, AddError> {
    let pdf = pdf_tools();
    let cx = AddContext {
        kb,
        pdf: &pdf,
        provider,
        arxiv,
        remote: None,
        settings: s,
        confirm: &|_| confirm,
        progress: &|_| {},
        cancel,
        actor: &crate::kb::Actor::Cli,
    };
    add_document(&cx, req)
}

fn local(name: &str, mode: Mode) -> AddRequest {
    AddRequest {
        input: Input::Local(fixture(name)),
        mode,
        explicit: PdfMetadata::default(),
        figures: false,
    }
}

#[test]
fn full_text_add_stores_body_and_each_annotation_as_its_own_chunk() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let stub = Stub::default();
    let r = run(&kb, Some(&stub), &local("paper_annotated.pdf", Mode::FullText), true).unwrap();
    assert!(r.body_chunks > 1, "{r:?}");
    assert!(r.annotation_chunks >= 1, "{r:?}");
    assert_eq!(r.title, "Inferred Title", "metadata inferred with one completion");
    assert_eq!(
        stub.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.starts_with("complete"))
            .count(),
        1
    );
    assert!(r.source.starts_with("file:///") && r.source.ends_with("paper_annotated.pdf"));
    let mut req = SearchRequest::new("faithfully converted documents", 5);
    req.filter = Filter {
        annotation_kind: Some("highlight".into()),
        ..Filter::default()
    };
    let hits = kb.search(&req).unwrap();
    let h = &hits[0].record;
    assert!(h.text.starts_with("[HIGHLIGHT p.1]"), "{}", h.text);
    assert_eq!(h.meta_str("note_text"), Some("Core claim of the paper."));
    assert_eq!(h.meta_str("doc_type"), Some("paper"));
    assert_eq!(h.meta_str("visibility"), Some("public"));
    assert_eq!(h.meta_str("source"), Some(r.source.as_str()));
    assert_eq!(h.meta_i64("page"), Some(1));
    let body = kb.get_document_chunks(&r.source, 1).unwrap();
    assert_eq!(body.total_chunks, r.body_chunks + r.annotation_chunks);
    assert_eq!(body.chunks[0].meta_str("storage_mode"), Some("full_text"));
}

/// Change detection: an unchanged re-add is a no-op that asks nothing; the
/// same file with new bytes (new highlights saved) replaces the old entry
/// in one commit, without a question.
#[test]
fn a_re_add_skips_unchanged_bytes_and_replaces_changed_ones() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let pdf = t.path().join("copy.pdf");
    std::fs::copy(fixture("annotated.pdf"), &pdf).unwrap();
    let req = AddRequest {
        input: Input::Local(pdf.clone()),
        ..local("annotated.pdf", Mode::FullText)
    };
    let first = run(&kb, None, &req, true).unwrap();
    assert!(first.skipped.is_none() && !first.replaced);
    let ids = kb.store().all_ids().unwrap();
    let seq = kb.store().seq().unwrap();
    // `confirm` would say yes; it must not even be asked.
    let again = run(&kb, None, &req, true).unwrap();
    assert!(again.unchanged && !again.replaced, "{again:?}");
    assert!(again.skipped.as_deref().unwrap().contains("unchanged"), "{again:?}");
    assert_eq!(kb.store().all_ids().unwrap(), ids);
    assert_eq!(kb.store().seq().unwrap(), seq, "nothing written");
    assert_eq!(
        kb.source_change(
            &first.source,
            &crate::kb::change::content_hash(&std::fs::read(&pdf).unwrap())
        )
        .unwrap(),
        crate::kb::change::SourceChange::Unchanged
    );

    // New bytes: replaced in one commit, even though `confirm` says no.
    let mut bytes = std::fs::read(&pdf).unwrap();
    bytes.extend_from_slice(b"\n% a highlight saved later\n");
    std::fs::write(&pdf, &bytes).unwrap();
    let changed = run(&kb, None, &req, false).unwrap();
    assert!(changed.replaced && changed.skipped.is_none(), "{changed:?}");
    assert_eq!(kb.store().seq().unwrap(), seq + 1, "one commit");
    assert_eq!(kb.count().unwrap(), ids.len());
    assert!(kb.store().all_ids().unwrap().iter().all(|id| !ids.contains(id)));
    assert!(kb.agreement().unwrap().ok());
}

/// The same title from another file is a question: declined adds nothing,
/// accepted adds a separate entry.
#[test]
fn the_same_title_from_another_source_asks() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let (a, b) = (t.path().join("a.pdf"), t.path().join("b.pdf"));
    // Different bytes and DOIs: only the title is shared (the same bytes
    // or DOI would be the same paper by another route, which replaces).
    std::fs::copy(fixture("annotated.pdf"), &a).unwrap();
    let mut other = std::fs::read(fixture("annotated.pdf")).unwrap();
    other.extend_from_slice(b"\n% another printing\n");
    std::fs::write(&b, other).unwrap();
    let req = |p: &Path| AddRequest {
        input: Input::Local(p.to_path_buf()),
        explicit: PdfMetadata {
            title: Some("Notes".into()),
            authors: Some("Me".into()),
            doi: Some(format!("10.1234/{}", p.file_stem().unwrap().to_string_lossy())),
        },
        ..local("annotated.pdf", Mode::FullText)
    };
    let first = run(&kb, None, &req(&a), true).unwrap();
    let before = kb.count().unwrap();
    let ids_before = kb.store().all_ids().unwrap();
    let declined = run(&kb, None, &req(&b), false).unwrap();
    assert!(declined.skipped.is_some() && !declined.unchanged);
    assert_eq!(kb.store().all_ids().unwrap(), ids_before, "declining changes nothing");
    let again = run(&kb, None, &req(&b), true).unwrap();
    assert!(!again.replaced && again.skipped.is_none());
    assert_eq!(kb.count().unwrap(), before * 2, "a separate entry");
    assert_ne!(first.source, again.source);
    assert!(kb.agreement().unwrap().ok());
}

#[test]
fn a_scanned_pdf_keeps_its_highlights_and_a_bad_file_adds_nothing() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let r = run(&kb, None, &local("scanned.pdf", Mode::FullText), true).unwrap();
    assert_eq!(r.body_chunks, 0);
    assert!(r.annotation_chunks >= 1);
    assert!(
        r.warnings.iter().any(|w| w.contains("no extractable text")),
        "{:?}",
        r.warnings
    );
    let before = kb.count().unwrap();
    let err = run(&kb, None, &local("encrypted.pdf", Mode::FullText), true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("encrypted.pdf") && err.contains("encrypted"), "{err}");
    let junk = t.path().join("junk.pdf");
    std::fs::write(&junk, b"%PDF-1.4 truncated garbage").unwrap();
    let req = AddRequest {
        input: Input::Local(junk),
        ..local("annotated.pdf", Mode::FullText)
    };
    assert!(run(&kb, None, &req, true).is_err());
    assert_eq!(kb.count().unwrap(), before);
}

/// Annotations first, always: in the default summary mode a scanned PDF
/// keeps its highlights (with or without a model) and says its body could
/// not be converted; nothing is sent to be summarised.
#[test]
fn a_scanned_pdf_in_summary_mode_keeps_its_highlights() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let stub = Stub::default();
    let r = run(&kb, Some(&stub), &local("scanned.pdf", Mode::Summary), true).unwrap();
    assert_eq!(r.body_chunks, 0);
    assert!(r.annotation_chunks >= 1, "{r:?}");
    assert!(
        r.warnings.iter().any(|w| w.contains("body could not be converted")),
        "{:?}",
        r.warnings
    );
    assert!(
        !stub.calls.lock().unwrap().iter().any(|c| c.starts_with("summarize")),
        "no summary of an empty body"
    );
    assert_eq!(kb.count().unwrap(), r.annotation_chunks);
}

#[test]
fn a_scanned_pdf_in_summary_mode_without_a_model_keeps_its_highlights() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let r = run(&kb, None, &local("scanned.pdf", Mode::Summary), true).unwrap();
    assert!(r.annotation_chunks >= 1 && r.body_chunks == 0, "{r:?}");
}

#[test]
fn summary_mode_stores_the_summary_and_fails_cleanly_without_a_model() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let stub = Stub::default();
    let r = run(&kb, Some(&stub), &local("paper.pdf", Mode::Summary), true).unwrap();
    assert_eq!(r.body_chunks, 1);
    let calls = stub.calls.lock().unwrap().clone();
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("summarize:text:") && c.contains("the paper titled \"Inferred Title\"")),
        "{calls:?}"
    );
    let docs = kb.list_documents(&Filter::default(), 5).unwrap();
    assert_eq!(
        docs[0].meta.get("storage_mode").and_then(|v| v.as_str()),
        Some("summary")
    );

    // An unreachable model: metadata inference gives up quickly, the summary
    // fails with the provider's actionable error, and nothing is stored.
    let before = kb.store().all_ids().unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let s = crate::llm::settings::LlmSettings {
        ollama_host: url,
        ..Default::default()
    };
    let dead = crate::llm::spec::make_provider("ollama", &s).unwrap();
    let err = run(&kb, Some(dead.as_ref()), &local("annotated.pdf", Mode::Summary), true)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ollama serve") && err.contains("nothing was added"),
        "{err}"
    );
    assert_eq!(kb.store().all_ids().unwrap(), before);
    // Full text with the same dead model still works: inference degrades.
    let r = run(&kb, Some(dead.as_ref()), &local("annotated.pdf", Mode::FullText), true).unwrap();
    assert_eq!(r.title, "annotated");
}

#[test]
fn transient_llm_failures_are_retried_for_summaries_and_captions() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let stub = Stub {
        transient_failures: Mutex::new(2),
        ..Stub::default()
    };
    let r = run(&kb, Some(&stub), &local("paper.pdf", Mode::Summary), true).unwrap();
    assert_eq!(r.body_chunks, 1, "stored after two overloaded replies");
    let summaries = stub
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("summarize"))
        .count();
    assert_eq!(summaries, 3);

    let stub = Stub {
        transient_failures: Mutex::new(1),
        ..Stub::default()
    };
    let mut req = local("figures.pdf", Mode::FullText);
    req.figures = true;
    req.explicit = PdfMetadata {
        title: Some("Figs".into()),
        authors: Some("A".into()),
        doi: Some("10.1/f".into()),
    };
    let r = run(&kb, Some(&stub), &req, true).unwrap();
    let images = stub
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("image"))
        .count();
    assert_eq!(
        r.figure_chunks,
        images - 1,
        "the first caption was retried, not skipped"
    );
    assert!(!r.warnings.iter().any(|w| w.contains("skipped")), "{:?}", r.warnings);
}

#[test]
fn figures_are_captioned_one_chunk_each_and_a_failure_skips_one() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let stub = Stub {
        fail_images_on_page_call: Some(1),
        ..Stub::default()
    };
    let mut req = local("figures.pdf", Mode::FullText);
    req.figures = true;
    req.explicit = PdfMetadata {
        title: Some("Figs".into()),
        authors: Some("A".into()),
        doi: Some("10.1/f".into()),
    };
    let r = run(&kb, Some(&stub), &req, true).unwrap();
    let images = stub
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.starts_with("image"))
        .count();
    assert!(images >= 2, "{images} images sent");
    assert_eq!(r.figure_chunks, images - 1, "the failing one is skipped");
    assert!(r.warnings.iter().any(|w| w.contains("skipped")), "{:?}", r.warnings);
    let mut sr = SearchRequest::new("bar chart throughput", 3);
    sr.filter.annotation_kind = Some("figure".into());
    let hits = kb.search(&sr).unwrap();
    assert!(hits[0].record.text.starts_with("[FIGURE p."), "{}", hits[0].record.text);
}

#[test]
fn an_arxiv_add_survives_an_empty_feed_and_a_stop_adds_nothing() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(t.path());
    let pdf = std::fs::read(fixture("paper.pdf")).unwrap();
    let entry = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/2301.01234v1</id>
        <title>Reading Order in Two-Column Papers</title><summary>We study reading order.</summary>
        <author><name>Ada Example</name></author></entry></feed>"#;
    let empty = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>q</title></feed>"#;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let script: Vec<Vec<u8>> = vec![empty.into(), entry.into(), pdf];
    let server = std::thread::spawn(move || {
        let mut paths = Vec::new();
        for body in script {
            let (mut s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            paths.push(line.split_whitespace().nth(1).unwrap_or("").to_string());
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            s.write_all(&body).unwrap();
        }
        paths
    });
    let req = AddRequest {
        input: Input::parse("https://arxiv.org/abs/2301.01234v1").unwrap(),
        mode: Mode::FullText,
        explicit: PdfMetadata::default(),
        figures: false,
    };
    let r = run_with(&kb, None, &req, true, &arxiv_client(&base), &settings(), &Cancel::new()).unwrap();
    assert_eq!(r.source, "https://arxiv.org/abs/2301.01234");
    assert_eq!(r.title, "Reading Order in Two-Column Papers");
    assert_eq!(r.authors, "Ada Example");
    assert!(r.body_chunks > 1);
    let paths = server.join().unwrap();
    assert_eq!(paths.len(), 3, "empty feed retried, then the PDF: {paths:?}");
    assert_eq!(paths[2], "/pdf/2301.01234v1");

    // Stopped before the commit: nothing is added.
    let before = kb.store().all_ids().unwrap();
    let cancel = Cancel::new();
    cancel.cancel();
    let err = run_with(
        &kb,
        None,
        &local("annotated.pdf", Mode::FullText),
        true,
        &no_arxiv(),
        &settings(),
        &cancel,
    );
    assert!(matches!(err, Err(AddError::Cancelled)));
    assert_eq!(kb.store().all_ids().unwrap(), before);
}

/// A PDF in one of the vault's private folders is private, and with a
/// cloud provider nothing of it reaches the model: no metadata inference,
/// no summary (refused with the fix), no figure captions.
#[test]
fn a_pdf_in_a_private_vault_folder_is_private_and_never_reaches_a_cloud_model() {
    let t = tempfile::tempdir().unwrap();
    let kb = kb(&t.path().join("kb"));
    let vault = t.path().join("vault");
    std::fs::create_dir_all(vault.join("private")).unwrap();
    let pdf = vault.join("private/medical.pdf");
    std::fs::copy(fixture("figures.pdf"), &pdf).unwrap();
    let cloud = AddSettings {
        provider_is_cloud: true,
        figure_captions: true,
        vault_root: Some(vault.clone()),
        private_dirs: vec!["private".into()],
        ..settings()
    };
    let stub = Stub::default();
    let req = |mode| AddRequest {
        input: Input::Local(pdf.clone()),
        ..local("figures.pdf", mode)
    };
    let go = |mode, s: &AddSettings| run_with(&kb, Some(&stub), &req(mode), true, &no_arxiv(), s, &Cancel::new());
    let e = go(Mode::Summary, &cloud).unwrap_err();
    assert!(matches!(e, AddError::PrivateNeedsLocalSummary(_)), "{e}");
    assert!(e.to_string().contains("--full-text"), "{e}");
    let r = go(Mode::FullText, &cloud).unwrap();
    assert!(r.private);
    assert!(
        stub.calls.lock().unwrap().is_empty(),
        "the cloud model saw nothing: {:?}",
        stub.calls
    );
    assert!(
        r.warnings.iter().any(|w| w.contains("never go to a cloud model")),
        "{:?}",
        r.warnings
    );
    let doc = kb.get_document_chunks(&r.source, 1).unwrap();
    assert!(doc.total_chunks > 0);
    assert!(doc.chunks.iter().all(|c| c.meta_str("visibility") == Some("private")));
    assert_eq!(
        kb.store().doc_totals().unwrap().legacy_private_papers,
        Vec::<String>::new()
    );
    // The same folder seen through a symlink elsewhere is still private;
    // outside the private folder a PDF is public.
    let elsewhere = t.path().join("papers");
    std::os::unix::fs::symlink(vault.join("private"), &elsewhere).unwrap();
    assert!(cloud.visibility_of(&elsewhere.join("medical.pdf")).is_private());
    std::fs::copy(fixture("figures.pdf"), vault.join("public.pdf")).unwrap();
    assert!(!cloud.visibility_of(&vault.join("public.pdf")).is_private());
    // A local model may read it: metadata and summary go ahead.
    let local_settings = AddSettings {
        provider_is_cloud: false,
        figure_captions: false,
        ..cloud
    };
    std::fs::copy(fixture("paper.pdf"), vault.join("private/notes.pdf")).unwrap();
    let r = run_with(
        &kb,
        Some(&stub),
        &AddRequest {
            input: Input::Local(vault.join("private/notes.pdf")),
            ..local("paper.pdf", Mode::Summary)
        },
        true,
        &no_arxiv(),
        &local_settings,
        &Cancel::new(),
    )
    .unwrap();
    assert!(r.private && r.body_chunks > 0, "{r:?}");
    assert!(!stub.calls.lock().unwrap().is_empty());
}

/// PDF tools that must not be asked: any call fails the test.
struct NoPdfCalls;

impl PdfTools for NoPdfCalls {
    fn convert(&self, name: &str, _: &[u8]) -> Result<Converted, PdfFailure> {
        panic!("convert({name}) was called for a paper with no PDF")
    }
    fn annotations(&self, name: &str, _: &[u8]) -> Result<Vec<Annotation>, PdfFailure> {
        panic!("annotations({name}) was called for a paper with no PDF")
    }
    fn figures(&self, name: &str, _: &[u8], _: usize, _: u64) -> Result<Vec<Figure>, PdfFailure> {
        panic!("figures({name}) was called for a paper with no PDF")
    }
}

#[test]
fn a_paper_without_a_pdf_never_reaches_the_pdf_worker() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb(dir.path());
    let (arxiv, s, cancel) = (no_arxiv(), settings(), Cancel::new());
    let cx = AddContext {
        kb: &kb,
        pdf: &NoPdfCalls,
        provider: None,
        arxiv: &arxiv,
        remote: None,
        settings: &s,
        confirm: &|_| true,
        progress: &|_| {},
        cancel: &cancel,
        actor: &crate::kb::Actor::Cli,
    };
    // What a DOI added as metadata and abstract looks like between steps.
    let paper = Paper {
        name: "10.1000/none".into(),
        bytes: Vec::new(),
        source: "doi:10.1000/none".into(),
        file_path: None,
        meta: PdfMetadata::default(),
        extra: Metadata::new(),
        abstract_text: Some("An abstract.".into()),
        visibility: Visibility::Public,
        provider: None,
        hash: String::new(),
        fingerprint: None,
    };
    let req = AddRequest {
        input: Input::Local(fixture("none.pdf")),
        mode: Mode::FullText,
        explicit: PdfMetadata::default(),
        figures: false,
    };
    let mut report = AddReport::default();
    assert!(steps::read_annotations(&cx, &paper, &mut report).is_empty());
    assert!(steps::convert(&cx, &req, &paper, &[], &mut report).unwrap().is_none());
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}
