//! The native runtime carried inside the binary: ONNX Runtime, PDFium, the
//! default embedding model and its tokenizer.
//!
//! Owns: unpacking each embedded piece into `$JARVIS_HOME/runtime/<sha256>/`
//! atomically, verifying it against its pinned sha256 when it is unpacked
//! and whenever its stamp (size, mtime, inode — `.<name>.verified` beside
//! it) changes, otherwise trusting the stamp (and re-extracting a
//! damaged cache), and choosing between a bundled piece and one the user
//! configured instead.
//! Must not: load any library itself (that is `embed` for ONNX Runtime and
//! `pdf` for PDFium); this module only hands out verified paths.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::paths::{ensure_dir, Dir, JarvisHome, PathsError};

/// A piece compiled into the binary by build.rs.
#[derive(Debug)]
pub struct EmbeddedPiece {
    pub name: &'static str,
    pub what: &'static str,
    pub sha256: &'static str,
    pub zstd: &'static [u8],
}

mod generated {
    use super::EmbeddedPiece;
    include!(concat!(env!("OUT_DIR"), "/natives.rs"));
}
pub use generated::PIECES;

pub const ORT_LIB: &str = "libonnxruntime.so";
pub const PDFIUM_LIB: &str = "libpdfium.so";
pub const MODEL_ONNX: &str = "model.onnx";
pub const TOKENIZER_JSON: &str = "tokenizer.json";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The bytes inside the binary do not match their pin: the binary itself
    /// is damaged or was built from tampered natives.
    #[error("the bundled {name} does not match its pinned sha256 (expected {expected}, got {actual}) — this jarvis binary is damaged; rebuild it after `cargo xtask natives`, or point config at your own copy")]
    ChecksumMismatch {
        name: String,
        expected: String,
        actual: String,
    },
    #[error("the bundled {name} could not be decompressed: {reason} — this jarvis binary is damaged; rebuild it")]
    Corrupt { name: String, reason: String },
    #[error("no bundled piece named {0} (known: libonnxruntime.so, libpdfium.so, model.onnx, tokenizer.json)")]
    Unknown(String),
    #[error(
        "{what} configured at {path} does not exist — fix `{key}` in config.toml or unset it to use the bundled one"
    )]
    MissingOverride { what: String, path: PathBuf, key: String },
    #[error("cannot unpack {name} into {path}: {source} — check free disk space and permissions of JARVIS_HOME")]
    Io {
        name: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Paths(#[from] PathsError),
}

impl RuntimeError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            RuntimeError::ChecksumMismatch { .. } | RuntimeError::Corrupt { .. } | RuntimeError::Unknown(_) => {
                ErrorKind::Internal
            }
            RuntimeError::MissingOverride { .. } => ErrorKind::User,
            RuntimeError::Io { .. } => ErrorKind::Unavailable,
            RuntimeError::Paths(e) => e.kind(),
        }
    }
}

/// Where a piece was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Unpacked now from the binary.
    BundledFresh,
    /// Already unpacked, verified.
    BundledCached,
    /// Already unpacked but damaged, so unpacked again.
    BundledRepaired,
    /// The user's own file from config or env.
    Configured,
}

/// A ready-to-use file on disk.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub name: String,
    pub path: PathBuf,
    pub sha256: String,
    pub provenance: Provenance,
}

pub fn piece(name: &str) -> Result<&'static EmbeddedPiece, RuntimeError> {
    PIECES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| RuntimeError::Unknown(name.to_string()))
}

/// Unpack (or reuse) a bundled piece under `home/runtime/<sha256>/<name>`.
///
/// An existing file is hashed and reused only if it matches; otherwise it is
/// replaced. Writing goes to a temp file in the runtime directory and is
/// renamed into place, so a crash or a concurrent process never sees half a
/// library; two processes racing both produce identical bytes.
pub fn ensure_bundled(home: &JarvisHome, name: &str) -> Result<Resolved, RuntimeError> {
    let p = piece(name)?;
    let root = home.ensure(Dir::Runtime)?;
    ensure_from(&root, p)
}

/// A bundled piece unpacked for unit tests, into one directory every test
/// process on the machine reuses (`<temp dir>/jarvis-unit-test-runtime/
/// <sha256>/<name>`; the unpacking is safe against concurrent processes).
/// A temporary directory held in a `static` is never dropped, so each test
/// binary run used to leave ~100 MB behind in the temp directory.
#[cfg(test)]
pub(crate) fn ensure_for_tests(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join("jarvis-unit-test-runtime");
    let unpacked = piece(name).and_then(|p| ensure_from(&root, p));
    unpacked
        .unwrap_or_else(|e| panic!("unpacking the bundled {name} for the tests failed: {e}"))
        .path
}

pub(crate) fn ensure_from(root: &Path, p: &EmbeddedPiece) -> Result<Resolved, RuntimeError> {
    let io = |path: &Path, source| RuntimeError::Io {
        name: p.name.to_string(),
        path: path.to_path_buf(),
        source,
    };
    let dir = root.join(p.sha256);
    let dest = dir.join(p.name);
    let mut provenance = Provenance::BundledFresh;
    let stamp_path = dir.join(format!(".{}.verified", p.name));
    if dest.exists() {
        // Verified before and untouched since (same size, mtime and inode):
        // trust it rather than hash ~67 MB on every start.
        if stamp_of(&dest).is_some_and(|now| fs::read_to_string(&stamp_path).ok().as_deref() == Some(now.as_str())) {
            return Ok(Resolved {
                name: p.name.into(),
                path: dest,
                sha256: p.sha256.into(),
                provenance: Provenance::BundledCached,
            });
        }
        match sha256_file(&dest) {
            Ok(h) if h == p.sha256 => {
                write_stamp(&dest, &stamp_path);
                return Ok(Resolved {
                    name: p.name.into(),
                    path: dest,
                    sha256: h,
                    provenance: Provenance::BundledCached,
                });
            }
            Ok(h) => {
                tracing::warn!(piece = p.name, expected = p.sha256, actual = %h, "unpacked runtime piece is damaged; unpacking it again")
            }
            Err(e) => {
                tracing::warn!(piece = p.name, error = %e, "unpacked runtime piece is unreadable; unpacking it again")
            }
        }
        provenance = Provenance::BundledRepaired;
    }
    let bytes = decompress(p)?;
    let actual = hex::encode(Sha256::digest(&bytes));
    if actual != p.sha256 {
        return Err(RuntimeError::ChecksumMismatch {
            name: p.name.into(),
            expected: p.sha256.into(),
            actual,
        });
    }
    ensure_dir(&dir, 0o700)?;
    let mode = if p.name.ends_with(".so") { 0o700 } else { 0o600 };
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", p.name))
        .tempfile_in(&dir)
        .map_err(|e| io(&dir, e))?;
    std::io::Write::write_all(&mut tmp, &bytes).map_err(|e| io(&dest, e))?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(|e| io(&dest, e))?;
    tmp.as_file().sync_all().map_err(|e| io(&dest, e))?;
    tmp.persist(&dest).map_err(|e| io(&dest, e.error))?;
    write_stamp(&dest, &stamp_path);
    tracing::info!(piece = p.name, path = %dest.display(), ?provenance, "unpacked bundled runtime piece");
    Ok(Resolved {
        name: p.name.into(),
        path: dest,
        sha256: actual,
        provenance,
    })
}

/// The cheap identity of a file that full verification vouches for: size,
/// modification time (ns) and inode. Any rewrite, replacement or touch
/// changes it and brings the sha256 check back.
fn stamp_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).ok()?;
    Some(format!(
        "size {} mtime {}.{:09} inode {} dev {}\n",
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino(),
        m.dev()
    ))
}

/// Records that `dest` was just verified. Best-effort: without a stamp the
/// next start simply verifies again. A file modified in the last few
/// seconds is not stamped ("racy" as git calls it): file times have coarse
/// granularity, so a change right after verification could leave the same
/// stamp; such a file is simply verified again next time.
fn write_stamp(dest: &Path, stamp_path: &Path) {
    let recent = fs::metadata(dest)
        .and_then(|m| m.modified())
        .map(|t| t.elapsed().map_or(true, |age| age < std::time::Duration::from_secs(3)))
        .unwrap_or(true);
    if recent {
        let _ = fs::remove_file(stamp_path);
        return;
    }
    let Some(stamp) = stamp_of(dest) else { return };
    let written = tempfile::NamedTempFile::new_in(stamp_path.parent().unwrap_or(Path::new("."))).and_then(|mut tmp| {
        std::io::Write::write_all(&mut tmp, stamp.as_bytes())?;
        tmp.persist(stamp_path).map(|_| ()).map_err(|e| e.error)
    });
    if let Err(e) = written {
        tracing::debug!(path = %stamp_path.display(), error = %e, "could not record the runtime verification stamp");
    }
}

fn decompress(p: &EmbeddedPiece) -> Result<Vec<u8>, RuntimeError> {
    let corrupt = |e: std::io::Error| RuntimeError::Corrupt {
        name: p.name.into(),
        reason: e.to_string(),
    };
    let mut out = Vec::new();
    zstd::stream::read::Decoder::new(p.zstd)
        .map_err(corrupt)?
        .read_to_end(&mut out)
        .map_err(corrupt)?;
    Ok(out)
}

pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// A user-configured file instead of a bundled piece.
pub fn configured(name: &str, path: &Path, key: &str) -> Result<Resolved, RuntimeError> {
    if !path.is_file() {
        return Err(RuntimeError::MissingOverride {
            what: name.into(),
            path: path.into(),
            key: key.into(),
        });
    }
    let sha256 = sha256_file(path).map_err(|source| RuntimeError::Io {
        name: name.into(),
        path: path.into(),
        source,
    })?;
    Ok(Resolved {
        name: name.into(),
        path: path.into(),
        sha256,
        provenance: Provenance::Configured,
    })
}

/// The paths the engines need, each bundled or configured.
#[derive(Debug, Clone)]
pub struct RuntimePaths {
    pub onnxruntime: Resolved,
    pub pdfium: Resolved,
    pub model: Resolved,
    pub tokenizer: Resolved,
}

/// Overrides from config (`[runtime]`); `None` means "use the bundled one".
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub onnxruntime: Option<PathBuf>,
    pub pdfium: Option<PathBuf>,
    /// A directory holding `model.onnx` and `tokenizer.json`.
    pub model_dir: Option<PathBuf>,
}

pub fn resolve_onnxruntime(home: &JarvisHome, o: &Overrides) -> Result<Resolved, RuntimeError> {
    match &o.onnxruntime {
        Some(p) => configured(ORT_LIB, p, "runtime.onnxruntime"),
        None => ensure_bundled(home, ORT_LIB),
    }
}

pub fn resolve_pdfium(home: &JarvisHome, o: &Overrides) -> Result<Resolved, RuntimeError> {
    match &o.pdfium {
        Some(p) => configured(PDFIUM_LIB, p, "runtime.pdfium"),
        None => ensure_bundled(home, PDFIUM_LIB),
    }
}

/// The embedding model and tokenizer, from `model_dir` or the bundle.
pub fn resolve_model(home: &JarvisHome, o: &Overrides) -> Result<(Resolved, Resolved), RuntimeError> {
    match &o.model_dir {
        Some(d) => Ok((
            configured(MODEL_ONNX, &d.join(MODEL_ONNX), "runtime.model_dir")?,
            configured(TOKENIZER_JSON, &d.join(TOKENIZER_JSON), "runtime.model_dir")?,
        )),
        None => Ok((ensure_bundled(home, MODEL_ONNX)?, ensure_bundled(home, TOKENIZER_JSON)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok() -> &'static EmbeddedPiece {
        piece(TOKENIZER_JSON).unwrap()
    }

    #[test]
    fn every_pinned_piece_is_embedded() {
        let names: Vec<&str> = PIECES.iter().map(|p| p.name).collect();
        assert_eq!(names, [ORT_LIB, PDFIUM_LIB, MODEL_ONNX, TOKENIZER_JSON]);
    }

    #[test]
    fn unpacks_verifies_and_reuses() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let r = ensure_bundled(&home, TOKENIZER_JSON).unwrap();
        assert_eq!(r.provenance, Provenance::BundledFresh);
        assert_eq!(r.path, t.path().join("runtime").join(tok().sha256).join(TOKENIZER_JSON));
        assert_eq!(sha256_file(&r.path).unwrap(), tok().sha256);
        let again = ensure_bundled(&home, TOKENIZER_JSON).unwrap();
        assert_eq!(again.provenance, Provenance::BundledCached);
        // Only the final file, no temp files left behind.
        let entries: Vec<_> = fs::read_dir(r.path.parent().unwrap()).unwrap().collect();
        assert_eq!(entries.len(), 1);
    }

    #[test]
    fn a_verified_file_is_trusted_until_its_stamp_changes() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let r = ensure_bundled(&home, TOKENIZER_JSON).unwrap();
        let stamp = r.path.parent().unwrap().join(format!(".{TOKENIZER_JSON}.verified"));
        // Just unpacked: too recent to stamp.
        assert!(!stamp.exists());
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let set_mtime = |t| {
            fs::File::options()
                .write(true)
                .open(&r.path)
                .unwrap()
                .set_modified(t)
                .unwrap()
        };
        set_mtime(old);
        // Verified by hash, then stamped.
        assert_eq!(
            ensure_bundled(&home, TOKENIZER_JSON).unwrap().provenance,
            Provenance::BundledCached
        );
        assert!(stamp.exists());
        // Damage that keeps size, mtime and inode is trusted (that is the
        // bargain: no 67 MB hash per start)…
        let mut bytes = fs::read(&r.path).unwrap();
        bytes[100] ^= 0xff;
        fs::write(&r.path, &bytes).unwrap();
        set_mtime(old);
        assert_eq!(
            ensure_bundled(&home, TOKENIZER_JSON).unwrap().provenance,
            Provenance::BundledCached
        );
        // …but any change to the stamp brings the full check back.
        set_mtime(old + std::time::Duration::from_secs(1));
        let fixed = ensure_bundled(&home, TOKENIZER_JSON).unwrap();
        assert_eq!(fixed.provenance, Provenance::BundledRepaired);
        assert_eq!(sha256_file(&fixed.path).unwrap(), tok().sha256);
    }

    #[test]
    fn a_corrupt_cache_is_detected_and_reextracted() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let r = ensure_bundled(&home, TOKENIZER_JSON).unwrap();
        // Flip bytes in place (same size), then truncate: both are caught.
        let mut bytes = fs::read(&r.path).unwrap();
        bytes[100] ^= 0xff;
        fs::write(&r.path, &bytes).unwrap();
        let fixed = ensure_bundled(&home, TOKENIZER_JSON).unwrap();
        assert_eq!(fixed.provenance, Provenance::BundledRepaired);
        assert_eq!(sha256_file(&fixed.path).unwrap(), tok().sha256);
        fs::write(&r.path, b"").unwrap();
        assert_eq!(
            ensure_bundled(&home, TOKENIZER_JSON).unwrap().provenance,
            Provenance::BundledRepaired
        );
    }

    #[test]
    fn a_wrong_checksum_is_a_clear_error_and_writes_nothing() {
        let t = tempfile::tempdir().unwrap();
        let bad = EmbeddedPiece {
            name: "tokenizer.json",
            what: "test",
            sha256: "00ff",
            zstd: tok().zstd,
        };
        let err = ensure_from(t.path(), &bad).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, RuntimeError::ChecksumMismatch { .. }), "{msg}");
        assert!(
            msg.contains("does not match its pinned sha256") && msg.contains("00ff"),
            "{msg}"
        );
        assert!(!t.path().join("00ff").exists());
    }

    #[test]
    fn damaged_embedded_bytes_are_reported_not_panicked() {
        let t = tempfile::tempdir().unwrap();
        let bad = EmbeddedPiece {
            name: "x",
            what: "test",
            sha256: "00",
            zstd: b"definitely not zstd",
        };
        let msg = ensure_from(t.path(), &bad).unwrap_err().to_string();
        assert!(msg.contains("could not be decompressed"), "{msg}");
    }

    #[test]
    fn concurrent_unpacking_is_safe() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let h = home.clone();
                std::thread::spawn(move || ensure_bundled(&h, TOKENIZER_JSON).unwrap().path)
            })
            .collect();
        for h in handles {
            let p = h.join().unwrap();
            assert_eq!(sha256_file(&p).unwrap(), tok().sha256);
        }
    }

    #[test]
    fn a_missing_override_names_the_key() {
        let msg = configured(ORT_LIB, Path::new("/nope/libonnxruntime.so"), "runtime.onnxruntime")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("runtime.onnxruntime") && msg.contains("/nope/"), "{msg}");
    }
}
