//! Test-only access to the native pieces (ONNX Runtime, the MiniLM model and
//! its tokenizer). One place decides where they live so the whole suite can be
//! pointed elsewhere (e.g. the bundled runtime directory) by changing it here.
//!
//! Missing natives fail the test with a message saying what to fetch; they
//! never make a test pass by skipping it.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::registry::{self, ModelFiles, DEFAULT_MODEL_ID};
use super::Embedder;

/// Environment variable naming a directory with `libonnxruntime.so`,
/// `model.onnx` and `tokenizer.json`.
pub(crate) const NATIVES_ENV: &str = "JARVIS_TEST_NATIVES";
const FALLBACK_DIR: &str = "/work/natives-dev";

pub(crate) struct Natives {
    pub ort_dylib: PathBuf,
    pub files: ModelFiles,
}

/// The natives directory, or a panic that names every missing file.
pub(crate) fn natives() -> Natives {
    let dir = std::env::var_os(NATIVES_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(FALLBACK_DIR), PathBuf::from);
    let natives = Natives {
        ort_dylib: dir.join("libonnxruntime.so"),
        files: ModelFiles::in_dir(&dir),
    };
    let missing: Vec<String> = [&natives.ort_dylib, &natives.files.model, &natives.files.tokenizer]
        .into_iter()
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "embedding tests need the native runtime pieces, missing: {}. Set {NATIVES_ENV} to a \
         directory holding libonnxruntime.so (>= 1.23), model.onnx (all-MiniLM-L6-v2 int8) and \
         tokenizer.json — see shared/brief/runtime-assets.md for where they come from",
        missing.join(", ")
    );
    natives
}

/// One MiniLM embedder shared by every test in the binary: a session costs
/// ~0.5 s to load and tests run in parallel on two cores.
pub(crate) fn shared_embedder() -> MutexGuard<'static, Embedder> {
    static SHARED: OnceLock<Mutex<Embedder>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let n = natives();
            let spec = registry::lookup(DEFAULT_MODEL_ID).expect("registry has the default model");
            let embedder = Embedder::load(&n.ort_dylib, &n.files, spec, None, 2)
                .unwrap_or_else(|e| panic!("loading the test embedder failed: {e}"));
            Mutex::new(embedder)
        })
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}
