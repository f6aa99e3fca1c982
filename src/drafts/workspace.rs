//! The drafts root on disk and its one containment policy.
//!
//! Owns: [`resolve_in_draft`] — every path to a draft file is built here
//! and nowhere else — plus `draft.json`, creating drafts and files (free
//! writes: nothing existed to overwrite), reading, and the human's own save
//! guarded by `expect_hash`. Writes are atomic (temp file in the same
//! folder, then rename), owner-only, and all go through [`Disk`].
//! Must not: overwrite on create, write without resolving first, or follow a
//! link out of the drafts root.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::disk::Disk;
use super::{content_hash, DraftSettings, DraftsError, IMAGE_EXTENSIONS};

/// The bookkeeping file in each draft folder; never a draft file itself.
pub const META_FILE: &str = "draft.json";
/// Snapshots of earlier contents, per file.
pub const VERSIONS_DIR: &str = ".versions";
/// Longest file name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 120;

/// Who may see a draft: it inherits the visibility of the session that
/// created it; a private draft never goes to a cloud model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    #[default]
    Public,
    Private,
}

/// `draft.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftMeta {
    pub id: String,
    pub title: String,
    pub main_file: String,
    /// RFC 3339, UTC.
    pub created: String,
    pub updated: String,
    #[serde(default)]
    pub visibility: Visibility,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Exempt from the retention sweep.
    #[serde(default)]
    pub keep: bool,
}

/// One file's text and the hash a save must quote to replace it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DraftFile {
    pub draft_id: String,
    pub filename: String,
    pub text: String,
    pub hash: String,
}

/// A draft and the files in it, for listings.
#[derive(Debug, Clone, Serialize)]
pub struct DraftSummary {
    #[serde(flatten)]
    pub meta: DraftMeta,
    pub files: Vec<String>,
}

/// Whether `id` is a draft id: the session-id pattern `[0-9a-z-]{1,64}`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn bad(name: &str, reason: &str) -> DraftsError {
    DraftsError::BadName {
        name: name.chars().take(80).collect(),
        reason: reason.into(),
    }
}

/// Check a file name on its own, before any path exists: one plain
/// component, no leading dot or dash (a leading `-` would turn the name
/// into an option on latexmk's or pandoc's command line), printable
/// characters from a conservative set (letters and digits of any script,
/// space, `_ - . , + ( )`) — which also refuses look-alikes of `/` and `.`
/// such as U+2215 and U+FF0E — and an allowed extension.
pub fn check_name(name: &str, extensions: &[String]) -> Result<(), DraftsError> {
    if name.is_empty() {
        return Err(bad(name, "it is empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(bad(name, &format!("it is longer than {MAX_NAME_BYTES} bytes")));
    }
    if name.contains('/') || name.contains('\\') {
        return Err(bad(name, "it contains a path separator; a draft file is a plain name"));
    }
    if name.chars().any(|c| c == '\0' || c.is_control()) {
        return Err(bad(name, "it contains a NUL or control character"));
    }
    if name.starts_with('.') {
        return Err(bad(name, "it starts with a dot"));
    }
    if name.starts_with('-') {
        return Err(bad(
            name,
            "it starts with '-', which a build tool would read as an option",
        ));
    }
    if name.contains("..") {
        return Err(bad(name, "it contains '..'"));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.' | ',' | '+' | '(' | ')')))
    {
        return Err(bad(
            name,
            &format!(
                "it contains {c:?} (U+{:04X}); use letters, digits, space and _ - . , + ( )",
                c as u32
            ),
        ));
    }
    if name.ends_with(' ') || name.ends_with('.') {
        return Err(bad(name, "it ends with a space or a dot"));
    }
    if name.eq_ignore_ascii_case(META_FILE) {
        return Err(bad(name, "draft.json is the draft's own bookkeeping"));
    }
    let ext = name.rfind('.').map(|i| name[i..].to_lowercase()).unwrap_or_default();
    let allowed = extensions
        .iter()
        .map(String::as_str)
        .chain(IMAGE_EXTENSIONS.iter().copied());
    let allowed: Vec<&str> = allowed.collect();
    if ext.is_empty() || !allowed.contains(&ext.as_str()) {
        return Err(bad(
            name,
            &format!("its type is not allowed in drafts (allowed: {})", allowed.join(" ")),
        ));
    }
    Ok(())
}

/// The single containment policy for every read and write of a draft file.
///
/// `root` must already be canonical. In order: the id is checked against
/// the id pattern; the name against [`check_name`]; then the path is
/// resolved as a whole (following any link, including one planted as the
/// draft folder itself or as the file) and the result must lie under
/// `root`; and only then is its first component under `root` checked to be
/// `draft_id`. Resolving the draft folder first and trusting it would follow
/// a planted link and validate a path outside the sandbox — the order is
/// the point. A file that does not exist yet resolves through its folder.
pub fn resolve_in_draft(
    root: &Path,
    extensions: &[String],
    draft_id: &str,
    filename: &str,
) -> Result<PathBuf, DraftsError> {
    if !valid_id(draft_id) {
        return Err(DraftsError::BadId {
            id: draft_id.chars().take(80).collect(),
        });
    }
    check_name(filename, extensions)?;
    let folder = root.join(draft_id);
    let candidate = folder.join(filename);
    let resolved = match std::fs::canonicalize(&candidate) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Either the file is new or it is a dangling link; a dangling
            // link must not become a write through it.
            if std::fs::symlink_metadata(&candidate).is_ok() {
                return Err(DraftsError::Escapes {
                    id: draft_id.into(),
                    name: filename.into(),
                });
            }
            match std::fs::canonicalize(&folder) {
                Ok(dir) => dir.join(filename),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(DraftsError::NoDraft { id: draft_id.into() })
                }
                Err(e) => return Err(DraftsError::io("resolve", &folder, e)),
            }
        }
        Err(e) => return Err(DraftsError::io("resolve", &candidate, e)),
    };
    let escapes = || DraftsError::Escapes {
        id: draft_id.into(),
        name: filename.into(),
    };
    let rel = resolved.strip_prefix(root).map_err(|_| escapes())?;
    let mut parts = rel.components();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Component::Normal(first)), Some(Component::Normal(_)), None)
            if first == std::ffi::OsStr::new(draft_id) =>
        {
            Ok(resolved)
        }
        _ => Err(escapes()),
    }
}

/// The drafts root and what may go in it.
#[derive(Debug, Clone)]
pub struct Workspace {
    settings: DraftSettings,
    /// Canonical form of `settings.root`.
    root: PathBuf,
    /// Every write goes through it.
    disk: Disk,
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A readable, unique draft id: date, a slug of the title, 4 random hex
/// digits — or, with no title, the date and 12 random hex digits.
fn new_id(title: &str) -> String {
    let date = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!("[year][month][day]"))
        .unwrap_or_default();
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_matches('-');
    let uuid = uuid::Uuid::new_v4().simple().to_string();
    if slug.is_empty() {
        // Nothing else tells these ids apart: a longer random part.
        format!("{date}-{}", &uuid[..12])
    } else {
        format!("{date}-{slug}-{}", &uuid[..4])
    }
}

impl Workspace {
    /// Open (creating, owner-only) the drafts root.
    pub fn open(settings: DraftSettings) -> Result<Self, DraftsError> {
        // Drafts are never indexed: a root inside the vault would be, by
        // the vault's own refresh. Checked before anything is created.
        if let Some(vault) = settings.vault.as_deref().and_then(|v| std::fs::canonicalize(v).ok()) {
            let mut probe = settings.root.clone();
            let mut tail = Vec::new();
            while std::fs::canonicalize(&probe).is_err() {
                match (probe.file_name().map(|n| n.to_os_string()), probe.parent()) {
                    (Some(n), Some(p)) => {
                        tail.push(n);
                        probe = p.to_path_buf();
                    }
                    _ => break,
                }
            }
            let mut root = std::fs::canonicalize(&probe).unwrap_or(probe);
            root.extend(tail.iter().rev());
            if root.starts_with(&vault) {
                return Err(DraftsError::InsideVault {
                    root: settings.root.display().to_string(),
                    vault: vault.display().to_string(),
                });
            }
        }
        let disk = Disk::default();
        disk.create_private_dir_all(&settings.root)?;
        let root = std::fs::canonicalize(&settings.root).map_err(|e| DraftsError::io("resolve", &settings.root, e))?;
        Ok(Workspace { settings, root, disk })
    }

    /// The writer every drafts write goes through (attach a
    /// [`super::disk::WriteLog`] to it to see them).
    pub fn disk(&self) -> &Disk {
        &self.disk
    }

    pub fn settings(&self) -> &DraftSettings {
        &self.settings
    }

    /// The canonical drafts root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// [`resolve_in_draft`] under this root.
    pub fn resolve(&self, draft_id: &str, filename: &str) -> Result<PathBuf, DraftsError> {
        resolve_in_draft(&self.root, &self.settings.extensions, draft_id, filename)
    }

    /// The folder of an existing draft (id checked, link-free, under root).
    pub fn draft_dir(&self, draft_id: &str) -> Result<PathBuf, DraftsError> {
        if !valid_id(draft_id) {
            return Err(DraftsError::BadId {
                id: draft_id.chars().take(80).collect(),
            });
        }
        let dir = self.root.join(draft_id);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(dir),
            Ok(_) => Err(DraftsError::Escapes {
                id: draft_id.into(),
                name: String::new(),
            }),
            Err(_) => Err(DraftsError::NoDraft { id: draft_id.into() }),
        }
    }

    fn check_size(&self, name: &str, len: usize) -> Result<(), DraftsError> {
        let bytes = len as u64;
        if bytes > self.settings.max_file_bytes {
            return Err(DraftsError::TooLarge {
                name: name.into(),
                bytes,
                max: self.settings.max_file_bytes,
            });
        }
        Ok(())
    }

    /// A new draft holding one file. Free: nothing existed to overwrite.
    pub fn create_draft(
        &self,
        title: &str,
        filename: &str,
        text: &str,
        visibility: Visibility,
        session_id: Option<&str>,
    ) -> Result<DraftMeta, DraftsError> {
        check_name(filename, &self.settings.extensions)?;
        self.check_size(filename, text.len())?;
        let title = title.trim();
        // A private draft's id is shown where its title and text are not
        // (`list_drafts` under a cloud model, URLs, logs): it never carries
        // either, only the date and a random part.
        let id = match visibility {
            Visibility::Private => new_id(""),
            Visibility::Public => new_id(if title.is_empty() { filename } else { title }),
        };
        let dir = self.root.join(&id);
        self.disk
            .create_dir(&dir)
            .map_err(|e| DraftsError::io("create", &dir, e))?;
        self.disk.set_mode(&dir, 0o700)?;
        let now = now_rfc3339();
        let meta = DraftMeta {
            id: id.clone(),
            title: if title.is_empty() {
                filename.to_string()
            } else {
                title.chars().take(200).collect()
            },
            main_file: filename.into(),
            created: now.clone(),
            updated: now,
            visibility,
            session_id: session_id.filter(|s| valid_id(s)).map(str::to_string),
            keep: false,
        };
        self.write_meta(&meta)?;
        let path = self.resolve(&id, filename)?;
        self.disk.write_atomic(&path, text.as_bytes())?;
        Ok(meta)
    }

    /// Add a file to a draft; refuses an existing name.
    pub fn add_draft_file(&self, draft_id: &str, filename: &str, text: &str) -> Result<DraftFile, DraftsError> {
        let path = self.resolve(draft_id, filename)?;
        self.check_size(filename, text.len())?;
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(DraftsError::Exists {
                id: draft_id.into(),
                name: filename.into(),
            });
        }
        self.disk.write_atomic(&path, text.as_bytes())?;
        self.touch(draft_id)?;
        Ok(DraftFile {
            draft_id: draft_id.into(),
            filename: filename.into(),
            text: text.into(),
            hash: content_hash(text.as_bytes()),
        })
    }

    /// A file a build generates (a bibliography): written when `name` is
    /// free or holds a file that starts with `mark` (one written the same
    /// way before), left alone when it is the user's own. Returns whether
    /// the draft now has the generated file. Unchanged text is not
    /// rewritten; no snapshot is taken (the file is derived, not authored).
    pub fn write_generated(&self, draft_id: &str, name: &str, text: &str, mark: &str) -> Result<bool, DraftsError> {
        let path = self.resolve(draft_id, name)?;
        self.check_size(name, text.len())?;
        match self.read_bytes(draft_id, name) {
            Ok(old) if old == text.as_bytes() => return Ok(true),
            Ok(old) if !old.starts_with(mark.as_bytes()) => return Ok(false),
            Ok(_) | Err(DraftsError::NoFile { .. }) => {}
            Err(e) => return Err(e),
        }
        self.disk.write_atomic(&path, text.as_bytes())?;
        Ok(true)
    }

    /// Read a draft file as text.
    pub fn read_file(&self, draft_id: &str, filename: &str) -> Result<DraftFile, DraftsError> {
        let bytes = self.read_bytes(draft_id, filename)?;
        let hash = content_hash(&bytes);
        let text = String::from_utf8(bytes).map_err(|_| DraftsError::NotText { name: filename.into() })?;
        Ok(DraftFile {
            draft_id: draft_id.into(),
            filename: filename.into(),
            text,
            hash,
        })
    }

    /// Read a draft file's bytes (capped at `max_file_bytes`).
    pub fn read_bytes(&self, draft_id: &str, filename: &str) -> Result<Vec<u8>, DraftsError> {
        let path = self.resolve(draft_id, filename)?;
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DraftsError::NoFile {
                    id: draft_id.into(),
                    name: filename.into(),
                })
            }
            Err(e) => return Err(DraftsError::io("read", &path, e)),
        };
        if !meta.is_file() {
            return Err(bad(filename, "it is not a regular file"));
        }
        self.check_size(filename, usize::try_from(meta.len()).unwrap_or(usize::MAX))?;
        std::fs::read(&path).map_err(|e| DraftsError::io("read", &path, e))
    }

    /// The human's own save. With `expect_hash`, refuses (writing nothing)
    /// when the file is no longer what the caller loaded. Snapshots the
    /// previous text into `.versions/` first. Returns the new hash.
    pub fn save_draft_file(
        &self,
        draft_id: &str,
        filename: &str,
        text: &str,
        expect_hash: Option<&str>,
    ) -> Result<String, DraftsError> {
        self.save_with_snapshot(draft_id, filename, text, expect_hash)
            .map(|(hash, _)| hash)
    }

    /// [`Workspace::save_draft_file`], also returning the snapshot taken.
    pub(crate) fn save_with_snapshot(
        &self,
        draft_id: &str,
        filename: &str,
        text: &str,
        expect_hash: Option<&str>,
    ) -> Result<(String, Option<String>), DraftsError> {
        self.check_size(filename, text.len())?;
        let current = match self.read_bytes(draft_id, filename) {
            Ok(b) => Some(b),
            Err(DraftsError::NoFile { .. }) => None,
            Err(e) => return Err(e),
        };
        if let Some(expected) = expect_hash {
            let now = current.as_deref().map(content_hash);
            if now.as_deref() != Some(expected) {
                return Err(DraftsError::Moved { name: filename.into() });
            }
        }
        if let Some(old) = &current {
            if old.as_slice() == text.as_bytes() {
                return Ok((content_hash(old), None));
            }
        }
        let snapshot = match &current {
            Some(old) => Some(super::versions::snapshot(self, draft_id, filename, old)?),
            None => None,
        };
        // `draft.json` before the file: a save that fails leaves the file
        // as it was (at worst with a newer `updated`), never a changed
        // file reported as not saved.
        let path = self.resolve(draft_id, filename);
        let saved = path.and_then(|path| {
            self.touch(draft_id)?;
            self.disk.write_atomic(&path, text.as_bytes())
        });
        if let Err(e) = saved {
            // The snapshot is the text the file still holds: no version.
            if let Some(v) = &snapshot {
                if let Err(r) = super::versions::discard(self, draft_id, filename, v) {
                    tracing::warn!(draft = draft_id, file = filename, error = %r, "cannot remove the snapshot of a save that failed");
                }
            }
            return Err(e);
        }
        Ok((content_hash(text.as_bytes()), snapshot))
    }

    /// `draft.json` of a draft.
    pub fn meta(&self, draft_id: &str) -> Result<DraftMeta, DraftsError> {
        let path = self.draft_dir(draft_id)?.join(META_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => DraftsError::NoDraft { id: draft_id.into() },
            _ => DraftsError::io("read", &path, e),
        })?;
        let meta: DraftMeta = serde_json::from_str(&text).map_err(|e| DraftsError::BadMeta {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        if meta.id != draft_id {
            return Err(DraftsError::BadMeta {
                path: path.display().to_string(),
                detail: format!("it names draft {:?}", meta.id),
            });
        }
        Ok(meta)
    }

    fn write_meta(&self, meta: &DraftMeta) -> Result<(), DraftsError> {
        let dir = self.draft_dir(&meta.id)?;
        let bytes = serde_json::to_vec_pretty(meta).map_err(|e| DraftsError::BadMeta {
            path: dir.join(META_FILE).display().to_string(),
            detail: e.to_string(),
        })?;
        self.disk.write_atomic(&dir.join(META_FILE), &bytes)
    }

    fn touch(&self, draft_id: &str) -> Result<(), DraftsError> {
        let mut meta = self.meta(draft_id)?;
        meta.updated = now_rfc3339();
        self.write_meta(&meta)
    }

    /// Exempt a draft from the retention sweep, or stop.
    pub fn set_keep(&self, draft_id: &str, keep: bool) -> Result<DraftMeta, DraftsError> {
        let mut meta = self.meta(draft_id)?;
        meta.keep = keep;
        self.write_meta(&meta)?;
        Ok(meta)
    }

    /// The draft's files (names that pass the policy; bookkeeping and
    /// anything else skipped), sorted.
    pub fn files(&self, draft_id: &str) -> Result<Vec<String>, DraftsError> {
        let dir = self.draft_dir(draft_id)?;
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| DraftsError::io("list", &dir, e))? {
            let entry = entry.map_err(|e| DraftsError::io("list", &dir, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if entry.file_type().is_ok_and(|t| t.is_file()) && check_name(&name, &self.settings.extensions).is_ok() {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    /// Every draft, newest first. A folder with a damaged `draft.json` is
    /// skipped with a warning rather than hiding the rest.
    pub fn list_drafts(&self) -> Result<Vec<DraftSummary>, DraftsError> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.root).map_err(|e| DraftsError::io("list", &self.root, e))? {
            let entry = entry.map_err(|e| DraftsError::io("list", &self.root, e))?;
            let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !valid_id(&id) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            match self.meta(&id) {
                Ok(meta) => out.push(DraftSummary {
                    files: self.files(&id)?,
                    meta,
                }),
                Err(e) => tracing::warn!(draft = %id, error = %e, "skipping a draft"),
            }
        }
        out.sort_by(|a, b| {
            b.meta
                .updated
                .cmp(&a.meta.updated)
                .then_with(|| a.meta.id.cmp(&b.meta.id))
        });
        Ok(out)
    }
}
