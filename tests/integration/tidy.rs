//! Architecture invariants checked as ordinary tests (rust-analyzer style).
//!
//! One engine per module: fjall only in `store`, tantivy only in
//! `index/bm25*`, arroy/heed only in `index/vector*`, ort and tokenizers
//! only in `embed`, pdfium only in `pdf`, process spawning only in
//! `sandbox`, the HTTP server (axum, hyper, tower) only in `web`, the
//! scheduler and the file watcher (notify) only in `jobs`, rmcp only in
//! `mcp` (and the `/mcp` route that carries it), clap only in `cli`, and the blocking HTTP
//! client (ureq) only in the LLM layer and the fetchers: `ingest` (arXiv,
//! bioRxiv), `digest`, the embedding-model download in `embed/registry*`,
//! and the MCP client's HTTP transport (`mcp_client/http.rs`); SQLite (rusqlite) only in `ingest/zotero/db*`, which
//! reads Zotero's database. Library code prints nothing (only `cli` writes to
//! stdout). Library files stay under 800 lines.
//!
//! Test code is exempt from the spawning and printing rules (not from the
//! engine rules): `mod tests { … }` blocks are cut out of each file
//! (only those blocks — the rest of the file is checked whole), and test
//! files (`tests.rs`, anything under a `tests/` folder, `test_support`) are
//! skipped for the spawning and printing rules.

use crate::support::tidy::{is_test_file, library_code, non_test_code, src_files};

/// Whether `code` uses the path `name::` (not as part of a longer word).
fn uses(code: &str, name: &str) -> bool {
    let pat = format!("{name}::");
    code.match_indices(&pat).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    })
}

/// (crate, module prefixes allowed to use it).
const RULES: &[(&str, &[&str])] = &[
    ("fjall", &["store/"]),
    ("tantivy", &["index/bm25"]),
    ("arroy", &["index/vector"]),
    ("heed", &["index/vector"]),
    ("ort", &["embed/"]),
    ("tokenizers", &["embed/"]),
    ("pdfium_render", &["pdf/"]),
    ("axum", &["web/"]),
    ("hyper", &["web/"]),
    ("hyper_util", &["web/"]),
    ("tower", &["web/"]),
    ("tower_http", &["web/"]),
    ("tokio_cron_scheduler", &["jobs/"]),
    ("notify", &["jobs/"]),
    // The MCP protocol in `mcp`; its HTTP transport is the web's.
    ("rmcp", &["mcp/", "web/routes/mcp.rs"]),
    ("clap", &["cli/"]),
    ("clap_complete", &["cli/"]),
    (
        "ureq",
        &["llm/", "ingest/", "digest/", "embed/registry", "mcp_client/http.rs"],
    ),
    // Zotero's database, read from a copy (its tests build one).
    ("rusqlite", &["ingest/zotero/db"]),
];

fn violations_in(rel: &str, text: &str) -> Vec<String> {
    let mut violations = Vec::new();
    let code = non_test_code(text);
    // Engines are checked on the whole file, tests included.
    for (engine, allowed) in RULES {
        if uses(text, engine) && !allowed.iter().any(|a| rel.starts_with(a)) {
            violations.push(format!("{rel} uses {engine}"));
        }
    }
    if !is_test_file(rel) && !rel.starts_with("sandbox/") && code.contains("Command::new") {
        violations.push(format!("{rel} spawns a process outside src/sandbox/"));
    }
    if !is_test_file(rel) && !rel.starts_with("cli/") && (code.contains("println!") || code.contains("print!(")) {
        violations.push(format!("{rel} prints to stdout outside src/cli/"));
    }
    violations
}

#[test]
fn one_engine_per_module() {
    let mut violations = Vec::new();
    for f in src_files("") {
        violations.extend(violations_in(&f.rel, &f.text));
    }
    assert!(
        violations.is_empty(),
        "architecture invariants broken:\n{}",
        violations.join("\n")
    );
}

/// What an edge must not name: the engines, the store, the sandbox and
/// the composition entry points. Composing is `app`'s job; an edge parses,
/// calls an `App` method, and renders.
const COMPOSITION: &[&str] = &[
    "crate::store",
    "crate::embed",
    "crate::index::bm25",
    "crate::index::vector",
    "crate::pdf::",
    "crate::sandbox",
    "crate::runtime::",
    "open_kb",
    "Kb::open",
    "add_document",
    "ingest::vault::refresh_vault",
    "crate::kb::Kb;",
];

/// The composition names `text` (an edge file, `src/`-relative `rel`)
/// uses outside its test code and comments.
fn composition_violations(rel: &str, text: &str) -> Vec<String> {
    let code = library_code(text);
    COMPOSITION
        .iter()
        .filter(|name| code.contains(**name))
        .map(|name| format!("src/{rel} uses {name}"))
        .collect()
}

/// The edges (`cli`, `web`, `mcp`) never compose: they call `App`.
#[test]
fn edges_do_not_compose() {
    let mut violations = Vec::new();
    for edge in ["cli", "web", "mcp"] {
        let files = src_files(edge);
        assert!(!files.is_empty(), "src/{edge} moved?");
        for f in &files {
            violations.extend(composition_violations(&f.rel, &f.text));
        }
    }
    assert!(
        violations.is_empty(),
        "an edge composes instead of calling App:\n{}",
        violations.join("\n")
    );
    // The detector itself: a deliberately wrong import is caught, a
    // comment or a test module naming it is not.
    assert_eq!(
        composition_violations("web/routes/x.rs", "use crate::kb::Kb;\nfn f() {}\n"),
        vec!["src/web/routes/x.rs uses crate::kb::Kb;"]
    );
    assert_eq!(
        composition_violations("mcp/x.rs", "use crate::store::ChunkRecord;\n"),
        vec!["src/mcp/x.rs uses crate::store"]
    );
    let fine = "// crate::store is app's\n#[cfg(test)]\nmod tests { use crate::store::Store; }\n";
    assert!(composition_violations("cli/x.rs", fine).is_empty());
}

/// Whether `code` names the configuration type: `config::Config`,
/// `&Config`, or `Config` in a `use crate::config::…` line (not
/// `ConfigError`, a `ServerConfig`, or an enum variant called `Config`).
fn names_config(code: &str) -> bool {
    code.lines().any(|line| {
        line.match_indices("Config").any(|(i, _)| {
            let before = &line[..i];
            let after = line[i + "Config".len()..].chars().next();
            let whole = !before
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_');
            // `config::Config` of this crate, not `ureq::config::Config`.
            let ours = before.ends_with("crate::config::")
                || (before.ends_with("config::") && !before[..before.len() - "config::".len()].ends_with(':'));
            whole && (ours || before.ends_with('&') || line.contains("crate::config::"))
        })
    })
}

/// Only `app` (and the edges, which hand it over) read the configuration:
/// a feature or an engine receives its settings as a struct of its own.
#[test]
fn only_app_and_the_edges_read_the_configuration() {
    let allowed = ["app/", "cli/", "web/", "mcp/", "config/"];
    let mut violations = Vec::new();
    for f in src_files("") {
        if allowed.iter().any(|a| f.rel.starts_with(a)) || is_test_file(&f.rel) {
            continue;
        }
        if names_config(&library_code(&f.text)) {
            violations.push(format!(
                "src/{} reads Config (take a settings struct from app instead)",
                f.rel
            ));
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    assert!(names_config("fn f(cfg: &crate::config::Config) {}"));
    assert!(names_config("use crate::config::{Config, Env};"));
    assert!(!names_config("ConfigError + StreamableHttpServerConfig"));
    assert!(!names_config("LlmError::Config { message } => message,"));
    assert!(!names_config("fn f(config: &ureq::config::Config) {}"));
}

#[test]
fn the_detector_itself_works() {
    assert!(uses("use fjall::Database;", "fjall"));
    assert!(uses("let x = ort::init_from(p);", "ort"));
    assert!(!uses("v.sort::<u8>()", "ort"));
    assert!(!uses("crate::embed::ort_version", "ort"));
    // Only the test module is cut: code after it is still checked.
    let file = "use a::b;\n#[cfg(test)]\nmod tests {\n    fn f() { if x { println!(\"ok\") } }\n}\n\nfn late() { std::process::Command::new(\"sh\"); }\n";
    let code = non_test_code(file);
    assert!(!code.contains("println!") && code.contains("Command::new"), "{code}");
    assert_eq!(
        violations_in("kb/x.rs", file),
        vec!["kb/x.rs spawns a process outside src/sandbox/"]
    );
    // A test-only item that is not a module does not end the check.
    let file = "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nfn helper() {}\nfn g() { ureq::get(\"x\"); }\n";
    assert_eq!(violations_in("kb/y.rs", file), vec!["kb/y.rs uses ureq"]);
    assert!(violations_in("llm/http.rs", file).is_empty());
    assert_eq!(violations_in("kb/z.rs", "use axum::Router;"), vec!["kb/z.rs uses axum"]);
    assert_eq!(violations_in("app/z.rs", "clap::Parser"), vec!["app/z.rs uses clap"]);
    let sqlite = "use rusqlite::Connection;";
    assert_eq!(
        violations_in("ingest/zotero.rs", sqlite),
        vec!["ingest/zotero.rs uses rusqlite"]
    );
    assert!(violations_in("ingest/zotero/db.rs", sqlite).is_empty());
    assert!(violations_in("ingest/zotero/db/tests.rs", sqlite).is_empty());
}

#[test]
fn library_files_stay_reviewable() {
    let long: Vec<String> = src_files("")
        .iter()
        .filter_map(|f| {
            let n = f.text.lines().count();
            (n > 800).then(|| format!("src/{} has {n} lines", f.rel))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these files (800 lines at most):\n{}",
        long.join("\n")
    );
}

/// What writes to the filesystem: `std::fs` / `tokio::fs` calls that
/// create, change or remove, open options, temporary files and folders.
const WRITES: &[&str] = &[
    "fs::write",
    "fs::create_dir",
    "fs::rename",
    "fs::copy",
    "fs::remove_",
    "fs::hard_link",
    "fs::symlink(",
    "set_permissions",
    "OpenOptions",
    "File::create",
    "File::options",
    "tokio::fs",
    "use std::fs",
    "tempfile::Builder",
    "tempfile::tempdir",
    "tempfile::tempfile",
    "NamedTempFile::",
    "TempDir::new",
    ".persist(",
];

/// Writes in a `src/drafts` file other than `drafts/disk.rs` (the one
/// writer, which records every path for the write spy in
/// web_drafts_spy.rs). Test code may plant files directly.
fn drafts_write_violations(rel: &str, text: &str) -> Vec<String> {
    if !rel.starts_with("drafts/") || rel == "drafts/disk.rs" || is_test_file(rel) {
        return Vec::new();
    }
    let code = library_code(text);
    WRITES
        .iter()
        .filter(|w| code.contains(**w))
        .map(|w| format!("src/{rel} writes with {w} instead of drafts::disk"))
        .collect()
}

/// Every filesystem write in `src/drafts` goes through `drafts::disk`, so
/// the write spy cannot be bypassed silently.
#[test]
fn drafts_write_only_through_their_disk_layer() {
    let files = src_files("drafts");
    assert!(files.len() > 5, "src/drafts moved? {} files", files.len());
    let mut violations = Vec::new();
    for f in &files {
        violations.extend(drafts_write_violations(&f.rel, &f.text));
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    // The detector itself.
    let bad = "fn f(p: &Path) { std::fs::write(p, b\"x\").unwrap(); }\n#[cfg(test)]\nmod tests { fn g() { std::fs::rename(a, b); } }\n";
    assert_eq!(
        drafts_write_violations("drafts/x.rs", bad),
        vec!["src/drafts/x.rs writes with fs::write instead of drafts::disk"]
    );
    assert!(drafts_write_violations("drafts/disk.rs", bad).is_empty());
    assert!(drafts_write_violations("kb/x.rs", bad).is_empty());
    let tmp = "let d = tempfile::Builder::new().tempdir()?;";
    assert_eq!(drafts_write_violations("drafts/y.rs", tmp).len(), 1);
}

/// Poison-recovering lock calls written out by hand in `code` (whitespace
/// ignored, so a call split over lines is seen).
fn hand_written_locks(code: &str) -> usize {
    let squashed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    [
        ".lock().unwrap_or_else(",
        ".read().unwrap_or_else(",
        ".write().unwrap_or_else(",
    ]
    .iter()
    .map(|p| squashed.matches(p).count())
    .sum()
}

#[test]
fn locks_are_taken_through_the_one_helper() {
    let bad: Vec<String> = src_files("")
        .iter()
        .filter(|f| f.rel != "lock.rs")
        .filter(|f| hand_written_locks(&f.text) > 0)
        .map(|f| {
            format!(
                "src/{} recovers a poisoned lock by hand — use crate::lock::{{lock, read, write}}",
                f.rel
            )
        })
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The detector sees a call split over lines.
    assert_eq!(
        hand_written_locks("m\n    .lock()\n    .unwrap_or_else(|p| p.into_inner())"),
        1
    );
    assert_eq!(hand_written_locks("crate::lock::lock(&m)"), 0);
}
