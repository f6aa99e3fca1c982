//! `cargo xtask run` and `cargo xtask test`: the README's two commands
//! (`run` ends in `jarvis serve`, the web app).
//!
//! Both first make sure the machine has what the build and the tests need —
//! Debian packages via apt-get, the native runtime via `natives` — so a fresh
//! machine needs nothing installed by hand.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Debian packages and a command that proves each is present.
/// (command, package, needed for). A C compiler is not here: building
/// xtask itself needs one, so it is a prerequisite (README). A command written `tex:<file>` is
/// proved by `kpsewhich <file>` finding that TeX file, and `file:<path>` by that file existing.
const SYSTEM: &[(&str, &str, &str)] = &[
    ("python3", "python3-pip", "fetching the native runtime from PyPI"),
    ("latexmk", "latexmk", "the drafts LaTeX compile tests"),
    ("pdflatex", "texlive-latex-base", "the drafts LaTeX compile tests"),
    (
        "xelatex",
        "texlive-xetex",
        "drafts' default TeX engine (UTF-8 names: Greek, Polish, …)",
    ),
    (
        "tex:pzdr.tfm",
        "texlive-fonts-recommended",
        "hyperref under xelatex (pandoc's template)",
    ),
    (
        "file:/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
        "fonts-dejavu-core",
        "the default Markdown → PDF font (drafts.pdf_mainfont)",
    ),
    (
        "tex:parskip.sty",
        "texlive-latex-recommended",
        "pandoc's LaTeX template (drafts export tests)",
    ),
    (
        "tex:lmodern.sty",
        "lmodern",
        "pandoc's LaTeX template (drafts export tests)",
    ),
    ("pandoc", "pandoc", "the drafts Markdown → PDF export tests"),
    (
        "tesseract",
        "tesseract-ocr",
        "reading scanned PDF pages (OCR, `pdf.ocr`) and its tests",
    ),
    (
        "file:/usr/share/tesseract-ocr/5/tessdata/eng.traineddata",
        "tesseract-ocr-eng",
        "OCR's English data (Debian 12's path)",
    ),
];

/// What only the test suite needs: Debian's chromium and its WebDriver for
/// the browser tests of the web app (nothing may download a browser).
const TEST_SYSTEM: &[(&str, &str, &str)] = &[
    ("kill", "procps", "the tests (signals to child processes)"),
    ("git", "git", "CI (.ci/run clones the repository)"),
    (
        "pdftotext",
        "poppler-utils",
        "the drafts tests read exported PDFs (pdftotext, pdfimages)",
    ),
    ("chromium", "chromium", "the web app's browser tests"),
    (
        "chromedriver",
        "chromium-driver",
        "driving chromium from the browser tests",
    ),
];

fn have(cmd: &str) -> bool {
    if let Some(path) = cmd.strip_prefix("file:") {
        return Path::new(path).is_file();
    }
    let check = match cmd.strip_prefix("tex:") {
        Some(file) => format!("kpsewhich {file} >/dev/null 2>&1"),
        None => format!("command -v {cmd} >/dev/null 2>&1"),
    };
    Command::new("sh")
        .arg("-c")
        .arg(check)
        .status()
        .is_ok_and(|s| s.success())
}

fn pip_works() -> bool {
    Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Install missing Debian packages (as root, or through sudo).
pub fn system_packages() -> Result<()> {
    install_missing(SYSTEM)
}

fn install_missing(wanted: &[(&str, &str, &str)]) -> Result<()> {
    let mut missing: Vec<&str> = Vec::new();
    for (cmd, pkg, why) in wanted {
        let ok = if *pkg == "python3-pip" {
            have(cmd) && pip_works()
        } else {
            have(cmd)
        };
        if !ok {
            eprintln!("setup: {cmd} missing ({why}); will install {pkg}");
            missing.push(pkg);
        }
    }
    if missing.is_empty() {
        let all: Vec<&str> = wanted.iter().map(|(_, p, _)| *p).collect();
        eprintln!("setup: Debian packages needed: {} — all present", all.join(", "));
        return Ok(());
    }
    eprintln!("setup: installing Debian packages: {}", missing.join(", "));
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let apt = |args: &[&str]| -> Result<()> {
        let mut c = if root {
            Command::new("apt-get")
        } else {
            Command::new("sudo")
        };
        if !root {
            c.arg("apt-get");
        }
        c.env("DEBIAN_FRONTEND", "noninteractive").args(args);
        let s = c
            .status()
            .context("running apt-get (Debian/Ubuntu needed, as root or with sudo)")?;
        if !s.success() {
            bail!("apt-get {} failed ({s})", args.join(" "));
        }
        Ok(())
    };
    apt(&["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend(missing.iter().copied());
    apt(&args)
}

fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let s = Command::new(&cargo).current_dir(root).args(args).status()?;
    if !s.success() {
        bail!("`cargo {}` failed ({s})", args.join(" "));
    }
    Ok(())
}

/// Build the release binary and run the product: `jarvis runtime check`,
/// then `jarvis serve` in the foreground (it prints the URL to open; Ctrl-C
/// stops it). Other arguments run that command instead.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    system_packages()?;
    crate::natives::run(root, &[])?;
    cargo(root, &["build", "--release", "-p", "jarvis", "--bin", "jarvis"])?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bin = target.join("release/jarvis");
    let mut runs = jarvis_runs(args);
    let last = runs.pop().unwrap_or_default();
    for jarvis_args in runs {
        eprintln!("run: {} {}", bin.display(), jarvis_args.join(" "));
        let s = Command::new(&bin).args(&jarvis_args).status()?;
        if !s.success() {
            bail!("`jarvis {}` exited with {s}", jarvis_args.join(" "));
        }
    }
    // The last command replaces this process: Ctrl-C then reaches only
    // jarvis (serve stops cleanly and says so before the prompt returns),
    // and its exit code is the command's own.
    eprintln!("run: {} {}", bin.display(), last.join(" "));
    let err = std::os::unix::process::CommandExt::exec(Command::new(&bin).args(&last));
    Err(anyhow::Error::new(err).context(format!("cannot start {}", bin.display())))
}

/// What `cargo xtask run [--] ARGS` runs, one jarvis command after the
/// other: `runtime check` then `serve` by default (the check first, so a
/// broken runtime is reported before a server starts), else ARGS — never
/// with a leading `--` (the README writes `cargo xtask run -- config show`;
/// cargo hands the `--` through).
fn jarvis_runs(args: &[String]) -> Vec<Vec<String>> {
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    if args.is_empty() {
        vec![vec!["runtime".into(), "check".into()], vec!["serve".into()]]
    } else {
        vec![args.to_vec()]
    }
}

/// The official MCP SDK the `jarvis mcp` tests drive the server with
/// (PyPI `mcp`, pinned: its API moves quickly).
pub const MCP_SDK: &str = "mcp==2.3.0";

/// Where that SDK's virtualenv lives: `JARVIS_TEST_MCP_VENV`, else a cache
/// shared by every checkout on the machine (the tests compute the same).
pub fn mcp_venv_dir() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("JARVIS_TEST_MCP_VENV") {
        return p.into();
    }
    let home = std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("/tmp"), Into::into);
    home.join(".cache/jarvis-tests")
        .join(format!("python-{}", MCP_SDK.replace("==", "-")))
}

/// Make sure the MCP SDK's virtualenv exists (python3 -m venv + pip from
/// PyPI; nothing else is downloaded).
pub fn mcp_sdk() -> Result<()> {
    let venv = mcp_venv_dir();
    let python = venv.join("bin/python");
    let ready = venv.join(".jarvis-ready");
    if ready.exists() && python.exists() {
        eprintln!("setup: MCP SDK ({MCP_SDK}) present in {}", venv.display());
        return Ok(());
    }
    eprintln!("setup: installing the MCP SDK ({MCP_SDK}) into {}", venv.display());
    let make = || {
        Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg("--clear")
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !make() {
        install_missing(&[("__venv_missing__", "python3-venv", "a virtualenv for the MCP SDK")])?;
        if !make() {
            bail!("python3 -m venv {} failed", venv.display());
        }
    }
    let s = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            MCP_SDK,
        ])
        .status()
        .context("running pip in the MCP SDK virtualenv")?;
    if !s.success() {
        bail!("pip install {MCP_SDK} failed ({s})");
    }
    std::fs::write(&ready, MCP_SDK)?;
    Ok(())
}

/// The whole test suite, with the test-only failpoints compiled in.
pub fn test(root: &Path, args: &[String]) -> Result<()> {
    system_packages()?;
    install_missing(TEST_SYSTEM)?;
    mcp_sdk()?;
    crate::natives::run(root, &[])?;
    // `xtask/kb` too: the benchmark tool's own unit tests (the quality
    // harness's scorers) run with everything else.
    let mut all = vec!["test", "--workspace", "--features", "jarvis/failpoints,xtask/kb"];
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    all.extend(args.iter().map(String::as_str));
    cargo(root, &all)
}

#[cfg(test)]
mod tests {
    use super::jarvis_runs;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_leading_double_dash_is_not_passed_to_jarvis() {
        assert_eq!(jarvis_runs(&s(&["--", "config", "show"])), [s(&["config", "show"])]);
        assert_eq!(jarvis_runs(&s(&["config", "show"])), [s(&["config", "show"])]);
        // Only the first `--` is cargo's; a later one is jarvis's.
        assert_eq!(
            jarvis_runs(&s(&["--", "kb", "search", "--", "-x"])),
            [s(&["kb", "search", "--", "-x"])]
        );
    }

    #[test]
    fn no_arguments_check_the_runtime_then_serve_the_web_app() {
        let product = [s(&["runtime", "check"]), s(&["serve"])];
        assert_eq!(jarvis_runs(&s(&[])), product);
        assert_eq!(jarvis_runs(&s(&["--"])), product);
    }
}
