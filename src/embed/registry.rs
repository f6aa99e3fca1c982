//! The embedding-model registry and the downloader for non-bundled models.
//!
//! Every model Jarvis can embed with is described here once: its output
//! dimensions, how token vectors are pooled into one sentence vector, how many
//! tokens it reads, whether vectors are L2-normalised, the query-side prefix
//! (the BGE "instruction") and where its files come from. The index records the
//! model id that built its vectors; changing `embed_model` in config therefore
//! means `jarvis kb reindex`, never a silent mix of embedding spaces.
//!
//! The bundled all-MiniLM-L6-v2 ships inside the binary. Another model is
//! used by naming it in `rag.embed_model` and running `jarvis kb reindex`:
//! the app calls [`download_model`] into `$JARVIS_HOME/models/<id>/` (from
//! the Hugging Face Hub, or a mirror named by `HF_ENDPOINT`), then
//! re-embeds. Every entry is pinned ([`Pins`]) to a fixed commit of the
//! model's own repository and to each file's size and sha256 at that commit;
//! a download is kept only when both match, and a file that does not is
//! deleted and named in the error. A model without pins is refused (only a
//! test-built registry could have one): nothing unverified is ever loaded.
//!
//! The downloader is blocking (ureq): call it off the async runtime. It
//! writes each file to a temporary name in the target directory, checks its
//! hash, and renames it into place, so an interrupted or corrupted download
//! never leaves a `model.onnx` that a later load would trip over.
//!
//! This module must not load models or touch ONNX Runtime; that is
//! [`super::Embedder`]'s job.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// The model the product embeds with when config names none.
pub const DEFAULT_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Where the Hugging Face Hub lives unless `HF_ENDPOINT` or config says otherwise.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// The BGE v1.5 retrieval instruction, prepended to queries only.
pub const BGE_QUERY_INSTRUCTION: &str = "Represent this sentence for searching relevant passages: ";

/// File names a model directory holds, whatever the files were called upstream.
pub const MODEL_FILE: &str = "model.onnx";
/// See [`MODEL_FILE`].
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// How per-token hidden states become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Average of the token vectors, weighted by the attention mask
    /// (sentence-transformers' default; MiniLM).
    Mean,
    /// The first token's (`[CLS]`) vector (BGE).
    Cls,
}

/// Where a model's files come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// Carried inside the release binary and unpacked into the runtime
    /// directory; the hashes pin the exact files.
    Bundled {
        model_sha256: &'static str,
        tokenizer_sha256: &'static str,
    },
    /// A Hugging Face Hub repository.
    HuggingFace {
        repo: &'static str,
        /// The commit the pins were taken at (never a branch: a branch
        /// moves, and the pinned files with it).
        revision: &'static str,
        /// Path of the ONNX graph inside the repository.
        model_path: &'static str,
        /// Path of `tokenizer.json` inside the repository.
        tokenizer_path: &'static str,
        /// The files' hashes at `revision`; `None` = not pinned, so
        /// [`download_model`] refuses it.
        pins: Option<Pins>,
    },
}

/// Size in bytes and sha256 (hex) of each downloaded file, both checked
/// before it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pins {
    pub model_bytes: u64,
    pub model_sha256: &'static str,
    pub tokenizer_bytes: u64,
    pub tokenizer_sha256: &'static str,
}

/// Everything the embedder needs to know about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The id config names and the index records (Hugging Face style).
    pub id: &'static str,
    /// Length of one output vector.
    pub dims: usize,
    pub pooling: Pooling,
    /// Longest input in tokens, special tokens included; longer text is truncated.
    pub max_tokens: usize,
    /// Whether output vectors are L2-normalised (so dot product = cosine).
    pub normalize: bool,
    /// Prepended to queries (never to documents) unless config overrides it.
    pub query_prefix: &'static str,
    pub source: ModelSource,
}

// all-MiniLM-L6-v2: 512 positions exist, but sentence-transformers uses it
// with max_seq_length 256 and that is what its quality numbers are measured at.
// The BGE pins are the published values of each file at a fixed commit of
// BAAI's own repository (`onnx/model.onnx` is where they publish the ONNX
// export). Both models share one tokenizer file (the same sha256), so its
// size, published for bge-base, holds for bge-small too.
const BGE_TOKENIZER_BYTES: u64 = 711_396;
const BGE_TOKENIZER_SHA256: &str = "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66";

static MODELS: &[ModelSpec] = &[
    ModelSpec {
        id: DEFAULT_MODEL_ID,
        dims: 384,
        pooling: Pooling::Mean,
        max_tokens: 256,
        normalize: true,
        query_prefix: "",
        source: ModelSource::Bundled {
            model_sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
            tokenizer_sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
    },
    ModelSpec {
        id: "BAAI/bge-small-en-v1.5",
        dims: 384,
        pooling: Pooling::Cls,
        max_tokens: 512,
        normalize: true,
        query_prefix: BGE_QUERY_INSTRUCTION,
        source: ModelSource::HuggingFace {
            repo: "BAAI/bge-small-en-v1.5",
            revision: "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
            model_path: "onnx/model.onnx",
            tokenizer_path: "tokenizer.json",
            pins: Some(Pins {
                model_bytes: 133_093_490,
                model_sha256: "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35",
                tokenizer_bytes: BGE_TOKENIZER_BYTES,
                tokenizer_sha256: BGE_TOKENIZER_SHA256,
            }),
        },
    },
    ModelSpec {
        id: "BAAI/bge-base-en-v1.5",
        dims: 768,
        pooling: Pooling::Cls,
        max_tokens: 512,
        normalize: true,
        query_prefix: BGE_QUERY_INSTRUCTION,
        source: ModelSource::HuggingFace {
            repo: "BAAI/bge-base-en-v1.5",
            revision: "a5beb1e3e68b9ab74eb54cfd186867f64f240e1a",
            model_path: "onnx/model.onnx",
            tokenizer_path: "tokenizer.json",
            pins: Some(Pins {
                model_bytes: 435_811_539,
                model_sha256: "9bc579acdba21c253c62a9bf866891355a63ffa3442b52c8a37d75b2ccb91848",
                tokenizer_bytes: BGE_TOKENIZER_BYTES,
                tokenizer_sha256: BGE_TOKENIZER_SHA256,
            }),
        },
    },
];

/// Registry entries compiled into test builds only: the bundled MiniLM
/// files under a Hub-style name, pinned to the bundled files' hashes, so the
/// suite can run the whole `rag.embed_model` switch (download, verify,
/// reindex) against a loopback mirror.
#[cfg(any(test, feature = "failpoints"))]
static TEST_MODELS: &[ModelSpec] = &[ModelSpec {
    id: "jarvis-test/minilm-mirror",
    dims: 384,
    pooling: Pooling::Mean,
    max_tokens: 256,
    normalize: true,
    query_prefix: "",
    source: ModelSource::HuggingFace {
        repo: "jarvis-test/minilm-mirror",
        revision: "0123456789abcdef0123456789abcdef01234567",
        model_path: "onnx/model.onnx",
        tokenizer_path: "tokenizer.json",
        pins: Some(Pins {
            model_bytes: 22_928_619,
            model_sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
            tokenizer_bytes: 466_247,
            tokenizer_sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        }),
    },
}];
#[cfg(not(any(test, feature = "failpoints")))]
static TEST_MODELS: &[ModelSpec] = &[];

/// Registry and download failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Config names a model the registry does not describe.
    #[error("unknown embedding model `{id}`; known models: {known}")]
    UnknownModel { id: String, known: String },
    /// The model ships inside the binary; there is nothing to download.
    #[error("model `{id}` is bundled with jarvis and is not downloaded")]
    Bundled { id: String },
    /// The HTTP request failed (connection, TLS, non-2xx status, timeout).
    #[error("downloading {url} failed: {reason} — check the internet connection (or `HF_ENDPOINT`), or put model.onnx and tokenizer.json in a directory and set `runtime.model_dir`")]
    Http { url: String, reason: String },
    /// The registry has no pinned hashes for this model, so nothing
    /// downloaded could be verified.
    #[error("model `{id}` has no pinned file hashes in this build, so jarvis will not download it — download model.onnx and tokenizer.json yourself, put them in a directory and set `runtime.model_dir` to it")]
    Unpinned { id: String },
    /// A downloaded file's size differs from the pin; it was deleted.
    #[error("{} downloaded from {url} is {} bytes, not the pinned {expected}; the file was deleted — {MISMATCH_FIX}", file.display(), size_text(*got))]
    SizeMismatch {
        file: PathBuf,
        url: String,
        expected: u64,
        /// `None`: more than `expected` (the download was cut off there).
        got: Option<u64>,
    },
    /// A downloaded file's sha256 differs from the pin; it was deleted.
    #[error("{} downloaded from {url} does not match its pinned sha256 (expected {expected}, got {got}); the file was deleted — {MISMATCH_FIX}", file.display())]
    Mismatch {
        file: PathBuf,
        url: String,
        expected: String,
        got: String,
    },
    /// Writing the file into the model directory failed.
    #[error("writing {path} failed: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The server answered with an empty body; a zero-byte model is never right.
    #[error("{url} returned an empty file")]
    Empty { url: String },
}

/// What to do about a file that is not the pinned one.
const MISMATCH_FIX: &str = "the server (or the mirror `HF_ENDPOINT` names) serves other files than the ones this jarvis was pinned to; unset `HF_ENDPOINT` or fix the mirror, or put model.onnx and tokenizer.json in a directory and set `runtime.model_dir`";

fn size_text(got: Option<u64>) -> String {
    got.map_or_else(|| "more than that".to_owned(), |n| n.to_string())
}

impl RegistryError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            RegistryError::UnknownModel { .. } | RegistryError::Bundled { .. } | RegistryError::Unpinned { .. } => {
                ErrorKind::User
            }
            RegistryError::Http { .. }
            | RegistryError::Empty { .. }
            | RegistryError::Mismatch { .. }
            | RegistryError::SizeMismatch { .. } => ErrorKind::Unavailable,
            RegistryError::Io { source, .. } => crate::error_kind::io_kind(source),
        }
    }
}

/// Every model the registry knows, the bundled default first.
pub fn known_models() -> &'static [ModelSpec] {
    MODELS
}

/// Looks a model up by id (exact match, then ASCII case-insensitive).
pub fn lookup(id: &str) -> Result<&'static ModelSpec, RegistryError> {
    let all = || MODELS.iter().chain(TEST_MODELS.iter());
    all()
        .find(|m| m.id == id)
        .or_else(|| all().find(|m| m.id.eq_ignore_ascii_case(id)))
        .ok_or_else(|| RegistryError::UnknownModel {
            id: id.to_owned(),
            known: MODELS.iter().map(|m| m.id).collect::<Vec<_>>().join(", "),
        })
}

/// The two files one model needs, wherever they live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    pub model: PathBuf,
    pub tokenizer: PathBuf,
}

impl ModelFiles {
    /// The conventional layout: `dir/model.onnx` and `dir/tokenizer.json`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            model: dir.join(MODEL_FILE),
            tokenizer: dir.join(TOKENIZER_FILE),
        }
    }

    /// Whether both files exist (not whether they are valid).
    pub fn exist(&self) -> bool {
        self.model.is_file() && self.tokenizer.is_file()
    }
}

/// The Hub base URL: `HF_ENDPOINT` when set and non-empty, else huggingface.co.
pub fn hf_endpoint() -> String {
    endpoint_from(std::env::var("HF_ENDPOINT").ok().as_deref())
}

fn endpoint_from(value: Option<&str>) -> String {
    match value.map(str::trim) {
        Some(v) if !v.is_empty() => v.trim_end_matches('/').to_owned(),
        _ => DEFAULT_HF_ENDPOINT.to_owned(),
    }
}

/// `{base}/{repo}/resolve/{revision}/{path}`, the Hub's raw-file route.
pub fn hf_file_url(base: &str, repo: &str, revision: &str, path: &str) -> String {
    format!("{}/{repo}/resolve/{revision}/{path}", base.trim_end_matches('/'))
}

/// Summary of one [`download_model`] call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    pub files: ModelFiles,
    /// Bytes fetched; 0 when both files were already present.
    pub bytes: u64,
    /// sha256 of `model.onnx` as written (hex), so callers can log or pin it.
    pub model_sha256: Option<String>,
}

impl fmt::Display for Downloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} bytes fetched)", self.files.model.display(), self.bytes)
    }
}

/// Fetches a non-bundled model's ONNX graph and tokenizer into `dir`
/// (created if missing) as `model.onnx` and `tokenizer.json`, each checked
/// against its pinned size and sha256 before it is kept.
///
/// `base_url` overrides the Hub endpoint (tests, mirrors); `None` means
/// [`hf_endpoint`]. A file already present is kept only if it matches its
/// pins, so a re-run after a partial failure fetches only what is missing
/// or wrong; one that does not match is deleted before anything is fetched,
/// so a failed download never leaves a wrong file behind. `progress(done, total)` reports bytes of the current
/// file. Blocking.
pub fn download_model(
    spec: &ModelSpec,
    dir: &Path,
    base_url: Option<&str>,
    progress: &dyn Fn(&str, u64, Option<u64>),
) -> Result<Downloaded, RegistryError> {
    download_source(spec.id, &spec.source, dir, base_url, progress)
}

/// [`download_model`]'s body, for any pinned source (the re-rankers of
/// `super::rerankers` share it).
pub(crate) fn download_source(
    id: &str,
    source: &ModelSource,
    dir: &Path,
    base_url: Option<&str>,
    progress: &dyn Fn(&str, u64, Option<u64>),
) -> Result<Downloaded, RegistryError> {
    let &ModelSource::HuggingFace {
        repo,
        revision,
        model_path,
        tokenizer_path,
        pins,
    } = source
    else {
        return Err(RegistryError::Bundled { id: id.to_owned() });
    };
    let Some(pins) = pins else {
        return Err(RegistryError::Unpinned { id: id.to_owned() });
    };
    std::fs::create_dir_all(dir).map_err(|source| RegistryError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let base = base_url.map_or_else(hf_endpoint, |b| b.trim_end_matches('/').to_owned());
    let files = ModelFiles::in_dir(dir);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        // Per-read silence, not a whole-download cap: a 400 MB model on a slow
        // link may legitimately take many minutes.
        .timeout_per_read(Some(Duration::from_secs(120)))
        .build()
        .into();

    let mut bytes = 0;
    let mut model_sha256 = None;
    for (remote, local, pin) in [
        (
            tokenizer_path,
            &files.tokenizer,
            (pins.tokenizer_bytes, pins.tokenizer_sha256),
        ),
        (model_path, &files.model, (pins.model_bytes, pins.model_sha256)),
    ] {
        if local.is_file() {
            if matches_pin(local, pin)? {
                tracing::debug!(path = %local.display(), "model file already present and verified");
                continue;
            }
            tracing::warn!(path = %local.display(), "model file on disk does not match its pin; deleting it and downloading it again");
            std::fs::remove_file(local).map_err(|source| RegistryError::Io {
                path: local.clone(),
                source,
            })?;
        }
        let url = hf_file_url(&base, repo, revision, remote);
        tracing::info!(%url, dest = %local.display(), "downloading model file");
        let name = local
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (n, sha) = fetch_atomic(&agent, &url, local, pin, &|done, total| progress(&name, done, total))?;
        bytes += n;
        if local == &files.model {
            model_sha256 = Some(sha);
        }
    }
    Ok(Downloaded {
        files,
        bytes,
        model_sha256,
    })
}

/// Whether the file at `path` has the pinned size and sha256 (the size is
/// checked first: hashing a 400 MB file is not free).
fn matches_pin(path: &Path, (bytes, sha256): (u64, &str)) -> Result<bool, RegistryError> {
    let len = std::fs::metadata(path)
        .map_err(|source| RegistryError::Io {
            path: path.to_owned(),
            source,
        })?
        .len();
    Ok(len == bytes && sha256_of(path)? == sha256)
}

fn sha256_of(path: &Path) -> Result<String, RegistryError> {
    let io_err = |source| RegistryError::Io {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io_err)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut f, &mut hasher).map_err(io_err)?;
    Ok(hex::encode(hasher.finalize()))
}

/// Streams `url` into a temporary file beside `dest`, checks its size and
/// sha256 against `pin`, fsyncs it and renames it over `dest`. Returns the
/// byte count and the sha256. On any failure the temporary file is deleted;
/// a body longer than the pin is cut off as soon as it passes it.
fn fetch_atomic(
    agent: &ureq::Agent,
    url: &str,
    dest: &Path,
    (pin_bytes, pin): (u64, &str),
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<(u64, String), RegistryError> {
    let http_err = |e: &dyn fmt::Display| RegistryError::Http {
        url: url.to_owned(),
        reason: e.to_string(),
    };
    let size_err = |got| RegistryError::SizeMismatch {
        file: dest.to_owned(),
        url: url.to_owned(),
        expected: pin_bytes,
        got,
    };
    let response = agent.get(url).call().map_err(|e| http_err(&e))?;
    let length = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = length.filter(|n| *n != pin_bytes && *n != 0) {
        // The server says up front it has another file: fetch nothing.
        return Err(size_err(Some(n)));
    }
    let mut reader = response.into_body().into_reader();

    let dir = dest.parent().unwrap_or_else(|| Path::new("."));
    let io_err = |source| RegistryError::Io {
        path: dest.to_owned(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".download-")
        .tempfile_in(dir)
        .map_err(io_err)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A body cut short surfaces here; the temp file is dropped (deleted).
            Err(e) => return Err(http_err(&e)),
        };
        total += n as u64;
        if total > pin_bytes {
            return Err(size_err(None));
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n]).map_err(io_err)?;
        progress(total, length);
    }
    if total == 0 {
        return Err(RegistryError::Empty { url: url.to_owned() });
    }
    if total != pin_bytes {
        return Err(size_err(Some(total)));
    }
    let got = hex::encode(hasher.finalize());
    if got != pin {
        return Err(RegistryError::Mismatch {
            file: dest.to_owned(),
            url: url.to_owned(),
            expected: pin.to_owned(),
            got,
        });
    }
    tmp.as_file().sync_all().map_err(io_err)?;
    tmp.persist(dest).map_err(|e| io_err(e.error))?;
    Ok((total, got))
}

#[cfg(test)]
pub(crate) mod tests;
