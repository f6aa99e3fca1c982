//! Long-term memory's use cases every edge shares (list, review, forget,
//! export, import) and the idle-session extraction the `memory_extract`
//! job runs: which sessions are idle, which model reads them, and that a
//! private session never goes to a cloud model.
//! Must not: decide what a fact may say or who sees it (`memory` does), or
//! format anything for a person.

use crate::cancel::Cancel;
use crate::config::Config;
use crate::jobs::MemoryPass;
use crate::kb::Actor;
use crate::llm::spec::{is_cloud_provider, ModelSpec};
use crate::memory::extract::ExtractError;
use crate::memory::markdown::ImportReport;
use crate::memory::{FactDraft, Memory, MemoryError, MemorySettings};
use crate::paths::Dir;
use crate::store::{EventId, Fact, FactId};

use super::ops::OpError;
use super::App;

/// `[memory]` as the feature takes it.
pub fn memory_settings(cfg: &Config) -> MemorySettings {
    MemorySettings {
        auto_accept: cfg.bool("memory.auto_accept"),
        summary_tokens: usize::try_from(cfg.int("memory.summary_tokens")).unwrap_or(0),
    }
}

impl App {
    fn memory_op<T>(&self, f: impl FnOnce(&Memory<'_>) -> Result<T, MemoryError>) -> Result<T, OpError> {
        let kb = self.kb()?;
        let m = Memory::new(&kb, &memory_settings(&self.config()));
        Ok(f(&m)?)
    }

    /// Every fact, pending and accepted, newest change first.
    pub fn memory_list(&self) -> Result<Vec<Fact>, OpError> {
        self.memory_op(|m| m.list())
    }

    /// Accept a pending fact, with the user's edit if any.
    pub fn memory_accept(&self, id: FactId, edit: Option<&FactDraft>, actor: &Actor) -> Result<Fact, OpError> {
        self.memory_op(|m| m.accept(id, edit, actor))
    }

    pub fn memory_edit(&self, id: FactId, edit: &FactDraft, actor: &Actor) -> Result<Fact, OpError> {
        self.memory_op(|m| m.edit(id, edit, actor))
    }

    pub fn memory_reject(&self, id: FactId) -> Result<(), OpError> {
        self.memory_op(|m| m.reject(id))
    }

    /// Forget fact `id` now; returns it as it was and the event (none for
    /// a proposal, which is rejected).
    pub fn memory_forget(&self, id: FactId, actor: &Actor) -> Result<(Fact, Option<EventId>), OpError> {
        self.memory_op(|m| m.forget(id, actor))
    }

    /// The accepted facts as one Markdown file.
    pub fn memory_export(&self) -> Result<String, OpError> {
        self.memory_op(crate::memory::markdown::export)
    }

    pub fn memory_import(&self, text: &str, actor: &Actor) -> Result<ImportReport, OpError> {
        self.memory_op(|m| crate::memory::markdown::import(m, text, actor))
    }

    /// Read every session idle for `memory.idle_minutes` (0: never) that
    /// no pass read yet and propose what the extraction model finds in it. The model is
    /// `memory.extract_model` (the chat default when unset); a private
    /// session is left alone when that model is a cloud one.
    pub fn extract_idle_memories(&self, cancel: &Cancel) -> Result<MemoryPass, OpError> {
        let cfg = self.config();
        let mut pass = MemoryPass::default();
        let minutes = cfg.int("memory.idle_minutes");
        if minutes <= 0 {
            return Ok(pass);
        }
        let idle = time::Duration::minutes(minutes);
        let spec = match cfg.str("memory.extract_model") {
            s if s.trim().is_empty() => cfg.str("chat.provider"),
            s => s,
        };
        let cloud = is_cloud_provider(&spec, &super::llm::llm_settings(&cfg));
        let dir = cfg
            .home
            .ensure(Dir::Sessions)
            .map_err(|e| super::AppError::Chat(e.to_string()))?;
        let sessions = crate::chat::SessionStore::new(dir);
        let kb = self.kb()?;
        let memory = Memory::new(&kb, &memory_settings(&cfg));
        let now = time::OffsetDateTime::now_utc();
        let unreadable = |id: &str, e: crate::chat::SessionError| ExtractError::Session(id.into(), e.to_string());
        for meta in sessions.list().map_err(|e| unreadable("list", e))? {
            cancel.check().map_err(|_| ExtractError::Cancelled)?;
            let updated = time::OffsetDateTime::parse(&meta.updated, &time::format_description::well_known::Rfc3339);
            let idle_enough = updated.is_ok_and(|t| now - t >= idle);
            if meta.exchanges == 0 || !idle_enough || memory.extracted(&meta.id)? {
                continue;
            }
            if meta.private && cloud {
                pass.private_skipped += 1;
                continue;
            }
            let s = sessions.load(&meta.id).map_err(|e| unreadable(&meta.id, e))?;
            let turns: Vec<(bool, String)> = s
                .display
                .iter()
                .filter(|d| !d.error)
                .map(|d| (d.role == crate::llm::Role::User, d.text.clone()))
                .collect();
            let provider = self.provider(&ModelSpec::parse(&spec))?;
            let done = crate::memory::extract::extract_session(
                &memory,
                provider.as_ref(),
                &meta.id,
                s.private,
                &turns,
                cancel,
            )?;
            pass.sessions += 1;
            pass.proposed += done.proposed;
        }
        Ok(pass)
    }
}
