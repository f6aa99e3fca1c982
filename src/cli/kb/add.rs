//! `jarvis kb add <file.pdf | arXiv URL or id>`: one paper, staged and
//! committed at once — a failure or Ctrl-C at any step adds nothing.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{ArgGroup, Args};
use indicatif::{ProgressBar, ProgressDrawTarget};

use crate::cancel::Cancel;
use crate::config::Config;
use crate::ingest::metadata::PdfMetadata;
use crate::ingest::paper::{add_document, AddContext, AddRequest, Input, Mode, Stage};

use super::open;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").args(["full_text", "summary"])))]
pub struct AddArgs {
    /// A local PDF, or an arXiv id/URL (abs, pdf, with or without version, old-style ids).
    pub input: String,
    /// Store every chunk of the converted text.
    #[arg(long)]
    pub full_text: bool,
    /// Store an LLM-written ~1000-word summary (the default).
    #[arg(long)]
    pub summary: bool,
    /// The title (skips inferring it).
    #[arg(long)]
    pub title: Option<String>,
    /// The authors, e.g. "Vaswani, Shazeer" (skips inferring them).
    #[arg(long)]
    pub authors: Option<String>,
    /// The DOI.
    #[arg(long)]
    pub doi: Option<String>,
    /// Caption this document's figures with the vision model.
    #[arg(long)]
    pub figures: bool,
    /// Answer yes to the duplicate question (for scripts).
    #[arg(short, long)]
    pub yes: bool,
    /// Machine-readable report.
    #[arg(long)]
    pub json: bool,
}

pub fn add(a: AddArgs, config: &Config) -> anyhow::Result<ExitCode> {
    let input = Input::parse(&a.input)?;
    let req = AddRequest {
        input,
        mode: if a.full_text { Mode::FullText } else { Mode::Summary },
        explicit: PdfMetadata {
            title: a.title,
            authors: a.authors,
            doi: a.doi,
        },
        figures: a.figures,
    };
    let kb = open(config)?;
    let pdf = crate::app::papers::pdf_tools(config);
    let provider = crate::app::papers::provider(config);
    let arxiv = crate::app::papers::arxiv_client(config);
    let settings = crate::app::papers::add_settings(config);
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new_spinner();
        b.set_draw_target(ProgressDrawTarget::stderr());
        b.enable_steady_tick(std::time::Duration::from_millis(120));
        b
    } else {
        ProgressBar::hidden()
    };
    let yes = a.yes;
    let confirm = |q: &str| -> bool {
        if yes {
            return true;
        }
        bar.suspend(|| ask(q))
    };
    let progress = |s: Stage| {
        bar.set_message(match s {
            Stage::Downloading => "downloading from arXiv…".to_string(),
            Stage::Annotations => "reading highlights and notes…".into(),
            Stage::Converting => "converting the PDF…".into(),
            Stage::Metadata => "inferring title and authors…".into(),
            Stage::Summarising => "writing the summary…".into(),
            Stage::Figures(n) => format!("captioning figure {n}…"),
            Stage::Embedding(n) => format!("embedding {n} chunks…"),
            Stage::Committing => "saving…".into(),
        })
    };
    let cancel = Cancel::new();
    let cx = AddContext {
        kb: &kb,
        pdf: pdf.as_ref(),
        provider: provider.as_deref(),
        arxiv: &arxiv,
        settings: &settings,
        confirm: &confirm,
        progress: &progress,
        cancel: &cancel,
    };
    let report = add_document(&cx, &req);
    bar.finish_and_clear();
    let report = report?;
    if a.json {
        super::super::emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else if let Some(why) = &report.skipped {
        eprintln!("not added: {why}");
    } else {
        let mut out = format!(
            "{} {}\n  {}\n  {} body, {} highlight/note, {} figure chunks",
            if report.replaced { "replaced" } else { "added" },
            report.title,
            report.source,
            report.body_chunks,
            report.annotation_chunks,
            report.figure_chunks
        );
        if !report.authors.is_empty() {
            out.push_str(&format!("\n  authors: {}", report.authors));
        }
        if let Some(d) = &report.doi {
            out.push_str(&format!("\n  doi: {d}"));
        }
        out.push('\n');
        super::super::emit(&out)?;
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `question [y/N]` on stderr; only y/yes proceeds; end of input declines.
fn ask(question: &str) -> bool {
    use std::io::{BufRead, Write};
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            eprintln!();
            false
        }
        Ok(_) => matches!(line.trim().to_lowercase().as_str(), "y" | "yes"),
    }
}
