//! The steps of [`super::add_document`], in the order it takes them: each
//! reads what the earlier ones found, adds its warnings to the report, and
//! says "stop here" through its return value rather than deciding the
//! flow itself.
//! Must not: write to the knowledge base anywhere but the last step,
//! [`embed_and_commit`].

use std::path::Path;

use serde_json::json;

use super::{
    check, llm_err, ocr, AddContext, AddError, AddReport, AddRequest, Entry, Fetched, Input, Mode, Paper, PdfFailure,
    Stage, LLM_ATTEMPTS,
};
use crate::doc_type::DocType;
use crate::ingest::arxiv::ArxivId;
use crate::ingest::doi::Remote;
use crate::ingest::identity::{find_same_paper, Identity};
use crate::ingest::metadata::{self, PdfMetadata};
use crate::ingest::remote::{self, RemoteError};
use crate::ingest::web::WebError;
use crate::kb::change::{content_hash, SourceChange};
use crate::kb::ops::paper_header;
use crate::kb::stage::{build_text_documents, Document};
use crate::kb::{KbError, ReplaceBy};
use crate::llm::retry::with_retries_cancellable;
use crate::llm::{CallError, ChatProvider, ErrorKind, SummarySource};
use crate::pdf::{Annotation, AnnotationKind, Converted, Figure};
use crate::store::Metadata;
use crate::visibility::{Visibility, PRIVATE_FOLDER_REASON, PRIVATE_REASON_KEY};

/// The PDF and what we know about it before reading it.
pub(super) fn fetch(cx: &AddContext<'_>, req: &AddRequest, report: &mut AddReport) -> Result<Fetched, AddError> {
    match &req.input {
        Input::Local(path) => read_local(path),
        Input::Arxiv(id) => download_arxiv(cx, id),
        Input::Remote(r) => fetch_remote(cx, r, report),
        Input::Library(item) => item.fetched(),
    }
}

/// A local file, resolved (so the same PDF reached by two paths is one
/// source) and checked to be a PDF before anything reads it further.
fn read_local(path: &Path) -> Result<Fetched, AddError> {
    let abs = std::fs::canonicalize(path).map_err(|source| AddError::Read {
        path: path.to_path_buf(),
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
    Ok(Fetched {
        name,
        bytes,
        source: format!("file://{}", abs.display()),
        file_path: Some(abs.display().to_string()),
        meta: PdfMetadata::default(),
        extra: Metadata::new(),
        abstract_text: None,
        fingerprint: None,
    })
}

/// arXiv's record (title, authors, DOI, abstract and the fields beyond
/// them), then the PDF itself.
fn download_arxiv(cx: &AddContext<'_>, id: &ArxivId) -> Result<Fetched, AddError> {
    (cx.progress)(Stage::Downloading);
    let paper = cx.arxiv.fetch_metadata(id)?;
    check(cx.cancel)?;
    let bytes = cx.arxiv.download_pdf(id)?;
    let meta = PdfMetadata {
        title: Some(paper.title.clone()).filter(|t| !t.is_empty()),
        authors: Some(paper.authors.join(", ")).filter(|a| !a.is_empty()),
        doi: paper.doi.clone(),
    };
    let mut extra = Metadata::new();
    remote::arxiv_fields(&paper, &mut extra);
    Ok(Fetched {
        name: format!("arXiv:{}", id.versioned()),
        bytes,
        source: id.abs_url(),
        file_path: None,
        meta,
        extra,
        abstract_text: Some(paper.summary),
        fingerprint: None,
    })
}

/// A DOI's or web address's record and, when one is open, its PDF. With
/// no PDF (none open, none served) the body is empty and the abstract
/// becomes the entry.
fn fetch_remote(cx: &AddContext<'_>, r: &Remote, report: &mut AddReport) -> Result<Fetched, AddError> {
    let sources = cx.remote.ok_or(AddError::NoRemote)?;
    (cx.progress)(Stage::Downloading);
    let found = sources.fetch(cx.arxiv, r, cx.cancel).map_err(|e| match e {
        RemoteError::Web(WebError::Cancelled) => AddError::Cancelled,
        e => e.into(),
    })?;
    report.warnings.extend(found.warnings.iter().cloned());
    let mut extra = Metadata::new();
    let (meta, abstract_text) = found.record(&mut extra);
    Ok(Fetched {
        name: found.name,
        bytes: found.pdf.unwrap_or_default(),
        source: found.source,
        file_path: None,
        meta,
        extra,
        abstract_text,
        fingerprint: None,
    })
}

/// Where the paper belongs (private inside one of the vault's private
/// folders), which provider may see it, and its content hash. Under a
/// cloud model nothing of a private PDF goes to the provider: not its
/// first pages for metadata, not its text for a summary, not its figures
/// for captions.
pub(super) fn classify<'a>(cx: &AddContext<'a>, fetched: Fetched, report: &mut AddReport) -> Paper<'a> {
    let Fetched {
        name,
        bytes,
        source,
        file_path,
        meta,
        extra,
        abstract_text,
        fingerprint,
    } = fetched;
    let visibility = match &file_path {
        Some(p) => cx.settings.visibility_of(Path::new(p)),
        None => Visibility::Public,
    };
    let private = visibility.is_private();
    report.private = private;
    let provider = cx.provider.filter(|_| !(private && cx.settings.provider_is_cloud));
    let hash = content_hash(&bytes);
    Paper {
        name,
        bytes,
        source,
        file_path,
        meta,
        extra,
        abstract_text,
        visibility,
        provider,
        hash,
        fingerprint,
    }
}

/// Change detection before any PDF or model work: same source and same
/// bytes is a no-op (the report then says why nothing was added); changed
/// bytes replace the old entry (no question) — and so does an entry stored
/// with the wrong visibility (a private folder's PDF added public before
/// this rule existed). A library item also compares its fingerprint, so a
/// new note or tag replaces it while the PDF stays the same.
pub(super) fn detect_change(
    cx: &AddContext<'_>,
    paper: &Paper<'_>,
    report: &mut AddReport,
) -> Result<SourceChange, AddError> {
    let mut change = match &paper.fingerprint {
        Some(f) => cx
            .kb
            .source_change_with(&paper.source, &paper.hash, (super::library::FINGERPRINT_KEY, f))?,
        None => cx.kb.source_change(&paper.source, &paper.hash)?,
    };
    if matches!(change, SourceChange::Unchanged) && paper.private() {
        let stored = cx.kb.find_document(&paper.source)?;
        if !stored.visibility.is_private() {
            report.warnings.push(
                "it was stored public before; it is re-added private (it is in the vault's private folder)".into(),
            );
            change = SourceChange::Changed {
                stored_hash: Some(paper.hash.clone()),
            };
        }
    }
    if matches!(change, SourceChange::Unchanged) {
        report.skipped = Some(format!(
            "{} is unchanged since it was added (same bytes) — nothing to do",
            paper.source
        ));
        report.unchanged = true;
        report.source = paper.source.clone();
    }
    Ok(change)
}

/// A summary was asked for, a provider is configured, but it may not read
/// this private paper: refuse with the way out rather than add it without
/// the summary.
pub(super) fn refuse_cloud_summary(cx: &AddContext<'_>, req: &AddRequest, paper: &Paper<'_>) -> Result<(), AddError> {
    if paper.private() && req.mode == Mode::Summary && paper.provider.is_none() && cx.provider.is_some() {
        return Err(AddError::PrivateNeedsLocalSummary(paper.name.clone()));
    }
    Ok(())
}

/// Explicit values (`--title/--authors/--doi`) always win over arXiv's and
/// inferred ones.
pub(super) fn prefer_explicit(explicit: &PdfMetadata, found: PdfMetadata) -> PdfMetadata {
    PdfMetadata {
        title: explicit.title.clone().or(found.title),
        authors: explicit.authors.clone().or(found.authors),
        doi: explicit.doi.clone().or(found.doi),
    }
}

/// Annotations before the body: a scanned PDF still keeps them. A failure
/// here is a warning, not a reason to stop.
pub(super) fn read_annotations(cx: &AddContext<'_>, paper: &Paper<'_>, report: &mut AddReport) -> Vec<Annotation> {
    (cx.progress)(Stage::Annotations);
    // Without a PDF (a DOI added as metadata and abstract) there is nothing
    // to send to the PDF worker.
    if !paper.has_pdf() {
        return Vec::new();
    }
    match cx.pdf.annotations(&paper.name, &paper.bytes) {
        Ok(a) => a,
        Err(e) => {
            report.warnings.push(format!("annotations: {e}"));
            Vec::new()
        }
    }
}

/// The text, needed for full text, metadata inference and summaries the
/// provider does not read from the PDF itself. A PDF without a text layer
/// is still added when its annotations or an abstract can stand in.
pub(super) fn convert(
    cx: &AddContext<'_>,
    req: &AddRequest,
    paper: &Paper<'_>,
    annotations: &[Annotation],
    report: &mut AddReport,
) -> Result<Option<Converted>, AddError> {
    (cx.progress)(Stage::Converting);
    if !paper.has_pdf() {
        return Ok(None);
    }
    let converted = match cx.pdf.convert(&paper.name, &paper.bytes) {
        Ok(c) => Some(c),
        Err(e) if e.no_text && !annotations.is_empty() => {
            report.warnings.push(format!(
                "{e}; the body could not be converted (a scanned PDF?), so only its annotations are added"
            ));
            None
        }
        Err(e) if e.no_text && req.mode == Mode::Summary && paper.abstract_text.is_some() => {
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
    Ok(converted)
}

/// Metadata for local PDFs and bare PDF links: explicit values win; the
/// model, reading the first two pages, fills the gaps.
pub(super) fn infer_metadata(
    cx: &AddContext<'_>,
    req: &AddRequest,
    paper: &mut Paper<'_>,
    converted: Option<&Converted>,
) -> Result<(), AddError> {
    if matches!(req.input, Input::Local(_) | Input::Remote(Remote::Url(_))) && !paper.meta.complete() {
        (cx.progress)(Stage::Metadata);
        let first_pages: String = converted
            .map(|c| c.page_texts.iter().take(2).cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        let provider = paper.provider;
        paper.meta = metadata::resolve(&paper.meta, || {
            metadata::infer(&first_pages, provider, &cx.settings.metadata_prompt, Some(cx.cancel))
        });
        check(cx.cancel)?;
    }
    Ok(())
}

/// The entry's title and authors, and the metadata every chunk carries.
/// With no usable title from the caller or the model, the title the layout
/// shows (the conversion's H1) beats the file name.
pub(super) fn describe(paper: &Paper<'_>, converted: Option<&Converted>) -> Entry {
    let title = paper
        .meta
        .title
        .clone()
        .or_else(|| converted.and_then(|c| c.title.clone()))
        .unwrap_or_else(|| paper.name.trim_end_matches(".pdf").to_string());
    let authors = paper.meta.authors.clone().unwrap_or_default();
    let header = paper_header(&title, &authors);
    let mut caller = Metadata::new();
    caller.insert("title".into(), json!(title));
    caller.insert("authors".into(), json!(authors));
    if let Some(d) = &paper.meta.doi {
        caller.insert("doi".into(), json!(d));
    }
    for (k, v) in &paper.extra {
        caller.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!(DocType::Paper.as_str()));
    own.insert("visibility".into(), json!(paper.visibility.as_str()));
    if paper.private() {
        own.insert(PRIVATE_REASON_KEY.into(), json!(PRIVATE_FOLDER_REASON));
    }
    own.insert("source".into(), json!(paper.source));
    if let Some(p) = &paper.file_path {
        own.insert("file_path".into(), json!(p));
    }
    own.insert("content_hash".into(), json!(paper.hash));
    if let Some(f) = &paper.fingerprint {
        own.insert(super::library::FINGERPRINT_KEY.into(), json!(f));
    }
    Entry {
        title,
        authors,
        header,
        caller,
        own,
    }
}

/// What to do about a copy already in the knowledge base.
pub(super) enum Duplicates {
    /// Add, replacing this entry in the same commit (when there is one).
    Add { replace: Option<ReplaceBy> },
    /// The user said no; the report says why nothing was added.
    Declined,
}

/// Duplicates: the same paper by another route (DOI, arXiv id without
/// version, PDF bytes) or the same source → replace after confirmation;
/// changed bytes → replace without asking; the same title elsewhere → a
/// separate entry after confirmation.
pub(super) fn settle_duplicates(
    cx: &AddContext<'_>,
    paper: &Paper<'_>,
    changed: bool,
    title: &str,
    report: &mut AddReport,
) -> Result<Duplicates, AddError> {
    let identity = Identity {
        doi: paper.meta.doi.clone(),
        arxiv_id: paper.extra.get("arxiv_id").and_then(|v| v.as_str()).map(str::to_string),
        pdf_hash: paper.has_pdf().then(|| paper.hash.clone()),
    };
    let same = if changed {
        None
    } else {
        find_same_paper(cx.kb, &paper.source, &identity)?
    };
    let declined = |report: &mut AddReport, why: String| {
        report.skipped = Some(why);
        report.source = paper.source.clone();
        report.title = title.to_string();
        Duplicates::Declined
    };
    if let Some(same) = same {
        let question = format!(
            "{:?} is already in the knowledge base as {} ({}). Replace it with this copy?",
            same.title, same.source, same.why
        );
        if !(cx.confirm)(&question) {
            check(cx.cancel)?;
            let why = format!("it is already in the knowledge base as {} ({})", same.source, same.why);
            return Ok(declined(report, why));
        }
        report.replaced = true;
        return Ok(Duplicates::Add {
            replace: Some(ReplaceBy::Source(same.source)),
        });
    }
    if changed {
        report.replaced = true;
        return Ok(Duplicates::Add {
            replace: Some(ReplaceBy::Source(paper.source.clone())),
        });
    }
    let Some(why) = cx.kb.paper_exists(&paper.source, title)? else {
        return Ok(Duplicates::Add { replace: None });
    };
    let same_source = !cx
        .kb
        .store()
        .ids_by(crate::store::LookupField::Source, &paper.source)
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
        return Ok(declined(report, why));
    }
    if same_source {
        report.replaced = true;
        return Ok(Duplicates::Add {
            replace: Some(ReplaceBy::Source(paper.source.clone())),
        });
    }
    Ok(Duplicates::Add { replace: None })
}

/// Anthropic reads a local PDF itself, so its summary needs no converted
/// text (a private PDF never gets here with a cloud provider: see
/// [`classify`]).
fn reads_pdf_itself(req: &AddRequest, paper: &Paper<'_>) -> bool {
    matches!(req.input, Input::Local(_)) && paper.provider.is_some_and(|p| p.provider_name() == "anthropic")
}

/// The body's text: the abstract when there is no PDF, the converted text
/// for full text, else the model's summary. A scanned PDF (no text layer)
/// in summary mode has none — its annotations are added with the warning
/// [`convert`] gave — unless the provider reads the PDF itself.
pub(super) fn write_body(
    cx: &AddContext<'_>,
    req: &AddRequest,
    paper: &Paper<'_>,
    converted: Option<&Converted>,
    annotations: &[Annotation],
    entry: &Entry,
) -> Result<Option<String>, AddError> {
    let body_unavailable = converted.is_none()
        && paper.abstract_text.is_none()
        && !annotations.is_empty()
        && !reads_pdf_itself(req, paper);
    Ok(match req.mode {
        _ if !paper.has_pdf() => Some(remote::abstract_body(
            &entry.title,
            &entry.authors,
            &paper.extra,
            paper.abstract_text.as_deref(),
        )),
        Mode::FullText => converted.map(|c| c.markdown.clone()),
        Mode::Summary if body_unavailable => None,
        Mode::Summary => Some(summarise(cx, req, paper, converted, &entry.title)?),
    })
}

/// The ~1000-word summary, retried on transient failures.
fn summarise(
    cx: &AddContext<'_>,
    req: &AddRequest,
    paper: &Paper<'_>,
    converted: Option<&Converted>,
    title: &str,
) -> Result<String, AddError> {
    let provider = paper.provider.ok_or(AddError::NoProvider)?;
    (cx.progress)(Stage::Summarising);
    let src = match (&req.input, provider.provider_name(), converted, &paper.abstract_text) {
        (Input::Local(p), "anthropic", _, _) => SummarySource::Pdf(p.clone()),
        (_, _, Some(c), _) => SummarySource::Text(c.markdown.clone()),
        (_, _, None, Some(a)) => SummarySource::Text(a.clone()),
        (_, _, None, None) => return Err(AddError::Summary("the PDF has no text to summarise".into())),
    };
    let summary_prompt = cx.settings.summary_prompt.replace("{title}", title);
    with_retries_cancellable(
        LLM_ATTEMPTS,
        cx.settings.llm_retry_backoff,
        ErrorKind::TRANSIENT,
        Some(cx.cancel),
        || provider.summarize(&summary_prompt, &src, 2000, Some(cx.cancel)),
    )
    .map_err(llm_err)
}

/// The body cut into chunks, marked with what OCR read (unless the
/// provider summarised the PDF itself, so no converted text went in).
pub(super) fn body_chunks(
    cx: &AddContext<'_>,
    req: &AddRequest,
    paper: &Paper<'_>,
    text: Option<String>,
    converted: Option<&Converted>,
    entry: &Entry,
    report: &mut AddReport,
) -> Result<Vec<Document>, AddError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let mut body_caller = entry.caller.clone();
    body_caller.insert(
        "storage_mode".into(),
        json!(if !paper.has_pdf() {
            "abstract"
        } else if req.mode == Mode::Summary {
            "summary"
        } else {
            "full_text"
        }),
    );
    let mut body = build_text_documents(&text, &body_caller, &entry.own, &entry.header, cx.kb.chunker_config())?;
    if let Some(c) = converted.filter(|_| !(req.mode == Mode::Summary && reads_pdf_itself(req, paper))) {
        ocr::mark(&mut body, c, req.mode == Mode::FullText);
    }
    report.body_chunks = body.len();
    Ok(body)
}

/// Each annotation its own searchable chunk.
pub(super) fn annotation_chunks(annotations: &[Annotation], entry: &Entry, report: &mut AddReport) -> Vec<Document> {
    let mut docs = Vec::new();
    for a in annotations {
        let mut m = entry.caller.clone();
        m.insert(
            "annotation_kind".into(),
            json!(match a.kind {
                AnnotationKind::Highlight => "highlight",
                AnnotationKind::Comment => "comment",
            }),
        );
        m.insert("page".into(), json!(a.page));
        m.insert("note_text".into(), json!(a.note_text));
        if !a.rects.is_empty() {
            // Where the viewer outlines it on the page picture.
            m.insert("rects".into(), json!(crate::pdf::rects_to_meta(&a.rects)));
        }
        docs.push(annotation_doc(a.chunk_text(), &entry.header, m, &entry.own));
        report.annotation_chunks += 1;
    }
    docs
}

/// Figures, captioned only when enabled and never sent to a cloud model
/// from a private document. A figure the model could not caption is
/// skipped with a warning; a stop ends the whole add.
pub(super) fn figure_chunks(
    cx: &AddContext<'_>,
    req: &AddRequest,
    paper: &Paper<'_>,
    entry: &Entry,
    report: &mut AddReport,
) -> Result<Vec<Document>, AddError> {
    if !(paper.has_pdf() && (req.figures || cx.settings.figure_captions)) {
        return Ok(Vec::new());
    }
    let provider = match cx.provider {
        _ if paper.private() && cx.settings.provider_is_cloud => {
            report
                .warnings
                .push("figures not captioned: a private document's images never go to a cloud model".into());
            return Ok(Vec::new());
        }
        None => {
            report
                .warnings
                .push("figures not captioned: no vision model is configured".into());
            return Ok(Vec::new());
        }
        Some(provider) => provider,
    };
    let figures = cx
        .pdf
        .figures(
            &paper.name,
            &paper.bytes,
            cx.settings.figure_max_per_doc,
            cx.settings.figure_min_pixels,
        )
        .unwrap_or_else(|e| {
            report.warnings.push(format!("figures: {e}"));
            Vec::new()
        });
    let mut docs = Vec::new();
    for (i, f) in figures.iter().enumerate() {
        check(cx.cancel)?;
        (cx.progress)(Stage::Figures(i + 1));
        match caption(cx, provider, f, &entry.title) {
            Ok(caption) => {
                docs.push(figure_doc(f, &caption, entry));
                report.figure_chunks += 1;
            }
            Err(CallError::Cancelled(_)) => return Err(AddError::Cancelled),
            Err(e) => report.warnings.push(format!("figure on page {} skipped: {e}", f.page)),
        }
    }
    Ok(docs)
}

/// One figure described by the model, retried on transient failures.
fn caption(cx: &AddContext<'_>, provider: &dyn ChatProvider, f: &Figure, title: &str) -> Result<String, CallError> {
    with_retries_cancellable(
        LLM_ATTEMPTS,
        cx.settings.llm_retry_backoff,
        ErrorKind::TRANSIENT,
        Some(cx.cancel),
        || provider.describe_image(&f.png, title, Some(cx.cancel)),
    )
}

fn figure_doc(f: &Figure, caption: &str, entry: &Entry) -> Document {
    let mut m = entry.caller.clone();
    m.insert("annotation_kind".into(), json!("figure"));
    m.insert("page".into(), json!(f.page));
    m.insert("note_text".into(), json!(""));
    annotation_doc(
        format!("[FIGURE p.{}] {}", f.page, caption.trim()),
        &entry.header,
        m,
        &entry.own,
    )
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

/// No body, no annotations, no figures: there is nothing to add, and
/// saying so beats an empty entry.
pub(super) fn refuse_empty(docs: &[Document], name: &str) -> Result<(), AddError> {
    if docs.is_empty() {
        return Err(AddError::Pdf(PdfFailure {
            message: format!("{name}: nothing to add — no text, no annotations"),
            no_text: true,
        }));
    }
    Ok(())
}

/// Embed (stoppable), then the one commit (never stopped): nothing was
/// written before this, so a failure or a stop up to here leaves the
/// knowledge base as it was.
pub(super) fn embed_and_commit(
    cx: &AddContext<'_>,
    docs: Vec<Document>,
    replace: Option<&ReplaceBy>,
) -> Result<(), AddError> {
    (cx.progress)(Stage::Embedding(docs.len()));
    let prepared = cx.kb.prepare(docs, cx.cancel).map_err(|e| match e {
        KbError::Cancelled => AddError::Cancelled,
        other => other.into(),
    })?;
    check(cx.cancel)?;
    (cx.progress)(Stage::Committing);
    cx.kb.commit(prepared, replace, cx.actor)?;
    Ok(())
}
