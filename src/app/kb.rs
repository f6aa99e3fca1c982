//! Opening the knowledge base from the configuration: which native
//! libraries, which model, which settings.

use crate::config::Config;
use crate::embed::{self, Embedder, ModelFiles, SessionProfile};
use crate::kb::{Kb, KbSettings};
use crate::runtime;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error(transparent)]
    Runtime(#[from] runtime::RuntimeError),
    #[error(transparent)]
    Registry(#[from] embed::registry::RegistryError),
    #[error(transparent)]
    Embed(#[from] embed::EmbedError),
    #[error(transparent)]
    Kb(#[from] crate::kb::KbError),
    #[error("the embedding model `{model}` is not on this machine — run `jarvis kb reindex` to download it into {dir} (needs internet) and re-embed, or put model.onnx and tokenizer.json in a directory and set `runtime.model_dir` to it (the bundled model is {bundled})")]
    ModelMissing {
        model: String,
        bundled: String,
        dir: String,
    },
    #[error("rag.rerank_model names {dir}, which does not hold both model.onnx and tokenizer.json — put a cross-encoder's files there, name a registry re-ranker (cross-encoder/ms-marco-MiniLM-L-6-v2), or clear rag.rerank_model")]
    RerankerMissing { dir: String },
    /// Fetching a registry re-ranker failed (network, mirror, pins).
    #[error("cannot download the re-ranker `{model}`: {source} (for the re-ranker: retry with internet access, or put model.onnx and tokenizer.json in a directory and set rag.rerank_model to it; or search with --no-rerank)")]
    RerankerDownload {
        model: String,
        #[source]
        source: Box<embed::registry::RegistryError>,
    },
}

impl OpenError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            OpenError::Runtime(e) => e.kind(),
            OpenError::Registry(e) => e.kind(),
            OpenError::Embed(e) => e.kind(),
            OpenError::Kb(e) => e.kind(),
            OpenError::ModelMissing { .. } | OpenError::RerankerMissing { .. } => ErrorKind::User,
            OpenError::RerankerDownload { source, .. } => source.kind(),
        }
    }
}

pub fn kb_settings(cfg: &Config) -> KbSettings {
    KbSettings {
        hybrid: cfg.bool("rag.hybrid"),
        fusion: crate::kb::search::Fusion::from_settings(&cfg.str("rag.fusion"), cfg.int("rag.dense_weight")),
        rerank_top_n: cfg.int("rag.rerank_top_n").max(1) as usize,
        rerank_budget: std::time::Duration::from_millis(cfg.int("rag.rerank_budget_ms").max(1) as u64),
        exact_scan_max: cfg.int("rag.exact_scan_max").max(0) as u64,
        chunk_size: cfg.int("rag.chunk_size") as usize,
        chunk_overlap: cfg.int("rag.chunk_overlap") as usize,
        max_note_bytes: u64::try_from(cfg.int("vault.max_note_bytes")).unwrap_or(crate::kb::MAX_NOTE_BYTES),
        keep_days: u32::try_from(cfg.int("history.keep_days")).unwrap_or(crate::kb::KEEP_DAYS),
        ..KbSettings::default()
    }
}

/// Where a registry model is downloaded to: `$JARVIS_HOME/models/<id>/`
/// (the `/` of a Hub id becomes `--`, as the Hub's own cache names it).
pub fn downloaded_model_dir(cfg: &Config, spec: &embed::ModelSpec) -> std::path::PathBuf {
    cfg.home.root().join("models").join(spec.id.replace('/', "--"))
}

/// Make sure the configured embedding model's files are on this machine:
/// the bundled model and a `runtime.model_dir` need nothing; another
/// registry model is downloaded (verified against its pins) into
/// [`downloaded_model_dir`]. `progress(file, done, total)` reports bytes.
/// Returns what was fetched, if anything. Blocking.
pub fn ensure_model(
    cfg: &Config,
    progress: &dyn Fn(&str, u64, Option<u64>),
) -> Result<Option<embed::registry::Downloaded>, OpenError> {
    let o = crate::app::runtime_check::overrides(cfg);
    let spec = embed::lookup(&cfg.str("rag.embed_model"))?;
    if o.model_dir.is_some() || spec.id == embed::DEFAULT_MODEL_ID {
        return Ok(None);
    }
    let dir = downloaded_model_dir(cfg, spec);
    Ok(Some(embed::registry::download_model(spec, &dir, None, progress)?))
}

/// Load the configured embedding model for throughput (blocking, ~0.5 s):
/// what benches, tests and bulk work want.
pub fn load_embedder(cfg: &Config) -> Result<Embedder, OpenError> {
    load_embedder_with(cfg, SessionProfile::Throughput)
}

/// [`load_embedder`] with the session prepared for `profile` (under
/// [`SessionProfile::QuickStart`] well under 0.1 s, slower per vector).
pub fn load_embedder_with(cfg: &Config, profile: SessionProfile) -> Result<Embedder, OpenError> {
    let mut o = crate::app::runtime_check::overrides(cfg);
    let model_id = cfg.str("rag.embed_model");
    let spec = embed::lookup(&model_id)?;
    if o.model_dir.is_none() && spec.id != embed::DEFAULT_MODEL_ID {
        // A model `jarvis kb reindex` downloaded (and verified) earlier.
        let dir = downloaded_model_dir(cfg, spec);
        if !ModelFiles::in_dir(&dir).exist() {
            return Err(OpenError::ModelMissing {
                model: model_id,
                bundled: embed::DEFAULT_MODEL_ID.into(),
                dir: dir.display().to_string(),
            });
        }
        o.model_dir = Some(dir);
    }
    let lib = runtime::resolve_onnxruntime(&cfg.home, &o)?;
    let (model, tokenizer) = runtime::resolve_model(&cfg.home, &o)?;
    let files = ModelFiles {
        model: model.path,
        tokenizer: tokenizer.path,
    };
    Ok(Embedder::load_with_profile(
        &lib.path,
        &files,
        spec,
        cfg.opt_str("rag.query_prefix"),
        cfg.int("runtime.threads") as usize,
        profile,
    )?)
}

/// Open the knowledge base this configuration names. Re-ranking is enabled
/// when `rag.rerank_model` names a directory with model.onnx +
/// tokenizer.json (no cross-encoder weights ship with Jarvis).
///
/// The embedding model and ONNX Runtime are loaded on the first search or
/// write, and the re-ranker on the first re-ranked search, not here:
/// `kb stats`, `list`, `schema`, `remove` never pay for them. What can be
/// checked cheaply (the models are known, their files are available) is
/// checked now so a bad setting still fails at once.
///
/// The model loads with the [`SessionProfile::Throughput`] profile; see
/// [`open_kb_with`] for the one-shot alternative.
pub fn open_kb(cfg: &Config) -> Result<Kb, OpenError> {
    open_kb_with(cfg, SessionProfile::Throughput)
}

/// [`open_kb`], with the embedding model (when it is first used) loaded
/// for `profile`. The re-ranker, if configured, also loads on first use,
/// always for throughput.
pub fn open_kb_with(cfg: &Config, profile: SessionProfile) -> Result<Kb, OpenError> {
    let model_id = cfg.str("rag.embed_model");
    let spec = embed::lookup(&model_id)?.clone();
    if crate::app::runtime_check::overrides(cfg).model_dir.is_none() && spec.id != embed::DEFAULT_MODEL_ID {
        let dir = downloaded_model_dir(cfg, &spec);
        if !ModelFiles::in_dir(&dir).exist() {
            return Err(OpenError::ModelMissing {
                model: model_id,
                bundled: embed::DEFAULT_MODEL_ID.into(),
                dir: dir.display().to_string(),
            });
        }
    }
    // A quick-start process is about to embed a query, and opening the
    // store (fjall's journal replay, the indexes) is mostly one thread's
    // work: load the model beside it on the second core instead of after it.
    let preload = (profile == SessionProfile::QuickStart).then(|| Preload::start(cfg, profile));
    let for_loader = cfg.clone();
    let loader: crate::kb::EmbedderLoader = Box::new(move || {
        let loaded = match preload.as_ref().and_then(Preload::take) {
            Some(preloaded) => preloaded,
            None => load_embedder_with(&for_loader, profile),
        };
        loaded.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    });
    let reranker = match cfg.str("rag.rerank_model") {
        m if m.is_empty() => None,
        m => match embed::rerankers::lookup_reranker(&m) {
            Some(spec) => Some(registry_reranker(cfg, spec)?),
            None => Some(lazy_reranker(cfg, std::path::PathBuf::from(m))?),
        },
    };
    let dir = cfg.rag_dir();
    Ok(Kb::open_lazy(&dir, spec, loader, reranker, kb_settings(cfg))?)
}

/// The configured cross-encoder, loaded when a search first re-ranks. What
/// can be checked cheaply — both files are there, ONNX Runtime resolves —
/// is checked now, so a wrong setting fails at once, not at the first search.
fn lazy_reranker(cfg: &Config, dir: std::path::PathBuf) -> Result<crate::kb::Reranker, OpenError> {
    let (model, tokenizer) = (dir.join("model.onnx"), dir.join("tokenizer.json"));
    if !model.is_file() || !tokenizer.is_file() {
        return Err(OpenError::RerankerMissing {
            dir: dir.display().to_string(),
        });
    }
    let lib = runtime::resolve_onnxruntime(&cfg.home, &crate::app::runtime_check::overrides(cfg))?.path;
    let threads = cfg.int("runtime.threads") as usize;
    Ok(crate::kb::Reranker::Lazy(Box::new(move || {
        embed::rerank::CrossEncoder::load(&lib, &model, &tokenizer, 512, threads)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    })))
}

/// A registry re-ranker (`rag.rerank_model = "cross-encoder/…"`): its files
/// live in [`downloaded_reranker_dir`]; the first re-ranked search
/// downloads them (from the Hub or `HF_ENDPOINT`, each file checked against
/// its pinned size and sha256) if they are not there yet, then loads them.
/// ONNX Runtime is resolved now, so a broken runtime fails at once.
fn registry_reranker(
    cfg: &Config,
    spec: &'static embed::rerankers::RerankerSpec,
) -> Result<crate::kb::Reranker, OpenError> {
    let dir = downloaded_reranker_dir(cfg, spec);
    let lib = runtime::resolve_onnxruntime(&cfg.home, &crate::app::runtime_check::overrides(cfg))?.path;
    let threads = cfg.int("runtime.threads") as usize;
    Ok(crate::kb::Reranker::Lazy(Box::new(move || {
        let files = ModelFiles::in_dir(&dir);
        if !files.exist() {
            tracing::info!(model = spec.id, dir = %dir.display(), "downloading the re-ranker (first use)");
            embed::rerankers::download_reranker(spec, &dir, None, &|_, _, _| {}).map_err(|e| {
                Box::new(OpenError::RerankerDownload {
                    model: spec.id.to_string(),
                    source: Box::new(e),
                }) as Box<dyn std::error::Error + Send + Sync>
            })?;
        }
        embed::rerank::CrossEncoder::load(&lib, &files.model, &files.tokenizer, 512, threads)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    })))
}

/// Where a registry re-ranker is downloaded to: `$JARVIS_HOME/models/<id>/`
/// like an embedding model.
pub fn downloaded_reranker_dir(cfg: &Config, spec: &embed::rerankers::RerankerSpec) -> std::path::PathBuf {
    cfg.home.root().join("models").join(spec.id.replace('/', "--"))
}

/// A model load started on its own thread when the knowledge base opens,
/// handed to the first use of the loader (later loads, after an idle
/// release, run in line as usual). Dropping it waits for the thread: a
/// process never exits while ONNX Runtime is still building a session on
/// another thread, and a failed open does not leave a load running.
struct Preload(std::sync::Mutex<Option<std::thread::JoinHandle<Result<Embedder, OpenError>>>>);

impl Preload {
    fn start(cfg: &Config, profile: SessionProfile) -> Self {
        let cfg = cfg.clone();
        let handle = std::thread::Builder::new()
            .name("model-preload".into())
            .spawn(move || load_embedder_with(&cfg, profile));
        match handle {
            Ok(h) => Preload(std::sync::Mutex::new(Some(h))),
            Err(e) => {
                // Not fatal: the first search loads the model in line.
                tracing::warn!(error = %e, "could not start the model preload thread; loading on first use");
                Preload(std::sync::Mutex::new(None))
            }
        }
    }

    /// The preloaded result, the first time; `None` afterwards (or if the
    /// thread panicked, which is logged), meaning "load it yourself".
    fn take(&self) -> Option<Result<Embedder, OpenError>> {
        let handle = crate::lock::lock(&self.0).take()?;
        match handle.join() {
            Ok(loaded) => Some(loaded),
            Err(_) => {
                tracing::warn!("the model preload thread panicked; loading the model again");
                None
            }
        }
    }
}

impl Drop for Preload {
    fn drop(&mut self) {
        let handle = self.0.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        // The result itself is unwanted here (nobody asked for the model; a
        // failed load would have been reported to whoever did).
        if handle.is_some_and(|h| h.join().is_err()) {
            tracing::warn!("the model preload thread panicked");
        }
    }
}
