//! `jarvis runtime check`, including the single-file acceptance test: the
//! binary copied alone into an empty directory, with empty HOME and
//! JARVIS_HOME and a scrubbed environment, still finds everything it needs.

use std::path::Path;

use crate::support::{run, Sandbox};

const PIECES: &[&str] = &["onnxruntime + embedding model", "pdfium"];

fn check_json(sb: &Sandbox, bin: Option<&Path>) -> (i32, serde_json::Value, String) {
    let mut c = match bin {
        Some(b) => sb.jarvis_at(b),
        None => sb.jarvis(),
    };
    c.args(["runtime", "check", "--json"]);
    let r = run(c);
    let v = serde_json::from_str(&r.stdout).unwrap_or(serde_json::Value::Null);
    (r.code, v, r.stderr)
}

fn piece<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["pieces"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["piece"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

#[test]
fn cold_then_warm_check_passes_and_reports_provenance() {
    let sb = Sandbox::new();
    let (code, v, err) = check_json(&sb, None);
    assert_eq!(code, 0, "{err}\n{v}");
    for name in PIECES {
        let p = piece(&v, name);
        assert_eq!(p["ok"], true, "{name}: {p}");
        for f in p["files"].as_array().unwrap() {
            assert_eq!(f["provenance"], "bundled_fresh", "{f}");
            let path = f["path"].as_str().unwrap();
            assert!(
                path.starts_with(sb.jarvis_home().join("runtime").to_str().unwrap()),
                "{path}"
            );
            assert!(path.contains(f["sha256"].as_str().unwrap()), "{path}");
        }
        assert!(p["load_ms"].as_f64().is_some());
    }
    let (code, v, err) = check_json(&sb, None);
    assert_eq!(code, 0, "{err}");
    for name in PIECES {
        for f in piece(&v, name)["files"].as_array().unwrap() {
            assert_eq!(f["provenance"], "bundled_cached", "{f}");
        }
    }
}

#[test]
fn a_damaged_unpacked_library_is_repaired() {
    let sb = Sandbox::new();
    let (code, v, _) = check_json(&sb, None);
    assert_eq!(code, 0);
    let path = piece(&v, "pdfium")["files"][0]["path"].as_str().unwrap().to_string();
    std::fs::write(&path, b"not a shared library").unwrap();
    let (code, v, err) = check_json(&sb, None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(piece(&v, "pdfium")["files"][0]["provenance"], "bundled_repaired");
}

#[test]
fn a_broken_configured_library_fails_clearly() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.args(["runtime", "check"])
        .env("JARVIS_PDFIUM_LIB", "/nonexistent/libpdfium.so");
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(r.stdout.contains("FAIL pdfium"), "{}", r.stdout);
    assert!(
        r.stderr.contains("/nonexistent/libpdfium.so") && r.stderr.contains("runtime.pdfium"),
        "{}",
        r.stderr
    );

    let junk = sb.dir.path().join("libjunk.so");
    std::fs::write(&junk, b"\x7fELF garbage").unwrap();
    let mut c = sb.jarvis();
    c.args(["runtime", "check"]).env("JARVIS_PDFIUM_LIB", &junk);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("cannot load PDFium"), "{}", r.stderr);
}

#[test]
fn the_binary_alone_in_an_empty_directory_passes() {
    let sb = Sandbox::new();
    let alone = sb.dir.path().join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    let bin = alone.join("jarvis");
    std::fs::copy(env!("CARGO_BIN_EXE_jarvis"), &bin).unwrap();
    let mut c = sb.jarvis_at(&bin);
    c.current_dir(&alone).args(["runtime", "check", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["ok"], true);
    // Nothing was written next to the binary: everything went to JARVIS_HOME.
    let next_to_bin: Vec<_> = std::fs::read_dir(&alone).unwrap().collect();
    assert_eq!(next_to_bin.len(), 1);
    // And HOME was left alone too.
    assert_eq!(std::fs::read_dir(sb.home()).unwrap().count(), 0);
}

#[test]
fn a_broken_configured_onnxruntime_fails_clearly_and_pdfium_still_checks() {
    let sb = Sandbox::new();
    let junk = sb.dir.path().join("libonnxruntime.so");
    std::fs::write(&junk, b"\x7fELF not really").unwrap();
    let mut c = sb.jarvis();
    c.args(["runtime", "check", "--json"]).env("JARVIS_ORT_LIB", &junk);
    let r = run(c);
    assert_ne!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(piece(&v, "onnxruntime + embedding model")["ok"], false);
    assert_eq!(piece(&v, "pdfium")["ok"], true);
    assert!(r.stderr.contains("libonnxruntime.so"), "{}", r.stderr);
}
