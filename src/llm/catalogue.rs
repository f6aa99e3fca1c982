//! The switchable model catalogue for `jarvis models` and the web picker.
//! Built from `[models]` plus each provider's configured default, so a user
//! who never wrote a catalogue still sees the model they're on. Reads
//! settings only: listing makes no network request, and jarvis ships no
//! vendor model list. [`with_installed`] merges in what an Ollama server
//! reports it has installed (the caller fetches that list, see
//! `probe::ollama_models`).

use serde::Serialize;

use crate::llm::settings::LlmSettings;
use crate::llm::spec::{is_cloud_provider, url_host, ModelSpec};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogueEntry {
    /// `provider:model`, ready to switch to (a bare `provider` when a
    /// configured server has no default model).
    pub spec: String,
    pub provider: String,
    /// Empty when no model is configured for the entry.
    pub model: String,
    /// Runs on this machine (see `is_cloud_provider`).
    pub local: bool,
    /// Host the requests go to, for Ollama and configured servers (the
    /// fixed cloud services are not shown).
    pub host: Option<String>,
    /// Whatever the provider needs to authenticate is configured.
    pub credentials: bool,
    /// The spec currently in use.
    pub current: bool,
    /// For Ollama entries, whether the server has the model installed;
    /// `None` when that is not known (another provider, or Ollama did not
    /// answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<bool>,
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

fn host_of(provider: &str, settings: &LlmSettings) -> Option<String> {
    match provider {
        "ollama" => url_host(&settings.ollama_host),
        other => settings.server(other).and_then(|s| url_host(&s.base_url)),
    }
}

/// Every switchable model: the spec in effect first when nothing else
/// lists it, then each provider's default, every configured server (with
/// its default model, or bare when it has none), then `[models]`, without
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
        pairs.push((s.name.clone(), s.model.trim().to_string()));
    }
    for (provider, models) in &settings.models {
        for m in models {
            pairs.push((provider.to_ascii_lowercase(), m.clone()));
        }
    }
    let current = ModelSpec::parse(current_spec);
    let current_model = crate::llm::spec::resolve_model(&current, settings).ok();
    let is_current = |p: &str, m: &str| p == current.provider && current_model.as_deref().unwrap_or_default() == m;
    if !current.provider.is_empty() && !pairs.iter().any(|(p, m)| is_current(p, m)) {
        // The spec in effect is always listed, even when no table names
        // it (`llamacpp:gemma` with a model-less `[servers.llamacpp]`).
        pairs.insert(0, (current.provider.clone(), current_model.clone().unwrap_or_default()));
    }
    let mut seen = std::collections::BTreeSet::new();
    pairs
        .into_iter()
        .filter(|(p, m)| seen.insert(format!("{p}:{m}")))
        .filter(|(p, m)| !m.trim().is_empty() || is_current(p, m) || settings.server(p).is_some())
        .map(|(provider, model)| {
            let spec = if model.is_empty() {
                provider.clone()
            } else {
                format!("{provider}:{model}")
            };
            CatalogueEntry {
                local: !is_cloud_provider(&spec, settings),
                host: host_of(&provider, settings),
                credentials: credentials_present(&provider, settings),
                current: is_current(&provider, &model),
                installed: None,
                spec,
                provider,
                model,
            }
        })
        .collect()
}

/// The catalogue with what the Ollama server has installed: every Ollama
/// entry is marked installed or not, and each installed model no entry
/// names is added (after the configured ones, in name order), so the picker
/// offers what can actually run.
pub fn with_installed(
    mut entries: Vec<CatalogueEntry>,
    installed: &[String],
    settings: &LlmSettings,
) -> Vec<CatalogueEntry> {
    // Ollama resolves a bare name to `:latest`.
    let norm = |m: &str| {
        if m.contains(':') {
            m.to_string()
        } else {
            format!("{m}:latest")
        }
    };
    let have: std::collections::BTreeSet<String> = installed.iter().map(|m| norm(m)).collect();
    for e in entries
        .iter_mut()
        .filter(|e| e.provider == "ollama" && !e.model.is_empty())
    {
        e.installed = Some(have.contains(&norm(&e.model)));
    }
    let listed: std::collections::BTreeSet<String> = entries
        .iter()
        .filter(|e| e.provider == "ollama")
        .map(|e| norm(&e.model))
        .collect();
    let spec_local = !is_cloud_provider("ollama", settings);
    for m in installed {
        if listed.contains(&norm(m)) {
            continue;
        }
        entries.push(CatalogueEntry {
            spec: format!("ollama:{m}"),
            provider: "ollama".into(),
            model: m.clone(),
            local: spec_local,
            host: host_of("ollama", settings),
            credentials: true,
            current: false,
            installed: Some(true),
        });
    }
    entries
}

/// Plain-text table for `jarvis models`: current marked with `*`.
pub fn format_catalogue(entries: &[CatalogueEntry]) -> String {
    let width = entries.iter().map(|e| e.spec.len()).max().unwrap_or(0);
    let mut out = String::new();
    for e in entries {
        let mark = if e.current { '*' } else { ' ' };
        let place = if e.local { "local" } else { "cloud" };
        let host = e.host.as_deref().map(|h| format!(" ({h})")).unwrap_or_default();
        let model = if e.model.is_empty() { "  (no default model)" } else { "" };
        let creds = if e.credentials { "" } else { "  (no credentials)" };
        let installed = match e.installed {
            Some(true) => "  installed",
            Some(false) => "  (not installed: `ollama pull` it)",
            None => "",
        };
        out.push_str(&format!(
            "{mark} {:<width$}  {place}{host}{model}{creds}{installed}\n",
            e.spec
        ));
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

    #[test]
    fn every_configured_server_and_the_spec_in_effect_are_listed() {
        // The review's set-up: a llama.cpp server with no default model and
        // `provider = "llamacpp:gemma"`; the list used to show neither.
        let mut s = LlmSettings {
            provider: "llamacpp:gemma".into(),
            ..LlmSettings::default()
        };
        s.servers.push(OpenAiServer {
            name: "llamacpp".into(),
            base_url: "http://127.0.0.1:8080/v1".into(),
            api_key: None,
            model: String::new(),
            local: true,
        });
        s.servers.push(OpenAiServer {
            name: "vllm".into(),
            base_url: "http://gpu.example.com:8000/v1".into(),
            api_key: Some("k".into()),
            model: "qwen".into(),
            local: false,
        });
        let list = list_catalogue(&s, &s.provider);
        let specs: Vec<&str> = list.iter().map(|e| e.spec.as_str()).collect();
        assert_eq!(
            specs,
            vec![
                "llamacpp:gemma",
                "ollama:qwen3-vl:30b",
                "anthropic:claude-sonnet-4-6",
                "llamacpp",
                "vllm:qwen"
            ]
        );
        assert!(list[0].current && list[0].local, "{:?}", list[0]);
        assert_eq!(list.iter().filter(|e| e.current).count(), 1);
        assert!(list[3].model.is_empty() && list[3].local);
        assert!(!list[4].local && list[4].host.as_deref() == Some("gpu.example.com"));
        let text = format_catalogue(&list);
        assert!(text.starts_with("* llamacpp:gemma"), "{text}");
        assert!(text.contains("local (127.0.0.1)  (no default model)"), "{text}");
        assert!(
            text.contains("vllm:qwen                    cloud (gpu.example.com)"),
            "{text}"
        );

        // A spec naming a server's default is not listed twice.
        let list = list_catalogue(&s, "vllm");
        assert_eq!(list.iter().filter(|e| e.spec == "vllm:qwen").count(), 1);
        assert!(list.iter().any(|e| e.spec == "vllm:qwen" && e.current));
        // An unresolvable spec in effect is still shown, marked current.
        let list = list_catalogue(&s, "openrouter");
        assert!(list[0].spec == "openrouter" && list[0].current && !list[0].local);
    }

    #[test]
    fn installed_ollama_models_are_marked_and_added() {
        let mut s = LlmSettings::default();
        s.models.insert("ollama".into(), vec!["llama3".into()]);
        let base = list_catalogue(&s, "ollama");
        let installed = vec!["gemma3:270m".to_string(), "llama3:latest".to_string()];
        let list = with_installed(base.clone(), &installed, &s);
        let find = |spec: &str| list.iter().find(|e| e.spec == spec).cloned();
        // The configured default is not there; llama3 is (as :latest).
        assert_eq!(find("ollama:qwen3-vl:30b").and_then(|e| e.installed), Some(false));
        assert_eq!(find("ollama:llama3").and_then(|e| e.installed), Some(true));
        let gemma = find("ollama:gemma3:270m").expect("an installed model is offered");
        assert!(gemma.local && gemma.credentials && !gemma.current);
        assert_eq!(gemma.installed, Some(true));
        assert_eq!(list.len(), base.len() + 1, "llama3:latest is not listed twice");
        // Anthropic's entry is untouched.
        assert_eq!(find("anthropic:claude-sonnet-4-6").and_then(|e| e.installed), None);
        let text = format_catalogue(&list);
        assert!(text.contains("(not installed: `ollama pull` it)"), "{text}");
        assert!(
            text.contains("ollama:gemma3:270m") && text.contains("installed"),
            "{text}"
        );
    }

    #[test]
    fn a_remote_ollama_shows_as_cloud_with_its_host() {
        let s = LlmSettings {
            ollama_host: "http://gpu.lan:11434".into(),
            ..LlmSettings::default()
        };
        let list = list_catalogue(&s, "ollama");
        assert!(list[0].current && !list[0].local);
        let text = format_catalogue(&list);
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("* ollama:qwen3-vl:30b ") && first.ends_with("cloud (gpu.lan)"),
            "{text}"
        );
        let s = LlmSettings {
            ollama_local: true,
            ..s
        };
        assert!(list_catalogue(&s, "ollama")[0].local);
    }
}
