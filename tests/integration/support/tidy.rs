//! Reading `src/` for the tidy tests: every Rust file with its path
//! relative to `src/`, which files are test code, and a file's code with
//! its test modules and comment lines cut out.

use std::path::{Path, PathBuf};

/// One file under `src/`.
pub struct SrcFile {
    /// Relative to `src/`, with `/` separators (`kb/mod.rs`).
    pub rel: String,
    pub text: String,
}

/// `src/` of this crate.
pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/UNDER` (`""`: all of `src/`), sorted.
pub fn src_files(under: &str) -> Vec<SrcFile> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = src_dir();
    let mut paths = Vec::new();
    walk(&src.join(under), &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|path| SrcFile {
            rel: path
                .strip_prefix(&src)
                .expect("under src/")
                .to_string_lossy()
                .replace('\\', "/"),
            text: std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        })
        .collect()
}

/// Whether a `src/`-relative file is test code as a whole: a `tests.rs`
/// module, a file under a `tests/` folder, or a `test_support` module.
pub fn is_test_file(rel: &str) -> bool {
    rel.ends_with("tests.rs") || rel.starts_with("tests/") || rel.contains("/tests/") || rel.contains("test_support")
}

/// Source without its inline `#[cfg(test)] mod NAME { … }` blocks (test
/// code may do what library code must not). Everything else — including
/// code after a test module — is kept. Braces inside strings or comments
/// are not special-cased: test modules here do not hold unbalanced ones,
/// and a mistake only makes a check stricter.
pub fn non_test_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_mod =
            trimmed.starts_with("mod ") || trimmed.starts_with("pub mod ") || trimmed.starts_with("pub(crate) mod ");
        let open = trimmed.find('{');
        let semi = trimmed.find(';');
        match (is_mod, open) {
            (true, Some(o)) if semi.is_none_or(|s| o < s) => rest = &trimmed[o + block_len(&trimmed[o..])..],
            // `#[cfg(test)] mod tests;` (a file of its own) or a single
            // test-only item: keep checking what follows.
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// The length of the `{ … }` block `body` starts with (all of `body` if
/// it never closes).
pub fn block_len(body: &str) -> usize {
    let mut depth = 0usize;
    for (j, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    body.len()
}

/// [`non_test_code`] without its comment lines: what the library itself
/// says, for rules about names it uses.
pub fn library_code(text: &str) -> String {
    non_test_code(text)
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}
