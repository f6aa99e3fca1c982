//! Adding a paper — a local PDF, an arXiv id, a DOI, a bioRxiv/medRxiv page,
//! a PDF's web address, or an item of a Zotero library (`library.rs`) — as
//! one staged, atomic commit: annotations first
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
//! [`add_document`] reads as the list of its steps; each step is a
//! function in `steps`.
//! Must not: run PDFium in this process for real ingest — PDF work goes
//! through a [`PdfTools`] the caller provides (the app's isolated child
//! process); nor write anything before the final commit.

use std::path::{Path, PathBuf};

use self::steps::Duplicates;
use super::arxiv::{ArxivClient, ArxivError, ArxivId};
use super::doi::Remote;
use super::metadata::PdfMetadata;
use super::remote::{RemoteError, RemoteSources};
use crate::cancel::Cancel;
use crate::kb::change::SourceChange;
use crate::kb::{Kb, KbError};
use crate::llm::{CallError, ChatProvider};
use crate::pdf::{Annotation, Converted, Figure};
use crate::store::Metadata;
use crate::visibility::Visibility;
pub use library::LibraryItem;

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
    /// An item of a reference library (Zotero), its metadata known.
    Library(Box<LibraryItem>),
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

    /// How a person names it: the path, the arXiv page, the DOI or web
    /// address, the library item's source.
    pub fn label(&self) -> String {
        match self {
            Input::Local(p) => p.display().to_string(),
            Input::Arxiv(id) => id.abs_url(),
            Input::Remote(r) => r.label(),
            Input::Library(item) => item.source.clone(),
        }
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
/// `cli/kb/tests.rs`).
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

pub(crate) fn serialize_visibility<S: serde::Serializer>(private: &bool, s: S) -> Result<S::Ok, S::Error> {
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
    /// Who adds: the paper's event names them.
    pub actor: &'a crate::kb::Actor,
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

/// What the first step found: the PDF (empty when none could be found)
/// and what is known about it before reading it.
struct Fetched {
    /// The name messages use: the file name, or `arXiv:<id>v<n>`.
    name: String,
    bytes: Vec<u8>,
    /// Stored as the entry's `source`: `file://…`, the abstract page, …
    source: String,
    /// A local PDF's resolved path.
    file_path: Option<String>,
    /// Title, authors and DOI known so far.
    meta: PdfMetadata,
    /// Bibliographic fields beyond title/authors/DOI (year, venue, arXiv id…).
    extra: Metadata,
    /// arXiv's or the DOI record's abstract.
    abstract_text: Option<String>,
    /// A library item's [`LibraryItem::fingerprint`]: compared with the
    /// stored one as well as the PDF's hash.
    fingerprint: Option<String>,
}

/// The paper as it goes through the steps: what was fetched, where it
/// belongs, and who may read it.
struct Paper<'a> {
    name: String,
    bytes: Vec<u8>,
    source: String,
    file_path: Option<String>,
    /// Explicit values first, then the source's, then the model's guesses.
    meta: PdfMetadata,
    extra: Metadata,
    abstract_text: Option<String>,
    visibility: Visibility,
    /// The provider this paper may be shown to: none for a private paper
    /// under a cloud model.
    provider: Option<&'a dyn ChatProvider>,
    /// The PDF's content hash: change detection and the paper's identity.
    hash: String,
    fingerprint: Option<String>,
}

impl Paper<'_> {
    fn has_pdf(&self) -> bool {
        !self.bytes.is_empty()
    }

    fn private(&self) -> bool {
        self.visibility.is_private()
    }
}

/// What every chunk of the entry carries.
struct Entry {
    title: String,
    authors: String,
    /// The title-and-authors line each chunk is embedded under.
    header: String,
    /// Bibliographic fields (title, authors, DOI and the extra ones).
    caller: Metadata,
    /// The entry's own fields (doc_type, visibility, source, hash), which
    /// win over anything a chunk sets.
    own: Metadata,
}

/// Add one paper. Nothing is written until the single commit at the end,
/// so an error or a stop at any earlier step leaves the knowledge base as
/// it was.
pub fn add_document(cx: &AddContext<'_>, req: &AddRequest) -> Result<AddReport, AddError> {
    let mut report = AddReport::default();
    let fetched = steps::fetch(cx, req, &mut report)?;
    check(cx.cancel)?;
    let mut paper = steps::classify(cx, fetched, &mut report);
    let changed = match steps::detect_change(cx, &paper, &mut report)? {
        SourceChange::Unchanged => return Ok(report),
        SourceChange::Changed { .. } => true,
        SourceChange::New => false,
    };
    steps::refuse_cloud_summary(cx, req, &paper)?;
    paper.meta = steps::prefer_explicit(&req.explicit, paper.meta);

    let mut annotations = steps::read_annotations(cx, &paper, &mut report);
    if let Input::Library(item) = &req.input {
        item.merge_annotations(&mut annotations);
    }
    check(cx.cancel)?;
    let converted = steps::convert(cx, req, &paper, &annotations, &mut report)?;
    check(cx.cancel)?;
    steps::infer_metadata(cx, req, &mut paper, converted.as_ref())?;
    let entry = steps::describe(&paper, converted.as_ref());

    let replace = match steps::settle_duplicates(cx, &paper, changed, &entry.title, &mut report)? {
        Duplicates::Add { replace } => replace,
        Duplicates::Declined => return Ok(report),
    };

    let body = steps::write_body(cx, req, &paper, converted.as_ref(), &annotations, &entry)?;
    check(cx.cancel)?;
    let mut docs = steps::body_chunks(cx, req, &paper, body, converted.as_ref(), &entry, &mut report)?;
    docs.extend(steps::annotation_chunks(&annotations, &entry, &mut report));
    if let Input::Library(item) = &req.input {
        docs.extend(item.note_chunks(cx, &entry, &mut report)?);
    }
    docs.extend(steps::figure_chunks(cx, req, &paper, &entry, &mut report)?);
    steps::refuse_empty(&docs, &paper.name)?;

    steps::embed_and_commit(cx, docs, replace.as_ref())?;
    report.source = paper.source;
    report.title = entry.title;
    report.authors = entry.authors;
    report.doi = paper.meta.doi;
    Ok(report)
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

pub mod library;
mod ocr;
mod steps;
#[cfg(test)]
mod tests;
