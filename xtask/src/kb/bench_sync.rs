//! `cargo xtask bench sync`: a running `jarvis sync` on a generated vault —
//! save → searchable latency (p50/p95 over N edits, through the file
//! watcher and `kb search` delegated to the owner), the cost of a burst of
//! 1,000 changed notes (wall time to the last one searchable, and how many
//! refreshes it took), and the owner's idle CPU and RSS over a quiet window
//! (`--idle-secs`, default 360: five minutes and the minute in which the
//! default 300 s model keep-alive lets go of the embedding model).
//! Figures only; nothing is asserted.
//!
//! `--bin PATH` uses that jarvis binary instead of building the release one
//! (say which in the notes: a debug build is much slower at embedding).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::common::{flag, mib, percentiles, work_dir};

fn jarvis(bin: &Path, home: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.join("user"))
        .env("JARVIS_HOME", home)
        .stdin(Stdio::null());
    c
}

fn searchable(bin: &Path, home: &Path, token: &str, path: &str) -> Result<bool> {
    let out = jarvis(bin, home).args(["kb", "search", token, "--json"]).output()?;
    if !out.status.success() {
        bail!("kb search failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).contains(path))
}

fn wait_searchable(bin: &Path, home: &Path, token: &str, path: &str, bound: Duration) -> Result<Duration> {
    let t = Instant::now();
    while !searchable(bin, home, token, path)? {
        if t.elapsed() > bound {
            bail!("{path} was not searchable within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(t.elapsed())
}

fn status(bin: &Path, home: &Path) -> serde_json::Value {
    jarvis(bin, home)
        .args(["kb", "sync-status", "--json"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// CPU seconds and memory of one process, from `/proc`.
/// Where the owner logs (`$JARVIS_HOME/logs/`).
const LOG_FILE: &str = "sync.log";

struct Usage {
    /// User + system CPU seconds.
    cpu: f64,
    /// Resident set, and its anonymous and file-backed parts, in bytes.
    rss: u64,
    anon: u64,
    file: u64,
}

fn usage(pid: u32) -> Usage {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields after the comm: state is [0], utime [11], stime [12].
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let hz = 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    Usage {
        cpu: (ticks(11) + ticks(12)) / hz,
        rss: kb("VmRSS:"),
        anon: kb("RssAnon:"),
        file: kb("RssFile:"),
    }
}

struct Owner(Child);

impl Drop for Owner {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let edits: usize = flag(args, "--edits")
        .map(str::parse)
        .transpose()
        .context("--edits N")?
        .unwrap_or(50);
    let burst: usize = flag(args, "--burst")
        .map(str::parse)
        .transpose()
        .context("--burst N")?
        .unwrap_or(1000);
    let idle_secs: u64 = flag(args, "--idle-secs")
        .map(str::parse)
        .transpose()
        .context("--idle-secs N")?
        .unwrap_or(360);
    let bin: PathBuf = match flag(args, "--bin") {
        Some(b) => PathBuf::from(b),
        None => crate::owner::jarvis_bin(root)?,
    };
    let home = work_dir(root).join("bench-sync");
    let _ = std::fs::remove_dir_all(&home);
    let vault = home.join("vault");
    std::fs::create_dir_all(home.join("user"))?;
    std::fs::create_dir_all(&vault)?;
    for i in 0..200 {
        std::fs::write(
            vault.join(format!("seed{i}.md")),
            format!("# Seed {i}\n\nA seed note about topic {i}.\n"),
        )?;
    }
    std::fs::write(
        home.join("config.toml"),
        format!("[vault]\npath = \"{}\"\n", vault.display()),
    )?;
    println!(
        "jarvis: {} (load average before: {})",
        bin.display(),
        crate::common::load_average()
    );
    let t = Instant::now();
    let child = jarvis(&bin, &home)
        .arg("sync")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("start jarvis sync")?;
    let owner = Owner(child);
    let pid = owner.0.id();
    loop {
        let st = status(&bin, &home);
        let ready = st["jobs"]
            .as_array()
            .and_then(|j| j.iter().find(|j| j["id"] == "vault_refresh"))
            .is_some_and(|j| j["last_success"].is_string() && j["running"] == false);
        if ready {
            break;
        }
        if t.elapsed() > Duration::from_secs(600) {
            bail!("jarvis sync did not finish its start-up refresh");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "start-up (200-note vault indexed at start): {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let mut ms = Vec::with_capacity(edits);
    for i in 0..edits {
        let token = format!("benchtoken{i}x");
        let rel = format!("edit{}.md", i % 10);
        std::fs::write(vault.join(&rel), format!("# Edit {i}\n\nThis edit mentions {token}.\n"))?;
        ms.push(wait_searchable(&bin, &home, &token, &rel, Duration::from_secs(120))?.as_secs_f64() * 1000.0);
    }
    let (p50, p95) = percentiles(&mut ms);
    println!("save → searchable over {edits} edits: p50 {p50:.0} ms, p95 {p95:.0} ms");
    // The watcher's last run: scoped to the changed paths ("N changed
    // path(s): …") rather than a sweep of the vault, and how long it took.
    std::thread::sleep(Duration::from_millis(500));
    let st = status(&bin, &home);
    let job = st["jobs"]
        .as_array()
        .and_then(|j| j.iter().find(|j| j["id"] == "vault_refresh"))
        .cloned()
        .unwrap_or_default();
    println!(
        "last watcher refresh: {} in {} ms",
        job["last_summary"].as_str().unwrap_or("?"),
        job["duration_ms"]
    );

    let before = status(&bin, &home)["watcher"]["batches"].as_u64().unwrap_or(0);
    let t = Instant::now();
    std::fs::create_dir_all(vault.join("burst"))?;
    for i in 0..burst {
        std::fs::write(
            vault.join(format!("burst/b{i:05}.md")),
            format!("# Burst {i}\n\nBurst note {i} about burstword{i}z.\n"),
        )?;
    }
    let written = t.elapsed();
    let last = burst - 1;
    wait_searchable(
        &bin,
        &home,
        &format!("burstword{last}z"),
        &format!("burst/b{last:05}.md"),
        Duration::from_secs(1800),
    )?;
    let batches = status(&bin, &home)["watcher"]["batches"].as_u64().unwrap_or(0) - before;
    println!(
        "burst of {burst} new notes: written in {:.1} s, all searchable {:.1} s after the first write, {batches} refresh(es)",
        written.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );

    // Let the last refresh settle, then measure a quiet window.
    std::thread::sleep(Duration::from_secs(5));
    let before = usage(pid);
    let t = Instant::now();
    // A sample a minute, so the model's release shows in the figures.
    let mut samples = Vec::new();
    while t.elapsed() < Duration::from_secs(idle_secs) {
        let left = Duration::from_secs(idle_secs).saturating_sub(t.elapsed());
        std::thread::sleep(left.min(Duration::from_secs(60)));
        let u = usage(pid);
        samples.push(format!(
            "{:.0} s: {:.0} MiB ({:.0} anon)",
            t.elapsed().as_secs_f64(),
            mib(u.rss),
            mib(u.anon)
        ));
    }
    let after = usage(pid);
    let wall = t.elapsed().as_secs_f64();
    let cpu = after.cpu - before.cpu;
    println!(
        "idle over {wall:.0} s: CPU {cpu:.2} s = {:.3}% of one core (load average after: {})",
        100.0 * cpu / wall,
        crate::common::load_average()
    );
    // The owner lets go of the embedding model after
    // `runtime.model_keep_alive_secs` (default 300 s) unused, so a window
    // longer than that ends with the model released.
    let released = std::fs::read_to_string(home.join("logs").join(LOG_FILE))
        .map(|l| l.contains("unloaded"))
        .unwrap_or(false);
    println!(
        "  RSS at the start of the window {:.0} MiB ({:.0} anonymous); at the end {:.0} MiB = {:.0} anonymous + {:.0} file-backed; model released by then: {}",
        mib(before.rss),
        mib(before.anon),
        mib(after.rss),
        mib(after.anon),
        mib(after.file),
        if released { "yes" } else { "no" }
    );
    println!("  RSS over the window: {}", samples.join(" · "));
    drop(owner);
    Ok(())
}
