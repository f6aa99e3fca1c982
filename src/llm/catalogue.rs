//! The switchable model catalogue for `jarvis models` and the web picker.
//! Built from `[models]` plus each provider's configured default, so a user
//! who never wrote a catalogue still sees the model they're on. Reads
//! settings only: listing makes no network request, and jarvis ships no
//! vendor model list.

use serde::Serialize;

use crate::llm::settings::LlmSettings;
use crate::llm::spec::{is_cloud_provider, ModelSpec};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogueEntry {
    /// `provider:model`, ready to switch to.
    pub spec: String,
    pub provider: String,
    pub model: String,
    /// Runs on this machine (see `is_cloud_provider`).
    pub local: bool,
    /// Whatever the provider needs to authenticate is configured.
    pub credentials: bool,
    /// The spec currently in use.
    pub current: bool,
}

fn has(key: Option<&String>) -> bool {
    key.is_some_and(|k| !k.trim().is_empty())
}

fn credentials_present(provider: &str, settings: &LlmSettings) -> bool {
    match provider {
        "ollama" => true,
        "anthropic" => has(settings.anthropic_api_key.as_ref()),
        "openrouter" => has(settings.openrouter_api_key.as_ref()),
        // A configured server may not need a key at all (LM Studio,
        // llama.cpp); one without a key is only usable if it is local.
        other => settings
            .server(other)
            .is_some_and(|s| has(s.api_key.as_ref()) || s.local),
    }
}

/// Every switchable model, defaults first, then `[models]`, without
/// duplicates. `current_spec` is marked (a bare provider spec matches that
/// provider's default model).
pub fn list_catalogue(settings: &LlmSettings, current_spec: &str) -> Vec<CatalogueEntry> {
    let mut pairs: Vec<(String, String)> = vec![
        ("ollama".into(), settings.ollama_model.clone()),
        ("anthropic".into(), settings.anthropic_model.clone()),
    ];
    if !settings.openrouter_model.trim().is_empty() {
        pairs.push(("openrouter".into(), settings.openrouter_model.clone()));
    }
    for s in &settings.servers {
        if !s.model.trim().is_empty() {
            pairs.push((s.name.clone(), s.model.clone()));
        }
    }
    for (provider, models) in &settings.models {
        for m in models {
            pairs.push((provider.to_ascii_lowercase(), m.clone()));
        }
    }
    let current = ModelSpec::parse(current_spec);
    let current_model = crate::llm::spec::resolve_model(&current, settings).ok();
    let mut seen = std::collections::BTreeSet::new();
    pairs
        .into_iter()
        .filter(|(p, m)| !m.trim().is_empty() && seen.insert(format!("{p}:{m}")))
        .map(|(provider, model)| {
            let spec = format!("{provider}:{model}");
            CatalogueEntry {
                local: !is_cloud_provider(&spec, settings),
                credentials: credentials_present(&provider, settings),
                current: provider == current.provider && current_model.as_deref() == Some(model.as_str()),
                spec,
                provider,
                model,
            }
        })
        .collect()
}

/// Plain-text table for `jarvis models`: current marked with `*`.
pub fn format_catalogue(entries: &[CatalogueEntry]) -> String {
    let width = entries.iter().map(|e| e.spec.len()).max().unwrap_or(0);
    let mut out = String::new();
    for e in entries {
        let mark = if e.current { '*' } else { ' ' };
        let place = if e.local { "local" } else { "cloud" };
        let creds = if e.credentials { "" } else { "  (no credentials)" };
        out.push_str(&format!("{mark} {:<width$}  {place}{creds}\n", e.spec));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::settings::OpenAiServer;

    #[test]
    fn defaults_and_models_table_without_duplicates() {
        let mut s = LlmSettings {
            anthropic_api_key: Some("sk-ant-0123456789".into()),
            ..LlmSettings::default()
        };
        s.models.insert("openrouter".into(), vec!["x/y".into()]);
        s.models
            .insert("ollama".into(), vec!["qwen3-vl:30b".into(), "llama3:8b".into()]);
        s.servers.push(OpenAiServer {
            name: "lms".into(),
            base_url: "http://127.0.0.1:1234/v1".into(),
            api_key: None,
            model: "q".into(),
            local: true,
        });
        let list = list_catalogue(&s, "ollama");
        let specs: Vec<&str> = list.iter().map(|e| e.spec.as_str()).collect();
        assert_eq!(
            specs,
            vec![
                "ollama:qwen3-vl:30b",
                "anthropic:claude-sonnet-4-6",
                "lms:q",
                "ollama:llama3:8b",
                "openrouter:x/y"
            ]
        );
        assert!(list[0].current && list[0].local && list[0].credentials);
        assert!(!list[1].local && list[1].credentials && !list[1].current);
        assert!(list[2].local && list[2].credentials);
        let or = &list[4];
        assert!(!or.local && !or.credentials);
        assert!(list_catalogue(&s, "openrouter:x/y")[4].current);
        let text = format_catalogue(&list);
        assert!(text.starts_with("* ollama:qwen3-vl:30b"));
        assert!(
            text.contains("  openrouter:x/y               cloud  (no credentials)"),
            "{text}"
        );
    }
}
