//! The library tools: adding papers, metadata corrections, the removal
//! request, listings, stats and the incremental vault sync.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::cancel::Cancelled;
use crate::index::Filter;
use crate::ingest::arxiv::parse_arxiv_url;
use crate::ingest::doi::{parse_remote, Remote};
use crate::ingest::metadata::PdfMetadata;
use crate::ingest::paper::{AddError, AddReport, AddRequest, Input, Mode};
use crate::ingest::reach::names_local_address;
use crate::ingest::vault::{get_visibility, refresh_vault, VaultOptions};
use crate::llm::{ToolError, ToolOutcome};

use super::{invariant_line, kb_err, Args, PendingAction, PendingKind, ToolBox};

/// What a cloud session hears when it asks to add a local file. Nothing was
/// read — not even whether the path exists.
pub const CLOUD_LOCAL_FILE: &str = "Refused: this session uses a cloud model, and a session on a cloud model cannot add local files (a file on this machine may hold private text). Nothing was read or added. Only arXiv ids, DOIs and public web addresses can be added here; the user can add a local PDF with `jarvis kb add <file>`, or from a session on a local model, where they confirm it.";

/// What a cloud session hears when it asks to add a web address on this
/// machine or its network. Nothing was fetched.
pub const CLOUD_LOCAL_URL: &str = "Refused: this session uses a cloud model, and that address is on this machine or its local network, where documents may be private. Nothing was fetched or added. The user can add it with `jarvis kb add`, or from a session on a local model, where they confirm it.";

/// The address a remote input would be fetched from first, when it is on
/// this machine or its network (a DOI is looked up at the configured
/// services, so it never is).
fn local_address(input: &Input) -> Option<String> {
    let url = match input {
        Input::Remote(Remote::Url(u)) => u.clone(),
        Input::Remote(Remote::Preprint { origin, .. }) => origin.clone(),
        _ => return None,
    };
    names_local_address(&url).then_some(url)
}

/// The report of an added paper, as the model or the human reads it.
pub fn added_text(r: &AddReport) -> String {
    let mut out = format!(
        "Added \"{}\" ({}): {} body chunks, {} annotation chunks, {} figure chunks.",
        r.title, r.source, r.body_chunks, r.annotation_chunks, r.figure_chunks
    );
    if r.replaced {
        out.push_str(" It replaced the earlier entry with the same source.");
    }
    if r.private {
        out.push_str(" It is private: it is in the vault's private folder.");
    }
    for w in &r.warnings {
        let _ = write!(out, "\nwarning: {w}");
    }
    out
}

impl ToolBox<'_> {
    /// An arXiv paper is added at once. A local PDF is never read here: it
    /// becomes a pending confirmation naming the file (and whether it will
    /// be private), and a session on a cloud model is refused outright —
    /// an injected instruction must not be able to turn any file on this
    /// machine into text a cloud model can search.
    pub(super) fn add_document(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let source = a.str("source")?;
        let Some(papers) = self.deps.papers.clone() else {
            return Err(ToolError::Failed(
                "adding papers is not available in this session (no paper pipeline configured)".into(),
            ));
        };
        let mode = match a.opt_str("mode").as_deref() {
            None | Some("summary") => Mode::Summary,
            Some("full_text") | Some("full-text") => Mode::FullText,
            Some(other) => {
                return Err(ToolError::Failed(format!(
                    "unknown mode `{other}` — use summary or full_text"
                )))
            }
        };
        let input = if self.cloud {
            // Decided before the file system is consulted at all: not even
            // whether the path exists is answered to a cloud model.
            match (parse_arxiv_url(&source), parse_remote(&source)) {
                (Ok(id), _) => Input::Arxiv(id),
                (_, Some(r)) => Input::Remote(r),
                _ => return Err(ToolError::Failed(CLOUD_LOCAL_FILE.into())),
            }
        } else {
            Input::parse(&source).map_err(|e| ToolError::Failed(e.to_string()))?
        };
        let explicit = PdfMetadata {
            title: a.opt_str("title"),
            authors: a.opt_str("authors"),
            doi: a.opt_str("doi"),
        };
        if let Input::Local(p) = &input {
            return self.propose_local_add(p, mode, explicit, a.bool("with_figures"), a.bool("allow_duplicate"));
        }
        let req = AddRequest {
            input,
            mode,
            explicit,
            figures: a.bool("with_figures"),
        };
        // An address on this machine or its network is a local file by
        // another route: the human decides, and a cloud session cannot.
        if let Some(url) = local_address(&req.input) {
            if self.cloud {
                return Err(ToolError::Failed(CLOUD_LOCAL_URL.into()));
            }
            return Ok(self.propose_local_url_add(url, req, a.bool("allow_duplicate")));
        }
        // The one tool slow enough to be worth interrupting: it gets the
        // turn's stop switch.
        match papers.add(&req, a.bool("allow_duplicate"), &self.agent(), self.cancel) {
            Ok(r) if r.skipped.is_some() => Ok(ToolOutcome::ok(format!(
                "Not added: {}. Ask the user whether to add it again (the same source is replaced, not duplicated); only if they agree, call add_document again with allow_duplicate=true.",
                r.skipped.unwrap_or_default()
            ))),
            Ok(r) => Ok(ToolOutcome::ok(added_text(&r))),
            Err(AddError::Cancelled) => Err(ToolError::Cancelled(Cancelled)),
            Err(e) => Err(super::failed(&e)),
        }
    }

    /// A local PDF waits for the human: the card names the resolved file,
    /// how it would be stored, and that nothing is read before the answer.
    fn propose_local_add(
        &mut self,
        path: &Path,
        mode: Mode,
        explicit: PdfMetadata,
        figures: bool,
        allow_duplicate: bool,
    ) -> Result<ToolOutcome, ToolError> {
        if !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            return Err(ToolError::Failed("a local document must be a PDF".into()));
        }
        let abs = std::fs::canonicalize(path)
            .map_err(|e| ToolError::Failed(format!("cannot open {}: {e}", path.display())))?;
        if !abs.is_file() {
            return Err(ToolError::Failed(format!("{} is not a file", abs.display())));
        }
        let private = self
            .deps
            .vault
            .root
            .as_deref()
            .and_then(|root| get_visibility(&abs, root, &self.deps.vault.private_dirs))
            .is_some_and(|v| v.is_private());
        let mut description = format!(
            "Add the local file {} to the knowledge base as a paper ({})?\n",
            abs.display(),
            match mode {
                Mode::Summary => "an LLM-written summary",
                Mode::FullText => "its full text",
            }
        );
        for (label, value) in [
            ("title", &explicit.title),
            ("authors", &explicit.authors),
            ("doi", &explicit.doi),
        ] {
            if let Some(v) = value {
                let _ = writeln!(description, "{label} (as the model gave it): {v}");
            }
        }
        description.push_str(if private {
            "It will be private: it is in the vault's private folder, so its text never reaches a cloud model."
        } else {
            "It will be public: its text can be found by searches in sessions on cloud models."
        });
        description.push_str("\nThe file is read only if you confirm; it is never changed.");
        let token = uuid::Uuid::new_v4().simple().to_string();
        self.pending.push(PendingAction {
            token,
            session_id: self.session_id.to_string(),
            description: description.clone(),
            kind: PendingKind::AddFile {
                request: AddRequest {
                    input: Input::Local(abs),
                    mode,
                    explicit,
                    figures,
                },
                allow_duplicate,
            },
        });
        Ok(ToolOutcome::ok(format!(
            "{description}\n\nA confirmation dialog is now shown to the user. Do not call add_document again for this file, and do not say it was added: only the user's answer in the dialog adds it."
        )))
    }

    /// A paper at a local web address waits for the human, like a local
    /// file: nothing is fetched before the answer.
    fn propose_local_url_add(&mut self, url: String, request: AddRequest, allow_duplicate: bool) -> ToolOutcome {
        let description = format!(
            "Add the paper at {url} — an address on this machine or its local network — to the knowledge base ({})?\nIt will be public: its text can be found by searches in sessions on cloud models.\nNothing is fetched unless you confirm.",
            match request.mode {
                Mode::Summary => "an LLM-written summary",
                Mode::FullText => "its full text",
            }
        );
        let token = uuid::Uuid::new_v4().simple().to_string();
        self.pending.push(PendingAction {
            token,
            session_id: self.session_id.to_string(),
            description: description.clone(),
            kind: PendingKind::AddFile {
                request,
                allow_duplicate,
            },
        });
        ToolOutcome::ok(format!(
            "{description}\n\nA confirmation dialog is now shown to the user. Do not call add_document again for this address, and do not say it was added: only the user's answer in the dialog adds it."
        ))
    }

    pub(super) fn update_file_path(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let source = a.str("source")?;
        let new_path = a.str("new_path")?;
        let n = self
            .deps
            .kb
            .update_file_path(&source, &new_path, &self.agent())
            .map_err(kb_err)?;
        if n == 0 {
            return Err(ToolError::Failed(format!("no document has source {source:?}")));
        }
        Ok(ToolOutcome::ok(format!(
            "Updated the path of {n} chunks to {new_path}. No file was moved."
        )))
    }

    pub(super) fn update_document_metadata(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let source = a.str("source")?;
        let (t, au, d) = (a.opt_str("title"), a.opt_str("authors"), a.opt_str("doi"));
        if t.is_none() && au.is_none() && d.is_none() {
            return Err(ToolError::Failed("give at least one of title, authors, doi".into()));
        }
        // Papers and digests only: a note's entry comes from its file.
        self.deps.kb.own_entry(&source).map_err(kb_err)?;
        let n = self
            .deps
            .kb
            .update_paper_metadata(&source, t.as_deref(), au.as_deref(), d.as_deref(), &self.agent())
            .map_err(kb_err)?;
        Ok(ToolOutcome::ok(format!("Updated {n} chunks of {source}.")))
    }

    /// Never removes anything: builds the preview and a pending
    /// confirmation with its own token for the human to answer.
    pub(super) fn remove_document(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let source = a.str("source")?;
        let doc = self.deps.kb.find_document(&source).map_err(kb_err)?;
        if self.cloud && doc.visibility.is_private() {
            return Err(ToolError::Privacy(super::PRIVACY_STOP.into()));
        }
        let local = doc
            .file_path
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "no local file".into());
        let description = format!(
            "Remove \"{}\" ({}) from the knowledge base?\nsource: {}\nchunks: {}\n{}",
            if doc.title.is_empty() { &doc.key } else { &doc.title },
            doc.doc_type,
            doc.source,
            doc.chunks,
            invariant_line(&local)
        );
        let token = uuid::Uuid::new_v4().simple().to_string();
        self.pending.push(PendingAction {
            token,
            session_id: self.session_id.to_string(),
            description: description.clone(),
            kind: PendingKind::Remove(doc),
        });
        Ok(ToolOutcome::ok(format!(
            "{description}\n\nA confirmation dialog is now shown to the user. Do not call remove_document again for this request, and do not say the document was removed: only the user's answer in the dialog removes it."
        )))
    }

    pub(super) fn list_documents(&mut self, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        let mut filter = Filter {
            category: a.opt_str("category"),
            status: a.opt_str("status"),
            entity: a.opt_str("entity"),
            tags: a.str_list("tags"),
            fields: a.object("fields"),
            ..Filter::default()
        };
        let kind: Vec<String> = a.opt_str("kind").into_iter().collect();
        filter.doc_types = crate::doc_type::DocKind::filter_types(&kind, &[crate::doc_type::DocKind::All])
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        if self.cloud {
            // Even a private note's title stays on this machine.
            filter.visibility = Some(crate::visibility::Visibility::Public);
        }
        let limit = a.opt_u64("limit").map_or(50, |n| n.clamp(1, 200) as usize);
        let docs = self.deps.kb.list_documents(&filter, limit).map_err(kb_err)?;
        if !self.cloud && docs.iter().any(|d| d.visibility.is_private()) {
            self.saw_private = true;
        }
        let mut out = String::new();
        if docs.is_empty() {
            out.push_str("No documents match.");
        }
        for d in &docs {
            let _ = write!(
                out,
                "- [{}] {} — key: {}",
                d.doc_type,
                if d.title.is_empty() { "(untitled)" } else { &d.title },
                d.key
            );
            for k in ["category", "status", "entity"] {
                if let Some(v) = d.meta.get(k).and_then(|v| v.as_str()).filter(|v| !v.is_empty()) {
                    let _ = write!(out, "; {k}: {v}");
                }
            }
            // A paper's citation key: what a draft cites it by.
            if let Some(k) = d.meta.get(crate::kb::cite::CITE_KEY).and_then(|v| v.as_str()) {
                let _ = write!(out, "; cite key: {k}");
            }
            let _ = writeln!(out, "; {} chunks", d.chunks);
        }
        Ok(ToolOutcome::ok(out.trim_end().to_string()))
    }

    pub(super) fn kb_stats(&mut self) -> Result<ToolOutcome, ToolError> {
        let filter = if self.cloud {
            Filter::public_only()
        } else {
            Filter::default()
        };
        let docs = self.deps.kb.list_documents(&filter, usize::MAX).map_err(kb_err)?;
        let mut by_type: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        let mut categories: BTreeMap<String, usize> = BTreeMap::new();
        let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
        for d in &docs {
            let e = by_type.entry(d.doc_type.as_str()).or_default();
            e.0 += 1;
            e.1 += d.chunks;
            for (key, map) in [("category", &mut categories), ("status", &mut statuses)] {
                if let Some(v) = d.meta.get(key).and_then(|v| v.as_str()).filter(|v| !v.is_empty()) {
                    *map.entry(v.to_string()).or_insert(0) += 1;
                }
            }
        }
        let mut out = format!(
            "{} documents, {} chunks.\n",
            docs.len(),
            docs.iter().map(|d| d.chunks).sum::<usize>()
        );
        for (t, (n, c)) in &by_type {
            let _ = writeln!(out, "- {t}: {n} documents, {c} chunks");
        }
        let list = |m: &BTreeMap<String, usize>| {
            if m.is_empty() {
                "(none)".to_string()
            } else {
                m.iter()
                    .map(|(k, n)| format!("{k} ({n})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let _ = writeln!(out, "record categories: {}", list(&categories));
        let _ = write!(out, "record statuses: {}", list(&statuses));
        if self.cloud {
            out.push_str("\n(counts cover public documents only: this session uses a cloud model)");
        }
        Ok(ToolOutcome::ok(out))
    }

    /// Incremental only: the destructive clean rebuild is CLI-only.
    pub(super) fn index_vault(&mut self) -> Result<ToolOutcome, ToolError> {
        let Some(root) = self.deps.vault.root.clone() else {
            return Err(ToolError::Failed("no vault is configured (vault.path)".into()));
        };
        let opts = VaultOptions {
            private_dirs: self.deps.vault.private_dirs.clone(),
            force: false,
            actor: self.agent(),
        };
        let r = refresh_vault(&self.deps.kb, Path::new(&root), &opts, &|_, _| {}, self.cancel);
        match r {
            // Counts only: file names of private notes stay out of the reply.
            Ok(r) => Ok(ToolOutcome::ok(format!(
                "Vault synced: {} added, {} updated, {} deleted, {} re-classified, {} unchanged, {} skipped.",
                r.added.len(),
                r.updated.len(),
                r.deleted.len(),
                r.reclassified.len(),
                r.unchanged,
                r.skipped.len()
            ))),
            Err(crate::ingest::vault::VaultError::Cancelled) => Err(ToolError::Cancelled(Cancelled)),
            Err(e) => Err(super::failed(&e)),
        }
    }
}
