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
/// `model.onnx` and `tokenizer.json`, to test against other natives than
/// the ones bundled into this build.
pub(crate) const NATIVES_ENV: &str = "JARVIS_TEST_NATIVES";

pub(crate) struct Natives {
    pub ort_dylib: PathBuf,
    pub files: ModelFiles,
}

/// The natives: from `JARVIS_TEST_NATIVES` when set, else the pieces bundled
/// into this build, unpacked once per test process into a temporary
/// JARVIS_HOME (never the real one).
pub(crate) fn natives() -> Natives {
    if let Some(dir) = std::env::var_os(NATIVES_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
    {
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
            "{NATIVES_ENV} is set but these files are missing: {}",
            missing.join(", ")
        );
        return natives;
    }
    Natives {
        ort_dylib: crate::runtime::ensure_for_tests(crate::runtime::ORT_LIB),
        files: ModelFiles {
            model: crate::runtime::ensure_for_tests(crate::runtime::MODEL_ONNX),
            tokenizer: crate::runtime::ensure_for_tests(crate::runtime::TOKENIZER_JSON),
        },
    }
}

/// One MiniLM embedder shared by every test in the binary: a session costs
/// ~0.5 s to load and tests run in parallel on two cores.
pub(crate) fn shared_embedder() -> MutexGuard<'static, Embedder> {
    static SHARED: OnceLock<Mutex<Embedder>> = OnceLock::new();
    crate::lock::lock(SHARED.get_or_init(|| {
        let n = natives();
        let spec = registry::lookup(DEFAULT_MODEL_ID).expect("registry has the default model");
        let embedder = Embedder::load(&n.ort_dylib, &n.files, spec, None, 2)
            .unwrap_or_else(|e| panic!("loading the test embedder failed: {e}"));
        Mutex::new(embedder)
    }))
}
