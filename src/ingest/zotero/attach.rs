//! Where an attachment's file is, and whether it may be read.
//!
//! Owns the one rule for attachment paths: a file Zotero stored
//! (`storage:<name>`) is read only from `storage/<KEY>/` and only when the
//! path, after every link is followed, is still inside Zotero's `storage/`
//! folder; a path relative to Zotero's base directory or to an export's
//! folder likewise stays inside that folder; a linked file with an
//! absolute path is read where the library says (the user linked it).
//! Anything else is refused with a reason the summary shows.
//! Must not: read or write a file (it only resolves paths).

use std::path::{Component, Path, PathBuf};

/// An attachment's location as the library records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AttachmentAt {
    /// Zotero stored the file: `storage/<key>/<name>`.
    Stored { key: String, name: String },
    /// A linked file at an absolute path.
    Linked(String),
    /// A linked file relative to Zotero's base directory (`attachments:…`).
    BaseRelative(String),
    /// A path in an export file: absolute, or relative to the export's
    /// folder.
    Export(String),
    /// A web link, not a file.
    Web,
}

impl AttachmentAt {
    /// The file's name, for messages.
    pub fn name(&self) -> String {
        let p = match self {
            AttachmentAt::Stored { name, .. } => name.as_str(),
            AttachmentAt::Linked(p) | AttachmentAt::BaseRelative(p) | AttachmentAt::Export(p) => p.as_str(),
            AttachmentAt::Web => "",
        };
        p.rsplit(['/', '\\']).next().unwrap_or(p).to_string()
    }
}

/// The folders attachments may be read from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resolver {
    /// Zotero's `storage/` folder.
    pub storage: Option<PathBuf>,
    /// Zotero's base directory for linked files (`--base-dir`).
    pub base_dir: Option<PathBuf>,
    /// The folder of the export file.
    pub export_dir: Option<PathBuf>,
}

impl Resolver {
    /// The file to read, resolved (links followed), or why it is not read.
    pub fn resolve(&self, at: &AttachmentAt) -> Result<PathBuf, String> {
        match at {
            AttachmentAt::Stored { key, name } => {
                let storage = self
                    .storage
                    .as_deref()
                    .ok_or_else(|| "the library's storage folder is not known".to_string())?;
                // Zotero's keys are eight letters and digits; anything else
                // could name another folder.
                if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(format!("{key:?} is not a Zotero attachment key; the file was not read"));
                }
                if name.is_empty() {
                    return Err("the attachment records no file".into());
                }
                inside(storage, &format!("{key}/{name}"), "Zotero's storage folder")
            }
            AttachmentAt::BaseRelative(rel) => match &self.base_dir {
                Some(base) => inside(base, rel, "Zotero's base directory"),
                None => Err(format!(
                    "{rel} is linked relative to Zotero's base directory — pass --base-dir with that folder (Zotero: Settings → Advanced → Files and Folders)"
                )),
            },
            AttachmentAt::Linked(p) => linked(Path::new(p)),
            AttachmentAt::Export(p) if Path::new(p).is_absolute() => linked(Path::new(p)),
            AttachmentAt::Export(rel) => match &self.export_dir {
                Some(dir) => inside(dir, rel, "the export's folder"),
                None => Err(format!("{rel} is relative, and the export's folder is not known")),
            },
            AttachmentAt::Web => Err("the attachment is a web link, not a file".into()),
        }
    }
}

/// `root/rel`, only when `rel` names no parent folder, is not absolute, and
/// the resolved file is still under the resolved `root`.
fn inside(root: &Path, rel: &str, what: &str) -> Result<PathBuf, String> {
    let rel_path = Path::new(rel);
    let plain = rel_path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if rel.is_empty() || !plain {
        return Err(format!(
            "{rel:?} leads out of {what} (an absolute path or a parent folder); the file was not read"
        ));
    }
    let root = std::fs::canonicalize(root).map_err(|e| format!("cannot open {what} {}: {e}", root.display()))?;
    let joined = root.join(rel_path);
    let real = std::fs::canonicalize(&joined).map_err(|e| missing(&joined, &e))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "{} is a link that leads out of {what} (to {}); the file was not read",
            joined.display(),
            real.display()
        ));
    }
    a_file(real)
}

fn linked(p: &Path) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(p).map_err(|e| missing(p, &e))?;
    a_file(real)
}

fn a_file(p: PathBuf) -> Result<PathBuf, String> {
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!("{} is not a file", p.display()))
    }
}

fn missing(p: &Path, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        format!("{} is not on this machine (not synced or downloaded yet?)", p.display())
    } else {
        format!("cannot read {}: {e}", p.display())
    }
}
