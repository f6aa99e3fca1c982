//! Embedder tests against the real MiniLM model and a real ONNX Runtime
//! (located by [`super::test_support`]); pooling maths is also checked on
//! hand-made tensors.

use super::test_support::{natives, shared_embedder};
use super::*;

const CAT: &str = "The cat sits on the mat.";
const KITTEN: &str = "A kitten is resting on a rug.";
const UNRELATED: &str = "Quarterly tax filings are due at the end of April.";

fn words(n: usize, seed: &str) -> String {
    (0..n).map(|i| format!("{seed}{} ", i % 97)).collect()
}

#[test]
fn sanity_cosines_match_the_reference_model() {
    let mut e = shared_embedder();
    let v = e.embed_documents(&[CAT, KITTEN, UNRELATED]).unwrap();
    let similar = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    eprintln!("cosine(cat, kitten) = {similar:.3}; cosine(cat, unrelated) = {unrelated:.3}");
    // Reference (numpy fp32 MiniLM): 0.639 for the pair.
    assert!(similar > 0.5 && similar < 0.8, "similar pair scored {similar}");
    assert!(unrelated < 0.1, "unrelated pair scored {unrelated}");
}

#[test]
fn vectors_have_the_registry_dims_and_unit_length() {
    let mut e = shared_embedder();
    assert_eq!(e.dims(), 384);
    assert_eq!(e.model_id(), DEFAULT_MODEL_ID);
    for v in e.embed_documents(&[CAT, "x", &words(400, "w")]).unwrap() {
        assert_eq!(v.len(), 384);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
}

#[test]
fn batching_gives_the_same_vectors_as_one_by_one() {
    let texts: Vec<String> = (0..7)
        .map(|i| format!("Sentence number {i} about {}", words(i * 9 + 1, "topic")))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut e = shared_embedder();
    let old = e.batch_size();
    e.set_batch_size(3);
    let batched = e.embed_documents(&refs);
    e.set_batch_size(old);
    let batched = batched.unwrap();
    for (text, b) in refs.iter().zip(&batched) {
        let single = e.embed_documents(&[text]).unwrap().remove(0);
        let c = cosine(b, &single);
        assert!(c > 0.999, "batched vs single cosine {c} for {text:?}");
    }
}

#[test]
fn padding_does_not_change_a_short_texts_vector() {
    let mut e = shared_embedder();
    let alone = e.embed_documents(&[CAT]).unwrap().remove(0);
    // Batched with a 200-token neighbour, CAT is padded with ~190 [PAD]s.
    let long = words(200, "padding");
    let together = e.embed_documents(&[&long, CAT]).unwrap();
    let c = cosine(&alone, &together[1]);
    assert!(c > 0.999, "padded vs unpadded cosine {c}");
}

#[test]
fn tokenizer_overrides_replace_the_baked_in_128_token_limits() {
    let n = natives();
    let tok = load_tokenizer(&n.files.tokenizer, 256).unwrap();
    let long = words(400, "w");
    let encs = tok.encode_batch(vec!["hi", long.as_str()], true).unwrap();
    // Batch-longest padding (not fixed 128) and truncation at 256 (not 128).
    assert_eq!(encs[0].len(), 256);
    assert_eq!(encs[1].len(), 256);
    let short = tok.encode_batch(vec!["hi", "hello there"], true).unwrap();
    assert_eq!(short[0].len(), short[1].len());
    assert!(short[0].len() < 10, "padded to {}", short[0].len());
}

#[test]
fn long_input_is_truncated_at_max_tokens_without_error() {
    let mut e = shared_embedder();
    let head = words(300, "alpha");
    assert!(e.count_tokens(&head).unwrap() > 256);
    let tail_a = format!("{head} completely different ending about volcanoes");
    let tail_b = format!("{head} {}", words(3000, "zebra"));
    let v = e.embed_documents(&[&tail_a, &tail_b]).unwrap();
    // Everything past token 256 is cut, so the endings cannot matter.
    assert!(cosine(&v[0], &v[1]) > 0.9999);
    // ...but a difference before token 256 (and after 128) does matter.
    let early = words(70, "alpha");
    let a = format!("{early} {}", words(60, "cat"));
    let b = format!("{early} {}", words(60, "stock"));
    assert!(e.count_tokens(&early).unwrap() > 128);
    let v = e.embed_documents(&[&a, &b]).unwrap();
    assert!(cosine(&v[0], &v[1]) < 0.999, "tokens 128..256 were ignored");
}

#[test]
fn empty_inputs_are_handled() {
    let mut e = shared_embedder();
    assert!(e.embed_documents(&[]).unwrap().is_empty());
    let v = e.embed_documents(&["", CAT]).unwrap();
    assert_eq!(v[0].len(), 384);
    assert!(v[0].iter().all(|x| x.is_finite()));
    let q = e.embed_query("").unwrap();
    assert_eq!(q.len(), 384);
}

#[test]
fn minilm_queries_have_no_prefix() {
    let mut e = shared_embedder();
    assert_eq!(e.query_prefix(), "");
    let q = e.embed_query(CAT).unwrap();
    let d = e.embed_documents(&[CAT]).unwrap().remove(0);
    assert!(cosine(&q, &d) > 0.9999);
}

/// A single text is tokenized on the calling thread, a batch by the
/// tokenizer's pool: the two must give the same vector.
#[test]
fn one_text_alone_embeds_as_it_does_inside_a_batch() {
    let mut e = shared_embedder();
    let alone = e.embed_query(CAT).unwrap();
    let batch = e
        .embed_documents(&[
            CAT,
            "a much longer second text, so the batch is padded past the first one's length",
        ])
        .unwrap()
        .remove(0);
    assert!(cosine(&alone, &batch) > 0.9999, "{}", cosine(&alone, &batch));
}

#[test]
fn a_configured_query_prefix_is_prepended_to_queries_only() {
    let n = natives();
    let spec = lookup(DEFAULT_MODEL_ID).unwrap();
    let prefix = "search query: ";
    let mut e = Embedder::load(&n.ort_dylib, &n.files, spec, Some(prefix.into()), 1).unwrap();
    assert_eq!(e.query_prefix(), prefix);
    let q = e.embed_query(CAT).unwrap();
    let with = e.embed_documents(&[&format!("{prefix}{CAT}")]).unwrap().remove(0);
    let without = e.embed_documents(&[CAT]).unwrap().remove(0);
    assert!(cosine(&q, &with) > 0.9999);
    assert!(cosine(&q, &without) < 0.999);
}

/// The quick-start session runs the unoptimised graph, so its vectors must
/// be the throughput session's up to float rounding: an index built by one
/// is searched by the other (`kb index-vault` embeds for throughput, a
/// direct `kb search` embeds its query with quick start).
#[test]
fn quick_start_and_throughput_sessions_give_the_same_vectors() {
    let n = natives();
    let spec = lookup(DEFAULT_MODEL_ID).unwrap();
    let load = |profile| Embedder::load_with_profile(&n.ort_dylib, &n.files, spec, None, 1, profile).unwrap();
    let mut quick = load(SessionProfile::QuickStart);
    let mut full = load(SessionProfile::Throughput);
    assert_eq!(quick.profile(), SessionProfile::QuickStart);
    assert_eq!(full.profile(), SessionProfile::Throughput);
    assert_eq!(
        shared_embedder().profile(),
        SessionProfile::Throughput,
        "load's default"
    );
    let long = words(300, "w");
    let texts = [CAT, KITTEN, UNRELATED, "", "x", long.as_str()];
    let (a, b) = (
        quick.embed_documents(&texts).unwrap(),
        full.embed_documents(&texts).unwrap(),
    );
    for ((text, x), y) in texts.iter().zip(&a).zip(&b) {
        let c = cosine(x, y);
        assert!(c >= 0.9999, "quick start vs throughput cosine {c} for {text:?}");
    }
    let (qa, qb) = (
        quick.embed_query("what does the cat sit on").unwrap(),
        full.embed_query("what does the cat sit on").unwrap(),
    );
    assert!(cosine(&qa, &qb) >= 0.9999);
    // Not one graph under two names: the optimised session's fused kernels
    // round differently, so identical bits would mean the profile never
    // reached the session. (The same session is bit-for-bit repeatable.)
    assert_ne!(a, b, "both profiles ran the same graph");
    assert_eq!(quick.embed_documents(&texts).unwrap(), a);
    // Queries: the throughput embedder answers them from its own one-thread
    // session (built on the first query), which gives the bulk session's
    // vectors; a quick-start embedder keeps its single session.
    assert!(full.query_session.is_some() && quick.query_session.is_none());
    let q = "what does the cat sit on";
    let bulk = full.embed_documents(&[q]).unwrap().remove(0);
    assert!(cosine(&qb, &bulk) >= 0.9999);
}

#[test]
fn cancellation_is_checked_between_batches() {
    let texts = [CAT, KITTEN, UNRELATED, "one", "two"];
    let mut e = shared_embedder();
    let old = e.batch_size();
    e.set_batch_size(2);
    let calls = std::cell::Cell::new(0);
    let result = e.embed_documents_cancellable(&texts, &|| {
        calls.set(calls.get() + 1);
        calls.get() > 1
    });
    e.set_batch_size(old);
    assert!(matches!(result, Err(EmbedError::Cancelled)), "{result:?}");
    assert_eq!(calls.get(), 2, "stopped before the second batch");
}

#[test]
fn the_runtime_loads_once_and_refuses_a_different_library() {
    let n = natives();
    let env1 = runtime::environment(&n.ort_dylib);
    assert!(env1.is_ok(), "{env1:?}");
    // Same library again: a no-op, not an error or a panic.
    assert!(runtime::environment(&n.ort_dylib).is_ok());
    let info = runtime::build_info().expect("build info after load");
    assert!(info.starts_with("ORT Build Info"), "{info}");
    // Release-branch builds name their version; the PyPI 1.32.0 build says
    // `git-branch=HEAD`, so the version may legitimately be unknown.
    if let Some(version) = ort_version() {
        let minor: u32 = version.split('.').nth(1).unwrap().parse().unwrap();
        assert!(minor >= REQUIRED_ORT_MINOR, "{version}");
    }
    eprintln!("{info} from {:?}", runtime::loaded_path());

    // A copy of the same library elsewhere is the same library.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("libonnxruntime.so");
    std::fs::copy(&n.ort_dylib, &copy).unwrap();
    assert!(runtime::environment(&copy).is_ok());
    // A different library is refused, naming both.
    let other = dir.path().join("libother.so");
    let mut bytes = std::fs::read(&n.ort_dylib).unwrap();
    bytes.push(0);
    std::fs::write(&other, bytes).unwrap();
    let err = runtime::environment(&other).unwrap_err();
    assert!(matches!(err, EmbedError::RuntimeConflict { .. }), "{err}");
    assert!(err.to_string().contains("already loaded"), "{err}");
}

#[test]
fn a_missing_runtime_library_is_an_actionable_error() {
    let err = runtime::environment(Path::new("/nonexistent/libonnxruntime.so")).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, EmbedError::RuntimeNotFound { .. }), "{msg}");
    assert!(msg.contains("/nonexistent/libonnxruntime.so"), "{msg}");
    assert!(
        msg.contains("[runtime] onnxruntime") && msg.contains("jarvis runtime check"),
        "{msg}"
    );
}

/// Runs only in a child process (see the next test) so that the bad library
/// is the first one this process tries to load.
#[test]
#[ignore = "run by a_library_that_is_not_onnx_runtime_is_an_error_not_a_panic"]
fn child_load_garbage_library() {
    let Some(path) = std::env::var_os("JARVIS_TEST_GARBAGE_LIB") else {
        return;
    };
    let err = runtime::environment(Path::new(&path)).unwrap_err();
    assert!(matches!(err, EmbedError::RuntimeLoad { .. }), "{err}");
    // The printed message is checked by the parent.
    eprintln!("GARBAGE-ERROR: {err}");
}

#[test]
fn a_library_that_is_not_onnx_runtime_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libonnxruntime.so");
    std::fs::write(&lib, b"this is not a shared object").unwrap();
    #[allow(clippy::disallowed_methods)] // re-runs this test binary as a child
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "embed::tests::child_load_garbage_library",
            "--ignored",
            "--nocapture",
        ])
        .env("JARVIS_TEST_GARBAGE_LIB", &lib)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "child test did not run:\n{stdout}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("GARBAGE-ERROR"))
        .unwrap_or_default();
    assert!(
        line.contains("could not be loaded") && line.contains(&*lib.to_string_lossy()),
        "{line}"
    );
    assert!(line.contains("jarvis runtime check"), "{line}");
}

#[test]
fn missing_or_corrupt_model_files_are_reported_with_their_path() {
    let n = natives();
    let spec = lookup(DEFAULT_MODEL_ID).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = ModelFiles::in_dir(dir.path());
    std::fs::copy(&n.files.tokenizer, &files.tokenizer).unwrap();
    let err = Embedder::load(&n.ort_dylib, &files, spec, None, 1).unwrap_err();
    assert!(
        matches!(err, EmbedError::FileNotFound { what: "ONNX model", .. }),
        "{err}"
    );

    std::fs::write(&files.model, b"not a protobuf").unwrap();
    let err = Embedder::load(&n.ort_dylib, &files, spec, None, 1).unwrap_err();
    assert!(matches!(err, EmbedError::Session { .. }), "{err}");
    assert!(err.to_string().contains("model.onnx"), "{err}");

    std::fs::write(&files.tokenizer, b"{").unwrap();
    let err = Embedder::load(&n.ort_dylib, &files, spec, None, 1).unwrap_err();
    assert!(matches!(err, EmbedError::Tokenizer { .. }), "{err}");

    // A broken runtime path is reported before any model file problem.
    let err = Embedder::load(Path::new("/nonexistent/libonnxruntime.so"), &files, spec, None, 1).unwrap_err();
    assert!(matches!(err, EmbedError::RuntimeNotFound { .. }), "{err}");
}

#[test]
fn a_registry_dims_mismatch_is_caught() {
    let n = natives();
    let mut spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
    spec.dims = 768;
    let mut e = Embedder::load(&n.ort_dylib, &n.files, &spec, None, 1).unwrap();
    let err = e.embed_documents(&[CAT]).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::DimsMismatch {
                expected: 768,
                got: 384,
                ..
            }
        ),
        "{err}"
    );
}

// --- a tiny generated model: no token_type_ids input, CLS pooling -------

fn tiny_spec(pooling: Pooling, normalize: bool) -> ModelSpec {
    ModelSpec {
        id: "test/tiny-embedder",
        dims: 4,
        pooling,
        max_tokens: 32,
        normalize,
        query_prefix: "",
        source: registry::ModelSource::Bundled {
            model_sha256: "",
            tokenizer_sha256: "",
        },
    }
}

/// The fixture's formula (tests/fixtures/tiny-embedder/make_tiny_embedder.py)
/// pooled by hand from the unpadded encoding.
fn tiny_expected(tok: &Tokenizer, text: &str, pooling: Pooling, normalize: bool) -> Vec<f32> {
    let e = |k: u32, d: u32| (((k * (d + 3)) % 7) as f32 - 3.0) / 4.0;
    let enc = tok.encode(text, true).unwrap();
    let ids = enc.get_ids();
    let context: Vec<f32> = (0..4).map(|d| ids.iter().map(|&k| e(k, d)).sum()).collect();
    let state = |t: usize| -> Vec<f32> { (0..4).map(|d| e(ids[t], d as u32) + context[d]).collect() };
    let mut v = match pooling {
        Pooling::Cls => state(0),
        Pooling::Mean => (0..4)
            .map(|d| (0..ids.len()).map(|t| state(t)[d]).sum::<f32>() / ids.len() as f32)
            .collect(),
    };
    if normalize {
        l2_normalize(&mut v);
    }
    v
}

#[test]
fn a_model_without_token_type_ids_and_with_cls_pooling_works() {
    let n = natives();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-embedder");
    let files = ModelFiles::in_dir(&dir);
    let tok = Tokenizer::from_file(&files.tokenizer).unwrap();
    // Different lengths in one batch, so the short ones are padded.
    let texts = [
        "cat",
        "the cat sits on the mat",
        "",
        "protein folding in cells and flow cytometry",
    ];
    for (pooling, normalize) in [(Pooling::Cls, false), (Pooling::Mean, false), (Pooling::Cls, true)] {
        let spec = tiny_spec(pooling, normalize);
        let mut e = Embedder::load(&n.ort_dylib, &files, &spec, None, 1).unwrap();
        let got = e.embed_documents(&texts).unwrap();
        for (text, v) in texts.iter().zip(&got) {
            let want = tiny_expected(&tok, text, pooling, normalize);
            let close = v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5);
            assert!(
                close,
                "{pooling:?} normalize={normalize} {text:?}: got {v:?}, want {want:?}"
            );
        }
    }
}

// --- pooling maths on hand-made tensors -------------------------------

fn encodings_with_masks(masks: &[&[u32]]) -> Vec<Encoding> {
    masks
        .iter()
        .map(|m| {
            let n = m.len();
            Encoding::new(
                vec![1; n],
                vec![0; n],
                vec![String::new(); n],
                vec![None; n],
                vec![(0, 0); n],
                vec![0; n],
                m.to_vec(),
                Vec::new(),
                Default::default(),
            )
        })
        .collect()
}

#[test]
fn mean_pooling_ignores_masked_positions_and_cls_takes_the_first() {
    // batch 2, seq 3, dims 2
    let data = [
        1.0, 2.0, 3.0, 4.0, 100.0, 100.0, /* row 2 */ 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    ];
    let shape = [2, 3, 2];
    let encs = encodings_with_masks(&[&[1, 1, 0], &[1, 1, 1]]);
    let mean = pool(&data, &shape, &encs, Pooling::Mean).unwrap();
    assert_eq!(mean, vec![vec![2.0, 3.0], vec![7.0, 8.0]]);
    let cls = pool(&data, &shape, &encs, Pooling::Cls).unwrap();
    assert_eq!(cls, vec![vec![1.0, 2.0], vec![5.0, 6.0]]);
    // An already-pooled [batch, dims] output passes through.
    let pooled = pool(&data[..4], &[2, 2], &encs, Pooling::Mean).unwrap();
    assert_eq!(pooled, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    assert!(pool(&data, &[12], &encs, Pooling::Mean).is_err());
    assert!(pool(&data, &[3, 2, 2], &encs, Pooling::Mean).is_err());
}

#[test]
fn normalisation_and_cosine_helpers() {
    let mut v = vec![3.0, 4.0];
    l2_normalize(&mut v);
    assert_eq!(v, vec![0.6, 0.8]);
    let mut z = vec![0.0, 0.0];
    l2_normalize(&mut z);
    assert_eq!(z, vec![0.0, 0.0]);
    assert!((cosine(&[1.0, 0.0], &[0.0, 2.0])).abs() < 1e-6);
    assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
}

#[test]
fn engines_can_move_to_a_blocking_thread() {
    // Callers hand these to spawn_blocking / worker threads.
    fn assert_send<T: Send + 'static>() {}
    assert_send::<Embedder>();
    assert_send::<rerank::CrossEncoder>();
    assert_send::<EmbedError>();
}
