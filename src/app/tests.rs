use std::sync::Arc;

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn provider_cache_is_per_spec_and_reload_applies_edits() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    std::fs::write(home.config_file(), "[chat]\nollama_model = \"first\"\n").unwrap();
    let app = App::open(home.clone(), no_env).unwrap();
    assert_eq!(app.config().str("chat.ollama_model"), "first");

    let a = app.provider(&ModelSpec::parse("ollama:m1")).unwrap();
    let b = app.provider(&ModelSpec::parse("ollama:m1")).unwrap();
    let c = app.provider(&ModelSpec::parse("ollama:m2")).unwrap();
    assert!(Arc::ptr_eq(&a, &b), "one provider per spec");
    assert!(!Arc::ptr_eq(&a, &c), "another model is another provider");

    std::fs::write(home.config_file(), "[chat]\nollama_model = \"second\"\n").unwrap();
    assert_eq!(app.config().str("chat.ollama_model"), "first", "no reload yet");
    app.reload_config().unwrap();
    assert_eq!(app.config().str("chat.ollama_model"), "second");
    let d = app.provider(&ModelSpec::parse("ollama:m1")).unwrap();
    assert!(!Arc::ptr_eq(&a, &d), "reload drops cached providers");
}

#[test]
fn a_broken_edit_keeps_the_running_config() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    let app = App::open(home.clone(), no_env).unwrap();
    std::fs::write(home.config_file(), "[chat\n").unwrap();
    let err = app.reload_config().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::User);
    assert_eq!(
        app.config().str("chat.provider"),
        App::open(JarvisHome::at(tempfile::tempdir().unwrap().path()), no_env)
            .unwrap()
            .config()
            .str("chat.provider")
    );
    assert!(app.kb_if_open().is_none(), "nothing opened the knowledge base");
}

#[test]
fn app_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<App>();
}

#[test]
fn a_manual_digest_and_the_scheduled_one_share_one_lock() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    std::fs::write(home.config_file(), "[digest]\nenabled = true\n").unwrap();
    let app = App::open(home, no_env).unwrap();
    let opts = crate::digest::DigestOptions::default;
    let cancel = Cancel::new();

    // The scheduled job (or its catch-up) holds the lock: `run-digest`
    // refuses at once, as a conflict, instead of running a second digest.
    let held = app.digest_lock().try_lock_owned().unwrap();
    let err = app.run_digest(opts(), &|_| {}, &cancel).unwrap_err();
    assert!(matches!(err, digest::DigestOpError::Busy), "{err}");
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("already running"), "{err}");
    drop(held);
    // Free again: the run gets past the lock (and stops at the next check,
    // here: nothing to fetch is configured).
    let err = app.run_digest(opts(), &|_| {}, &cancel).unwrap_err();
    assert!(!matches!(err, digest::DigestOpError::Busy), "{err}");

    // A manual run holds it: the scheduled digest job skips, recorded as
    // "another digest run was in progress".
    let ctx = jobs::job_ctx(&app);
    let _manual = app.digest_lock().try_lock_owned().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(crate::jobs::digest::run(&ctx, Cancel::new())).unwrap();
    assert!(r.skipped, "{r:?}");
    assert!(r.summary.contains("another digest run"), "{}", r.summary);
}

/// `rag.rerank_model` is checked when the knowledge base opens, but the
/// cross-encoder is not loaded until a search re-ranks.
#[test]
fn a_configured_reranker_is_checked_at_open_and_loaded_later() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-cross-encoder");
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    let set = |dir: &std::path::Path| {
        std::fs::write(
            home.config_file(),
            format!("[rag]\nrerank_model = {:?}\n", dir.display().to_string()),
        )
        .unwrap();
        App::open(home.clone(), no_env).unwrap().config()
    };
    let Err(err) = crate::app::kb::open_kb(&set(&t.path().join("nowhere"))) else {
        panic!("a missing re-ranker directory must fail the open");
    };
    assert_eq!(err.kind(), ErrorKind::User);
    assert!(err.to_string().contains("rag.rerank_model"), "{err}");
    let kb = crate::app::kb::open_kb(&set(&fixture)).unwrap();
    assert!(!kb.reranker_loaded(), "opening loads no re-ranker");
    assert!(!kb.embedder_loaded(), "nor the embedding model");
}
