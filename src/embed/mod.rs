//! The embedding engine: text in, unit vectors out (plus the cross-encoder
//! re-ranker in [`rerank`]).
//!
//! **Owns:** ONNX Runtime (through `ort`) and tokenization (through
//! `tokenizers`) — this is the only module that imports either. It loads the
//! runtime once per process from an explicit library path ([`runtime`]),
//! describes every supported model in [`registry`], and turns batches of text
//! into L2-normalised vectors with the model's pooling.
//!
//! **Must not:** know about the store, the indexes, config files or the async
//! runtime. Model and runtime paths come in as arguments. Every call here is
//! blocking and CPU-heavy (tens of milliseconds per chunk): async callers run
//! it on `tokio::task::spawn_blocking` or a dedicated thread, never on a
//! runtime worker. An [`Embedder`] is `Send` but `embed_*` take `&mut self`
//! (ORT sessions are not safe for concurrent runs), so share one behind a
//! `Mutex` or give each worker its own.
//!
//! Architecture invariant: no `ort` API is touched before [`runtime::environment`]
//! has loaded a library from an explicit path — ort's implicit loader panics
//! on a missing or too-old library, ours returns [`EmbedError`].

pub mod bench;
pub mod registry;
pub mod rerank;
pub mod rerankers;
pub mod runtime;
#[cfg(test)]
pub(crate) mod test_support;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ort::session::builder::GraphOptimizationLevel;
use ort::session::{Session, SessionInputValue};
use ort::value::{Tensor, TensorElementType};
use tokenizers::{
    Encoding, PaddingDirection, PaddingParams, PaddingStrategy, Tokenizer, TruncationDirection, TruncationParams,
    TruncationStrategy,
};

pub use registry::{lookup, ModelFiles, ModelSpec, Pooling, DEFAULT_MODEL_ID};
pub use runtime::{ort_version, REQUIRED_ORT_MINOR};

/// Texts per ORT run unless [`Embedder::set_batch_size`] says otherwise. On
/// two cores batching barely helps throughput; it mainly amortises per-run
/// overhead for short chunks, and larger batches waste work on padding.
pub const DEFAULT_BATCH_SIZE: usize = 16;

/// Embedding-engine failures. Messages name the file involved and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The configured ONNX Runtime library does not exist.
    #[error(
        "ONNX Runtime library not found at {}; point `[runtime] onnxruntime` at a libonnxruntime >= 1.{} or run `jarvis runtime check`",
        path.display(), REQUIRED_ORT_MINOR
    )]
    RuntimeNotFound { path: PathBuf },
    /// dlopen failed, the file is not ONNX Runtime, or its version is too old.
    #[error(
        "the ONNX Runtime library at {} could not be loaded: {reason}; point `[runtime] onnxruntime` at a libonnxruntime >= 1.{} or run `jarvis runtime check`",
        path.display(), REQUIRED_ORT_MINOR
    )]
    RuntimeLoad { path: PathBuf, reason: String },
    /// A second, different library was requested after one was loaded.
    #[error(
        "ONNX Runtime is already loaded from {} in this process; cannot switch to {} without a restart",
        loaded.display(), requested.display()
    )]
    RuntimeConflict { loaded: PathBuf, requested: PathBuf },
    /// A model or tokenizer file is missing.
    #[error("{what} not found at {}; run `jarvis runtime check`, or download the model again", path.display())]
    FileNotFound { what: &'static str, path: PathBuf },
    /// ORT rejected the model file (corrupt, truncated, unsupported opset).
    #[error("could not load the ONNX model {}: {reason}", path.display())]
    Session { path: PathBuf, reason: String },
    /// tokenizer.json is unreadable or not a tokenizer.
    #[error("could not load the tokenizer {}: {reason}", path.display())]
    Tokenizer { path: PathBuf, reason: String },
    /// Tokenizing an input failed (should not happen for valid UTF-8).
    #[error("tokenizing failed: {0}")]
    Tokenize(String),
    /// The model's inputs or outputs are not the shape this engine drives.
    #[error("model {model} is not supported: {reason}")]
    UnsupportedModel { model: String, reason: String },
    /// The model produces vectors of another length than the registry says.
    #[error("model {model} produces {got}-dimensional vectors but the registry says {expected}; the model file does not match its registry entry")]
    DimsMismatch { model: String, expected: usize, got: usize },
    /// ORT failed while running the model.
    #[error("running model {model} failed: {reason}")]
    Inference { model: String, reason: String },
    /// The cancellation hook asked to stop between batches.
    #[error("embedding cancelled")]
    Cancelled,
}

impl EmbedError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            EmbedError::RuntimeNotFound { .. }
            | EmbedError::RuntimeLoad { .. }
            | EmbedError::FileNotFound { .. }
            | EmbedError::Session { .. }
            | EmbedError::Tokenizer { .. }
            | EmbedError::UnsupportedModel { .. } => ErrorKind::User,
            EmbedError::RuntimeConflict { .. } => ErrorKind::Conflict,
            EmbedError::Tokenize(_) | EmbedError::DimsMismatch { .. } | EmbedError::Inference { .. } => {
                ErrorKind::Internal
            }
            EmbedError::Cancelled => ErrorKind::Cancelled,
        }
    }
}

/// Loads `tokenizer.json` and replaces its baked-in padding/truncation (the
/// MiniLM file pins both at 128) with batch-longest padding and truncation at
/// `max_tokens`, keeping its pad token.
pub(crate) fn load_tokenizer(path: &Path, max_tokens: usize) -> Result<Tokenizer, EmbedError> {
    if !path.is_file() {
        return Err(EmbedError::FileNotFound {
            what: "tokenizer",
            path: path.to_owned(),
        });
    }
    let tok_err = |reason: String| EmbedError::Tokenizer {
        path: path.to_owned(),
        reason,
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| tok_err(e.to_string()))?;
    let (pad_id, pad_type_id, pad_token) = match tokenizer.get_padding() {
        Some(p) => (p.pad_id, p.pad_type_id, p.pad_token.clone()),
        None => (0, 0, "[PAD]".to_owned()),
    };
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        direction: PaddingDirection::Right,
        pad_to_multiple_of: None,
        pad_id,
        pad_type_id,
        pad_token,
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| tok_err(e.to_string()))?;
    Ok(tokenizer)
}

/// How an ORT session is prepared: a trade between the time to the first
/// vector and the time per vector. Both give the same vectors (cosine
/// ≥ 0.9999; they differ only in float rounding), so an index built under
/// one is searched correctly under the other.
///
/// With the bundled int8 model, ONNX Runtime's full graph optimisation
/// constant-folds the dequantisation (`Cast` + `Mul` on every int8 weight)
/// into ~90 MB of fp32 weights and fuses the normalisation blocks while
/// building the session. That load is the slow part of a one-shot command
/// (~250–400 ms of a `kb search`), and it is what makes each later run fast
/// (~4 ms per short query). Without optimisation the session loads in
/// about 100 ms, but every run dequantises again (~20–60 ms per short
/// query, several times slower on batches of long chunks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionProfile {
    /// Full graph optimisation (ONNX Runtime's own default): slow to load,
    /// fastest per vector. For anything that embeds in bulk or lives long.
    #[default]
    Throughput,
    /// Graph optimisation and ORT's memory arena disabled: quick to load,
    /// slower per vector. For a process that embeds one or a few queries
    /// and exits.
    QuickStart,
}

impl SessionProfile {
    /// The name logs use (`profile=quick_start`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionProfile::Throughput => "throughput",
            SessionProfile::QuickStart => "quick_start",
        }
    }
}

impl std::fmt::Display for SessionProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Creates an ORT session for `model` in the process environment.
pub(crate) fn build_session(
    ort_dylib: &Path,
    model: &Path,
    intra_threads: usize,
    profile: SessionProfile,
) -> Result<Session, EmbedError> {
    build_session_with(ort_dylib, model, intra_threads, profile, true)
}

/// [`build_session`], saying whether the intra-op pool's threads may
/// spin-wait between runs (faster back-to-back runs, but the cores stay busy
/// for a while after each one).
fn build_session_with(
    ort_dylib: &Path,
    model: &Path,
    intra_threads: usize,
    profile: SessionProfile,
    spinning: bool,
) -> Result<Session, EmbedError> {
    let env = runtime::environment(ort_dylib)?;
    if !model.is_file() {
        return Err(EmbedError::FileNotFound {
            what: "ONNX model",
            path: model.to_owned(),
        });
    }
    let session_err = |reason: String| EmbedError::Session {
        path: model.to_owned(),
        reason,
    };
    let mut builder = Session::builder(&env).map_err(|e| session_err(e.to_string()))?;
    // 0 = every core this process may use. Said explicitly rather than left
    // to ORT, whose own default counts the host's physical cores: under a
    // CPU quota or affinity mask that over- or under-subscribes, while
    // `available_parallelism` honours both (bulk ingest must keep every
    // usable core busy, and no more).
    let intra_threads = match intra_threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    builder = builder
        .with_intra_threads(intra_threads)
        .map_err(|e| session_err(e.to_string()))?;
    // One graph, run sequentially: inter-op threads would only contend with
    // the intra-op pool on a small machine.
    builder = builder.with_inter_threads(1).map_err(|e| session_err(e.to_string()))?;
    if !spinning {
        builder = builder
            .with_intra_op_spinning(false)
            .map_err(|e| session_err(e.to_string()))?;
    }
    // Throughput leaves ORT's default level (all optimisations) alone.
    if profile == SessionProfile::QuickStart {
        builder = builder
            .with_optimization_level(GraphOptimizationLevel::Disable)
            .map_err(|e| session_err(e.to_string()))?;
        // Unoptimised, every run dequantises each weight matrix into a
        // temporary fp32 tensor (~90 MB in all for MiniLM). ORT's arena would
        // keep all of them at their peak; plain allocation frees each one
        // after its MatMul, so a one-shot process never holds them together.
        builder = builder
            .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
            .map_err(|e| session_err(e.to_string()))?;
    }
    builder.commit_from_file(model).map_err(|e| session_err(e.to_string()))
}

/// Hands memory freed by a dropped [`Embedder`] back to the operating
/// system. ONNX Runtime frees a session's weights and arena with many
/// mid-sized `free`s that glibc keeps in its heaps for reuse; an owner that
/// unloads an idle model wants its resident size to fall, so the heaps are
/// trimmed explicitly. A no-op on other C libraries.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim only walks glibc's own heaps under their locks;
    // it takes no pointers and is documented as safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Builds the named input tensors the session declares from a padded batch
/// of encodings. Models differ: BERT exports take `token_type_ids`, many
/// others do not, so the session's own input list decides.
pub(crate) fn session_inputs(
    session: &Session,
    encodings: &[Encoding],
    model: &str,
) -> Result<Vec<(Cow<'static, str>, SessionInputValue<'static>)>, EmbedError> {
    let rows = encodings.len();
    let cols = encodings.first().map_or(0, |e| e.len());
    let mut inputs = Vec::with_capacity(session.inputs().len());
    for outlet in session.inputs() {
        let name = outlet.name();
        let pick: fn(&Encoding) -> &[u32] = match name {
            "input_ids" => Encoding::get_ids,
            "attention_mask" => Encoding::get_attention_mask,
            "token_type_ids" => Encoding::get_type_ids,
            other => {
                return Err(EmbedError::UnsupportedModel {
                    model: model.to_owned(),
                    reason: format!("unexpected input `{other}` (expected input_ids, attention_mask, token_type_ids)"),
                })
            }
        };
        let mut flat = Vec::with_capacity(rows * cols);
        for enc in encodings {
            // Batch-longest padding makes every row `cols` long; a mismatch
            // would silently misalign the tensor, so check rather than trust.
            if enc.len() != cols {
                return Err(EmbedError::Tokenize(format!(
                    "ragged batch: row of {} tokens in a batch padded to {cols}",
                    enc.len()
                )));
            }
            flat.extend_from_slice(pick(enc));
        }
        let shape = [rows, cols];
        let infer = |e: ort::Error| EmbedError::Inference {
            model: model.to_owned(),
            reason: e.to_string(),
        };
        let value: SessionInputValue<'static> = match outlet.dtype().tensor_type() {
            Some(TensorElementType::Int32) => {
                let data: Vec<i32> = flat.iter().map(|&v| v as i32).collect();
                Tensor::from_array((shape, data)).map_err(infer)?.into()
            }
            Some(TensorElementType::Int64) => {
                let data: Vec<i64> = flat.iter().map(|&v| i64::from(v)).collect();
                Tensor::from_array((shape, data)).map_err(infer)?.into()
            }
            other => {
                return Err(EmbedError::UnsupportedModel {
                    model: model.to_owned(),
                    reason: format!("input `{name}` has element type {other:?}, expected int64 or int32"),
                })
            }
        };
        inputs.push((Cow::Owned(name.to_owned()), value));
    }
    Ok(inputs)
}

/// Pools one batch's output into sentence vectors.
///
/// `data` is row-major with `shape` either `[batch, seq, dims]` (token
/// states, pooled here) or `[batch, dims]` (already pooled by the graph).
/// Mean pooling averages only the positions whose attention mask is 1, so
/// padding never leaks into a vector.
fn pool(data: &[f32], shape: &[i64], encodings: &[Encoding], pooling: Pooling) -> Result<Vec<Vec<f32>>, String> {
    let dims_of = |d: i64| usize::try_from(d).map_err(|_| format!("negative dimension in {shape:?}"));
    match *shape {
        [b, d] => {
            let (b, d) = (dims_of(b)?, dims_of(d)?);
            if b != encodings.len() || data.len() != b * d {
                return Err(format!("output shape {shape:?} does not match the batch"));
            }
            Ok(data.chunks_exact(d.max(1)).map(<[f32]>::to_vec).collect())
        }
        [b, s, d] => {
            let (b, s, d) = (dims_of(b)?, dims_of(s)?, dims_of(d)?);
            if b != encodings.len() || data.len() != b * s * d {
                return Err(format!("output shape {shape:?} does not match the batch"));
            }
            let mut out = Vec::with_capacity(b);
            for (row, enc) in encodings.iter().enumerate() {
                let states = &data[row * s * d..(row + 1) * s * d];
                let v = match pooling {
                    Pooling::Cls => states[..d].to_vec(),
                    Pooling::Mean => {
                        let mut acc = vec![0f32; d];
                        let mut count = 0f32;
                        for (tok, &m) in enc.get_attention_mask().iter().enumerate().take(s) {
                            if m == 0 {
                                continue;
                            }
                            count += 1.0;
                            for (a, x) in acc.iter_mut().zip(&states[tok * d..(tok + 1) * d]) {
                                *a += x;
                            }
                        }
                        // sentence-transformers clamps the divisor the same way.
                        let count = count.max(1e-9);
                        acc.iter_mut().for_each(|a| *a /= count);
                        acc
                    }
                };
                out.push(v);
            }
            Ok(out)
        }
        _ => Err(format!(
            "output has shape {shape:?}; expected [batch, seq, dims] or [batch, dims]"
        )),
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity; for unit vectors this is the dot product.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na < 1e-12 || nb < 1e-12 {
        return 0.0;
    }
    dot / (na * nb)
}

/// Threads of the query session (fewer when the machine has fewer cores).
/// Two that do not spin-wait, measured on 2 cores at 100k chunks (release,
/// helpers paused, two runs each, hybrid `kb.search` p50 / p95 in ms): one
/// spinning thread 11.05 / 12.79 and 11.18 / 12.78; one thread without
/// spinning 10.50 / 12.06 and 11.11 / 12.44; two spinning 9.63 / 15.91 and
/// 9.56 / 15.31 (the spin holds the cores the dense scan needs next); two
/// without spinning 9.11 / 12.81, 8.39 / 11.85, 8.99 / 12.35 and
/// 9.20 / 12.38.
pub const QUERY_THREADS: usize = 2;

/// A loaded bi-encoder: one ORT session plus its tokenizer.
pub struct Embedder {
    spec: ModelSpec,
    session: Session,
    /// A session for search queries, built on the first query of a
    /// [`SessionProfile::Throughput`] embedder: [`QUERY_THREADS`] threads
    /// that never spin-wait. The bulk session's pool threads spin after
    /// every run and hold the cores the search legs need right after a
    /// query's embedding (at 100k chunks on 2 cores, release, quiet:
    /// `kb.search` p50 17.0 ms against 7.6 ms for its parts measured
    /// apart). ~30 MB while loaded; dropped with the embedder when an idle
    /// owner unloads it.
    query_session: Option<Session>,
    /// Where to build `query_session` from.
    ort_dylib: PathBuf,
    model_path: PathBuf,
    tokenizer: Tokenizer,
    query_prefix: String,
    batch_size: usize,
    /// Which session output carries the token (or sentence) states.
    output_name: String,
    profile: SessionProfile,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model", &self.spec.id)
            .field("dims", &self.spec.dims)
            .field("batch_size", &self.batch_size)
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads ONNX Runtime (once per process, from `ort_dylib`), the model and
    /// its tokenizer. `query_prefix`: `None` uses the registry default,
    /// `Some("")` disables it. `intra_threads`: ORT's per-run thread count;
    /// 0 uses every core this process may use. Blocking; ~0.5 s for MiniLM.
    /// The session has the [`SessionProfile::Throughput`] profile.
    pub fn load(
        ort_dylib: &Path,
        files: &ModelFiles,
        spec: &ModelSpec,
        query_prefix: Option<String>,
        intra_threads: usize,
    ) -> Result<Self, EmbedError> {
        Self::load_with_profile(
            ort_dylib,
            files,
            spec,
            query_prefix,
            intra_threads,
            SessionProfile::Throughput,
        )
    }

    /// [`Embedder::load`] with the session prepared for `profile`.
    pub fn load_with_profile(
        ort_dylib: &Path,
        files: &ModelFiles,
        spec: &ModelSpec,
        query_prefix: Option<String>,
        intra_threads: usize,
        profile: SessionProfile,
    ) -> Result<Self, EmbedError> {
        let started = Instant::now();
        // Runtime first: a missing or wrong libonnxruntime is the more
        // fundamental problem to report; then the cheap tokenizer, so a bad
        // file is found before the ~0.5 s session build.
        runtime::environment(ort_dylib)?;
        let tokenizer = load_tokenizer(&files.tokenizer, spec.max_tokens)?;
        let session = build_session(ort_dylib, &files.model, intra_threads, profile)?;
        let output_name = pick_output(&session).ok_or_else(|| EmbedError::UnsupportedModel {
            model: spec.id.to_owned(),
            reason: "the graph has no outputs".to_owned(),
        })?;
        tracing::info!(
            model = spec.id,
            path = %files.model.display(),
            output = %output_name,
            %profile,
            ms = started.elapsed().as_millis() as u64,
            "embedding model loaded"
        );
        Ok(Self {
            spec: spec.clone(),
            session,
            query_session: None,
            ort_dylib: ort_dylib.to_path_buf(),
            model_path: files.model.clone(),
            tokenizer,
            query_prefix: query_prefix.unwrap_or_else(|| spec.query_prefix.to_owned()),
            batch_size: DEFAULT_BATCH_SIZE,
            output_name,
            profile,
        })
    }

    /// How this embedder's session was prepared.
    pub fn profile(&self) -> SessionProfile {
        self.profile
    }

    /// The registry id of the loaded model (what the index records).
    pub fn model_id(&self) -> &str {
        self.spec.id
    }

    /// Length of every vector this embedder returns.
    pub fn dims(&self) -> usize {
        self.spec.dims
    }

    /// The registry entry this embedder was loaded with.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// The prefix [`Embedder::embed_query`] prepends.
    pub fn query_prefix(&self) -> &str {
        &self.query_prefix
    }

    /// Texts per ORT run (minimum 1).
    pub fn set_batch_size(&mut self, n: usize) {
        self.batch_size = n.max(1);
    }

    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Tokens `text` becomes, special tokens included. Exact up to the
    /// model's max tokens; beyond it the count is of the truncated pieces and
    /// over-counts by the special tokens each extra piece carries — enough to
    /// tell a caller that (and roughly how much) a chunk would be cut.
    pub fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        let enc = self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        Ok(enc.len() + enc.get_overflowing().iter().map(Encoding::len).sum::<usize>())
    }

    /// Embeds document texts (no prefix), one unit vector per text, in input
    /// order. Text beyond the model's max tokens is truncated.
    pub fn embed_documents(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_documents_cancellable(texts, &|| false)
    }

    /// [`Embedder::embed_documents`] with a cooperative cancellation hook,
    /// checked before each batch; when it returns `true` the call stops with
    /// [`EmbedError::Cancelled`] and nothing is returned.
    pub fn embed_documents_cancellable(
        &mut self,
        texts: &[&str],
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Batch texts of similar length together so short chunks are not
        // padded to a long neighbour's length; results go back in input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for idx in order.chunks(self.batch_size) {
            if cancelled() {
                return Err(EmbedError::Cancelled);
            }
            let batch: Vec<&str> = idx.iter().map(|&i| texts[i]).collect();
            let vectors = self.run(&batch, false)?;
            for (&i, v) in idx.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Embeds a search query: the query prefix, then the text.
    pub fn embed_query(&mut self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let text = format!("{}{query}", self.query_prefix);
        if self.profile == SessionProfile::Throughput && self.query_session.is_none() {
            let started = Instant::now();
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(QUERY_THREADS));
            self.query_session = Some(build_session_with(
                &self.ort_dylib,
                &self.model_path,
                threads,
                self.profile,
                false,
            )?);
            tracing::info!(
                model = self.spec.id,
                ms = started.elapsed().as_millis() as u64,
                threads,
                "query session loaded"
            );
        }
        let mut v = self.run(&[text.as_str()], true)?;
        v.pop().ok_or_else(|| EmbedError::Inference {
            model: self.spec.id.to_owned(),
            reason: "the model returned no vector".to_owned(),
        })
    }

    /// One batch through the bulk session, or (`query`) the query session
    /// when there is one.
    fn run(&mut self, texts: &[&str], query: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model = self.spec.id;
        // One text (a query) is tokenized on this thread: `encode_batch`
        // hands even one text to rayon's pool, whose workers then spin on
        // the core the search's dense scan is about to use.
        let encodings = match texts {
            [one] => self.tokenizer.encode(*one, true).map(|e| vec![e]),
            _ => self.tokenizer.encode_batch(texts.to_vec(), true),
        }
        .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        let session = match (&mut self.query_session, query) {
            (Some(s), true) => s,
            _ => &mut self.session,
        };
        let inputs = session_inputs(session, &encodings, model)?;
        let infer = |reason: String| EmbedError::Inference {
            model: model.to_owned(),
            reason,
        };
        let outputs = session.run(inputs).map_err(|e| infer(e.to_string()))?;
        let value = outputs
            .get(&self.output_name)
            .ok_or_else(|| infer(format!("output `{}` missing", self.output_name)))?;
        let (shape, data) = value.try_extract_tensor::<f32>().map_err(|e| infer(e.to_string()))?;
        let mut vectors =
            pool(data, shape, &encodings, self.spec.pooling).map_err(|reason| EmbedError::UnsupportedModel {
                model: model.to_owned(),
                reason,
            })?;
        if let Some(first) = vectors.first() {
            if first.len() != self.spec.dims {
                return Err(EmbedError::DimsMismatch {
                    model: model.to_owned(),
                    expected: self.spec.dims,
                    got: first.len(),
                });
            }
        }
        if self.spec.normalize {
            vectors.iter_mut().for_each(|v| l2_normalize(v));
        }
        Ok(vectors)
    }
}

/// The output holding token states: `last_hidden_state` by convention,
/// otherwise the graph's first output.
fn pick_output(session: &Session) -> Option<String> {
    let outputs = session.outputs();
    outputs
        .iter()
        .find(|o| o.name() == "last_hidden_state")
        .or_else(|| outputs.first())
        .map(|o| o.name().to_owned())
}

#[cfg(test)]
mod tests;
