//! A killed `jarvis sync` loses nothing — the short run (3 kills of the
//! debug binary) that keeps the path exercised in CI; `cargo xtask crash
//! sync` runs the same campaign with 30 kills or more on the release
//! binary. The campaign and its checks are in `sync_crash_core.rs`.

use std::time::Duration;

use crate::support::sync_crash_core::{run, Plan};

#[test]
fn a_killed_sync_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed: u64 = std::env::var("JARVIS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("sync_crash: seed {seed} (JARVIS_CRASH_SEED={seed} repeats the schedule)");
    let plan = Plan {
        bin: env!("CARGO_BIN_EXE_jarvis").into(),
        dir: dir.path().to_path_buf(),
        kills: 3,
        seed,
        notes: 12,
        max_run: Duration::from_secs(6),
        ready_within: Duration::from_secs(300),
    };
    let report = run(&plan, &|line| println!("sync_crash: {line}")).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    println!("sync_crash: {report:?}");
    assert_eq!(report.kills, 3);
    assert!(
        report.ops.values().sum::<usize>() > 0,
        "nothing was changed while it ran"
    );
}
