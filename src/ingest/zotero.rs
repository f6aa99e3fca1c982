//! Importing a reference library: Zotero's own database (read from a copy,
//! never the live file), or a BibTeX or CSL-JSON export of it.
//!
//! Owns: where the library is ([`locate`]: Zotero's data directory —
//! `~/Zotero` unless a path is given —, a `zotero.sqlite`, a `.bib`, a
//! `.json`), reading it into items ([`read`]: `db.rs` for the database,
//! `bibtex.rs` with `latex.rs`, `csl.rs`; `item.rs` maps Zotero's fields,
//! `attach.rs` finds attachments without leaving storage, `note.rs` turns
//! notes' HTML into text), and the import plan ([`import`]): every item
//! through the paper add flow in turn, one commit each, keyed by its
//! library source (`zotero://select/library/items/KEY`), so a re-run
//! adds nothing new and an item whose PDF or record changed is replaced;
//! a summary of what was imported, replaced, unchanged, skipped and why.
//! Must not: write into the library's folder (the database is copied to a
//! private temporary folder and opened read-only there; attachments are
//! only read); read an attachment outside Zotero's storage unless the
//! library links that file itself; replace a stored paper with less (an
//! item whose PDF went missing keeps what is stored); ask a question (the
//! caller's `confirm` answers duplicates for the whole run).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::paper::{add_document, AddContext, AddError, AddRequest, Input, LibraryItem, Mode};
use crate::store::LookupField;

mod attach;
mod bibtex;
mod csl;
mod db;
mod item;
mod latex;
mod note;

/// What kind of file the library was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Zotero's own database.
    ZoteroSqlite,
    Bibtex,
    CslJson,
}

impl Format {
    pub fn label(self) -> &'static str {
        match self {
            Format::ZoteroSqlite => "Zotero database",
            Format::Bibtex => "BibTeX",
            Format::CslJson => "CSL-JSON",
        }
    }
}

/// A library found on disk.
#[derive(Debug, Clone)]
pub struct Location {
    pub format: Format,
    /// `zotero.sqlite`, or the export file.
    pub file: PathBuf,
    /// Zotero's data directory (its `storage/` holds the attachments).
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZoteroError {
    #[error("no Zotero library at {} — give Zotero's data directory (Zotero: Settings → Advanced → Files and Folders → Data Directory Location), its zotero.sqlite, or a BibTeX (.bib) or CSL-JSON (.json) export", path.display())]
    NotFound { path: PathBuf },
    #[error("{} is neither Zotero's database nor a BibTeX or CSL-JSON export — give Zotero's data directory, its zotero.sqlite, a .bib or a .json file", path.display())]
    Unrecognised { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make a temporary copy of the Zotero database: {source} (the system's temporary folder must be writable and have room for it)")]
    Copy {
        #[source]
        source: std::io::Error,
    },
    #[error("{} kept changing while it was being copied (Zotero is writing to it) — wait for Zotero to finish syncing, or close Zotero, and run the import again", path.display())]
    Busy { path: PathBuf },
    #[error("cannot read the Zotero database {}: {message} — if Zotero was writing, close it and run the import again; if the file is damaged, export the library from Zotero (File → Export Library…, as BibTeX or CSL JSON) and import that file", path.display())]
    Database { path: PathBuf, message: String },
    #[error("{} is an SQLite database but not Zotero's (it has no {missing} table) — give the zotero.sqlite in Zotero's data directory", path.display())]
    NotZotero { path: PathBuf, missing: String },
    #[error("{} is not a CSL-JSON export: {message}", path.display())]
    Csl { path: PathBuf, message: String },
    /// The knowledge base failed, or a failure every item would share
    /// (no model for summaries); the items before it stay imported.
    #[error(transparent)]
    Add(#[from] AddError),
}

impl ZoteroError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            ZoteroError::NotFound { .. } => ErrorKind::NotFound,
            ZoteroError::Unrecognised { .. }
            | ZoteroError::Database { .. }
            | ZoteroError::NotZotero { .. }
            | ZoteroError::Csl { .. } => ErrorKind::User,
            ZoteroError::Read { source, .. } | ZoteroError::Copy { source } => crate::error_kind::io_kind(source),
            ZoteroError::Busy { .. } => ErrorKind::Unavailable,
            ZoteroError::Add(e) => e.kind(),
        }
    }
}

/// Where the library is: `path` as given (a directory holding
/// `zotero.sqlite`, the database itself, a `.bib`, a `.json`), or Zotero's
/// default data directory `~/Zotero`.
pub fn locate(path: Option<&Path>, user_home: Option<&Path>) -> Result<Location, ZoteroError> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => user_home
            .map(|h| h.join("Zotero"))
            .unwrap_or_else(|| PathBuf::from("Zotero")),
    };
    if path.is_dir() {
        let db = path.join("zotero.sqlite");
        if !db.is_file() {
            return Err(ZoteroError::NotFound { path });
        }
        return Ok(Location {
            format: Format::ZoteroSqlite,
            file: db,
            data_dir: Some(path),
        });
    }
    if !path.is_file() {
        return Err(ZoteroError::NotFound { path });
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let format = match ext.as_str() {
        "bib" | "bibtex" => Format::Bibtex,
        "json" => Format::CslJson,
        "sqlite" => Format::ZoteroSqlite,
        _ => sniff(&path)?,
    };
    let data_dir = (format == Format::ZoteroSqlite)
        .then(|| path.parent().map(Path::to_path_buf))
        .flatten();
    Ok(Location {
        format,
        file: path,
        data_dir,
    })
}

/// A file without a telling extension, by its first bytes.
fn sniff(path: &Path) -> Result<Format, ZoteroError> {
    use std::io::Read;
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|source| ZoteroError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let head = &head[..n];
    let text = String::from_utf8_lossy(head);
    let start = text.trim_start();
    if head.starts_with(b"SQLite format 3\0") {
        Ok(Format::ZoteroSqlite)
    } else if start.starts_with('[') || start.starts_with('{') {
        Ok(Format::CslJson)
    } else if start.starts_with('@') || start.starts_with('%') {
        Ok(Format::Bibtex)
    } else {
        Err(ZoteroError::Unrecognised {
            path: path.to_path_buf(),
        })
    }
}

/// One item ready for the add flow.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Zotero's item key, or the export's citation key or id.
    pub key: String,
    pub item: LibraryItem,
    /// Why the item's PDF is not used (missing, outside storage…).
    pub attachment_problem: Option<String>,
    pub warnings: Vec<String>,
}

/// An item not imported, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub key: String,
    pub title: String,
    pub reason: String,
}

/// A library as read: its items, and what was not read with the reason.
#[derive(Debug, Clone)]
pub struct Library {
    pub location: Location,
    pub entries: Vec<Entry>,
    pub skipped: Vec<Skipped>,
}

/// Reading options.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Zotero's base directory for linked files (`attachments:` paths).
    pub base_dir: Option<PathBuf>,
}

/// Read the whole library into memory (the database through a temporary
/// copy, removed before this returns).
pub fn read(loc: &Location, opts: &ReadOptions) -> Result<Library, ZoteroError> {
    let read_text = || {
        let bytes = std::fs::read(&loc.file).map_err(|source| ZoteroError::Read {
            path: loc.file.clone(),
            source,
        })?;
        Ok::<_, ZoteroError>(String::from_utf8_lossy(&bytes).into_owned())
    };
    // The stored source names the export by its full path.
    let file = std::fs::canonicalize(&loc.file).unwrap_or_else(|_| loc.file.clone());
    let (raw, mut skipped, resolver) = match loc.format {
        Format::ZoteroSqlite => {
            let (items, skipped) = db::read(&loc.file)?;
            let storage = loc.data_dir.as_ref().map(|d| d.join("storage"));
            let resolver = attach::Resolver {
                storage,
                base_dir: opts.base_dir.clone(),
                export_dir: None,
            };
            (items, skipped, resolver)
        }
        Format::Bibtex => {
            let (items, skipped) = bibtex::read(&read_text()?, &file);
            (items, skipped, export_resolver(&file, opts))
        }
        Format::CslJson => {
            let (items, skipped) = csl::read(&read_text()?, &file).map_err(|message| ZoteroError::Csl {
                path: loc.file.clone(),
                message,
            })?;
            (items, skipped, export_resolver(&file, opts))
        }
    };
    let mut entries = Vec::new();
    for r in raw {
        match item::to_entry(r, &resolver) {
            Ok(e) => entries.push(e),
            Err(s) => skipped.push(s),
        }
    }
    Ok(Library {
        location: loc.clone(),
        entries,
        skipped,
    })
}

fn export_resolver(file: &Path, opts: &ReadOptions) -> attach::Resolver {
    attach::Resolver {
        storage: None,
        base_dir: opts.base_dir.clone(),
        export_dir: file.parent().map(Path::to_path_buf),
    }
}

/// How the items are added.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Full text (the default for a library: no model call per paper) or
    /// an LLM summary per paper.
    pub mode: Mode,
    /// Caption figures with the vision model.
    pub figures: bool,
}

/// One item imported or replaced.
#[derive(Debug, Clone, Serialize)]
pub struct Imported {
    pub key: String,
    pub title: String,
    pub source: String,
    pub body_chunks: usize,
    /// Highlights, comments and notes.
    pub annotation_chunks: usize,
    /// With a PDF (else metadata and abstract only).
    pub with_pdf: bool,
    /// Stored private: its PDF is in one of the vault's private folders.
    /// Serialised as `visibility`, `public` or `private`, as every report
    /// writes it.
    #[serde(rename = "visibility", serialize_with = "super::paper::serialize_visibility")]
    pub private: bool,
}

/// Something the user should know about one item that still came in (or
/// was left as stored).
#[derive(Debug, Clone, Serialize)]
pub struct ItemWarning {
    pub key: String,
    pub warning: String,
}

/// What an import did; its JSON is `kb import-zotero --json` (pinned in
/// `cli/kb/tests.rs`).
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub library: PathBuf,
    pub format: Format,
    /// Items read from the library (imported, replaced, unchanged, skipped
    /// and failed add up to it).
    pub items: usize,
    pub imported: Vec<Imported>,
    pub replaced: Vec<Imported>,
    pub unchanged: usize,
    pub skipped: Vec<Skipped>,
    /// Items whose add failed (a PDF that does not convert…), with why.
    pub failed: Vec<Skipped>,
    pub warnings: Vec<ItemWarning>,
    /// Stopped before the end; everything imported so far stays.
    pub stopped: bool,
    /// Papers imported from this Zotero library earlier whose item is no
    /// longer in it (a whole-database import only: an export may hold a
    /// part). They stay in the knowledge base — deleting is the user's
    /// decision (`jarvis kb remove SOURCE`), never an import's.
    pub gone: Vec<Gone>,
}

/// A paper whose Zotero item was deleted since it was imported.
#[derive(Debug, Clone, Serialize)]
pub struct Gone {
    pub key: String,
    pub title: String,
    pub source: String,
}

/// Add every item of `library` through the paper add flow, one commit per
/// item. `progress(done, total, title)` before each item. A stop ends the
/// run between two items' steps (the item in progress adds nothing) with
/// `stopped` set; a knowledge-base failure ends it with the error.
pub fn import(
    cx: &AddContext<'_>,
    library: Library,
    opts: &ImportOptions,
    progress: &dyn Fn(usize, usize, &str),
) -> Result<ImportReport, ZoteroError> {
    let total = library.entries.len() + library.skipped.len();
    let mut report = ImportReport {
        library: library.location.file.clone(),
        format: library.location.format,
        items: total,
        imported: Vec::new(),
        replaced: Vec::new(),
        unchanged: 0,
        skipped: library.skipped,
        failed: Vec::new(),
        warnings: Vec::new(),
        stopped: false,
        gone: Vec::new(),
    };
    // The items this library holds now, by (library, key): what an earlier
    // import brought in and is not among them was deleted in Zotero.
    // Items read but skipped (in the trash, unreadable) are still there.
    let zotero = |m: &crate::store::Metadata| {
        let key = m.get("zotero_key")?.as_str()?.to_string();
        Some((m.get("zotero_library").and_then(|v| v.as_i64()), key))
    };
    let present: std::collections::BTreeSet<(Option<i64>, String)> =
        library.entries.iter().filter_map(|e| zotero(&e.item.fields)).collect();
    let still_there: std::collections::BTreeSet<String> = report.skipped.iter().map(|s| s.key.clone()).collect();
    let whole_db = library.location.format == Format::ZoteroSqlite;
    let first = report.skipped.len();
    for (n, entry) in library.entries.into_iter().enumerate() {
        let title = entry.item.title.clone().unwrap_or_else(|| entry.key.clone());
        progress(first + n, total, &title);
        if cx.cancel.is_cancelled() {
            report.stopped = true;
            break;
        }
        let key = entry.key.clone();
        let warn = |warning: &str| ItemWarning {
            key: key.clone(),
            warning: warning.to_string(),
        };
        report.warnings.extend(entry.warnings.iter().map(|w| warn(w)));
        if let Some(problem) = &entry.attachment_problem {
            // Never replace a stored paper with less than it has: a PDF
            // that went missing (or now leads outside storage) keeps the
            // stored entry as it is.
            let stored = !cx
                .kb
                .store()
                .ids_by(LookupField::Source, &entry.item.source)
                .map_err(|e| AddError::Kb(e.into()))?
                .is_empty();
            if stored {
                report.skipped.push(Skipped {
                    key,
                    title,
                    reason: format!("its PDF cannot be used now ({problem}); what is stored is kept"),
                });
                continue;
            }
            report
                .warnings
                .push(warn(&format!("imported without its PDF: {problem}")));
        }
        let with_pdf = entry.item.pdf.is_some();
        let req = AddRequest {
            input: Input::Library(Box::new(entry.item)),
            mode: opts.mode,
            explicit: Default::default(),
            figures: opts.figures,
        };
        match add_document(cx, &req) {
            Ok(r) => {
                report.warnings.extend(r.warnings.iter().map(|w| warn(w)));
                if r.unchanged {
                    report.unchanged += 1;
                } else if let Some(why) = r.skipped {
                    report.skipped.push(Skipped {
                        key,
                        title: r.title,
                        reason: why,
                    });
                } else {
                    let done = Imported {
                        key,
                        title: r.title,
                        source: r.source,
                        body_chunks: r.body_chunks,
                        annotation_chunks: r.annotation_chunks,
                        with_pdf,
                        private: r.private,
                    };
                    if r.replaced {
                        report.replaced.push(done);
                    } else {
                        report.imported.push(done);
                    }
                }
            }
            Err(AddError::Cancelled) => {
                report.stopped = true;
                break;
            }
            Err(_) if cx.cancel.is_cancelled() => {
                report.stopped = true;
                break;
            }
            // Shared by every item: stop here rather than fail them all.
            Err(e @ (AddError::Kb(_) | AddError::NoProvider)) => return Err(e.into()),
            Err(e) => report.failed.push(Skipped {
                key,
                title,
                reason: e.to_string(),
            }),
        }
    }
    if !report.stopped {
        progress(total, total, "");
        if whole_db && !present.is_empty() {
            report.gone = gone_from(cx, &present, &still_there)?;
        }
    }
    Ok(report)
}

/// Stored papers with a Zotero key of one of the libraries in `present`
/// that is not in it any more.
fn gone_from(
    cx: &AddContext<'_>,
    present: &std::collections::BTreeSet<(Option<i64>, String)>,
    still_there: &std::collections::BTreeSet<String>,
) -> Result<Vec<Gone>, ZoteroError> {
    let libraries: std::collections::BTreeSet<Option<i64>> = present.iter().map(|(l, _)| *l).collect();
    let filter = crate::index::Filter {
        doc_types: vec![crate::doc_type::DocType::Paper.as_str().into()],
        ..crate::index::Filter::default()
    };
    let docs = cx.kb.list_documents(&filter, usize::MAX).map_err(AddError::Kb)?;
    Ok(docs
        .into_iter()
        .filter_map(|d| {
            let key = d.meta.get("zotero_key")?.as_str()?.to_string();
            let library = d.meta.get("zotero_library").and_then(|v| v.as_i64());
            let gone = libraries.contains(&library)
                && !present.contains(&(library, key.clone()))
                && !still_there.contains(&key);
            gone.then_some(Gone {
                key,
                title: d.title,
                source: d.source,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests;
