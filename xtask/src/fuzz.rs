//! `cargo xtask fuzz [TARGET…] [--secs N] [--list]`: coverage-guided fuzzing
//! of the parsers that read untrusted input (`tests/fuzz`).
//!
//! The engine is libFuzzer through the `libfuzzer-sys` crate, built on the
//! stable toolchain with the same flags `cargo fuzz --sanitizer none` passes
//! (SanitizerCoverage through `-Cpasses=sancov-module`, which needs no
//! nightly `-Z` flag): cargo-fuzz itself insists on nightly, which this
//! machine cannot fetch, and AFL++ needs its own compiler wrapper. Each run
//! first replays every checked-in crash and seed input (a regression
//! there fails at once), then fuzzes for `--secs` with a 1 s hang limit and
//! a cap on any single allocation, and prints executions and speed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The targets, in the order they run (names of `tests/fuzz/targets/*.rs`).
pub const TARGETS: &[&str] = &[
    "frontmatter",
    "chunker",
    "markdown_chat",
    "markdown_preview",
    "owner_frame",
    "sse_anthropic",
    "sse_openai",
    "ndjson_ollama",
    "digest_score",
    "arxiv_atom",
    "biorxiv_json",
    "pdf_request",
];

/// A single allocation above this fails the run (libFuzzer's
/// `-malloc_limit_mb`): inputs are at most `MAX_LEN` bytes, so a parser that
/// asks for this much is amplifying its input 1000-fold.
pub const MALLOC_LIMIT_MB: u32 = 64;
/// The largest input tried.
pub const MAX_LEN: u32 = 64 * 1024;
/// An input that takes longer than this is a hang.
pub const TIMEOUT_SECS: u32 = 1;

const TRIPLE: &str = "x86_64-unknown-linux-gnu";

const RUSTFLAGS: &str = "-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks";

struct Options {
    targets: Vec<String>,
    secs: u64,
}

fn parse(args: &[String]) -> Result<Option<Options>> {
    let mut targets = Vec::new();
    let mut secs = 60;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => {}
            "--list" => {
                for t in TARGETS {
                    println!("{t}");
                }
                return Ok(None);
            }
            "--secs" => {
                let v = it.next().context("--secs needs a number of seconds")?;
                secs = v
                    .parse()
                    .with_context(|| format!("--secs {v}: not a number of seconds"))?;
            }
            t if TARGETS.contains(&t) => targets.push(t.to_string()),
            other => bail!(
                "unknown fuzz target or option {other:?}; targets: {} (or --secs N, --list)",
                TARGETS.join(", ")
            ),
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| t.to_string()).collect();
    }
    Ok(Some(Options { targets, secs }))
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let Some(opts) = parse(args)? else {
        return Ok(());
    };
    // The jarvis library embeds the native runtime at build time.
    crate::natives::run(root, &[])?;
    let fuzz_dir = root.join("tests/fuzz");
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("fuzz");
    build(&fuzz_dir, &target_dir)?;
    let bins = target_dir.join(TRIPLE).join("release");
    let mut failed = Vec::new();
    let mut summary = Vec::new();
    for t in &opts.targets {
        match fuzz_one(&fuzz_dir, &target_dir, &bins.join(t), t, opts.secs) {
            Ok(line) => summary.push(line),
            Err(e) => {
                eprintln!("fuzz: {t}: {e:#}");
                failed.push(t.clone());
            }
        }
    }
    eprintln!("\nfuzz summary ({} s per target, malloc limit {MALLOC_LIMIT_MB} MB, hang > {TIMEOUT_SECS} s, inputs ≤ {MAX_LEN} B):", opts.secs);
    for line in &summary {
        eprintln!("  {line}");
    }
    if !failed.is_empty() {
        bail!(
            "fuzz targets failed: {} (crash inputs are under {})",
            failed.join(", "),
            target_dir.join("artifacts").display()
        );
    }
    Ok(())
}

fn build(fuzz_dir: &Path, target_dir: &Path) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // The variables this cargo run set for xtask would reach the nested
    // build and make build scripts rerun.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CARGO_PKG_") || k.starts_with("CARGO_MANIFEST_") || k == "CARGO_ENCODED_RUSTFLAGS" {
            cmd.env_remove(k);
        }
    }
    // `--target` keeps the instrumentation flags off build scripts and
    // proc macros (they run on the host and need no coverage).
    let status = cmd
        .current_dir(fuzz_dir)
        .env("RUSTFLAGS", RUSTFLAGS)
        .args(["build", "--release", "--bins", "--target", TRIPLE, "--target-dir"])
        .arg(target_dir)
        .status()
        .context("running cargo build for tests/fuzz")?;
    if !status.success() {
        bail!("building the fuzz targets failed ({status})");
    }
    Ok(())
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn fuzz_one(fuzz_dir: &Path, target_dir: &Path, bin: &Path, target: &str, secs: u64) -> Result<String> {
    let seeds = fuzz_dir.join("corpus").join(target);
    let crashes = fuzz_dir.join("crashes").join(target);
    let work = target_dir.join("corpus").join(target);
    let artifacts = target_dir.join("artifacts").join(target);
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&artifacts)?;
    let limits = [
        format!("-timeout={TIMEOUT_SECS}"),
        format!("-malloc_limit_mb={MALLOC_LIMIT_MB}"),
        "-rss_limit_mb=2048".to_string(),
        format!("-max_len={MAX_LEN}"),
        format!("-artifact_prefix={}/", artifacts.display()),
    ];
    // 1. Every checked-in input once: old crashes must stay fixed.
    let mut replay: Vec<PathBuf> = files_in(&crashes);
    replay.extend(files_in(&seeds));
    if !replay.is_empty() {
        let out = Command::new(bin)
            .args(&limits)
            .args(&replay)
            .output()
            .with_context(|| format!("running {}", bin.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!("a checked-in input fails again ({}):\n{}", out.status, tail(&err, 40));
        }
    }
    if secs == 0 {
        return Ok(format!("{target:<18} replayed {} inputs", replay.len()));
    }
    // 2. Fuzz: new inputs go to the working corpus, the seeds are read only.
    eprintln!("fuzz: {target} for {secs} s");
    let out = Command::new(bin)
        .args(&limits)
        .arg(format!("-max_total_time={secs}"))
        .arg("-print_final_stats=1")
        .arg(&work)
        .arg(&seeds)
        .output()
        .with_context(|| format!("running {}", bin.display()))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("found a failing input ({}):\n{}", out.status, tail(&err, 60));
    }
    let stat = |name: &str| -> u64 {
        err.lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .map(|v| v.trim().trim_start_matches(':').trim().parse().unwrap_or(0))
            })
            .unwrap_or(0)
    };
    let execs = stat("stat::number_of_executed_units");
    let speed = stat("stat::average_exec_per_sec");
    let peak = stat("stat::peak_rss_mb");
    let corpus = files_in(&work).len();
    Ok(format!(
        "{target:<18} {execs:>10} execs  {speed:>7}/s  peak RSS {peak} MB  corpus {corpus} (+{} seeds, {} crash inputs replayed)",
        files_in(&seeds).len(),
        files_in(&crashes).len()
    ))
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_a_file_and_seeds() {
        let root = crate::workspace_root().join("tests/fuzz");
        for t in TARGETS {
            assert!(
                root.join("targets").join(format!("{t}.rs")).is_file(),
                "{t}: no target file"
            );
            assert!(
                !files_in(&root.join("corpus").join(t)).is_empty(),
                "{t}: no seed inputs"
            );
        }
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        for t in TARGETS {
            assert!(
                manifest.contains(&format!("name = \"{t}\"")),
                "{t}: not a [[bin]] in tests/fuzz/Cargo.toml"
            );
        }
    }

    #[test]
    fn options() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let o = parse(&s(&["chunker", "--secs", "5"])).unwrap().unwrap();
        assert_eq!(o.targets, vec!["chunker"]);
        assert_eq!(o.secs, 5);
        assert_eq!(parse(&s(&[])).unwrap().unwrap().targets.len(), TARGETS.len());
        assert!(parse(&s(&["nope"])).is_err());
    }
}
