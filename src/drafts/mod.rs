//! Drafts: the one folder tree the agent may write, with no door out.
//!
//! Owns: the drafts root (`$JARVIS_HOME/drafts/<id>/`, each with
//! `draft.json` and `.versions/`), the single containment policy
//! [`workspace::resolve_in_draft`] every read and write goes through, free
//! creation (a new draft, a new file), the human's own save (guarded by the
//! hash it was loaded at), agent changes as proposals applied hunk by hunk
//! ([`proposals`], [`hunks`]), snapshots and restore ([`versions`]),
//! retention (the one deletion in the codebase, by draft id only), Markdown
//! preview ([`render`]) and LaTeX / pandoc builds through the sandbox
//! ([`compile`]), with the bibliography of the keys a draft cites written
//! beside it ([`cite`]). Every write goes through [`disk`], which a test can
//! watch.
//! Must not: index anything (drafts never reach the knowledge base), write
//! outside the drafts root, delete anything but a whole draft chosen by id,
//! spawn a process except through `sandbox`, or know HTTP.

pub mod builds;
pub mod cite;
pub mod compile;
pub mod disk;
pub mod hunks;
pub mod proposals;
pub mod render;
pub mod retention;
pub mod versions;
pub mod workspace;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error_kind::ErrorKind;

pub use workspace::{resolve_in_draft, DraftFile, DraftMeta, Visibility, Workspace};

/// Extensions a draft may hold besides the configured text ones: images a
/// LaTeX document can include.
pub const IMAGE_EXTENSIONS: &[&str] = &[".png", ".jpg", ".jpeg", ".pdf"];

/// The drafts root and the pending proposals of this process, shared by
/// the chat tools (which propose) and the web routes (which review).
#[derive(Debug, Clone)]
pub struct DraftsHandle {
    pub workspace: Arc<Workspace>,
    pub proposals: Arc<proposals::Proposals>,
    /// The newest PDF built from each file, for the preview's pages.
    pub builds: Arc<builds::Builds>,
}

impl DraftsHandle {
    pub fn open(settings: DraftSettings) -> Result<Self, DraftsError> {
        let workspace = Workspace::open(settings)?;
        let builds = builds::Builds::with_disk(workspace.disk().clone());
        Ok(DraftsHandle {
            workspace: Arc::new(workspace),
            proposals: Arc::new(proposals::Proposals::new()),
            builds: Arc::new(builds),
        })
    }

    /// Record every later write of this drafts root (files, bookkeeping,
    /// snapshots, deletions, build directories, staged builds) in `log`.
    /// Returns whether it was attached (only the first log counts).
    pub fn record_writes(&self, log: disk::WriteLog) -> bool {
        self.workspace.disk().attach(log)
    }
}

/// What the drafts feature needs from the configuration.
#[derive(Debug, Clone)]
pub struct DraftSettings {
    pub root: PathBuf,
    /// Lower-case, with the dot (`.md`).
    pub extensions: Vec<String>,
    pub max_file_bytes: u64,
    pub retention_days: u32,
    /// The LaTeX build tool; empty disables compilation.
    pub latex_engine: String,
    /// The TeX engine: pandoc's `--pdf-engine` for Markdown → PDF, and
    /// latexmk's mode for `.tex` compiles (`xelatex` → `-xelatex`).
    pub pdf_engine: String,
    /// The body font of a Markdown export under xelatex or lualatex (a
    /// fontconfig family name); empty keeps pandoc's default.
    pub pdf_mainfont: String,
    pub compile_timeout: Duration,
    pub pdf_margin: String,
    /// The vault, if one is configured: the drafts root must not be inside
    /// it (a vault refresh would index the drafts).
    pub vault: Option<PathBuf>,
}

impl DraftSettings {
    /// Settings for a drafts root with the shipped defaults (tests, tools).
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        DraftSettings {
            root: root.into(),
            extensions: [".md", ".tex", ".bib", ".txt", ".csv", ".json", ".yaml"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            max_file_bytes: 2_000_000,
            retention_days: 30,
            latex_engine: "latexmk".into(),
            pdf_engine: "xelatex".into(),
            pdf_mainfont: "DejaVu Serif".into(),
            compile_timeout: Duration::from_secs(180),
            pdf_margin: "2cm".into(),
            vault: None,
        }
    }
}

/// An extension as the settings compare it: lower-case, with the dot.
pub fn normalise_ext(e: &str) -> String {
    let e = e.trim().to_lowercase();
    if e.starts_with('.') {
        e
    } else {
        format!(".{e}")
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DraftsError {
    /// A draft id that does not match the id pattern.
    #[error(
        "{id:?} is not a draft id (lower-case letters, digits and '-', at most 64) — pick one from the drafts list"
    )]
    BadId { id: String },
    /// A file name the containment policy refuses.
    #[error("{name:?} is not an allowed draft file name: {reason}")]
    BadName { name: String, reason: String },
    /// The name resolves outside its draft (a planted symlink).
    #[error("{name:?} in draft {id} resolves outside that draft (a symbolic link?) — refused; remove the link from the draft folder")]
    Escapes { id: String, name: String },
    /// No such draft.
    #[error("there is no draft {id} — see the drafts list")]
    NoDraft { id: String },
    /// No such file in the draft.
    #[error("draft {id} has no file {name:?} — add it first")]
    NoFile { id: String, name: String },
    /// The file already exists (creation never overwrites).
    #[error("draft {id} already has a file {name:?} — creating never overwrites; propose an edit to change it")]
    Exists { id: String, name: String },
    /// Content over the size cap.
    #[error("{name:?} would be {bytes} bytes, over the {max}-byte cap (`drafts.max_file_bytes`)")]
    TooLarge { name: String, bytes: u64, max: u64 },
    /// Not UTF-8 text where text is needed.
    #[error("{name:?} is not UTF-8 text")]
    NotText { name: String },
    /// The file changed since the caller read it.
    #[error("{name:?} changed since it was loaded (another tab or an outside edit) — reload it, then save again; nothing was written")]
    Moved { name: String },
    /// The proposal's base text is no longer the file's.
    #[error("the suggested change to {name:?} was made against an older version of the file — ask for a fresh proposal; nothing was written")]
    Stale { name: String },
    /// No pending proposal under that token.
    #[error("no pending suggestion with that token (already answered, discarded, or jarvis restarted) — nothing was written")]
    NoProposal,
    /// A proposal that changes nothing.
    #[error("the suggested text for {name:?} is identical to the file — nothing to review")]
    NoChange { name: String },
    /// A hunk index out of range or repeated.
    #[error("hunk {index} is not part of this suggestion (it has {count}) — nothing was written")]
    BadHunk { index: usize, count: usize },
    /// No such snapshot.
    #[error("draft {id} has no saved version {version:?} of {name:?}")]
    NoVersion { id: String, name: String, version: String },
    /// A build tool is not installed or is disabled.
    #[error("{tool} is not available ({detail}) — install it (`cargo xtask test` installs latexmk, TeX Live and pandoc on Debian) or set it in [drafts]")]
    ToolMissing { tool: String, detail: String },
    /// The file cannot be built (wrong type).
    #[error("{name:?} cannot be {doing}: {reason}")]
    CannotBuild {
        name: String,
        doing: &'static str,
        reason: String,
    },
    /// A child process could not be run.
    #[error("cannot run {tool}: {source}")]
    Sandbox {
        tool: String,
        #[source]
        source: crate::sandbox::SandboxError,
    },
    /// No held build under that id (rebuilt since, or jarvis restarted).
    #[error("no compiled PDF of {name:?} is held under that id (it was rebuilt since, or jarvis restarted) — compile it again")]
    NoBuild { name: String },
    /// A reveal in the file manager failed.
    #[error("cannot show {path} in the file manager: {detail}")]
    Reveal { path: String, detail: String },
    /// A filesystem operation failed.
    #[error("cannot {doing} {path}: {}", crate::error_kind::io_reason(source))]
    Io {
        doing: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The drafts root is inside the vault, so drafts would be indexed.
    #[error("the drafts folder {root} is inside the vault {vault}, so the vault's refresh would index drafts — set `drafts.dir` to a folder outside the vault (the default is $JARVIS_HOME/drafts)")]
    InsideVault { root: String, vault: String },
    /// `draft.json` is damaged.
    #[error("{path} is damaged ({detail}) — fix or remove that file")]
    BadMeta { path: String, detail: String },
}

impl DraftsError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            DraftsError::BadId { .. }
            | DraftsError::BadName { .. }
            | DraftsError::Escapes { .. }
            | DraftsError::TooLarge { .. }
            | DraftsError::NotText { .. }
            | DraftsError::NoChange { .. }
            | DraftsError::BadHunk { .. }
            | DraftsError::CannotBuild { .. }
            | DraftsError::InsideVault { .. } => ErrorKind::User,
            DraftsError::NoDraft { .. }
            | DraftsError::NoFile { .. }
            | DraftsError::NoVersion { .. }
            | DraftsError::NoBuild { .. } => ErrorKind::NotFound,
            DraftsError::Exists { .. }
            | DraftsError::Moved { .. }
            | DraftsError::Stale { .. }
            | DraftsError::NoProposal => ErrorKind::Conflict,
            DraftsError::ToolMissing { .. } | DraftsError::Reveal { .. } => ErrorKind::Unavailable,
            DraftsError::Sandbox { source, .. } => source.kind(),
            DraftsError::Io { source, .. } if crate::error_kind::is_disk_full(source) => ErrorKind::Unavailable,
            DraftsError::Io { .. } | DraftsError::BadMeta { .. } => ErrorKind::Internal,
        }
    }

    pub(crate) fn io(doing: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        DraftsError::Io {
            doing,
            path: path.display().to_string(),
            source,
        }
    }
}

/// Hex sha256 of some bytes: the version stamp saves and proposals carry.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[cfg(test)]
mod tests;
