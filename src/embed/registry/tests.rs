//! Tests of the registry and the pinned downloader (against loopback hubs).

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
pub(crate) fn fake_hub(files: Vec<(String, Vec<u8>)>) -> (String, Arc<Mutex<Vec<String>>>) {
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
                model_bytes: model.len() as u64,
                model_sha256: leak(model),
                tokenizer_bytes: tokenizer.len() as u64,
                tokenizer_sha256: leak(tokenizer),
            }),
        },
    }))
}

pub(crate) fn leftovers(dir: &Path) -> usize {
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
/// and the download fails, naming the file.
#[test]
fn a_file_that_does_not_match_its_pin_is_discarded() {
    let real = b"the real model".to_vec();
    let mut one_byte_off = real.clone();
    one_byte_off[3] ^= 0x01;
    let (base, _) = fake_hub(vec![
        ("/test/pinned/resolve/abc123/onnx/model.onnx".into(), one_byte_off),
        ("/test/pinned/resolve/abc123/tokenizer.json".into(), b"{}".to_vec()),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let spec = pinned(&real, b"{}");
    let err = download_model(spec, dir.path(), Some(&base), &|_, _, _| {}).unwrap_err();
    assert!(matches!(err, RegistryError::Mismatch { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("pinned sha256") && msg.contains("was deleted"), "{msg}");
    assert!(
        msg.contains(&dir.path().join(MODEL_FILE).display().to_string()),
        "{msg}"
    );
    assert!(!dir.path().join(MODEL_FILE).exists());
    assert_eq!(leftovers(dir.path()), 0);
}

/// The size is a pin of its own: a longer or shorter file is refused
/// whatever its hash (here the Content-Length already says so, and
/// nothing is written).
#[test]
fn a_file_of_another_size_is_refused_and_deleted() {
    let real: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
    for (served, got) in [
        (real[..real.len() - 1].to_vec(), Some(real.len() as u64 - 1)),
        ([real.as_slice(), b"x"].concat(), Some(real.len() as u64 + 1)),
    ] {
        let (base, _) = fake_hub(vec![
            ("/test/pinned/resolve/abc123/onnx/model.onnx".into(), served),
            ("/test/pinned/resolve/abc123/tokenizer.json".into(), b"{}".to_vec()),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let err = download_model(pinned(&real, b"{}"), dir.path(), Some(&base), &|_, _, _| {}).unwrap_err();
        match &err {
            RegistryError::SizeMismatch {
                file, expected, got: g, ..
            } => {
                assert_eq!(*expected, real.len() as u64);
                assert_eq!(*g, got);
                assert_eq!(file, &dir.path().join(MODEL_FILE));
            }
            other => panic!("expected a size mismatch, got {other}"),
        }
        assert!(err.to_string().contains("not the pinned"), "{err}");
        assert!(!dir.path().join(MODEL_FILE).exists());
        assert_eq!(leftovers(dir.path()), 0);
    }
}

/// A wrong file already on disk is deleted before the download, so a
/// failing download cannot leave it behind.
#[test]
fn a_wrong_file_on_disk_is_deleted_even_when_the_download_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(TOKENIZER_FILE), b"{}").unwrap();
    std::fs::write(dir.path().join(MODEL_FILE), b"stale").unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let err = download_model(pinned(b"model", b"{}"), dir.path(), Some(&dead), &|_, _, _| {}).unwrap_err();
    assert!(matches!(err, RegistryError::Http { .. }), "{err}");
    assert!(!dir.path().join(MODEL_FILE).exists(), "the stale file is gone");
    assert!(dir.path().join(TOKENIZER_FILE).exists(), "the verified one stays");
}

/// Every downloadable entry is pinned to a commit (40 hex digits, never a
/// branch) with sizes and sha256 values, and the BGE pins are the
/// published ones.
#[test]
fn every_hub_entry_is_pinned_to_a_commit() {
    for m in MODELS {
        let ModelSource::HuggingFace { revision, pins, .. } = m.source else {
            continue;
        };
        assert!(
            revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: {revision}",
            m.id
        );
        let pins = pins.unwrap_or_else(|| panic!("{} is not pinned", m.id));
        for sha in [pins.model_sha256, pins.tokenizer_sha256] {
            assert!(
                sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}",
                m.id
            );
        }
        assert!(pins.model_bytes > 1_000_000 && pins.tokenizer_bytes > 1000, "{}", m.id);
    }
    let small = lookup("BAAI/bge-small-en-v1.5").unwrap();
    let ModelSource::HuggingFace { revision, pins, .. } = small.source else {
        panic!("bge-small is a Hub model")
    };
    assert_eq!(revision, "5c38ec7c405ec4b44b94cc5a9bb96e735b38267a");
    assert_eq!(pins.map(|p| p.model_bytes), Some(133_093_490));
    let base = lookup("BAAI/bge-base-en-v1.5").unwrap();
    let ModelSource::HuggingFace { revision, pins, .. } = base.source else {
        panic!("bge-base is a Hub model")
    };
    assert_eq!(revision, "a5beb1e3e68b9ab74eb54cfd186867f64f240e1a");
    assert_eq!(pins.map(|p| p.model_bytes), Some(435_811_539));
}

#[test]
fn an_unpinned_model_is_refused_and_offline_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let unpinned = ModelSpec {
        id: "test/unpinned",
        dims: 4,
        pooling: Pooling::Mean,
        max_tokens: 16,
        normalize: true,
        query_prefix: "",
        source: ModelSource::HuggingFace {
            repo: "test/unpinned",
            revision: "abc123",
            model_path: "onnx/model.onnx",
            tokenizer_path: "tokenizer.json",
            pins: None,
        },
    };
    let err = download_model(&unpinned, dir.path(), Some("http://127.0.0.1:9"), &|_, _, _| {}).unwrap_err();
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
