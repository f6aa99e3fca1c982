//! Wiring for adding papers: the ingest settings from config, the arXiv
//! client, the DOI/URL sources (Crossref, Unpaywall, bioRxiv), the chat
//! provider used for metadata, summaries and captions, and the PDF tools.

use std::time::Duration;

use crate::app::pdf_isolated::{
    run_pdf_job_stoppable, run_pdf_job_stoppable_with, IsolatedPdfError, PdfJob, PdfJobOutput, PdfOp, WorkerCommand,
};
use crate::cancel::Cancel;
use crate::config::Config;
use crate::ingest::arxiv::{ArxivClient, ArxivSettings};
use crate::ingest::paper::{AddSettings, PdfFailure, PdfTools};
use crate::ingest::remote::{RemoteSettings, RemoteSources};
use crate::ingest::web::{valid_email, WebClient, WebSettings};
use crate::llm::{spec, ChatProvider};
use crate::pdf::{Annotation, Converted, Figure};

pub fn arxiv_client(cfg: &Config) -> ArxivClient {
    ArxivClient::new(ArxivSettings {
        api_base: cfg.str("papers.arxiv_api_url"),
        pdf_base: cfg.str("papers.arxiv_pdf_url"),
        courtesy_delay: Duration::from_millis(cfg.int("papers.courtesy_delay_ms").max(0) as u64),
        backoff: Duration::from_millis(cfg.int("papers.retry_backoff_ms").max(0) as u64),
        ..ArxivSettings::default()
    })
}

/// Crossref, Unpaywall, bioRxiv and the web for adding by DOI or URL. A
/// contact address that is not a plain e-mail is not sent (and said).
pub fn remote_sources(cfg: &Config) -> RemoteSources {
    let email = cfg.str("papers.contact_email").trim().to_string();
    let contact_email = if email.is_empty() {
        None
    } else if valid_email(&email) {
        Some(email)
    } else {
        tracing::warn!(value = %email, "papers.contact_email is not a plain e-mail address; it is not sent");
        None
    };
    let crossref_base = cfg.str("papers.crossref_url");
    let unpaywall_base = cfg.str("papers.unpaywall_url");
    let biorxiv_base = cfg.str("digest.biorxiv_url");
    // The services the user configured may live anywhere (a mirror, a
    // stand-in); everything else must be a public address.
    let trusted_hosts = [&crossref_base, &unpaywall_base, &biorxiv_base]
        .iter()
        .filter_map(|u| crate::ingest::reach::host_name(u))
        .collect();
    RemoteSources {
        web: WebClient::new(WebSettings {
            contact_email,
            trusted_hosts,
            allow_local: cfg.bool("papers.allow_local_urls"),
            host_delay: Duration::from_millis(cfg.int("papers.host_delay_ms").max(0) as u64),
            backoff: Duration::from_millis(cfg.int("papers.retry_backoff_ms").max(0) as u64),
            ..WebSettings::default()
        }),
        settings: RemoteSettings {
            crossref_base,
            unpaywall_base,
            // One setting per service: the digest's bioRxiv API base.
            biorxiv_base,
        },
    }
}

pub fn add_settings(cfg: &Config) -> AddSettings {
    let provider = cfg.str("chat.provider");
    AddSettings {
        figure_captions: cfg.bool("rag.figure_captions"),
        figure_max_per_doc: cfg.int("rag.figure_max_per_doc").max(0) as usize,
        figure_min_pixels: cfg.int("rag.figure_min_pixels").max(0) as u64,
        metadata_prompt: load_prompt(cfg, crate::prompts::PDF_METADATA),
        summary_prompt: load_prompt(cfg, crate::prompts::PAPER_SUMMARY),
        provider_is_cloud: spec::is_cloud_provider(&provider, &super::llm::llm_settings(cfg)),
        llm_retry_backoff: crate::ingest::paper::LLM_RETRY_BACKOFF,
        // The vault's private folders make a PDF private wherever it is
        // added from: `kb add`, the chat, the inbox.
        vault_root: cfg.path("vault.path"),
        private_dirs: cfg.list("vault.private_dirs"),
    }
}

/// A prompt as the user last edited it (read per add, so an edit applies
/// to the next paper without a restart). A copy that cannot be read or
/// seeded is said, not swallowed, and the add goes on with the shipped text.
fn load_prompt(cfg: &Config, name: &str) -> String {
    match crate::prompts::load(&cfg.home, name) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(prompt = name, error = %e, "cannot load the prompt; using the shipped default");
            crate::prompts::default_of(name).unwrap_or_default()
        }
    }
}

/// The configured default provider, with a short connect timeout so an
/// unreachable model makes metadata inference give up quickly rather than
/// stall the add. `None` (with the reason logged) when it cannot be built.
pub fn provider(cfg: &Config) -> Option<Box<dyn ChatProvider>> {
    let mut settings = super::llm::llm_settings(cfg);
    settings.connect_timeout = Duration::from_secs(3);
    match spec::make_provider(&settings.provider.clone(), &settings) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(error = %e, "no chat provider for paper ingest");
            None
        }
    }
}

/// The PDF tools ingest uses: every PDFium call runs in a `jarvis
/// __pdf-worker` child under the configured time and memory limits, so a
/// hostile PDF can crash or hang only that child.
/// A stop (`cancel`) kills a running worker at once.
pub fn pdf_tools<'a>(cfg: &'a Config, cancel: &'a Cancel) -> Box<dyn PdfTools + 'a> {
    pdf_tools_with(cfg, cancel, None)
}

/// [`pdf_tools`] running `worker` (`None`: this executable; tests, whose
/// executable is the harness, pass the built binary).
pub fn pdf_tools_with<'a>(
    cfg: &'a Config,
    cancel: &'a Cancel,
    worker: Option<WorkerCommand>,
) -> Box<dyn PdfTools + 'a> {
    Box::new(IsolatedPdf { cfg, cancel, worker })
}

pub struct IsolatedPdf<'a> {
    cfg: &'a Config,
    cancel: &'a Cancel,
    worker: Option<WorkerCommand>,
}

impl IsolatedPdf<'_> {
    fn job(
        &self,
        op: PdfOp,
        name: &str,
        bytes: &[u8],
        max: usize,
        min_pixels: u64,
    ) -> Result<PdfJobOutput, PdfFailure> {
        let fail = |message: String| PdfFailure {
            message,
            no_text: false,
        };
        // The worker reads a path; an arXiv download only exists in memory.
        let mut tmp = tempfile::Builder::new()
            .prefix("jarvis-pdf-")
            .suffix(".pdf")
            .tempfile()
            .map_err(|e| fail(format!("{name}: cannot stage the PDF for the worker: {e}")))?;
        std::io::Write::write_all(&mut tmp, bytes).map_err(|e| fail(format!("{name}: {e}")))?;
        let mut req = PdfJob::new(self.cfg, op, tmp.path());
        req.name = name.to_string();
        req.max_figures = max;
        req.min_pixels = min_pixels;
        let stop = || self.cancel.is_cancelled();
        match &self.worker {
            Some(w) => run_pdf_job_stoppable_with(w, self.cfg, &req, Some(&stop)),
            None => run_pdf_job_stoppable(self.cfg, &req, Some(&stop)),
        }
        .map_err(|e| {
            let message = e.to_string();
            // A scanned PDF: its annotations may still be worth keeping.
            let no_text = matches!(e, IsolatedPdfError::Pdf { .. }) && message.contains("no extractable text");
            PdfFailure { message, no_text }
        })
    }
}

impl PdfTools for IsolatedPdf<'_> {
    fn convert(&self, name: &str, bytes: &[u8]) -> Result<Converted, PdfFailure> {
        self.job(PdfOp::Convert, name, bytes, 0, 0)?
            .converted
            .ok_or_else(|| PdfFailure {
                message: format!("{name}: the PDF worker returned no text"),
                no_text: false,
            })
    }
    fn annotations(&self, name: &str, bytes: &[u8]) -> Result<Vec<Annotation>, PdfFailure> {
        self.job(PdfOp::Annotations, name, bytes, 0, 0)?
            .annotations
            .ok_or_else(|| PdfFailure {
                message: format!("{name}: the PDF worker returned no annotations; this is a bug in jarvis"),
                no_text: false,
            })
    }
    fn figures(&self, name: &str, bytes: &[u8], max: usize, min_pixels: u64) -> Result<Vec<Figure>, PdfFailure> {
        self.job(PdfOp::Figures, name, bytes, max, min_pixels)?
            .figures
            .ok_or_else(|| PdfFailure {
                message: format!("{name}: the PDF worker returned no figures; this is a bug in jarvis"),
                no_text: false,
            })
    }
}
