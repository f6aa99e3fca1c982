//! Recognising the same paper arriving by another route: a DOI, then its
//! PDF's web address; an arXiv id, then the journal DOI; a local copy of a
//! PDF already added from the web.
//!
//! Owns: what makes two papers the same — the DOI (case-insensitive), the
//! arXiv id without its version (stored as `arxiv_id`, or the arXiv
//! abstract URL that is an arXiv paper's source) and the PDF's content
//! hash — and the scan that finds a stored paper sharing any of them under
//! another source.
//! Must not: decide what happens to a duplicate (the add flow asks).

use crate::doc_type::DocType;
use crate::kb::{Kb, KbError};

/// What identifies a paper beyond its source.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    pub doi: Option<String>,
    /// Without version.
    pub arxiv_id: Option<String>,
    /// Of the PDF, when there is one.
    pub pdf_hash: Option<String>,
}

/// A stored paper that is the same as the one being added.
#[derive(Debug, Clone)]
pub struct SamePaper {
    pub source: String,
    pub title: String,
    /// "the same DOI 10.…", "the same arXiv id …", "the same PDF".
    pub why: String,
}

/// The first stored paper under a source other than `own_source` sharing
/// the DOI, the arXiv id or the PDF bytes.
pub fn find_same_paper(kb: &Kb, own_source: &str, id: &Identity) -> Result<Option<SamePaper>, KbError> {
    let doi = id.doi.as_deref().map(str::to_lowercase).filter(|d| !d.is_empty());
    let arxiv_abs = id.arxiv_id.as_deref().map(|a| format!("https://arxiv.org/abs/{a}"));
    if doi.is_none() && id.arxiv_id.is_none() && id.pdf_hash.is_none() {
        return Ok(None);
    }
    for rec in kb.store().iter_chunk_meta() {
        let rec = rec.map_err(KbError::from)?;
        if !rec.is(DocType::Paper) {
            continue;
        }
        let source = rec.meta_str("source").unwrap_or_default();
        if source == own_source || source.is_empty() {
            continue;
        }
        let why = if let Some(d) = doi
            .as_deref()
            .filter(|d| rec.meta_str("doi").is_some_and(|s| s.eq_ignore_ascii_case(d)))
        {
            format!("the same DOI {d}")
        } else if let Some(a) = id
            .arxiv_id
            .as_deref()
            .filter(|a| rec.meta_str("arxiv_id") == Some(*a) || arxiv_abs.as_deref() == Some(source))
        {
            format!("the same arXiv id {a}")
        } else if id.pdf_hash.is_some() && rec.meta_str("content_hash") == id.pdf_hash.as_deref() {
            "the same PDF".to_string()
        } else {
            continue;
        };
        return Ok(Some(SamePaper {
            source: source.to_string(),
            title: rec.meta_str("title").unwrap_or_default().to_string(),
            why,
        }));
    }
    Ok(None)
}
