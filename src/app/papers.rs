//! Wiring for adding papers: the ingest settings from config, the arXiv
//! client, the chat provider used for metadata, summaries and captions, and
//! the PDF tools.

use std::time::Duration;

use crate::config::Config;
use crate::ingest::arxiv::{ArxivClient, ArxivSettings};
use crate::ingest::paper::AddSettings;
use crate::llm::{spec, ChatProvider};

pub fn arxiv_client(cfg: &Config) -> ArxivClient {
    ArxivClient::new(ArxivSettings {
        api_base: cfg.str("papers.arxiv_api_url"),
        pdf_base: cfg.str("papers.arxiv_pdf_url"),
        courtesy_delay: Duration::from_millis(cfg.int("papers.courtesy_delay_ms").max(0) as u64),
        ..ArxivSettings::default()
    })
}

pub fn add_settings(cfg: &Config) -> AddSettings {
    let provider = cfg.str("chat.provider");
    AddSettings {
        figure_captions: cfg.bool("rag.figure_captions"),
        figure_max_per_doc: cfg.int("rag.figure_max_per_doc").max(0) as usize,
        figure_min_pixels: cfg.int("rag.figure_min_pixels").max(0) as u64,
        metadata_prompt: crate::prompts::load(&cfg.home, crate::prompts::PDF_METADATA)
            .ok()
            .or_else(|| crate::prompts::default_of(crate::prompts::PDF_METADATA))
            .unwrap_or_default(),
        provider_is_cloud: spec::is_cloud_provider(&provider, &super::llm::llm_settings(cfg)),
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

/// The PDF tools ingest uses.
pub fn pdf_tools(cfg: &Config) -> Result<Box<dyn crate::ingest::paper::PdfTools>, PdfToolsError> {
    let lib = crate::runtime::resolve_pdfium(&cfg.home, &super::runtime_check::overrides(cfg))?;
    let engine = crate::pdf::PdfEngine::load(&lib.path)?;
    Ok(Box::new(crate::ingest::paper::InProcessPdf { engine }))
}

/// Errors of [`pdf_tools`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PdfToolsError {
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
    #[error(transparent)]
    Pdf(#[from] crate::pdf::PdfError),
}
