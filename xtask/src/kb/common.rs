//! What the benchmark and the evaluation share: a private Jarvis home under
//! `target/`, the bundled embedder, and small measuring helpers.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use jarvis::config::Config;
use jarvis::embed::Embedder;
use jarvis::paths::JarvisHome;

pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// `target/xtask-kb/` in the workspace: caches and scratch knowledge bases.
pub fn work_dir(root: &Path) -> PathBuf {
    root.join("target").join("xtask-kb")
}

/// A config whose JARVIS_HOME (and HOME) is under `target/`, never the
/// user's: the bundled runtime unpacks there once and is reused.
pub fn config(root: &Path) -> Result<Config> {
    let home = work_dir(root).join("home");
    std::fs::create_dir_all(home.join("home")).context("create the scratch home")?;
    let user_home = home.join("home");
    let env = move |k: &str| (k == "HOME").then(|| user_home.display().to_string());
    Config::from_parts(&JarvisHome::at(&home), &home.join("config.toml"), None, &env).context("build the config")
}

pub fn load_embedder(cfg: &Config) -> Result<Embedder> {
    jarvis::app::kb::load_embedder(cfg).context("load the bundled embedding model")
}

/// Disk blocks actually used under `dir` (LMDB files are sparse).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    for e in entries.flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() => total += disk_usage(&e.path()),
            Ok(m) => total += m.blocks() * 512,
            Err(_) => {}
        }
    }
    total
}

/// Peak resident set size of this process so far (VmHWM), in bytes.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// (p50, p95) of durations in milliseconds.
pub fn percentiles(ms: &mut [f64]) -> (f64, f64) {
    if ms.is_empty() {
        return (0.0, 0.0);
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.95))
}

/// `--name value` from an argument list.
pub fn flag<'a>(args: &'a [&'a str], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == name)
        .and_then(|i| args.get(i + 1))
        .copied()
}

/// `../shared/data/NAME` beside the checkout (a worktree sits one level
/// deeper, under `wt/`, so its grandparent is tried too).
pub fn shared_data(root: &Path, name: &str) -> PathBuf {
    let near = root.join("../shared/data").join(name);
    if near.exists() {
        return near;
    }
    let far = root.join("../../shared/data").join(name);
    if far.exists() {
        far
    } else {
        near
    }
}

/// The 1-, 5- and 15-minute load averages, printed beside benchmark figures
/// so a reader can tell how quiet the machine was ("?" when unreadable).
pub fn load_average() -> String {
    match std::fs::read_to_string("/proc/loadavg") {
        Ok(t) => t.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        Err(_) => "?".into(),
    }
}

/// Brings a cached knowledge base's vector trees to the shipped tree rule
/// with an empty commit (arroy adds or drops whole trees; the vectors are
/// untouched), so an evaluation reusing a cache built under an older rule
/// measures today's index. Must run before the knowledge base is opened.
pub fn retree(rag: &Path, dims: usize) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(rag.join("index")) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let dir = e.path().join("vectors");
        if !dir.is_dir() {
            continue;
        }
        let mut index = jarvis::index::vector::VectorIndex::open_or_create(&dir, dims)?;
        let Some(seq) = index.committed_seq()? else { continue };
        let before = index.n_trees()?;
        index.commit(seq)?;
        let after = index.n_trees()?;
        if before != after {
            println!("(cached vector index {}: {before} → {after} trees)", dir.display());
        }
    }
    Ok(())
}
