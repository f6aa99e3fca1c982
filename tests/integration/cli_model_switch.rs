//! Switching the embedding model end to end: `rag.embed_model = "<registry
//! name>"` + `jarvis kb reindex` downloads the model's files from a Hub
//! mirror (here a loopback server serving the bundled MiniLM files under
//! the test-only registry entry `jarvis-test/minilm-mirror`), verifies them
//! against the registry's pins into `$JARVIS_HOME/models/`, and re-embeds.
//! The same for a re-ranker (`rag.rerank_model`, the committed tiny
//! cross-encoder under the test-only entry `jarvis-test/tiny-cross-encoder`),
//! plus its time budget.

use std::path::Path;

use crate::support::fakes::stand::{Answer, Stand};
use crate::support::net::dead_url;
use crate::support::runtime::bundled_model;
use crate::support::{run, Sandbox};

const MIRROR: &str = "jarvis-test/minilm-mirror";
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

/// The bundled model and tokenizer bytes.
fn bundled() -> (Vec<u8>, Vec<u8>) {
    let (m, t) = bundled_model();
    (std::fs::read(m).unwrap(), std::fs::read(t).unwrap())
}

/// A loopback Hub serving `files` by path (404 otherwise).
fn hub(files: Vec<(String, Vec<u8>)>) -> String {
    let hub = Stand::one_at_a_time(move |req, _| match files.iter().find(|(p, _)| *p == req.path) {
        Some((_, b)) => Answer::ok("application/octet-stream", b.clone()),
        None => Answer::status(404, "not found"),
    });
    hub.url
}

fn files(model: Vec<u8>, tokenizer: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    vec![
        (format!("/{MIRROR}/resolve/{REVISION}/onnx/model.onnx"), model),
        (format!("/{MIRROR}/resolve/{REVISION}/tokenizer.json"), tokenizer),
    ]
}

/// A sandbox with a two-note vault indexed with the bundled model.
fn indexed() -> Sandbox {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(
        vault.join("volcano.md"),
        "# Volcanoes\nBasalt lava flows from shield volcanoes.\n",
    )
    .unwrap();
    std::fs::write(vault.join("bread.md"), "# Bread\nSourdough needs a lively starter.\n").unwrap();
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    sb
}

fn switch(sb: &Sandbox) {
    let text = std::fs::read_to_string(sb.config_file()).unwrap();
    sb.write_config(&format!("{text}\n[rag]\nembed_model = \"{MIRROR}\"\n"));
}

fn jarvis(sb: &Sandbox, base: &str, args: &[&str]) -> crate::support::Run {
    let mut c = sb.jarvis();
    c.env("HF_ENDPOINT", base).args(args);
    run(c)
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the test-only registry entry: cargo xtask test (or --features failpoints)"
)]
fn naming_a_registry_model_and_reindexing_downloads_verifies_and_reembeds() {
    let (model, tokenizer) = bundled();
    let base = hub(files(model.clone(), tokenizer));
    let sb = indexed();
    switch(&sb);
    // Before the reindex: searches say what to do.
    let r = jarvis(&sb, &base, &["kb", "search", "lava"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("jarvis kb reindex"), "{}", r.stderr);

    let r = jarvis(&sb, &base, &["kb", "reindex", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("sha256 verified"), "{}", r.stderr);
    let dir = sb.jarvis_home().join("models").join("jarvis-test--minilm-mirror");
    assert_eq!(std::fs::read(dir.join("model.onnx")).unwrap(), model);
    assert!(dir.join("tokenizer.json").is_file());
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["model"], MIRROR, "{v}");

    let r = jarvis(&sb, &base, &["kb", "search", "lava", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("volcano.md"), "{}", r.stdout);
    // Another reindex verifies the files on disk and downloads nothing.
    let r = jarvis(&sb, &base, &["kb", "reindex"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("downloaded"), "{}", r.stderr);
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the test-only registry entry: cargo xtask test (or --features failpoints)"
)]
fn a_mirror_serving_other_bytes_or_no_network_fails_clearly_and_changes_nothing() {
    let (model, tokenizer) = bundled();
    let dir_of = |sb: &Sandbox| sb.jarvis_home().join("models").join("jarvis-test--minilm-mirror");
    let sb = indexed();
    switch(&sb);

    // Another file altogether: its size alone gives it away.
    let base = hub(files(b"not the pinned model".to_vec(), tokenizer.clone()));
    let r = jarvis(&sb, &base, &["kb", "reindex"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("not the pinned 22928619"), "{}", r.stderr);
    assert!(
        !dir_of(&sb).join("model.onnx").exists(),
        "a mismatching file is never kept"
    );

    // The right size with one byte changed: the sha256 refuses it, the
    // error names the file, and the file is gone.
    let mut one_byte_off = model;
    let mid = one_byte_off.len() / 2;
    one_byte_off[mid] ^= 0x01;
    let base = hub(files(one_byte_off, tokenizer));
    let r = jarvis(&sb, &base, &["kb", "reindex"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("pinned sha256"), "{}", r.stderr);
    assert!(
        r.stderr.contains(&dir_of(&sb).join("model.onnx").display().to_string()) && r.stderr.contains("was deleted"),
        "{}",
        r.stderr
    );
    assert!(
        !dir_of(&sb).join("model.onnx").exists(),
        "a mismatching file is never kept"
    );
    let stray: Vec<_> = std::fs::read_dir(dir_of(&sb))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "tokenizer.json")
        .collect();
    assert!(stray.is_empty(), "nothing half-written is left: {stray:?}");

    // Offline: nothing listens at the endpoint.
    let dead = dead_url();
    let r = jarvis(&sb, &dead, &["kb", "reindex"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("internet connection") && r.stderr.contains("runtime.model_dir"),
        "{}",
        r.stderr
    );
    // The old index still answers once the config names the bundled model again.
    let text = std::fs::read_to_string(sb.config_file()).unwrap();
    sb.write_config(&text.replace(&format!("embed_model = \"{MIRROR}\""), ""));
    let r = jarvis(&sb, &dead, &["kb", "search", "lava", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("volcano.md"), "{}", r.stdout);
}

const RERANKER: &str = "jarvis-test/tiny-cross-encoder";
const RERANKER_REVISION: &str = "89abcdef0123456789abcdef0123456789abcdef";

/// The committed tiny cross-encoder, as a mirror serves the Xenova layout.
fn reranker_files(model: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-cross-encoder");
    vec![
        (
            format!("/{RERANKER}/resolve/{RERANKER_REVISION}/onnx/model_quantized.onnx"),
            model,
        ),
        (
            format!("/{RERANKER}/resolve/{RERANKER_REVISION}/tokenizer.json"),
            std::fs::read(dir.join("tokenizer.json")).unwrap(),
        ),
    ]
}

fn tiny_model() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-cross-encoder/model.onnx")).unwrap()
}

fn with_reranker(sb: &Sandbox, extra: &str) {
    let text = std::fs::read_to_string(sb.config_file()).unwrap();
    sb.write_config(&format!("{text}\n[rag]\nrerank_model = \"{RERANKER}\"\n{extra}"));
}

fn order(stdout: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["chunk_id"].as_u64().unwrap())
        .collect()
}

/// `rag.rerank_model = "<registry name>"` works like the embedding switch:
/// the first re-ranked search downloads the pinned files from the mirror,
/// verifies them (size and sha256) into `$JARVIS_HOME/models/`, and
/// re-ranks; `--json` says it did. Later searches fetch nothing.
#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the test-only registry entry: cargo xtask test (or --features failpoints)"
)]
fn a_registry_reranker_is_downloaded_verified_and_used() {
    let base = hub(reranker_files(tiny_model()));
    let sb = indexed();
    with_reranker(&sb, "");
    let r = jarvis(&sb, &base, &["kb", "search", "lava", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["rerank"], "applied", "{v}");
    let dir = sb.jarvis_home().join("models").join("jarvis-test--tiny-cross-encoder");
    assert_eq!(std::fs::read(dir.join("model.onnx")).unwrap(), tiny_model());
    assert!(dir.join("tokenizer.json").is_file());

    // Offline now: the verified files on disk are enough.
    let dead = dead_url();
    let r = jarvis(&sb, &dead, &["kb", "search", "lava", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["rerank"], "applied", "{v}");
    let r = jarvis(&sb, &dead, &["kb", "search", "lava", "--json", "--no-rerank"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["rerank"], "off", "{v}");
}

/// One wrong byte in the mirror's model is refused: the search fails,
/// naming the pin, and nothing is kept.
#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the test-only registry entry: cargo xtask test (or --features failpoints)"
)]
fn a_reranker_with_one_wrong_byte_is_refused() {
    let mut model = tiny_model();
    let mid = model.len() / 2;
    model[mid] ^= 0x01;
    let base = hub(reranker_files(model));
    let sb = indexed();
    with_reranker(&sb, "");
    let r = jarvis(&sb, &base, &["kb", "search", "lava", "--json"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("pinned sha256") && r.stderr.contains("--no-rerank"),
        "{}",
        r.stderr
    );
    let dir = sb.jarvis_home().join("models").join("jarvis-test--tiny-cross-encoder");
    assert!(!dir.join("model.onnx").exists(), "a mismatching file is never kept");
    // Searching without the re-ranker still works.
    let r = jarvis(&sb, &base, &["kb", "search", "lava", "--no-rerank"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// A re-rank that would exceed `rag.rerank_budget_ms` returns the fused
/// order and says so (the `rerank_slow` failpoint makes every batch
/// slower than the budget).
#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the test-only registry entry and failpoints: cargo xtask test (or --features failpoints)"
)]
fn a_rerank_over_its_budget_keeps_the_fused_order_and_says_so() {
    let base = hub(reranker_files(tiny_model()));
    let sb = indexed();
    with_reranker(&sb, "rerank_budget_ms = 5\n");
    let fused = jarvis(&sb, &base, &["kb", "search", "sourdough lava", "--json", "--no-rerank"]);
    assert_eq!(fused.code, 0, "{}", fused.stderr);
    let mut c = sb.jarvis();
    c.env("HF_ENDPOINT", &base)
        .env("JARVIS_FAILPOINT", "rerank_slow")
        .args(["kb", "search", "sourdough lava", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["rerank"], "over_budget", "{v}");
    assert_eq!(order(&r.stdout), order(&fused.stdout));
    assert!(order(&r.stdout).len() >= 2, "{}", r.stdout);
}
