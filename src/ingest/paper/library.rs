//! A paper that comes from a reference library (Zotero's database or an
//! export of it) rather than from a file the user names: its metadata is
//! already known, its PDF was found (or not) by the library's reader, and
//! the reader's own notes and annotations live in the library, not in the
//! PDF.
//!
//! Owns [`LibraryItem`] and what `add_document` does differently for one:
//! the stored `source` is the library's key for the item (so a re-run finds
//! it), the fingerprint of what the library says about it (a changed note,
//! tag or title replaces the entry even when the PDF's bytes did not
//! change), the library's annotations beside the PDF's own, and its notes
//! as `annotation_kind = "note"` chunks.
//! Must not: find or check the PDF's path (the reader did: it never
//! leaves the library's storage unless the library links a file there), or
//! decide visibility (the add flow's one rule does, from the PDF's path).

use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use super::{AddContext, AddError, AddReport, Entry, Fetched, PdfMetadata};
use crate::kb::stage::{build_text_documents, Document};
use crate::pdf::{Annotation, AnnotationKind};
use crate::store::Metadata;

/// The metadata key holding [`LibraryItem::fingerprint`].
pub const FINGERPRINT_KEY: &str = "library_fingerprint";

/// One item of a reference library, ready for the add flow.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LibraryItem {
    /// The stored `source`, the same on every run for the same library item
    /// (`zotero://select/library/items/ABCD2345`, or the export's file and
    /// citation key).
    pub source: String,
    /// The PDF, already resolved and checked; `None` adds the metadata and
    /// abstract alone.
    pub pdf: Option<PathBuf>,
    pub title: Option<String>,
    /// "First Last" each, in the library's order.
    pub authors: Vec<String>,
    pub doi: Option<String>,
    pub abstract_text: Option<String>,
    /// More chunk metadata: `year`, `venue`, `url`, `publication_type`,
    /// `zotero_key`, `tags`, `arxiv_id`…
    pub fields: Metadata,
    /// The reader's highlights and comments kept by the library (not
    /// written into the PDF).
    pub annotations: Vec<Annotation>,
    /// The reader's notes on the item, as plain text.
    pub notes: Vec<String>,
}

impl LibraryItem {
    /// A digest of everything the library says about the item apart from
    /// the PDF's bytes (which `content_hash` covers).
    pub fn fingerprint(&self) -> String {
        let mut me = self.clone();
        me.pdf = None;
        // serde_json writes a struct's fields in declaration order and a
        // `Metadata` map in key order, so equal items give equal bytes.
        let bytes = serde_json::to_vec(&me).unwrap_or_default();
        hex::encode(Sha256::digest(&bytes))
    }

    /// What `add_document` knows before reading anything: the file's name
    /// and bytes (empty without a PDF), the stored file path, the metadata,
    /// the library's fields, the abstract, the fingerprint.
    pub(super) fn fetched(&self) -> Result<Fetched, AddError> {
        let (name, bytes, file_path) = match &self.pdf {
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|source| AddError::Read {
                    path: p.clone(),
                    source,
                })?;
                if !bytes.starts_with(b"%PDF") {
                    return Err(AddError::BadInput(p.display().to_string()));
                }
                (file_name(p), bytes, Some(p.display().to_string()))
            }
            None => (self.source.clone(), Vec::new(), None),
        };
        Ok(Fetched {
            name,
            bytes,
            source: self.source.clone(),
            file_path,
            meta: PdfMetadata {
                title: self.title.clone().filter(|t| !t.trim().is_empty()),
                authors: Some(self.authors.join(", ")).filter(|a| !a.is_empty()),
                doi: self.doi.clone().filter(|d| !d.is_empty()),
            },
            extra: self.fields.clone(),
            abstract_text: self.abstract_text.clone().filter(|a| !a.trim().is_empty()),
            fingerprint: Some(self.fingerprint()),
        })
    }

    /// The library's annotations after the PDF's own, leaving out one the
    /// PDF already holds (the same kind, page and words): Zotero can write
    /// its annotations into the file, and the same highlight read twice
    /// would be two chunks.
    pub(super) fn merge_annotations(&self, from_pdf: &mut Vec<Annotation>) {
        for a in &self.annotations {
            let same = |b: &Annotation| b.kind == a.kind && b.page == a.page && b.text.trim() == a.text.trim();
            if !from_pdf.iter().any(same) {
                from_pdf.push(a.clone());
            }
        }
    }

    /// The notes as chunks: `[USER NOTE] …` (the same marker as a comment
    /// in a PDF, without a page), chunked like any text so a long note is
    /// not one oversized chunk; counted with the annotations.
    pub(super) fn note_chunks(
        &self,
        cx: &AddContext<'_>,
        entry: &Entry,
        report: &mut AddReport,
    ) -> Result<Vec<Document>, AddError> {
        let mut out = Vec::new();
        let mut meta = entry.caller.clone();
        meta.insert("annotation_kind".into(), json!("note"));
        meta.insert("note_text".into(), json!(""));
        for note in self.notes.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            out.extend(build_text_documents(
                &format!("[USER NOTE] {note}"),
                &meta,
                &entry.own,
                &entry.header,
                cx.kb.chunker_config(),
            )?);
        }
        report.annotation_chunks += out.len();
        Ok(out)
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Zotero's annotation types as the PDF reader's kinds: a highlight or an
/// underline marks words (with the reader's comment as its note); a note
/// or a text box is the reader's own words.
pub fn annotation(kind: AnnotationKind, page: u32, text: &str, comment: &str) -> Annotation {
    match kind {
        AnnotationKind::Highlight => Annotation {
            kind,
            subtype: "Highlight".into(),
            page,
            text: text.trim().to_string(),
            note_text: comment.trim().to_string(),
            rects: Vec::new(),
        },
        AnnotationKind::Comment => Annotation {
            kind,
            subtype: "Text".into(),
            page,
            text: if comment.trim().is_empty() { text } else { comment }
                .trim()
                .to_string(),
            note_text: String::new(),
            rects: Vec::new(),
        },
    }
}
