//! Indexing after a digest is written: the digest file itself as
//! `doc_type = digest` (so every paper in it, Skim included, is
//! searchable), then per tier — ≥ 9 the full text through the paper path
//! (`ingest::paper::add_document`, the isolated PDF worker), with a
//! summary entry from the scoring run's own text when that cannot be done
//! (bioRxiv, a failed download or conversion) and a visible warning; 8 a
//! summary entry from the scoring text, no extra LLM call; < 8 nothing.
//! One paper failing never fails the run.

use crate::doc_type::DocType;
use std::path::Path;

use serde_json::json;

use super::render::Tiers;
use super::score::Scored;
use super::{DigestDeps, DigestError, Origin};
use crate::cancel::Cancel;
use crate::ingest::metadata::PdfMetadata;
use crate::ingest::paper::{add_document, AddContext, AddError, AddRequest, Input, Mode};
use crate::kb::ops::{Paper, PaperAdd};
use crate::kb::stage::ReplaceBy;
use crate::kb::Kb;
use crate::store::Metadata;

/// Per-paper indexing outcomes (all printed).
#[derive(Debug, Clone, Default)]
pub struct IndexOutcome {
    pub full_text: usize,
    pub summary_fallback: usize,
    pub summaries: usize,
    /// Already in the knowledge base, or failed (with a warning).
    pub skipped: usize,
    pub warnings: Vec<String>,
}

/// Index the digest Markdown as one `digest` document (public, `file://`
/// source, "Paper Digest — DATE"). Re-indexing the same file replaces it.
pub fn index_digest_file(kb: &Kb, path: &Path, date: &str, markdown: &str, cancel: &Cancel) -> Result<(), DigestError> {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let source = format!("file://{}", abs.display());
    let title = format!("Paper Digest — {date}");
    let mut caller = Metadata::new();
    caller.insert("title".into(), json!(title));
    caller.insert("storage_mode".into(), json!("full_text"));
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!(DocType::Digest.as_str()));
    own.insert("visibility".into(), json!("public"));
    own.insert("source".into(), json!(source));
    own.insert("file_path".into(), json!(abs.display().to_string()));
    let docs = crate::kb::stage::build_text_documents(markdown, &caller, &own, &title, kb.chunker_config())?;
    let prepared = kb.prepare(docs, cancel).map_err(|e| match e {
        crate::kb::KbError::Cancelled => DigestError::Cancelled,
        other => other.into(),
    })?;
    kb.commit(prepared, Some(&ReplaceBy::Source(source)), &digest_job())?;
    Ok(())
}

fn summary_text(s: &Scored) -> String {
    let mut t = String::new();
    if !s.summary.is_empty() {
        t.push_str(&s.summary);
    }
    if !s.why.is_empty() {
        t.push_str(&format!("\n\nWhy it matters: {}", s.why));
    }
    if !s.candidate.abstract_text.is_empty() {
        t.push_str(&format!("\n\nAbstract: {}", s.candidate.abstract_text));
    }
    t
}

fn paper_of(s: &Scored) -> Paper {
    Paper {
        title: s.candidate.title.clone(),
        authors: s.candidate.authors_line(),
        source: s.candidate.link.clone(),
        doi: match &s.candidate.origin {
            Origin::Biorxiv { doi, .. } => Some(doi.clone()),
            Origin::Arxiv { .. } => None,
        },
        score: Some(s.score),
        track: Some(s.track.clone()).filter(|t| !t.is_empty()),
    }
}

/// A summary entry from the scoring text; `Ok(false)` when it was already
/// present.
pub fn add_summary(kb: &Kb, s: &Scored) -> Result<bool, crate::kb::KbError> {
    Ok(matches!(
        kb.add_paper(&paper_of(s), &summary_text(s), &digest_job())?,
        PaperAdd::Added(_)
    ))
}

fn full_text(deps: &DigestDeps<'_>, s: &Scored, cancel: &Cancel) -> Result<bool, String> {
    let Origin::Arxiv { id, .. } = &s.candidate.origin else {
        return Err("bioRxiv does not allow fetching its PDFs".into());
    };
    let id = crate::ingest::arxiv::parse_arxiv_url(id).map_err(|e| e.to_string())?;
    let cx = AddContext {
        kb: deps.kb,
        pdf: deps.pdf,
        provider: Some(deps.provider),
        arxiv: deps.arxiv,
        remote: None,
        settings: deps.add_settings,
        // A duplicate is skipped, never replaced, by a background run.
        confirm: &|_| false,
        progress: &|_| {},
        cancel,
        actor: &digest_job(),
    };
    let req = AddRequest {
        input: Input::Arxiv(id),
        mode: Mode::FullText,
        explicit: PdfMetadata {
            title: Some(s.candidate.title.clone()),
            authors: Some(s.candidate.authors_line()),
            doi: None,
        },
        figures: false,
    };
    let report = add_document(&cx, &req).map_err(|e| match e {
        AddError::Cancelled => "stopped".to_string(),
        other => other.to_string(),
    })?;
    if report.skipped.is_some() {
        return Ok(false);
    }
    // The score and track travel with the body chunks, as for summaries.
    if let Ok(ids) = deps.kb.ids_where("source", &report.source) {
        let mut fields = Metadata::new();
        fields.insert("score".into(), json!(s.score));
        if !s.track.is_empty() {
            fields.insert("track".into(), json!(s.track));
        }
        if let Err(e) = deps.kb.update_chunks_metadata(&ids, &fields, &digest_job()) {
            tracing::warn!(error = %e, source = %report.source, "could not record the digest score on the paper");
        }
    }
    Ok(true)
}

/// Index the tiers (see the module docs).
pub fn index_tiers(deps: &DigestDeps<'_>, tiers: &Tiers, cancel: &Cancel) -> IndexOutcome {
    let mut out = IndexOutcome::default();
    for s in &tiers.must_read {
        if cancel.is_cancelled() {
            out.warnings
                .push("stopped before every Must-Read paper was indexed".into());
            return out;
        }
        (deps.progress)(&format!("adding the full text of {}…", s.candidate.title));
        match full_text(deps, s, cancel) {
            Ok(true) => out.full_text += 1,
            Ok(false) => out.skipped += 1,
            Err(why) => {
                out.warnings.push(format!(
                    "{}: full text unavailable ({why}); added a summary from the scoring run instead",
                    s.candidate.title
                ));
                match add_summary(deps.kb, s) {
                    Ok(true) => out.summary_fallback += 1,
                    Ok(false) => out.skipped += 1,
                    Err(e) => {
                        out.skipped += 1;
                        out.warnings.push(format!("{}: not indexed: {e}", s.candidate.title));
                    }
                }
            }
        }
    }
    for s in &tiers.worth_reading {
        match add_summary(deps.kb, s) {
            Ok(true) => out.summaries += 1,
            Ok(false) => out.skipped += 1,
            Err(e) => {
                out.skipped += 1;
                out.warnings.push(format!("{}: not indexed: {e}", s.candidate.title));
            }
        }
    }
    out
}

/// Who the digest's writes are by: the digest job, whether the schedule or
/// `jarvis run-digest` started it.
fn digest_job() -> crate::kb::Actor {
    crate::kb::Actor::job("digest")
}
