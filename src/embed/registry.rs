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
//! re-embeds. A download is accepted only when every file's sha256 matches
//! the pin in this registry ([`Pins`]); a mismatch deletes what was fetched
//! and fails. A model without pins is refused: the machines Jarvis was built
//! on could not reach the Hub, so the BGE entries carry **no pins yet** —
//! until someone with internet access records `revision` (a commit id) and
//! both files' sha256 here, those models are used by downloading the two
//! files by hand and setting `runtime.model_dir`.
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
        /// A commit id once pinned; a branch name (`main`) until then.
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

/// sha256 (hex) of each downloaded file, checked before it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pins {
    pub model_sha256: &'static str,
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
// The Hub paths (`onnx/model.onnx`) are where the BAAI repositories publish
// their ONNX exports; no machine this was written on could reach the Hub, so
// neither the paths nor any hashes could be checked, and the entries stay
// unpinned (refused by the downloader) rather than carry invented pins.
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
            revision: "main",
            model_path: "onnx/model.onnx",
            tokenizer_path: "tokenizer.json",
            // Not pinned: the Hub was unreachable where this was written.
            pins: None,
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
            revision: "main",
            model_path: "onnx/model.onnx",
            tokenizer_path: "tokenizer.json",
            // Not pinned: the Hub was unreachable where this was written.
            pins: None,
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
            model_sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
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
    /// A downloaded file's sha256 differs from the pin; it was deleted.
    #[error("{url} does not match its pinned sha256 (expected {expected}, got {got}); the file was discarded — the mirror may be serving other files")]
    Mismatch { url: String, expected: String, got: String },
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

impl RegistryError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            RegistryError::UnknownModel { .. } | RegistryError::Bundled { .. } | RegistryError::Unpinned { .. } => {
                ErrorKind::User
            }
            RegistryError::Http { .. } | RegistryError::Empty { .. } | RegistryError::Mismatch { .. } => {
                ErrorKind::Unavailable
            }
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
/// against its pinned sha256 before it is kept.
///
/// `base_url` overrides the Hub endpoint (tests, mirrors); `None` means
/// [`hf_endpoint`]. A file already present is kept only if its hash matches
/// the pin, so a re-run after a partial failure fetches only what is
/// missing or wrong. `progress(done, total)` reports bytes of the current
/// file. Blocking.
pub fn download_model(
    spec: &ModelSpec,
    dir: &Path,
    base_url: Option<&str>,
    progress: &dyn Fn(&str, u64, Option<u64>),
) -> Result<Downloaded, RegistryError> {
    let ModelSource::HuggingFace {
        repo,
        revision,
        model_path,
        tokenizer_path,
        pins,
    } = spec.source
    else {
        return Err(RegistryError::Bundled { id: spec.id.to_owned() });
    };
    let Some(pins) = pins else {
        return Err(RegistryError::Unpinned { id: spec.id.to_owned() });
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
        (tokenizer_path, &files.tokenizer, pins.tokenizer_sha256),
        (model_path, &files.model, pins.model_sha256),
    ] {
        if local.is_file() && sha256_of(local)? == pin {
            tracing::debug!(path = %local.display(), "model file already present and verified");
            continue;
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

/// Streams `url` into a temporary file beside `dest`, checks its sha256
/// against `pin`, fsyncs it and renames it over `dest`. Returns the byte
/// count and the sha256. On any failure the temporary file is deleted.
fn fetch_atomic(
    agent: &ureq::Agent,
    url: &str,
    dest: &Path,
    pin: &str,
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<(u64, String), RegistryError> {
    let http_err = |e: &dyn fmt::Display| RegistryError::Http {
        url: url.to_owned(),
        reason: e.to_string(),
    };
    let response = agent.get(url).call().map_err(|e| http_err(&e))?;
    let length = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
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
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n]).map_err(io_err)?;
        total += n as u64;
        progress(total, length);
    }
    if total == 0 {
        return Err(RegistryError::Empty { url: url.to_owned() });
    }
    let got = hex::encode(hasher.finalize());
    if got != pin {
        return Err(RegistryError::Mismatch {
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
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    #[test]
    fn lookup_finds_known_models_and_lists_them_on_a_miss() {
        let minilm = lookup(DEFAULT_MODEL_ID).unwrap();
        assert_eq!(minilm.dims, 384);
        assert_eq!(minilm.pooling, Pooling::Mean);
        assert_eq!(minilm.query_prefix, "");
        assert!(matches!(minilm.source, ModelSource::Bundled { .. }));

        let bge = lookup("baai/BGE-small-en-v1.5").unwrap();
        assert_eq!(bge.id, "BAAI/bge-small-en-v1.5");
        assert_eq!(bge.pooling, Pooling::Cls);
        assert_eq!(bge.query_prefix, BGE_QUERY_INSTRUCTION);
        assert_eq!(lookup("BAAI/bge-base-en-v1.5").unwrap().dims, 768);

        let err = lookup("bge-smol").unwrap_err().to_string();
        assert!(err.contains("unknown embedding model `bge-smol`"), "{err}");
        assert!(
            err.contains(DEFAULT_MODEL_ID) && err.contains("BAAI/bge-small-en-v1.5"),
            "{err}"
        );
    }

    #[test]
    fn hf_endpoint_override_is_trimmed_and_empty_means_default() {
        assert_eq!(endpoint_from(None), DEFAULT_HF_ENDPOINT);
        assert_eq!(endpoint_from(Some("  ")), DEFAULT_HF_ENDPOINT);
        assert_eq!(
            endpoint_from(Some("http://mirror.local/hf/ ")),
            "http://mirror.local/hf"
        );
    }

    #[test]
    fn hub_urls_follow_the_resolve_route() {
        assert_eq!(
            hf_file_url(
                "https://huggingface.co/",
                "BAAI/bge-small-en-v1.5",
                "main",
                "onnx/model.onnx"
            ),
            "https://huggingface.co/BAAI/bge-small-en-v1.5/resolve/main/onnx/model.onnx"
        );
    }

    /// A loopback HTTP/1.1 server that answers `GET path` from a fixed table
    /// (404 otherwise) and records the paths it was asked for.
    fn fake_hub(files: Vec<(String, Vec<u8>)>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                // Drain headers up to the blank line.
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
                seen2.lock().unwrap().push(path.clone());
                let (status, body): (&str, &[u8]) = match files.iter().find(|(p, _)| *p == path) {
                    Some((_, b)) => ("200 OK", b),
                    None => ("404 Not Found", b"not found"),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body);
            }
        });
        (base, seen)
    }

    /// A registry entry pinned to the given bytes, under `test/pinned`.
    fn pinned(model: &[u8], tokenizer: &[u8]) -> &'static ModelSpec {
        let leak = |b: &[u8]| -> &'static str { Box::leak(hex::encode(Sha256::digest(b)).into_boxed_str()) };
        Box::leak(Box::new(ModelSpec {
            id: "test/pinned",
            dims: 4,
            pooling: Pooling::Mean,
            max_tokens: 16,
            normalize: true,
            query_prefix: "",
            source: ModelSource::HuggingFace {
                repo: "test/pinned",
                revision: "abc123",
                model_path: "onnx/model.onnx",
                tokenizer_path: "tokenizer.json",
                pins: Some(Pins {
                    model_sha256: leak(model),
                    tokenizer_sha256: leak(tokenizer),
                }),
            },
        }))
    }

    fn leftovers(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().starts_with(".download-"))
                })
                .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn downloads_pinned_files_atomically_from_a_loopback_hub() {
        let model_bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let tok_bytes = br#"{"version":"1.0"}"#.to_vec();
        let (base, seen) = fake_hub(vec![
            (
                "/test/pinned/resolve/abc123/onnx/model.onnx".into(),
                model_bytes.clone(),
            ),
            ("/test/pinned/resolve/abc123/tokenizer.json".into(), tok_bytes.clone()),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("models/pinned");
        let spec = pinned(&model_bytes, &tok_bytes);
        let reported = Mutex::new(0u64);
        let got = download_model(spec, &target, Some(&base), &|_, done, _| {
            *reported.lock().unwrap() = done
        })
        .unwrap();
        assert_eq!(std::fs::read(&got.files.model).unwrap(), model_bytes);
        assert_eq!(std::fs::read(&got.files.tokenizer).unwrap(), tok_bytes);
        assert_eq!(got.bytes, (model_bytes.len() + tok_bytes.len()) as u64);
        assert_eq!(
            *reported.lock().unwrap(),
            model_bytes.len() as u64,
            "progress reaches the end"
        );
        assert_eq!(got.model_sha256.unwrap(), hex::encode(Sha256::digest(&model_bytes)));
        let mut names: Vec<_> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["model.onnx", "tokenizer.json"]);

        // A second run verifies both files and fetches nothing.
        let before = seen.lock().unwrap().len();
        let again = download_model(spec, &target, Some(&base), &|_, _, _| {}).unwrap();
        assert_eq!(again.bytes, 0);
        assert_eq!(seen.lock().unwrap().len(), before);
        // A damaged file on disk is fetched again, not trusted.
        std::fs::write(&got.files.model, b"damaged").unwrap();
        let fixed = download_model(spec, &target, Some(&base), &|_, _, _| {}).unwrap();
        assert_eq!(fixed.bytes, model_bytes.len() as u64);
        assert_eq!(std::fs::read(&got.files.model).unwrap(), model_bytes);
    }

    /// Verification is real: bytes that differ from the pin are discarded
    /// and the download fails.
    #[test]
    fn a_file_that_does_not_match_its_pin_is_discarded() {
        let (base, _) = fake_hub(vec![
            (
                "/test/pinned/resolve/abc123/onnx/model.onnx".into(),
                b"tampered model".to_vec(),
            ),
            ("/test/pinned/resolve/abc123/tokenizer.json".into(), b"{}".to_vec()),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let spec = pinned(b"the real model", b"{}");
        let err = download_model(spec, dir.path(), Some(&base), &|_, _, _| {}).unwrap_err();
        assert!(matches!(err, RegistryError::Mismatch { .. }), "{err}");
        assert!(err.to_string().contains("pinned sha256"), "{err}");
        assert!(!dir.path().join(MODEL_FILE).exists());
        assert_eq!(leftovers(dir.path()), 0);
    }

    #[test]
    fn an_unpinned_model_is_refused_and_offline_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let bge = lookup("BAAI/bge-small-en-v1.5").unwrap();
        let err = download_model(bge, dir.path(), Some("http://127.0.0.1:9"), &|_, _, _| {}).unwrap_err();
        assert!(matches!(err, RegistryError::Unpinned { .. }), "{err}");
        assert!(err.to_string().contains("runtime.model_dir"), "{err}");
        // Nothing listening: an HTTP error that says what to do.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        drop(l);
        let err = download_model(pinned(b"m", b"t"), dir.path(), Some(&base), &|_, _, _| {}).unwrap_err();
        assert!(matches!(err, RegistryError::Http { .. }), "{err}");
        assert!(err.to_string().contains("internet connection"), "{err}");
    }

    #[test]
    fn a_missing_file_is_an_http_error_and_leaves_nothing_half_written() {
        // The tokenizer exists upstream, the model does not.
        let (base, _) = fake_hub(vec![(
            "/test/pinned/resolve/abc123/tokenizer.json".into(),
            b"{}".to_vec(),
        )]);
        let dir = tempfile::tempdir().unwrap();
        let err = download_model(
            pinned(b"m", b"{}"),
            dir.path(),
            Some(&format!("{base}/")),
            &|_, _, _| {},
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, RegistryError::Http { .. }), "{msg}");
        assert!(msg.contains("onnx/model.onnx") && msg.contains("404"), "{msg}");
        assert!(!dir.path().join(MODEL_FILE).exists());
        assert_eq!(leftovers(dir.path()), 0);
    }

    #[test]
    fn bundled_models_are_not_downloaded() {
        let dir = tempfile::tempdir().unwrap();
        let err = download_model(
            lookup(DEFAULT_MODEL_ID).unwrap(),
            dir.path(),
            Some("http://127.0.0.1:9"),
            &|_, _, _| {},
        )
        .unwrap_err();
        assert!(matches!(err, RegistryError::Bundled { .. }));
    }
}
