//! The first run and the set-up's health: is there a vault Jarvis can read,
//! does the chat model's server answer, and the steps that fix either — the
//! web app's first-run panel and its notices are drawn from this.
//!
//! Owns: the checks (a vault folder exists, is a readable directory and is
//! not inside `$JARVIS_HOME`; a local model server answers and has the model;
//! a cloud provider has its key), the short-lived cache of those probes, the
//! writes the panel makes (each one `jarvis config set` would make too:
//! `vault.path`, `chat.provider`, the providers' keys), the first index run
//! in the background with its progress, and the marker that says the
//! first-run panel is finished (`state/first_run.json`).
//! Must not: speak HTTP or print; never return a key it stored (only
//! whether one is set). Probes go to the configured local server only;
//! cloud providers are never called from here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cancel::Cancel;
use crate::config::{Config, ConfigError, Origin};
use crate::error_kind::ErrorKind;
use crate::llm::spec::{is_cloud_provider, resolve_model, ModelSpec};
use crate::paths::Dir;

use super::{App, AppError};

/// How long a probe's answer is reused: the page asks on every session
/// switch, and a person who just started Ollama waits at most this long.
const PROBE_TTL: Duration = Duration::from_secs(5);
/// A local server that takes longer than this to list its models is, for
/// the indicator, not answering.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Counting notes for the panel stops here (a number, not an inventory).
const COUNT_LIMIT: usize = 100_000;

/// Why a set-up step was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The folder cannot be the vault; the text says why and what to do.
    #[error("{0}")]
    Vault(String),
    /// The model choice is incomplete or wrong; the text says what to do.
    #[error("{0}")]
    Model(String),
    /// An index run is already going.
    #[error("the vault is being indexed already; wait for it to finish")]
    Busy,
    /// The configuration could not be written or read back.
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    App(#[from] AppError),
    /// The marker file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SetupError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            SetupError::Vault(_) | SetupError::Model(_) => ErrorKind::User,
            SetupError::Busy => ErrorKind::Conflict,
            SetupError::Config(e) => e.kind(),
            SetupError::App(e) => e.kind(),
            SetupError::Io { source, .. } => crate::error_kind::io_kind(source),
        }
    }
}

/// Where the vault stands.
#[derive(Debug, Clone, Serialize)]
pub struct VaultState {
    /// The folder in effect (the default `~/vault` when none was chosen).
    pub path: String,
    /// Chosen by the user (config file or `VAULT_PATH`), not the default.
    pub configured: bool,
    /// Markdown notes found (counting stops at a large number).
    pub notes: Option<usize>,
    /// What is wrong, for a person; `None` when the folder is usable.
    pub problem: Option<String>,
    /// How to fix it (the web app and the CLI way).
    pub fix: Option<String>,
}

/// Where the chat model stands.
#[derive(Debug, Clone, Serialize)]
pub struct ModelState {
    /// `provider:model` as new sessions would use it.
    pub spec: String,
    /// Chosen by the user (config file or `CHAT_PROVIDER`), not the default.
    pub configured: bool,
    pub local: bool,
    /// `ready` (a local server answered with the model, or a cloud key is
    /// set), `unreachable`, `not_installed`, `no_key` or `no_model`.
    pub state: &'static str,
    /// One line for a person.
    pub message: String,
    pub fix: Option<String>,
}

impl ModelState {
    pub fn ready(&self) -> bool {
        self.state == "ready"
    }
}

/// Everything the first-run panel and the app's notices need.
#[derive(Debug, Clone, Serialize)]
pub struct SetupStatus {
    /// Show the first-run panel: not finished, and either nothing is
    /// configured yet or the panel was started and not ended.
    pub first_run: bool,
    pub vault: VaultState,
    pub model: ModelState,
    pub index: IndexProgress,
}

/// What an Ollama server offers, for the panel's model step.
#[derive(Debug, Clone, Serialize)]
pub struct OllamaOffer {
    pub host: String,
    pub answers: bool,
    pub models: Vec<String>,
    /// Why it did not answer, and what to do.
    pub message: String,
}

/// The model the panel (or a script) chose.
#[derive(Debug, Clone)]
pub enum ModelChoice {
    Ollama {
        model: String,
    },
    /// An OpenAI-compatible server, written as `[servers.<name>]`.
    Server {
        name: String,
        base_url: String,
        model: String,
        api_key: Option<String>,
    },
    Anthropic {
        api_key: String,
        model: Option<String>,
    },
    OpenRouter {
        api_key: String,
        model: String,
    },
}

/// The first index run, as the page polls it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexProgress {
    pub running: bool,
    pub done: usize,
    pub total: usize,
    /// How the last run ended: a summary, or the error with its fix.
    pub outcome: Option<String>,
    pub failed: bool,
}

/// The cache and the background run, one per [`App`].
#[derive(Default)]
pub struct SetupState {
    probes: Mutex<Vec<(String, Instant, ModelState)>>,
    index: Arc<Mutex<IndexProgress>>,
}

use crate::lock::lock;

fn chosen(cfg: &Config, key: &str) -> bool {
    !matches!(cfg.origin(key), Origin::Default)
}

/// Whether `path` can be the vault: `Ok(notes)` or the problem and its fix.
pub fn check_vault(cfg: &Config, path: &Path) -> Result<usize, (String, String)> {
    let fix_cli = "or from a terminal: `jarvis config set vault.path ~/path/to/vault`";
    let shown = path.display();
    let fix = || format!("choose your Obsidian vault (a folder of Markdown notes) in the set-up panel, {fix_cli}");
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err((format!("the vault folder {shown} does not exist"), fix()))
        }
        Err(e) => {
            return Err((
                format!("the vault folder {shown} cannot be read ({e})"),
                format!("give your account read access to it (`chmod u+rx {shown}`), {fix_cli}"),
            ))
        }
    };
    if !meta.is_dir() {
        return Err((format!("{shown} is a file, not a folder"), fix()));
    }
    let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let home = cfg.home.root();
    let home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    if canon.starts_with(&home) {
        return Err((
            format!(
                "{shown} is inside Jarvis's own folder ({}), which holds its index and sessions",
                home.display()
            ),
            "keep the vault outside `$JARVIS_HOME`: choose the folder your notes live in".to_string(),
        ));
    }
    if let Err(e) = std::fs::read_dir(path) {
        return Err((
            format!("the vault folder {shown} cannot be read ({e})"),
            format!("give your account read access to it (`chmod u+rx {shown}`), {fix_cli}"),
        ));
    }
    Ok(count_notes(path))
}

/// Markdown files under `root`, dot-folders skipped (as the indexer does),
/// stopping at [`COUNT_LIMIT`].
fn count_notes(root: &Path) -> usize {
    let mut n = 0;
    let mut seen = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > COUNT_LIMIT {
                return n;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            // file_type does not follow links: a linked folder is not walked
            // (no loops), a linked note still counts.
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) if name.to_ascii_lowercase().ends_with(".md") => n += 1,
                _ => {}
            }
        }
    }
    n
}

fn vault_state(cfg: &Config) -> VaultState {
    let configured = chosen(cfg, "vault.path");
    let Some(path) = cfg.path("vault.path") else {
        return VaultState {
            path: String::new(),
            configured,
            notes: None,
            problem: Some("no vault folder is set".into()),
            fix: Some("choose your notes folder in the set-up panel, or `jarvis config set vault.path ~/vault`".into()),
        };
    };
    let (notes, problem, fix) = match check_vault(cfg, &path) {
        Ok(n) => (Some(n), None, None),
        Err((p, f)) => (None, Some(p), Some(f)),
    };
    VaultState {
        path: path.display().to_string(),
        configured,
        notes,
        problem,
        fix,
    }
}

/// Probe what new sessions would use (or `spec`), uncached.
fn probe_model(cfg: &Config, spec: &str) -> ModelState {
    let settings = super::llm::llm_settings(cfg);
    let parsed = ModelSpec::parse(spec);
    let configured = chosen(cfg, "chat.provider");
    let local = !is_cloud_provider(spec, &settings);
    let state = |state, message: String, fix: Option<String>, shown: String| ModelState {
        spec: shown,
        configured,
        local,
        state,
        message,
        fix,
    };
    let model = match resolve_model(&parsed, &settings) {
        Ok(m) => m,
        Err(e) => {
            return state(
                "no_model",
                format!("{spec} names no model ({e})"),
                Some(format!(
                    "pick a model in the set-up panel, or `jarvis config set chat.provider {}:<model>`",
                    parsed.provider
                )),
                spec.to_string(),
            )
        }
    };
    let shown = format!("{}:{model}", parsed.provider);
    match parsed.provider.as_str() {
        "ollama" => match crate::llm::probe::ollama_models(&settings.ollama_host, PROBE_TIMEOUT) {
            Ok(installed) if installed.iter().any(|m| same_ollama_model(m, &model)) => {
                state("ready", format!("Ollama answers at {} with {model}", settings.ollama_host), None, shown)
            }
            Ok(installed) => state(
                "not_installed",
                format!(
                    "Ollama answers at {}, but {model} is not installed ({})",
                    settings.ollama_host,
                    if installed.is_empty() {
                        "it has no models yet".to_string()
                    } else {
                        format!("it has {}", installed.join(", "))
                    }
                ),
                Some(format!(
                    "`ollama pull {model}`, or pick one of its models in the set-up panel (`jarvis config set chat.provider ollama:<model>`)"
                )),
                shown,
            ),
            Err(why) => state(
                "unreachable",
                format!("the chat model {shown} is not answering: {why}"),
                Some(format!(
                    "start Ollama (`ollama serve`; get it from ollama.com) and `ollama pull {model}`, or pick another model in the set-up panel (`jarvis config set chat.provider …`)"
                )),
                shown,
            ),
        },
        "anthropic" | "openrouter" => {
            let key = if parsed.provider == "anthropic" {
                (settings.anthropic_api_key.is_some(), "chat.anthropic_api_key", "ANTHROPIC_API_KEY")
            } else {
                (settings.openrouter_api_key.is_some(), "openrouter.api_key", "OPENROUTER_API_KEY")
            };
            if key.0 {
                state(
                    "ready",
                    format!("{shown} (cloud; the key is set — private notes never reach it)"),
                    None,
                    shown,
                )
            } else {
                state(
                    "no_key",
                    format!("{shown} needs an API key and none is set"),
                    Some(format!(
                        "enter the key in the set-up panel, or `jarvis config set {} <key>` (or the {} environment variable)",
                        key.1, key.2
                    )),
                    shown,
                )
            }
        }
        _ => match crate::llm::probe::probe_local_server(spec, &settings, PROBE_TIMEOUT) {
            Ok(()) => state("ready", format!("the server for {shown} answers"), None, shown),
            Err(why) => state(
                "unreachable",
                format!("the chat model {shown} is not answering: {why}"),
                Some(format!(
                    "start that server, or fix its `base_url` in `[servers.{}]` (`jarvis config show` names it), or pick another model in the set-up panel",
                    parsed.provider
                )),
                shown,
            ),
        },
    }
}

/// Ollama lists `name:tag`; a model named without a tag means `:latest`.
fn same_ollama_model(installed: &str, wanted: &str) -> bool {
    let full = |s: &str| {
        if s.contains(':') {
            s.to_string()
        } else {
            format!("{s}:latest")
        }
    };
    full(installed) == full(wanted)
}

fn marker(cfg: &Config) -> PathBuf {
    cfg.home.path(Dir::State).join("first_run.json")
}

/// `"started"`, `"finished"`, or `None` (never touched).
fn marker_state(cfg: &Config) -> Option<String> {
    let text = std::fs::read_to_string(marker(cfg)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("state").and_then(|s| s.as_str()).map(str::to_owned)
}

impl App {
    /// The vault, the model and the first index, for the panel and the
    /// app's notices. Probes the local model server (cached a few seconds).
    pub fn setup_status(&self) -> SetupStatus {
        let cfg = self.config();
        let vault = vault_state(&cfg);
        let model = self.model_state(&cfg.str("chat.provider"));
        let first_run = match marker_state(&cfg).as_deref() {
            Some("finished") => false,
            Some(_) => true,
            None => !vault.configured && !model.configured,
        };
        SetupStatus {
            first_run,
            vault,
            model,
            index: self.index_progress(),
        }
    }

    /// Whether the model behind `spec` answers (cached for a few seconds).
    pub fn model_state(&self, spec: &str) -> ModelState {
        let now = Instant::now();
        {
            let cache = lock(&self.setup.probes);
            if let Some((_, _, s)) = cache
                .iter()
                .find(|(k, at, _)| k == spec && now.duration_since(*at) < PROBE_TTL)
            {
                return s.clone();
            }
        }
        let fresh = probe_model(&self.config(), spec);
        let mut cache = lock(&self.setup.probes);
        cache.retain(|(k, at, _)| k != spec && now.duration_since(*at) < PROBE_TTL);
        cache.push((spec.to_string(), Instant::now(), fresh.clone()));
        fresh
    }

    /// Forget cached probes (after a change the person expects to see).
    pub fn forget_probes(&self) {
        lock(&self.setup.probes).clear();
    }

    /// What the Ollama server in `chat.ollama_host` has installed.
    pub fn ollama_offer(&self) -> OllamaOffer {
        let cfg = self.config();
        let host = cfg.str("chat.ollama_host");
        match crate::llm::probe::ollama_models(&host, PROBE_TIMEOUT) {
            Ok(models) => OllamaOffer {
                message: if models.is_empty() {
                    "Ollama answers but has no models yet: `ollama pull qwen3:8b` (or another model with tool calling), then check again".into()
                } else {
                    format!("Ollama answers at {host}")
                },
                host,
                answers: true,
                models,
            },
            Err(why) => OllamaOffer {
                message: format!("{why} — install Ollama (ollama.com), start it (`ollama serve`), pull a model (`ollama pull qwen3:8b`), then check again"),
                host,
                answers: false,
                models: Vec::new(),
            },
        }
    }

    /// Make `path` the vault (`vault.path`), after checking it.
    pub fn set_vault(&self, path: &str) -> Result<VaultState, SetupError> {
        let raw = path.trim();
        if raw.is_empty() {
            return Err(SetupError::Vault("type the path of your notes folder".into()));
        }
        let cfg = self.config();
        let user_home = (self.env)("HOME").map(PathBuf::from).or_else(dirs::home_dir);
        let expanded = crate::paths::expand_tilde(Path::new(raw), user_home.as_deref());
        if !expanded.is_absolute() {
            return Err(SetupError::Vault(format!(
                "{raw} is not a full path — write it from the root (/home/you/notes) or from ~ (~/notes)"
            )));
        }
        check_vault(&cfg, &expanded).map_err(|(p, f)| SetupError::Vault(format!("{p} — {f}")))?;
        self.write_settings(&[("vault.path", raw)])?;
        Ok(vault_state(&self.config()))
    }

    /// Make `choice` the model for new sessions, storing any key in
    /// `config.toml` (0600). Returns the new state (probed afresh); the key
    /// is never part of it.
    pub fn set_model(&self, choice: &ModelChoice) -> Result<ModelState, SetupError> {
        let need = |what: &str, v: &str| -> Result<(), SetupError> {
            if v.trim().is_empty() {
                return Err(SetupError::Model(format!("{what} is missing")));
            }
            Ok(())
        };
        match choice {
            ModelChoice::Ollama { model } => {
                need("the model name", model)?;
                self.write_settings(&[("chat.provider", &format!("ollama:{}", model.trim()))])?;
            }
            ModelChoice::Anthropic { api_key, model } => {
                need("the API key", api_key)?;
                let spec = match model.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
                    Some(m) => format!("anthropic:{m}"),
                    None => "anthropic".into(),
                };
                self.write_settings(&[("chat.anthropic_api_key", api_key.trim()), ("chat.provider", &spec)])?;
            }
            ModelChoice::OpenRouter { api_key, model } => {
                need("the API key", api_key)?;
                need("the model (vendor/model, e.g. anthropic/claude-sonnet-4.5)", model)?;
                self.write_settings(&[
                    ("openrouter.api_key", api_key.trim()),
                    ("openrouter.model", model.trim()),
                    ("chat.provider", "openrouter"),
                ])?;
            }
            ModelChoice::Server {
                name,
                base_url,
                model,
                api_key,
            } => {
                need("the server's URL", base_url)?;
                need("the model name", model)?;
                let name = name.trim();
                if name.is_empty()
                    || !name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
                    || ["ollama", "anthropic", "openrouter"].contains(&name)
                {
                    return Err(SetupError::Model(format!(
                        "the server's name `{name}` must be lower-case letters, digits, - or _, and not a built-in provider"
                    )));
                }
                let url = base_url.trim();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(SetupError::Model(format!(
                        "{url} is not an http(s) URL — e.g. http://127.0.0.1:8000/v1"
                    )));
                }
                // The same keys `jarvis config set servers.<name>.…` writes.
                let key = |k: &str| format!("servers.{name}.{k}");
                let mut pairs = vec![
                    (key("base_url"), url.to_string()),
                    (key("model"), model.trim().to_string()),
                ];
                if let Some(k) = api_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
                    pairs.push((key("api_key"), k.to_string()));
                }
                // Only a server on this machine can be local (the LLM layer
                // checks the host again before it trusts the flag).
                if crate::llm::spec::url_host(url).is_some_and(|h| crate::llm::spec::is_loopback_host(&h)) {
                    pairs.push((key("local"), "true".into()));
                }
                pairs.push(("chat.provider".into(), name.to_string()));
                let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                self.write_settings(&refs)?;
            }
        }
        self.forget_probes();
        Ok(self.model_state(&self.config().str("chat.provider")))
    }

    /// `config set` each pair, then mark the panel started (it stays until
    /// finished) and reload.
    fn write_settings(&self, pairs: &[(&str, &str)]) -> Result<(), SetupError> {
        for (k, v) in pairs {
            crate::config::write::set_value(&self.home, k, v, &*self.env)?;
        }
        self.reload_config()?;
        if marker_state(&self.config()).is_none() {
            self.write_marker("started")?;
        }
        Ok(())
    }

    fn write_marker(&self, state: &str) -> Result<(), SetupError> {
        let cfg = self.config();
        let path = marker(&cfg);
        let io = |source| SetupError::Io {
            path: path.clone(),
            source,
        };
        self.home
            .ensure(Dir::State)
            .map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let body = serde_json::json!({ "state": state }).to_string();
        crate::paths::write_atomic(&path, body.as_bytes(), 0o600).map_err(|e| io(std::io::Error::other(e.to_string())))
    }

    /// The first-run panel is done (or put off for good): it does not open
    /// again by itself.
    pub fn finish_setup(&self) -> Result<(), SetupError> {
        self.write_marker("finished")
    }

    /// Start indexing the vault in the background; progress through
    /// [`App::index_progress`]. Refused while a run is going.
    pub fn start_index(self: &Arc<Self>) -> Result<(), SetupError> {
        let cfg = self.config();
        let vault = vault_state(&cfg);
        if let (Some(p), Some(f)) = (vault.problem, vault.fix) {
            return Err(SetupError::Vault(format!("{p} — {f}")));
        }
        {
            let mut p = lock(&self.setup.index);
            if p.running {
                return Err(SetupError::Busy);
            }
            *p = IndexProgress {
                running: true,
                total: vault.notes.unwrap_or(0),
                ..IndexProgress::default()
            };
        }
        let app = Arc::clone(self);
        let progress = Arc::clone(&self.setup.index);
        let spawned = std::thread::Builder::new().name("first-index".into()).spawn(move || {
            let cancel: Cancel = app.shutdown().clone();
            // The first run is the user's, started in the web app.
            let report = app.refresh_vault(
                None,
                false,
                &crate::kb::Actor::Web,
                &|done, total| {
                    let mut p = lock(&progress);
                    p.done = done;
                    p.total = total;
                },
                &cancel,
            );
            let mut p = lock(&progress);
            p.running = false;
            match report {
                Ok((root, r)) => {
                    p.done = p.total;
                    p.outcome = Some(format!(
                        "{} notes indexed from {} ({} new, {} changed, {} unchanged{})",
                        r.added.len() + r.updated.len() + r.unchanged,
                        root.display(),
                        r.added.len(),
                        r.updated.len(),
                        r.unchanged,
                        if r.skipped.is_empty() {
                            String::new()
                        } else {
                            format!(", {} skipped — `jarvis kb index-vault` lists them", r.skipped.len())
                        }
                    ));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the first index run failed");
                    p.failed = true;
                    p.outcome = Some(e.to_string());
                }
            }
        });
        if let Err(e) = spawned {
            let mut p = lock(&self.setup.index);
            p.running = false;
            p.failed = true;
            p.outcome = Some(format!("could not start indexing: {e}"));
        }
        Ok(())
    }

    pub fn index_progress(&self) -> IndexProgress {
        lock(&self.setup.index).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg_at(dir: &Path, text: &str) -> Config {
        let home = crate::paths::JarvisHome::at(dir.join("jarvis"));
        let user = dir.join("user");
        Config::from_parts(&home, &home.config_file(), Some(text), &move |k| {
            (k == "HOME").then(|| user.display().to_string())
        })
        .unwrap()
    }

    #[test]
    fn a_vault_must_exist_be_a_readable_folder_and_lie_outside_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = cfg_at(dir.path(), "");
        let notes = dir.path().join("notes");
        std::fs::create_dir_all(notes.join("private")).unwrap();
        std::fs::create_dir_all(notes.join(".obsidian")).unwrap();
        std::fs::write(notes.join("a.md"), "# A").unwrap();
        std::fs::write(notes.join("private/b.md"), "# B").unwrap();
        std::fs::write(notes.join(".obsidian/c.md"), "not a note").unwrap();
        std::fs::write(notes.join("d.txt"), "not a note").unwrap();
        assert_eq!(check_vault(&cfg, &notes), Ok(2));

        let (p, f) = check_vault(&cfg, &dir.path().join("nowhere")).unwrap_err();
        assert!(
            p.contains("does not exist") && f.contains("jarvis config set vault.path"),
            "{p} / {f}"
        );
        let (p, _) = check_vault(&cfg, &notes.join("a.md")).unwrap_err();
        assert!(p.contains("is a file"), "{p}");
        let inside = dir.path().join("jarvis/vault");
        std::fs::create_dir_all(&inside).unwrap();
        let (p, f) = check_vault(&cfg, &inside).unwrap_err();
        assert!(
            p.contains("inside Jarvis's own folder") && f.contains("JARVIS_HOME"),
            "{p} / {f}"
        );
    }

    #[test]
    fn ollama_names_without_a_tag_mean_latest() {
        assert!(same_ollama_model("qwen3:8b", "qwen3:8b"));
        assert!(same_ollama_model("llama3:latest", "llama3"));
        assert!(!same_ollama_model("qwen3:8b", "qwen3"));
    }

    #[test]
    fn nothing_listening_is_unreachable_and_a_cloud_model_without_a_key_says_so() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = format!("http://{}", l.local_addr().unwrap());
        drop(l);
        let dir = tempfile::tempdir().unwrap();
        let cfg = cfg_at(dir.path(), &format!("[chat]\nollama_host = \"{dead}\"\n"));
        let s = probe_model(&cfg, "ollama");
        assert_eq!(s.state, "unreachable", "{s:?}");
        assert!(!s.ready() && !s.configured && s.local);
        assert!(
            s.message.contains(&dead) && s.fix.as_deref().unwrap_or("").contains("ollama serve"),
            "{s:?}"
        );
        let s = probe_model(&cfg, "anthropic");
        assert_eq!(s.state, "no_key", "{s:?}");
        assert!(
            s.fix.as_deref().unwrap_or("").contains("chat.anthropic_api_key"),
            "{s:?}"
        );
        let s = probe_model(&cfg, "openrouter");
        assert_eq!(s.state, "no_model", "{s:?}");
    }
}
