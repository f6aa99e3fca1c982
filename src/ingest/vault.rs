//! The Obsidian vault: the one visibility policy, and incremental sync.
//!
//! Owns: [`get_visibility`] (a note is private when the first component of
//! its *resolved* path under the vault root is a private folder), walking
//! the vault, indexing one note ([`index_vault_file`]), and
//! [`refresh_vault`]: add new notes, re-index changed ones (content hash,
//! with mtime + size as the cheap pre-check), remove deleted ones,
//! re-classify unchanged ones metadata-only, and migrate notes indexed under
//! an older frontmatter mapping; and [`refresh_vault_paths`], the same
//! decisions for only the paths a watcher reported (`vault/scoped.rs`).
//! Must not: write or delete any file in the vault, or decide anything about
//! privacy except through `get_visibility`.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::frontmatter::{self, META_SCHEMA};
use crate::cancel::Cancel;
use crate::doc_type::DocType;
use crate::kb::stage::build_text_documents;

/// Notes indexed under a `meta_schema` below this are re-embedded on the
/// next refresh: schema 4 put the note's title in front of every chunk's
/// embedded text, schema 5 the note's folders in front of the title.
pub const EMBED_SCHEMA: i64 = 5;
use crate::kb::{Actor, Kb, KbError, ReplaceBy};
use crate::store::Metadata;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VaultError {
    #[error("the vault {0} does not exist or is not a directory — set `vault.path` (or VAULT_PATH, or --vault) to your Obsidian vault; nothing was changed")]
    NoVault(PathBuf),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Kb(#[from] KbError),
    #[error("stopped; every note finished so far is indexed whole")]
    Cancelled,
    /// A note over `vault.max_note_bytes`: skipped, never half-indexed.
    #[error("{rel} is {size} bytes, over vault.max_note_bytes ({limit}), so it is not indexed — split it into smaller notes, or raise the limit with `jarvis config set vault.max_note_bytes N`")]
    TooLarge { rel: String, size: u64, limit: u64 },
}

impl VaultError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            VaultError::NoVault(_) => ErrorKind::User,
            VaultError::Io { source, .. } => crate::error_kind::io_kind(source),
            VaultError::Kb(e) => e.kind(),
            VaultError::Cancelled => ErrorKind::Cancelled,
            VaultError::TooLarge { .. } => ErrorKind::User,
        }
    }
}

pub use crate::visibility::Visibility;

/// The one visibility policy. `None` when the resolved path is outside the
/// vault (such a file is not indexed). Private folders are top-level only,
/// by contract: `research/private/x.md` is public.
pub fn get_visibility(path: &Path, vault_root: &Path, private_dirs: &[String]) -> Option<Visibility> {
    let root = vault_root.canonicalize().ok()?;
    let resolved = path.canonicalize().ok()?;
    let rel = resolved.strip_prefix(&root).ok()?;
    let first = rel.components().next()?;
    match first {
        Component::Normal(name) if private_dirs.iter().any(|d| name.to_str() == Some(d.as_str())) => {
            Some(Visibility::Private)
        }
        _ => Some(Visibility::Public),
    }
}

/// What one refresh did; its JSON is `kb index-vault --json` (pinned in
/// `cli/kb/tests.rs`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct VaultReport {
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub deleted: Vec<String>,
    pub unchanged: usize,
    /// Re-classified (visibility changed) without re-embedding.
    pub reclassified: Vec<String>,
    /// Stamped with the current meta_schema in place.
    pub restamped: usize,
    /// (path, reason) for every file that was not indexed.
    pub skipped: Vec<(String, String)>,
    /// Non-fatal problems (frontmatter, encoding).
    pub warnings: Vec<(String, String)>,
}

/// How the vault is read.
#[derive(Debug, Clone)]
pub struct VaultOptions {
    pub private_dirs: Vec<String>,
    /// Clean rebuild: remove every indexed note first, then index all.
    pub force: bool,
    /// Who asked for the refresh: every note's event names them.
    pub actor: Actor,
}

/// What the index holds for one note (from its first chunk).
#[derive(Debug, Clone)]
struct Indexed {
    hash: String,
    /// As stored, so a missing or misspelt value (read as private) is
    /// rewritten explicitly by the next refresh.
    visibility: Option<String>,
    schema: i64,
    mtime: i64,
    size: i64,
}

/// Files to index, vault-relative with `/`, plus skips. Follows symlinks
/// (a note may be a link) but never loops: every directory is visited once
/// by its resolved path, and anything resolving outside the vault is skipped.
fn walk(root: &Path, report: &mut VaultReport) -> Result<Vec<(String, PathBuf)>, VaultError> {
    walk_from(root, root, report)
}

/// [`walk`] of the folder `start` inside the vault `root` only (paths stay
/// relative to `root`).
fn walk_from(root: &Path, start: &Path, report: &mut VaultReport) -> Result<Vec<(String, PathBuf)>, VaultError> {
    let canon_root = root
        .canonicalize()
        .map_err(|_| VaultError::NoVault(root.to_path_buf()))?;
    let mut out = Vec::new();
    let mut seen_dirs = BTreeSet::new();
    let mut stack = vec![start.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(canon) = dir.canonicalize() else { continue };
        if !seen_dirs.insert(canon) {
            let rel = rel_of(root, &dir);
            report
                .skipped
                .push((rel, "directory already visited (symlink loop)".into()));
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|source| VaultError::Io {
            path: dir.clone(),
            source,
        })?;
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = rel_of(root, &path);
            if name.starts_with('.') {
                continue; // .obsidian/, .trash/, dotfiles: not notes.
            }
            let Ok(meta) = std::fs::metadata(&path) else {
                report.skipped.push((rel, "broken symlink or unreadable".into()));
                continue;
            };
            let resolved_inside = path.canonicalize().is_ok_and(|c| c.starts_with(&canon_root));
            if !resolved_inside {
                report.skipped.push((rel, "resolves outside the vault".into()));
                continue;
            }
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() && name.to_ascii_lowercase().ends_with(".md") {
                out.push((rel, path));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Every indexed note, keyed by vault-relative path, from the store's
/// per-file map (one entry per note, so this does not grow with the number
/// of chunks). An error here is an error: treating a failed read as
/// "nothing indexed" would re-index the whole vault and mishandle deletions.
fn indexed_notes(kb: &Kb) -> Result<BTreeMap<String, Indexed>, VaultError> {
    let mut out = BTreeMap::new();
    for (path, e) in kb.store().files().map_err(KbError::from)? {
        if !e.doc_type.as_deref().is_some_and(|t| DocType::Note.is(t)) {
            continue;
        }
        out.insert(
            path,
            Indexed {
                hash: e.content_hash.unwrap_or_default(),
                visibility: e.visibility,
                schema: e.meta_schema.unwrap_or(0),
                mtime: e.mtime.unwrap_or(-1),
                size: e.file_size.unwrap_or(-1),
            },
        );
    }
    Ok(out)
}

/// Index (or re-index) one note in one atomic commit that replaces its old
/// chunks. Returns the number of chunks.
pub fn index_vault_file(
    kb: &Kb,
    rel: &str,
    path: &Path,
    visibility: Visibility,
    report: &mut VaultReport,
    actor: &Actor,
) -> Result<usize, VaultError> {
    let Some(docs) = stage_vault_file(kb, rel, path, visibility, report)? else {
        return Ok(0); // An empty note that was never indexed: nothing to do.
    };
    let n = docs.len();
    let prepared = kb.prepare(docs, &Cancel::new())?;
    kb.commit(prepared, Some(&ReplaceBy::FilePath(rel.to_string())), actor)?;
    Ok(n)
}

/// Read and chunk one note into documents (nothing embedded or written).
/// `None` for an empty note that was never indexed; an empty `Some` for an
/// emptied note whose old chunks must go.
fn stage_vault_file(
    kb: &Kb,
    rel: &str,
    path: &Path,
    visibility: Visibility,
    report: &mut VaultReport,
) -> Result<Option<Vec<crate::kb::Document>>, VaultError> {
    let meta = std::fs::metadata(path).map_err(|source| VaultError::Io {
        path: path.into(),
        source,
    })?;
    // Checked before reading: a huge note costs nothing but this message.
    let limit = kb.settings().max_note_bytes;
    if meta.len() > limit {
        return Err(VaultError::TooLarge {
            rel: rel.into(),
            size: meta.len(),
            limit,
        });
    }
    let bytes = std::fs::read(path).map_err(|source| VaultError::Io {
        path: path.into(),
        source,
    })?;
    let text = match String::from_utf8(bytes.clone()) {
        Ok(t) => t,
        Err(_) => {
            report.warnings.push((
                rel.into(),
                "not valid UTF-8; indexed with replacement characters".into(),
            ));
            String::from_utf8_lossy(&bytes).into_owned()
        }
    };
    let parsed = frontmatter::parse(&text);
    for w in &parsed.warnings {
        tracing::warn!(note = rel, "{w}");
        report.warnings.push((rel.into(), w.clone()));
    }
    let mut caller: Metadata = parsed.fields.clone();
    let title = parsed
        .fields
        .get("x_title")
        .map(crate::kb::scalar_string)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| title_of(&parsed.body, rel));
    // Every chunk is embedded (and BM25-indexed) under its note's folders
    // and title (`Obsidian Sync › Set up Obsidian Sync`), so a passage deep
    // in a note still carries what the note is about and where it sits: a
    // vault's folders say what its notes are. On the help vault's anchors
    // (documents, hit@1 / MRR@10) the folders raised 0.745 / 0.825 to
    // 0.765 / 0.837 (chunks 0.724 / 0.795 to 0.735 / 0.802), aliases
    // 1.000 both; papers have no folder, so SciFact cannot move.
    let named = match Path::new(rel).parent().map(|p| p.to_string_lossy().replace('/', " › ")) {
        Some(folder) if !folder.is_empty() => format!("{folder} › {title}"),
        _ => title.clone(),
    };
    let header = match frontmatter::record_header(&parsed.fields) {
        r if r.is_empty() => named,
        r => format!("{named} — {r}"),
    };
    caller.insert("title".into(), json!(title));
    caller.insert("modified_at".into(), json!(iso_mtime(&meta)));
    caller.insert("storage_mode".into(), json!("full_text"));
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!(DocType::Note.as_str()));
    own.insert("visibility".into(), json!(visibility.as_str()));
    own.insert("source".into(), json!("local"));
    own.insert("file_path".into(), json!(rel));
    own.insert("content_hash".into(), json!(hex::encode(Sha256::digest(&bytes))));
    own.insert("meta_schema".into(), json!(META_SCHEMA));
    own.insert("mtime".into(), json!(meta.mtime()));
    own.insert("file_size".into(), json!(meta.size() as i64));
    let docs = build_text_documents(&parsed.body, &caller, &own, &header, kb.chunker_config())?;
    if docs.is_empty()
        && kb
            .store()
            .ids_by(crate::store::LookupField::FilePath, rel)
            .map_err(KbError::from)?
            .is_empty()
    {
        return Ok(None);
    }
    Ok(Some(docs))
}

/// A note's title: its first `# Title` outside code blocks, else its file
/// stem (Obsidian's name for it).
fn title_of(body: &str, rel: &str) -> String {
    crate::kb::chunker::first_title(body).unwrap_or_else(|| {
        Path::new(rel)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| rel.to_string())
    })
}

fn iso_mtime(meta: &std::fs::Metadata) -> String {
    time::OffsetDateTime::from_unix_timestamp(meta.mtime())
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

/// A group flushes (one embedder pass, one commit, one vector-tree build)
/// once it holds this many chunks...
pub const GROUP_CHUNKS: usize = 512;
/// ...or this many notes (a vault of tiny notes).
pub const GROUP_NOTES: usize = 128;

/// Notes staged for the next grouped commit.
#[derive(Default)]
struct Group {
    /// (vault-relative path, already indexed before?, its documents)
    notes: Vec<(String, bool, Vec<crate::kb::Document>)>,
    chunks: usize,
}

impl Group {
    fn push(&mut self, rel: &str, was_indexed: bool, docs: Vec<crate::kb::Document>) {
        self.chunks += docs.len();
        self.notes.push((rel.to_string(), was_indexed, docs));
    }

    fn full(&self) -> bool {
        self.chunks >= GROUP_CHUNKS || self.notes.len() >= GROUP_NOTES
    }

    /// Embed every staged note in one pass and commit them all in ONE
    /// commit, each replacing its old chunks: a crash leaves the whole
    /// group or none of it, so every note is whole either way.
    fn flush(
        &mut self,
        kb: &Kb,
        opts: &VaultOptions,
        report: &mut VaultReport,
        cancel: &Cancel,
    ) -> Result<(), VaultError> {
        if self.notes.is_empty() {
            return Ok(());
        }
        let notes = std::mem::take(&mut self.notes);
        self.chunks = 0;
        let mut outcomes = Vec::with_capacity(notes.len());
        let mut groups = Vec::with_capacity(notes.len());
        for (rel, was_indexed, docs) in notes {
            outcomes.push((rel, was_indexed, docs.len()));
            groups.push(docs);
        }
        let prepared = kb.prepare_groups(groups, cancel).map_err(|e| match e {
            KbError::Cancelled => VaultError::Cancelled,
            other => other.into(),
        })?;
        let items = prepared
            .into_iter()
            .zip(&outcomes)
            .map(|(p, (rel, _, _))| (p, Some(ReplaceBy::FilePath(rel.clone()))))
            .collect();
        kb.commit_many(items, &opts.actor)?;
        for (rel, was_indexed, n) in outcomes {
            match (was_indexed, n) {
                (false, _) => report.added.push(rel),
                // A note emptied since: its old chunks went in the same commit.
                (true, 0) => report
                    .skipped
                    .push((rel, "empty note (its old entry was removed)".into())),
                (true, _) => report.updated.push(rel),
            }
        }
        Ok(())
    }
}

/// Incremental sync of the vault. New and changed notes are committed in
/// groups of whole notes ([`GROUP_CHUNKS`] / [`GROUP_NOTES`]): one embedder
/// pass and one commit per group, so the vector trees are built once per
/// group instead of once per note, and a stop or crash still leaves whole
/// notes. `progress(done, total)` is called per file.
pub fn refresh_vault(
    kb: &Kb,
    root: &Path,
    opts: &VaultOptions,
    progress: &dyn Fn(usize, usize),
    cancel: &Cancel,
) -> Result<VaultReport, VaultError> {
    if !root.is_dir() {
        return Err(VaultError::NoVault(root.to_path_buf()));
    }
    kb.check_model()?;
    // A change an earlier refresh left only in the store (a full disk
    // while the indexes wrote) reaches the indexes before any note is
    // judged unchanged by the map.
    kb.settle()?;
    let mut report = VaultReport::default();
    let files = walk(root, &mut report)?;
    if opts.force {
        // The clean rebuild must not build on top of what it was asked to
        // remove: clear first, and fail loudly if that does not work.
        kb.delete_by_metadata("doc_type", DocType::Note.as_str(), &opts.actor)?;
    }
    let indexed = indexed_notes(kb)?;
    let present: BTreeSet<&str> = files.iter().map(|(r, _)| r.as_str()).collect();
    let total = files.len();
    let mut group = Group::default();
    for (i, (rel, path)) in files.iter().enumerate() {
        if cancel.is_cancelled() {
            return Err(VaultError::Cancelled);
        }
        progress(i, total);
        if group.full() {
            group.flush(kb, opts, &mut report, cancel)?;
        }
        decide(kb, root, opts, rel, path, indexed.get(rel), &mut group, &mut report)?;
    }
    if cancel.is_cancelled() {
        return Err(VaultError::Cancelled);
    }
    group.flush(kb, opts, &mut report, cancel)?;
    let gone: Vec<&String> = indexed.keys().filter(|k| !present.contains(k.as_str())).collect();
    remove_notes(kb, &gone, opts, &mut report)?;
    progress(total, total);
    Ok(report)
}

/// Remove deleted notes: one commit per group of whole notes.
fn remove_notes(kb: &Kb, gone: &[&String], opts: &VaultOptions, report: &mut VaultReport) -> Result<(), VaultError> {
    for chunk in gone.chunks(GROUP_NOTES) {
        let items = chunk
            .iter()
            .map(|rel| {
                (
                    crate::kb::stage::Prepared::default(),
                    Some(ReplaceBy::FilePath((*rel).clone())),
                )
            })
            .collect();
        kb.commit_many(items, &opts.actor)?;
        report.deleted.extend(chunk.iter().map(|r| (*r).clone()));
    }
    Ok(())
}

/// Decide one note on disk against what the per-file map holds for it
/// (`indexed`): stage it for the group (new, changed, behind the schema),
/// fix metadata only (re-classified, touched), or count it unchanged. The
/// full refresh and the scoped one both decide through here.
#[allow(clippy::too_many_arguments)]
fn decide(
    kb: &Kb,
    root: &Path,
    opts: &VaultOptions,
    rel: &str,
    path: &Path,
    indexed: Option<&Indexed>,
    group: &mut Group,
    report: &mut VaultReport,
) -> Result<(), VaultError> {
    let Some(vis) = get_visibility(path, root, &opts.private_dirs) else {
        report
            .skipped
            .push((rel.to_string(), "resolves outside the vault".into()));
        return Ok(());
    };
    let Ok(meta) = std::fs::metadata(path) else {
        report.skipped.push((rel.to_string(), "unreadable".into()));
        return Ok(());
    };
    let Some(old) = indexed else {
        match stage_vault_file(kb, rel, path, vis, report) {
            Err(e @ VaultError::TooLarge { .. }) => skip_too_large(report, rel, &e, ""),
            Ok(None) => report.skipped.push((rel.to_string(), "empty note".into())),
            Ok(Some(docs)) if docs.is_empty() => report.skipped.push((rel.to_string(), "empty note".into())),
            Ok(Some(docs)) => group.push(rel, false, docs),
            Err(VaultError::Io { source, .. }) => report.skipped.push((rel.to_string(), source.to_string())),
            Err(e) => return Err(e),
        }
        return Ok(());
    };
    let same_stat = old.mtime == meta.mtime() && old.size == meta.size() as i64;
    let content_changed = !same_stat && {
        let bytes = std::fs::read(path).map_err(|source| VaultError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        hex::encode(Sha256::digest(&bytes)) != old.hash
    };
    let behind = old.schema < META_SCHEMA;
    // Below EMBED_SCHEMA the embedded text itself changed (the title
    // header), so every such note is re-embedded, frontmatter or not.
    let needs_reindex = content_changed || old.schema < EMBED_SCHEMA || (behind && has_frontmatter(path));
    if needs_reindex {
        match stage_vault_file(kb, rel, path, vis, report) {
            Ok(Some(docs)) => group.push(rel, true, docs),
            Ok(None) => {}
            Err(e @ VaultError::TooLarge { .. }) => {
                // Its indexed text is no longer what the note says.
                kb.commit(
                    crate::kb::stage::Prepared::default(),
                    Some(&ReplaceBy::FilePath(rel.to_string())),
                    &opts.actor,
                )?;
                skip_too_large(report, rel, &e, " (its old entry was removed)");
            }
            Err(e) => return Err(e),
        }
        return Ok(());
    }
    // Unchanged content: metadata-only fixes, never re-embedding.
    let mut fields = Metadata::new();
    if old.visibility.as_deref() != Some(vis.as_str()) {
        fields.insert("visibility".into(), json!(vis.as_str()));
        report.reclassified.push(rel.to_string());
    }
    if behind {
        fields.insert("meta_schema".into(), json!(META_SCHEMA));
        report.restamped += 1;
    }
    if !same_stat {
        fields.insert("mtime".into(), json!(meta.mtime()));
        fields.insert("file_size".into(), json!(meta.size() as i64));
        fields.insert("modified_at".into(), Value::String(iso_mtime(&meta)));
    }
    if fields.is_empty() {
        report.unchanged += 1;
    } else {
        kb.update_metadata_fields(rel, &fields, &opts.actor)?;
    }
    Ok(())
}

/// Report a note over the size cap as skipped, with the whole reason.
fn skip_too_large(report: &mut VaultReport, rel: &str, e: &VaultError, suffix: &str) {
    tracing::warn!(note = rel, "{e}");
    report.skipped.push((rel.to_string(), format!("{e}{suffix}")));
}

fn has_frontmatter(path: &Path) -> bool {
    std::fs::read(path)
        .map(|b| frontmatter::parse(&String::from_utf8_lossy(&b)).has_frontmatter)
        .unwrap_or(true)
}

mod scoped;
pub use scoped::refresh_vault_paths;

#[cfg(test)]
mod tests;
