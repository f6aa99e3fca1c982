//! Wiring the chat agent from the configuration: the knowledge base, the
//! provider cache, the paper pipeline for `add_document`, the vault and the
//! `[chat]` settings. The agent itself lives in `chat` and knows none of this.

use std::sync::Arc;

use crate::chat::tools::{PaperAdder, ToolDeps, VaultSettings};
use crate::chat::{CachedProviders, ChatAgent, ChatDeps, ChatSettings, SessionStore};
use crate::config::Config;
use crate::ingest::paper::{add_document, AddContext, AddError, AddReport, AddRequest};
use crate::kb::Kb;
use crate::llm::CancelToken;
use crate::paths::Dir;

pub fn chat_settings(cfg: &Config) -> ChatSettings {
    ChatSettings {
        response_style: cfg.str("chat.response_style"),
        compact_after_tokens: cfg.int("chat.compact_after_tokens").max(1) as usize,
        compact_keep_exchanges: cfg.int("chat.compact_keep_exchanges").max(0) as usize,
        max_tool_rounds: cfg.int("chat.max_tool_rounds").max(1) as usize,
        ..ChatSettings::default()
    }
}

/// Adds papers for the chat tool exactly as `kb add` does: the isolated PDF
/// worker, the arXiv client and the configured summary provider.
struct ConfigPapers {
    cfg: Config,
    kb: Arc<Kb>,
}

impl PaperAdder for ConfigPapers {
    fn add(&self, req: &AddRequest, allow_duplicate: bool, cancel: &CancelToken) -> Result<AddReport, AddError> {
        let pdf = super::papers::pdf_tools(&self.cfg);
        let provider = super::papers::provider(&self.cfg);
        let arxiv = super::papers::arxiv_client(&self.cfg);
        let settings = super::papers::add_settings(&self.cfg);
        let confirm = move |_: &str| allow_duplicate;
        let cx = AddContext {
            kb: &self.kb,
            pdf: pdf.as_ref(),
            provider: provider.as_deref(),
            arxiv: &arxiv,
            settings: &settings,
            confirm: &confirm,
            progress: &|_| {},
            cancel,
        };
        add_document(&cx, req)
    }
}

/// The agent over an already-open knowledge base.
pub fn chat_agent(cfg: &Config, kb: Arc<Kb>) -> Result<ChatAgent, crate::paths::PathsError> {
    let sessions = cfg.home.ensure(Dir::Sessions)?;
    let llm = super::llm::llm_settings(cfg);
    Ok(ChatAgent::new(ChatDeps {
        tools: ToolDeps {
            kb: kb.clone(),
            vault: VaultSettings {
                root: cfg.path("vault.path"),
                private_dirs: cfg.list("vault.private_dirs"),
            },
            papers: Some(Arc::new(ConfigPapers { cfg: cfg.clone(), kb })),
        },
        providers: Arc::new(CachedProviders::new(llm)),
        home: cfg.home.clone(),
        sessions: SessionStore::new(sessions),
        settings: chat_settings(cfg),
    }))
}
