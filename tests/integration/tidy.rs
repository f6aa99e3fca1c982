//! Architecture invariants checked as ordinary tests (rust-analyzer style).
//!
//! One engine per module: fjall only in `store`, tantivy only in
//! `index/bm25*`, arroy/heed only in `index/vector*`, ort and tokenizers
//! only in `embed`, pdfium only in `pdf`, process spawning only in
//! `sandbox`. Library code prints nothing (only `cli` writes to stdout).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Whether `code` uses the path `name::` (not as part of a longer word).
fn uses(code: &str, name: &str) -> bool {
    let pat = format!("{name}::");
    code.match_indices(&pat).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    })
}

/// Source without `#[cfg(test)]` modules (tests may spawn and print).
fn non_test_code(text: &str) -> String {
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text.to_string(),
    }
}

fn is_test_file(rel: &str) -> bool {
    rel.ends_with("tests.rs") || rel.ends_with("_tests.rs") || rel.contains("test_support")
}

#[test]
fn one_engine_per_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rules: &[(&str, &[&str])] = &[
        ("fjall", &["store/"]),
        ("tantivy", &["index/bm25"]),
        ("arroy", &["index/vector"]),
        ("heed", &["index/vector"]),
        ("ort", &["embed/"]),
        ("tokenizers", &["embed/"]),
        ("pdfium_render", &["pdf/"]),
    ];
    let mut violations = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        for (engine, allowed) in rules {
            if uses(&text, engine) && !allowed.iter().any(|a| rel.starts_with(a)) {
                violations.push(format!("{rel} uses {engine}"));
            }
        }
        let code = non_test_code(&text);
        if !is_test_file(&rel) && !rel.starts_with("sandbox/") && code.contains("Command::new") {
            violations.push(format!("{rel} spawns a process outside src/sandbox/"));
        }
        if !is_test_file(&rel) && !rel.starts_with("cli/") && (code.contains("println!") || code.contains("print!(")) {
            violations.push(format!("{rel} prints to stdout outside src/cli/"));
        }
    }
    assert!(
        violations.is_empty(),
        "architecture invariants broken:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_detector_itself_works() {
    assert!(uses("use fjall::Database;", "fjall"));
    assert!(uses("let x = ort::init_from(p);", "ort"));
    assert!(!uses("v.sort::<u8>()", "ort"));
    assert!(!uses("crate::embed::ort_version", "ort"));
}

#[test]
fn library_files_stay_reviewable() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 900).then(|| format!("{} has {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}
