//! `kb add-digest`: read digest Markdown files back and add their Must-Read
//! and Worth Reading papers as summary entries (the digest's own summary
//! and why; no LLM call). Duplicates by source or title are skipped.

use std::path::{Path, PathBuf};

use super::render::unescape;
use crate::kb::ops::{Paper, PaperAdd};
use crate::kb::Kb;

/// One paper entry read from a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestEntry {
    pub title: String,
    pub link: String,
    pub authors: String,
    pub score: Option<i64>,
    pub track: Option<String>,
    pub why: String,
    pub summary: String,
}

/// Split `[text](link)` (escaped text) into its parts.
fn split_link(s: &str) -> Option<(String, String)> {
    let s = s.strip_prefix('[')?;
    // The title's own brackets are escaped: find the first unescaped `](`.
    let bytes = s.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == b']' && bytes[i + 1] == b'(' {
            let title = unescape(&s[..i]);
            let rest = &s[i + 2..];
            let link = rest.strip_suffix(')')?.to_string();
            return Some((title, link));
        }
        i += 1;
    }
    None
}

/// The `###` entries of one digest (Must-Read and Worth Reading).
pub fn parse_digest(text: &str) -> Vec<DigestEntry> {
    let mut out: Vec<DigestEntry> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            let (title, link) = split_link(h.trim()).unwrap_or_else(|| (unescape(h.trim()), String::new()));
            out.push(DigestEntry {
                title,
                link,
                authors: String::new(),
                score: None,
                track: None,
                why: String::new(),
                summary: String::new(),
            });
            continue;
        }
        let Some(e) = out.last_mut() else { continue };
        if let Some(rest) = line.strip_prefix("**Authors:** ") {
            for (i, part) in rest.split(" · ").enumerate() {
                if i == 0 {
                    e.authors = unescape(part.trim());
                } else if let Some(s) = part.strip_prefix("**Score:** ") {
                    e.score = s.trim().trim_end_matches("/10").parse().ok();
                } else if let Some(t) = part.strip_prefix("**Track:** ") {
                    let t = unescape(t.trim());
                    e.track = (t != "—" && !t.is_empty()).then_some(t);
                }
            }
        } else if let Some(w) = line.strip_prefix("**Why:** ") {
            e.why = unescape(w.trim());
        } else if let Some(s) = line.strip_prefix("**Summary:** ") {
            e.summary = unescape(s.trim());
        }
    }
    out
}

/// What an import did; its JSON is `kb add-digest --json` (pinned in
/// `cli/kb/tests.rs`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    pub files: usize,
    pub added: Vec<String>,
    /// Title and why.
    pub skipped: Vec<(String, String)>,
}

/// Why a digest could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    /// A file holds no digest entries.
    #[error("{0} holds no digest entries (`### [Title](link)` headings) — is it a Jarvis digest file?")]
    NotADigest(PathBuf),
    /// The knowledge base failed; papers before this one were added.
    #[error(transparent)]
    Kb(#[from] crate::kb::KbError),
}

impl ImportError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            ImportError::Read { .. } | ImportError::NotADigest(_) => ErrorKind::User,
            ImportError::Kb(e) => e.kind(),
        }
    }
}

/// Import every file; all are read and parsed before anything is added, so
/// a wrong path adds nothing.
pub fn import_files(kb: &Kb, files: &[PathBuf], actor: &crate::kb::Actor) -> Result<ImportReport, ImportError> {
    let mut parsed: Vec<(PathBuf, Vec<DigestEntry>)> = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| ImportError::Read {
            path: f.clone(),
            reason: e.to_string(),
        })?;
        let entries = parse_digest(&text);
        if entries.is_empty() {
            return Err(ImportError::NotADigest(f.clone()));
        }
        parsed.push((f.clone(), entries));
    }
    let mut report = ImportReport {
        files: parsed.len(),
        ..ImportReport::default()
    };
    for (_, entries) in parsed {
        for e in entries {
            if !(e.link.starts_with("https://arxiv.org/abs/") || e.link.starts_with("https://doi.org/")) {
                report
                    .skipped
                    .push((e.title, "no arXiv or DOI link in the digest entry".into()));
                continue;
            }
            let mut body = e.summary.clone();
            if !e.why.is_empty() {
                body.push_str(&format!("\n\nWhy it matters: {}", e.why));
            }
            let paper = Paper {
                title: e.title.clone(),
                authors: e.authors.clone(),
                source: e.link.clone(),
                doi: e.link.strip_prefix("https://doi.org/").map(String::from),
                score: e.score,
                track: e.track.clone(),
            };
            match kb.add_paper(&paper, &body, actor)? {
                PaperAdd::Added(_) => report.added.push(e.title),
                PaperAdd::Skipped { reason } => report.skipped.push((e.title, reason)),
            }
        }
    }
    Ok(report)
}

/// Whether `p` looks like a digest file name (for messages).
pub fn is_digest_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("digest-") && n.ends_with(".md"))
}
