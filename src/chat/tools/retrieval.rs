//! The four retrieval tools. Every passage they return is numbered for the
//! turn (`--- [n] ---`, what the model cites). Each decides privacy the same way: under a
//! cloud provider, private chunks never enter the result (the search pool
//! is public-only by construction), results that would be only private
//! raise a privacy stop, and mixed results get the fixed caveat; under a
//! local provider a private result flags the session.

use std::fmt::Write as _;
use std::path::{Component, Path};

use crate::chat::cite::Citation;
use crate::chat::session::SourceRef;
use crate::doc_type::DocKind;
use crate::index::Filter;
use crate::ingest::vault::{get_visibility, Visibility};
use crate::kb::search::{Hit, SearchRequest};
use crate::llm::{ToolError, ToolOutcome};
use crate::store::ChunkRecord;

use super::{kb_err, wrap_data, Args, ToolBox, PRIVACY_STOP, PRIVATE_CAVEAT};

/// search_chat_history returns recall cues, deliberately short.
const CUE_CHARS: usize = 300;
/// read_file returns at most this much of one note.
const MAX_FILE_BYTES: usize = 200_000;

fn is_private(rec: &ChunkRecord) -> bool {
    // Fail closed: a missing or unknown visibility is private.
    rec.visibility().is_private()
}

fn truncate_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n).collect();
    t.push('…');
    t
}

/// A stored chunk as a numbered passage (the number is the table's).
pub(crate) fn citation_of(rec: &ChunkRecord) -> Citation {
    let s = |k: &str| rec.meta_str(k).unwrap_or("").to_string();
    Citation {
        n: 0,
        key: crate::kb::search::doc_key(rec).to_string(),
        kind: s("doc_type"),
        title: s("title"),
        source: s("source"),
        path: rec.meta_str("file_path").filter(|p| !p.is_empty()).map(str::to_string),
        section: s("section"),
        page: rec.meta_i64("page"),
        annotation: rec.meta_str("annotation_kind").map(str::to_string),
        text: rec.text.clone(),
        chunk_id: Some(rec.id),
    }
}

pub(crate) fn source_of(rec: &ChunkRecord) -> SourceRef {
    let s = |k: &str| rec.meta_str(k).unwrap_or("").to_string();
    let kind = s("doc_type");
    let location = match (kind.as_str(), rec.meta_str("file_path")) {
        ("note", Some(p)) => p.to_string(),
        _ => s("source"),
    };
    SourceRef {
        kind,
        title: s("title"),
        location,
        section: s("section"),
        page: rec.meta_i64("page"),
    }
}

/// A hit's identifying lines: notes show their path and record fields,
/// papers their authors and source.
fn describe(rec: &ChunkRecord, out: &mut String) {
    let m = |k: &str| rec.meta_str(k).filter(|v| !v.is_empty());
    let doc_type = m("doc_type").unwrap_or("document");
    let _ = writeln!(out, "[{doc_type}] {}", m("title").unwrap_or("(untitled)"));
    match doc_type {
        "note" => {
            if let Some(p) = m("file_path") {
                let _ = writeln!(out, "path: {p}");
            }
            for k in ["category", "status", "entity", "event_date"] {
                if let Some(v) = m(k) {
                    let _ = writeln!(out, "{k}: {v}");
                }
            }
            if let Some(t) = m("tags") {
                let tags = crate::kb::split_tags(t);
                if !tags.is_empty() {
                    let _ = writeln!(out, "tags: {}", tags.join(", "));
                }
            }
        }
        _ => {
            if let Some(a) = m("authors") {
                let _ = writeln!(out, "authors: {a}");
            }
            // What a draft cites it by: \cite{key} / [@key].
            if let Some(k) = m(crate::kb::cite::CITE_KEY) {
                let _ = writeln!(out, "cite key: {k}");
            }
            if let Some(s) = m("source") {
                let _ = writeln!(out, "source: {s}");
            }
            if let Some(k) = m("annotation_kind") {
                let _ = writeln!(out, "annotation: {k}");
            }
            if let Some(p) = rec.meta_i64("page") {
                let _ = writeln!(out, "page: {p}");
            }
        }
    }
    if let Some(s) = m("section") {
        let _ = writeln!(out, "section: {s}");
    }
}

impl ToolBox<'_> {
    fn filter_from(&self, a: &Args<'_>) -> Filter {
        Filter {
            category: a.opt_str("category"),
            status: a.opt_str("status"),
            entity: a.opt_str("entity"),
            tags: a.str_list("tags"),
            fields: a.object("fields"),
            ..Filter::default()
        }
    }

    fn n(&self, a: &Args<'_>) -> usize {
        a.opt_u64("n").map_or(self.results, |n| n.clamp(1, 20) as usize)
    }

    /// The shared privacy decision over a search. Returns the hits to show
    /// and whether the caveat applies.
    fn private_checked(&mut self, req: &SearchRequest) -> Result<(Vec<Hit>, bool), ToolError> {
        let (hits, private) = self
            .deps
            .kb
            .search_with_privacy_check(req, self.cloud)
            .map_err(kb_err)?;
        if self.cloud {
            if hits.is_empty() && private {
                return Err(ToolError::Privacy(PRIVACY_STOP.into()));
            }
            // Belt and braces: the pool was public-only already.
            let hits: Vec<Hit> = hits.into_iter().filter(|h| !is_private(&h.record)).collect();
            Ok((hits, private))
        } else {
            if private {
                self.saw_private = true;
            }
            Ok((hits, false))
        }
    }

    pub(super) fn search_kb(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let query = a.str("query")?;
        let doc_types = DocKind::filter_types(&a.str_list("kinds"), &[DocKind::Notes, DocKind::Papers])
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        self.searched.push(query.clone());
        let mut req = SearchRequest::new(query, self.n(a));
        req.filter = self.filter_from(a);
        req.filter.doc_types = doc_types;
        let (hits, caveat) = self.private_checked(&req)?;
        let mut body = String::new();
        if hits.is_empty() {
            body.push_str("No matching documents.\n");
        }
        for h in &hits {
            let n = self.passages.number(citation_of(&h.record));
            let _ = writeln!(body, "--- [{n}] ---");
            describe(&h.record, &mut body);
            let _ = writeln!(body, "\n{}\n", h.record.text);
            self.add_source(source_of(&h.record));
        }
        let mut out = wrap_data(body.trim_end());
        if caveat {
            out.push('\n');
            out.push_str(PRIVATE_CAVEAT);
        }
        Ok(ToolOutcome::ok(out))
    }

    pub(super) fn search_chat_history(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let query = a.str("query")?;
        self.searched.push(query.clone());
        let n = self.n(a);
        let own = format!("session:{}", self.session_id);
        // The running session's own chunks are dropped after the search,
        // so ask for enough to still fill `n`.
        let mut req = SearchRequest::new(query, n + 10);
        req.filter.doc_types = DocKind::Chats.type_names();
        let (hits, private) = self
            .deps
            .kb
            .search_with_privacy_check(&req, self.cloud)
            .map_err(kb_err)?;
        let hits: Vec<Hit> = hits
            .into_iter()
            .filter(|h| h.record.meta_str("source") != Some(own.as_str()))
            .filter(|h| !(self.cloud && is_private(&h.record)))
            .take(n)
            .collect();
        if self.cloud && hits.is_empty() && private {
            return Err(ToolError::Privacy(PRIVACY_STOP.into()));
        }
        if !self.cloud && hits.iter().any(|h| is_private(&h.record)) {
            self.saw_private = true;
        }
        let mut body = String::new();
        if hits.is_empty() {
            body.push_str("No earlier conversation matches.\n");
        }
        for h in &hits {
            let title = h.record.meta_str("title").unwrap_or("(untitled)");
            let when = h.record.meta_str("date_added").unwrap_or("");
            let n = self.passages.number(citation_of(&h.record));
            let _ = writeln!(
                body,
                "- [{n}] {title} ({when}): {}",
                truncate_chars(&h.record.text, CUE_CHARS)
            );
        }
        let mut out = wrap_data(body.trim_end());
        if self.cloud && private {
            out.push('\n');
            out.push_str(PRIVATE_CAVEAT);
        }
        Ok(ToolOutcome::ok(out))
    }

    pub(super) fn get_document(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let source = a.str("source")?;
        let page = a.opt_u64("page").unwrap_or(1).max(1) as usize;
        let kb = &self.deps.kb;
        let first = kb.get_document_chunks(&source, page).map_err(kb_err)?;
        if first.total_chunks == 0 {
            return Err(ToolError::Failed(format!(
                "no document has source or path {source:?} — use the `source` (or a note's `path`) that search_kb or list_documents showed"
            )));
        }
        let mut private = first.chunks.iter().any(is_private);
        if self.cloud && !private {
            // Any private chunk anywhere in the document stops a cloud read,
            // not just one on the requested page.
            for p in (1..=first.pages).filter(|p| *p != first.page) {
                if kb
                    .get_document_chunks(&source, p)
                    .map_err(kb_err)?
                    .chunks
                    .iter()
                    .any(is_private)
                {
                    private = true;
                    break;
                }
            }
        }
        if private {
            if self.cloud {
                return Err(ToolError::Privacy(PRIVACY_STOP.into()));
            }
            self.saw_private = true;
        }
        let mut body = String::new();
        if let Some(c) = first.chunks.first() {
            describe(c, &mut body);
            self.add_source(SourceRef {
                section: String::new(),
                page: None,
                ..source_of(c)
            });
        }
        let _ = writeln!(
            body,
            "page {} of {} ({} chunks in all)\n",
            first.page, first.pages, first.total_chunks
        );
        for c in &first.chunks {
            let n = self.passages.number(citation_of(c));
            if let Some(k) = c.meta_str("annotation_kind") {
                let page = c.meta_i64("page").map(|p| format!(" p.{p}")).unwrap_or_default();
                let _ = writeln!(body, "--- [{n}] {k}{page} ---");
            } else if let Some(s) = c.meta_str("section").filter(|s| !s.is_empty()) {
                let _ = writeln!(body, "--- [{n}] {s} ---");
            } else {
                let _ = writeln!(body, "--- [{n}] ---");
            }
            let _ = writeln!(body, "{}\n", c.text);
        }
        if first.page < first.pages {
            let _ = writeln!(body, "(more: call get_document with page={})", first.page + 1);
        }
        Ok(ToolOutcome::ok(wrap_data(body.trim_end())))
    }

    pub(super) fn read_file(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let rel = a.str("path")?;
        let Some(root) = self.deps.vault.root.clone() else {
            return Err(ToolError::Failed("no vault is configured (vault.path)".into()));
        };
        let lower = rel.to_ascii_lowercase();
        if lower.ends_with(".pdf") {
            return Err(ToolError::Failed(
                "read_file cannot open PDFs — use get_document with the paper's source".into(),
            ));
        }
        if !lower.ends_with(".md") {
            return Err(ToolError::Failed(
                "read_file only reads vault Markdown notes (.md)".into(),
            ));
        }
        let given = Path::new(&rel);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            if given.components().any(|c| matches!(c, Component::ParentDir)) {
                return Err(ToolError::Failed(
                    "the path must stay inside the vault (no `..`)".into(),
                ));
            }
            root.join(given)
        };
        let outside = || ToolError::Failed(format!("{rel} is not a note in the vault"));
        let canon_root = root.canonicalize().map_err(|_| outside())?;
        let resolved = joined.canonicalize().map_err(|_| outside())?;
        if !resolved.starts_with(&canon_root) || !resolved.is_file() {
            return Err(outside());
        }
        // The one visibility policy, on the resolved path: a symlink in a
        // public folder pointing into private/ is private.
        let vis = get_visibility(&resolved, &root, &self.deps.vault.private_dirs).ok_or_else(outside)?;
        if vis == Visibility::Private {
            if self.cloud {
                return Err(ToolError::Privacy(PRIVACY_STOP.into()));
            }
            self.saw_private = true;
        }
        let bytes = std::fs::read(&resolved).map_err(|e| ToolError::Failed(format!("cannot read {rel}: {e}")))?;
        let truncated = bytes.len() > MAX_FILE_BYTES;
        let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE_BYTES)]).into_owned();
        if truncated {
            text.push_str("\n… (truncated)");
        }
        let shown = resolved
            .strip_prefix(&canon_root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or(rel);
        let title = Path::new(&shown)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.add_source(SourceRef {
            kind: "note".into(),
            title: title.clone(),
            location: shown.clone(),
            section: String::new(),
            page: None,
        });
        // The whole note is one passage: no chunk, no section.
        let n = self.passages.number(Citation {
            n: 0,
            key: shown.clone(),
            kind: "note".into(),
            title,
            source: "local".into(),
            path: Some(shown.clone()),
            section: String::new(),
            page: None,
            annotation: None,
            text: text.clone(),
            chunk_id: None,
        });
        Ok(ToolOutcome::ok(wrap_data(&format!(
            "--- [{n}] ---\npath: {shown}\n\n{text}"
        ))))
    }
}
