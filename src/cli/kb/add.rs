//! `jarvis kb add <file.pdf | arXiv id/URL | DOI | bioRxiv page | PDF URL>`:
//! one paper, staged and committed at once — a failure or Ctrl-C at any
//! step adds nothing.

use clap::{ArgGroup, Args};

use crate::app::App;
use crate::cli::term::Term;
use crate::ingest::metadata::PdfMetadata;
use crate::ingest::paper::{AddRequest, Input, Mode, Stage};
use crate::kb::Actor;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").args(["full_text", "summary"])))]
pub struct AddArgs {
    /// A local PDF; an arXiv id/URL (abs, pdf, with or without version,
    /// old-style ids); a DOI (10.1038/…, doi:…, https://doi.org/…); a
    /// bioRxiv/medRxiv page; or the web address of a PDF.
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

pub fn add(a: AddArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    // A relative path is relative to the directory the user typed it in
    // (in delegated mode the owner's working directory is not theirs).
    let local = t.cwd().join(&a.input);
    let input = if std::path::Path::new(&a.input).is_relative() && local.exists() {
        Input::Local(local)
    } else {
        Input::parse(&a.input)?
    };
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
    let bar = t.bar(None);
    let yes = a.yes;
    let confirm = |q: &str| -> bool {
        if yes {
            return true;
        }
        bar.suspend(|| ask(t, q))
    };
    let progress = |s: Stage| {
        bar.set_message(match s {
            Stage::Downloading => "looking up the paper and downloading it…".to_string(),
            Stage::Annotations => "reading highlights and notes…".into(),
            Stage::Converting => "converting the PDF…".into(),
            Stage::Metadata => "inferring title and authors…".into(),
            Stage::Summarising => "writing the summary…".into(),
            Stage::Figures(n) => format!("captioning figure {n}…"),
            Stage::Embedding(n) => format!("embedding {n} chunks…"),
            Stage::Committing => "saving…".into(),
        })
    };
    let report = app.add_paper(&req, &Actor::Cli, &confirm, &progress, t.cancel());
    bar.finish_and_clear();
    let report = report?;
    if a.json {
        t.out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else if let Some(why) = &report.skipped {
        t.err(&format!("not added: {why}\n"));
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
        if report.private {
            out.push_str("\n  private: it is in the vault's private folder, so it never reaches a cloud model");
        }
        out.push('\n');
        t.out(&out)?;
    }
    for w in &report.warnings {
        t.err(&format!("warning: {w}\n"));
    }
    Ok(0)
}

/// `question [y/N]` on stderr; only y/yes proceeds; end of input declines.
pub(crate) fn ask(t: &dyn Term, question: &str) -> bool {
    t.err(&format!("{question} [y/N] "));
    match t.read_line() {
        // A stop while asking: the flow sees the cancel at its next step.
        None if t.cancel().is_cancelled() => false,
        None => {
            t.err("\n");
            false
        }
        Some(line) => matches!(line.trim().to_lowercase().as_str(), "y" | "yes"),
    }
}
