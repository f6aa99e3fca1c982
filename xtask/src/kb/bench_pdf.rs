//! `cargo xtask bench pdf [FILES…]`: pages per second for PDF → Markdown,
//! without and with annotation extraction, on real PDFs — the committed
//! fixtures plus every PDF Debian installed under /usr/share/doc (or the
//! files given). Build in release for meaningful numbers:
//! `cargo run --release -p xtask -- bench pdf`. Figures only, no assertions.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use jarvis::pdf::{extract_annotations, pdf_to_markdown, PdfEngine};

/// Fixtures that are meant to fail (encrypted, no pages, no text layer).
const SKIP_FIXTURES: &[&str] = &["encrypted.pdf", "empty.pdf", "scanned.pdf"];
/// Cap on Debian PDFs so a machine with many docs installed still finishes
/// (one-page `examples/` letters are left out: they say little about papers).
const MAX_SYSTEM_PDFS: usize = 60;

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let files = if args.is_empty() {
        default_files(root)
    } else {
        args.iter().map(PathBuf::from).collect()
    };
    anyhow::ensure!(!files.is_empty(), "no PDFs to benchmark");
    let home_dir = tempfile::tempdir().context("temp JARVIS_HOME")?;
    let home = jarvis::paths::JarvisHome::at(home_dir.path());
    let lib = jarvis::runtime::ensure_bundled(&home, jarvis::runtime::PDFIUM_LIB).context("unpack PDFium")?;
    let engine = PdfEngine::load(&lib.path)?;

    println!(
        "{:<58} {:>6} {:>10} {:>12} {:>6}",
        "file", "pages", "convert/s", "+annots/s", "annots"
    );
    let (mut pages, mut t_convert, mut t_both, mut failed) = (0usize, Duration::ZERO, Duration::ZERO, 0usize);
    for path in &files {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).with_context(|| format!("read {name}"))?;
        let start = Instant::now();
        let converted = match pdf_to_markdown(engine, &name, &bytes) {
            Ok(c) => c,
            Err(e) => {
                println!("{:<58} failed: {e}", short(&name));
                failed += 1;
                continue;
            }
        };
        let convert = start.elapsed();
        let start = Instant::now();
        let annots = extract_annotations(engine, &name, &bytes).map(|a| a.len()).unwrap_or(0);
        let both = convert + start.elapsed();
        let n = converted.page_count;
        pages += n;
        t_convert += convert;
        t_both += both;
        println!(
            "{:<58} {:>6} {:>10.1} {:>12.1} {:>6}",
            short(&name),
            n,
            n as f64 / convert.as_secs_f64(),
            n as f64 / both.as_secs_f64(),
            annots
        );
    }
    println!(
        "\n{} files ({} failed), {} pages: conversion {:.1} pages/s, conversion + annotations {:.1} pages/s (goal ≥ 20)",
        files.len(),
        failed,
        pages,
        pages as f64 / t_convert.as_secs_f64(),
        pages as f64 / t_both.as_secs_f64()
    );
    Ok(())
}

fn short(name: &str) -> String {
    let n = name.chars().count();
    if n <= 58 {
        name.to_string()
    } else {
        format!("…{}", name.chars().skip(n - 57).collect::<String>())
    }
}

fn default_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let fixtures = root.join("tests/fixtures/pdf");
    if let Ok(rd) = std::fs::read_dir(&fixtures) {
        let mut f: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pdf"))
            .filter(|p| !p.file_name().is_some_and(|n| SKIP_FIXTURES.iter().any(|s| n == *s)))
            .collect();
        f.sort();
        files.extend(f);
    }
    let mut system = Vec::new();
    walk(Path::new("/usr/share/doc"), &mut system);
    system.sort();
    files.extend(system.into_iter().take(MAX_SYSTEM_PDFS));
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "pdf") && !p.to_string_lossy().contains("/examples/") {
            out.push(p);
        }
    }
}
