//! Plain settings for the LLM layer. The app config maps onto this struct;
//! keeping it here (rather than reading the config module) keeps the layer
//! testable against fake servers and free of file access.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::llm::provider::PdfToText;

/// A user-configured OpenAI-compatible server (LM Studio, llama.cpp, vLLM…).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenAiServer {
    /// Provider name used in specs (`name:model`).
    pub name: String,
    /// Base URL up to and including the version segment, e.g. `http://127.0.0.1:1234/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Default model for a bare `name` spec.
    pub model: String,
    /// The user's claim that the server runs on this machine. Only honoured
    /// when the base URL's host is also a loopback address.
    pub local: bool,
}

/// Everything the providers need, already resolved from config and env.
#[derive(Clone)]
pub struct LlmSettings {
    /// Default spec for new sessions, `provider` or `provider:model`.
    pub provider: String,
    pub ollama_host: String,
    pub ollama_model: String,
    /// The user's explicit claim that a non-loopback `ollama_host` is their
    /// own machine. Without it only a loopback host counts as local.
    pub ollama_local: bool,
    pub anthropic_api_key: Option<String>,
    pub anthropic_model: String,
    pub anthropic_base_url: String,
    pub openrouter_api_key: Option<String>,
    /// Empty means "not configured": a bare `openrouter` spec is then an error.
    pub openrouter_model: String,
    pub openrouter_base_url: String,
    pub openrouter_data_collection: String,
    pub openrouter_allow_fallbacks: bool,
    pub openrouter_only: Vec<String>,
    pub servers: Vec<OpenAiServer>,
    /// `[models]`: provider name → switchable model names.
    pub models: BTreeMap<String, Vec<String>>,
    /// Longest silence tolerated while waiting for the next bytes of a response.
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Converts a local PDF to text for providers without document input.
    /// Filled by the PDF layer; `None` makes a PDF summary an error.
    pub pdf_to_text: Option<PdfToText>,
    /// Where reusable answers are kept ([`crate::llm::cache`]); `None`
    /// sends every request.
    pub response_cache: Option<PathBuf>,
}

pub const DEFAULT_OLLAMA_HOST: &str = "http://127.0.0.1:11434";
pub const DEFAULT_OLLAMA_MODEL: &str = "qwen3-vl:30b";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-6";
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            provider: "ollama".to_string(),
            ollama_host: DEFAULT_OLLAMA_HOST.to_string(),
            ollama_model: DEFAULT_OLLAMA_MODEL.to_string(),
            ollama_local: false,
            anthropic_api_key: None,
            anthropic_model: DEFAULT_ANTHROPIC_MODEL.to_string(),
            anthropic_base_url: DEFAULT_ANTHROPIC_BASE_URL.to_string(),
            openrouter_api_key: None,
            openrouter_model: String::new(),
            openrouter_base_url: DEFAULT_OPENROUTER_BASE_URL.to_string(),
            openrouter_data_collection: "deny".to_string(),
            openrouter_allow_fallbacks: false,
            openrouter_only: Vec::new(),
            servers: Vec::new(),
            models: BTreeMap::new(),
            // Generous: a local model may think for a long time before the
            // first token. Stop is never hostage to this (see cancel.rs).
            request_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            pdf_to_text: None,
            response_cache: None,
        }
    }
}

impl std::fmt::Debug for LlmSettings {
    // Hand-written so keys never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("provider", &self.provider)
            .field("ollama_host", &self.ollama_host)
            .field("ollama_model", &self.ollama_model)
            .field("ollama_local", &self.ollama_local)
            .field("anthropic_api_key", &self.anthropic_api_key.as_ref().map(|_| "<set>"))
            .field("anthropic_model", &self.anthropic_model)
            .field("openrouter_api_key", &self.openrouter_api_key.as_ref().map(|_| "<set>"))
            .field("openrouter_model", &self.openrouter_model)
            .field("servers", &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl LlmSettings {
    /// Overrides keys and the Ollama host from the standard environment
    /// variables (`ANTHROPIC_API_KEY`, `OPENROUTER_API_KEY`, `OLLAMA_HOST`);
    /// env wins over config, as everywhere in jarvis.
    /// Separate from `Default` so tests stay independent of the environment.
    pub fn with_env(mut self) -> Self {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(key) = env("ANTHROPIC_API_KEY") {
            self.anthropic_api_key = Some(key);
        }
        if let Some(key) = env("OPENROUTER_API_KEY") {
            self.openrouter_api_key = Some(key);
        }
        if let Some(host) = env("OLLAMA_HOST") {
            self.ollama_host = normalise_ollama_host(&host);
        }
        self
    }

    /// Every configured secret, for redaction.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        out.extend(self.anthropic_api_key.iter().cloned());
        out.extend(self.openrouter_api_key.iter().cloned());
        out.extend(self.servers.iter().filter_map(|s| s.api_key.clone()));
        out
    }

    pub fn server(&self, name: &str) -> Option<&OpenAiServer> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// `OLLAMA_HOST` is commonly given as `host:port` without a scheme.
pub fn normalise_ollama_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.starts_with("http://") || host.starts_with("https://") {
        host.to_string()
    } else {
        format!("http://{host}")
    }
}
