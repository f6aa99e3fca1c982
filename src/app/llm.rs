//! Mapping the resolved configuration onto the LLM layer's settings.

use std::path::Path;
use std::sync::Arc;

use crate::app::pdf_isolated::{run_pdf_job, run_pdf_job_with, PdfJob, PdfOp, WorkerCommand};
use crate::config::Config;
use crate::llm::settings::{normalise_ollama_host, LlmSettings, OpenAiServer};
use crate::llm::PdfToText;

/// The LLM settings for this configuration. The config has already applied
/// the environment (API keys, `OLLAMA_HOST`, models), so nothing here reads
/// the process environment again.
pub fn llm_settings(cfg: &Config) -> LlmSettings {
    let defaults = LlmSettings::default();
    LlmSettings {
        provider: cfg.str("chat.provider"),
        ollama_host: normalise_ollama_host(&cfg.str("chat.ollama_host")),
        ollama_model: cfg.str("chat.ollama_model"),
        ollama_local: cfg.bool("chat.ollama_local"),
        anthropic_api_key: cfg.secret("chat.anthropic_api_key"),
        anthropic_model: cfg.str("chat.anthropic_model"),
        openrouter_api_key: cfg.secret("openrouter.api_key"),
        openrouter_model: cfg.str("openrouter.model"),
        openrouter_data_collection: cfg.str("openrouter.data_collection"),
        openrouter_allow_fallbacks: cfg.bool("openrouter.allow_fallbacks"),
        openrouter_only: cfg.list("openrouter.only"),
        servers: cfg
            .servers
            .iter()
            .map(|s| OpenAiServer {
                name: s.name.clone(),
                base_url: s.base_url.clone(),
                api_key: s.api_key.clone(),
                model: s.model.clone().unwrap_or_default(),
                local: s.local,
            })
            .collect(),
        models: cfg.models(),
        pdf_to_text: Some(pdf_to_text(cfg, None)),
        response_cache: Some(response_cache_dir(&cfg.home)),
        ..defaults
    }
}

/// Where the response cache keeps reusable answers: beside the other
/// state, 0700 like it (a metadata answer quotes a PDF's first page).
pub fn response_cache_dir(home: &crate::paths::JarvisHome) -> std::path::PathBuf {
    home.path(crate::paths::Dir::State).join("llm-cache")
}

/// The LLM layer's PDF-to-text hook (used by `summarize` on providers that
/// cannot read a PDF themselves), filled from the PDF engine through the
/// isolated worker, so a hostile PDF can crash or hang only a child process.
/// `worker` is `None` for this executable (tests pass the built binary).
pub fn pdf_to_text(cfg: &Config, worker: Option<WorkerCommand>) -> PdfToText {
    let cfg = cfg.clone();
    Arc::new(move |path: &Path| {
        let job = PdfJob::new(&cfg, PdfOp::Convert, path);
        let out = match &worker {
            Some(w) => run_pdf_job_with(w, &cfg, &job),
            None => run_pdf_job(&cfg, &job),
        }
        .map_err(|e| e.to_string())?;
        out.converted
            .map(|c| c.markdown)
            .ok_or_else(|| format!("{} has no extractable text", job.name))
    })
}

/// How long the model list waits for Ollama's `/api/tags`: a local server
/// answers in milliseconds, and one that is not running refuses at once; a
/// remote one that hangs must not hold up a picker.
pub const OLLAMA_LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);

/// The switchable models with `current` marked (`jarvis models`, the web
/// app's picker): the catalogue from config plus the models the configured
/// Ollama server has installed, when it runs on this machine. The second value says why the installed
/// models are missing (Ollama not running, …), when they are.
pub fn model_catalogue(cfg: &Config, current: &str) -> (Vec<crate::llm::CatalogueEntry>, Option<String>) {
    let settings = llm_settings(cfg);
    let entries = crate::llm::list_catalogue(&settings, current);
    match crate::llm::probe::local_ollama_models(&settings, OLLAMA_LIST_TIMEOUT) {
        Ok(installed) => (
            crate::llm::catalogue::with_installed(entries, &installed, &settings),
            None,
        ),
        Err(why) => {
            tracing::debug!(%why, "no installed-model list from Ollama");
            (entries, Some(why))
        }
    }
}

impl super::App {
    /// The configured chat model as `provider:model` (resolving a bare
    /// provider to its default model), or what is missing — for an
    /// owner's start-up line.
    pub fn chat_model_label(&self) -> String {
        let cfg = self.config();
        let chat = cfg.str("chat.provider");
        let spec = crate::llm::spec::ModelSpec::parse(&chat);
        crate::llm::spec::resolve_model(&spec, &llm_settings(&cfg))
            .map(|m| format!("{}:{m}", spec.provider))
            .unwrap_or_else(|e| format!("{chat} (no model: {e})"))
    }
}
