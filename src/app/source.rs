//! The source viewer's reads: the one document a citation or a Library row
//! names, the passage inside it, and the file it came from — a vault note's
//! text, a local PDF's path for drawing a page.
//!
//! Owns: turning a document key and a chunk id (both from the request,
//! both only ever looked up in the store) into what the viewer shows, and
//! the containment rule for the files it reads: a note is read only from
//! inside the configured vault (after symlinks are resolved), a PDF only
//! from the path the store recorded for that document.
//! Must not: build a path from the request, render anything (the web edge
//! renders), or serve a chat session (the chat agent owns sessions; the
//! edge asks it).

use std::path::{Path, PathBuf};

use crate::kb::ops::DocumentRef;
use crate::kb::KbError;
use crate::store::ChunkRecord;

use super::ops::OpError;
use super::App;

/// The most of a note the viewer reads (a note larger than this is shown
/// cut, with the passage still marked when it lies inside).
pub const MAX_NOTE_BYTES: usize = 1_000_000;

/// What the viewer shows for one document.
#[derive(Debug, Clone)]
pub struct SourceDoc {
    pub doc: DocumentRef,
    /// The cited passage, when the request named a chunk of this document.
    pub chunk: Option<ChunkRecord>,
    /// A vault note's current text (as it is on disk now, which may differ
    /// from what was indexed).
    pub note: Option<NoteText>,
    /// A PDF the server can draw pages of: the document's recorded file
    /// exists and is a PDF.
    pub pdf: bool,
}

/// A note's text and where the passage sits in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteText {
    pub text: String,
    /// The note was longer than [`MAX_NOTE_BYTES`] and is cut.
    pub cut: bool,
    /// 0-based line of the heading the passage belongs to.
    pub heading_line: Option<usize>,
    /// 0-based first and last line of the passage, when found verbatim.
    pub passage_lines: Option<(usize, usize)>,
}

impl App {
    /// The document `key` names (a paper's source, a note's vault path, a
    /// chat's `session:<id>`), and the passage `chunk` when it is one of
    /// that document's chunks (a chunk of another document is refused, so a
    /// request cannot pair a key with someone else's passage).
    pub fn source_doc(&self, key: &str, chunk: Option<u64>) -> Result<SourceDoc, OpError> {
        let kb = self.kb()?;
        let doc = kb.find_document(key)?;
        let chunk = match chunk {
            None => None,
            Some(id) => {
                let rec = kb
                    .store()
                    .get(id)
                    .map_err(KbError::from)?
                    .filter(|r| belongs(r, &doc))
                    .ok_or_else(|| KbError::NotFound(format!("document {key:?} has no passage {id}")))?;
                Some(rec)
            }
        };
        let note = if doc.doc_type == "note" {
            self.note_file(&doc)
                .map(|path| read_note(&path, chunk.as_ref()))
                .transpose()?
        } else {
            None
        };
        let pdf = self.pdf_file(&doc).is_some();
        Ok(SourceDoc { doc, chunk, note, pdf })
    }

    /// The PDF file the document `key` was read from, for drawing a page:
    /// the path the store recorded (never one from the request), when it is
    /// absolute, names a `.pdf` and exists.
    pub fn source_pdf(&self, key: &str) -> Result<PathBuf, OpError> {
        let doc = self.kb()?.find_document(key)?;
        self.pdf_file(&doc)
            .ok_or_else(|| KbError::NotFound(format!("{key:?} has no local PDF to show")).into())
    }

    fn pdf_file(&self, doc: &DocumentRef) -> Option<PathBuf> {
        let fp = doc.file_path.as_deref().filter(|f| !f.is_empty())?;
        let path = PathBuf::from(fp);
        let is_pdf = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf"));
        (doc.doc_type != "note" && path.is_absolute() && is_pdf && path.is_file()).then_some(path)
    }

    /// A note's file inside the vault: the stored vault-relative path,
    /// joined to the vault and resolved; anything that resolves outside
    /// the vault (a `..`, a symlink out) is not read.
    fn note_file(&self, doc: &DocumentRef) -> Option<PathBuf> {
        let rel = doc.file_path.as_deref().filter(|f| !f.is_empty())?;
        let vault = self.config().path("vault.path")?.canonicalize().ok()?;
        let path = vault.join(rel).canonicalize().ok()?;
        (path.starts_with(&vault) && path.is_file()).then_some(path)
    }
}

fn belongs(rec: &ChunkRecord, doc: &DocumentRef) -> bool {
    let m = |k: &str| rec.meta_str(k).unwrap_or("");
    match doc.by {
        "file_path" => m("file_path") == doc.key,
        _ => m("source") == doc.key,
    }
}

fn read_note(path: &Path, chunk: Option<&ChunkRecord>) -> Result<NoteText, OpError> {
    let bytes = std::fs::read(path).map_err(|e| {
        KbError::NotFound(format!(
            "the note could not be read ({e}) — it may have moved since it was indexed"
        ))
    })?;
    let cut = bytes.len() > MAX_NOTE_BYTES;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_NOTE_BYTES)]).into_owned();
    let (heading_line, passage_lines) = match chunk {
        Some(c) => locate(&text, &c.text, c.meta_str("section").unwrap_or("")),
        None => (None, None),
    };
    Ok(NoteText {
        text,
        cut,
        heading_line,
        passage_lines,
    })
}

/// Where `passage` sits in `text` (0-based first and last line) and the
/// heading it falls under: the last heading line at or before the passage,
/// or — when the note changed and the passage is not found — the first
/// heading whose title is the breadcrumb's last part.
pub fn locate(text: &str, passage: &str, section: &str) -> (Option<usize>, Option<(usize, usize)>) {
    let lines: Vec<&str> = text.lines().collect();
    let passage = passage.trim();
    let found = (!passage.is_empty()).then(|| text.find(passage)).flatten().map(|at| {
        let first = text[..at].matches('\n').count();
        (first, first + passage.matches('\n').count())
    });
    let heading = match found {
        Some((first, _)) => (0..=first.min(lines.len().saturating_sub(1)))
            .rev()
            .find(|&i| heading_title(lines.get(i).copied().unwrap_or("")).is_some()),
        None => {
            let last = section
                .rsplit(crate::kb::chunker::SECTION_SEPARATOR)
                .next()
                .unwrap_or("")
                .trim();
            (!last.is_empty())
                .then(|| lines.iter().position(|l| heading_title(l) == Some(last)))
                .flatten()
        }
    };
    // A heading before the passage's own section belongs to the note's
    // lead, not to a breadcrumb-less passage.
    let heading = heading.filter(|_| !section.is_empty() || found.is_none());
    (heading, found)
}

/// Where an annotation passage sits on its page (boxes as fractions of the
/// page, see `pdf::Annotation::rects`); empty for other chunks and for
/// annotations stored before their boxes were kept.
pub fn passage_rects(chunk: &crate::store::ChunkRecord) -> Vec<[f32; 4]> {
    chunk
        .meta_str("rects")
        .map(crate::pdf::rects_from_meta)
        .unwrap_or_default()
}

/// An ATX heading's title (`## Install` → `Install`), else `None`.
pub fn heading_title(line: &str) -> Option<&str> {
    let t = line
        .strip_prefix("   ")
        .or_else(|| line.strip_prefix("  "))
        .or_else(|| line.strip_prefix(' '))
        .unwrap_or(line);
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &t[hashes..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = "---\ntags: x\n---\nLead line.\n\n# Pasta\n\nBoil it for nine minutes.\n\n## Sauce\n\nTomatoes, garlic.\nSalt.\n";

    #[test]
    fn a_passage_is_found_by_its_text_under_its_heading() {
        assert_eq!(
            locate(NOTE, "## Sauce\n\nTomatoes, garlic.\nSalt.", "Pasta › Sauce"),
            (Some(9), Some((9, 12)))
        );
        // A piece cut from the middle of a section: the heading above it.
        assert_eq!(locate(NOTE, "Salt.", "Pasta › Sauce"), (Some(9), Some((12, 12))));
        // Lead text has no breadcrumb and no heading.
        assert_eq!(locate(NOTE, "Lead line.", ""), (None, Some((3, 3))));
    }

    #[test]
    fn a_changed_note_still_opens_at_the_heading_the_breadcrumb_names() {
        assert_eq!(locate(NOTE, "Basil, once.", "Pasta › Sauce"), (Some(9), None));
        assert_eq!(locate(NOTE, "Basil, once.", "Pasta › Gone"), (None, None));
        assert_eq!(locate(NOTE, "", ""), (None, None));
    }

    #[test]
    fn headings_are_atx_lines_only() {
        assert_eq!(heading_title("## Install ##"), Some("Install"));
        assert_eq!(heading_title("   # Lead"), Some("Lead"));
        assert_eq!(heading_title("#tag"), None);
        assert_eq!(heading_title("    # code"), None);
        assert_eq!(heading_title("####### seven"), None);
        assert_eq!(heading_title("#"), Some(""));
    }
}
