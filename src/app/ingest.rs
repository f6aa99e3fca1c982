//! Writes every edge shares: adding a paper, importing a Zotero library,
//! refreshing the vault and re-embedding the knowledge base. Each composes the shared `Kb` with the
//! configuration in effect (providers, the isolated PDF worker, arXiv) and
//! returns the feature's plain report.

use std::path::Path;

use crate::cancel::Cancel;
use crate::ingest::paper::Mode;
use crate::ingest::paper::{add_document, AddContext, AddError, AddReport, AddRequest, Stage};
use crate::ingest::vault::{refresh_vault, VaultError, VaultOptions, VaultReport};
use crate::ingest::zotero::{self, ImportOptions, ImportReport, ReadOptions, ZoteroError};
use crate::kb::maintain::ReindexReport;
use crate::kb::{Actor, KbError};

use super::{App, AppError, VaultProgress};

/// Clears the App's vault progress when a refresh ends.
struct VaultProgressGuard<'a>(&'a App);

impl Drop for VaultProgressGuard<'_> {
    fn drop(&mut self) {
        self.0.set_vault_progress(None);
    }
}

/// What `kb import-zotero` asks for.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// Zotero's data directory, its `zotero.sqlite`, or an export file;
    /// `None`: `~/Zotero`.
    pub path: Option<std::path::PathBuf>,
    /// Zotero's base directory for linked files.
    pub base_dir: Option<std::path::PathBuf>,
    pub mode: Mode,
    pub figures: bool,
    /// Replace a paper stored under another source (same DOI, arXiv id
    /// or PDF) or add a same-titled one, instead of skipping it.
    pub replace_duplicates: bool,
}

/// Where an import is.
#[derive(Debug, Clone)]
pub enum ImportProgress<'a> {
    /// Copying and reading the library.
    Reading,
    /// About to add item `done + 1` of `total`.
    Item { done: usize, total: usize, title: &'a str },
    /// The add flow's step for the current item.
    Stage(Stage),
}

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The application could not provide the knowledge base.
    #[error(transparent)]
    App(#[from] AppError),
    /// Adding the paper failed; nothing was added.
    #[error(transparent)]
    Add(#[from] AddError),
    /// Importing a library failed; every item imported before stays.
    #[error(transparent)]
    Import(#[from] ZoteroError),
    /// Refreshing the vault failed; every note finished so far is whole.
    #[error(transparent)]
    Vault(#[from] VaultError),
    /// Re-embedding failed; the old indexes are still in use.
    #[error(transparent)]
    Kb(#[from] KbError),
    /// The caller stopped the operation; nothing partial was kept.
    #[error("stopped; nothing partial was kept")]
    Cancelled,
    /// `rag.embed_model` changed while this long-lived process had the
    /// knowledge base open with the old model (which chat sessions and
    /// searches in flight still use); nothing was changed.
    #[error(
        "the knowledge base is open in this long-lived process with the embedding model {open}, \
         but config.toml now names {configured}; stop `jarvis serve` / `jarvis sync`, run \
         `jarvis kb reindex`, then start it again"
    )]
    ModelSwitchNeedsRestart { open: String, configured: String },
}

impl WriteError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            WriteError::App(e) => e.kind(),
            WriteError::Add(e) => e.kind(),
            WriteError::Import(e) => e.kind(),
            WriteError::Vault(e) => e.kind(),
            WriteError::Kb(e) => e.kind(),
            WriteError::Cancelled => crate::error_kind::ErrorKind::Cancelled,
            WriteError::ModelSwitchNeedsRestart { .. } => crate::error_kind::ErrorKind::Conflict,
        }
    }
}

impl App {
    /// Add one paper (a local PDF or an arXiv id), PDFium running in the
    /// isolated worker. `confirm` answers the duplicate question. A stop at
    /// any step adds nothing and is reported as [`WriteError::Cancelled`]
    /// whatever step noticed it.
    pub fn add_paper(
        &self,
        req: &AddRequest,
        actor: &Actor,
        confirm: &dyn Fn(&str) -> bool,
        progress: &dyn Fn(Stage),
        cancel: &Cancel,
    ) -> Result<AddReport, WriteError> {
        let cfg = self.config();
        let kb = self.kb()?;
        let pdf = super::papers::pdf_tools_with(&cfg, cancel, self.pdf_worker_command());
        let provider = super::papers::provider(&cfg);
        let arxiv = super::papers::arxiv_client(&cfg);
        let remote = super::papers::remote_sources(&cfg);
        let settings = super::papers::add_settings(&cfg);
        let cx = AddContext {
            kb: &kb,
            pdf: pdf.as_ref(),
            provider: provider.as_deref(),
            arxiv: &arxiv,
            remote: Some(&remote),
            settings: &settings,
            confirm,
            progress,
            cancel,
            actor,
        };
        match add_document(&cx, req) {
            Ok(r) => Ok(r),
            // A stop may surface as whatever step it interrupted (a killed
            // PDF worker, a closed LLM stream); it is still a stop.
            Err(_) if cancel.is_cancelled() => Err(WriteError::Cancelled),
            Err(e) => Err(e.into()),
        }
    }

    /// Import a Zotero library (its database or a BibTeX / CSL-JSON
    /// export): every item through the paper add flow, one commit each, PDF
    /// work in the isolated worker. Duplicates by another route are
    /// skipped unless `req.replace_duplicates`.
    pub fn import_library(
        &self,
        req: &ImportRequest,
        actor: &Actor,
        progress: &dyn Fn(ImportProgress<'_>),
        cancel: &Cancel,
    ) -> Result<ImportReport, WriteError> {
        let user_home = (self.env)("HOME").map(std::path::PathBuf::from).or_else(dirs::home_dir);
        let location = zotero::locate(req.path.as_deref(), user_home.as_deref())?;
        progress(ImportProgress::Reading);
        let library = zotero::read(
            &location,
            &ReadOptions {
                base_dir: req.base_dir.clone(),
            },
        )?;
        let cfg = self.config();
        let kb = self.kb()?;
        let pdf = super::papers::pdf_tools_with(&cfg, cancel, self.pdf_worker_command());
        let provider = super::papers::provider(&cfg);
        let arxiv = super::papers::arxiv_client(&cfg);
        let settings = super::papers::add_settings(&cfg);
        let yes = req.replace_duplicates;
        let cx = AddContext {
            kb: &kb,
            pdf: pdf.as_ref(),
            provider: provider.as_deref(),
            arxiv: &arxiv,
            remote: None,
            settings: &settings,
            confirm: &|_| yes,
            progress: &|s| progress(ImportProgress::Stage(s)),
            cancel,
            actor,
        };
        let opts = ImportOptions {
            mode: req.mode,
            figures: req.figures,
        };
        let item = |done: usize, total: usize, title: &str| progress(ImportProgress::Item { done, total, title });
        Ok(zotero::import(&cx, library, &opts, &item)?)
    }

    /// Wait for this process's vault refresh in flight, if any, to end
    /// (checking `cancel`), and hold the turn until the guard drops. Two
    /// refreshes at once would both embed every changed note — on a busy
    /// machine a delegated `kb index-vault` beside the start-up refresh
    /// took twice as long; one after the other, the second finds the first
    /// one's work done.
    fn vault_turn(&self, cancel: &Cancel) -> Result<std::sync::MutexGuard<'_, ()>, WriteError> {
        loop {
            match self.vault_turn.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {
                    if cancel.is_cancelled() {
                        return Err(WriteError::Cancelled);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        }
    }

    /// Incremental vault sync of `root` (default `vault.path`). Runs after
    /// any other refresh of this process (see `vault_turn`).
    pub fn refresh_vault(
        &self,
        root: Option<&Path>,
        force: bool,
        actor: &Actor,
        progress: &dyn Fn(usize, usize),
        cancel: &Cancel,
    ) -> Result<(std::path::PathBuf, VaultReport), WriteError> {
        let cfg = self.config();
        let root = root
            .map(Path::to_path_buf)
            .or_else(|| cfg.path("vault.path"))
            .unwrap_or_default();
        let kb = self.kb()?;
        let opts = VaultOptions {
            private_dirs: cfg.list("vault.private_dirs"),
            force,
            actor: actor.clone(),
        };
        let _turn = self.vault_turn(cancel)?;
        // Told to whoever asks the App (the web app's status line), whichever
        // edge started the refresh; cleared when it ends, however it ends.
        let _shown = VaultProgressGuard(self);
        let progress = |done: usize, total: usize| {
            self.set_vault_progress(Some(VaultProgress { done, total }));
            progress(done, total);
        };
        match refresh_vault(&kb, &root, &opts, &progress, cancel) {
            Ok(r) => Ok((root, r)),
            Err(_) if cancel.is_cancelled() => Err(WriteError::Cancelled),
            Err(e) => Err(e.into()),
        }
    }

    /// The vault refresh for only `changed` (absolute paths a watcher
    /// reported) in the configured vault; `Ok(None)` when they cannot be
    /// refreshed alone and [`App::refresh_vault`] must sweep instead.
    pub fn refresh_vault_paths(
        &self,
        changed: &[std::path::PathBuf],
        cancel: &Cancel,
    ) -> Result<Option<VaultReport>, WriteError> {
        let cfg = self.config();
        let root = cfg.path("vault.path").unwrap_or_default();
        let kb = self.kb()?;
        // Only the owner's watcher refreshes single paths.
        let opts = VaultOptions {
            private_dirs: cfg.list("vault.private_dirs"),
            force: false,
            actor: Actor::job("vault_watch"),
        };
        let _turn = self.vault_turn(cancel)?;
        match crate::ingest::vault::refresh_vault_paths(&kb, &root, &opts, changed, cancel) {
            Ok(r) => Ok(r),
            Err(_) if cancel.is_cancelled() => Err(WriteError::Cancelled),
            Err(e) => Err(e.into()),
        }
    }

    /// Refuse a re-embed that cannot do what the user means: the knowledge
    /// base was opened (by a long-lived owner) before `rag.embed_model`
    /// changed, so it would re-embed with the old model. Cheap; the CLI asks
    /// before it downloads the new model.
    pub fn check_reindex_model(&self) -> Result<(), WriteError> {
        let Some(kb) = self.kb_if_open() else { return Ok(()) };
        let configured = self.config().str("rag.embed_model");
        let open = kb.model_id();
        if open != configured {
            return Err(WriteError::ModelSwitchNeedsRestart { open, configured });
        }
        Ok(())
    }

    /// Re-embed every stored chunk into a fresh generation and switch.
    pub fn reindex(&self, progress: &dyn Fn(usize, usize), cancel: &Cancel) -> Result<ReindexReport, WriteError> {
        self.check_reindex_model()?;
        let kb = self.kb()?;
        match kb.reindex(progress, cancel) {
            Ok(r) => Ok(r),
            Err(_) if cancel.is_cancelled() => Err(WriteError::Cancelled),
            Err(e) => Err(e.into()),
        }
    }
}
