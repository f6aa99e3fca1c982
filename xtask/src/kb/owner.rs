//! `cargo xtask bench owner`: `jarvis kb search … --json` as a whole
//! process, direct vs delegated to a running `jarvis sync`, on the same
//! ~10k-chunk index (p50/p95 of N runs each), and the owner's idle RSS with
//! what dominates it. Figures only; nothing is asserted.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::common::{flag, mib, percentiles, work_dir};

const WORDS: [&str; 12] = [
    "protein",
    "folding",
    "retrieval",
    "kernel",
    "gradient",
    "antibody",
    "cluster",
    "latency",
    "sample",
    "review",
    "budget",
    "river",
];

/// The release `jarvis` binary, built if needed.
pub(crate) fn jarvis_bin(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CARGO_PKG_") || k.starts_with("CARGO_MANIFEST_") || k.starts_with("CARGO_BIN") {
            cmd.env_remove(k);
        }
    }
    let ok = cmd
        .current_dir(root)
        .args(["build", "--release", "-p", "jarvis", "--bin", "jarvis"])
        .status()
        .context("cargo build --release --bin jarvis")?
        .success();
    if !ok {
        bail!("building the release jarvis binary failed");
    }
    // Where cargo put it: CARGO_TARGET_DIR when set (relative to the
    // workspace root, as cargo reads it), else the workspace's target/.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |d| root.join(d));
    Ok(target.join("release/jarvis"))
}

fn jarvis(bin: &Path, home: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.join("user"))
        .env("JARVIS_HOME", home)
        .stdin(Stdio::null());
    c
}

fn rss_report(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0.0, |kb| mib(kb * 1024))
    };
    // The largest file-backed mappings: which native library or index file.
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by_file: std::collections::BTreeMap<String, u64> = Default::default();
    let mut current = String::from("[anon]");
    for line in smaps.lines() {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some("Rss:"), Some(kb)) => *by_file.entry(current.clone()).or_default() += kb.parse::<u64>().unwrap_or(0),
            (Some(first), _) if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) => {
                current = line.split_whitespace().nth(5).map_or("[anon]".to_string(), |p| {
                    Path::new(p)
                        .file_name()
                        .map_or(p.to_string(), |n| n.to_string_lossy().into_owned())
                });
            }
            _ => {}
        }
    }
    let mut top: Vec<_> = by_file.into_iter().collect();
    top.sort_by_key(|e| std::cmp::Reverse(e.1));
    let top: Vec<String> = top
        .iter()
        .take(6)
        .map(|(n, kb)| format!("{n} {:.0} MiB", mib(kb * 1024)))
        .collect();
    format!(
        "VmRSS {:.0} MiB (anonymous {:.0}, file-backed {:.0}, shmem {:.0}); largest: {}",
        field("VmRSS:"),
        field("RssAnon:"),
        field("RssFile:"),
        field("RssShmem:"),
        top.join(", ")
    )
}

fn time_searches(bin: &Path, home: &Path, runs: usize) -> Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(runs);
    for i in 0..runs {
        let q = format!("{} {}", WORDS[i % WORDS.len()], WORDS[(i * 5 + 1) % WORDS.len()]);
        let t = Instant::now();
        let out = jarvis(bin, home).args(["kb", "search", &q, "--json"]).output()?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if !out.status.success() {
            bail!("kb search failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok(ms)
}

/// The keep-alive the bench configures, so the released figure comes soon.
const KEEP_ALIVE_SECS: u64 = 10;

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let notes: usize = flag(args, "--notes")
        .map(str::parse)
        .transpose()
        .context("--notes N")?
        .unwrap_or(10_000);
    let runs: usize = flag(args, "--runs")
        .map(str::parse)
        .transpose()
        .context("--runs N")?
        .unwrap_or(30);
    let bin = jarvis_bin(root)?;
    let home = work_dir(root).join(format!("bench-owner-{notes}"));
    let vault = home.join("vault");
    std::fs::create_dir_all(home.join("user"))?;
    std::fs::write(
        home.join("config.toml"),
        // A short keep-alive so the released figure is taken within the run
        // (the shipped default is 300 s).
        format!(
            "[vault]\npath = \"{}\"\n[runtime]\nmodel_keep_alive_secs = {KEEP_ALIVE_SECS}\n",
            vault.display()
        ),
    )?;
    if !home.join("rag").exists() {
        for i in 0..notes {
            let body: Vec<&str> = (0..30).map(|k| WORDS[(i * 7 + k * 3) % WORDS.len()]).collect();
            let p = vault.join(format!("{:03}", i % 100)).join(format!("n{i}.md"));
            std::fs::create_dir_all(p.parent().context("parent")?)?;
            std::fs::write(&p, format!("# Note {i}\n\n{}.\n", body.join(" ")))?;
        }
        let t = Instant::now();
        let ok = jarvis(&bin, &home)
            .args(["kb", "index-vault"])
            .stdout(Stdio::null())
            .status()?
            .success();
        if !ok {
            bail!("indexing the generated vault failed");
        }
        println!(
            "indexed {notes} generated notes in {:.0} s (cached for the next run)",
            t.elapsed().as_secs_f64()
        );
    }
    let stats = jarvis(&bin, &home).args(["kb", "stats", "--json"]).output()?;
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).context("kb stats --json")?;
    println!(
        "owner bench: {} chunks, {runs} runs each of `jarvis kb search \"…\" --json` as a whole process (load average before: {})",
        stats["chunks"],
        crate::common::load_average()
    );

    time_searches(&bin, &home, 1)?; // warm the page cache and the unpacked runtime
    let mut direct = time_searches(&bin, &home, runs)?;
    let (d50, d95) = percentiles(&mut direct);
    println!("direct:    p50 {d50:.0} ms, p95 {d95:.0} ms (each run loads the model and opens the store)");

    let mut owner = jarvis(&bin, &home)
        .arg("sync")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let start = Instant::now();
    while !home.join("state/owner.sock").exists() || time_searches(&bin, &home, 1).is_err() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = owner.kill();
            bail!("jarvis sync did not become ready");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut delegated = time_searches(&bin, &home, runs)?;
    let (o50, o95) = percentiles(&mut delegated);
    println!(
        "delegated: p50 {o50:.0} ms, p95 {o95:.0} ms (goal p50 ≤ 30 ms); direct/delegated p50 ratio {:.1}×",
        d50 / o50.max(0.001)
    );
    std::thread::sleep(Duration::from_secs(2));
    println!(
        "owner idle, model loaded, after {} searches: {}",
        runs + 1,
        rss_report(owner.id())
    );
    // The model is unloaded once unused for the keep-alive; the log says when.
    let log = home.join("logs/sync.log");
    let waited = Instant::now();
    // Only lines this owner wrote count: the log outlives earlier runs.
    let seen = std::fs::read_to_string(&log).map_or(0, |t| t.len());
    let released = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text
            .get(seen..)
            .is_some_and(|t| t.contains("embedding model unloaded while idle"))
        {
            break true;
        }
        if waited.elapsed() > Duration::from_secs(KEEP_ALIVE_SECS + 90) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    if released {
        println!(
            "owner idle, model released after {KEEP_ALIVE_SECS} s unused (goal ≤ 150 MB): {}",
            rss_report(owner.id())
        );
        let again = time_searches(&bin, &home, 1)?;
        println!("first search after the release (reloads the model): {:.0} ms", again[0]);
    } else {
        println!("the owner never released the model (see {})", log.display());
    }
    let _ = Command::new("kill").args(["-TERM", &owner.id().to_string()]).status();
    let _ = owner.wait();
    Ok(())
}
