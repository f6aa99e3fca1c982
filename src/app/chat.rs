//! Wiring the chat agent from the configuration: the knowledge base, the
//! provider cache, the paper pipeline for `add_document`, the vault and the
//! `[chat]` settings. The agent itself lives in `chat` and knows none of this.

use std::sync::{Arc, Weak};

use crate::cancel::Cancel;
use crate::chat::models::{check_spec, SwitchError};
use crate::chat::research::ResearchSettings;
use crate::chat::tools::{PaperAdder, ToolDeps, VaultSettings};
use crate::chat::{ChatAgent, ChatDeps, ChatSettings, ProviderSource, SessionStore};
use crate::config::Config;
use crate::ingest::paper::{add_document, AddContext, AddError, AddReport, AddRequest};
use crate::kb::Kb;
use crate::llm::spec::{is_cloud_provider, ModelSpec};
use crate::llm::{ChatProvider, LlmError};
use crate::paths::Dir;

pub fn chat_settings(cfg: &Config) -> ChatSettings {
    ChatSettings {
        response_style: cfg.str("chat.response_style"),
        compact_after_tokens: cfg.int("chat.compact_after_tokens").max(1) as usize,
        compact_keep_exchanges: cfg.int("chat.compact_keep_exchanges").max(0) as usize,
        max_tool_rounds: cfg.int("chat.max_tool_rounds").max(1) as usize,
        max_output_tokens: cfg.int("chat.max_output_tokens").clamp(1, i64::from(u32::MAX)) as u32,
        turn_timeout: std::time::Duration::from_secs(cfg.int("chat.turn_timeout_secs").max(1) as u64),
        research: research_settings(cfg),
        memory: super::memory::memory_settings(cfg),
        ..ChatSettings::default()
    }
}

/// `[research]`: the limits of a research report.
pub fn research_settings(cfg: &Config) -> ResearchSettings {
    let n = |k: &str| cfg.int(k).max(1) as usize;
    ResearchSettings {
        sub_questions: n("research.sub_questions"),
        concurrency: n("research.concurrency"),
        rounds: n("research.rounds"),
        max_tokens: cfg.int("research.max_tokens").max(1) as u64,
        max_cost_cents: cfg.int("research.max_cost_cents").max(0) as u64,
        timeout: std::time::Duration::from_secs(cfg.int("research.timeout_secs").max(1) as u64),
    }
}

/// Adds papers for the chat tool exactly as `kb add` does: the isolated PDF
/// worker, the arXiv client and the configured summary provider.
struct ConfigPapers {
    cfg: Config,
    kb: Arc<Kb>,
    worker: Option<super::pdf_isolated::WorkerCommand>,
}

impl PaperAdder for ConfigPapers {
    fn add(
        &self,
        req: &AddRequest,
        allow_duplicate: bool,
        actor: &crate::kb::Actor,
        cancel: &Cancel,
    ) -> Result<AddReport, AddError> {
        let pdf = super::papers::pdf_tools_with(&self.cfg, cancel, self.worker.clone());
        let provider = super::papers::provider(&self.cfg);
        let arxiv = super::papers::arxiv_client(&self.cfg);
        let remote = super::papers::remote_sources(&self.cfg);
        let settings = super::papers::add_settings(&self.cfg);
        let confirm = move |_: &str| allow_duplicate;
        let cx = AddContext {
            kb: &self.kb,
            pdf: pdf.as_ref(),
            provider: provider.as_deref(),
            arxiv: &arxiv,
            remote: Some(&remote),
            settings: &settings,
            confirm: &confirm,
            progress: &|_| {},
            cancel,
            actor,
        };
        add_document(&cx, req)
    }
}

/// The App's provider cache, seen from the agent. Weak: the App owns the
/// agent, and the agent must not keep the App alive.
struct AppProviders(Weak<super::App>);

impl AppProviders {
    fn app(&self) -> Result<Arc<super::App>, LlmError> {
        self.0
            .upgrade()
            .ok_or_else(|| LlmError::config("jarvis is shutting down"))
    }
}

impl ProviderSource for AppProviders {
    fn resolve(&self, spec: &str) -> Result<(String, String), SwitchError> {
        let app = self.app().map_err(|e| SwitchError::NoModel(e.to_string()))?;
        check_spec(spec, &super::llm::llm_settings(&app.config()))
    }

    fn provider(&self, spec: &str) -> Result<Arc<dyn ChatProvider>, LlmError> {
        self.app()?.provider(&ModelSpec::parse(spec)).map_err(|e| match e {
            super::AppError::Provider(e) => e,
            other => LlmError::config(other.to_string()),
        })
    }

    fn is_cloud(&self, spec: &str) -> bool {
        // Fails closed: without the App there is no settings to prove local.
        self.app()
            .map(|app| is_cloud_provider(spec, &super::llm::llm_settings(&app.config())))
            .unwrap_or(true)
    }

    fn secrets(&self) -> Vec<String> {
        self.app()
            .map(|app| super::llm::llm_settings(&app.config()).secrets())
            .unwrap_or_default()
    }

    fn default_spec(&self) -> String {
        self.app()
            .map(|app| app.config().str("chat.provider"))
            .unwrap_or_else(|_| "ollama".into())
    }
}

/// The agent for an App: its knowledge base, its provider cache.
pub fn chat_agent(app: &Arc<super::App>) -> Result<ChatAgent, super::AppError> {
    let cfg = app.config();
    let kb = app.kb()?;
    let sessions = cfg
        .home
        .ensure(Dir::Sessions)
        .map_err(|e| super::AppError::Chat(e.to_string()))?;
    Ok(ChatAgent::new(ChatDeps {
        tools: ToolDeps {
            kb: kb.clone(),
            vault: VaultSettings {
                root: cfg.path("vault.path"),
                private_dirs: cfg.list("vault.private_dirs"),
            },
            drafts: match app.drafts() {
                Ok(d) => Some(d),
                Err(e) => {
                    tracing::warn!(error = %e, "drafts are unavailable to the chat");
                    None
                }
            },
            mcp: Some(app.mcp_clients()).filter(|m| !m.is_empty()),
            papers: Some(Arc::new(ConfigPapers {
                cfg: (*cfg).clone(),
                kb,
                worker: app.pdf_worker_command(),
            })),
        },
        providers: Arc::new(AppProviders(Arc::downgrade(app))),
        home: cfg.home.clone(),
        sessions: SessionStore::new(sessions),
        settings: chat_settings(&cfg),
    }))
}
