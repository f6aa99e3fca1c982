//! Crash fault injection for the knowledge base.
//!
//! The parent test re-executes this test binary as a child (`crash_child`)
//! that streams commits — adds, replaces by source, deletes, and
//! multi-document commits (`Kb::prepare_groups` + `Kb::commit_many`, what
//! bulk vault ingest uses: several whole files in one commit, some of them
//! replaced by nothing), and undos of a document's last event (half the
//! documents are papers, whose kept chunks an undo restores) — appending
//! one fsynced line to a log per operation that returned (the op stream
//! and its model are in `kb_crash_ops.rs`). The parent kills the child (SIGKILL) at random instants, or
//! lets a named failpoint abort it at a chosen step, then reopens the KB
//! itself (which runs recovery) and checks the result against its own model
//! of the op stream:
//! - every document is wholly present in exactly one committed version (all
//!   of that version's chunks, nothing else) or wholly absent;
//! - every reported commit is reflected; only the one commit in flight at
//!   the kill may go either way (and a failpoint after the store commit
//!   forces it to have happened) — and a multi-document commit goes either
//!   way for ALL its documents together, never for some of them;
//! - the event log agrees with the store (`Kb::audit`: replaying it gives
//!   every document exactly as stored), for adds, replacements, removals
//!   and undos;
//! - `Kb::agreement()` is ok (no orphan or missing entry, all seqs equal,
//!   and every vector in the exact index's int8 copy is the store's vector
//!   for its id) — after a kill inside that copy's commit too, where the
//!   copy is distrusted at open and rebuilt;
//! - search finds exactly the present documents, through BM25 and dense.
//!
//! Timings are printed, never asserted.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jarvis::cancel::Cancel;
use jarvis::config::Config;
use jarvis::embed::Embedder;
use jarvis::kb::search::SearchRequest;
use jarvis::kb::{Kb, KbSettings, ReplaceBy};
use jarvis::paths::JarvisHome;
use jarvis::store::LookupField;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::kb_crash_ops::*;

const CHILD_DIR_ENV: &str = "JARVIS_CRASH_CHILD_DIR";
/// Set for a child whose every commit is a bulk commit (see `settings`).
const BULK_ENV: &str = "JARVIS_CRASH_BULK";
const RANDOM_KILLS: usize = 52;

fn config(home: &Path) -> Config {
    let user_home = home.join("home");
    let file = home.join("config.toml");
    let env = move |k: &str| (k == "HOME").then(|| user_home.display().to_string());
    Config::from_parts(&JarvisHome::at(home), &file, None, &env).expect("config")
}

fn load_embedder(home: &Path) -> Embedder {
    jarvis::app::kb::load_embedder(&config(home)).expect("load the bundled embedder")
}

fn settings() -> KbSettings {
    let mut store = jarvis::store::StoreOptions::default();
    if std::env::var_os(BULK_ENV).is_some() {
        // Every commit that adds anything takes the bulk path: its records
        // are ingested as tables before the batch that commits them.
        store.bulk_write_bytes = 0;
    }
    KbSettings {
        hybrid: true,
        store,
        // A tiny crossover, so the library crosses it early in the op
        // stream and arroy's background build (and its hand-over) runs
        // under the kills too, beside the exact int8 copy.
        exact_scan_max: 12,
        ..KbSettings::default()
    }
}

/// The child: returns at once unless the parent set `CHILD_DIR_ENV`.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV).map(PathBuf::from) else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    let seed: u64 = var("JARVIS_CRASH_SEED").parse().expect("seed");
    let start: usize = var("JARVIS_CRASH_START").parse().expect("start");
    let mode = var("JARVIS_CRASH_MODE");
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("log"))
        .expect("open log");
    let mut line = |s: &str| {
        log.write_all(format!("{s}\n").as_bytes()).expect("log");
        log.sync_data().expect("fsync log");
    };
    let kb = Kb::open(&dir.join("rag"), load_embedder(&dir.join("home")), None, settings()).expect("open kb");
    line("ready");
    if mode == "reindex" {
        kb.reindex(&|_, _| {}, &Cancel::new()).expect("reindex");
        line("reindexed");
        return;
    }
    let ops = plan(seed);
    for (i, op) in ops.iter().enumerate().skip(start) {
        match *op {
            Op::Put { key, chunks } => {
                let prepared = kb.prepare(documents(i, key, chunks), &Cancel::new()).expect("prepare");
                kb.commit(prepared, Some(&ReplaceBy::Source(source(key))), &jarvis::kb::Actor::Cli)
                    .expect("commit");
            }
            Op::PutMany { keys, chunks } => {
                let groups = keys.iter().zip(chunks).map(|(&k, n)| documents(i, k, n)).collect();
                let prepared = kb.prepare_groups(groups, &Cancel::new()).expect("prepare groups");
                let items = prepared
                    .into_iter()
                    .zip(keys)
                    .map(|(p, k)| (p, Some(ReplaceBy::Source(source(k)))))
                    .collect();
                kb.commit_many(items, &jarvis::kb::Actor::Cli).expect("commit many");
            }
            Op::Delete { key } => {
                let empty = kb.prepare(Vec::new(), &Cancel::new()).expect("prepare");
                kb.commit(empty, Some(&ReplaceBy::Source(source(key))), &jarvis::kb::Actor::Cli)
                    .expect("commit");
            }
            Op::DeleteByMeta { key } => {
                kb.delete_by_metadata("source", &source(key), &jarvis::kb::Actor::Cli)
                    .expect("delete");
            }
            Op::Undo { key } => {
                let mut last = None;
                kb.store()
                    .scan_events_rev(|e| {
                        if e.key == doc_key(key) {
                            last = Some(e.id);
                        }
                        last.is_none()
                    })
                    .expect("events");
                if let Some(id) = last {
                    match kb.undo(Some(id), &jarvis::kb::Actor::Cli) {
                        Ok(_) | Err(jarvis::kb::KbError::UndoRefused { .. }) => {}
                        Err(e) => panic!("undo of event {id}: {e}"),
                    }
                }
            }
        }
        line(&i.to_string());
    }
    line("end");
}

/// What the parent read back from one child's log.
struct ChildLog {
    ready: bool,
    /// Index of the last op whose commit returned.
    last_done: Option<usize>,
}

fn read_log(dir: &Path) -> ChildLog {
    let text = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
    let mut out = ChildLog {
        ready: false,
        last_done: None,
    };
    // Only whole lines count: a kill can land mid-write.
    let whole = match text.rfind('\n') {
        Some(p) => &text[..=p],
        None => "",
    };
    for l in whole.lines() {
        match l {
            "ready" => out.ready = true,
            _ => {
                if let Ok(i) = l.parse() {
                    out.last_done = Some(i);
                }
            }
        }
    }
    out
}

enum Kill {
    /// SIGKILL this long after the child reported ready (None: during
    /// start-up, this long after spawn).
    Random { after_ready: bool, delay: Duration },
    /// Let `JARVIS_FAILPOINT` abort the child.
    Failpoint(&'static str),
}

fn spawn_child(
    dir: &Path,
    seed: u64,
    start: usize,
    mode: &str,
    failpoint: Option<&str>,
    bulk: bool,
) -> std::process::Child {
    let _ = std::fs::remove_file(dir.join("log"));
    let _ = std::fs::remove_file(dir.join("child.stderr"));
    let mut c = Command::new(dir.join("child-exe"));
    c.args(["kb_crash::crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir)
        .env("JARVIS_CRASH_SEED", seed.to_string())
        .env("JARVIS_CRASH_START", start.to_string())
        .env("JARVIS_CRASH_MODE", mode)
        .env("HOME", dir.join("home"))
        .env("JARVIS_HOME", dir.join("home"))
        .env_remove("JARVIS_FAILPOINT")
        .env_remove(BULK_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::options()
                .create(true)
                .append(true)
                .open(dir.join("child.stderr"))
                .expect("child stderr file"),
        );
    if let Some(fp) = failpoint {
        c.env("JARVIS_FAILPOINT", fp);
    }
    if bulk {
        c.env(BULK_ENV, "1");
    }
    c.spawn().expect("spawn child")
}

fn stderr(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("child.stderr")).unwrap_or_default()
}

/// Run one child and end it as `kill` says. Returns its log.
fn run_child(dir: &Path, seed: u64, start: usize, mode: &str, kill: &Kill, bulk: bool) -> ChildLog {
    let failpoint = match kill {
        Kill::Failpoint(fp) => Some(*fp),
        Kill::Random { .. } => None,
    };
    let mut child = spawn_child(dir, seed, start, mode, failpoint, bulk);
    let spawned = Instant::now();
    match kill {
        Kill::Random { after_ready, delay } => {
            if *after_ready {
                while !read_log(dir).ready {
                    assert!(
                        spawned.elapsed() < Duration::from_secs(60),
                        "child never became ready; {}",
                        stderr(dir)
                    );
                    if let Some(status) = child.try_wait().expect("try_wait") {
                        panic!("child exited before ready: {status}; {}", stderr(dir));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            std::thread::sleep(*delay);
            child.kill().expect("SIGKILL the child");
            let status = child.wait().expect("wait");
            // Anything but our SIGKILL (a panic, an early exit) is a failure.
            assert_eq!(
                status.signal(),
                Some(9),
                "the child ended by itself: {status}; {}",
                stderr(dir)
            );
        }
        Kill::Failpoint(fp) => {
            let deadline = Instant::now() + Duration::from_secs(120);
            let status = loop {
                if let Some(s) = child.try_wait().expect("try_wait") {
                    break s;
                }
                assert!(Instant::now() < deadline, "failpoint {fp} never fired");
                std::thread::sleep(Duration::from_millis(10));
            };
            assert_eq!(
                status.signal(),
                Some(libc::SIGABRT),
                "failpoint {fp} should abort the child: {status}; {}",
                stderr(dir)
            );
        }
    }
    read_log(dir)
}

/// What the store holds for document `key`: None, or (version, chunks).
/// Panics on a partial or mixed document.
fn observed(kb: &Kb, key: usize) -> DocState {
    let state = observed_chunks(kb, key);
    // The per-document summary and the per-file map are written with the
    // chunks (a bulk commit ingests them first, and an unfinished one has
    // them rebuilt): they must say what the chunks say.
    let summary = kb
        .store()
        .docs()
        .expect("docs")
        .into_iter()
        .find(|(k, _)| *k == doc_key(key))
        .map(|(_, e)| e.chunks as usize);
    assert_eq!(
        summary,
        state.map(|(_, n)| n),
        "doc {key}: the per-document summary disagrees with the chunks"
    );
    let file = kb.store().file(&file_path(key)).expect("files map");
    assert_eq!(
        file.and_then(|e| e.content_hash),
        state.map(|(v, _)| version_token(v)),
        "doc {key}: the per-file map disagrees with the chunks"
    );
    state
}

fn observed_chunks(kb: &Kb, key: usize) -> DocState {
    let ids = kb.store().ids_by(LookupField::Source, &source(key)).expect("ids_by");
    if ids.is_empty() {
        return None;
    }
    let mut versions = BTreeMap::<u64, usize>::new();
    for id in &ids {
        let rec = kb.store().get(*id).expect("get").expect("indexed id has a record");
        let v = rec.meta.get("x_version").and_then(|v| v.as_u64()).expect("version");
        *versions.entry(v).or_default() += 1;
    }
    assert_eq!(versions.len(), 1, "doc {key} mixes versions: {versions:?}");
    let (v, n) = versions.into_iter().next().expect("one version");
    Some((v as usize, n))
}

/// Reopen after a crash and check everything. `in_flight` is the op that
/// may or may not have committed; `must_apply` says a failpoint after the
/// store commit guarantees it did. Returns whether it was applied.
fn check(
    kb: &Kb,
    model: &mut [DocState],
    prev: &mut [DocState],
    in_flight: Option<(usize, Op)>,
    must_apply: bool,
) -> bool {
    let (mut after_model, mut after_prev) = (model.to_vec(), prev.to_vec());
    if let Some((i, op)) = in_flight {
        apply(&mut after_model, &mut after_prev, i, op);
    }
    // Of the documents the in-flight op would change: how many did change.
    let (mut changed, mut landed) = (0usize, 0usize);
    for (key, expect) in model.iter_mut().enumerate() {
        let got = observed(kb, key);
        let after = after_model[key];
        if after != *expect {
            changed += 1;
            if got == after {
                landed += 1;
            }
        }
        if must_apply {
            assert_eq!(
                got, after,
                "doc {key}: the commit the failpoint interrupted must survive"
            );
        } else {
            assert!(
                got == *expect || got == after,
                "doc {key}: found {got:?}, expected {expect:?} (or {after:?} if the in-flight commit landed)"
            );
        }
        // A chunk count of one committed version: the doc's whole version.
        if let Some((v, n)) = got {
            let want = match (in_flight, *expect) {
                // An undo brings back an earlier committed version whole.
                (Some((_, Op::Undo { .. })), _) if got == after => n,
                (Some((i, op)), _) if i == v && op.chunks_for(key).is_some() => op.chunks_for(key).unwrap_or(0),
                (_, Some((ev, en))) if ev == v => en,
                _ => panic!("doc {key} has version {v}, which was never its committed version"),
            };
            assert_eq!(n, want, "doc {key} v{v} is partial");
        }
        *expect = got;
    }
    assert!(
        landed == 0 || landed == changed,
        "the in-flight commit {in_flight:?} landed for {landed} of its {changed} documents: a multi-document commit must be all-or-nothing"
    );
    let applied = landed > 0;
    if applied {
        prev.copy_from_slice(&after_prev);
    }
    // The event log agrees with the store: replaying it gives every
    // document exactly as it is.
    let audit = kb.audit().expect("audit");
    assert!(audit.ok(), "the event log and the store disagree: {audit:?}");
    let totals = kb.store().doc_totals().expect("doc totals");
    let present: Vec<usize> = model.iter().flatten().map(|(_, n)| *n).collect();
    assert_eq!(
        (totals.documents as usize, totals.chunks as usize),
        (present.len(), present.iter().sum()),
        "the document totals disagree with the chunks"
    );

    let agreement = kb.agreement().expect("agreement");
    assert!(agreement.ok(), "store and indexes disagree: {agreement:?}");

    // Search finds exactly the present documents.
    for (key, state) in model.iter().enumerate() {
        let mut req = SearchRequest::new(doc_token(key), 20);
        req.rerank = false;
        let hits = kb.search(&req).expect("search");
        let bm25: Vec<_> = hits.iter().filter(|h| h.bm25_rank.is_some()).collect();
        match state {
            None => {
                assert!(bm25.is_empty(), "absent doc {key} found by BM25");
                assert!(
                    hits.iter().all(|h| h.record.meta_str("source") != Some(&source(key))),
                    "absent doc {key} returned by search"
                );
            }
            Some((v, n)) => {
                assert_eq!(bm25.len(), *n, "doc {key}: BM25 should find its {n} chunks");
                assert!(bm25.iter().all(|h| h.record.meta_str("source") == Some(&source(key))
                    && h.record.meta.get("x_version").and_then(|x| x.as_u64()) == Some(*v as u64)));
                // Dense: the exact text of chunk 0 is its own nearest neighbour.
                let text = documents(*v, key, *n)[0].text.clone();
                let mut dense = SearchRequest::new(text.clone(), 5);
                dense.rerank = false;
                dense.hybrid = Some(false);
                let top = kb.search(&dense).expect("dense search");
                assert_eq!(
                    top.first().map(|h| h.record.text.as_str()),
                    Some(text.as_str()),
                    "doc {key}: dense search misses its chunk"
                );
            }
        }
    }
    applied
}

/// The seqs each derived index records on disk, read without recovery:
/// store, BM25, exact (int8), arroy (`None` when it has no trees).
fn index_seqs(rag: &Path, dims: usize) -> (u64, Option<u64>, Option<u64>, Option<u64>) {
    let store = jarvis::store::Store::open(rag).expect("store");
    let gen = store.generation().expect("gen");
    let seq = store.seq().expect("seq");
    drop(store);
    let dir = rag.join("index").join(format!("g{gen}"));
    let bm25 = jarvis::index::bm25::Bm25Index::open_or_create(&dir.join("bm25")).expect("bm25");
    let trees = dir.join("vectors");
    let vectors = trees.exists().then(|| {
        jarvis::index::vector::VectorIndex::open_or_create(&trees, dims)
            .expect("vectors")
            .committed_seq()
            .expect("vector seq")
    });
    let exact = jarvis::index::flat::FlatIndex::open_or_create(&dir.join("flat"), dims).expect("exact index");
    (
        seq,
        bm25.committed_seq().expect("bm25 seq"),
        exact.committed_seq(),
        vectors.flatten(),
    )
}

/// Opens the store, waiting briefly while its lock is held. Other tests in
/// this process spawn children all the time, and a child forked while this
/// test still had the lock file open holds that open file description — and
/// so the `flock` — until it execs (close-on-exec), a window of a few
/// milliseconds in a large test binary. Seen in CI as "Locked … holder: this
/// test process" right after the previous `Kb` was dropped.
fn open_store_when_free(rag: &std::path::Path) -> jarvis::store::Store {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match jarvis::store::Store::open(rag) {
            Ok(s) => return s,
            Err(jarvis::store::StoreError::Locked(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("open the store: {e}"),
        }
    }
}

/// Opens the knowledge base, retrying while the lock is held for the same
/// reason as [`open_store_when_free`]: waiting for a free store and then
/// opening leaves a gap in which a sibling test can fork again. The embedder
/// goes into the `Kb`; a failed open loses it, so it is loaded again.
fn open_kb_when_free(rag: &std::path::Path, home: &std::path::Path, embedder: &mut Option<Embedder>) -> Kb {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let e = embedder.take().unwrap_or_else(|| load_embedder(home));
        match Kb::open(rag, e, None, settings()) {
            Ok(kb) => return kb,
            Err(jarvis::kb::KbError::Store(jarvis::store::StoreError::Locked(_))) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("open the knowledge base: {e}"),
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn kb_survives_kills_at_random_points() {
    if std::env::var_os(CHILD_DIR_ENV).is_some() {
        return;
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("home/home")).expect("home");
    // Children run a private copy of this binary: with a shared target
    // directory a concurrent build can replace (or remove) the original
    // while the test runs. /proc/self/exe is the running image even then.
    std::fs::copy("/proc/self/exe", dir.join("child-exe")).expect("copy the test binary");
    let rag = dir.join("rag");
    let seed: u64 = std::env::var("JARVIS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("kb_crash: seed {seed} (JARVIS_CRASH_SEED={seed} reproduces the op stream)");
    let ops = plan(seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);

    // Unpacks the bundled runtime into the temp home once, for every child.
    let mut embedder = Some(load_embedder(&dir.join("home")));
    let dims = embedder.as_ref().map(Embedder::dims).expect("embedder");
    let mut model: Vec<DocState> = vec![None; KEYS];
    let mut prev: Vec<DocState> = vec![None; KEYS];
    let mut next = 0usize;

    // The schedule: random SIGKILLs, with the failpoints and one reindex
    // abort spread through it.
    let mut schedule: Vec<(&str, Kill)> = (0..RANDOM_KILLS)
        .map(|_| {
            let during_startup = rng.random_bool(0.08);
            let delay = if during_startup {
                Duration::from_millis(rng.random_range(0..900))
            } else {
                Duration::from_millis(rng.random_range(0..700))
            };
            (
                "stream",
                Kill::Random {
                    after_ready: !during_startup,
                    delay,
                },
            )
        })
        .collect();
    for (at, kill) in [
        (3, Kill::Failpoint("after_store_commit")),
        (10, Kill::Failpoint("after_bm25_commit")),
        (20, Kill::Failpoint("after_store_commit")),
        (30, Kill::Failpoint("after_bm25_commit")),
        (40, Kill::Failpoint("after_store_commit")),
        (48, Kill::Failpoint("after_bm25_commit")),
        // The int8 copy: written but its meta.json not (distrusted and
        // rebuilt at open), and committed ahead of arroy.
        (12, Kill::Failpoint("flat_data_written")),
        (33, Kill::Failpoint("flat_data_written")),
        (22, Kill::Failpoint("after_flat_commit")),
        (42, Kill::Failpoint("after_flat_commit")),
        // A bulk commit's records and map entries ingested, its batch not
        // committed: the records must stay invisible and be removed on
        // open, and the maps rebuilt.
        (8, Kill::Failpoint("store_ingested")),
        (28, Kill::Failpoint("store_ingested")),
        // Files written, meta.json not: the next writer must not trip over them.
        (15, Kill::Failpoint("bm25_prepared")),
        (35, Kill::Failpoint("bm25_prepared")),
        (45, Kill::Failpoint("bm25_prepared")),
    ] {
        schedule.insert(at, ("stream", kill));
    }
    schedule.insert(25, ("reindex", Kill::Failpoint("reindex_before_switch")));

    let (mut kills, mut sigkills, mut failpoints, mut in_flight_landed, mut committed) = (0, 0, 0, 0, 0);
    for (mode, kill) in &schedule {
        let gen_before = open_store_when_free(&rag).generation().expect("generation");
        // Every other child, and every abort between a bulk commit's
        // ingestion and its batch, writes through the bulk path.
        let bulk = kills % 2 == 1 || matches!(kill, Kill::Failpoint("store_ingested"));
        let log = run_child(dir, seed, next, mode, kill, bulk);
        kills += 1;
        match kill {
            Kill::Random { .. } => sigkills += 1,
            Kill::Failpoint(_) => failpoints += 1,
        }
        let abandoned = rag.join("index").join(format!("g{}", gen_before + 1));
        if *mode == "reindex" {
            assert!(
                abandoned.exists(),
                "the reindex should have built the next generation before its abort"
            );
        }
        if let Kill::Failpoint(
            fp @ ("after_store_commit" | "after_bm25_commit" | "flat_data_written" | "after_flat_commit"),
        ) = kill
        {
            // Prove the replay path runs: the indexes are behind the store.
            // (A never-committed index records no seq: that is seq 0; an
            // int8 copy killed inside its commit has none and is rebuilt.)
            // arroy's trees are built in the background and may have
            // caught up with the store on their own before the hand-over,
            // so they are only checked not to be ahead of it.
            let (seq, b, f, v) = index_seqs(&rag, dims);
            let b = b.unwrap_or(0);
            match *fp {
                "after_store_commit" => assert_eq!(
                    (b, f),
                    (seq - 1, Some(seq - 1)),
                    "{fp}: every index should lag the store"
                ),
                "after_bm25_commit" => assert_eq!((b, f), (seq, Some(seq - 1)), "{fp}: vectors should lag"),
                "flat_data_written" => assert_eq!((b, f), (seq, None), "{fp}: the copy is distrusted"),
                _ => assert_eq!((b, f), (seq, Some(seq)), "{fp}: the int8 copy has committed"),
            }
            assert!(
                v.is_none_or(|v| v <= seq),
                "{fp}: trees at {v:?}, ahead of the store at {seq}"
            );
        }
        // Reported commits, then the one that may have been in flight.
        let done_upto = log.last_done.map_or(next, |l| l + 1);
        for (i, op) in ops.iter().enumerate().take(done_upto).skip(next) {
            apply(&mut model, &mut prev, i, *op);
        }
        committed += done_upto - next;
        let in_flight = (*mode == "stream").then(|| (done_upto, ops[done_upto]));
        let must_apply = matches!(
            kill,
            Kill::Failpoint("after_store_commit" | "after_bm25_commit" | "flat_data_written" | "after_flat_commit")
        );

        let kb = open_kb_when_free(&rag, &dir.join("home"), &mut embedder);
        // A reindex killed before its switch leaves the old generation in
        // charge (and its leftovers are removed on open).
        assert_eq!(kb.store().generation().expect("gen"), gen_before);
        assert!(
            !abandoned.exists(),
            "the abandoned generation's indexes are removed on open"
        );
        let landed = check(&kb, &mut model, &mut prev, in_flight, must_apply);
        if let Kill::Failpoint("store_ingested") = kill {
            assert!(!landed, "a bulk commit aborted before its batch must not land");
        }
        if landed {
            in_flight_landed += 1;
        }
        if *mode == "stream" {
            next = done_upto + 1;
        }
        embedder = Some(kb.into_embedder().expect("embedder"));
    }

    // Finally a reindex that completes, on what the crashes left behind.
    let kb = open_kb_when_free(&rag, &dir.join("home"), &mut embedder);
    let gen = kb.store().generation().expect("gen");
    kb.reindex(&|_, _| {}, &Cancel::new()).expect("reindex");
    assert_eq!(kb.store().generation().expect("gen"), gen + 1);
    check(&kb, &mut model, &mut prev, None, false);
    drop(kb);

    let present = model.iter().filter(|s| s.is_some()).count();
    let undos = ops[..next].iter().filter(|op| matches!(op, Op::Undo { .. })).count();
    println!(
        "kb_crash: {kills} kills ({sigkills} SIGKILL at random points, {failpoints} failpoint aborts), \
         {committed} reported commits ({undos} undos), in-flight commit landed {in_flight_landed} times, \
         {present}/{KEYS} docs present at the end — every check passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
