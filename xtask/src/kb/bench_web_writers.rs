//! `cargo xtask bench web --with-writers` (issue 34, point 4): the release
//! `jarvis serve` under readers and writers at once. While a burst of
//! 1,000 new notes lands in its vault (the watcher indexes them), 20 chat
//! sessions run turns back to back against a stand-in model whose every
//! other answer is a tool round (`search_kb`, a knowledge-base search
//! beside the writes), and a one-shot `jarvis kb search --json` goes
//! through the owner's socket every 100 ms. Reported: chat events lost or
//! out of order (every stream starts with `status`, closes each
//! `tool_start` with its `tool_finish`, ends with exactly one `reply`, and
//! every tool round the stand-in sent reached a client), failed `kb`
//! commands, p50/p95 of each, the burst's wall time to all searchable, and
//! the owner's RSS peak. Figures only; nothing is asserted on time.
//!
//! `--notes N` (default 1000), `--sessions N` (default 20), `--bin PATH`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::bench_web::{fake_ollama, json_call, ms, new_session, pct, read_events, request, Script};
use crate::common::{flag, mib, work_dir};

fn jarvis(bin: &Path, home: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.join("user"))
        .env("JARVIS_HOME", home)
        .stdin(Stdio::null());
    c
}

/// `VmHWM` (peak resident set) and `VmRSS` of a process, in bytes.
fn memory(pid: u32) -> (u64, u64) {
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
    (kb("VmHWM:"), kb("VmRSS:"))
}

struct Owner(std::process::Child);

impl Drop for Owner {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

fn refresh_idle(home: &Path, since: Option<&str>) -> bool {
    let Ok(text) = std::fs::read_to_string(home.join("state/sync_status.json")) else {
        return false;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    let j = &v["jobs"]["vault_refresh"];
    j["running"] == false && j["last_success"].as_str().is_some_and(|t| since.is_none_or(|s| t > s))
}

/// Whether `kb search TOKEN` finds `path` (through the owner).
fn finds(bin: &Path, home: &Path, token: &str, path: &str) -> Result<bool> {
    let out = jarvis(bin, home).args(["kb", "search", token, "--json"]).output()?;
    Ok(out.status.success() && String::from_utf8_lossy(&out.stdout).contains(path))
}

/// One stream's verdict: starts with status, tool rounds closed in order,
/// exactly one reply at the end. Returns (well-formed, tool rounds seen).
fn well_formed(kinds: &[String]) -> (bool, usize) {
    let (mut open, mut paired, mut rounds) = (false, true, 0);
    for k in kinds {
        match k.as_str() {
            "tool_start" if open => paired = false,
            "tool_start" => open = true,
            "tool_finish" if !open => paired = false,
            "tool_finish" => {
                open = false;
                rounds += 1;
            }
            _ => {}
        }
    }
    let ok = kinds.first().map(String::as_str) == Some("status")
        && kinds.last().map(String::as_str) == Some("reply")
        && kinds.iter().filter(|k| *k == "reply").count() == 1
        && paired
        && !open;
    (ok, rounds)
}

#[derive(Default)]
struct Chats {
    turns: usize,
    bad: usize,
    rounds: usize,
    first_ms: Vec<f64>,
    turn_ms: Vec<f64>,
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let notes: usize = flag(args, "--notes")
        .map(str::parse)
        .transpose()
        .context("--notes N")?
        .unwrap_or(1000);
    let sessions: usize = flag(args, "--sessions")
        .map(str::parse)
        .transpose()
        .context("--sessions N")?
        .unwrap_or(20);
    let bin: PathBuf = match flag(args, "--bin") {
        Some(b) => PathBuf::from(b),
        None => crate::owner::jarvis_bin(root)?,
    };
    let home = work_dir(root).join("bench-web-writers");
    let _ = std::fs::remove_dir_all(&home);
    let vault = home.join("vault");
    std::fs::create_dir_all(home.join("user"))?;
    std::fs::create_dir_all(home.join("state"))?;
    std::fs::create_dir_all(&vault)?;
    for i in 0..100 {
        std::fs::write(
            vault.join(format!("seed{i}.md")),
            format!("# Seed {i}\n\nA seed note about the river and topic {i}.\n"),
        )?;
    }
    // Every other model answer is a knowledge-base search (a tool round).
    let fake = fake_ollama(|n| if n % 2 == 0 { Script::Search } else { Script::Tokens(20) })?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[chat]\nprovider = \"ollama:bench\"\nollama_host = \"{}\"\n[vault]\npath = \"{}\"\n",
            fake.url,
            vault.display()
        ),
    )?;
    std::fs::write(home.join("state/first_run.json"), r#"{"state":"finished"}"#)?;
    println!(
        "bench web --with-writers: {} (release), {sessions} chat sessions, a {notes}-note burst, kb search every 100 ms; load average before: {}",
        bin.display(),
        crate::common::load_average()
    );
    let child = jarvis(&bin, &home)
        .args(["serve", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(home.join("serve.stderr"))?)
        .spawn()
        .context("start jarvis serve")?;
    let owner = Owner(child);
    let pid = owner.0.id();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let t = Instant::now();
    while !json_call(addr, "GET", "/health", None).is_ok_and(|v| v["ok"] == true) {
        if t.elapsed() > Duration::from_secs(60) {
            bail!("jarvis serve did not answer /health within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    while !refresh_idle(&home, None) {
        if t.elapsed() > Duration::from_secs(600) {
            bail!("jarvis serve did not finish its start-up refresh");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let ids: Vec<String> = (0..sessions).map(|_| new_session(addr)).collect::<Result<_>>()?;
    let (hwm_before, idle_rss) = memory(pid);
    println!(
        "owner ready in {:.1} s (100-note vault indexed); RSS {:.0} MiB, peak so far {:.0} MiB",
        t.elapsed().as_secs_f64(),
        mib(idle_rss),
        mib(hwm_before)
    );

    let done = Arc::new(AtomicBool::new(false));
    // Memory, sampled.
    let sampled = Arc::new(Mutex::new(0u64));
    let sampler = {
        let (done, sampled) = (done.clone(), sampled.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let (_, rss) = memory(pid);
                let mut p = sampled.lock().unwrap_or_else(|e| e.into_inner());
                *p = (*p).max(rss);
                drop(p);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    // kb search through the socket every 100 ms.
    let searcher = {
        let (done, bin, home) = (done.clone(), bin.clone(), home.clone());
        std::thread::spawn(move || {
            let queries = ["burst note", "river topic", "seed note", "burstword7z"];
            let (mut ms_all, mut failed, mut errors) = (Vec::new(), 0usize, Vec::new());
            let mut next = Instant::now();
            let mut i = 0usize;
            while !done.load(Ordering::SeqCst) {
                let t = Instant::now();
                let out = jarvis(&bin, &home)
                    .args(["kb", "search", queries[i % queries.len()], "--json"])
                    .output();
                let took = t.elapsed();
                let ok = out.as_ref().is_ok_and(|o| {
                    o.status.success() && serde_json::from_slice::<serde_json::Value>(&o.stdout).is_ok()
                });
                if ok {
                    ms_all.push(ms(took));
                } else {
                    failed += 1;
                    if errors.len() < 3 {
                        errors.push(match out {
                            Ok(o) => format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr).trim()),
                            Err(e) => e.to_string(),
                        });
                    }
                }
                i += 1;
                next += Duration::from_millis(100);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            (ms_all, failed, errors)
        })
    };
    // Chat turns back to back in every session.
    let chats = Arc::new(Mutex::new(Chats::default()));
    let talkers: Vec<_> = ids
        .into_iter()
        .map(|id| {
            let (done, chats) = (done.clone(), chats.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let sent = Instant::now();
                    let mut kinds = Vec::new();
                    let mut first = None;
                    let streamed = request(addr, "POST", "/chat", Some(&json!({"session_id": id, "message": "go"})))
                        .and_then(|(status, mut r)| {
                            anyhow::ensure!(status == 200, "status {status}");
                            read_events(&mut r, |v, at| {
                                first.get_or_insert(at);
                                kinds.push(v["type"].as_str().unwrap_or("?").to_string());
                            })
                        });
                    let total = sent.elapsed();
                    let (ok, rounds) = well_formed(&kinds);
                    let mut c = chats.lock().unwrap_or_else(|e| e.into_inner());
                    c.turns += 1;
                    c.rounds += rounds;
                    if streamed.is_err() || !ok {
                        c.bad += 1;
                        eprintln!("lost or out-of-order events: {kinds:?} {:?}", streamed.err());
                    }
                    if let Some(f) = first {
                        c.first_ms.push(ms(f - sent));
                    }
                    c.turn_ms.push(ms(total));
                }
            })
        })
        .collect();

    // The burst.
    let burst_at = Instant::now();
    let since = chrono_now_marker(&home);
    std::fs::create_dir_all(vault.join("burst"))?;
    for i in 0..notes {
        std::fs::write(
            vault.join(format!("burst/b{i:05}.md")),
            format!("# Burst {i}\n\nBurst note {i} about burstword{i}z and the river.\n"),
        )?;
    }
    let written = burst_at.elapsed();
    let last = notes - 1;
    loop {
        if finds(
            &bin,
            &home,
            &format!("burstword{last}z"),
            &format!("burst/b{last:05}.md"),
        )? && refresh_idle(&home, since.as_deref())
        {
            break;
        }
        if burst_at.elapsed() > Duration::from_secs(3600) {
            bail!("the burst was not searchable within an hour");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let indexed = burst_at.elapsed();
    done.store(true, Ordering::SeqCst);
    for t in talkers {
        let _ = t.join();
    }
    let (mut kb_ms, kb_failed, kb_errors) = searcher.join().map_err(|_| anyhow::anyhow!("the searcher panicked"))?;
    let _ = sampler.join();
    let (hwm, _) = memory(pid);
    let sampled = *sampled.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = std::mem::take(&mut *chats.lock().unwrap_or_else(|e| e.into_inner()));
    let tools_sent = fake.tools_sent.load(Ordering::SeqCst);
    let lost_rounds = tools_sent.abs_diff(c.rounds);

    println!(
        "burst: {notes} notes written in {:.1} s, all searchable {:.1} s after the first write",
        written.as_secs_f64(),
        indexed.as_secs_f64()
    );
    println!(
        "chat: {} turns in {sessions} sessions over the burst; lost/reordered event streams: {}, tool rounds sent by the model but not seen by a client: {lost_rounds} ({} sent, {} seen); request → first event p50 {:.0} ms, p95 {:.0} ms; whole turn p50 {:.0} ms, p95 {:.0} ms",
        c.turns,
        c.bad,
        tools_sent,
        c.rounds,
        pct(&mut c.first_ms, 0.5),
        pct(&mut c.first_ms, 0.95),
        pct(&mut c.turn_ms, 0.5),
        pct(&mut c.turn_ms, 0.95)
    );
    println!(
        "kb search through the socket (one-shot process, every 100 ms): {} ok, {kb_failed} failed; p50 {:.0} ms, p95 {:.0} ms",
        kb_ms.len(),
        pct(&mut kb_ms, 0.5),
        pct(&mut kb_ms, 0.95)
    );
    for e in &kb_errors {
        println!("  failed kb search: {e}");
    }
    println!(
        "owner (jarvis serve, pid {pid}) RSS peak: {:.0} MiB over its life (VmHWM; {:.0} MiB before the burst), {:.0} MiB sampled during the load; load average after: {}",
        mib(hwm),
        mib(hwm_before),
        mib(sampled),
        crate::common::load_average()
    );
    drop(owner);
    Ok(())
}

/// The status file's `vault_refresh.last_success` now, so the end of the
/// burst is a refresh that finished after it.
fn chrono_now_marker(home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(home.join("state/sync_status.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["jobs"]["vault_refresh"]["last_success"].as_str().map(str::to_string)
}
