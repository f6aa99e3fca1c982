//! `cargo xtask bench pdf --quality --readability [--papers|--all] [FILES]`:
//! how the converter's "reads as words" check (`jarvis::pdf::readable`)
//! sorts real pages and junk ones — the figures its thresholds were set
//! from.
//!
//! Real pages are every page of the chosen PDFs, as the check sees them
//! (`pdf::text_layer_pages`). Junk pages are the same pages broken the ways
//! a font's Unicode map breaks: every letter to punctuation ("- \- - -",
//! the old TeX paper of issue 33), letters shifted by one (a map off by
//! one), letters permuted (one custom encoding read as another), letters to
//! Zapf Dingbats, and four letters broken (e, t, a, o to punctuation: a
//! page "kept under two-thirds of its words"). For each kind it prints how many pages the check calls
//! Reads, Suspect (→ OCR decides), Junk (→ OCR, or left out) and TooShort,
//! and then the real pages it does not call Reads, lowest first: those are
//! what OCR costs on an ordinary library.

use std::path::PathBuf;

use anyhow::Context;
use jarvis::pdf::readable::{measure, Readability, Verdict};
use jarvis::pdf::{text_layer_pages, PdfEngine};

type Transform = fn(&str) -> String;

const TRANSFORMS: &[(&str, Transform)] = &[
    ("punctuation soup", soup),
    ("letters shifted by one", shifted),
    ("letters permuted", permuted),
    ("letters to dingbats", dingbats),
    ("four letters broken", four_broken),
];

fn map_letters(s: &str, f: impl Fn(u8, bool) -> char) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => f(c as u8 - b'a', false),
            'A'..='Z' => f(c as u8 - b'A', true),
            other => other,
        })
        .collect()
}

fn soup(s: &str) -> String {
    map_letters(s, |i, _| ['-', '\\', '\'', '-', '.', '-'][usize::from(i) % 6])
}

fn shifted(s: &str) -> String {
    map_letters(s, |i, up| char::from((if up { b'A' } else { b'a' }) + (i + 1) % 26))
}

fn permuted(s: &str) -> String {
    // A fixed permutation of the alphabet (vowels land on consonants).
    const TO: &[u8; 26] = b"qwertyuiopasdfghjklzxcvbnm";
    map_letters(s, |i, up| {
        let c = char::from(TO[usize::from(i)]);
        if up {
            c.to_ascii_uppercase()
        } else {
            c
        }
    })
}

fn dingbats(s: &str) -> String {
    map_letters(s, |i, _| char::from_u32(0x2701 + u32::from(i)).unwrap_or('?'))
}

/// A font whose map lost a few letters: e, t, a and o come out as
/// punctuation, the rest is right.
fn four_broken(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'e' => '-',
            't' => '\\',
            'a' => '\'',
            'o' => '.',
            other => other,
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    reads: usize,
    suspect: usize,
    junk: usize,
    short: usize,
    /// (word share, common share) of the pages long enough to judge.
    shares: Vec<(f64, f64)>,
}

impl Tally {
    fn add(&mut self, r: &Readability) {
        if r.verdict() != Verdict::TooShort {
            self.shares.push((r.word_share(), r.common_share()));
        }
        match r.verdict() {
            Verdict::Reads => self.reads += 1,
            Verdict::Suspect => self.suspect += 1,
            Verdict::Junk => self.junk += 1,
            Verdict::TooShort => self.short += 1,
        }
    }
    /// Percentiles 1, 5, 25, 50, 75, 95, 99 of one share.
    fn percentiles(&self, f: fn(&(f64, f64)) -> f64) -> String {
        let mut v: Vec<f64> = self.shares.iter().map(f).collect();
        if v.is_empty() {
            return "-".into();
        }
        v.sort_by(f64::total_cmp);
        [1, 5, 25, 50, 75, 95, 99]
            .iter()
            .map(|p| format!("{:.3}", v[(v.len() - 1) * p / 100]))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn line(&self, what: &str) -> String {
        let judged = (self.reads + self.suspect + self.junk).max(1) as f64;
        format!(
            "{what:<26} {:>6} {:>8} {:>6} {:>9}   reads {:>5.1}%  suspect {:>5.1}%  junk {:>5.1}%",
            self.reads,
            self.suspect,
            self.junk,
            self.short,
            100.0 * self.reads as f64 / judged,
            100.0 * self.suspect as f64 / judged,
            100.0 * self.junk as f64 / judged,
        )
    }
}

/// `dump`: write each kind's judged pages as `DIR/<kind>.csv` (word share,
/// common share, tokens with letters), to look at the joint distribution.
pub fn run(files: &[PathBuf], dump: Option<PathBuf>) -> anyhow::Result<()> {
    let home_dir = tempfile::tempdir().context("temp JARVIS_HOME")?;
    let home = jarvis::paths::JarvisHome::at(home_dir.path());
    let lib = jarvis::runtime::ensure_bundled(&home, jarvis::runtime::PDFIUM_LIB).context("unpack PDFium")?;
    let engine = PdfEngine::load(&lib.path)?;
    let mut real = Tally::default();
    let mut broken: Vec<Tally> = TRANSFORMS.iter().map(|_| Tally::default()).collect();
    let mut flagged: Vec<(f64, String, usize, Readability, String)> = Vec::new();
    let mut n_files = 0;
    for path in files {
        let name = path.display().to_string();
        let Ok(bytes) = std::fs::read(path) else {
            println!("missing: {name}");
            continue;
        };
        let pages = match text_layer_pages(engine, &name, &bytes) {
            Ok(p) => p,
            Err(e) => {
                println!("failed: {e}");
                continue;
            }
        };
        n_files += 1;
        for (i, text) in pages.iter().enumerate() {
            let r = measure(text);
            real.add(&r);
            if matches!(r.verdict(), Verdict::Suspect | Verdict::Junk) {
                let snippet: String = text.chars().take(90).collect();
                flagged.push((r.value(), name.clone(), i + 1, r, snippet));
            }
            for ((_, f), t) in TRANSFORMS.iter().zip(broken.iter_mut()) {
                t.add(&measure(&f(text)));
            }
        }
    }
    println!(
        "\n{n_files} files, {} pages\n\n{:<26} {:>6} {:>8} {:>6} {:>9}",
        real.reads + real.suspect + real.junk + real.short,
        "pages",
        "reads",
        "suspect",
        "junk",
        "too short"
    );
    println!("{}", real.line("real text layers"));
    for ((what, _), t) in TRANSFORMS.iter().zip(&broken) {
        println!("{}", t.line(what));
    }
    println!("\npercentiles 1 5 25 50 75 95 99 of the pages judged:");
    println!(
        "{:<26} words {}   common {}",
        "real text layers",
        real.percentiles(|s| s.0),
        real.percentiles(|s| s.1)
    );
    for ((what, _), t) in TRANSFORMS.iter().zip(&broken) {
        println!(
            "{what:<26} words {}   common {}",
            t.percentiles(|s| s.0),
            t.percentiles(|s| s.1)
        );
    }
    if let Some(dir) = dump {
        std::fs::create_dir_all(&dir)?;
        let kinds = std::iter::once(("real", &real)).chain(TRANSFORMS.iter().map(|(w, _)| *w).zip(&broken));
        for (what, t) in kinds {
            let rows: Vec<String> = t.shares.iter().map(|(w, c)| format!("{w:.4},{c:.4}")).collect();
            std::fs::write(dir.join(format!("{}.csv", what.replace(' ', "_"))), rows.join("\n"))?;
        }
    }
    flagged.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!(
        "\nreal pages not judged Reads ({}), lowest first — each costs one OCR run at ingest:",
        flagged.len()
    );
    for (v, name, page, r, snippet) in flagged.iter().take(40) {
        let short = name.rsplit('/').next().unwrap_or(name);
        println!(
            "  {v:.2} {:?} words {:.2} soup {:.2} common {:.3} ({} tokens)  {short} p.{page}: {snippet}",
            r.verdict(),
            r.word_share(),
            r.soup_share(),
            r.common_share(),
            r.tokens,
        );
    }
    Ok(())
}
