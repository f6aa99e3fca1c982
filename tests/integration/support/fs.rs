//! Files: the committed fixtures, a note written under a root, and the
//! contents of a folder to compare before and after.

use std::path::{Path, PathBuf};

/// `tests/fixtures/pdf/NAME`, a committed PDF (made by the scripts beside
/// it).
pub fn pdf_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pdf")
        .join(name)
}

/// The bytes of [`pdf_fixture`]`(name)`.
pub fn pdf_fixture_bytes(name: &str) -> Vec<u8> {
    let p = pdf_fixture(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Write `text` to `root/rel`, making the folders on the way.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a file has a parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// Every file under `dir` with its bytes, sorted by path. `dir` must
/// exist; a file that vanishes during the walk (a temporary file some
/// process was renaming) is skipped, a file that cannot be read counts as
/// empty.
pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    assert!(dir.is_dir(), "{} is not a folder", dir.display());
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(e.path());
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}
