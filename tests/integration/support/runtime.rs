//! The bundled natives unpacked once for this test binary, and in-process
//! configurations that use them.
//!
//! ONNX Runtime binds one library path per process, so every in-process
//! `Kb` or `App` of this binary must name the same unpacked copy: they all
//! get it from [`shared_ort`]. (A spawned `jarvis` unpacks its own into its
//! sandbox as usual.) PDFium and the model are shared the same way, only
//! to unpack them once.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jarvis::app::pdf_isolated::WorkerCommand;
use jarvis::config::Config;
use jarvis::paths::JarvisHome;
use jarvis::runtime::Overrides;

use super::Sandbox;

/// Where the shared copies are unpacked (kept between runs, like target/).
fn runtime_home() -> JarvisHome {
    JarvisHome::at(Path::new(env!("CARGO_TARGET_TMPDIR")).join("shared_runtime"))
}

/// The ONNX Runtime library every in-process `Kb` and `App` loads.
pub fn shared_ort() -> &'static str {
    static ORT: OnceLock<String> = OnceLock::new();
    ORT.get_or_init(|| {
        let lib =
            jarvis::runtime::resolve_onnxruntime(&runtime_home(), &Overrides::default()).expect("unpack onnxruntime");
        lib.path.display().to_string()
    })
}

/// The PDFium library the in-process PDF configurations name.
pub fn shared_pdfium() -> &'static str {
    static LIB: OnceLock<String> = OnceLock::new();
    LIB.get_or_init(|| {
        let lib = jarvis::runtime::resolve_pdfium(&runtime_home(), &Overrides::default()).expect("unpack pdfium");
        lib.path.display().to_string()
    })
}

/// The bundled embedding model and its tokenizer: (model.onnx, tokenizer.json).
pub fn bundled_model() -> &'static (PathBuf, PathBuf) {
    static MODEL: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    MODEL.get_or_init(|| {
        let (m, t) = jarvis::runtime::resolve_model(&runtime_home(), &Overrides::default()).expect("unpack the model");
        (m.path, t.path)
    })
}

/// The configuration a `jarvis` in `sb` would load, with the shared ONNX
/// Runtime for this process.
pub fn config(sb: &Sandbox) -> Config {
    let home = sb.home().display().to_string();
    let jh = sb.jarvis_home().display().to_string();
    let env = move |k: &str| match k {
        "HOME" => Some(home.clone()),
        "JARVIS_HOME" => Some(jh.clone()),
        "JARVIS_ORT_LIB" => Some(shared_ort().to_string()),
        _ => None,
    };
    Config::load(&JarvisHome::at(sb.jarvis_home()), &env).expect("config")
}

/// The knowledge base of `sb`, opened in this process (drop it before a
/// `jarvis` in `sb` runs: one owner at a time).
pub fn open_kb(sb: &Sandbox) -> jarvis::kb::Kb {
    jarvis::app::kb::open_kb(&config(sb)).expect("open kb in-process")
}

/// A configuration in a fresh temporary home naming the shared PDFium,
/// with `toml` (whole sections, e.g. `"[pdf]\nocr = false"`) appended.
pub fn pdf_config(toml: &str) -> (tempfile::TempDir, Config) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!("[runtime]\npdfium = {:?}\n{toml}\n", shared_pdfium());
    let user_home = dir.path().join("home");
    let env = move |k: &str| (k == "HOME").then(|| user_home.display().to_string());
    let file = dir.path().join("config.toml");
    let cfg = Config::from_parts(&JarvisHome::at(dir.path()), &file, Some(&text), &env).expect("config");
    (dir, cfg)
}

/// The built `jarvis` as the PDF worker (this process is the test
/// harness, not `jarvis`), with `JARVIS_FAILPOINT` set when given.
pub fn pdf_worker(failpoint: Option<&str>) -> WorkerCommand {
    WorkerCommand {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_jarvis")),
        env: failpoint
            .map(|f| vec![("JARVIS_FAILPOINT".to_string(), f.to_string())])
            .unwrap_or_default(),
    }
}
