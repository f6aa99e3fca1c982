//! Is a local model server up? One short GET, for jobs that must fail fast
//! instead of waiting on a server that is not running (the digest job).
//!
//! Owns: the probe request (`GET /api/tags` for Ollama, `GET /models` for a
//! configured OpenAI-compatible server).
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
    let mut config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .user_agent("jarvis");
    if super::http::is_loopback_url(&url) {
        config = config.proxy(None);
    }
    let agent: ureq::Agent = config.build().into();
    match agent.get(&url).call() {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!(
            "the {provider} server at {url} answered HTTP {}",
            r.status().as_u16()
        )),
        Err(e) => Err(format!("the {provider} server at {url} is not reachable ({e})")),
    }
}
