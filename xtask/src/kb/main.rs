//! `cargo xtask bench kb|vault|pdf|chat|web|owner|sync`, `cargo xtask crash sync` and `cargo xtask eval scifact|vault|answers` run here, in
//! release: the knowledge-base benchmark ([`bench`]) and the retrieval
//! evaluation ([`eval`]). Both only print figures; neither asserts on time.

#[path = "../../../tests/integration/support/answer_standin.rs"]
mod answer_standin;
mod bench;
mod bench_chat;
mod bench_dense;
mod bench_pdf;
mod bench_sync;
mod bench_web;
mod bench_web_writers;
mod common;
mod crash_sync;
mod eval;
mod eval_answers;
mod eval_dump;
mod eval_vault;
mod owner;
mod pdf_outline;
mod pdf_papers;
mod pdf_quality;
mod pdf_readability;
mod pdf_scanned;
#[path = "../../../tests/integration/support/sync_crash_core.rs"]
mod sync_crash_core;
mod vault;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = common::workspace_root();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["bench", "kb", rest @ ..] => bench::run(&root, rest),
        ["eval", "scifact", rest @ ..] => eval::run(&root, rest),
        ["eval", "vault", rest @ ..] => eval_vault::run(&root, rest),
        ["eval", "dump", rest @ ..] => eval_dump::run(&root, rest),
        ["eval", "answers", rest @ ..] => eval_answers::run(&root, rest),
        ["bench", "vault", rest @ ..] => vault::run(&root, rest),
        ["bench", "owner", rest @ ..] => owner::run(&root, rest),
        ["bench", "web", rest @ ..] => bench_web::run(&root, rest),
        ["bench", "chat", rest @ ..] => bench_chat::run(&root, rest),
        ["bench", "sync", rest @ ..] => bench_sync::run(&root, rest),
        ["crash", "sync", rest @ ..] => crash_sync::run(&root, rest),
        ["bench", "pdf", rest @ ..] => {
            let rest: Vec<String> = rest.iter().map(|s| s.to_string()).collect();
            if rest.iter().any(|a| a == "--quality") {
                pdf_quality::run(&root, &rest)
            } else {
                bench_pdf::run(&root, &rest)
            }
        }
        _ => {
            eprintln!("usage: xtask-kb bench kb [--sizes 10000,100000] [--sample N] [--queries N] [--sweep] [--trees N,M] [--scifact]\n       xtask-kb bench vault [--notes N]\n       xtask-kb bench owner [--notes N] [--runs N]\n       xtask-kb bench pdf [--quality [--papers|--all] [--show-worst] [--missing] [--out DIR | --score-markdown DIR] [--readability] [--scanned]] [FILES]\n       xtask-kb bench chat [--turns N]\n       xtask-kb bench web [--with-writers [--notes N] [--sessions N] [--bin PATH]]\n       xtask-kb bench sync [--edits N] [--burst N] [--idle-secs N] [--bin PATH]\n       xtask-kb crash sync [--kills N] [--seed N] [--notes N] [--max-run-secs N] [--bin PATH]\n       xtask-kb eval scifact [--data DIR] [--rebuild] [--chunked]\n       xtask-kb eval dump scifact|vault --out DIR [--vectors] [--cache NAME]\n       xtask-kb eval vault [--data DIR] [--rebuild] [--misses] [--dense-only]\n       xtask-kb eval answers [--questions FILE] [--model stand-in|SPEC] [--own-knowledge] [--invent N] [--only ID,…] [--data DIR] [--rebuild] [--out FILE]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask-kb: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
