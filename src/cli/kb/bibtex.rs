//! `jarvis kb bibtex [--kind papers] [QUERY] [-o FILE] [--json]`: the
//! library's papers as BibTeX, each under its stable citation key.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde::Serialize;

use crate::app::App;
use crate::cli::term::Term;

use super::{emit_json, Kind};

#[derive(Debug, Args)]
pub struct BibtexArgs {
    /// Only papers whose key, title, authors, year or venue hold every word
    /// of this (case and accents do not matter); all papers without it.
    pub query: Option<String>,
    /// Which documents: only papers have citation keys (digests, notes and
    /// chats have none).
    #[arg(long, value_enum, default_value_t = Kind::Papers)]
    pub kind: Kind,
    /// Write the BibTeX to this file instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// List the keys (key, title, authors, year, source) as JSON instead.
    #[arg(long)]
    pub json: bool,
}

/// One row of `kb bibtex --json`.
#[derive(Serialize)]
struct KeyRow<'a> {
    key: &'a str,
    title: &'a str,
    authors: String,
    year: Option<i32>,
    source: &'a str,
}

pub fn bibtex(a: BibtexArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    if matches!(a.kind, Kind::Notes | Kind::Chats) {
        anyhow::bail!("only papers have citation keys — use `--kind papers` (the default)");
    }
    let query = a.query.as_deref().unwrap_or("");
    let (text, entries) = app.bibtex(query)?;
    if entries.is_empty() {
        t.err(&if query.is_empty() {
            "no papers in the library yet — add one with `jarvis kb add`\n".to_string()
        } else {
            format!("no paper matches {query:?} — `jarvis kb bibtex --json` lists every key\n")
        });
    }
    if let Some(path) = &a.output {
        let path = t.cwd().join(path);
        crate::paths::write_atomic(&path, text.as_bytes(), 0o644)
            .with_context(|| format!("cannot write {}", path.display()))?;
        t.err(&format!(
            "wrote {} entr{} to {}\n",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" },
            path.display()
        ));
    }
    if a.json {
        let rows: Vec<KeyRow<'_>> = entries
            .iter()
            .map(|e| KeyRow {
                key: &e.key,
                title: &e.title,
                authors: e.authors_short(),
                year: e.year,
                source: &e.source,
            })
            .collect();
        emit_json(t, &rows)?;
    } else if a.output.is_none() {
        t.out(&text)?;
    }
    Ok(0)
}
