//! The scoped refresh: only the paths a filesystem watcher reported, each
//! note among them decided against the per-file map exactly as the full
//! refresh decides it ([`super::decide`]), instead of walking and
//! stat-ing the whole vault for every saved note.
//!
//! What a reported path means: a note on disk is decided (new, changed,
//! re-classified, unchanged); a folder on disk (created, moved in) is
//! walked; a path no longer on disk (deleted, moved away, a folder moved
//! out) removes every indexed note at or under it. A move into `private/`
//! is both: the old path's note goes, the new one comes in private — and
//! the removal commits first, so the note is never public after the move
//! is seen.
//! Gives up (returns `None`, the caller runs the full refresh) whenever
//! the set cannot be trusted to say everything: a path outside the vault,
//! the vault root itself, or any path that goes through a symlink (a
//! linked note or folder may be indexed under another name; the full walk
//! visits every folder once and decides that).
//! Must not: decide anything differently from the full refresh.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::{decide, indexed_notes, rel_of, remove_notes, walk_from, Group, VaultError, VaultOptions, VaultReport};
use crate::cancel::Cancel;
use crate::kb::Kb;

/// What one scoped refresh looks at.
#[derive(Debug, Default)]
struct Scope {
    /// Notes on disk to decide, by vault-relative path.
    notes: BTreeMap<String, PathBuf>,
    /// Vault-relative paths at or under which an indexed note that is not
    /// in `notes` is gone.
    covered: Vec<String>,
}

impl Scope {
    fn covers(&self, rel: &str) -> bool {
        self.covered.iter().any(|p| {
            rel == p || (rel.len() > p.len() && rel.starts_with(p.as_str()) && rel.as_bytes()[p.len()] == b'/')
        })
    }
}

/// Refresh only `changed` (absolute paths, as a watcher reports them, under
/// `root` or its resolved form). `Ok(None)`: the set cannot be trusted
/// (see the module docs) — run [`super::refresh_vault`] instead.
pub fn refresh_vault_paths(
    kb: &Kb,
    root: &Path,
    opts: &VaultOptions,
    changed: &[PathBuf],
    cancel: &Cancel,
) -> Result<Option<VaultReport>, VaultError> {
    if !root.is_dir() {
        return Err(VaultError::NoVault(root.to_path_buf()));
    }
    let canon_root = root
        .canonicalize()
        .map_err(|_| VaultError::NoVault(root.to_path_buf()))?;
    let mut report = VaultReport::default();
    let Some(scope) = scope(root, &canon_root, changed, &mut report)? else {
        return Ok(None);
    };
    kb.check_model()?;
    kb.settle()?;
    let indexed = indexed_notes(kb)?;
    let gone: Vec<&String> = indexed
        .keys()
        .filter(|k| scope.covers(k) && !scope.notes.contains_key(k.as_str()))
        .collect();
    remove_notes(kb, &gone, opts, &mut report)?;
    let mut group = Group::default();
    for (rel, path) in &scope.notes {
        if cancel.is_cancelled() {
            return Err(VaultError::Cancelled);
        }
        if group.full() {
            group.flush(kb, opts, &mut report, cancel)?;
        }
        decide(kb, root, opts, rel, path, indexed.get(rel), &mut group, &mut report)?;
    }
    if cancel.is_cancelled() {
        return Err(VaultError::Cancelled);
    }
    group.flush(kb, opts, &mut report, cancel)?;
    Ok(Some(report))
}

fn is_note(rel: &str) -> bool {
    rel.to_ascii_lowercase().ends_with(".md")
}

/// Turn reported paths into a [`Scope`]; `None` when they cannot be trusted.
fn scope(
    root: &Path,
    canon_root: &Path,
    changed: &[PathBuf],
    report: &mut VaultReport,
) -> Result<Option<Scope>, VaultError> {
    let mut out = Scope::default();
    for p in changed {
        let Some(rel) = p.strip_prefix(canon_root).or_else(|_| p.strip_prefix(root)).ok() else {
            return Ok(None);
        };
        if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Ok(None);
        }
        // Dot-folders and dotfiles are never notes (the walk skips them).
        if rel
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        {
            continue;
        }
        let path = root.join(rel);
        let rel_s = rel_of(root, &path);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                out.covered.push(rel_s);
                continue;
            }
            Err(_) => return Ok(None),
        };
        if !resolves_as_named(&path, canon_root, rel) {
            return Ok(None);
        }
        if meta.is_dir() {
            for (r, f) in walk_from(root, &path, report)? {
                // A symlink inside a folder that came in: the full walk decides.
                if !resolves_as_named(&f, canon_root, Path::new(&r)) {
                    return Ok(None);
                }
                out.notes.insert(r, f);
            }
            out.covered.push(rel_s);
        } else if meta.is_file() && is_note(&rel_s) {
            out.notes.insert(rel_s, path);
        }
    }
    Ok(Some(out))
}

/// `path` resolves to `canon_root/rel` (no symlink on the way).
fn resolves_as_named(path: &Path, canon_root: &Path, rel: &Path) -> bool {
    path.canonicalize().is_ok_and(|c| c == canon_root.join(rel))
}
