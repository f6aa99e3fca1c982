//! Unit tests in one layout, checked on every file of `src/`.
//!
//! The rule (tests/README.md says why):
//! - a file's unit tests are its one `#[cfg(test)] mod tests` — inline
//!   `mod tests { … }` at the end of the file while the file stays under
//!   800 lines, otherwise `mod tests;` in a file of its own;
//! - that file sits where Rust looks without help: `foo/tests.rs` for
//!   `foo.rs`, `dir/tests.rs` for `dir/mod.rs`; a tests file that outgrows
//!   800 lines splits into parts under `foo/tests/` that `foo/tests.rs`
//!   declares. No `#[path]` on a test module, no `foo_tests.rs` beside
//!   `foo.rs`;
//! - test helpers shared between modules live in a `test_support` module;
//! - every test file is declared by its parent, so none is silently left
//!   out of the build (a file nobody declares is never compiled, and its
//!   tests never run).

use std::collections::HashMap;

use crate::support::tidy::{is_test_file, non_test_code, src_files};

/// A `mod NAME` declared under `#[cfg(test)]`.
#[derive(Debug, PartialEq)]
struct TestMod {
    name: String,
    /// `mod NAME { … }` rather than `mod NAME;`.
    inline: bool,
    /// Carries a `#[path = …]` attribute.
    path_attr: bool,
}

/// The `#[cfg(test)]` module declarations in `text`, at any depth.
fn test_modules(text: &str) -> Vec<TestMod> {
    let mut out = Vec::new();
    let mut attrs: Vec<&str> = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("#[") {
            attrs.push(l);
            continue;
        }
        if l.is_empty() || l.starts_with("//") {
            continue;
        }
        let decl = ["pub(crate) mod ", "pub(super) mod ", "pub mod ", "mod "]
            .iter()
            .find_map(|p| l.strip_prefix(p));
        if let Some(rest) = decl {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let after = rest[name.len()..].trim_start();
            if attrs.iter().any(|a| a.starts_with("#[cfg(test)]")) && (after.starts_with('{') || after.starts_with(';'))
            {
                out.push(TestMod {
                    inline: after.starts_with('{'),
                    path_attr: attrs.iter().any(|a| a.starts_with("#[path")),
                    name,
                });
            }
        }
        attrs.clear();
    }
    out
}

/// Where Rust looks for `mod tests;` declared in `rel`: `foo/tests.rs`
/// for `foo.rs`, `dir/tests.rs` for `dir/mod.rs` (and `lib.rs`).
fn default_tests_file(rel: &str) -> String {
    match rel.strip_suffix("mod.rs").or_else(|| rel.strip_suffix("lib.rs")) {
        Some(dir) => format!("{dir}tests.rs"),
        None => format!("{}/tests.rs", rel.trim_end_matches(".rs")),
    }
}

/// The file that declares module file `rel`, and the name it declares:
/// `a/b.rs` and `a/b/mod.rs` are `mod b` of `a.rs` or `a/mod.rs`
/// (of `lib.rs` at the top).
fn parent_of(rel: &str, files: &HashMap<&str, &str>) -> (Vec<String>, String) {
    let module = rel.strip_suffix("/mod.rs").unwrap_or(rel.trim_end_matches(".rs"));
    let (dir, name) = module.rsplit_once('/').unwrap_or(("", module));
    let candidates = if dir.is_empty() {
        vec!["lib.rs".to_string()]
    } else {
        vec![format!("{dir}.rs"), format!("{dir}/mod.rs")]
    };
    let found: Vec<String> = candidates
        .iter()
        .filter(|c| files.contains_key(c.as_str()))
        .cloned()
        .collect();
    (if found.is_empty() { candidates } else { found }, name.to_string())
}

/// Whether `text` declares `mod NAME;` (a file of its own).
fn declares(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        ["pub(crate) mod ", "pub(super) mod ", "pub mod ", "mod "]
            .iter()
            .any(|p| l.strip_prefix(p).is_some_and(|r| r.strip_prefix(name) == Some(";")))
    })
}

/// Every way the `src/`-relative `files` (path, text) break the layout.
fn layout_violations(files: &[(&str, &str)]) -> Vec<String> {
    let by_path: HashMap<&str, &str> = files.iter().copied().collect();
    let mut out = Vec::new();
    for &(rel, text) in files {
        let mods = test_modules(text);
        for m in &mods {
            if m.name != "tests" && m.name != "test_support" {
                out.push(format!(
                    "src/{rel}: test module `{}` — a file's unit tests are its one `mod tests` (nest parts inside it)",
                    m.name
                ));
            }
            if m.path_attr {
                out.push(format!(
                    "src/{rel}: `#[path]` on test module `{}` — put the file where Rust looks ({})",
                    m.name,
                    default_tests_file(rel)
                ));
            }
        }
        let n = mods.iter().filter(|m| m.name == "tests").count();
        if n > 1 {
            out.push(format!("src/{rel}: {n} `mod tests` — one per file"));
        }
        if !is_test_file(rel) && non_test_code(text).contains("#[test]") {
            out.push(format!("src/{rel}: a #[test] outside `mod tests`"));
        }
        let stem = rel.trim_end_matches(".rs");
        if let Some(of) = stem.strip_suffix("_tests") {
            out.push(format!("src/{rel}: the tests of {of}.rs belong in {of}/tests.rs"));
        } else if is_test_file(rel) && !rel.contains("test_support") {
            let (parents, name) = parent_of(rel, &by_path);
            if !parents
                .iter()
                .any(|p| by_path.get(p.as_str()).is_some_and(|t| declares(t, &name)))
            {
                out.push(format!(
                    "src/{rel}: no `mod {name};` in {} — its tests are never compiled",
                    parents.join(" or ")
                ));
            }
        }
    }
    out
}

#[test]
fn unit_tests_follow_one_layout() {
    let files = src_files("");
    let pairs: Vec<(&str, &str)> = files.iter().map(|f| (f.rel.as_str(), f.text.as_str())).collect();
    let bad = layout_violations(&pairs);
    assert!(
        bad.is_empty(),
        "unit tests out of layout (see tests/README.md):\n{}",
        bad.join("\n")
    );
    // Not vacuous: there are test files and inline test modules to check.
    assert!(pairs.iter().filter(|(r, _)| r.ends_with("/tests.rs")).count() > 10);
    assert!(pairs.iter().filter(|(_, t)| t.contains("mod tests {")).count() > 30);
}

#[test]
fn the_layout_detector_catches_each_way_out() {
    let good = [
        (
            "kb/a.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() {}\n}\n",
        ),
        ("kb/b.rs", "fn g() {}\n\n#[cfg(test)]\nmod tests;\n"),
        ("kb/b/tests.rs", "use super::*;\nmod part;\n#[test]\nfn t() {}\n"),
        ("kb/b/tests/part.rs", "#[test]\nfn u() {}\n"),
        (
            "kb/mod.rs",
            "pub mod a;\npub mod b;\n#[cfg(test)]\npub(crate) mod test_support;\n#[cfg(test)]\nmod tests;\n",
        ),
        ("kb/tests.rs", "#[test]\nfn v() {}\n"),
        ("kb/test_support.rs", "pub fn helper() {}\n"),
    ];
    assert_eq!(layout_violations(&good), Vec::<String>::new());

    // A sibling file named by #[path], the old layout.
    let sibling = [
        ("kb/c.rs", "#[cfg(test)]\n#[path = \"c_tests.rs\"]\nmod tests;\n"),
        ("kb/c_tests.rs", "#[test]\nfn t() {}\n"),
    ];
    assert_eq!(
        layout_violations(&sibling),
        vec![
            "src/kb/c.rs: `#[path]` on test module `tests` — put the file where Rust looks (kb/c/tests.rs)",
            "src/kb/c_tests.rs: the tests of kb/c.rs belong in kb/c/tests.rs",
        ]
    );
    // A second test module beside `tests`, and a #[test] outside any.
    let split = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn a() {}\n}\n#[cfg(test)]\nmod gate_tests {\n    #[test]\n    fn b() {}\n}\n#[test]\nfn c() {}\n";
    assert_eq!(
        layout_violations(&[("ingest/web.rs", split)]),
        vec![
            "src/ingest/web.rs: test module `gate_tests` — a file's unit tests are its one `mod tests` (nest parts inside it)",
            "src/ingest/web.rs: a #[test] outside `mod tests`",
        ]
    );
    let twice = "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod tests {}\n";
    assert_eq!(
        layout_violations(&[("x.rs", twice), ("x/tests.rs", "")]),
        vec!["src/x.rs: 2 `mod tests` — one per file"]
    );
    // A tests file nobody declares never runs; nor does an undeclared part.
    let orphans = [
        ("kb/d.rs", "fn d() {}\n"),
        ("kb/d/tests.rs", "#[test]\nfn t() {}\n"),
        ("kb/e.rs", "#[cfg(test)]\nmod tests;\n"),
        ("kb/e/tests.rs", "#[test]\nfn t() {}\n"),
        ("kb/e/tests/lost.rs", "#[test]\nfn u() {}\n"),
    ];
    assert_eq!(
        layout_violations(&orphans),
        vec![
            "src/kb/d/tests.rs: no `mod tests;` in kb/d.rs — its tests are never compiled",
            "src/kb/e/tests/lost.rs: no `mod lost;` in kb/e/tests.rs — its tests are never compiled",
        ]
    );
}
