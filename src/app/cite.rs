//! Citations every edge shares: the library's keyed papers (searched as
//! the editor's completion types), their BibTeX (`jarvis kb bibtex`), and
//! draft builds handed the bibliography of the keys a draft cites.
//!
//! Owns: composing `kb` (which knows the papers) with `drafts` (which
//! knows the files): a build gets a plain closure from keys to BibTeX text,
//! so drafts never reads the knowledge base. Must not: format BibTeX (that
//! is `kb::bibtex`) or decide where a build writes (that is `drafts`).

use crate::drafts::compile::{self, BuildResult};
use crate::drafts::DraftsError;
use crate::kb::cite::CiteEntry;

use super::ops::OpError;
use super::{App, AppError};

/// How many suggestions the completion shows at most.
pub const MAX_SUGGESTIONS: usize = 50;

/// Why a draft build could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DraftBuildError {
    #[error(transparent)]
    App(#[from] AppError),
    #[error(transparent)]
    Drafts(#[from] DraftsError),
}

impl DraftBuildError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            DraftBuildError::App(e) => e.kind(),
            DraftBuildError::Drafts(e) => e.kind(),
        }
    }
}

impl App {
    /// Every keyed paper whose key, title, authors, year or venue holds
    /// every word of `query` (all of them for an empty query), by key.
    pub fn cite_entries(&self, query: &str) -> Result<Vec<CiteEntry>, OpError> {
        let mut all = self.kb()?.cite_entries()?;
        all.retain(|e| e.matches(query));
        Ok(all)
    }

    /// What the editor offers after `\cite{` or `[@`: the matches of
    /// [`App::cite_entries`], those whose key starts with the query first,
    /// then the most recently added, at most `limit`.
    pub fn cite_suggestions(&self, query: &str, limit: usize) -> Result<Vec<CiteEntry>, OpError> {
        let mut found = self.cite_entries(query)?;
        let q = crate::kb::cite::fold(query.trim());
        found.sort_by(|a, b| {
            let prefix = |e: &CiteEntry| !(q.is_empty() || e.key.to_lowercase().starts_with(&q));
            prefix(a)
                .cmp(&prefix(b))
                .then_with(|| b.date_added.cmp(&a.date_added))
                .then_with(|| a.key.cmp(&b.key))
        });
        found.truncate(limit.clamp(1, MAX_SUGGESTIONS));
        Ok(found)
    }

    /// BibTeX for the keyed papers matching `query`, and which they are.
    pub fn bibtex(&self, query: &str) -> Result<(String, Vec<CiteEntry>), OpError> {
        let entries = self.cite_entries(query)?;
        Ok((crate::kb::bibtex::render(&entries), entries))
    }

    /// The bibliography a build asks for: BibTeX of those of `keys` that
    /// name library papers (in the order given), empty when none does —
    /// or when the knowledge base cannot be opened, which costs the
    /// bibliography but never the build.
    fn bibliography_for(&self, keys: &[String]) -> String {
        let entries = match self.kb().map_err(OpError::from).and_then(|kb| Ok(kb.cite_entries()?)) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "building without the library's bibliography");
                return String::new();
            }
        };
        let cited: Vec<CiteEntry> = keys
            .iter()
            .filter_map(|k| entries.iter().find(|e| &e.key == k).cloned())
            .collect();
        crate::kb::bibtex::render(&cited)
    }

    /// Compile a `.tex` draft file with latexmk; the keys it cites are
    /// written beside it as BibTeX first (see `drafts::compile`).
    pub fn compile_draft(
        &self,
        draft_id: &str,
        filename: &str,
        stop: Option<&(dyn Fn() -> bool + Sync)>,
    ) -> Result<BuildResult, DraftBuildError> {
        let d = self.drafts()?;
        let bib = |keys: &[String]| self.bibliography_for(keys);
        Ok(compile::compile_latex(
            &d.workspace,
            draft_id,
            filename,
            stop,
            Some(&bib),
        )?)
    }

    /// Export a `.md` draft file to PDF with pandoc, citations resolved
    /// from the library (`[@key]`) the same way.
    pub fn export_draft(
        &self,
        draft_id: &str,
        filename: &str,
        stop: Option<&(dyn Fn() -> bool + Sync)>,
    ) -> Result<BuildResult, DraftBuildError> {
        let d = self.drafts()?;
        let bib = |keys: &[String]| self.bibliography_for(keys);
        Ok(compile::export_pdf(&d.workspace, draft_id, filename, stop, Some(&bib))?)
    }
}
