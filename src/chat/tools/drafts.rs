//! The drafts tools: the model's entire write surface.
//!
//! Owns: `create_draft`, `create_draft_from`, `add_draft_file`,
//! `list_drafts`, `read_draft` and `propose_draft_edit`. Creating is a free
//! write (nothing existed to overwrite); changing existing content is only
//! ever a proposal handed to the human (an `edit_proposal` event) — the
//! tool returns [`INVARIANT_LINE`] verbatim and writes nothing. A draft
//! inherits the visibility of the session that made it (and of a private
//! source); a private draft is never read under a cloud provider.
//! Must not: write outside the drafts root (every path goes through
//! `resolve_in_draft`), delete anything, promote a draft anywhere, or apply
//! an edit.

use std::fmt::Write as _;

use crate::drafts::proposals::INVARIANT_LINE;
use crate::drafts::{DraftsError, Visibility};
use crate::llm::{ToolError, ToolOutcome};

use super::{kb_err, spec, wrap_data, Args, ToolBox, PRIVACY_STOP};
use crate::drafts::DraftsHandle as DraftDeps;
use crate::llm::ToolSpec;
use serde_json::json;

/// The six drafts tools' schemas. There is no delete, promote or apply
/// tool: nothing for an injected instruction to aim at.
pub(super) fn specs() -> Vec<ToolSpec> {
    let file = json!({"type": "string", "description": "a plain file name such as cv.md or paper.tex (.md .tex .bib .txt .csv .json .yaml)"});
    vec![
        spec(
            "create_draft",
            "Start a new draft document in the drafts sandbox (never the vault) with one file. Use this to produce a file the user can open, instead of pasting a long document into the chat. Cite library papers by their cite key — \\cite{key} in a .tex (ending with \\bibliographystyle{plain} and \\bibliography{NAME}, NAME the file name without .tex), [@key] in a .md — never a hand-typed reference: building the draft writes the .bib from the library.",
            json!({"type": "object", "properties": {
                "title": {"type": "string"}, "filename": file, "content": {"type": "string", "description": "the file's full text"}
            }, "required": ["filename", "content"]}),
        ),
        spec(
            "create_draft_from",
            "Start a new draft seeded with the text of a document in the knowledge base (`source` as search_kb or list_documents showed it).",
            json!({"type": "object", "properties": {
                "source": {"type": "string"}, "title": {"type": "string"}, "filename": file
            }, "required": ["source"]}),
        ),
        spec(
            "add_draft_file",
            "Add a new file (a chapter, a .bib) to an existing draft. Refuses an existing name — change existing files with propose_draft_edit.",
            json!({"type": "object", "properties": {
                "draft_id": {"type": "string"}, "filename": file, "content": {"type": "string"}
            }, "required": ["draft_id", "filename", "content"]}),
        ),
        spec(
            "list_drafts",
            "List the drafts: id, title, visibility, files.",
            json!({"type": "object", "properties": {}}),
        ),
        spec(
            "read_draft",
            "Read one file of a draft (the main file by default).",
            json!({"type": "object", "properties": {
                "draft_id": {"type": "string"}, "filename": file
            }, "required": ["draft_id"]}),
        ),
        spec(
            "propose_draft_edit",
            "Propose a change to an existing draft file: give its whole new text. Nothing is written; the user reviews each change in the editor and accepts or rejects it. Cite library papers by their cite key (\\cite{key} / [@key]), as create_draft says.",
            json!({"type": "object", "properties": {
                "draft_id": {"type": "string"}, "filename": file, "content": {"type": "string", "description": "the file's complete new text"}
            }, "required": ["draft_id", "filename", "content"]}),
        ),
    ]
}

/// At most this many characters of a draft file go back to the model.
const MAX_READ_CHARS: usize = 200_000;

fn failed(e: DraftsError) -> ToolError {
    super::failed(&e)
}

impl ToolBox<'_> {
    fn drafts(&self) -> Result<DraftDeps, ToolError> {
        self.deps
            .drafts
            .clone()
            .ok_or_else(|| ToolError::Failed("drafts are not available in this session".into()))
    }

    /// The visibility a draft made now gets: private when the session is,
    /// or when this turn has already seen private content.
    fn draft_visibility(&self) -> Visibility {
        if self.session_private || self.saw_private {
            Visibility::Private
        } else {
            Visibility::Public
        }
    }

    fn session_ref(&self) -> Option<&str> {
        Some(self.session_id).filter(|s| crate::drafts::workspace::valid_id(s))
    }

    pub(super) fn create_draft(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let d = self.drafts()?;
        let filename = a.str("filename")?;
        let title = a.opt_str("title").unwrap_or_default();
        let content = a.raw_str("content").unwrap_or_default();
        let meta = d
            .workspace
            .create_draft(&title, &filename, &content, self.draft_visibility(), self.session_ref())
            .map_err(failed)?;
        Ok(ToolOutcome::ok(format!(
            "Created draft {} (\"{}\") with {}. The user can open it in the Editor. To change it later, use propose_draft_edit.",
            meta.id, meta.title, meta.main_file
        )))
    }

    pub(super) fn create_draft_from(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let d = self.drafts()?;
        let source = a.str("source")?;
        let kb = self.deps.kb.clone();
        let first = kb.get_document_chunks(&source, 1).map_err(kb_err)?;
        if first.total_chunks == 0 {
            return Err(ToolError::Failed(format!(
                "no document has source or path {source:?} — use the `source` that search_kb or list_documents showed"
            )));
        }
        let mut text = String::new();
        let mut private = false;
        let mut title = String::new();
        for page in 1..=first.pages.max(1) {
            let p = if page == 1 {
                first.clone()
            } else {
                kb.get_document_chunks(&source, page).map_err(kb_err)?
            };
            for c in &p.chunks {
                private |= c.meta_str("visibility") == Some("private");
                if title.is_empty() {
                    title = c.meta_str("title").unwrap_or("").to_string();
                }
                if c.meta_str("annotation_kind").is_some() || c.meta_str("figure").is_some() {
                    continue;
                }
                text.push_str(&c.text);
                text.push_str("\n\n");
            }
        }
        let visibility = if private {
            Visibility::Private
        } else {
            self.draft_visibility()
        };
        let filename = a.opt_str("filename").unwrap_or_else(|| "draft.md".into());
        let title = a
            .opt_str("title")
            .unwrap_or(if title.is_empty() { source.clone() } else { title });
        let meta = d
            .workspace
            .create_draft(&title, &filename, text.trim_end(), visibility, self.session_ref())
            .map_err(failed)?;
        // The text went to disk, not to the model; a private source only
        // makes the draft private. Under a cloud model not even its title
        // is said (the draft's id carries none: private ids are opaque).
        if private && self.cloud {
            return Ok(ToolOutcome::ok(format!(
                "Created private draft {} with {} from {source}: the source is private, so the draft is too — its title and text stay on this machine and cannot be read in this session (it uses a cloud model). The user can open it in the Editor.",
                meta.id, meta.main_file
            )));
        }
        Ok(ToolOutcome::ok(format!(
            "Created draft {} (\"{}\") with {} from {source}{}.",
            meta.id,
            meta.title,
            meta.main_file,
            if private { " (private, like its source)" } else { "" }
        )))
    }

    pub(super) fn add_draft_file(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let d = self.drafts()?;
        let id = a.str("draft_id")?;
        let filename = a.str("filename")?;
        let content = a.raw_str("content").unwrap_or_default();
        d.workspace.add_draft_file(&id, &filename, &content).map_err(failed)?;
        Ok(ToolOutcome::ok(format!("Added {filename} to draft {id}.")))
    }

    pub(super) fn list_drafts(&mut self) -> Result<ToolOutcome, ToolError> {
        let d = self.drafts()?;
        let list = d.workspace.list_drafts().map_err(failed)?;
        if list.is_empty() {
            return Ok(ToolOutcome::ok("There are no drafts yet."));
        }
        let mut out = String::new();
        let mut hidden = 0usize;
        for s in list {
            if s.meta.visibility == Visibility::Private && self.cloud {
                // Not even the id: a title, a file name or an old id built
                // from a title can carry private content, and a cloud
                // session cannot open a private draft anyway.
                hidden += 1;
                continue;
            }
            let _ = writeln!(
                out,
                "- {} \"{}\" [{}] main: {}; files: {}",
                s.meta.id,
                s.meta.title,
                match s.meta.visibility {
                    Visibility::Private => "private",
                    Visibility::Public => "public",
                },
                s.meta.main_file,
                s.files.join(", ")
            );
        }
        if hidden > 0 {
            let _ = writeln!(
                out,
                "({hidden} private draft{} not listed: this session uses a cloud model)",
                if hidden == 1 { "" } else { "s" }
            );
        }
        Ok(ToolOutcome::ok(wrap_data(out.trim_end())))
    }

    pub(super) fn read_draft(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let d = self.drafts()?;
        let id = a.str("draft_id")?;
        let meta = d.workspace.meta(&id).map_err(failed)?;
        if meta.visibility == Visibility::Private {
            if self.cloud {
                return Err(ToolError::Privacy(PRIVACY_STOP.into()));
            }
            self.saw_private = true;
        }
        let filename = a.opt_str("filename").unwrap_or(meta.main_file.clone());
        let f = d.workspace.read_file(&id, &filename).map_err(failed)?;
        let mut text: String = f.text.chars().take(MAX_READ_CHARS).collect();
        if text.len() < f.text.len() {
            text.push_str("\n[… cut: the file is longer]");
        }
        Ok(ToolOutcome::ok(wrap_data(&format!(
            "draft {id} \"{}\", file {filename}:\n{text}",
            meta.title
        ))))
    }

    pub(super) fn propose_draft_edit(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let d = self.drafts()?;
        let id = a.str("draft_id")?;
        let filename = a.str("filename")?;
        let content = a.raw_str("content").ok_or_else(|| {
            ToolError::Failed("missing required argument `content` (the whole new text of the file)".into())
        })?;
        let p = d
            .proposals
            .propose_edit(&d.workspace, &id, &filename, &content, Some(self.session_id))
            .map_err(failed)?;
        let n = p.hunks.len();
        self.edit_proposals.push(p);
        Ok(ToolOutcome::ok(format!(
            "{INVARIANT_LINE}\nThe user now reviews {n} change{} to {filename} in the editor. Do not propose it again and do not say the edit was made.",
            if n == 1 { "" } else { "s" }
        )))
    }
}
