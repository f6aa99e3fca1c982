//! `jarvis convert-pdf`: one PDF — a local file or an arXiv paper — to
//! Markdown, through the isolated PDF worker.
//!
//! Owns: deciding whether the input is a file or an arXiv id/URL, the
//! arXiv download into a temporary file, and the `[papers]` settings for it.
//! Must not: write the Markdown anywhere (the CLI does) or touch the
//! knowledge base.

use std::path::Path;
use std::time::Duration;

use crate::config::Config;
use crate::ingest::arxiv::{parse_arxiv_url, ArxivClient, ArxivError, ArxivSettings};
use crate::pdf::Converted;

use super::pdf_isolated::{run_pdf_job, IsolatedPdfError, PdfJob, PdfOp};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertPdfError {
    #[error("{0}: no such file, and not an arXiv id or URL either — give a PDF's path, or e.g. 2301.01234 or https://arxiv.org/abs/2301.01234")]
    NotFound(String),
    #[error(transparent)]
    Arxiv(#[from] ArxivError),
    #[error(
        "{name}: cannot keep the downloaded PDF in a temporary file: {source} — check free space in the temp directory"
    )]
    Temp {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Pdf(#[from] IsolatedPdfError),
}

impl ConvertPdfError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            ConvertPdfError::NotFound(_) => ErrorKind::NotFound,
            ConvertPdfError::Arxiv(e) => e.kind(),
            ConvertPdfError::Temp { .. } => ErrorKind::Unavailable,
            ConvertPdfError::Pdf(e) => e.kind(),
        }
    }
}

/// `[papers]` settings for talking to arXiv (retry policy stays the
/// client's default).
pub fn arxiv_settings(cfg: &Config) -> ArxivSettings {
    ArxivSettings {
        api_base: cfg.str("papers.arxiv_api_url"),
        pdf_base: cfg.str("papers.arxiv_pdf_url"),
        courtesy_delay: Duration::from_millis(u64::try_from(cfg.int("papers.courtesy_delay_ms")).unwrap_or(3000)),
        ..ArxivSettings::default()
    }
}

/// Convert `input` — an existing file, else an arXiv id or URL — to
/// Markdown in a child process.
pub fn convert_pdf(cfg: &Config, input: &str) -> Result<Converted, ConvertPdfError> {
    let path = Path::new(input);
    if path.exists() {
        return convert_file(cfg, PdfJob::new(cfg, PdfOp::Convert, path));
    }
    let id = match parse_arxiv_url(input) {
        Ok(id) => id,
        // Something that looks like a path is a missing file, not a bad id.
        Err(_) if (input.contains('/') && !input.to_ascii_lowercase().contains("arxiv")) || input.ends_with(".pdf") => {
            return Err(ConvertPdfError::NotFound(input.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let name = format!("arXiv:{}", id.versioned());
    tracing::info!(paper = %name, "downloading from arXiv");
    let bytes = ArxivClient::new(arxiv_settings(cfg)).download_pdf(&id)?;
    let temp = tempfile::Builder::new()
        .prefix("jarvis-arxiv-")
        .suffix(".pdf")
        .tempfile()
        .map_err(|source| ConvertPdfError::Temp {
            name: name.clone(),
            source,
        })?;
    std::fs::write(temp.path(), &bytes).map_err(|source| ConvertPdfError::Temp {
        name: name.clone(),
        source,
    })?;
    let mut job = PdfJob::new(cfg, PdfOp::Convert, temp.path());
    job.name = name;
    // `temp` lives until the worker has finished with it.
    convert_file(cfg, job)
}

fn convert_file(cfg: &Config, job: PdfJob) -> Result<Converted, ConvertPdfError> {
    let out = run_pdf_job(cfg, &job)?;
    out.converted.ok_or_else(|| {
        ConvertPdfError::Pdf(IsolatedPdfError::Pdf {
            name: job.name.clone(),
            message: format!(
                "{}: the PDF worker returned no Markdown; this is a bug in jarvis",
                job.name
            ),
        })
    })
}
