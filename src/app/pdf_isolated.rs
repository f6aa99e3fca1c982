//! PDF work in a child process: the only way ingest and `convert-pdf` reach
//! PDFium.
//!
//! Owns: the request and reply that cross the pipe to the hidden
//! `jarvis __pdf-worker` subcommand, the worker's side ([`serve_worker`]),
//! and the parent's side ([`run_pdf_job`]) which turns how the child ended
//! — a reported `PdfError`, a crash, a hang past `rag.pdf_timeout_seconds`,
//! an allocation past `rag.pdf_memory_mb` — into one error naming the file.
//! PDFium is C++ and real PDFs are hostile; a fault there must cost one
//! file, never the web server or the scheduler that asked.
//! Must not: touch the knowledge base or print; the CLI does the pipes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Config;
/// The page-drawing limits an edge clamps a request to before asking.
pub use crate::pdf::{clamp_width, MAX_RENDER_PAGES};
use crate::pdf::{Annotation, Converted, Figure, OcrCandidate, OcrImage, OcrInput, PageImage, PdfEngine, PdfError};
use crate::runtime::{self, RuntimeError};
use crate::sandbox::{self, ChildSpec, Ending, SandboxError};

/// The hidden subcommand the parent runs.
pub const WORKER_SUBCOMMAND: &str = "__pdf-worker";
/// Worker exit code: the reply on stdout is a reported `PdfError`.
pub const EXIT_PDF_ERROR: u8 = 3;
/// Worker exit code: the request on stdin could not be read.
pub const EXIT_BAD_REQUEST: u8 = 2;

/// What to read from the PDF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PdfOp {
    Convert,
    Annotations,
    Figures,
    /// All three in one open. A scanned PDF's "no extractable text" does not
    /// fail the job: its annotations and figures still come back, with the
    /// reason in [`PdfJobOutput::text_error`].
    All,
    /// Draw one page ([`PdfJob::page`], [`PdfJob::width`] pixels wide) as a
    /// PNG: the editor's preview of a compiled draft.
    Page,
    /// Draw the pages of [`PdfJob::ocr_render`] as pictures for OCR
    /// (`pdf_ocr.rs`).
    OcrRender,
}

impl PdfOp {
    fn doing(self) -> &'static str {
        match self {
            PdfOp::Convert => "converting it",
            PdfOp::Annotations => "reading its annotations",
            PdfOp::Figures => "extracting its figures",
            PdfOp::All => "reading it",
            PdfOp::Page => "drawing a page of it",
            PdfOp::OcrRender => "drawing its pages for OCR",
        }
    }
}

/// One file's worth of PDF work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PdfJob {
    pub op: PdfOp,
    pub path: PathBuf,
    /// How messages name the file (the file name, or e.g. `arXiv:2301.01234`
    /// for a download held in a temporary file).
    pub name: String,
    pub max_figures: usize,
    pub min_pixels: u64,
    /// For [`PdfOp::Page`]: which page (1-based) and how wide.
    #[serde(default)]
    pub page: u32,
    #[serde(default)]
    pub width: u32,
    /// For [`PdfOp::Convert`]: when the conversion has pages that need OCR,
    /// list them in [`PdfJobOutput::ocr_candidates`] (the parent then has
    /// them read and converts again with [`PdfJob::ocr`]).
    #[serde(default)]
    pub ocr_plan: bool,
    /// For [`PdfOp::Convert`] and [`PdfOp::All`]: OCR's reading of the
    /// pages that need it, or why there is none (the parent sets it).
    #[serde(default)]
    pub ocr: Option<OcrInput>,
    /// For [`PdfOp::OcrRender`].
    #[serde(default)]
    pub ocr_render: Option<OcrRender>,
}

/// Which pages to draw for OCR, where, and how finely.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OcrRender {
    /// 1-based.
    pub pages: Vec<usize>,
    pub dir: PathBuf,
    pub dpi: u32,
}

impl PdfJob {
    /// A job named after the file, with the figure limits from config.
    pub fn new(cfg: &Config, op: PdfOp, path: &Path) -> Self {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        PdfJob {
            op,
            path: path.to_path_buf(),
            name,
            max_figures: usize::try_from(cfg.int("rag.figure_max_per_doc")).unwrap_or(0),
            min_pixels: u64::try_from(cfg.int("rag.figure_min_pixels")).unwrap_or(0),
            page: 0,
            width: 0,
            ocr_plan: false,
            ocr: None,
            ocr_render: None,
        }
    }
}

/// What the worker read. Fields the op did not ask for are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PdfJobOutput {
    pub converted: Option<Converted>,
    pub annotations: Option<Vec<Annotation>>,
    #[serde(with = "figures_b64")]
    pub figures: Option<Vec<Figure>>,
    /// For [`PdfOp::All`] only: why there is no `converted` (a scanned PDF).
    pub text_error: Option<String>,
    /// For [`PdfOp::Page`]: the drawn page.
    #[serde(with = "page_b64", default)]
    pub page: Option<PageImage>,
    /// For [`PdfJob::ocr_plan`]: the pages that need OCR (empty when none
    /// do, or when the job did not ask).
    #[serde(default)]
    pub ocr_candidates: Vec<OcrCandidate>,
    /// For [`PdfOp::OcrRender`]: the pictures drawn.
    #[serde(default)]
    pub ocr_images: Vec<OcrImage>,
}

/// What crosses stdin.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerRequest {
    job: PdfJob,
    /// Resolved by the parent so the child never unpacks the runtime bundle
    /// or reads config.
    pdfium: PathBuf,
}

/// What crosses stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum WorkerReply {
    Ok(Box<PdfJobOutput>),
    Error { message: String },
}

/// PNG bytes as base64: JSON arrays of numbers would be ~3.5× the size.
mod figures_b64 {
    use base64::Engine as _;
    use serde::{Deserialize, Serialize};

    use crate::pdf::Figure;

    #[derive(Serialize, Deserialize)]
    struct Wire {
        page: u32,
        png: String,
        width: u32,
        height: u32,
    }

    pub fn serialize<S: serde::Serializer>(v: &Option<Vec<Figure>>, s: S) -> Result<S::Ok, S::Error> {
        let wire: Option<Vec<Wire>> = v.as_ref().map(|figs| {
            figs.iter()
                .map(|f| Wire {
                    page: f.page,
                    png: base64::engine::general_purpose::STANDARD.encode(&f.png),
                    width: f.width,
                    height: f.height,
                })
                .collect()
        });
        wire.serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<Figure>>, D::Error> {
        let wire: Option<Vec<Wire>> = Option::deserialize(d)?;
        wire.map(|figs| {
            figs.into_iter()
                .map(|w| {
                    let png = base64::engine::general_purpose::STANDARD
                        .decode(w.png.as_bytes())
                        .map_err(serde::de::Error::custom)?;
                    Ok(Figure {
                        page: w.page,
                        png,
                        width: w.width,
                        height: w.height,
                    })
                })
                .collect()
        })
        .transpose()
    }
}

/// A drawn page's PNG as base64, like the figures.
mod page_b64 {
    use base64::Engine as _;
    use serde::{Deserialize, Serialize};

    use crate::pdf::PageImage;

    #[derive(Serialize, Deserialize)]
    struct Wire {
        page: u32,
        pages: u32,
        png: String,
        width: u32,
        height: u32,
    }

    pub fn serialize<S: serde::Serializer>(v: &Option<PageImage>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref()
            .map(|p| Wire {
                page: p.page,
                pages: p.pages,
                png: base64::engine::general_purpose::STANDARD.encode(&p.png),
                width: p.width,
                height: p.height,
            })
            .serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<PageImage>, D::Error> {
        let wire: Option<Wire> = Option::deserialize(d)?;
        wire.map(|w| {
            let png = base64::engine::general_purpose::STANDARD
                .decode(w.png.as_bytes())
                .map_err(serde::de::Error::custom)?;
            Ok(PageImage {
                page: w.page,
                pages: w.pages,
                png,
                width: w.width,
                height: w.height,
            })
        })
        .transpose()
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IsolatedPdfError {
    /// PDFium (or reading the file) failed cleanly; the message names the
    /// file and says what to do.
    #[error("{message}")]
    Pdf { name: String, message: String },
    #[error("{name}: PDFium crashed ({signal}) while {doing} — the file is probably malformed; nothing was extracted from it")]
    Crashed {
        name: String,
        doing: &'static str,
        signal: String,
        pid: u32,
    },
    #[error("{name}: PDFium ran out of memory (limit {limit_mb} MiB) while {doing} — the file is probably malformed or very large; nothing was extracted from it (raise `rag.pdf_memory_mb` if the file is genuine)")]
    OutOfMemory {
        name: String,
        doing: &'static str,
        limit_mb: u64,
        pid: u32,
    },
    #[error("{name}: PDFium did not finish within {seconds} s while {doing} and was stopped — the file is probably malformed or very large; nothing was extracted from it (raise `rag.pdf_timeout_seconds` if the file is genuine)")]
    TimedOut {
        name: String,
        doing: &'static str,
        seconds: u64,
        pid: u32,
    },
    #[error(
        "{name}: the PDF worker process failed unexpectedly ({ending}): {detail} — see the log in $JARVIS_HOME/logs"
    )]
    Worker {
        name: String,
        ending: String,
        detail: String,
        pid: u32,
    },
    #[error("{name}: cannot find PDFium: {source}")]
    Runtime {
        name: String,
        #[source]
        source: RuntimeError,
    },
    #[error("{name}: cannot run the PDF worker process: {source}")]
    Sandbox {
        name: String,
        #[source]
        source: SandboxError,
    },
}

impl IsolatedPdfError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            IsolatedPdfError::Pdf { .. }
            | IsolatedPdfError::Crashed { .. }
            | IsolatedPdfError::OutOfMemory { .. }
            | IsolatedPdfError::TimedOut { .. } => ErrorKind::User,
            IsolatedPdfError::Worker { .. } => ErrorKind::Internal,
            IsolatedPdfError::Runtime { source, .. } => source.kind(),
            IsolatedPdfError::Sandbox { source, .. } => source.kind(),
        }
    }
}

impl IsolatedPdfError {
    /// The worker's pid, when one ran and ended abnormally.
    pub fn pid(&self) -> Option<u32> {
        match self {
            IsolatedPdfError::Crashed { pid, .. }
            | IsolatedPdfError::OutOfMemory { pid, .. }
            | IsolatedPdfError::TimedOut { pid, .. }
            | IsolatedPdfError::Worker { pid, .. } => Some(*pid),
            _ => None,
        }
    }
}

/// Which program runs the worker, with what extra environment. Production
/// uses [`WorkerCommand::current`]; tests, whose own executable is the test
/// harness, point it at the built `jarvis` binary and may set failpoints.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub exe: PathBuf,
    pub env: Vec<(String, String)>,
}

impl WorkerCommand {
    pub fn current() -> Result<Self, SandboxError> {
        Ok(WorkerCommand {
            exe: sandbox::current_exe()?,
            env: Vec::new(),
        })
    }
}

/// Run `req` in a child `jarvis __pdf-worker` with the time and memory
/// limits from `[rag]`.
pub fn run_pdf_job(cfg: &Config, req: &PdfJob) -> Result<PdfJobOutput, IsolatedPdfError> {
    run_pdf_job_stoppable(cfg, req, None)
}

/// [`run_pdf_job`] that kills the worker (its whole process group) as soon
/// as `stop` says so — Ctrl-C in `kb add` must not wait for PDFium.
pub fn run_pdf_job_stoppable(
    cfg: &Config,
    req: &PdfJob,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<PdfJobOutput, IsolatedPdfError> {
    let worker = WorkerCommand::current().map_err(|source| IsolatedPdfError::Sandbox {
        name: req.name.clone(),
        source,
    })?;
    run_worker(&worker, cfg, req, stop)
}

/// Draw page `page` (1-based) of the PDF at `path`, `width` pixels wide,
/// in a child process (the web server never loads PDFium itself).
pub fn render_page_isolated(
    worker: &WorkerCommand,
    cfg: &Config,
    path: &Path,
    name: &str,
    page: u32,
    width: u32,
) -> Result<PageImage, IsolatedPdfError> {
    let mut req = PdfJob::new(cfg, PdfOp::Page, path);
    req.name = name.to_string();
    req.page = page;
    req.width = width;
    run_worker(worker, cfg, &req, None)?
        .page
        .ok_or_else(|| IsolatedPdfError::Worker {
            name: name.to_string(),
            ending: "exited 0".into(),
            detail: "it returned no page; this is a bug in jarvis".into(),
            pid: 0,
        })
}

/// [`run_pdf_job`] with an explicit worker program.
pub fn run_pdf_job_with(worker: &WorkerCommand, cfg: &Config, req: &PdfJob) -> Result<PdfJobOutput, IsolatedPdfError> {
    run_worker(worker, cfg, req, None)
}

/// [`run_pdf_job_stoppable`] with `worker` instead of this executable.
pub fn run_pdf_job_stoppable_with(
    worker: &WorkerCommand,
    cfg: &Config,
    req: &PdfJob,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<PdfJobOutput, IsolatedPdfError> {
    run_worker(worker, cfg, req, stop)
}

/// A conversion goes through OCR when `pdf.ocr` is on (`pdf_ocr.rs`);
/// everything else is one worker run ([`PdfOp::All`] reads the text layer
/// only, or the readings its job brings).
fn run_worker(
    worker: &WorkerCommand,
    cfg: &Config,
    req: &PdfJob,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<PdfJobOutput, IsolatedPdfError> {
    match req.op {
        PdfOp::Convert => super::pdf_ocr::convert(worker, cfg, req, stop),
        _ => run_worker_once(worker, cfg, req, stop),
    }
}

/// One `jarvis __pdf-worker` run.
pub(super) fn run_worker_once(
    worker: &WorkerCommand,
    cfg: &Config,
    req: &PdfJob,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<PdfJobOutput, IsolatedPdfError> {
    let name = req.name.clone();
    let lib = runtime::resolve_pdfium(&cfg.home, &super::runtime_check::overrides(cfg)).map_err(|source| {
        IsolatedPdfError::Runtime {
            name: name.clone(),
            source,
        }
    })?;
    let request = WorkerRequest {
        job: req.clone(),
        pdfium: lib.path,
    };
    let input = serde_json::to_vec(&request).map_err(|e| IsolatedPdfError::Worker {
        name: name.clone(),
        ending: "not started".into(),
        detail: format!("cannot encode the request: {e}"),
        pid: 0,
    })?;
    let seconds = u64::try_from(cfg.int("rag.pdf_timeout_seconds")).unwrap_or(120).max(1);
    let limit_mb = u64::try_from(cfg.int("rag.pdf_memory_mb")).unwrap_or(2048).max(1);
    let outcome = sandbox::run_child(
        &worker.exe,
        &ChildSpec {
            args: &[WORKER_SUBCOMMAND],
            env: &worker.env,
            stdin: Some(&input),
            inherit: sandbox::env::SELF_INHERIT,
            timeout: Duration::from_secs(seconds),
            memory_limit: Some(limit_mb.saturating_mul(1024 * 1024)),
            // The reply carries figures as PNG bytes; it can be no larger
            // than what the worker could hold in memory.
            output_limit: usize::try_from(limit_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX),
            stop,
            ..ChildSpec::default()
        },
    )
    .map_err(|source| IsolatedPdfError::Sandbox {
        name: name.clone(),
        source,
    })?;
    let pid = outcome.pid;
    let doing = req.op.doing();
    tracing::debug!(file = %name, pid, ending = %outcome.ending, elapsed_ms = outcome.elapsed_ms, "PDF worker ended");
    forward_worker_log(pid, &outcome.stderr);
    let reply = || serde_json::from_slice::<WorkerReply>(&outcome.stdout);
    match &outcome.ending {
        Ending::Exited { code } if *code == 0 || *code == i32::from(EXIT_PDF_ERROR) => match reply() {
            Ok(WorkerReply::Ok(out)) if *code == 0 => Ok(*out),
            Ok(WorkerReply::Error { message }) => Err(IsolatedPdfError::Pdf { name, message }),
            Ok(WorkerReply::Ok(_)) => Err(IsolatedPdfError::Worker {
                name,
                ending: outcome.ending.to_string(),
                detail: "it reported success with a failure exit code".into(),
                pid,
            }),
            Err(e) => Err(IsolatedPdfError::Worker {
                name,
                ending: outcome.ending.to_string(),
                detail: format!("its reply cannot be read ({e}); stderr: {}", tail(&outcome.stderr)),
                pid,
            }),
        },
        Ending::Stopped { .. } => Err(IsolatedPdfError::Worker {
            name,
            ending: outcome.ending.to_string(),
            detail: "the work was stopped before it finished".into(),
            pid,
        }),
        Ending::TimedOut { .. } => Err(IsolatedPdfError::TimedOut {
            name,
            doing,
            seconds,
            pid,
        }),
        // Past RLIMIT_AS an allocation fails: Rust's allocator aborts with
        // this message, PDFium's C++ `new` throws bad_alloc and terminates.
        Ending::Signalled { signal, .. }
            if *signal == libc::SIGABRT
                && ["memory allocation of", "bad_alloc", "out of memory"]
                    .iter()
                    .any(|m| outcome.stderr.contains(m)) =>
        {
            Err(IsolatedPdfError::OutOfMemory {
                name,
                doing,
                limit_mb,
                pid,
            })
        }
        Ending::Signalled { signal, .. } => Err(IsolatedPdfError::Crashed {
            name,
            doing,
            signal: short_signal(*signal),
            pid,
        }),
        Ending::Exited { .. } => Err(IsolatedPdfError::Worker {
            name,
            ending: outcome.ending.to_string(),
            detail: tail(&outcome.stderr),
            pid,
        }),
    }
}

fn short_signal(sig: i32) -> String {
    match sig {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGKILL => "SIGKILL, possibly the system's out-of-memory killer".into(),
        other => format!("signal {other}"),
    }
}

/// The last few lines of a child's stderr, for a message.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    match lines[start..].join(" | ") {
        s if s.is_empty() => "no output".into(),
        s => s,
    }
}

/// Copy the worker's tracing output (its stderr) into this process's log,
/// one event per line, keeping the level it was logged at.
fn forward_worker_log(pid: u32, stderr: &str) {
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("ERROR") {
            tracing::error!(target: "jarvis::pdf_worker", pid, "{line}");
        } else if line.starts_with("WARN") {
            tracing::warn!(target: "jarvis::pdf_worker", pid, "{line}");
        } else {
            tracing::info!(target: "jarvis::pdf_worker", pid, "{line}");
        }
    }
}

/// The worker's side: read the request from `input`, do the work, and
/// return the bytes for stdout and the exit code. Failpoints
/// (`JARVIS_FAILPOINT=pdf_worker_crash | pdf_worker_hang | pdf_worker_oom`)
/// let tests prove the parent survives each way a child can go wrong.
pub fn serve_worker(input: &[u8]) -> (Vec<u8>, u8) {
    let request = match decode_request(input) {
        Ok(r) => r,
        Err(e) => {
            return (
                encode(&WorkerReply::Error {
                    message: format!("the PDF worker got an unreadable request ({e}); this is a bug in jarvis"),
                }),
                EXIT_BAD_REQUEST,
            )
        }
    };
    failpoints();
    match work(&request) {
        Ok(out) => (encode(&WorkerReply::Ok(Box::new(out))), 0),
        Err(e) => (encode(&WorkerReply::Error { message: e.to_string() }), EXIT_PDF_ERROR),
    }
}

/// The worker's request decoder, on its own so the fuzz target
/// (`tests/fuzz`) can drive exactly what a child reads from its stdin.
pub fn decode_request(input: &[u8]) -> Result<WorkerRequest, serde_json::Error> {
    let req: WorkerRequest = serde_json::from_slice(input)?;
    // A coordinate past f32's range reads as infinity, which JSON cannot
    // carry back: no parent sends one.
    let finite = req
        .job
        .ocr
        .iter()
        .flat_map(|o| &o.pages)
        .flat_map(|p| &p.words)
        .all(|w| [w.x0, w.top, w.x1, w.bottom].iter().all(|v| v.is_finite()));
    if !finite {
        return Err(serde::de::Error::custom("an OCR word's box is not a finite number"));
    }
    Ok(req)
}

impl WorkerRequest {
    /// The request as the parent would send it again (the fuzz target checks
    /// that a decoded request survives a round trip unchanged).
    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

fn encode(reply: &WorkerReply) -> Vec<u8> {
    // Serialising plain data cannot fail; an empty reply would still be
    // reported by the parent as unreadable rather than lost.
    serde_json::to_vec(reply).unwrap_or_default()
}

fn failpoints() {
    crate::failpoint::abort_at("pdf_worker_crash");
    if crate::failpoint::hit("pdf_worker_hang") {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    if crate::failpoint::hit("pdf_worker_oom") {
        // Allocate and touch 64 MiB blocks until the address-space limit
        // makes an allocation fail (which aborts).
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut block = vec![0u8; 64 << 20];
            for b in block.iter_mut().step_by(4096) {
                *b = 1;
            }
            hoard.push(std::hint::black_box(block));
        }
    }
}

fn work(req: &WorkerRequest) -> Result<PdfJobOutput, PdfError> {
    let job = &req.job;
    tracing::info!(file = %job.name, op = ?job.op, pid = std::process::id(), "PDF worker reading");
    let engine = PdfEngine::load(&req.pdfium)?;
    let bytes = std::fs::read(&job.path).map_err(|e| PdfError::Read {
        name: job.name.clone(),
        reason: format!("cannot read {}: {e}", job.path.display()),
    })?;
    let name = job.name.as_str();
    let mut out = PdfJobOutput::default();
    let no_ocr = OcrInput::default();
    let ocr = job.ocr.as_ref().unwrap_or(&no_ocr);
    match job.op {
        PdfOp::Convert => match crate::pdf::pdf_to_markdown_ocr(engine, name, &bytes, ocr) {
            Ok(c) => {
                if job.ocr_plan {
                    out.ocr_candidates = c.ocr_wanted.clone();
                }
                out.converted = Some(c);
            }
            // Nothing readable: the parent may still rescue it by OCR.
            Err(e @ (PdfError::NoText { .. } | PdfError::Garbled { .. })) if job.ocr_plan => {
                out.ocr_candidates = crate::pdf::ocr_candidates(engine, name, &bytes)?;
                if out.ocr_candidates.is_empty() {
                    return Err(e);
                }
                out.text_error = Some(e.to_string());
            }
            Err(e) => return Err(e),
        },
        PdfOp::Annotations => out.annotations = Some(crate::pdf::extract_annotations(engine, name, &bytes)?),
        PdfOp::Figures => {
            out.figures = Some(crate::pdf::extract_figures(
                engine,
                name,
                &bytes,
                job.max_figures,
                job.min_pixels,
            )?)
        }
        PdfOp::Page => out.page = Some(crate::pdf::render_page(engine, name, &bytes, job.page, job.width)?),
        PdfOp::OcrRender => {
            let Some(r) = &job.ocr_render else {
                return Err(PdfError::Read {
                    name: name.into(),
                    reason: "the OCR drawing job names no pages; this is a bug in jarvis".into(),
                });
            };
            out.ocr_images = crate::pdf::render_for_ocr(engine, name, &bytes, &r.pages, r.dpi, &r.dir)?;
        }
        PdfOp::All => {
            match crate::pdf::pdf_to_markdown_ocr(engine, name, &bytes, ocr) {
                Ok(c) => out.converted = Some(c),
                Err(e @ (PdfError::NoText { .. } | PdfError::Garbled { .. })) => out.text_error = Some(e.to_string()),
                Err(e) => return Err(e),
            }
            out.annotations = Some(crate::pdf::extract_annotations(engine, name, &bytes)?);
            out.figures = Some(crate::pdf::extract_figures(
                engine,
                name,
                &bytes,
                job.max_figures,
                job.min_pixels,
            )?);
        }
    }
    Ok(out)
}
