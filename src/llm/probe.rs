//! Is a local model server up? One short GET, for jobs that must fail fast
//! instead of waiting on a server that is not running (the digest job).
//!
//! Owns: the probe request (`GET /api/tags` for Ollama, `GET /models` for a
//! configured OpenAI-compatible server), and reading the models an Ollama
//! server has installed from the same `/api/tags` answer.
//! Must not: start, pull or configure anything — a server that is down is
//! reported with a pointer, never started.

use std::time::Duration;

use super::settings::LlmSettings;
use super::spec::ModelSpec;

/// Probe the server behind `spec`'s provider. `Ok(())` when it answered
/// 2xx within `timeout`; providers with nothing local to probe pass.
pub fn probe_local_server(spec: &str, settings: &LlmSettings, timeout: Duration) -> Result<(), String> {
    let provider = ModelSpec::parse(spec).provider;
    let url = if provider == "ollama" {
        format!("{}/api/tags", settings.ollama_host.trim_end_matches('/'))
    } else if let Some(server) = settings.server(&provider) {
        format!("{}/models", server.base_url.trim_end_matches('/'))
    } else {
        return Ok(());
    };
    match agent(&url, timeout).get(&url).call() {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!(
            "the {provider} server at {url} answered HTTP {}",
            r.status().as_u16()
        )),
        Err(e) => Err(format!("the {provider} server at {url} is not reachable ({e})")),
    }
}

fn agent(url: &str, timeout: Duration) -> ureq::Agent {
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .user_agent("jarvis");
    if super::http::is_loopback_url(url) {
        config = config.proxy(None);
    }
    config.build().into()
}

/// The models installed on the configured Ollama server, when that server
/// runs on this machine (a loopback host). A remote Ollama is not asked:
/// the list would cost a network round trip on every picker and `jarvis
/// models`, and `ollama list` on that machine says the same.
pub fn local_ollama_models(settings: &LlmSettings, timeout: Duration) -> Result<Vec<String>, String> {
    let host = &settings.ollama_host;
    if !super::http::is_loopback_url(host) {
        return Err(format!(
            "Ollama at {host} is not on this machine; run `ollama list` there"
        ));
    }
    ollama_models(host, timeout)
}

/// Longest `/api/tags` answer read (a few hundred models fit easily).
const MAX_TAGS_BYTES: u64 = 4 << 20;

/// The models the Ollama server at `host` has installed (`GET /api/tags`),
/// sorted by name, within `timeout`. `Err` names the server and why it
/// gave no list (not running, an error status, an answer that is not
/// Ollama's), for the caller to show as a note.
pub fn ollama_models(host: &str, timeout: Duration) -> Result<Vec<String>, String> {
    let url = format!("{}/api/tags", host.trim_end_matches('/'));
    let mut resp = match agent(&url, timeout).get(&url).call() {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => return Err(format!("Ollama at {host} answered HTTP {}", r.status().as_u16())),
        Err(e) => return Err(format!("Ollama at {host} is not reachable ({e})")),
    };
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_TAGS_BYTES)
        .read_to_string()
        .map_err(|e| format!("Ollama at {host}: cannot read its model list ({e})"))?;
    parse_tags(&body).ok_or_else(|| format!("Ollama at {host}: the answer to /api/tags is not a model list"))
}

/// `{"models": [{"name": "qwen3:8b", …}, …]}` → the names, sorted, deduplicated.
fn parse_tags(body: &str) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let mut names: Vec<String> = v
        .get("models")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("name").or_else(|| m.get("model"))?.as_str())
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_sorted_and_garbage_is_refused() {
        let body =
            r#"{"models":[{"name":"qwen3:8b","size":1},{"name":"gemma3:270m"},{"model":"llama3:8b"},{"name":""}]}"#;
        assert_eq!(
            parse_tags(body),
            Some(vec!["gemma3:270m".into(), "llama3:8b".into(), "qwen3:8b".into()])
        );
        assert_eq!(parse_tags(r#"{"models":[]}"#), Some(vec![]));
        assert_eq!(parse_tags("<html>"), None);
        assert_eq!(parse_tags(r#"{"data":[]}"#), None);
    }

    #[test]
    fn a_server_that_is_not_there_is_named() {
        // A port nobody listens on: bind one and drop it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(9);
        let err = ollama_models(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2)).unwrap_err();
        assert!(
            err.contains("not reachable") && err.contains(&port.to_string()),
            "{err}"
        );
    }
}
