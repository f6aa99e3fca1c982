//! Wiring for the weekly digest: `[digest]` settings from config, the
//! scoring provider (`chat.provider`), the shared arXiv client, the
//! isolated PDF worker for the full-text tier, the scoring prompt from the
//! prompt store — composed into `digest::DigestDeps` for the one pipeline
//! entry point the `run-digest` command and the scheduled job share.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::config::Config;
use crate::digest::biorxiv::BiorxivSettings;
use crate::digest::feedback::{self, Feedback, Run, RunEntry, Vote};
use crate::digest::import::{import_files, ImportError, ImportReport};
use crate::digest::{DigestDeps, DigestError, DigestOptions, DigestReport, DigestSettings};
use crate::paths::Dir;

use super::{App, AppError};

/// Why a digest operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DigestOpError {
    /// The application could not provide the knowledge base or provider.
    #[error(transparent)]
    App(#[from] AppError),
    /// The run failed (or is switched off: [`DigestError::Disabled`]).
    #[error(transparent)]
    Digest(#[from] DigestError),
    /// Importing digest files failed.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A vote or an add named a paper no remembered digest lists.
    #[error("no paper {0:?} in the recent digests — use the id the Digest view or the digest file shows (an arXiv id such as 2401.01234, or a DOI)")]
    UnknownPaper(String),
    /// The votes or the remembered runs could not be read or written.
    #[error("digest feedback: {0}")]
    Feedback(String),
    /// Adding the paper to the library failed.
    #[error(transparent)]
    Add(#[from] super::ingest::WriteError),
    /// Another digest run holds the digest lock in this process.
    #[error("a digest is already running here (the scheduled digest job or another `jarvis run-digest`) — wait for it to finish (`jarvis kb sync-status` shows the job) and run again if you still need to")]
    Busy,
}

impl DigestOpError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            DigestOpError::App(e) => e.kind(),
            DigestOpError::Digest(e) => e.kind(),
            DigestOpError::Import(e) => e.kind(),
            DigestOpError::Busy => crate::error_kind::ErrorKind::Conflict,
            DigestOpError::UnknownPaper(_) => crate::error_kind::ErrorKind::NotFound,
            DigestOpError::Feedback(_) => crate::error_kind::ErrorKind::Unavailable,
            DigestOpError::Add(e) => e.kind(),
        }
    }
}

fn count(v: i64) -> usize {
    usize::try_from(v.max(0)).unwrap_or(0)
}

fn pairs(cfg: &Config, key: &str) -> Vec<(String, usize)> {
    cfg.pairs(key)
        .into_iter()
        .map(|(k, n)| (k.trim().to_string(), count(n)))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// The `[digest]` settings in effect.
pub fn digest_settings(cfg: &Config) -> DigestSettings {
    let provider = crate::llm::ModelSpec::parse(&cfg.str("chat.provider")).provider;
    let context = match cfg.int("digest.context_tokens") {
        n if n > 0 => count(n),
        _ if provider == "ollama" => 8192,
        _ => 100_000,
    };
    DigestSettings {
        enabled: cfg.bool("digest.enabled"),
        output_dir: cfg
            .path("digest.output_dir")
            .unwrap_or_else(|| cfg.home.root().join("digest")),
        max_results: count(cfg.int("digest.max_results")),
        arxiv_categories: pairs(cfg, "digest.arxiv_categories"),
        biorxiv_categories: pairs(cfg, "digest.biorxiv_categories"),
        biorxiv_keywords: pairs(cfg, "digest.biorxiv_keywords"),
        first_run_days: u32::try_from(cfg.int("digest.biorxiv_days").max(1)).unwrap_or(7),
        max_candidates: count(cfg.int("digest.max_candidates")).max(1),
        batch_size: count(cfg.int("digest.batch_size")).max(1),
        context_tokens: context,
        biorxiv: BiorxivSettings {
            api_base: cfg.str("digest.biorxiv_url"),
            backoff: Duration::from_millis(cfg.int("papers.retry_backoff_ms").max(0) as u64),
            ..BiorxivSettings::default()
        },
        web_url: Some(format!("http://127.0.0.1:{}", cfg.int("web.port"))),
    }
}

impl App {
    /// Where the digest keeps its seen-set and last-success stamp.
    pub fn digest_state_dir(&self) -> PathBuf {
        self.home().path(Dir::State)
    }

    /// The lock every digest run in this process takes (see
    /// [`App::run_digest`]); the jobs share it for their cron and catch-up runs.
    pub fn digest_lock(&self) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(&self.digest_lock)
    }

    /// Run the weekly digest once (`jarvis run-digest`, also when delegated
    /// to a running owner). Takes the digest lock without waiting: while
    /// the scheduled job (or another run) holds it, this returns
    /// [`DigestOpError::Busy`] at once instead of a second digest. Blocking:
    /// call it off the async runtime. `progress` gets one line per step.
    pub fn run_digest(
        &self,
        opts: DigestOptions,
        progress: &dyn Fn(&str),
        cancel: &Cancel,
    ) -> Result<DigestReport, DigestOpError> {
        let Ok(_held) = self.digest_lock.try_lock() else {
            return Err(DigestOpError::Busy);
        };
        self.run_digest_held(opts, progress, cancel)
    }

    /// [`App::run_digest`] for a caller that already holds
    /// [`App::digest_lock`] (the scheduled digest job takes it before its
    /// provider probe).
    pub(crate) fn run_digest_held(
        &self,
        opts: DigestOptions,
        progress: &dyn Fn(&str),
        cancel: &Cancel,
    ) -> Result<DigestReport, DigestOpError> {
        let cfg = self.config();
        let settings = digest_settings(&cfg);
        // Cheap refusals first: no model or index is loaded for them.
        if !settings.enabled && !opts.force {
            return Err(DigestError::Disabled.into());
        }
        if settings.nothing_configured() {
            return Err(DigestError::NothingConfigured.into());
        }
        let kb = self.kb()?;
        let llm = super::llm::llm_settings(&cfg);
        let provider = crate::llm::make_provider(&llm.provider.clone(), &llm).map_err(AppError::from)?;
        let provider_is_cloud = crate::llm::is_cloud_provider(&llm.provider, &llm);
        tracing::info!(
            provider = provider.provider_name(),
            model = provider.model(),
            "digest run starting"
        );
        let arxiv = super::papers::arxiv_client(&cfg);
        let pdf = super::papers::pdf_tools(&cfg, cancel);
        let add_settings = super::papers::add_settings(&cfg);
        let prompt = self.prompt(crate::prompts::DIGEST_SCORE).unwrap_or_default();
        let state_dir = self.home().ensure(Dir::State).map_err(|e| DigestError::Write {
            path: self.digest_state_dir(),
            reason: e.to_string(),
        })?;
        let deps = DigestDeps {
            kb: &kb,
            provider: provider.as_ref(),
            provider_is_cloud,
            arxiv: &arxiv,
            pdf: pdf.as_ref(),
            add_settings: &add_settings,
            settings,
            prompt,
            state_dir,
            progress,
        };
        match crate::digest::run(&deps, opts, cancel.clone()) {
            Ok(r) => Ok(r),
            Err(_) if cancel.is_cancelled() => Err(DigestError::Cancelled.into()),
            Err(e) => Err(e.into()),
        }
    }

    /// `kb add-digest`: add the top-tier papers of digest files as summary
    /// entries (no LLM call).
    pub fn add_digest(&self, files: &[PathBuf], actor: &crate::kb::Actor) -> Result<ImportReport, DigestOpError> {
        let kb = self.kb()?;
        Ok(import_files(&kb, files, actor)?)
    }

    /// The recent digests' papers (newest run first) and the user's votes.
    pub fn digest_feedback_view(&self) -> Result<(Vec<Run>, BTreeMap<String, Feedback>), DigestOpError> {
        let dir = self.digest_state_dir();
        let runs = feedback::runs(&dir).map_err(DigestOpError::Feedback)?;
        let votes = feedback::votes(&dir).map_err(DigestOpError::Feedback)?;
        Ok((runs, votes))
    }

    /// Record the user's vote on a paper of a recent digest (`None` takes
    /// a vote back). `id`: a digest key, an arXiv id or link, or a DOI.
    pub fn digest_vote(&self, id: &str, vote: Option<Vote>) -> Result<RunEntry, DigestOpError> {
        let dir = self.digest_state_dir();
        let entry = feedback::find_entry(&dir, id)
            .map_err(DigestOpError::Feedback)?
            .ok_or_else(|| DigestOpError::UnknownPaper(id.to_string()))?;
        match vote {
            Some(v) => feedback::record_vote(&dir, &entry, v, time::OffsetDateTime::now_utc()),
            None => feedback::clear_vote(&dir, &entry.key).map(|_| ()),
        }
        .map_err(DigestOpError::Feedback)?;
        tracing::info!(paper = %entry.key, vote = vote.map_or("cleared", Vote::as_str), "digest vote");
        Ok(entry)
    }

    /// Add a paper of a recent digest to the library (its full text, through
    /// the ordinary add flow), then count the add as the strongest vote.
    pub fn digest_add(
        &self,
        id: &str,
        actor: &crate::kb::Actor,
        confirm: &dyn Fn(&str) -> bool,
        cancel: &Cancel,
    ) -> Result<(RunEntry, crate::ingest::paper::AddReport), DigestOpError> {
        let dir = self.digest_state_dir();
        let entry = feedback::find_entry(&dir, id)
            .map_err(DigestOpError::Feedback)?
            .ok_or_else(|| DigestOpError::UnknownPaper(id.to_string()))?;
        let input = crate::ingest::paper::Input::parse(&entry.link).map_err(super::ingest::WriteError::Add)?;
        let req = crate::ingest::paper::AddRequest {
            input,
            mode: crate::ingest::paper::Mode::FullText,
            explicit: Default::default(),
            figures: false,
        };
        let report = self.add_paper(&req, actor, confirm, &|_| {}, cancel)?;
        feedback::record_vote(&dir, &entry, Vote::Added, time::OffsetDateTime::now_utc())
            .map_err(DigestOpError::Feedback)?;
        Ok((entry, report))
    }
}
