//! The layer order, checked on every `crate::` import of library code.
//!
//! The order is written once, as `jarvis::LAYERS` in `src/lib.rs`: a
//! module may use only the modules after it. Test code (`mod tests`
//! blocks, `tests.rs` files, `tests/` folders, `test_support`) is exempt:
//! a test may set up its subject with a higher layer's help.

use std::path::Path;

use crate::support::tidy::{is_test_file, library_code, src_dir, src_files};

/// The top-level module a `src/`-relative path belongs to.
fn module_of(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Imports in `code` (of module `own`) that run up or sideways.
fn violations(rel: &str, code: &str, layers: &[&str]) -> Vec<String> {
    let own = module_of(rel);
    let Some(rank) = layers.iter().position(|m| *m == own) else {
        return vec![format!("src/{rel}: module `{own}` is not in jarvis::LAYERS")];
    };
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let name: String = code[i + "crate::".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let Some(used) = layers.iter().position(|m| *m == name) else {
            continue; // a macro (`crate::web_error_from!`) or not a module
        };
        if used <= rank && name != own {
            let msg = format!("src/{rel} ({own}) uses crate::{name}, which is not below it");
            if !out.contains(&msg) {
                out.push(msg);
            }
        }
    }
    out
}

#[test]
fn every_import_runs_down_the_layers() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    // LAYERS names every top-level module, once.
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';')))
        .collect();
    let mut listed = jarvis::LAYERS.to_vec();
    let mut mods = declared.clone();
    listed.sort_unstable();
    mods.sort_unstable();
    assert_eq!(listed, mods, "jarvis::LAYERS and the `pub mod`s of src/lib.rs differ");

    let mut bad = Vec::new();
    for f in src_files("") {
        if f.rel == "lib.rs" || f.rel == "main.rs" || is_test_file(&f.rel) {
            continue;
        }
        bad.extend(violations(&f.rel, &library_code(&f.text), jarvis::LAYERS));
    }
    assert!(
        bad.is_empty(),
        "imports against the layer order (jarvis::LAYERS):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_layer_detector_catches_a_wrong_import() {
    let layers = jarvis::LAYERS;
    assert_eq!(
        violations("kb/x.rs", "use crate::app::App;\nuse crate::store::Store;\n", layers),
        vec!["src/kb/x.rs (kb) uses crate::app, which is not below it"]
    );
    // Sideways is up too: web is above mcp, so mcp may not use web.
    assert_eq!(
        violations("mcp/x.rs", "let s = crate::web::serve;", layers),
        vec!["src/mcp/x.rs (mcp) uses crate::web, which is not below it"]
    );
    assert!(violations(
        "web/x.rs",
        "use crate::mcp::JarvisMcp; crate::web_error_from!(X);",
        layers
    )
    .is_empty());
    // Test code may reach up.
    let code = library_code("fn f() {}\n#[cfg(test)]\nmod tests { use crate::app::App; }\n");
    assert!(violations("kb/y.rs", &code, layers).is_empty());
    assert_eq!(
        violations("newmod.rs", "", layers).len(),
        1,
        "an unlisted module is named"
    );
}

/// What `docs/ARCHITECTURE.md` claims about the layers: the modules of the
/// diagram under "## Code map" in reading order, and the modules its
/// `### src/…` sections are about, in the order they appear.
fn documented_order(doc: &str) -> Result<(Vec<String>, Vec<String>), String> {
    const ROW_LABELS: &[&str] = &[
        "edges",
        "composition",
        "features",
        "engines",
        "truth",
        "processes",
        "foundations",
    ];
    let map = doc
        .split("\n## Code map\n")
        .nth(1)
        .ok_or("no \"## Code map\" section")?;
    let map = map.split("\n## ").next().unwrap_or(map);
    let diagram = map
        .split("```")
        .nth(1)
        .ok_or("the code map has no diagram of the layers")?;
    let diagram: Vec<String> = diagram
        .split_whitespace()
        .filter(|w| !ROW_LABELS.contains(w))
        .map(str::to_string)
        .collect();
    let mut sections = Vec::new();
    for line in map.lines().filter(|l| l.starts_with("### ")) {
        // "### `src/cli/` — edge", "### `src/runtime/`, `src/sandbox/` — …"
        for part in line.split('`').filter(|p| p.starts_with("src/")) {
            let m = part
                .trim_start_matches("src/")
                .trim_end_matches('/')
                .trim_end_matches(".rs");
            sections.push(m.to_string());
        }
    }
    Ok((diagram, sections))
}

/// Differences between the documented order and `layers`; empty when the
/// map is true.
fn map_drift(doc: &str, layers: &[&str]) -> Vec<String> {
    let (diagram, sections) = match documented_order(doc) {
        Ok(x) => x,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    if diagram != layers {
        out.push(format!(
            "the code map's diagram lists {diagram:?}, jarvis::LAYERS is {layers:?}"
        ));
    }
    let mut last = 0;
    for m in &sections {
        match layers.iter().position(|l| l == m) {
            None => out.push(format!(
                "a code-map section is about `{m}`, which is not in jarvis::LAYERS"
            )),
            Some(i) if i < last => out.push(format!("the code-map section on `{m}` is out of layer order")),
            Some(i) => last = i,
        }
    }
    out
}

#[test]
fn the_architecture_map_follows_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let drift = map_drift(&doc, jarvis::LAYERS);
    assert!(
        drift.is_empty(),
        "docs/ARCHITECTURE.md has drifted from the code:\n{}",
        drift.join("\n")
    );
    // Every detail document the map links to exists.
    for link in doc.split("](design/").skip(1) {
        let file = link.split([')', '#']).next().unwrap_or_default();
        let target = root.join("docs/design").join(file);
        assert!(target.exists(), "docs/design/{file} is linked but missing");
    }
}

#[test]
fn the_map_drift_detector_catches_a_swap() {
    let doc = "# A\n\n## Code map\n\n```\nedges  cli web\ntruth  store\n```\n\n### `src/cli/` — edge\n\n### `src/store/` — truth\n\n## Invariants\n";
    assert!(map_drift(doc, &["cli", "web", "store"]).is_empty());
    // A layer list that moved on without the map.
    assert_eq!(map_drift(doc, &["cli", "web", "app", "store"]).len(), 1);
    // Sections in the wrong order.
    let swapped = doc
        .replace("`src/cli/` — edge", "`src/tmp/`")
        .replace("`src/store/` — truth", "`src/cli/`");
    let swapped = swapped.replace("`src/tmp/`", "`src/store/`");
    assert_eq!(map_drift(&swapped, &["cli", "web", "store"]).len(), 1);
}
