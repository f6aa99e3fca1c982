//! `jarvis runtime check`.

use std::process::ExitCode;

use clap::Subcommand;

use crate::app::runtime_check::{self, RuntimeReport};
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum RuntimeCmd {
    /// Load ONNX Runtime (embedding a sentence with the model) and PDFium
    /// (opening a PDF), and report where each came from and how long it took.
    Check {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: RuntimeCmd, config: &Config) -> anyhow::Result<ExitCode> {
    let RuntimeCmd::Check { json } = cmd;
    let report = runtime_check::check(config);
    if json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        super::emit(&render(&report))?;
    }
    if report.ok {
        Ok(ExitCode::SUCCESS)
    } else {
        for p in report.pieces.iter().filter(|p| !p.ok) {
            eprintln!("error: {}: {}", p.piece, p.error.as_deref().unwrap_or("failed"));
        }
        Ok(ExitCode::FAILURE)
    }
}

pub fn render(report: &RuntimeReport) -> String {
    let mut out = String::new();
    for p in &report.pieces {
        let mark = if p.ok { "ok  " } else { "FAIL" };
        out.push_str(&format!("{mark} {} — {}\n", p.piece, p.version));
        for f in &p.files {
            out.push_str(&format!(
                "     {} ({:?})\n     sha256 {}\n",
                f.path.display(),
                f.provenance,
                f.sha256
            ));
        }
        out.push_str(&format!(
            "     unpack/verify {:.0} ms, load {:.0} ms\n",
            p.unpack_ms, p.load_ms
        ));
        if !p.detail.is_empty() {
            out.push_str(&format!("     {}\n", p.detail));
        }
        if let Some(e) = &p.error {
            out.push_str(&format!("     error: {e}\n"));
        }
    }
    out.push_str(if report.ok {
        "runtime: all pieces work\n"
    } else {
        "runtime: some pieces failed (see above)\n"
    });
    out
}
