//! Every settings key the code reads by name exists in `config/schema.rs`
//! with a kind that fits how it is read.
//!
//! `Config` is read by string key (`cfg.int("rag.chunk_size")`), and a
//! misspelt key reads as the neutral value (0, "", false) without a word.
//! This test finds every `.int(`/`.str(`/`.bool(`/`.opt_str(`/`.path(`/
//! `.list(`/`.pairs(`/`.secret(`/`.value(`/`.origin(` call in `src/` whose
//! argument is a dotted string literal (`section.key`; tool arguments have
//! no dot) and checks it against `jarvis::config::schema::FIELDS`. A key
//! built at run time is not seen here: those few sites read through a
//! helper whose callers pass literals, and the test names how many literal
//! reads it checked so a drop shows.

use jarvis::config::schema::{Field, Kind, FIELDS};

use crate::support::tidy::src_files;

const ACCESSORS: &[&str] = &[
    "int", "str", "bool", "opt_str", "path", "list", "pairs", "secret", "value", "origin",
];

/// `(accessor, key)` for every `.ACCESSOR( "section.key" )` in `code`.
fn reads(code: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for acc in ACCESSORS {
        let pat = format!(".{acc}(");
        for (i, _) in code.match_indices(&pat) {
            let rest = code[i + pat.len()..].trim_start();
            let Some(lit) = rest.strip_prefix('"') else { continue };
            let Some(end) = lit.find('"') else { continue };
            let key = &lit[..end];
            let after = lit[end + 1..].trim_start();
            let dotted = key.split_once('.').is_some_and(|(s, k)| {
                !s.is_empty()
                    && !k.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
            });
            if dotted && after.starts_with(')') {
                out.push((*acc, key.to_string()));
            }
        }
    }
    out
}

/// Whether a setting of `kind` can be read with `accessor` (the accessors
/// fall back to a neutral value on any other kind).
fn fits(accessor: &str, kind: Kind) -> bool {
    match accessor {
        "int" => matches!(kind, Kind::Int { .. }),
        "bool" => matches!(kind, Kind::Bool),
        "str" | "opt_str" | "secret" => matches!(
            kind,
            Kind::Str
                | Kind::NonEmpty
                | Kind::Choice(_)
                | Kind::Path
                | Kind::OptPath
                | Kind::OptStr
                | Kind::Secret
                | Kind::ProviderSpec
        ),
        "path" => matches!(kind, Kind::Path | Kind::OptPath),
        "list" => matches!(kind, Kind::StrList),
        "pairs" => matches!(kind, Kind::PairList),
        "value" | "origin" => true,
        _ => false,
    }
}

fn field(key: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.dotted() == key)
}

/// The problems with the reads in one file.
fn problems(rel: &str, code: &str) -> Vec<String> {
    reads(code)
        .into_iter()
        .filter_map(|(acc, key)| match field(&key) {
            None => Some(format!("src/{rel} reads `{key}`, which config/schema.rs does not have")),
            Some(f) if !fits(acc, f.kind) => Some(format!(
                "src/{rel} reads `{key}` with .{acc}(), but it is {:?} in config/schema.rs",
                f.kind
            )),
            Some(_) => None,
        })
        .collect()
}

#[test]
fn every_settings_key_read_exists_in_the_schema_with_its_type() {
    let mut found = 0;
    let mut bad = Vec::new();
    for f in src_files("") {
        found += reads(&f.text).len();
        bad.extend(problems(&f.rel, &f.text));
    }
    assert!(
        found > 100,
        "only {found} literal settings reads found — did the accessors change?"
    );
    assert!(
        bad.is_empty(),
        "settings read by a key the schema lacks:\n{}",
        bad.join("\n")
    );
}

/// Library files (not `config/`, not `app/`, not test code) that read a
/// setting by its key.
fn reads_outside_app(rel: &str, code: &str) -> Vec<String> {
    let exempt = rel.starts_with("config/")
        || rel.starts_with("app/")
        || rel.ends_with("tests.rs")
        || rel.contains("/tests/")
        || rel.ends_with("test_support.rs");
    if exempt {
        return Vec::new();
    }
    reads(code)
        .into_iter()
        .map(|(acc, key)| format!("src/{rel} reads `{key}` with .{acc}() — ask `App` (or take typed settings) instead"))
        .collect()
}

#[test]
fn settings_are_read_by_key_only_in_config_and_app() {
    // Features receive their settings and edges ask `App`, so a key is
    // spelt in one layer and a typo there is the only place to look.
    let bad: Vec<String> = src_files("")
        .iter()
        .flat_map(|f| reads_outside_app(&f.rel, &f.text))
        .collect();
    assert!(
        bad.is_empty(),
        "settings read by key outside config/ and app/:\n{}",
        bad.join("\n")
    );
    // The detector fires on an edge that reads a key itself.
    let edge = r#"let vault = state.app.config().path("vault.path");"#;
    assert_eq!(reads_outside_app("web/routes/chat.rs", edge).len(), 1);
    assert!(reads_outside_app("app/mod.rs", edge).is_empty());
}

#[test]
fn the_settings_detector_catches_a_misspelt_key_and_a_wrong_type() {
    let code = r#"
        let n = cfg.int("rag.chunk_size");
        let m = cfg.int("rag.chunk_sise");
        let b = cfg.bool(
            "rag.chunk_size"
        );
        let t = a.str("query");
        let p = a.str("source.path.x");
    "#;
    assert_eq!(
        problems("x.rs", code),
        vec![
            "src/x.rs reads `rag.chunk_sise`, which config/schema.rs does not have".to_string(),
            "src/x.rs reads `source.path.x`, which config/schema.rs does not have".to_string(),
            format!(
                "src/x.rs reads `rag.chunk_size` with .bool(), but it is {:?} in config/schema.rs",
                field("rag.chunk_size").unwrap().kind
            ),
        ]
    );
}
