//! The re-rankers Jarvis can download (`rag.rerank_model = "<id>"`), beside
//! the embedding models of [`super::registry`], whose verified downloader
//! they share: every file is checked against its pinned size and sha256
//! before it is kept.
//!
//! Must not load models (that is [`super::rerank`]) or decide when to
//! download (the app does, on the first re-ranked search).

use std::path::Path;

use super::registry::{Downloaded, ModelSource, Pins, RegistryError};

/// A cross-encoder (re-ranker) the registry can fetch: named in
/// `rag.rerank_model`, downloaded into `$JARVIS_HOME/models/<id>/` on first
/// use, verified by size and sha256 like an embedding model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerankerSpec {
    /// The id config names (the upstream model's Hugging Face name).
    pub id: &'static str,
    /// Where the files come from, pinned (commit, sizes, sha256).
    pub source: ModelSource,
}

/// The re-rankers Jarvis can download. ms-marco-MiniLM-L-6-v2 comes from
/// Xenova's ONNX export (int8-quantised, 23 MB; the same weights as
/// `cross-encoder/ms-marco-MiniLM-L-6-v2`), pinned to one commit.
static RERANKERS: &[RerankerSpec] = &[RerankerSpec {
    id: "cross-encoder/ms-marco-MiniLM-L-6-v2",
    source: ModelSource::HuggingFace {
        repo: "Xenova/ms-marco-MiniLM-L-6-v2",
        revision: "a09144355adeed5f58c8ed011d209bf8ee5a1fec",
        model_path: "onnx/model_quantized.onnx",
        tokenizer_path: "tokenizer.json",
        pins: Some(Pins {
            model_bytes: 23_143_499,
            model_sha256: "e9d8ebf845c413e981c175bfe49a3bfa9b3dcce2a3ba54875ee5df5a58639fbe",
            tokenizer_bytes: 711_396,
            tokenizer_sha256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
        }),
    },
}];

/// Test builds only: the committed tiny cross-encoder fixture
/// (`tests/fixtures/tiny-cross-encoder`) under a Hub-style name, pinned to
/// its hashes and sizes, so the suite runs the whole download through a
/// loopback mirror.
#[cfg(any(test, feature = "failpoints"))]
static TEST_RERANKERS: &[RerankerSpec] = &[RerankerSpec {
    id: "jarvis-test/tiny-cross-encoder",
    source: ModelSource::HuggingFace {
        repo: "jarvis-test/tiny-cross-encoder",
        revision: "89abcdef0123456789abcdef0123456789abcdef",
        model_path: "onnx/model_quantized.onnx",
        tokenizer_path: "tokenizer.json",
        pins: Some(Pins {
            model_bytes: 1714,
            model_sha256: "632284aa2be9bce6ac9fa5e13c758403e02bec1d46ccd4625a514ac57318d571",
            tokenizer_bytes: 3048,
            tokenizer_sha256: "1bf917770296740cffd32de68d99e093c7cfde53bd810e78aba7fdc52df17008",
        }),
    },
}];
#[cfg(not(any(test, feature = "failpoints")))]
static TEST_RERANKERS: &[RerankerSpec] = &[];

/// Every re-ranker the registry can download.
pub fn known_rerankers() -> &'static [RerankerSpec] {
    RERANKERS
}

/// The registry's re-ranker named `id` (exact, then ASCII
/// case-insensitive), or `None` — `rag.rerank_model` may also name a
/// directory.
pub fn lookup_reranker(id: &str) -> Option<&'static RerankerSpec> {
    let all = || RERANKERS.iter().chain(TEST_RERANKERS.iter());
    all()
        .find(|m| m.id == id)
        .or_else(|| all().find(|m| m.id.eq_ignore_ascii_case(id)))
}

/// Fetches a registry re-ranker's files into `dir` as `model.onnx` and
/// `tokenizer.json`, each checked against its pinned size and sha256 (see
/// [`download_model`] for the rest). Blocking.
pub fn download_reranker(
    spec: &RerankerSpec,
    dir: &Path,
    base_url: Option<&str>,
    progress: &dyn Fn(&str, u64, Option<u64>),
) -> Result<Downloaded, RegistryError> {
    super::registry::download_source(spec.id, &spec.source, dir, base_url, progress)
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::embed::registry::tests::{fake_hub, leftovers};
    use crate::embed::registry::MODEL_FILE;

    /// The re-ranker entry carries exactly the pins issue 22 gives, and a
    /// download checks each file's size as well as its hash.
    #[test]
    fn the_reranker_is_pinned_and_its_download_checks_size_and_hash() {
        let spec = lookup_reranker("cross-encoder/MS-MARCO-MiniLM-L-6-v2").unwrap();
        assert_eq!(spec.id, "cross-encoder/ms-marco-MiniLM-L-6-v2");
        let ModelSource::HuggingFace {
            repo,
            revision,
            model_path,
            pins: Some(pins),
            ..
        } = spec.source
        else {
            panic!("the re-ranker must be a pinned Hub download");
        };
        assert_eq!(repo, "Xenova/ms-marco-MiniLM-L-6-v2");
        assert_eq!(revision, "a09144355adeed5f58c8ed011d209bf8ee5a1fec");
        assert_eq!(model_path, "onnx/model_quantized.onnx");
        assert_eq!((pins.model_bytes, pins.tokenizer_bytes), (23_143_499, 711_396));
        assert_eq!(
            pins.model_sha256,
            "e9d8ebf845c413e981c175bfe49a3bfa9b3dcce2a3ba54875ee5df5a58639fbe"
        );
        assert_eq!(
            pins.tokenizer_sha256,
            "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
        );
        assert!(lookup_reranker("/some/dir").is_none());

        let model: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let tok = b"{}".to_vec();
        let leak = |b: &[u8]| -> &'static str { Box::leak(hex::encode(Sha256::digest(b)).into_boxed_str()) };
        let pinned = |model_bytes: u64| RerankerSpec {
            id: "test/rr",
            source: ModelSource::HuggingFace {
                repo: "test/rr",
                revision: "r1",
                model_path: "onnx/model_quantized.onnx",
                tokenizer_path: "tokenizer.json",
                pins: Some(Pins {
                    model_bytes,
                    model_sha256: leak(&model),
                    tokenizer_bytes: 2,
                    tokenizer_sha256: leak(&tok),
                }),
            },
        };
        let (base, _) = fake_hub(vec![
            ("/test/rr/resolve/r1/onnx/model_quantized.onnx".into(), model.clone()),
            ("/test/rr/resolve/r1/tokenizer.json".into(), tok.clone()),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let got = download_reranker(&pinned(5000), dir.path(), Some(&base), &|_, _, _| {}).unwrap();
        assert_eq!(std::fs::read(got.files.model).unwrap(), model);
        // A pin of another size refuses the same bytes before hashing.
        let other = tempfile::tempdir().unwrap();
        let err = download_reranker(&pinned(4999), other.path(), Some(&base), &|_, _, _| {}).unwrap_err();
        assert!(matches!(err, RegistryError::SizeMismatch { .. }), "{err}");
        assert!(!other.path().join(MODEL_FILE).exists());
        assert_eq!(leftovers(other.path()), 0);
    }
}
