//! `cargo xtask natives` and `cargo xtask dist-check`.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

/// One `[[piece]]` of assets/natives.toml.
#[derive(Debug, Default, Clone)]
pub struct Piece {
    pub name: String,
    pub package: String,
    pub wheel: String,
    pub wheel_sha256: String,
    pub path: String,
    pub sha256: String,
}

/// A deliberately tiny reader for the pin file's flat `key = "value"` lines,
/// shared in spirit with build.rs (which cannot use the toml crate without
/// another build dependency).
pub fn read_pins(file: &Path) -> Result<Vec<Piece>> {
    let text = fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut out: Vec<Piece> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "[[piece]]" {
            out.push(Piece::default());
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            bail!("{}:{}: expected key = \"value\"", file.display(), n + 1)
        };
        let v = v.trim().trim_matches('"').to_string();
        let Some(p) = out.last_mut() else {
            bail!("{}:{}: key outside [[piece]]", file.display(), n + 1)
        };
        match k.trim() {
            "name" => p.name = v,
            "package" => p.package = v,
            "wheel" => p.wheel = v,
            "wheel_sha256" => p.wheel_sha256 = v,
            "path" => p.path = v,
            "sha256" => p.sha256 = v,
            _ => {}
        }
    }
    Ok(out)
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("JARVIS_XTASK_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("jarvis-xtask").join("wheels")
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let force = args.iter().any(|a| a == "--force");
    let pins = read_pins(&root.join("assets/natives.toml"))?;
    let out_dir = std::env::var_os("JARVIS_NATIVES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("assets/natives"));
    fs::create_dir_all(&out_dir)?;
    let cache = cache_dir();
    fs::create_dir_all(&cache)?;
    let stamp_path = out_dir.join("STAMP");
    let want_stamp: String = pins.iter().map(|p| format!("{} {}\n", p.name, p.sha256)).collect();
    if !force
        && fs::read_to_string(&stamp_path).ok().as_deref() == Some(want_stamp.as_str())
        && pins.iter().all(|p| out_dir.join(format!("{}.zst", p.name)).is_file())
    {
        eprintln!("natives: up to date in {}", out_dir.display());
        return Ok(());
    }
    let _ = fs::remove_file(&stamp_path);
    for p in &pins {
        let t = Instant::now();
        let wheel = fetch_wheel(p, &cache)?;
        let bytes = extract(&wheel, &p.path)?;
        let got = sha256_hex(&bytes);
        if got != p.sha256 {
            bail!(
                "{} inside {}: sha256 {got}, pinned {} — refusing to bundle it",
                p.path,
                p.wheel,
                p.sha256
            );
        }
        let compressed = zstd::encode_all(&bytes[..], 9)?;
        let dest = out_dir.join(format!("{}.zst", p.name));
        let tmp = out_dir.join(format!(".{}.zst.tmp", p.name));
        fs::write(&tmp, &compressed)?;
        fs::rename(&tmp, &dest)?;
        eprintln!(
            "natives: {:<18} {:>6.1} MB → {:>5.1} MB zstd, sha256 ok ({:.1}s)",
            p.name,
            bytes.len() as f64 / 1e6,
            compressed.len() as f64 / 1e6,
            t.elapsed().as_secs_f64()
        );
    }
    fs::write(&stamp_path, want_stamp)?;
    eprintln!("natives: ready in {}", out_dir.display());
    Ok(())
}

/// The verified wheel from the cache, downloading it with pip if needed.
fn fetch_wheel(p: &Piece, cache: &Path) -> Result<PathBuf> {
    let path = cache.join(&p.wheel);
    if path.is_file() {
        let bytes = fs::read(&path)?;
        if sha256_hex(&bytes) == p.wheel_sha256 {
            return Ok(path);
        }
        eprintln!("natives: cached {} is damaged, downloading again", p.wheel);
        fs::remove_file(&path)?;
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
        ])
        .args([
            "--platform",
            "manylinux_2_28_x86_64",
            "--platform",
            "manylinux_2_17_x86_64",
        ])
        .args(["--python-version", "3.11", "-d"])
        .arg(cache)
        .arg(&p.package)
        .status()
        .with_context(|| format!("running `{python} -m pip` (install Python 3 with pip)"))?;
    if !status.success() {
        bail!("pip could not download {} from PyPI ({status})", p.package);
    }
    let bytes = fs::read(&path).with_context(|| format!("pip did not produce {}", path.display()))?;
    let got = sha256_hex(&bytes);
    if got != p.wheel_sha256 {
        let _ = fs::remove_file(&path);
        bail!(
            "{}: sha256 {got}, pinned {} — the registry served different bytes",
            p.wheel,
            p.wheel_sha256
        );
    }
    Ok(path)
}

fn extract(wheel: &Path, inner: &str) -> Result<Vec<u8>> {
    let f = fs::File::open(wheel)?;
    let mut zip = zip::ZipArchive::new(f).with_context(|| format!("{} is not a valid wheel", wheel.display()))?;
    let mut entry = zip
        .by_name(inner)
        .with_context(|| format!("{inner} not found in {}", wheel.display()))?;
    let mut out = Vec::with_capacity(entry.size() as usize);
    entry.read_to_end(&mut out)?;
    Ok(out)
}

/// Build the release binary and run it alone, out of reach of the build tree.
pub fn dist_check(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let t = Instant::now();
    let status = Command::new(&cargo)
        .current_dir(root)
        .args(["build", "--release", "-p", "jarvis", "--bin", "jarvis"])
        .status()?;
    if !status.success() {
        bail!("release build failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bin = target.join("release/jarvis");
    let size = fs::metadata(&bin)?.len();
    // Failpoints (JARVIS_FAILPOINT: abort, hang, exhaust memory) exist only
    // in test builds; the shipped binary must not even name the variable.
    if contains(&fs::read(&bin)?, b"JARVIS_FAILPOINT") {
        bail!(
            "{} carries failpoints (JARVIS_FAILPOINT) — they must be compiled only with the `failpoints` feature",
            bin.display()
        );
    }
    eprintln!(
        "dist-check: built {} ({:.1} MB) in {:.0}s",
        bin.display(),
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let scratch = std::env::temp_dir().join(format!("jarvis-dist-check-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    let (alone, home, jhome) = (scratch.join("bin"), scratch.join("home"), scratch.join("jarvis-home"));
    for d in [&alone, &home, &jhome] {
        fs::create_dir_all(d)?;
    }
    let copied = alone.join("jarvis");
    fs::copy(&bin, &copied)?;
    for run in ["cold", "warm"] {
        let t = Instant::now();
        let out = Command::new(&copied)
            .current_dir(&alone)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("JARVIS_HOME", &jhome)
            .args(["runtime", "check"])
            .output()?;
        std::io::stderr().write_all(&out.stdout)?;
        std::io::stderr().write_all(&out.stderr)?;
        if !out.status.success() {
            bail!("`jarvis runtime check` failed when run alone ({run}): {}", out.status);
        }
        eprintln!(
            "dist-check: {run} `jarvis runtime check` passed in {:.2}s",
            t.elapsed().as_secs_f64()
        );
    }
    let _ = fs::remove_dir_all(&scratch);
    Ok(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
