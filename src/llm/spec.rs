//! `provider` / `provider:model` specs, the cloud/local privacy predicate and
//! the provider factory.

pub use crate::llm::http::{is_loopback_host, url_host};

use crate::llm::error::LlmError;
use crate::llm::provider::ChatProvider;
use crate::llm::providers::{AnthropicProvider, OllamaProvider, OpenAiCompatProvider};
use crate::llm::settings::LlmSettings;

/// A parsed spec. Split on the first colon only: Ollama tags contain colons
/// (`ollama:qwen3-vl:30b`) and OpenRouter names contain slashes and dots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub provider: String,
    pub model: Option<String>,
}

impl ModelSpec {
    pub fn parse(spec: &str) -> ModelSpec {
        let spec = spec.trim();
        match spec.split_once(':') {
            Some((p, m)) => ModelSpec {
                provider: p.trim().to_ascii_lowercase(),
                model: Some(m.trim().to_string()).filter(|m| !m.is_empty()),
            },
            None => ModelSpec {
                provider: spec.to_ascii_lowercase(),
                model: None,
            },
        }
    }
}

impl std::fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.model {
            Some(m) => write!(f, "{}:{m}", self.provider),
            None => f.write_str(&self.provider),
        }
    }
}

/// Whether content sent under `spec` leaves the machine. Fails closed:
/// everything is cloud except
/// - Ollama when its host is a loopback address, or when the user declared
///   a remote host theirs with `ollama_local = true` (an `OLLAMA_HOST` on
///   another machine receives whatever is sent, private notes included);
/// - configured OpenAI-compatible servers marked `local = true` whose base
///   URL host is a loopback address.
///
/// An unknown provider name is cloud.
pub fn is_cloud_provider(spec: &str, settings: &LlmSettings) -> bool {
    let provider = ModelSpec::parse(spec).provider;
    if provider == "ollama" {
        let loopback = url_host(&settings.ollama_host).is_some_and(|h| is_loopback_host(&h));
        return !(loopback || settings.ollama_local);
    }
    match settings.server(&provider) {
        Some(server) => {
            let loopback = url_host(&server.base_url).is_some_and(|h| is_loopback_host(&h));
            !(server.local && loopback)
        }
        None => true,
    }
}

/// The model a spec resolves to, before any provider is built.
pub fn resolve_model(spec: &ModelSpec, settings: &LlmSettings) -> Result<String, LlmError> {
    if let Some(m) = &spec.model {
        return Ok(m.clone());
    }
    match spec.provider.as_str() {
        "ollama" => Ok(settings.ollama_model.clone()),
        "anthropic" => Ok(settings.anthropic_model.clone()),
        "openrouter" if settings.openrouter_model.trim().is_empty() => Err(LlmError::config(
            "no OpenRouter model chosen — use `openrouter:<vendor>/<model>` or set openrouter_model (OPENROUTER_MODEL); there is no default for a broker of hundreds of models",
        )),
        "openrouter" => Ok(settings.openrouter_model.clone()),
        other => match settings.server(other) {
            Some(s) if !s.model.trim().is_empty() => Ok(s.model.clone()),
            Some(_) => Err(LlmError::config(format!(
                "no model configured for server `{other}` — use `{other}:<model>` or set its model in config"
            ))),
            None => Err(unknown_provider(other, settings)),
        },
    }
}

fn unknown_provider(name: &str, settings: &LlmSettings) -> LlmError {
    let mut known = vec!["ollama".to_string(), "anthropic".into(), "openrouter".into()];
    known.extend(settings.servers.iter().map(|s| s.name.clone()));
    LlmError::config(format!(
        "unknown provider `{name}` — expected one of: {}",
        known.join(", ")
    ))
}

/// Builds the provider for `spec`, answering reusable requests from the
/// response cache when the settings name one.
pub fn make_provider(spec: &str, settings: &LlmSettings) -> Result<Box<dyn ChatProvider>, LlmError> {
    let provider = make_uncached(spec, settings)?;
    Ok(match &settings.response_cache {
        Some(dir) => Box::new(crate::llm::cache::Cached::new(
            provider,
            crate::llm::cache::ResponseCache::new(dir.clone()),
        )),
        None => provider,
    })
}

fn make_uncached(spec: &str, settings: &LlmSettings) -> Result<Box<dyn ChatProvider>, LlmError> {
    let parsed = ModelSpec::parse(spec);
    let model = resolve_model(&parsed, settings)?;
    match parsed.provider.as_str() {
        "ollama" => Ok(Box::new(OllamaProvider::new(settings, &model))),
        "anthropic" => {
            let key = settings
                .anthropic_api_key
                .clone()
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| LlmError::Auth {
                    provider: "anthropic".into(),
                    message: "ANTHROPIC_API_KEY is not set — export it or set anthropic_api_key in config".into(),
                })?;
            Ok(Box::new(AnthropicProvider::new(settings, key, &model)))
        }
        "openrouter" => {
            if settings
                .openrouter_api_key
                .as_deref()
                .is_none_or(|k| k.trim().is_empty())
            {
                return Err(LlmError::Auth {
                    provider: "openrouter".into(),
                    message: "OPENROUTER_API_KEY is not set — export it or set openrouter_api_key in config".into(),
                });
            }
            Ok(Box::new(OpenAiCompatProvider::openrouter(settings, &model)))
        }
        other => match settings.server(other) {
            Some(server) => Ok(Box::new(OpenAiCompatProvider::server(settings, server, &model))),
            None => Err(unknown_provider(other, settings)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::settings::OpenAiServer;

    fn settings() -> LlmSettings {
        LlmSettings {
            servers: vec![
                OpenAiServer {
                    name: "lmstudio".into(),
                    base_url: "http://127.0.0.1:1234/v1".into(),
                    api_key: None,
                    model: "qwen".into(),
                    local: true,
                },
                OpenAiServer {
                    name: "liar".into(),
                    base_url: "http://gpu.example.com:8000/v1".into(),
                    api_key: None,
                    model: "m".into(),
                    local: true,
                },
                OpenAiServer {
                    name: "v6".into(),
                    base_url: "http://[::1]:8000/v1".into(),
                    api_key: None,
                    model: "m".into(),
                    local: true,
                },
                OpenAiServer {
                    name: "remote".into(),
                    base_url: "http://localhost:9/v1".into(),
                    api_key: None,
                    model: "m".into(),
                    local: false,
                },
            ],
            ..LlmSettings::default()
        }
    }

    #[test]
    fn splits_on_first_colon_only() {
        assert_eq!(
            ModelSpec::parse("ollama:qwen3-vl:30b"),
            ModelSpec {
                provider: "ollama".into(),
                model: Some("qwen3-vl:30b".into())
            }
        );
        assert_eq!(ModelSpec::parse("openrouter:a/b-1.5").model.as_deref(), Some("a/b-1.5"));
        assert_eq!(ModelSpec::parse("anthropic").model, None);
        assert_eq!(
            ModelSpec::parse("ollama:qwen3-vl:30b").to_string(),
            "ollama:qwen3-vl:30b"
        );
    }

    #[test]
    fn cloud_predicate_fails_closed() {
        let s = settings();
        assert!(!is_cloud_provider("ollama:qwen3-vl:30b", &s));
        assert!(!is_cloud_provider("ollama", &s));
        assert!(!is_cloud_provider("lmstudio:whatever", &s));
        assert!(!is_cloud_provider("v6", &s));
        assert!(
            is_cloud_provider("liar", &s),
            "local=true on a non-loopback host is cloud"
        );
        assert!(is_cloud_provider("remote", &s), "loopback without local=true is cloud");
        assert!(is_cloud_provider("anthropic", &s));
        assert!(is_cloud_provider("openrouter:x/y", &s));
        assert!(is_cloud_provider("brand-new-thing", &s));
        assert!(is_cloud_provider("", &s));
    }

    #[test]
    fn a_remote_ollama_is_cloud_unless_declared_local() {
        let mut s = settings();
        for host in ["http://127.0.0.1:11434", "http://localhost:11434", "http://[::1]:11434"] {
            s.ollama_host = host.into();
            assert!(!is_cloud_provider("ollama", &s), "{host}");
        }
        for host in [
            "http://gpu.lan:11434",
            "http://10.0.0.5:11434",
            "http://127.0.0.1.evil.com",
            "not a url",
        ] {
            s.ollama_host = host.into();
            assert!(is_cloud_provider("ollama:qwen3:8b", &s), "{host} must count as cloud");
        }
        s.ollama_host = "http://gpu.lan:11434".into();
        s.ollama_local = true;
        assert!(!is_cloud_provider("ollama", &s), "the explicit claim makes it local");
    }

    #[test]
    fn url_hosts() {
        assert_eq!(url_host("http://user:pw@LocalHost:80/x").as_deref(), Some("localhost"));
        assert_eq!(url_host("https://[::1]/v1").as_deref(), Some("::1"));
        assert!(is_loopback_host("127.0.0.2"));
        assert!(!is_loopback_host("10.0.0.1"));
    }

    #[test]
    fn bare_openrouter_without_model_asks_for_one() {
        let mut s = settings();
        s.openrouter_api_key = Some("sk-or-test-key-123".into());
        let err = make_provider("openrouter", &s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no OpenRouter model chosen"), "{err}");
        assert!(make_provider("openrouter:a/b", &s).is_ok());
        let err = make_provider("anthropic", &s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("ANTHROPIC_API_KEY is not set"));
        assert!(make_provider("nope", &s).is_err());
        let p = make_provider("ollama", &s);
        assert_eq!(p.map(|p| p.model().to_string()).ok().as_deref(), Some("qwen3-vl:30b"));
    }
}
