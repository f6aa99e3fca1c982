//! The application layer: the one place things are put together.
//!
//! Owns: [`App`], the long-lived handle every edge (`cli`, the coming `web`
//! server, the coming jobs) goes through — the resolved configuration
//! (re-readable), the paths, the knowledge base (opened once, shared), a
//! provider cache keyed by model spec, the prompts, the shutdown switch and
//! the PDF worker settings — and the operations edges share, as `App`
//! methods. Also wiring configuration into engines (which library, which
//! model) and cross-cutting checks such as `runtime check`.
//! Must not: parse arguments, print, or speak HTTP — that is `cli` and `web`.
//! Features (`ingest`, `kb`, …) sit below and never import `app`.

pub mod chat;
pub mod cite;
pub mod convert_pdf;
pub mod digest;
pub mod doctor;
pub mod history;
pub mod ingest;
pub mod jobs;
pub mod kb;
pub mod llm;
pub mod mcp_clients;
pub mod memory;
pub mod ops;
pub mod owner;
pub mod papers;
pub mod pdf_isolated;
pub mod pdf_ocr;
pub mod records;
mod records_config;
pub mod runtime_check;
pub mod setup;
pub mod source;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::cancel::Cancel;
use crate::config::{Config, ConfigError, Env};
use crate::drafts::DraftSettings;
use crate::error_kind::ErrorKind;
use crate::kb::Kb;
use crate::llm::spec::ModelSpec;
use crate::llm::{ChatProvider, LlmError};
use crate::paths::JarvisHome;
use crate::store::{Holder, LockError, StoreError};

/// How the embedding model's session is prepared, chosen per process by
/// the edge that knows what the process will do (see
/// [`App::set_embed_profile`]).
pub use crate::embed::SessionProfile;

/// Why the application could not do what an edge asked of it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// The configuration could not be (re)loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The knowledge base could not be opened.
    #[error("cannot open the knowledge base at {dir}: {source}")]
    Open {
        dir: std::path::PathBuf,
        #[source]
        source: kb::OpenError,
    },
    /// Another process holds the knowledge base.
    #[error("{}", held_message(dir, holder, *waited))]
    Held {
        dir: std::path::PathBuf,
        holder: Holder,
        /// How long this process waited (None: a long-lived owner, not
        /// waited for).
        waited: Option<Duration>,
    },
    /// A model provider could not be built from its spec.
    #[error(transparent)]
    Provider(#[from] LlmError),
    /// The chat agent could not be set up (its sessions directory).
    #[error("cannot set up chat: {0}")]
    Chat(String),
    /// The drafts root could not be opened.
    #[error(transparent)]
    Drafts(#[from] crate::drafts::DraftsError),
    /// An MCP server could not be switched or reached.
    #[error(transparent)]
    Mcp(#[from] crate::mcp_client::McpClientError),
}

impl AppError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AppError::Config(e) => e.kind(),
            AppError::Open { source, .. } => source.kind(),
            AppError::Held { .. } => ErrorKind::Conflict,
            AppError::Provider(e) => e.error_kind(),
            AppError::Chat(_) => ErrorKind::Unavailable,
            AppError::Drafts(e) => e.kind(),
            AppError::Mcp(e) => e.kind(),
        }
    }
}

/// Limits for the isolated `jarvis __pdf-worker` child (from `[rag]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdfWorkerSettings {
    pub timeout: Duration,
    pub memory_limit_mb: u64,
}

impl PdfWorkerSettings {
    pub fn from_config(cfg: &Config) -> Self {
        PdfWorkerSettings {
            timeout: Duration::from_secs(u64::try_from(cfg.int("rag.pdf_timeout_seconds")).unwrap_or(120).max(1)),
            memory_limit_mb: u64::try_from(cfg.int("rag.pdf_memory_mb")).unwrap_or(2048).max(1),
        }
    }
}

/// How the configuration is read again on [`App::reload_config`]: the
/// environment lookup the first load used (tests pass a closure; the CLI
/// passes the process environment).
type EnvFn = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Told once when opening the knowledge base has to wait for another
/// one-shot command that holds it.
pub type LockNotice = Box<dyn Fn(&Holder) + Send + Sync>;

/// The long-lived application handle. `Send + Sync`; share it as `Arc<App>`.
pub struct App {
    home: JarvisHome,
    env: EnvFn,
    config: RwLock<Arc<Config>>,
    /// Opened on first use: `config show` or `models` never pay for it.
    kb: Mutex<Option<Arc<Kb>>>,
    providers: Mutex<HashMap<String, Arc<dyn ChatProvider>>>,
    shutdown: Cancel,
    /// The chat agent, built on first use (it holds the running turns).
    chat: Mutex<Option<Arc<crate::chat::ChatAgent>>>,
    lock_notice: Mutex<Option<LockNotice>>,
    /// How the knowledge base's embedding model loads (read when it opens).
    embed_profile: Mutex<SessionProfile>,
    /// The drafts root and pending proposals, opened on first use.
    drafts: Mutex<Option<crate::drafts::DraftsHandle>>,
    /// `config.toml` as it was when the configuration in effect was read,
    /// so a long-lived owner notices an edit (see [`App::reload_config_if_changed`]).
    config_stamp: Mutex<FileStamp>,
    /// The program that runs `__pdf-worker` for pages drawn on request;
    /// `None` = this executable. Tests whose executable is the harness
    /// point it at the built `jarvis`.
    pdf_worker_cmd: Mutex<Option<pdf_isolated::WorkerCommand>>,
    /// Held by whichever digest run is in flight in this process — the
    /// scheduled job, its catch-up, or a `jarvis run-digest` delegated to
    /// this owner — so two digests never run at once.
    digest_lock: Arc<tokio::sync::Mutex<()>>,
    /// How far the vault refresh in flight is (any edge's: the scheduled
    /// job, a delegated `kb index-vault`, …); `None` when none runs.
    vault_progress: Mutex<Option<VaultProgress>>,
    /// Held by the vault refresh in flight, so refreshes take turns.
    vault_turn: Mutex<()>,
    /// The set-up checks' probe cache and the first index run.
    setup: setup::SetupState,
    /// Other MCP servers' clients, built on first use from `[mcp_servers]`.
    mcp_clients: std::sync::OnceLock<Arc<crate::mcp_client::McpClients>>,
}

/// How far a running vault refresh is: `done` of `total` notes looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultProgress {
    pub done: usize,
    pub total: usize,
}

/// Modification time and size of a file, `None` when it does not exist.
type FileStamp = Option<(std::time::SystemTime, u64)>;

fn file_stamp(path: &std::path::Path) -> FileStamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("home", &self.home)
            .field("kb_open", &self.kb_if_open().is_some())
            .finish_non_exhaustive()
    }
}

impl App {
    /// Load the configuration for `home` and build the handle. Nothing heavy
    /// happens here: the knowledge base opens on the first [`App::kb`].
    pub fn open(
        home: JarvisHome,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Result<Arc<App>, AppError> {
        let env: EnvFn = Box::new(env);
        let config = Config::load(&home, &*env as Env<'_>)?;
        Ok(Self::with_config(home, env, config))
    }

    /// Build the handle around a configuration the caller already loaded
    /// (the CLI prints its warnings before dispatching).
    pub fn from_config(config: Config, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Arc<App> {
        Self::with_config(config.home.clone(), Box::new(env), config)
    }

    fn with_config(home: JarvisHome, env: EnvFn, config: Config) -> Arc<App> {
        let stamp = file_stamp(&config.file);
        Arc::new(App {
            config_stamp: Mutex::new(stamp),
            home,
            env,
            config: RwLock::new(Arc::new(config)),
            kb: Mutex::new(None),
            providers: Mutex::new(HashMap::new()),
            shutdown: Cancel::default(),
            chat: Mutex::new(None),
            lock_notice: Mutex::new(None),
            embed_profile: Mutex::new(SessionProfile::Throughput),
            drafts: Mutex::new(None),
            pdf_worker_cmd: Mutex::new(None),
            digest_lock: Arc::default(),
            vault_progress: Mutex::new(None),
            vault_turn: Mutex::new(()),
            setup: setup::SetupState::default(),
            mcp_clients: std::sync::OnceLock::new(),
        })
    }

    /// The vault refresh in flight in this process and how far it is, for
    /// a status line (`None`: no refresh is running).
    pub fn vault_progress(&self) -> Option<VaultProgress> {
        *crate::lock::lock(&self.vault_progress)
    }

    pub(crate) fn set_vault_progress(&self, p: Option<VaultProgress>) {
        *crate::lock::lock(&self.vault_progress) = p;
    }

    pub fn home(&self) -> &JarvisHome {
        &self.home
    }

    /// The configuration in effect now. Hold the `Arc` for one operation so
    /// a reload in between cannot change settings half-way through it.
    pub fn config(&self) -> Arc<Config> {
        Arc::clone(&crate::lock::read(&self.config))
    }

    /// The Obsidian vault (`vault.path`), when one is configured.
    pub fn vault_path(&self) -> Option<std::path::PathBuf> {
        self.config().path("vault.path")
    }

    /// The model a session starts on when it names none (`chat.provider`).
    pub fn default_chat_spec(&self) -> String {
        self.config().str("chat.provider")
    }

    /// The user's response style, added to every system prompt
    /// (`chat.response_style`).
    pub fn response_style(&self) -> String {
        self.config().str("chat.response_style")
    }

    /// The web app's port (`web.port`; the schema bounds it to a port).
    pub fn web_port(&self) -> u16 {
        u16::try_from(self.config().int("web.port")).unwrap_or(8080)
    }

    /// Read `config.toml` and the environment again. Settings read per
    /// operation (models, prompts, limits) apply from the next operation on;
    /// the knowledge base keeps the embedding model it was opened with (a
    /// model change needs `jarvis kb reindex` anyway). Cached providers are
    /// dropped so a changed key or host is used. Returns the new warnings.
    pub fn reload_config(&self) -> Result<Vec<String>, AppError> {
        let stamp = file_stamp(&self.home.config_file());
        let fresh = Config::load(&self.home, &*self.env as Env<'_>)?;
        *crate::lock::lock(&self.config_stamp) = stamp;
        let warnings = fresh.warnings.clone();
        *crate::lock::write(&self.config) = Arc::new(fresh);
        crate::lock::lock(&self.providers).clear();
        Ok(warnings)
    }

    /// [`App::reload_config`] when `config.toml` changed (modification time
    /// or size) since the configuration in effect was read; `None` when it
    /// did not. A long-lived owner calls this before each delegated command,
    /// so `jarvis kb …` sees the file as the user last saved it.
    pub fn reload_config_if_changed(&self) -> Result<Option<Vec<String>>, AppError> {
        let now = file_stamp(&self.home.config_file());
        if *crate::lock::lock(&self.config_stamp) == now {
            return Ok(None);
        }
        self.reload_config().map(Some)
    }

    /// The knowledge base, opened (and locked) on first use and kept for
    /// the life of the App.
    ///
    /// When another one-shot command holds it, this waits (up to
    /// `rag.lock_wait_seconds`, telling the [`LockNotice`] after a second)
    /// instead of failing: two `kb search` started together both succeed. A
    /// long-lived owner (`jarvis serve` / `jarvis sync`) never lets go, so
    /// that is reported at once — the caller should go through its socket.
    pub fn kb(&self) -> Result<Arc<Kb>, AppError> {
        let mut slot = crate::lock::lock(&self.kb);
        if let Some(kb) = slot.as_ref() {
            return Ok(Arc::clone(kb));
        }
        let cfg = self.config();
        let wait = Duration::from_secs(u64::try_from(cfg.int("rag.lock_wait_seconds")).unwrap_or(0));
        let start = std::time::Instant::now();
        let mut told = false;
        let kb = loop {
            // Probe the lock before paying for the model load that opening
            // starts with; a holder found either way is waited for alike.
            let probe = match crate::store::lock::acquire(&cfg.rag_dir()) {
                Err(LockError::Held { holder, .. }) => Some(holder),
                _ => None,
            };
            let attempt: Result<(), Holder> = match probe {
                Some(holder) => Err(holder),
                None => match kb::open_kb_with(&cfg, self.embed_profile()) {
                    Ok(kb) => break kb,
                    Err(source) => match held_by(&source) {
                        Some(h) => Err(h.clone()),
                        None => {
                            return Err(AppError::Open {
                                dir: cfg.rag_dir(),
                                source,
                            })
                        }
                    },
                },
            };
            let Err(holder) = attempt else { continue };
            let may_wait = !owner::is_owner_command(&holder.command);
            if !may_wait || start.elapsed() >= wait || self.shutdown.is_cancelled() {
                return Err(AppError::Held {
                    dir: cfg.rag_dir(),
                    holder,
                    waited: may_wait.then(|| start.elapsed()),
                });
            }
            if !told && start.elapsed() >= Duration::from_secs(1) {
                told = true;
                if let Some(n) = crate::lock::lock(&self.lock_notice).as_ref() {
                    n(&holder);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let kb = Arc::new(kb);
        *slot = Some(Arc::clone(&kb));
        Ok(kb)
    }

    /// How the knowledge base's embedding model is to load, from the next
    /// time it opens (an already open one keeps its model). The default,
    /// [`SessionProfile::Throughput`], is right for anything that embeds in
    /// bulk or lives long; [`SessionProfile::QuickStart`] is for a one-shot
    /// process that embeds a query or two and exits, where the optimised
    /// session's load would be most of its run time.
    pub fn set_embed_profile(&self, profile: SessionProfile) {
        *crate::lock::lock(&self.embed_profile) = profile;
    }

    /// The profile the next opening of the knowledge base loads with.
    pub fn embed_profile(&self) -> SessionProfile {
        *crate::lock::lock(&self.embed_profile)
    }

    /// Set what [`App::kb`] says when it starts waiting for a lock holder.
    pub fn set_lock_notice(&self, notice: LockNotice) {
        *crate::lock::lock(&self.lock_notice) = Some(notice);
    }

    /// The knowledge base if it is already open (never opens it).
    pub fn kb_if_open(&self) -> Option<Arc<Kb>> {
        crate::lock::lock(&self.kb).clone()
    }

    /// Close the knowledge base (releasing its lock once the last operation
    /// holding an `Arc` to it finishes). The next [`App::kb`] reopens it.
    pub fn close_kb(&self) -> Option<Arc<Kb>> {
        crate::lock::lock(&self.kb).take()
    }

    /// Unloads the embedding model if the open knowledge base has not used
    /// it for `runtime.model_keep_alive_secs` (0 keeps it loaded). The model
    /// and ONNX Runtime's arena are most of an owner's memory, and an owner
    /// mostly waits; the first search after this pays the load again
    /// (a few hundred milliseconds), as with Ollama's keep-alive.
    pub fn release_idle_model(&self) -> bool {
        let secs = u64::try_from(self.config().int("runtime.model_keep_alive_secs")).unwrap_or(0);
        secs > 0
            && self
                .kb_if_open()
                .is_some_and(|kb| kb.release_idle_embedder(Duration::from_secs(secs)))
    }

    /// Until shutdown, applies [`App::release_idle_model`] ten times per
    /// keep-alive period (every 5–30 s), so the model goes within a tenth of
    /// the period after it is due; on a blocking thread since dropping a
    /// session frees a lot of memory.
    pub async fn keep_model_alive_only_while_used(self: Arc<Self>) {
        loop {
            let secs = u64::try_from(self.config().int("runtime.model_keep_alive_secs")).unwrap_or(0);
            let period = Duration::from_secs(if secs == 0 { 60 } else { (secs / 10).clamp(5, 30) });
            tokio::select! {
                () = self.shutdown.cancelled() => return,
                () = tokio::time::sleep(period) => {}
            }
            let app = Arc::clone(&self);
            if let Err(e) = tokio::task::spawn_blocking(move || app.release_idle_model()).await {
                tracing::warn!(error = %e, "the idle-model check failed; the model stays loaded");
            }
        }
    }

    /// The provider for a model spec (`provider` or `provider:model`),
    /// built once per spec and shared: two sessions on different models
    /// each get their own.
    pub fn provider(&self, spec: &ModelSpec) -> Result<Arc<dyn ChatProvider>, AppError> {
        let key = spec.to_string();
        if let Some(p) = crate::lock::lock(&self.providers).get(&key) {
            return Ok(Arc::clone(p));
        }
        let settings = llm::llm_settings(&self.config());
        let built: Arc<dyn ChatProvider> = Arc::from(crate::llm::spec::make_provider(&key, &settings)?);
        let mut cache = crate::lock::lock(&self.providers);
        Ok(Arc::clone(cache.entry(key).or_insert(built)))
    }

    /// A prompt by name from the user's `$JARVIS_HOME/prompts/` (seeded
    /// from the shipped default on first use), else the shipped default.
    pub fn prompt(&self, name: &str) -> Option<String> {
        crate::prompts::load(&self.home, name)
            .map_err(|e| tracing::warn!(prompt = name, error = %e, "cannot read the prompt; using the built-in one"))
            .ok()
            .or_else(|| crate::prompts::default_of(name))
    }

    /// The switch a shutdown (SIGINT/SIGTERM in an owner) flips; long
    /// operations watch it.
    pub fn shutdown(&self) -> &Cancel {
        &self.shutdown
    }

    /// The chat agent (one per App: it owns the running turns and the
    /// pending confirmations). `[chat]` settings are re-read on every call,
    /// so a config reload applies from the next turn.
    pub fn chat(self: &Arc<Self>) -> Result<Arc<crate::chat::ChatAgent>, AppError> {
        let mut slot = crate::lock::lock(&self.chat);
        let agent = match slot.as_ref() {
            Some(a) => Arc::clone(a),
            None => {
                let agent = Arc::clone(slot.insert(Arc::new(chat::chat_agent(self)?)));
                // History a previous run saved but did not live to index.
                agent.catch_up_history();
                agent
            }
        };
        agent.set_settings(chat::chat_settings(&self.config()));
        Ok(agent)
    }

    /// The drafts sandbox (one per App: it holds the pending proposals the
    /// chat makes and the editor reviews).
    pub fn drafts(&self) -> Result<crate::drafts::DraftsHandle, AppError> {
        let mut slot = crate::lock::lock(&self.drafts);
        if let Some(d) = slot.as_ref() {
            return Ok(d.clone());
        }
        let d = crate::drafts::DraftsHandle::open(draft_settings(&self.config()))?;
        Ok(slot.insert(d).clone())
    }

    /// Run the PDF worker (page drawing, and ingest from here on) with
    /// `cmd` instead of this executable (tests: the harness is not
    /// `jarvis`).
    pub fn set_pdf_worker_command(&self, cmd: pdf_isolated::WorkerCommand) {
        *crate::lock::lock(&self.pdf_worker_cmd) = Some(cmd);
    }

    /// The PDF worker set by [`App::set_pdf_worker_command`], if any.
    pub(crate) fn pdf_worker_command(&self) -> Option<pdf_isolated::WorkerCommand> {
        crate::lock::lock(&self.pdf_worker_cmd).clone()
    }

    /// Draw page `page` (1-based) of the PDF at `path`, `width` pixels wide
    /// (clamped), as a PNG — in a child process, under the `[rag]` PDF
    /// limits, so a PDFium fault costs the picture and never this process.
    /// Blocking.
    pub fn render_pdf_page(
        &self,
        path: &std::path::Path,
        name: &str,
        page: u32,
        width: u32,
    ) -> Result<crate::pdf::PageImage, pdf_isolated::IsolatedPdfError> {
        let cmd = crate::lock::lock(&self.pdf_worker_cmd).clone();
        let cmd = match cmd {
            Some(c) => c,
            None => {
                pdf_isolated::WorkerCommand::current().map_err(|source| pdf_isolated::IsolatedPdfError::Sandbox {
                    name: name.to_string(),
                    source,
                })?
            }
        };
        pdf_isolated::render_page_isolated(&cmd, &self.config(), path, name, page, width)
    }

    pub fn pdf_worker(&self) -> PdfWorkerSettings {
        PdfWorkerSettings::from_config(&self.config())
    }
}

/// What the drafts feature gets from `[drafts]` (and the vault, which the
/// drafts root must stay out of).
/// Whether MCP clients may read private documents (`[mcp]
/// include_private`). A free function: `jarvis mcp` on stdio has a
/// configuration but no `App` until a call needs one.
pub fn mcp_include_private(cfg: &Config) -> bool {
    cfg.bool("mcp.include_private")
}

pub fn draft_settings(cfg: &Config) -> DraftSettings {
    let root = cfg.path("drafts.dir").unwrap_or_else(|| cfg.home.root().join("drafts"));
    DraftSettings {
        root,
        extensions: cfg
            .list("drafts.extensions")
            .iter()
            .map(|e| crate::drafts::normalise_ext(e))
            .collect(),
        max_file_bytes: u64::try_from(cfg.int("drafts.max_file_bytes")).unwrap_or(2_000_000),
        retention_days: u32::try_from(cfg.int("drafts.retention_days")).unwrap_or(30),
        latex_engine: cfg.str("drafts.latex_engine"),
        pdf_engine: cfg.str("drafts.pdf_engine"),
        pdf_mainfont: cfg.str("drafts.pdf_mainfont"),
        compile_timeout: std::time::Duration::from_secs(
            u64::try_from(cfg.int("drafts.compile_timeout_seconds"))
                .unwrap_or(180)
                .max(1),
        ),
        pdf_margin: cfg.str("drafts.pdf_margin"),
        vault: cfg.path("vault.path"),
    }
}

fn held_message(dir: &std::path::Path, holder: &Holder, waited: Option<Duration>) -> String {
    match waited {
        Some(w) => format!(
            "cannot open the knowledge base at {}: still in use by {holder} after waiting {:.0} s — let that command finish or stop it, or raise `rag.lock_wait_seconds`",
            dir.display(),
            w.as_secs_f64()
        ),
        None => format!(
            "cannot open the knowledge base at {}: it is owned by {holder} — `jarvis kb` commands go through its socket; if that failed, stop it and try again",
            dir.display()
        ),
    }
}

/// The holder named by a "knowledge base in use" failure, if that is
/// what `e` is.
pub fn held_by(e: &kb::OpenError) -> Option<&Holder> {
    match e {
        kb::OpenError::Kb(crate::kb::KbError::Store(StoreError::Locked(LockError::Held { holder, .. }))) => {
            Some(holder)
        }
        _ => None,
    }
}

impl AppError {
    /// The lock holder when the knowledge base is held by another process.
    pub fn holder(&self) -> Option<&Holder> {
        match self {
            AppError::Held { holder, .. } => Some(holder),
            AppError::Open { source, .. } => held_by(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
