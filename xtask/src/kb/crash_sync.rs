//! `cargo xtask crash sync`: the `jarvis sync` crash campaign (issue 34,
//! point 2) on the release binary — ≥ 30 seeded `kill -9`s while the vault,
//! the inbox and the chat change under it, each followed by a restart and
//! the full set of checks (see `tests/integration/support/sync_crash_core.rs`, which
//! this binary includes, and the integration test that runs 3 kills).
//! Prints what the owner was doing at each kill (the kill points covered),
//! the changes made, and restart → ready figures; fails on the first check
//! that does not hold.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::common::{flag, percentiles, work_dir};
use crate::sync_crash_core::{run as campaign, Plan};

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let num = |name: &str, default: u64| -> Result<u64> {
        flag(args, name)
            .map(str::parse)
            .transpose()
            .with_context(|| format!("{name} N"))
            .map(|v| v.unwrap_or(default))
    };
    let kills = num("--kills", 30)? as usize;
    let notes = num("--notes", 200)? as usize;
    let max_run = Duration::from_secs(num("--max-run-secs", 8)?);
    let seed = match flag(args, "--seed") {
        Some(s) => s.parse().context("--seed N")?,
        None => rand::random(),
    };
    let bin: PathBuf = match flag(args, "--bin") {
        Some(b) => PathBuf::from(b),
        None => crate::owner::jarvis_bin(root)?,
    };
    let dir = work_dir(root).join("crash-sync");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!(
        "crash sync: {kills} kills of {} (seed {seed}: --seed {seed} repeats the schedule), a {notes}-note vault, runs up to {} s; load average before: {}",
        bin.display(),
        max_run.as_secs(),
        crate::common::load_average()
    );
    let plan = Plan {
        bin,
        dir: dir.clone(),
        kills,
        seed,
        notes,
        max_run,
        ready_within: Duration::from_secs(600),
    };
    let report = campaign(&plan, &|line| println!("  {line}")).map_err(|e| anyhow::anyhow!("seed {seed}: {e}"))?;
    println!("kill points covered (what the owner was doing at the kill):");
    for (point, n) in &report.points {
        println!("  {n:>3} × {point}");
    }
    let ops: Vec<String> = report.ops.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!(
        "changes made while it ran: {}; {} `jarvis ask` turns started",
        ops.join(", "),
        report.asks
    );
    let mut ready = report.ready_ms.clone();
    let (p50, p95) = percentiles(&mut ready);
    println!(
        "restart → start-up refresh and inbox scan done: p50 {:.1} s, p95 {:.1} s",
        p50 / 1000.0,
        p95 / 1000.0
    );
    println!(
        "at the end: {} notes, {} PDFs, {} sessions; temporary files left by kills: {}; load average after: {}",
        report.notes,
        report.pdfs,
        report.sessions,
        report.leftovers,
        crate::common::load_average()
    );
    println!("every check passed after each of the {} kills", report.kills);
    Ok(())
}
