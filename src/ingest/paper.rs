//! Adding a paper — a local PDF, an arXiv id, a DOI, a bioRxiv/medRxiv page
//! or a PDF's web address — as one staged, atomic commit: annotations first
//! (so a scanned PDF keeps its highlights), then the body (a ~1000-word LLM
//! summary, or the full converted text; the abstract when no PDF could be
//! found), then figure captions when asked for, then one `Kb::commit`.
//!
//! Owns: the `add_document` flow, duplicate handling (same source →
//! replace in the same commit, after confirmation; the same paper by
//! another route — DOI, arXiv id without version, PDF bytes — → replace
//! that entry, after confirmation; same title, different source → a
//! separate entry), and the paper's visibility: public, except a local PDF
//! inside one of the vault's private folders, which is private wherever it
//! is added from (the vault's one rule, [`super::vault::get_visibility`]) —
//! its text, title and images then never go to a cloud model for metadata,
//! a summary or captions.
//! Must not: run PDFium in this process for real ingest — PDF work goes
//! through a [`PdfTools`] the caller provides (the app's isolated child
//! process); nor write anything before the final commit.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::arxiv::{ArxivClient, ArxivError, ArxivId};
use super::doi::Remote;
use super::identity::{find_same_paper, Identity};
use super::metadata::{self, PdfMetadata};
use super::remote::{RemoteError, RemoteSources};
use crate::cancel::Cancel;
use crate::doc_type::DocType;
use crate::kb::change::{content_hash, SourceChange};
use crate::kb::ops::paper_header;
use crate::kb::stage::{build_text_documents, Document};
use crate::kb::{Kb, KbError, ReplaceBy};
use crate::llm::retry::with_retries_cancellable;
use crate::llm::{CallError, ChatProvider, ErrorKind, SummarySource};

use crate::pdf::{Annotation, AnnotationKind, Converted, Figure};
use crate::store::Metadata;
use crate::visibility::{Visibility, PRIVATE_FOLDER_REASON, PRIVATE_REASON_KEY};

/// A summary or caption is tried this many times in all when it fails
/// transiently (rate limit, overload, timeout, dropped connection).
const LLM_ATTEMPTS: u32 = 3;
/// What `AddSettings::llm_retry_backoff` is in production.
pub const LLM_RETRY_BACKOFF: std::time::Duration = std::time::Duration::from_secs(2);

/// PDF work, wherever it runs (the app runs it in a child process).
pub trait PdfTools {
    fn convert(&self, name: &str, bytes: &[u8]) -> Result<Converted, PdfFailure>;
    fn annotations(&self, name: &str, bytes: &[u8]) -> Result<Vec<Annotation>, PdfFailure>;
    fn figures(&self, name: &str, bytes: &[u8], max: usize, min_pixels: u64) -> Result<Vec<Figure>, PdfFailure>;
}

/// A PDF step that failed, with a message naming the file and the reason.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct PdfFailure {
    pub message: String,
    /// The PDF has no text layer (scanned); annotations may still exist.
    pub no_text: bool,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddError {
    #[error(
        "{0} is not a PDF file, an arXiv id, a DOI or a web address — give a path to a .pdf, an arXiv id such as 2301.01234, a DOI such as 10.1038/s41586-021-03819-2, or a link to a PDF"
    )]
    BadInput(String),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Arxiv(#[from] ArxivError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("adding by DOI or web address is not available here — add the PDF file or the arXiv id instead")]
    NoRemote,
    #[error("{0}")]
    Pdf(PdfFailure),
    #[error("the summary could not be written: {0} — nothing was added (use --full-text to add without an LLM)")]
    Summary(String),
    #[error("no LLM is available for the summary — configure `chat.provider`, or use --full-text")]
    NoProvider,
    #[error("{0} is in the vault's private folder, and its text never goes to the cloud model `chat.provider` names for a summary — nothing was added; add it with --full-text (the text stays on this machine), or set `chat.provider` to a local model (Ollama or a local server)")]
    PrivateNeedsLocalSummary(String),
    #[error(transparent)]
    Kb(#[from] KbError),
    #[error("stopped; nothing was added")]
    Cancelled,
}

impl AddError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            AddError::BadInput(_)
            | AddError::Pdf(_)
            | AddError::NoProvider
            | AddError::NoRemote
            | AddError::PrivateNeedsLocalSummary(_) => ErrorKind::User,
            AddError::Remote(RemoteError::Web(super::web::WebError::Cancelled)) => ErrorKind::Cancelled,
            AddError::Remote(e) => e.kind(),
            AddError::Read { source, .. } => crate::error_kind::io_kind(source),
            AddError::Arxiv(e) => e.kind(),
            AddError::Summary(_) => ErrorKind::Unavailable,
            AddError::Kb(e) => e.kind(),
            AddError::Cancelled => ErrorKind::Cancelled,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Summary,
    FullText,
}

#[derive(Debug, Clone)]
pub enum Input {
    Local(PathBuf),
    Arxiv(ArxivId),
    /// A DOI, a bioRxiv/medRxiv page or a PDF's web address.
    Remote(Remote),
}

impl Input {
    /// A local path when one exists, else an arXiv id or URL (arXiv's own
    /// DOIs included), else a DOI or web address.
    pub fn parse(s: &str) -> Result<Input, AddError> {
        let p = Path::new(s);
        if p.exists() {
            return Ok(Input::Local(p.to_path_buf()));
        }
        if let Ok(id) = super::arxiv::parse_arxiv_url(s) {
            return Ok(Input::Arxiv(id));
        }
        match super::doi::parse_remote(s) {
            Some(Remote::Doi(d)) => Ok(super::doi::arxiv_of_doi(&d)
                .map(Input::Arxiv)
                .unwrap_or(Input::Remote(Remote::Doi(d)))),
            Some(r) => Ok(Input::Remote(r)),
            None => Err(AddError::BadInput(s.to_string())),
        }
    }

    /// Something on this machine (the caller's own file), not a download.
    pub fn is_local(&self) -> bool {
        matches!(self, Input::Local(_))
    }
}

#[derive(Debug, Clone)]
pub struct AddRequest {
    pub input: Input,
    pub mode: Mode,
    /// `--title/--authors/--doi`.
    pub explicit: PdfMetadata,
    /// Caption figures for this document (`--figures`).
    pub figures: bool,
}

/// Settings the flow needs from config.
#[derive(Debug, Clone)]
pub struct AddSettings {
    pub figure_captions: bool,
    pub figure_max_per_doc: usize,
    pub figure_min_pixels: u64,
    /// The pdf_metadata prompt (`{text}` placeholder).
    pub metadata_prompt: String,
    /// The paper_summary prompt (`{title}` placeholder).
    pub summary_prompt: String,
    pub provider_is_cloud: bool,
    /// First pause before retrying a summary or caption after a transient
    /// failure (doubling, with jitter; a longer `Retry-After` wins).
    pub llm_retry_backoff: std::time::Duration,
    /// The vault (`vault.path`) and its private folders: a local PDF inside
    /// one of them is added private.
    pub vault_root: Option<PathBuf>,
    pub private_dirs: Vec<String>,
}

impl AddSettings {
    /// Where a local PDF (already resolved) belongs: private inside one of
    /// the vault's private folders, public anywhere else. The vault's own
    /// rule decides, so a symlink counts where it points.
    pub fn visibility_of(&self, path: &Path) -> Visibility {
        match &self.vault_root {
            Some(root) => super::vault::get_visibility(path, root, &self.private_dirs).unwrap_or(Visibility::Public),
            None => Visibility::Public,
        }
    }
}

/// Where the flow is; the CLI turns these into progress lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    Downloading,
    Annotations,
    Converting,
    Metadata,
    Summarising,
    Figures(usize),
    Embedding(usize),
    Committing,
}

/// What one add did; its JSON is `kb add --json` (pinned in
/// `cli/kb/json_tests.rs`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AddReport {
    pub source: String,
    pub title: String,
    pub authors: String,
    pub doi: Option<String>,
    pub body_chunks: usize,
    pub annotation_chunks: usize,
    pub figure_chunks: usize,
    /// Replaced an existing entry with the same source.
    pub replaced: bool,
    /// Not added (unchanged since it was added, or a duplicate the user
    /// declined), with the reason.
    pub skipped: Option<String>,
    /// Skipped because the same source is stored with the same bytes. Not
    /// serialised: `skipped` already says so, in words.
    #[serde(skip_serializing)]
    pub unchanged: bool,
    /// Stored private: the PDF is in one of the vault's private folders.
    /// Serialised as `visibility`, `public` or `private`, the words every
    /// other report uses.
    #[serde(rename = "visibility", serialize_with = "serialize_visibility")]
    pub private: bool,
    pub warnings: Vec<String>,
}

fn serialize_visibility<S: serde::Serializer>(private: &bool, s: S) -> Result<S::Ok, S::Error> {
    let visibility = if *private {
        Visibility::Private
    } else {
        Visibility::Public
    };
    serde::Serialize::serialize(&visibility, s)
}

/// Everything the flow talks to.
pub struct AddContext<'a> {
    pub kb: &'a Kb,
    pub pdf: &'a dyn PdfTools,
    pub provider: Option<&'a dyn ChatProvider>,
    pub arxiv: &'a ArxivClient,
    /// Crossref, Unpaywall, bioRxiv and the web; `None` where adding by DOI
    /// or URL is not offered (the digest adds only arXiv papers).
    pub remote: Option<&'a RemoteSources>,
    pub settings: &'a AddSettings,
    /// Asked on a duplicate; `true` goes ahead.
    pub confirm: &'a dyn Fn(&str) -> bool,
    pub progress: &'a dyn Fn(Stage),
    pub cancel: &'a Cancel,
}

fn check(cancel: &Cancel) -> Result<(), AddError> {
    if cancel.is_cancelled() {
        Err(AddError::Cancelled)
    } else {
        Ok(())
    }
}

fn llm_err(e: CallError) -> AddError {
    match e {
        CallError::Cancelled(_) => AddError::Cancelled,
        CallError::Llm(e) => AddError::Summary(e.to_string()),
    }
}

/// Add one paper. Nothing is written until the single commit at the end,
/// so an error or a stop at any earlier step leaves the knowledge base as
/// it was.
pub fn add_document(cx: &AddContext<'_>, req: &AddRequest) -> Result<AddReport, AddError> {
    let mut report = AddReport::default();
    // 1. The PDF and what we know about it before reading it.
    // Bibliographic fields beyond title/authors/DOI (year, venue, arXiv id…).
    let mut extra = Metadata::new();
    let (name, bytes, source, file_path, mut meta, abstract_text) = match &req.input {
        Input::Local(path) => {
            let abs = std::fs::canonicalize(path).map_err(|source| AddError::Read {
                path: path.clone(),
                source,
            })?;
            let bytes = std::fs::read(&abs).map_err(|source| AddError::Read {
                path: abs.clone(),
                source,
            })?;
            if !bytes.starts_with(b"%PDF") {
                return Err(AddError::BadInput(abs.display().to_string()));
            }
            let name = abs
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let source = format!("file://{}", abs.display());
            (
                name,
                bytes,
                source,
                Some(abs.display().to_string()),
                PdfMetadata::default(),
                None,
            )
        }
        Input::Arxiv(id) => {
            (cx.progress)(Stage::Downloading);
            let paper = cx.arxiv.fetch_metadata(id)?;
            check(cx.cancel)?;
            let bytes = cx.arxiv.download_pdf(id)?;
            let meta = PdfMetadata {
                title: Some(paper.title.clone()).filter(|t| !t.is_empty()),
                authors: Some(paper.authors.join(", ")).filter(|a| !a.is_empty()),
                doi: paper.doi.clone(),
            };
            super::remote::arxiv_fields(&paper, &mut extra);
            (
                format!("arXiv:{}", id.versioned()),
                bytes,
                id.abs_url(),
                None,
                meta,
                Some(paper.summary),
            )
        }
        Input::Remote(r) => {
            let remote = cx.remote.ok_or(AddError::NoRemote)?;
            (cx.progress)(Stage::Downloading);
            let found = remote.fetch(cx.arxiv, r, cx.cancel).map_err(|e| match e {
                RemoteError::Web(super::web::WebError::Cancelled) => AddError::Cancelled,
                e => e.into(),
            })?;
            report.warnings.extend(found.warnings.iter().cloned());
            let (meta, abstract_text) = found.record(&mut extra);
            // No PDF (none open, none served): an empty body, and the
            // abstract becomes the entry.
            (
                found.name,
                found.pdf.unwrap_or_default(),
                found.source,
                None,
                meta,
                abstract_text,
            )
        }
    };
    check(cx.cancel)?;
    let visibility = match &file_path {
        Some(p) => cx.settings.visibility_of(Path::new(p)),
        None => Visibility::Public,
    };
    let private = visibility.is_private();
    report.private = private;
    // Under a cloud model, nothing of a private PDF goes to the provider:
    // not its first pages for metadata, not its text for a summary, not its
    // figures for captions.
    let provider = cx.provider.filter(|_| !(private && cx.settings.provider_is_cloud));
    let has_pdf = !bytes.is_empty();
    // Change detection before any PDF or model work: same source and same
    // bytes is a no-op; changed bytes replace the old entry (no question) —
    // and so does an entry stored with the wrong visibility (a private
    // folder's PDF added public before this rule existed).
    let hash = content_hash(&bytes);
    let mut change = cx.kb.source_change(&source, &hash)?;
    if matches!(change, SourceChange::Unchanged) && private {
        let stored = cx.kb.find_document(&source)?;
        if !stored.visibility.is_private() {
            report.warnings.push(
                "it was stored public before; it is re-added private (it is in the vault's private folder)".into(),
            );
            change = SourceChange::Changed {
                stored_hash: Some(hash.clone()),
            };
        }
    }
    let changed = match change {
        SourceChange::Unchanged => {
            report.skipped = Some(format!(
                "{source} is unchanged since it was added (same bytes) — nothing to do"
            ));
            report.unchanged = true;
            report.source = source;
            return Ok(report);
        }
        SourceChange::Changed { .. } => true,
        SourceChange::New => false,
    };
    if private && req.mode == Mode::Summary && provider.is_none() && cx.provider.is_some() {
        return Err(AddError::PrivateNeedsLocalSummary(name));
    }
    // Explicit values always win over arXiv's and inferred ones.
    meta = PdfMetadata {
        title: req.explicit.title.clone().or(meta.title),
        authors: req.explicit.authors.clone().or(meta.authors),
        doi: req.explicit.doi.clone().or(meta.doi),
    };

    // 2. Annotations before the body: a scanned PDF still keeps them.
    (cx.progress)(Stage::Annotations);
    let annotations = match cx.pdf.annotations(&name, &bytes) {
        _ if !has_pdf => Vec::new(),
        Ok(a) => a,
        Err(e) => {
            report.warnings.push(format!("annotations: {e}"));
            Vec::new()
        }
    };
    check(cx.cancel)?;

    // 3. The text (needed for full text, metadata inference and non-upload summaries).
    (cx.progress)(Stage::Converting);
    let converted = match cx.pdf.convert(&name, &bytes) {
        _ if !has_pdf => None,
        Ok(c) => Some(c),
        Err(e) if e.no_text && !annotations.is_empty() => {
            report.warnings.push(format!(
                "{e}; the body could not be converted (a scanned PDF?), so only its annotations are added"
            ));
            None
        }
        Err(e) if e.no_text && req.mode == Mode::Summary && abstract_text.is_some() => {
            report
                .warnings
                .push(format!("{e}; summarising from the arXiv abstract"));
            None
        }
        Err(e) => return Err(AddError::Pdf(e)),
    };
    if let Some(c) = &converted {
        report.warnings.extend(ocr::warnings(c));
    }
    check(cx.cancel)?;

    // 4. Metadata for local PDFs: explicit values win; inference fills gaps.
    if matches!(req.input, Input::Local(_) | Input::Remote(Remote::Url(_))) && !meta.complete() {
        (cx.progress)(Stage::Metadata);
        let first_pages: String = converted
            .as_ref()
            .map(|c| c.page_texts.iter().take(2).cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        meta = metadata::resolve(&meta, || {
            metadata::infer(&first_pages, provider, &cx.settings.metadata_prompt, Some(cx.cancel))
        });
        check(cx.cancel)?;
    }
    // No usable title from the caller or the model: the title the layout
    // shows (the conversion's H1) beats the file name.
    let title = meta
        .title
        .clone()
        .or_else(|| converted.as_ref().and_then(|c| c.title.clone()))
        .unwrap_or_else(|| name.trim_end_matches(".pdf").to_string());
    let authors = meta.authors.clone().unwrap_or_default();

    // 5. Duplicates: same source → replace after confirmation; same title
    //    elsewhere → a separate entry after confirmation.
    let mut replace = None;
    let identity = Identity {
        doi: meta.doi.clone(),
        arxiv_id: extra.get("arxiv_id").and_then(|v| v.as_str()).map(str::to_string),
        pdf_hash: has_pdf.then(|| hash.clone()),
    };
    let same = if changed {
        None
    } else {
        find_same_paper(cx.kb, &source, &identity)?
    };
    if let Some(same) = same {
        let question = format!(
            "{:?} is already in the knowledge base as {} ({}). Replace it with this copy?",
            same.title, same.source, same.why
        );
        if !(cx.confirm)(&question) {
            check(cx.cancel)?;
            report.skipped = Some(format!(
                "it is already in the knowledge base as {} ({})",
                same.source, same.why
            ));
            report.source = source;
            report.title = title;
            return Ok(report);
        }
        replace = Some(ReplaceBy::Source(same.source));
        report.replaced = true;
    } else if changed {
        replace = Some(ReplaceBy::Source(source.clone()));
        report.replaced = true;
    } else if let Some(why) = cx.kb.paper_exists(&source, &title)? {
        let same_source = !cx
            .kb
            .store()
            .ids_by(crate::store::LookupField::Source, &source)
            .map_err(KbError::from)?
            .is_empty();
        let question = if same_source {
            format!("{why}. Replace it (body, annotations and figures)?")
        } else {
            format!("{why}. Add this one as a separate entry?")
        };
        if !(cx.confirm)(&question) {
            // A stop while the question was open is a stop, not a "no".
            check(cx.cancel)?;
            report.skipped = Some(why);
            report.source = source;
            report.title = title;
            return Ok(report);
        }
        if same_source {
            replace = Some(ReplaceBy::Source(source.clone()));
            report.replaced = true;
        }
    }

    // 6. The body.
    let mut docs: Vec<Document> = Vec::new();
    let header = paper_header(&title, &authors);
    let mut caller = Metadata::new();
    caller.insert("title".into(), json!(title));
    caller.insert("authors".into(), json!(authors));
    if let Some(d) = &meta.doi {
        caller.insert("doi".into(), json!(d));
    }
    for (k, v) in &extra {
        caller.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!(DocType::Paper.as_str()));
    own.insert("visibility".into(), json!(visibility.as_str()));
    if private {
        own.insert(PRIVATE_REASON_KEY.into(), json!(PRIVATE_FOLDER_REASON));
    }
    own.insert("source".into(), json!(source));
    if let Some(p) = &file_path {
        own.insert("file_path".into(), json!(p));
    }
    own.insert("content_hash".into(), json!(hash));
    // Annotations first, always: a scanned PDF (no text layer) in summary
    // mode keeps its highlights too; its body is skipped with the warning
    // step 3 gave, unless a provider reads the PDF itself.
    let reads_pdf_itself =
        matches!(req.input, Input::Local(_)) && provider.is_some_and(|p| p.provider_name() == "anthropic");
    let body_unavailable =
        converted.is_none() && abstract_text.is_none() && !annotations.is_empty() && !reads_pdf_itself;
    let body_text = match req.mode {
        _ if !has_pdf => Some(super::remote::abstract_body(
            &title,
            &authors,
            &extra,
            abstract_text.as_deref(),
        )),
        Mode::FullText => converted.as_ref().map(|c| c.markdown.clone()),
        Mode::Summary if body_unavailable => None,
        Mode::Summary => {
            let provider = provider.ok_or(AddError::NoProvider)?;
            (cx.progress)(Stage::Summarising);
            let src = match (&req.input, provider.provider_name(), &converted, &abstract_text) {
                // Anthropic reads the PDF itself (a private PDF never gets
                // here with a cloud provider: see `provider` above).
                (Input::Local(p), "anthropic", _, _) => SummarySource::Pdf(p.clone()),
                (_, _, Some(c), _) => SummarySource::Text(c.markdown.clone()),
                (_, _, None, Some(a)) => SummarySource::Text(a.clone()),
                (_, _, None, None) => return Err(AddError::Summary("the PDF has no text to summarise".into())),
            };
            let summary_prompt = cx.settings.summary_prompt.replace("{title}", &title);
            let summary = with_retries_cancellable(
                LLM_ATTEMPTS,
                cx.settings.llm_retry_backoff,
                ErrorKind::TRANSIENT,
                Some(cx.cancel),
                || provider.summarize(&summary_prompt, &src, 2000, Some(cx.cancel)),
            )
            .map_err(llm_err)?;
            Some(summary)
        }
    };
    check(cx.cancel)?;
    let mut body_caller = caller.clone();
    body_caller.insert(
        "storage_mode".into(),
        json!(if !has_pdf {
            "abstract"
        } else if req.mode == Mode::Summary {
            "summary"
        } else {
            "full_text"
        }),
    );
    if let Some(text) = body_text {
        let mut body = build_text_documents(&text, &body_caller, &own, &header, cx.kb.chunker_config())?;
        if let Some(c) = converted
            .as_ref()
            .filter(|_| !(req.mode == Mode::Summary && reads_pdf_itself))
        {
            ocr::mark(&mut body, c, req.mode == Mode::FullText);
        }
        report.body_chunks = body.len();
        docs.extend(body);
    }

    // 7. Annotation chunks, each its own searchable chunk.
    for a in &annotations {
        let mut m = caller.clone();
        m.insert(
            "annotation_kind".into(),
            json!(match a.kind {
                AnnotationKind::Highlight => "highlight",
                AnnotationKind::Comment => "comment",
            }),
        );
        m.insert("page".into(), json!(a.page));
        m.insert("note_text".into(), json!(a.note_text));
        docs.push(annotation_doc(a.chunk_text(), &header, m, &own));
        report.annotation_chunks += 1;
    }

    // 8. Figures, captioned only when enabled and never sent to a cloud
    //    model from a private document.
    if has_pdf && (req.figures || cx.settings.figure_captions) {
        match cx.provider {
            _ if private && cx.settings.provider_is_cloud => report
                .warnings
                .push("figures not captioned: a private document's images never go to a cloud model".into()),
            None => report
                .warnings
                .push("figures not captioned: no vision model is configured".into()),
            Some(provider) => {
                let figures = cx
                    .pdf
                    .figures(
                        &name,
                        &bytes,
                        cx.settings.figure_max_per_doc,
                        cx.settings.figure_min_pixels,
                    )
                    .unwrap_or_else(|e| {
                        report.warnings.push(format!("figures: {e}"));
                        Vec::new()
                    });
                for (i, f) in figures.iter().enumerate() {
                    check(cx.cancel)?;
                    (cx.progress)(Stage::Figures(i + 1));
                    let caption = with_retries_cancellable(
                        LLM_ATTEMPTS,
                        cx.settings.llm_retry_backoff,
                        ErrorKind::TRANSIENT,
                        Some(cx.cancel),
                        || provider.describe_image(&f.png, &title, Some(cx.cancel)),
                    );
                    match caption {
                        Ok(caption) => {
                            let mut m = caller.clone();
                            m.insert("annotation_kind".into(), json!("figure"));
                            m.insert("page".into(), json!(f.page));
                            m.insert("note_text".into(), json!(""));
                            docs.push(annotation_doc(
                                format!("[FIGURE p.{}] {}", f.page, caption.trim()),
                                &header,
                                m,
                                &own,
                            ));
                            report.figure_chunks += 1;
                        }
                        Err(CallError::Cancelled(_)) => return Err(AddError::Cancelled),
                        Err(e) => report.warnings.push(format!("figure on page {} skipped: {e}", f.page)),
                    }
                }
            }
        }
    }
    if docs.is_empty() {
        return Err(AddError::Pdf(PdfFailure {
            message: format!("{name}: nothing to add — no text, no annotations"),
            no_text: true,
        }));
    }

    // 9. Embed (stoppable), then the one commit (never stopped).
    (cx.progress)(Stage::Embedding(docs.len()));
    let prepared = cx.kb.prepare(docs, cx.cancel).map_err(|e| match e {
        KbError::Cancelled => AddError::Cancelled,
        other => other.into(),
    })?;
    check(cx.cancel)?;
    (cx.progress)(Stage::Committing);
    cx.kb.commit(prepared, replace.as_ref())?;
    report.source = source;
    report.title = title;
    report.authors = authors;
    report.doi = meta.doi;
    Ok(report)
}

fn annotation_doc(text: String, header: &str, mut meta: Metadata, own: &Metadata) -> Document {
    meta.entry("date_added".to_string())
        .or_insert_with(|| json!(crate::kb::stage::now_iso()));
    for (k, v) in own {
        meta.insert(k.clone(), v.clone());
    }
    let embed_text = crate::kb::chunker::compose_embed_text(header, "", &text);
    Document { text, embed_text, meta }
}

/// PDF work in this process. Used by the isolated worker itself and by
/// tests; real ingest goes through the app's child-process tools.
pub struct InProcessPdf {
    pub engine: &'static crate::pdf::PdfEngine,
}

fn failure(e: crate::pdf::PdfError) -> PdfFailure {
    let no_text = matches!(
        e,
        crate::pdf::PdfError::NoText { .. } | crate::pdf::PdfError::Garbled { .. }
    );
    PdfFailure {
        message: e.to_string(),
        no_text,
    }
}

impl PdfTools for InProcessPdf {
    fn convert(&self, name: &str, bytes: &[u8]) -> Result<Converted, PdfFailure> {
        crate::pdf::pdf_to_markdown(self.engine, name, bytes).map_err(failure)
    }
    fn annotations(&self, name: &str, bytes: &[u8]) -> Result<Vec<Annotation>, PdfFailure> {
        crate::pdf::extract_annotations(self.engine, name, bytes).map_err(failure)
    }
    fn figures(&self, name: &str, bytes: &[u8], max: usize, min_pixels: u64) -> Result<Vec<Figure>, PdfFailure> {
        crate::pdf::extract_figures(self.engine, name, bytes, max, min_pixels).map_err(failure)
    }
}

mod ocr;
#[cfg(test)]
mod tests;
