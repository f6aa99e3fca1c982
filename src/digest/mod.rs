//! The weekly paper digest: fetch new papers in the user's fields (arXiv,
//! bioRxiv), drop what was seen before or is already kept, rank the rest by
//! similarity to the user's own library and send only the best
//! `max_candidates` to the LLM for scoring, write a tiered Markdown digest
//! and index what matters.
//!
//! Owns: the pipeline ([`run`], the one entry point the `run-digest` command
//! and the scheduled job share), the source fetchers ([`arxiv`] listing,
//! [`biorxiv`]), the seen-set and last-success stamp ([`state`]), the
//! library-similarity gate ([`gate`]), batched scoring with tolerant reply
//! parsing ([`score`]), the digest file ([`render`]), tiered indexing
//! ([`index`]), digest import for `kb add-digest` ([`import`]), when a
//! scheduled slot was missed ([`schedule`]), and what the user's votes on
//! earlier digests teach the gate and the prompt ([`feedback`]).
//! Must not: read config or build providers (it takes plain settings and
//! dependencies from `app`), print (progress goes to a callback), or call
//! the LLM for anything but scoring — summaries of the 8–9 tier come from
//! the scoring reply, never from an extra call.

pub mod arxiv;
pub mod biorxiv;
pub mod feedback;
pub mod gate;
pub mod import;
pub mod index;
pub mod render;
pub mod schedule;
pub mod score;
pub mod state;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Mutex;

use time::OffsetDateTime;

use crate::cancel::Cancel;
use crate::error_kind::ErrorKind;
use crate::ingest::arxiv::ArxivClient;
use crate::ingest::paper::{AddSettings, PdfTools};
use crate::kb::Kb;
use crate::llm::ChatProvider;

/// Where a candidate came from, with what the later steps need.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    Arxiv {
        /// Canonical id, no version (`2401.01234`, `hep-ex/0307015`).
        id: String,
        primary_category: Option<String>,
        /// The PDF link from the feed (an href containing `/pdf/`).
        pdf_url: Option<String>,
    },
    Biorxiv {
        /// Unversioned DOI.
        doi: String,
        category: String,
    },
}

/// One new paper.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Candidate {
    /// Dedup key: `arxiv:<id>` or `doi:<doi>` (lowercase).
    pub key: String,
    /// The link stored as the paper's `source` (abstract page or doi.org).
    pub link: String,
    pub title: String,
    pub authors: Vec<String>,
    pub abstract_text: String,
    /// `YYYY-MM-DD` (arXiv: first version; bioRxiv: posting date).
    pub date: String,
    pub origin: Origin,
    /// Which configured feed found it (`arXiv cs.LG`, `bioRxiv: proteomics`).
    pub via: String,
}

impl Candidate {
    pub fn authors_line(&self) -> String {
        self.authors.join(", ")
    }
}

/// One configured feed and what it gave.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceOutcome {
    /// `arXiv cs.LG`, `bioRxiv bioinformatics`, `bioRxiv keywords`.
    pub name: String,
    pub fetched: usize,
    pub status: SourceStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "snake_case")]
pub enum SourceStatus {
    Ok,
    /// Answered, but nothing was announced in the window (weekends,
    /// holidays): not a fault.
    Quiet(String),
    /// Failed after its retries; the run went on without it.
    Failed(String),
}

/// What the digest needs from config (`[digest]`), resolved by `app`.
#[derive(Debug, Clone)]
pub struct DigestSettings {
    pub enabled: bool,
    pub output_dir: PathBuf,
    /// Papers listed in the top two tiers at most.
    pub max_results: usize,
    pub arxiv_categories: Vec<(String, usize)>,
    pub biorxiv_categories: Vec<(String, usize)>,
    pub biorxiv_keywords: Vec<(String, usize)>,
    /// Look-back of a first run (later runs start at the last success).
    pub first_run_days: u32,
    pub max_candidates: usize,
    pub batch_size: usize,
    /// The scoring model's context window in tokens.
    pub context_tokens: usize,
    pub biorxiv: biorxiv::BiorxivSettings,
    /// Where the web app listens (`http://127.0.0.1:PORT`): each paper in
    /// the digest file links to its card in the Digest view there, to rate
    /// it or add it. None leaves the links out.
    pub web_url: Option<String>,
}

impl DigestSettings {
    /// Nothing to fetch from: what the user should set.
    pub fn nothing_configured(&self) -> bool {
        self.arxiv_categories.is_empty() && self.biorxiv_categories.is_empty() && self.biorxiv_keywords.is_empty()
    }
}

/// Everything a run talks to; `app` composes it.
pub struct DigestDeps<'a> {
    pub kb: &'a Kb,
    pub provider: &'a dyn ChatProvider,
    /// The provider sends text off this machine: the gate then looks at
    /// public documents only (nothing private shapes what a cloud sees).
    pub provider_is_cloud: bool,
    pub arxiv: &'a ArxivClient,
    pub pdf: &'a dyn PdfTools,
    pub add_settings: &'a AddSettings,
    pub settings: DigestSettings,
    /// The scoring prompt from the prompt store.
    pub prompt: String,
    /// `$JARVIS_HOME/state`.
    pub state_dir: PathBuf,
    /// One human line per step (the CLI prints them; the job logs them).
    pub progress: &'a dyn Fn(&str),
}

/// How to run.
#[derive(Debug, Clone)]
pub struct DigestOptions {
    /// Fetch and score, but write, index and remember nothing.
    pub dry_run: bool,
    /// Run even though `[digest] enabled = false` (typing the command is
    /// the human request).
    pub force: bool,
    /// The run's clock (tests pin it).
    pub now: OffsetDateTime,
}

impl Default for DigestOptions {
    fn default() -> Self {
        DigestOptions {
            dry_run: false,
            force: false,
            now: OffsetDateTime::now_utc(),
        }
    }
}

/// Token use of the scoring requests, as the service reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TokenUse {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Money, when the service reports it (OpenRouter).
    pub cost_usd: Option<f64>,
}

/// What a run did; every count is printed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DigestReport {
    pub window_start: String,
    pub window_end: String,
    pub sources: Vec<SourceOutcome>,
    pub fetched: usize,
    pub duplicates: usize,
    pub already_seen: usize,
    pub already_in_kb: usize,
    pub candidates: usize,
    /// Ranked below `max_candidates` by the library gate, never sent.
    pub gated_out: usize,
    /// The gate had no library to compare with (kept the newest instead).
    pub gate_without_library: bool,
    pub scored: usize,
    /// Papers without a score, each with why.
    pub skipped: Vec<(String, String)>,
    /// Batches whose reply could not be parsed even after one retry.
    pub failed_batches: Vec<String>,
    pub usage: TokenUse,
    pub must_read: usize,
    pub worth_reading: usize,
    pub skim: usize,
    pub digest_file: Option<PathBuf>,
    pub indexed_full_text: usize,
    pub indexed_summary_fallback: usize,
    pub indexed_summaries: usize,
    pub index_skipped: usize,
    pub warnings: Vec<String>,
    /// Nothing new was announced in the window (not a fault).
    pub quiet: bool,
    pub dry_run: bool,
    /// `provider:model` that scored.
    pub model: String,
}

/// Why a run did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    /// `[digest] enabled = false` and no `--force`.
    #[error("the weekly digest is off — turn it on with `jarvis config set digest.enabled true` (or run `jarvis run-digest --force` once)")]
    Disabled,
    /// No arXiv categories, bioRxiv categories or keywords configured.
    #[error("the digest has nothing to fetch — set `digest.arxiv_categories` (e.g. `jarvis config set digest.arxiv_categories '[[\"cs.LG\", 200]]'`) and/or `digest.biorxiv_categories` / `digest.biorxiv_keywords`, then describe your research in the digest scoring prompt ($JARVIS_HOME/prompts/digest_score.md)")]
    NothingConfigured,
    /// Another digest run in this process holds the run lock.
    #[error("a digest run is already in progress; this one was not started")]
    AlreadyRunning,
    /// Every configured source failed.
    #[error("no source could be fetched: {0} — check your connection and try again later")]
    AllSourcesFailed(String),
    /// Every scoring batch failed.
    #[error("the model could not score any paper: {0} — check `chat.provider` and that the model is reachable")]
    ScoringFailed(String),
    /// The digest file or the state could not be written.
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    /// The knowledge base failed.
    #[error(transparent)]
    Kb(#[from] crate::kb::KbError),
    /// The caller stopped the run; nothing was written.
    #[error("stopped; the digest was not written")]
    Cancelled,
}

impl DigestError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            DigestError::Disabled | DigestError::NothingConfigured => ErrorKind::User,
            DigestError::AlreadyRunning => ErrorKind::Conflict,
            DigestError::AllSourcesFailed(_) | DigestError::ScoringFailed(_) => ErrorKind::Unavailable,
            DigestError::Write { .. } => ErrorKind::Unavailable,
            DigestError::Kb(e) => e.kind(),
            DigestError::Cancelled => ErrorKind::Cancelled,
        }
    }
}

/// The state directories with a run in progress in this process: the
/// weekly slot and the catch-up check could otherwise overlap.
static RUNNING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Holds a state directory's run slot until dropped.
struct RunSlot(PathBuf);

impl RunSlot {
    fn take(dir: &std::path::Path) -> Option<RunSlot> {
        let mut running = crate::lock::lock(&RUNNING);
        if running.iter().any(|d| d == dir) {
            return None;
        }
        running.push(dir.to_path_buf());
        Some(RunSlot(dir.to_path_buf()))
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        crate::lock::lock(&RUNNING).retain(|d| d != &self.0);
    }
}

fn check(cancel: &Cancel) -> Result<(), DigestError> {
    if cancel.is_cancelled() {
        Err(DigestError::Cancelled)
    } else {
        Ok(())
    }
}

/// Run the digest once. Blocking (network, embedding, LLM): call it off the
/// async runtime. A failing source, batch or download is recorded in the
/// report and the run goes on; only a run that could do nothing useful
/// fails.
pub fn run(deps: &DigestDeps<'_>, opts: DigestOptions, cancel: Cancel) -> Result<DigestReport, DigestError> {
    refuse_unless_wanted(deps, &opts)?;
    let Some(_slot) = RunSlot::take(&deps.state_dir) else {
        return Err(DigestError::AlreadyRunning);
    };
    let mut report = DigestReport {
        dry_run: opts.dry_run,
        model: format!("{}:{}", deps.provider.provider_name(), deps.provider.model()),
        ..DigestReport::default()
    };
    let seen = state::SeenSet::load(&deps.state_dir).map_err(|reason| seen_write_error(deps, reason))?;
    let window = open_window(deps, &seen, &opts, &mut report);

    let fetched = fetch_sources(deps, window, &cancel, &mut report)?;
    let fresh = drop_known(deps, fetched, &seen, &mut report)?;
    if fresh.is_empty() {
        return finish_quiet(deps, &opts, seen, report);
    }
    let gated = gate_by_library(deps, fresh, &cancel, &mut report)?;
    let scoring = score_papers(deps, &gated, &cancel, &mut report)?;

    let tiers = split_tiers(deps, scoring.scored, &mut report);
    let date = state::day(opts.now);
    let markdown = render_digest(
        &date,
        opts.now,
        &tiers,
        &scoring.skipped,
        &report,
        &deps.settings.web_url,
    );
    if opts.dry_run {
        say_nothing_written(deps, &report);
        return Ok(report);
    }
    let path = write_digest_file(deps, &date, &markdown, &mut report)?;
    if let Err(e) = feedback::record_run(&deps.state_dir, &date, &path, &tiers) {
        tracing::warn!(error = %e, "the digest's papers were not remembered for the Digest view");
        report
            .warnings
            .push(format!("the Digest view will not list this run: {e}"));
    }
    index::index_digest_file(deps.kb, &path, &date, &markdown, &cancel)?;
    index_papers(deps, &tiers, &cancel, &mut report);
    remember(deps, opts.now, seen, &tiers, &gated.dropped)?;
    Ok(report)
}

/// A switched-off digest runs only when forced; one with no feeds cannot
/// run at all.
fn refuse_unless_wanted(deps: &DigestDeps<'_>, opts: &DigestOptions) -> Result<(), DigestError> {
    if !deps.settings.enabled && !opts.force {
        return Err(DigestError::Disabled);
    }
    if deps.settings.nothing_configured() {
        return Err(DigestError::NothingConfigured);
    }
    Ok(())
}

fn seen_write_error(deps: &DigestDeps<'_>, reason: String) -> DigestError {
    DigestError::Write {
        path: state::SeenSet::path(&deps.state_dir),
        reason,
    }
}

/// The days to look at (from the last success, so a missed run loses
/// nothing), said and recorded.
fn open_window(
    deps: &DigestDeps<'_>,
    seen: &state::SeenSet,
    opts: &DigestOptions,
    report: &mut DigestReport,
) -> (OffsetDateTime, OffsetDateTime) {
    let window = state::window(seen.last_success(), opts.now, deps.settings.first_run_days);
    report.window_start = state::day(window.0);
    report.window_end = state::day(window.1);
    (deps.progress)(&format!(
        "looking for papers from {} to {}",
        report.window_start, report.window_end
    ));
    window
}

/// Every configured feed in the window. A feed that fails is recorded
/// and the run goes on without it; only all of them failing stops it.
fn fetch_sources(
    deps: &DigestDeps<'_>,
    window: (OffsetDateTime, OffsetDateTime),
    cancel: &Cancel,
    report: &mut DigestReport,
) -> Result<Vec<Candidate>, DigestError> {
    let say = deps.progress;
    let mut all: Vec<Candidate> = Vec::new();
    for (cat, cap) in &deps.settings.arxiv_categories {
        check(cancel)?;
        say(&format!("fetching arXiv {cat}…"));
        let (papers, outcome) = arxiv::fetch_category(deps.arxiv, cat, *cap, window.0, cancel);
        all.extend(papers);
        report.sources.push(outcome);
    }
    if !deps.settings.biorxiv_categories.is_empty() || !deps.settings.biorxiv_keywords.is_empty() {
        check(cancel)?;
        say("fetching bioRxiv…");
        let (papers, outcomes) = biorxiv::fetch(
            &deps.settings.biorxiv,
            &deps.settings.biorxiv_categories,
            &deps.settings.biorxiv_keywords,
            window,
            cancel,
        );
        all.extend(papers);
        report.sources.extend(outcomes);
    }
    check(cancel)?;
    for s in &report.sources {
        match &s.status {
            SourceStatus::Ok => say(&format!("{}: {} papers in the window", s.name, s.fetched)),
            SourceStatus::Quiet(why) => say(&format!("{}: quiet — {why}", s.name)),
            SourceStatus::Failed(why) => say(&format!("warning: {} failed: {why}", s.name)),
        }
    }
    if report
        .sources
        .iter()
        .all(|s| matches!(s.status, SourceStatus::Failed(_)))
    {
        let why = report
            .sources
            .iter()
            .map(|s| match &s.status {
                SourceStatus::Failed(w) => format!("{}: {w}", s.name),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(DigestError::AllSourcesFailed(why));
    }
    report.fetched = all.len();
    Ok(all)
}

/// Deduplicate across feeds, then drop what was suggested before or is
/// kept in the knowledge base already.
fn drop_known(
    deps: &DigestDeps<'_>,
    fetched: Vec<Candidate>,
    seen: &state::SeenSet,
    report: &mut DigestReport,
) -> Result<Vec<Candidate>, DigestError> {
    let (unique, dups) = state::dedup(fetched);
    report.duplicates = dups;
    let mut fresh = Vec::new();
    for c in unique {
        if seen.contains(&c) {
            report.already_seen += 1;
        } else if deps.kb.paper_exists(&c.link, &c.title)?.is_some() {
            report.already_in_kb += 1;
        } else {
            fresh.push(c);
        }
    }
    report.candidates = fresh.len();
    Ok(fresh)
}

/// Nothing new: say why (a quiet spell is not a fault) and, unless this is
/// a dry run, stamp the run a success so the next window starts here.
fn finish_quiet(
    deps: &DigestDeps<'_>,
    opts: &DigestOptions,
    mut seen: state::SeenSet,
    mut report: DigestReport,
) -> Result<DigestReport, DigestError> {
    report.quiet = true;
    let why = if report.fetched == 0 {
        "nothing new was announced in the window (arXiv announces nothing on Friday and Saturday nights or on holidays) — a quiet spell, not a fault".to_string()
    } else {
        format!(
            "all {} papers fetched were suggested before or are already in the knowledge base",
            report.fetched
        )
    };
    (deps.progress)(&format!("no new papers: {why}"));
    report.warnings.push(why);
    if !opts.dry_run {
        seen.set_last_success(opts.now);
        seen.save(opts.now).map_err(|reason| seen_write_error(deps, reason))?;
    }
    Ok(report)
}

/// The gate: only the papers closest to the user's library reach the LLM
/// (its cost and time grow with every paper sent).
fn gate_by_library(
    deps: &DigestDeps<'_>,
    fresh: Vec<Candidate>,
    cancel: &Cancel,
    report: &mut DigestReport,
) -> Result<gate::Gated, DigestError> {
    (deps.progress)(&format!(
        "ranking {} new papers by similarity to your library…",
        fresh.len()
    ));
    // Votes matter only when some papers must be set aside.
    let taste = if fresh.len() > deps.settings.max_candidates {
        taste(deps, report)?
    } else {
        feedback::Taste::default()
    };
    let gated = gate::rank(
        deps.kb,
        fresh,
        deps.settings.max_candidates,
        deps.provider_is_cloud,
        &taste,
        cancel,
    )?;
    report.gated_out = gated.dropped.len();
    report.gate_without_library = gated.no_library;
    (deps.progress)(&format!(
        "{} sent to the model, {} gated out by library similarity{}",
        gated.kept.len(),
        gated.dropped.len(),
        if gated.no_library {
            " (your library is empty, so the newest were kept)"
        } else {
            ""
        }
    ));
    Ok(gated)
}

/// The user's votes as the gate uses them (see [`gate::taste`]). A damaged
/// votes file is reported and the run goes on without it.
fn taste(deps: &DigestDeps<'_>, report: &mut DigestReport) -> Result<feedback::Taste, DigestError> {
    let votes = match feedback::votes(&deps.state_dir) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "digest votes unreadable; the gate ignores them");
            report.warnings.push(e);
            return Ok(feedback::Taste::default());
        }
    };
    let taste = gate::taste(deps.kb, &votes)?;
    if !taste.is_empty() {
        let (liked, disliked) = feedback::recent(&votes, feedback::TASTE_VOTES);
        (deps.progress)(&format!(
            "your votes on earlier digests count too ({} liked or added, {} not wanted)",
            liked.len(),
            disliked.len()
        ));
    }
    Ok(taste)
}

/// The scoring prompt with a few of the user's recent votes as examples.
fn prompt_with_examples(deps: &DigestDeps<'_>) -> String {
    match feedback::votes(&deps.state_dir) {
        Ok(v) => format!("{}{}", deps.prompt, feedback::prompt_examples(&v)),
        Err(e) => {
            tracing::warn!(error = %e, "digest votes unreadable; the prompt has no examples");
            deps.prompt.clone()
        }
    }
}

/// The model scores the kept papers in batches. A failed batch is
/// recorded and its papers stay unscored; only every batch failing stops
/// the run.
fn score_papers(
    deps: &DigestDeps<'_>,
    gated: &gate::Gated,
    cancel: &Cancel,
    report: &mut DigestReport,
) -> Result<score::Scoring, DigestError> {
    let prompt = prompt_with_examples(deps);
    let scoring = score::score_all(
        deps.provider,
        &prompt,
        &gated.kept,
        &score::BatchLimits::new(deps.settings.batch_size, deps.settings.context_tokens),
        deps.progress,
        cancel,
    )?;
    report.usage = scoring.usage;
    report.failed_batches = scoring.failed_batches.clone();
    report.skipped = scoring
        .skipped
        .iter()
        .map(|(c, why)| (c.title.clone(), why.clone()))
        .collect();
    report.scored = scoring.scored.len();
    (deps.progress)(&format!(
        "scored {} of {} ({} skipped, {} batch{} failed); {}",
        report.scored,
        gated.kept.len(),
        report.skipped.len(),
        report.failed_batches.len(),
        if report.failed_batches.len() == 1 { "" } else { "es" },
        usage_line(&report.usage)
    ));
    if scoring.scored.is_empty() && !scoring.failed_batches.is_empty() {
        return Err(DigestError::ScoringFailed(scoring.failed_batches.join("; ")));
    }
    check(cancel)?;
    Ok(scoring)
}

/// Must-Read, Worth Reading and Skim, counted in the report.
fn split_tiers(deps: &DigestDeps<'_>, scored: Vec<score::Scored>, report: &mut DigestReport) -> render::Tiers {
    let tiers = render::Tiers::split(scored, deps.settings.max_results);
    report.must_read = tiers.must_read.len();
    report.worth_reading = tiers.worth_reading.len();
    report.skim = tiers.skim.len();
    tiers
}

/// The digest's Markdown, with the run's sources, model and cost in it.
fn render_digest(
    date: &str,
    now: OffsetDateTime,
    tiers: &render::Tiers,
    skipped: &[(Candidate, String)],
    report: &DigestReport,
    web_url: &Option<String>,
) -> String {
    render::render(&render::DigestView {
        date,
        now,
        tiers,
        skipped,
        sources: &report.sources,
        model: &report.model,
        usage: &report.usage,
        gated_out: report.gated_out,
        web_url: web_url.as_deref(),
    })
}

fn say_nothing_written(deps: &DigestDeps<'_>, report: &DigestReport) {
    (deps.progress)(&format!(
        "dry run: nothing written or indexed ({} Must-Read, {} Worth Reading, {} Skim)",
        report.must_read, report.worth_reading, report.skim
    ));
}

fn write_digest_file(
    deps: &DigestDeps<'_>,
    date: &str,
    markdown: &str,
    report: &mut DigestReport,
) -> Result<PathBuf, DigestError> {
    let path = render::write_digest(&deps.settings.output_dir, date, markdown)?;
    (deps.progress)(&format!("wrote {}", path.display()));
    report.digest_file = Some(path.clone());
    Ok(path)
}

/// The tiers into the knowledge base: full text, a summary fallback, or
/// the scoring reply's summary. A paper that fails is a warning, not a
/// failed run.
fn index_papers(deps: &DigestDeps<'_>, tiers: &render::Tiers, cancel: &Cancel, report: &mut DigestReport) {
    let say = deps.progress;
    let outcome = index::index_tiers(deps, tiers, cancel);
    report.indexed_full_text = outcome.full_text;
    report.indexed_summary_fallback = outcome.summary_fallback;
    report.indexed_summaries = outcome.summaries;
    report.index_skipped = outcome.skipped;
    for w in &outcome.warnings {
        say(&format!("warning: {w}"));
    }
    report.warnings.extend(outcome.warnings);
    say(&format!(
        "indexed: {} full text, {} summary fallback, {} summaries, {} skipped",
        report.indexed_full_text, report.indexed_summary_fallback, report.indexed_summaries, report.index_skipped
    ));
}

/// Scored papers were suggested; gated-out ones were considered and
/// judged too far from the library. Neither comes back. Papers left
/// unscored (a failed batch) are not remembered: the next run's overlap
/// gives them another chance. The run is stamped a success last.
fn remember(
    deps: &DigestDeps<'_>,
    now: OffsetDateTime,
    mut seen: state::SeenSet,
    tiers: &render::Tiers,
    dropped: &[(Candidate, f32)],
) -> Result<(), DigestError> {
    for p in tiers.all() {
        seen.insert(&p.candidate, now);
    }
    for (c, _) in dropped {
        seen.insert(c, now);
    }
    seen.set_last_success(now);
    seen.save(now).map_err(|reason| seen_write_error(deps, reason))
}

/// `1234 tokens in, 567 out over 3 requests, $0.0123` (cost when known).
pub fn usage_line(u: &TokenUse) -> String {
    let mut s = format!(
        "{} tokens in, {} out over {} request{}",
        u.input_tokens,
        u.output_tokens,
        u.requests,
        if u.requests == 1 { "" } else { "s" }
    );
    if let Some(c) = u.cost_usd {
        s.push_str(&format!(", ${c:.4}"));
    }
    s
}
