//! Tesseract: the picture of a page read into words with their boxes.
//!
//! Owns: running the `tesseract` program (Debian's `tesseract-ocr`, with a
//! `tesseract-ocr-<lang>` package per language) through `sandbox` — a time
//! and an address-space limit per page, the environment allowlist plus
//! `TESSDATA_PREFIX`, one thread (`OMP_THREAD_LIMIT=1`: on a shared machine
//! OpenMP's threads fight over the cores, and a page took 18 s instead of
//! 5.5 s), no network where the kernel allows a namespace; reading its TSV
//! output; and, when it cannot run, naming what to install.
//! Must not: know about PDFs (the caller draws the page) or the knowledge
//! base.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::sandbox::{self, ChildSpec, Ending, SandboxError};

/// The Debian package with the program.
pub const PACKAGE: &str = "tesseract-ocr";

/// How to run Tesseract.
#[derive(Debug, Clone)]
pub struct OcrSettings {
    /// The program: a name looked up on `PATH`, or a path.
    pub program: PathBuf,
    /// Tesseract language codes (`eng`, `deu`, `chi_sim`…), read together.
    pub languages: Vec<String>,
    /// Per page.
    pub timeout: Duration,
    /// Address-space limit per page, in MiB.
    pub memory_mb: u64,
}

/// One word as Tesseract read it, in pixels of the picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    pub left: u32,
    pub top: u32,
    pub width: u32,
    pub height: u32,
    /// 0–100.
    pub confidence: f32,
    /// The line the word is on, unique within the page.
    pub line: u32,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OcrError {
    #[error("OCR needs Tesseract, and `{program}` cannot be run ({reason}) — install the Debian packages {PACKAGE} and tesseract-ocr-eng (`sudo apt-get install {PACKAGE} tesseract-ocr-eng`), point `pdf.tesseract` at the program, or set `pdf.ocr = false`")]
    NotInstalled { program: String, reason: String },
    #[error("Tesseract has no data for the language {language:?} in `pdf.ocr_languages` — install the Debian package {package} (`sudo apt-get install {package}`), or remove the language from the setting")]
    LanguageMissing { language: String, package: String },
    #[error("{language:?} in `pdf.ocr_languages` is not a Tesseract language code (such as eng, deu, chi_sim)")]
    BadLanguage { language: String },
    #[error("Tesseract did not read a page within {seconds} s and was stopped (raise `pdf.ocr_timeout_seconds` on a slow machine)")]
    TimedOut { seconds: u64 },
    #[error("Tesseract ran out of memory (limit {limit_mb} MiB) reading a page (raise `pdf.ocr_memory_mb`)")]
    OutOfMemory { limit_mb: u64 },
    #[error("Tesseract failed reading a page ({ending}): {detail}")]
    Failed { ending: String, detail: String },
    #[error("OCR was stopped")]
    Stopped,
    #[error("cannot run Tesseract: {0}")]
    Sandbox(#[source] SandboxError),
}

impl OcrError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            OcrError::NotInstalled { .. } | OcrError::LanguageMissing { .. } | OcrError::BadLanguage { .. } => {
                ErrorKind::User
            }
            OcrError::TimedOut { .. } | OcrError::OutOfMemory { .. } | OcrError::Failed { .. } => ErrorKind::User,
            OcrError::Stopped => ErrorKind::Cancelled,
            OcrError::Sandbox(e) => e.kind(),
        }
    }

    /// Whether no page can be read with these settings (as opposed to this
    /// one page failing): the caller stops trying.
    pub fn is_setup(&self) -> bool {
        matches!(
            self,
            OcrError::NotInstalled { .. }
                | OcrError::LanguageMissing { .. }
                | OcrError::BadLanguage { .. }
                | OcrError::Sandbox(_)
        )
    }
}

/// The Debian package with Tesseract's data for `language`
/// (`chi_sim` → `tesseract-ocr-chi-sim`).
pub fn language_package(language: &str) -> String {
    format!("{PACKAGE}-{}", language.to_ascii_lowercase().replace(['_', '/'], "-"))
}

/// `-l`'s value: the languages joined with `+`, each checked to be a code
/// (letters, digits, `_`, and `/` for `script/Latin`), never an option.
fn language_arg(languages: &[String]) -> Result<String, OcrError> {
    let mut codes = Vec::new();
    for l in languages {
        let l = l.trim();
        let ok = !l.is_empty()
            && !l.starts_with(['-', '/'])
            && !l.contains("..")
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/');
        if !ok {
            return Err(OcrError::BadLanguage { language: l.into() });
        }
        codes.push(l);
    }
    if codes.is_empty() {
        codes.push("eng");
    }
    Ok(codes.join("+"))
}

/// Read the picture at `image` (PNG, TIFF, …) drawn at `dpi`. `stop`
/// ends the run at once (Ctrl-C).
pub fn read(
    settings: &OcrSettings,
    image: &Path,
    dpi: u32,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
) -> Result<Vec<Word>, OcrError> {
    let langs = language_arg(&settings.languages)?;
    let image_arg = image.to_string_lossy();
    let dpi = dpi.clamp(70, 2400).to_string();
    // `tesseract IMAGE stdout [options] tsv`: the words with their boxes
    // as tab-separated values on stdout.
    let args = [
        image_arg.as_ref(),
        "stdout",
        "-l",
        &langs,
        "--dpi",
        &dpi,
        "--psm",
        "3",
        "tsv",
    ];
    let env = [("OMP_THREAD_LIMIT".to_string(), "1".to_string())];
    let spec = ChildSpec {
        args: &args,
        env: &env,
        inherit: &["TESSDATA_PREFIX"],
        timeout: settings.timeout,
        memory_limit: Some(settings.memory_mb.max(64).saturating_mul(1024 * 1024)),
        output_limit: 32 << 20,
        stop,
        no_network: true,
        ..ChildSpec::default()
    };
    let outcome = match sandbox::run_child(&settings.program, &spec) {
        Err(SandboxError::NoIsolation { .. }) => {
            // A picture reader has no use for the network; where the
            // kernel will not cut it off, the limits still hold.
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                tracing::info!("Tesseract runs with network access: this system gives no network namespace");
            }
            sandbox::run_child(
                &settings.program,
                &ChildSpec {
                    no_network: false,
                    ..spec
                },
            )
        }
        other => other,
    };
    let outcome = outcome.map_err(|e| match e {
        SandboxError::Spawn { exe, source } if source.kind() == std::io::ErrorKind::NotFound => {
            OcrError::NotInstalled {
                program: exe,
                reason: "not found".into(),
            }
        }
        SandboxError::Spawn { exe, source } if source.kind() == std::io::ErrorKind::PermissionDenied => {
            OcrError::NotInstalled {
                program: exe,
                reason: "not executable".into(),
            }
        }
        other => OcrError::Sandbox(other),
    })?;
    tracing::debug!(image = %image.display(), ending = %outcome.ending, elapsed_ms = outcome.elapsed_ms, "Tesseract ended");
    // With several languages Tesseract reads on with the ones it has and
    // only warns about the rest; a language asked for and not read is a
    // setting to fix, not a page to read half-blind.
    if let Some(e) = missing_language(&outcome.stderr) {
        return Err(e);
    }
    match outcome.ending {
        Ending::Exited { code: 0 } => Ok(parse_tsv(&String::from_utf8_lossy(&outcome.stdout))),
        Ending::Stopped { .. } => Err(OcrError::Stopped),
        Ending::TimedOut { .. } => Err(OcrError::TimedOut {
            seconds: settings.timeout.as_secs(),
        }),
        ref ending => Err(failure(settings, ending, &outcome.stderr)),
    }
}

/// What a failed run's ending and stderr say.
fn failure(settings: &OcrSettings, ending: &Ending, stderr: &str) -> OcrError {
    if let Some(e) = missing_language(stderr) {
        return e;
    }
    if matches!(ending, Ending::Signalled { .. })
        && ["bad_alloc", "out of memory", "memory allocation"]
            .iter()
            .any(|m| stderr.contains(m))
    {
        return OcrError::OutOfMemory {
            limit_mb: settings.memory_mb,
        };
    }
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let detail = lines[lines.len().saturating_sub(3)..].join(" | ");
    OcrError::Failed {
        ending: ending.to_string(),
        detail: if detail.is_empty() { "no message".into() } else { detail },
    }
}

/// "Failed loading language 'xyz'" on stderr (after "Error opening data
/// file …/xyz.traineddata").
fn missing_language(stderr: &str) -> Option<OcrError> {
    let language = stderr.lines().find_map(|l| {
        let quoted = l.trim().strip_prefix("Failed loading language '")?;
        quoted.split('\'').next().map(str::to_string)
    })?;
    Some(OcrError::LanguageMissing {
        package: language_package(&language),
        language,
    })
}

/// Tesseract's TSV: `level page block par line word left top width height
/// conf text`, one row per page, block, paragraph, line and word; words
/// are level 5.
pub fn parse_tsv(tsv: &str) -> Vec<Word> {
    let mut out = Vec::new();
    for row in tsv.lines().skip(1) {
        let f: Vec<&str> = row.split('\t').collect();
        if f.len() < 12 || f[0] != "5" {
            continue;
        }
        let text = f[11..].join(" ");
        let text = text.trim();
        let num = |i: usize| f[i].trim().parse::<u32>().ok();
        let (Some(block), Some(par), Some(line)) = (num(2), num(3), num(4)) else {
            continue;
        };
        let (Some(left), Some(top), Some(width), Some(height)) = (num(6), num(7), num(8), num(9)) else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        out.push(Word {
            text: text.to_string(),
            left,
            top,
            width,
            height,
            confidence: f[10].trim().parse().unwrap_or(0.0),
            line: block.saturating_mul(1_000_000) + par.saturating_mul(1000) + line,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_words_keep_their_boxes_and_lines() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
            1\t1\t0\t0\t0\t0\t0\t0\t2481\t3508\t-1\t\n\
            4\t1\t1\t1\t1\t0\t340\t316\t1672\t42\t-1\t\n\
            5\t1\t1\t1\t1\t1\t340\t316\t120\t42\t96.5\tZoo:\n\
            5\t1\t1\t1\t1\t2\t470\t316\t90\t42\t91\tS3\n\
            5\t1\t1\t1\t2\t1\t340\t370\t90\t40\t95\t   \n\
            5\t1\t2\t1\t1\t1\t340\t500\t90\t40\t88\tInfrastructure\n";
        let words = parse_tsv(tsv);
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["Zoo:", "S3", "Infrastructure"]);
        assert_eq!(
            (words[0].left, words[0].top, words[0].width, words[0].height),
            (340, 316, 120, 42)
        );
        assert_eq!(words[0].line, words[1].line);
        assert_ne!(words[1].line, words[2].line);
        assert!((words[0].confidence - 96.5).abs() < 1e-6);
    }

    #[test]
    fn languages_are_codes_never_options() {
        let l = |v: &[&str]| language_arg(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(l(&["eng", "deu"]).unwrap(), "eng+deu");
        assert_eq!(l(&[]).unwrap(), "eng");
        assert_eq!(l(&["script/Latin"]).unwrap(), "script/Latin");
        for bad in ["--psm", "../x", "e ng", "/etc/passwd"] {
            assert!(matches!(l(&[bad]), Err(OcrError::BadLanguage { .. })), "{bad}");
        }
        assert_eq!(language_package("chi_sim"), "tesseract-ocr-chi-sim");
    }

    #[test]
    fn a_missing_language_names_its_package() {
        let settings = OcrSettings {
            program: "tesseract".into(),
            languages: vec!["xyz".into()],
            timeout: Duration::from_secs(1),
            memory_mb: 64,
        };
        let stderr = "Error opening data file /usr/share/tesseract-ocr/5/tessdata/xyz.traineddata\n\
            Please make sure the TESSDATA_PREFIX environment variable is set to your \"tessdata\" directory.\n\
            Failed loading language 'xyz'\nTesseract couldn't load any languages!\nCould not initialize tesseract.\n";
        let e = failure(&settings, &Ending::Exited { code: 1 }, stderr);
        assert!(e.to_string().contains("tesseract-ocr-xyz"), "{e}");
        assert!(e.is_setup());
        let e = failure(&settings, &Ending::Exited { code: 1 }, "Error in pixReadStream\n");
        assert!(matches!(e, OcrError::Failed { .. }) && !e.is_setup(), "{e}");
    }
}
