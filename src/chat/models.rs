//! Which model a session runs on: the provider source the agent draws from
//! and the validation of a switch.
//!
//! Owns: [`ProviderSource`] (the App's provider cache implements it; so does
//! [`CachedProviders`], a plain cache over [`LlmSettings`] for tests and
//! tools that have no App), and [`validate_switch`] with one distinct error
//! per refusal. Must not: make a network request to validate (the picker
//! must not phone home), or be reachable from a model's tool — switching is
//! a human action.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::llm::spec::{is_cloud_provider, make_provider, resolve_model, ModelSpec};
use crate::llm::{ChatProvider, LlmError, LlmSettings};

/// Why a switch was refused. Each has its own fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SwitchError {
    /// The provider half names nothing jarvis knows.
    #[error("unknown provider `{provider}` — expected one of: {known}")]
    UnknownProvider { provider: String, known: String },
    /// The provider needs a key that is not configured.
    #[error("no credentials for `{provider}` — {fix}")]
    MissingCredentials { provider: String, fix: String },
    /// A private session may never move to a cloud model.
    #[error("this session holds private notes, so it cannot switch to the cloud model {spec} — pick a local model (Ollama or a local server)")]
    PrivateToCloud { spec: String },
    /// The spec names no model and the provider has no default.
    #[error("{0}")]
    NoModel(String),
}

impl SwitchError {
    /// A private session moving to the cloud collides with its state; the
    /// other refusals are the user's input to fix.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            SwitchError::PrivateToCloud { .. } => crate::error_kind::ErrorKind::Conflict,
            _ => crate::error_kind::ErrorKind::User,
        }
    }
}

/// Where the agent gets providers. Implementations cache one client per
/// `provider:model`, so two sessions can run different models at once.
pub trait ProviderSource: Send + Sync {
    /// The concrete `(provider, model)` a spec names, after validation.
    fn resolve(&self, spec: &str) -> Result<(String, String), SwitchError>;
    /// The (cached) client for a concrete spec.
    fn provider(&self, spec: &str) -> Result<Arc<dyn ChatProvider>, LlmError>;
    /// Whether content sent under `spec` leaves the machine (fails closed).
    fn is_cloud(&self, spec: &str) -> bool;
    /// Configured secrets, for redacting error text before it is saved.
    fn secrets(&self) -> Vec<String>;
    /// The default spec for new sessions.
    fn default_spec(&self) -> String;
}

/// A provider cache over plain settings.
pub struct CachedProviders {
    settings: LlmSettings,
    cache: Mutex<HashMap<String, Arc<dyn ChatProvider>>>,
}

impl CachedProviders {
    pub fn new(settings: LlmSettings) -> Self {
        CachedProviders {
            settings,
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }
}

fn has(k: &Option<String>) -> bool {
    k.as_deref().is_some_and(|k| !k.trim().is_empty())
}

/// Validate a spec against settings without building a client.
pub fn check_spec(spec: &str, settings: &LlmSettings) -> Result<(String, String), SwitchError> {
    let parsed = ModelSpec::parse(spec);
    let provider = parsed.provider.clone();
    let mut known = vec!["ollama".to_string(), "anthropic".into(), "openrouter".into()];
    known.extend(settings.servers.iter().map(|s| s.name.clone()));
    if !known.contains(&provider) {
        return Err(SwitchError::UnknownProvider {
            provider,
            known: known.join(", "),
        });
    }
    let creds = match provider.as_str() {
        "anthropic" if !has(&settings.anthropic_api_key) => {
            Some("export ANTHROPIC_API_KEY or set chat.anthropic_api_key")
        }
        "openrouter" if !has(&settings.openrouter_api_key) => {
            Some("export OPENROUTER_API_KEY or set openrouter.api_key")
        }
        _ => None,
    };
    if let Some(fix) = creds {
        return Err(SwitchError::MissingCredentials {
            provider,
            fix: fix.into(),
        });
    }
    let model = resolve_model(&parsed, settings).map_err(|e| SwitchError::NoModel(e.to_string()))?;
    Ok((provider, model))
}

impl ProviderSource for CachedProviders {
    fn resolve(&self, spec: &str) -> Result<(String, String), SwitchError> {
        check_spec(spec, &self.settings)
    }

    fn provider(&self, spec: &str) -> Result<Arc<dyn ChatProvider>, LlmError> {
        let mut cache = crate::lock::lock(&self.cache);
        if let Some(p) = cache.get(spec) {
            return Ok(p.clone());
        }
        let p: Arc<dyn ChatProvider> = Arc::from(make_provider(spec, &self.settings)?);
        cache.insert(spec.to_string(), p.clone());
        Ok(p)
    }

    fn is_cloud(&self, spec: &str) -> bool {
        is_cloud_provider(spec, &self.settings)
    }

    fn secrets(&self) -> Vec<String> {
        self.settings.secrets()
    }

    fn default_spec(&self) -> String {
        self.settings.provider.clone()
    }
}

/// Whether a session may move to `spec`: a known provider, with
/// credentials, and never a private session onto a cloud model. Returns
/// the concrete `(provider, model)`.
pub fn validate_switch(
    source: &dyn ProviderSource,
    session_private: bool,
    spec: &str,
) -> Result<(String, String), SwitchError> {
    let (provider, model) = source.resolve(spec)?;
    let concrete = format!("{provider}:{model}");
    if session_private && source.is_cloud(&concrete) {
        return Err(SwitchError::PrivateToCloud { spec: concrete });
    }
    Ok((provider, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_own_error() {
        let src = CachedProviders::new(LlmSettings::default());
        assert!(matches!(
            validate_switch(&src, false, "nosuch:model"),
            Err(SwitchError::UnknownProvider { .. })
        ));
        assert!(matches!(
            validate_switch(&src, false, "anthropic"),
            Err(SwitchError::MissingCredentials { .. })
        ));
        assert!(matches!(
            validate_switch(&src, false, "openrouter"),
            Err(SwitchError::MissingCredentials { .. })
        ));
        let s = LlmSettings {
            anthropic_api_key: Some("sk-ant-test-000000".into()),
            ..LlmSettings::default()
        };
        let src = CachedProviders::new(s);
        assert_eq!(
            validate_switch(&src, false, "anthropic").unwrap(),
            ("anthropic".into(), "claude-sonnet-4-6".into())
        );
        assert!(matches!(
            validate_switch(&src, true, "anthropic:claude-x"),
            Err(SwitchError::PrivateToCloud { .. })
        ));
        assert_eq!(
            validate_switch(&src, true, "ollama:qwen3:8b").unwrap(),
            ("ollama".into(), "qwen3:8b".into())
        );
    }
}
