//! `cargo xtask bench pdf --quality`: how well PDF → Markdown reads, over a
//! fixed set of real PDFs from Debian documentation packages (installed on
//! first use) plus the committed fixtures. Per file and in total it prints:
//!
//! - words: share of PDFium's own plain-text words (3+ letters, bag of
//!   words, case folded) that the Markdown still has. A word PDFium itself
//!   marks as broken by a line-end hyphen (U+0002) counts whole. Plain text
//!   keeps running headers, page numbers and the hyphen-split halves PDFium
//!   did not mark, so ~0.96 is the practical ceiling, not a defect;
//! - head%: share of non-empty Markdown lines that are `#` headings (a
//!   paragraph is one Markdown line, so mending paragraphs raises it);
//!   the summary also gives the share of all the file's lines, blank
//!   lines included (a scorer that counts `lines()` of the file sees that);
//!   head/src: heading lines per text line of the PDF (the layout's lines),
//!   which does not depend on how paragraphs were joined;
//! - para/p: paragraphs per page;
//! - mid/p: mid-sentence paragraph breaks per page — a paragraph (or list
//!   ending without terminal punctuation followed by a paragraph that
//!   starts in lower case (list items are not paragraphs: a list of
//!   lower-case items without full stops is not a break);
//! - pages/s: conversion plus annotation extraction, in process;
//! - outline P/R: for a PDF with an outline (bookmarks, as hyperref makes
//!   them), the share of headings that are outline entries and the share
//!   of entries that are headings (see `pdf_outline`).
//!
//! Then the worst five files by each measure. Figures only, no assertions;
//! the machine may be shared, so pages/s is noisy.
//!
//! `--out DIR` writes each file's Markdown as `DIR/<key>.md` (the key is
//! the path under /usr/share/doc, or `fixtures/…`, with `/` as `_`).
//! `--score-markdown DIR` scores Markdown another converter made instead
//! of converting: `DIR/<key>.md` for each PDF, and optionally
//! `DIR/<key>.secs` (that converter's seconds for the file) for pages/s.
//! The measures are the same: PDFium's plain text for the words, and our
//! layout's text lines for head/src, whichever Markdown is scored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use jarvis::pdf::{extract_annotations, outline, pdf_to_markdown, plain_text, PdfEngine};

use crate::pdf_outline::{self, OutlineScore};

/// The Debian packages the set comes from (all LaTeX/TeX-made manuals,
/// papers, journal templates and samples; some a few decades old).
const PACKAGES: &[&str] = &[
    "texlive-publishers-doc",
    "pari-doc",
    "glpk-doc",
    "nauty-doc",
    "r-doc-pdf",
    "gnuplot-doc",
];

/// The fixed set, from the packages above: journal and conference samples
/// (one and two columns, ACM, APS/AIP revtex, Elsevier, IEEE, LNCS, MNRAS,
/// AAS, …), some pre-2004 class documentation, and long TeX/Texinfo
/// manuals. A missing file is reported, not fatal.
const FILES: &[&str] = &[
    "/usr/share/doc/texlive-doc/latex/aastex/sample631.pdf",
    "/usr/share/doc/texlive-doc/latex/acmart/samples/sample-sigconf.pdf",
    "/usr/share/doc/texlive-doc/latex/acmart/samples/sample-acmsmall.pdf",
    "/usr/share/doc/texlive-doc/latex/acmart/samples/sample-acmtog.pdf",
    "/usr/share/doc/texlive-doc/latex/acmart/samples/sample-sigplan.pdf",
    "/usr/share/doc/texlive-doc/latex/afparticle/afpsample.pdf",
    "/usr/share/doc/texlive-doc/latex/aiaa/template_advanced.pdf",
    "/usr/share/doc/texlive-doc/latex/aiaa/pre2004/aiaa.pdf",
    "/usr/share/doc/texlive-doc/latex/aomart/aomsample.pdf",
    "/usr/share/doc/texlive-doc/latex/apa7/samples/longsample.pdf",
    "/usr/share/doc/texlive-doc/latex/asmeconf/asmeconf-template.pdf",
    "/usr/share/doc/texlive-doc/latex/asmejour/asmejour-template.pdf",
    "/usr/share/doc/texlive-doc/latex/cmpj/template.pdf",
    "/usr/share/doc/texlive-doc/latex/confproc/example/papers/p_001.pdf",
    "/usr/share/doc/texlive-doc/latex/confproc/example/papers/p_009.pdf",
    "/usr/share/doc/texlive-doc/latex/dccpaper/dccpaper.pdf",
    "/usr/share/doc/texlive-doc/latex/ejpecp/sample.pdf",
    "/usr/share/doc/texlive-doc/latex/elsarticle/elstest-5p.pdf",
    "/usr/share/doc/texlive-doc/latex/elsarticle/elstest-1p.pdf",
    "/usr/share/doc/texlive-doc/latex/els-cas-templates/doc/elsdoc-cas.pdf",
    "/usr/share/doc/texlive-doc/latex/ijmart/ijmsample.pdf",
    "/usr/share/doc/texlive-doc/latex/jmlr/pmlr-sample.pdf",
    "/usr/share/doc/texlive-doc/latex/llncsconf/example/example_llncs_nocrop.pdf",
    "/usr/share/doc/texlive-doc/latex/nostarch/nssample.pdf",
    "/usr/share/doc/texlive-doc/latex/nwejm/examples/article-in-english.pdf",
    "/usr/share/doc/texlive-doc/latex/oup-authoring-template/oup-authoring-template.pdf",
    "/usr/share/doc/texlive-doc/latex/philosophersimprint/sample.pdf",
    "/usr/share/doc/texlive-doc/latex/pracjourn/pjsample.pdf",
    "/usr/share/doc/texlive-doc/latex/quantumarticle/quantum-template.pdf",
    "/usr/share/doc/texlive-doc/latex/quantumarticle/quantumarticle.pdf",
    "/usr/share/doc/texlive-doc/latex/resphilosophica/rpsample.pdf",
    "/usr/share/doc/texlive-doc/latex/revtex/sample/aps/apssamp.pdf",
    "/usr/share/doc/texlive-doc/latex/revtex/sample/aip/aipsamp.pdf",
    "/usr/share/doc/texlive-doc/latex/revtex4-1/sample/aps/apssamp.pdf",
    "/usr/share/doc/texlive-doc/latex/sageep/sample.pdf",
    "/usr/share/doc/texlive-doc/latex/spie/article.pdf",
    "/usr/share/doc/texlive-doc/latex/tlc-article/doc/tlc-article.pdf",
    "/usr/share/doc/texlive-doc/latex/univie-ling/univie-ling-paper.pdf",
    "/usr/share/doc/texlive-doc/latex/hagenberg-thesis/examples/HgbArticle/main.pdf",
    "/usr/share/doc/texlive-doc/latex/ieeetran/testflow_doc.pdf",
    "/usr/share/doc/texlive-doc/latex/ieeeconf/IEEEconf.pdf",
    "/usr/share/doc/texlive-doc/latex/ieeepes/ieeepes_doc.pdf",
    "/usr/share/doc/texlive-doc/latex/mnras/mnras_guide.pdf",
    "/usr/share/doc/texlive-doc/latex/jpsj/injpsj2.pdf",
    "/usr/share/doc/texlive-doc/latex/ptptex/manptp.pdf",
    "/usr/share/pari/doc/tutorial.pdf",
    "/usr/share/pari/doc/develop.pdf",
    "/usr/share/pari/doc/parallel.pdf",
    "/usr/share/doc/glpk-doc/graphs.pdf",
    "/usr/share/doc/glpk-doc/cnfsat.pdf",
    "/usr/share/doc/nauty/nug28.pdf",
    "/usr/share/doc/r-doc-pdf/manual/R-intro.pdf",
    "/usr/share/doc/r-doc-pdf/manual/R-data.pdf",
    "/usr/share/doc/gnuplot/gnuplot.pdf",
];

/// Fixtures converted too (the rest are meant to fail).
const FIXTURES: &[&str] = &[
    "paper.pdf",
    "paper_annotated.pdf",
    "annotated.pdf",
    "figures.pdf",
    "structure.pdf",
    "oldtex.pdf",
];

struct Score {
    name: String,
    pages: usize,
    words: f64,
    heading_share: f64,
    /// Heading lines over every line of the file, blank ones included.
    heading_share_all: f64,
    heading_per_src: f64,
    paras_per_page: f64,
    mid_per_page: f64,
    /// Unknown when scoring given Markdown without a `.secs` file.
    pages_per_s: Option<f64>,
    mid_breaks: usize,
    paragraphs: usize,
    heading_lines: usize,
    lines: usize,
    hit: usize,
    total: usize,
    time: Option<Duration>,
    /// Headings against the PDF's outline, when it has one.
    outline: Option<OutlineScore>,
}

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let explicit: Vec<PathBuf> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            !(a.starts_with("--") || *i > 0 && matches!(args[i - 1].as_str(), "--out" | "--score-markdown" | "--dump"))
        })
        .map(|(_, a)| a)
        .map(PathBuf::from)
        .collect();
    // `--scanned`: the scanned-paper set (real papers drawn as pictures
    // and read back by OCR).
    if args.iter().any(|a| a == "--scanned") {
        let files = if explicit.is_empty() {
            crate::pdf_scanned::default_files(root)?
        } else {
            explicit
        };
        return crate::pdf_scanned::run(root, &files);
    }
    // `--papers`: the set of real papers (R vignettes) instead of the
    // manuals and templates; `--all`: both.
    let papers = args.iter().any(|a| a == "--papers");
    let all = args.iter().any(|a| a == "--all");
    let files = if explicit.is_empty() {
        let mut f: Vec<PathBuf> = Vec::new();
        if !papers || all {
            install_if_missing()?;
            f.extend(FIXTURES.iter().map(|n| root.join("tests/fixtures/pdf").join(n)));
            f.extend(FILES.iter().map(PathBuf::from));
        }
        if papers || all {
            f.extend(crate::pdf_papers::files(root)?);
        }
        f
    } else {
        explicit
    };
    // `--readability`: the "reads as words" check on these pages and on
    // the same pages made junk.
    if args.iter().any(|a| a == "--readability") {
        let dump = args
            .iter()
            .position(|a| a == "--dump")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from);
        return crate::pdf_readability::run(&files, dump);
    }
    let verbose = args.iter().any(|a| a == "--show-worst");
    // `--missing`: the words of the plain text the Markdown lost most.
    let missing_words = args.iter().any(|a| a == "--missing");
    // `--out DIR`: also write each file's Markdown there, to read what the
    // figures are about.
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    if let Some(d) = &out_dir {
        std::fs::create_dir_all(d).with_context(|| format!("create {}", d.display()))?;
    }
    // `--score-markdown DIR`: score the Markdown in DIR instead of ours.
    let given_dir = args
        .iter()
        .position(|a| a == "--score-markdown")
        .map(|i| args.get(i + 1).map(PathBuf::from))
        .map(|d| d.context("--score-markdown needs a directory"))
        .transpose()?;
    if let Some(d) = &given_dir {
        anyhow::ensure!(
            d.is_dir(),
            "--score-markdown {}: not a directory (it should hold <key>.md per PDF)",
            d.display()
        );
        anyhow::ensure!(out_dir.is_none(), "--out and --score-markdown do not go together");
        println!("scoring the Markdown in {} (not converting)", d.display());
    }
    let home_dir = tempfile::tempdir().context("temp JARVIS_HOME")?;
    let home = jarvis::paths::JarvisHome::at(home_dir.path());
    let lib = jarvis::runtime::ensure_bundled(&home, jarvis::runtime::PDFIUM_LIB).context("unpack PDFium")?;
    let engine = PdfEngine::load(&lib.path)?;

    println!(
        "{:<44} {:>5} {:>6} {:>6} {:>8} {:>7} {:>6} {:>8} {:>10}",
        "file", "pages", "words", "head%", "head/src", "para/p", "mid/p", "pages/s", "outline P/R"
    );
    let mut scores = Vec::new();
    let (mut failed, mut missing) = (0usize, 0usize);
    for path in &files {
        let name = path.display().to_string();
        let Ok(bytes) = std::fs::read(path) else {
            println!("{:<44} missing", short(&name));
            missing += 1;
            continue;
        };
        let start = Instant::now();
        let converted = match pdf_to_markdown(engine, &name, &bytes) {
            Ok(c) => c,
            Err(e) => {
                println!("{:<44} failed: {e}", short(&name));
                failed += 1;
                continue;
            }
        };
        let _ = extract_annotations(engine, &name, &bytes);
        let mut time = Some(start.elapsed());
        let key = md_key(root, path);
        if let Some(d) = &out_dir {
            std::fs::write(d.join(format!("{key}.md")), &converted.markdown)?;
        }
        let plain = plain_text(engine, &name, &bytes)?.join("\n");
        if let Some(d) = &out_dir {
            std::fs::write(d.join(format!("{key}.txt")), &plain)?;
            // The layout's lines in reading order, page by page.
            let pages: Vec<String> = converted
                .page_texts
                .iter()
                .enumerate()
                .map(|(i, t)| format!("--- page {}\n{t}", i + 1))
                .collect();
            std::fs::write(d.join(format!("{key}.lines")), pages.join("\n"))?;
        }
        let mut markdown = converted.markdown;
        if let Some(d) = &given_dir {
            let md = d.join(format!("{key}.md"));
            let Ok(given) = std::fs::read_to_string(&md) else {
                println!("{:<44} no {}", short(&name), md.display());
                missing += 1;
                continue;
            };
            markdown = given;
            time = std::fs::read_to_string(d.join(format!("{key}.secs")))
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
                .filter(|t| t.is_finite() && *t > 0.0)
                .map(Duration::from_secs_f64);
        }
        let mut s = score(&name, &markdown, &plain, converted.page_count, time);
        let src_lines: usize = converted.page_texts.iter().map(|t| t.lines().count()).sum();
        s.heading_per_src = s.heading_lines as f64 / src_lines.max(1) as f64;
        let titles: Vec<String> = outline(engine, &name, &bytes)?.into_iter().map(|e| e.title).collect();
        s.outline = pdf_outline::score(&markdown, &titles);
        println!(
            "{:<44} {:>5} {:>6.3} {:>6.1} {:>8.1} {:>7.2} {:>6.2} {:>8} {:>10}",
            short(&name),
            s.pages,
            s.words,
            100.0 * s.heading_share,
            100.0 * s.heading_per_src,
            s.paras_per_page,
            s.mid_per_page,
            s.pages_per_s.map_or("-".into(), |p| format!("{p:.1}")),
            s.outline
                .map_or("-".into(), |o| format!("{:.2}/{:.2}", o.precision(), o.recall()))
        );
        if missing_words {
            let (want, got) = (bag(&plain), bag(&markdown));
            let mut lost: Vec<(usize, &String)> = want
                .iter()
                .filter_map(|(w, n)| {
                    n.checked_sub(got.get(w).copied().unwrap_or(0))
                        .filter(|d| *d > 0)
                        .map(|d| (d, w))
                })
                .collect();
            lost.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
            let shown: Vec<String> = lost.iter().take(12).map(|(d, w)| format!("{w}×{d}")).collect();
            println!("      missing {} of {}: {}", s.total - s.hit, s.total, shown.join(" "));
        }
        if verbose {
            for (a, b) in mid_sentence_examples(&markdown).into_iter().take(3) {
                println!("      mid: …{a} ¶ {b}…");
            }
        }
        scores.push(s);
    }
    anyhow::ensure!(!scores.is_empty(), "no PDF converted");

    let pages: usize = scores.iter().map(|s| s.pages).sum();
    // Speed over the files whose time is known (all, unless scoring given
    // Markdown without `.secs` files).
    let timed: Vec<&Score> = scores.iter().filter(|s| s.time.is_some()).collect();
    let timed_pages: usize = timed.iter().map(|s| s.pages).sum();
    let time: Duration = timed.iter().filter_map(|s| s.time).sum();
    let hit: usize = scores.iter().map(|s| s.hit).sum();
    let total: usize = scores.iter().map(|s| s.total).sum();
    let lines: usize = scores.iter().map(|s| s.lines).sum();
    let heads: usize = scores.iter().map(|s| s.heading_lines).sum();
    let paras: usize = scores.iter().map(|s| s.paragraphs).sum();
    let mids: usize = scores.iter().map(|s| s.mid_breaks).sum();
    println!(
        "\n{} files ({} failed, {} missing), {} pages",
        files.len(),
        failed,
        missing,
        pages
    );
    println!(
        "words recovered: total {:.3}, median {:.3}, worst {:.3}, files below 0.90: {}",
        hit as f64 / total.max(1) as f64,
        median(scores.iter().map(|s| s.words)),
        scores.iter().map(|s| s.words).fold(f64::MAX, f64::min),
        scores.iter().filter(|s| s.words < 0.90).count()
    );
    println!(
        "heading lines: total {:.1}%, median {:.1}%, worst {:.1}%, files above 10%: {}",
        100.0 * heads as f64 / lines.max(1) as f64,
        100.0 * median(scores.iter().map(|s| s.heading_share)),
        100.0 * scores.iter().map(|s| s.heading_share).fold(0.0, f64::max),
        scores.iter().filter(|s| s.heading_share > 0.10).count()
    );
    println!(
        "heading lines among all lines of the file (blank ones included): median {:.1}%, worst {:.1}%, files above 10%: {}",
        100.0 * median(scores.iter().map(|s| s.heading_share_all)),
        100.0 * scores.iter().map(|s| s.heading_share_all).fold(0.0, f64::max),
        scores.iter().filter(|s| s.heading_share_all > 0.10).count()
    );
    println!(
        "heading lines per PDF text line: median {:.1}%, worst {:.1}%, files above 10%: {}",
        100.0 * median(scores.iter().map(|s| s.heading_per_src)),
        100.0 * scores.iter().map(|s| s.heading_per_src).fold(0.0, f64::max),
        scores.iter().filter(|s| s.heading_per_src > 0.10).count()
    );
    println!(
        "paragraphs per page: {:.2} (median {:.2}); mid-sentence breaks per page: {:.2} (median {:.2})",
        paras as f64 / pages.max(1) as f64,
        median(scores.iter().map(|s| s.paras_per_page)),
        mids as f64 / pages.max(1) as f64,
        median(scores.iter().map(|s| s.mid_per_page)),
    );
    let outlined: Vec<OutlineScore> = scores.iter().filter_map(|s| s.outline).collect();
    if !outlined.is_empty() {
        let sum = |f: fn(&OutlineScore) -> usize| outlined.iter().map(f).sum::<usize>();
        println!(
            "headings vs the PDF's own outline ({} files with ≥ {} entries): precision median {:.3}, pooled {:.3}, worst {:.3}; recall median {:.3}, pooled {:.3}",
            outlined.len(),
            pdf_outline::MIN_ENTRIES,
            median(outlined.iter().map(|o| o.precision())),
            sum(|o| o.true_headings) as f64 / sum(|o| o.headings).max(1) as f64,
            outlined.iter().map(|o| o.precision()).fold(1.0, f64::min),
            median(outlined.iter().map(|o| o.recall())),
            sum(|o| o.found_entries) as f64 / sum(|o| o.entries).max(1) as f64,
        );
    }
    if given_dir.is_some() {
        println!(
            "speed: {:.1} pages/s over the {} files with a .secs time ({} pages; that converter's own timing)",
            timed_pages as f64 / time.as_secs_f64().max(1e-9),
            timed.len(),
            timed_pages
        );
    } else {
        println!(
            "speed: {:.1} pages/s (conversion + annotations, in process; shared machine, noisy)",
            timed_pages as f64 / time.as_secs_f64().max(1e-9)
        );
    }

    worst(
        &scores,
        "words recovered (lowest)",
        |s| -s.words,
        |s| format!("{:.3}", s.words),
    );
    worst(
        &scores,
        "heading lines (highest)",
        |s| s.heading_share,
        |s| format!("{:.1}%", 100.0 * s.heading_share),
    );
    worst(
        &scores,
        "heading precision against the outline (lowest; files with one)",
        |s| s.outline.map_or(f64::NEG_INFINITY, |o| -o.precision()),
        |s| {
            s.outline.map_or("-".into(), |o| {
                format!("{:.2} ({} of {})", o.precision(), o.true_headings, o.headings)
            })
        },
    );
    worst(
        &scores,
        "paragraphs per page (highest)",
        |s| s.paras_per_page,
        |s| format!("{:.2}", s.paras_per_page),
    );
    worst(
        &scores,
        "mid-sentence breaks per page (highest)",
        |s| s.mid_per_page,
        |s| format!("{:.2}", s.mid_per_page),
    );
    worst(
        &scores,
        "pages/s (lowest)",
        |s| s.pages_per_s.map_or(f64::NEG_INFINITY, |p| -p),
        |s| s.pages_per_s.map_or("-".into(), |p| format!("{p:.1}")),
    );
    Ok(())
}

fn worst(scores: &[Score], what: &str, key: impl Fn(&Score) -> f64, show: impl Fn(&Score) -> String) {
    let mut v: Vec<&Score> = scores.iter().collect();
    v.sort_by(|a, b| key(b).total_cmp(&key(a)));
    println!("\nworst five by {what}:");
    for s in v.into_iter().take(5) {
        println!("  {:>8}  {}", show(s), short(&s.name));
    }
}

fn median(it: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = it.collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Words of 3+ letters, lower-cased. PDFium's plain text marks a hyphen
/// that breaks a word at a line end with U+0002 (soft hyphens likewise):
/// the word is whole on both sides of the mark, so "Digi\u{2}tal" counts as
/// "digital", the word a reader sees, not as "digi" and "tal".
pub(crate) fn bag(text: &str) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    let text = text.replace(['\u{2}', '\u{AD}'], "");
    for w in text.split(|c: char| !c.is_alphabetic()) {
        if w.chars().count() >= 3 {
            *m.entry(w.to_lowercase()).or_default() += 1;
        }
    }
    m
}

/// Markdown blocks (separated by blank lines), list items split apart.
fn blocks(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in md.lines() {
        let t = line.trim();
        let item = t.starts_with("- ")
            || t.split_once(". ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
        if t.is_empty() || item || t.starts_with('#') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if t.is_empty() {
                continue;
            }
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(t);
        if t.starts_with('#') {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn is_text_block(b: &str) -> bool {
    !b.starts_with('#') && !b.starts_with('|') && !b.starts_with("```")
}

fn is_item(b: &str) -> bool {
    b.starts_with("- ")
        || b.split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

fn is_paragraph(b: &str) -> bool {
    is_text_block(b) && !is_item(b)
}

fn ends_sentence(b: &str) -> bool {
    let t = b.trim_end().trim_end_matches(['"', '\'', ')', ']', '”', '’', '*', '_']);
    t.ends_with(['.', '!', '?', ':', ';'])
}

fn mid_sentence_examples(md: &str) -> Vec<(String, String)> {
    let b = blocks(md);
    let mut out = Vec::new();
    for w in b.windows(2) {
        let next = &w[1];
        if is_paragraph(&w[0])
            && is_paragraph(next)
            && !ends_sentence(&w[0])
            && next.chars().next().is_some_and(char::is_lowercase)
        {
            let tail: String = {
                let v: Vec<char> = w[0].chars().collect();
                v[v.len().saturating_sub(40)..].iter().collect()
            };
            let head: String = next.chars().take(40).collect();
            out.push((tail, head));
        }
    }
    out
}

fn score(name: &str, md: &str, plain: &str, pages: usize, time: Option<Duration>) -> Score {
    let want = bag(plain);
    let got = bag(md);
    let total: usize = want.values().sum();
    let hit: usize = want
        .iter()
        .map(|(w, n)| (*n).min(got.get(w).copied().unwrap_or(0)))
        .sum();
    let all_lines = md.lines().count();
    let lines: Vec<&str> = md.lines().filter(|l| !l.trim().is_empty()).collect();
    let heading_lines = lines.iter().filter(|l| l.starts_with('#')).count();
    let b = blocks(md);
    let paragraphs = b.iter().filter(|x| is_paragraph(x)).count();
    let mid_breaks = mid_sentence_examples(md).len();
    let p = pages.max(1) as f64;
    Score {
        name: name.to_string(),
        pages,
        words: if total == 0 { 1.0 } else { hit as f64 / total as f64 },
        heading_share: heading_lines as f64 / lines.len().max(1) as f64,
        heading_share_all: heading_lines as f64 / all_lines.max(1) as f64,
        heading_per_src: 0.0,
        paras_per_page: paragraphs as f64 / p,
        mid_per_page: mid_breaks as f64 / p,
        pages_per_s: time.map(|t| pages as f64 / t.as_secs_f64().max(1e-9)),
        mid_breaks,
        paragraphs,
        heading_lines,
        lines: lines.len(),
        hit,
        total,
        time,
        outline: None,
    }
}

/// Install the Debian packages the set needs when its files are missing
/// (as root, or through sudo).
fn install_if_missing() -> anyhow::Result<()> {
    if FILES.iter().all(|f| Path::new(f).exists()) {
        return Ok(());
    }
    eprintln!("bench pdf --quality: installing {}", PACKAGES.join(" "));
    apt(&["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend(PACKAGES);
    apt(&args)
}

/// Run apt-get as root, or through sudo.
pub(crate) fn apt(args: &[&str]) -> anyhow::Result<()> {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let mut c = std::process::Command::new(if root { "apt-get" } else { "sudo" });
    if !root {
        c.arg("apt-get");
    }
    let s = c.env("DEBIAN_FRONTEND", "noninteractive").args(args).status()?;
    anyhow::ensure!(s.success(), "apt-get {} failed ({s})", args.join(" "));
    Ok(())
}

/// The file name stem `--out` writes and `--score-markdown` reads for a
/// PDF: its path under /usr/share/doc (or /usr/share), or `fixtures/NAME`
/// for a committed fixture, with `/` as `_` and no `.pdf`:
/// `texlive-doc_latex_ieeepes_ieeepes_doc`, `fixtures_paper`.
fn md_key(root: &Path, path: &Path) -> String {
    if let Some(k) = crate::pdf_papers::key(root, path) {
        return k;
    }
    let fixtures = root.join("tests/fixtures/pdf");
    let rel = match path.strip_prefix(&fixtures) {
        Ok(r) => format!("fixtures/{}", r.display()),
        Err(_) => {
            let s = path.display().to_string();
            ["/usr/share/doc/", "/usr/share/"]
                .iter()
                .find_map(|p| s.strip_prefix(p).map(str::to_string))
                .unwrap_or(s)
        }
    };
    let rel = rel.strip_suffix(".pdf").unwrap_or(&rel);
    rel.trim_start_matches('/').replace(['/', '\\'], "_")
}

fn short(name: &str) -> String {
    let name = name
        .trim_start_matches("/usr/share/doc/")
        .trim_start_matches("/usr/share/texlive/texmf-dist/doc/");
    let n = name.chars().count();
    if n <= 44 {
        name.to_string()
    } else {
        format!("…{}", name.chars().skip(n - 43).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mid_sentence_breaks_are_counted() {
        let md = "# T\n\nfor over two decades\n\nnow. Although\n\nEnds.\n\nlower start\n";
        assert_eq!(mid_sentence_examples(md).len(), 1);
        let s = score("x", md, "decades decades", 1, Some(Duration::from_secs(1)));
        assert_eq!(s.heading_lines, 1);
        // Five non-empty lines, nine in the file.
        assert!((s.heading_share - 0.2).abs() < 1e-9);
        assert!((s.heading_share_all - 1.0 / 9.0).abs() < 1e-9);
        assert!((s.words - 0.5).abs() < 1e-9);
        // A word PDFium marked as hyphenated at a line end is one word.
        let s = score(
            "x",
            "digital audio",
            "digi\u{2}tal audio",
            1,
            Some(Duration::from_secs(1)),
        );
        assert!((s.words - 1.0).abs() < 1e-9);
        assert_eq!(score("x", md, "x", 2, None).pages_per_s, None);
    }

    #[test]
    fn markdown_keys_are_flat_and_distinct() {
        let root = Path::new("/repo");
        let key = |p: &str| md_key(root, Path::new(p));
        assert_eq!(
            key("/usr/share/doc/texlive-doc/latex/ieeepes/ieeepes_doc.pdf"),
            "texlive-doc_latex_ieeepes_ieeepes_doc"
        );
        assert_eq!(key("/repo/tests/fixtures/pdf/paper.pdf"), "fixtures_paper");
        assert_eq!(key("/usr/share/pari/doc/tutorial.pdf"), "pari_doc_tutorial");
        assert_eq!(key("/tmp/x/a.pdf"), "tmp_x_a");
        // Two files of the same name in different packages stay apart.
        let keys: std::collections::HashSet<String> = FILES.iter().map(|f| key(f)).collect();
        assert_eq!(keys.len(), FILES.len());
    }
}
