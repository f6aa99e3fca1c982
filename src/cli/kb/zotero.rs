//! `jarvis kb import-zotero [PATH]`: a Zotero library (its database, read
//! from a copy, or a BibTeX / CSL-JSON export) into the knowledge base,
//! one paper at a time, with a progress bar and a summary of what was
//! imported, replaced, unchanged, skipped and why.

use std::path::PathBuf;

use clap::{ArgGroup, Args};

use crate::app::ingest::{ImportProgress, ImportRequest};
use crate::app::App;
use crate::cli::term::Term;
use crate::ingest::paper::{Mode, Stage};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").args(["full_text", "summary"])))]
pub struct ImportZoteroArgs {
    /// Zotero's data directory (default: ~/Zotero), its zotero.sqlite, or a
    /// BibTeX (.bib) or CSL-JSON (.json) export. Nothing in it is written.
    pub path: Option<PathBuf>,
    /// Store every chunk of each PDF's text (the default: no model call
    /// per paper).
    #[arg(long)]
    pub full_text: bool,
    /// Store an LLM-written summary of each paper instead (one model call
    /// per paper).
    #[arg(long)]
    pub summary: bool,
    /// Caption figures with the vision model.
    #[arg(long)]
    pub figures: bool,
    /// Zotero's base directory for linked files (Settings → Advanced →
    /// Files and Folders), for attachments linked relative to it.
    #[arg(long, value_name = "DIR")]
    pub base_dir: Option<PathBuf>,
    /// Replace a paper already stored by another route (same DOI, arXiv
    /// id or PDF), and add a same-titled one, instead of skipping it.
    #[arg(short, long)]
    pub yes: bool,
    /// Machine-readable summary.
    #[arg(long)]
    pub json: bool,
}

pub fn import_zotero(a: ImportZoteroArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    // Relative to where the user typed it (a delegated command runs in the
    // owner, whose working directory is not theirs).
    let req = ImportRequest {
        path: a.path.map(|p| t.cwd().join(p)),
        base_dir: a.base_dir.map(|p| t.cwd().join(p)),
        mode: if a.summary { Mode::Summary } else { Mode::FullText },
        figures: a.figures,
        replace_duplicates: a.yes,
    };
    let bar = t.bar(Some("importing {bar:30} {pos}/{len} items {wide_msg}"));
    // On a terminal the bar names the paper and its step; off one, the
    // progress lines say only how far (a line per paper and step would
    // flood a log).
    let tty = t.stderr_is_terminal();
    let current = std::cell::RefCell::new(String::new());
    let progress = |p: ImportProgress<'_>| match p {
        ImportProgress::Reading if tty => bar.set_message("reading the library…".into()),
        ImportProgress::Reading => {}
        ImportProgress::Item { done, total, title } => {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if tty {
                let short: String = title.chars().take(60).collect();
                bar.set_message(short.clone());
                *current.borrow_mut() = short;
            }
        }
        ImportProgress::Stage(_) if !tty => {}
        ImportProgress::Stage(s) => {
            let title = current.borrow().clone();
            let step = match s {
                Stage::Converting => "converting",
                Stage::Summarising => "summarising",
                Stage::Figures(_) => "captioning figures",
                Stage::Embedding(_) => "embedding",
                _ => return,
            };
            bar.set_message(format!("{title} — {step}…"));
        }
    };
    let report = app.import_library(&req, &crate::kb::Actor::Cli, &progress, t.cancel());
    bar.finish_and_clear();
    let r = report?;
    if a.json {
        super::emit_json(t, &r)?;
    } else {
        let mut out = format!(
            "{} ({}): {} items — {} imported, {} replaced, {} unchanged, {} skipped, {} failed\n",
            r.library.display(),
            r.format.label(),
            r.items,
            r.imported.len(),
            r.replaced.len(),
            r.unchanged,
            r.skipped.len(),
            r.failed.len()
        );
        for (verb, list) in [("imported", &r.imported), ("replaced", &r.replaced)] {
            for i in list {
                let what = if i.with_pdf {
                    format!("{} body, {} highlight/note chunks", i.body_chunks, i.annotation_chunks)
                } else {
                    "record and abstract, no PDF".to_string()
                };
                let private = if i.private {
                    ", private (vault's private folder)"
                } else {
                    ""
                };
                out.push_str(&format!("  {verb} {} {:?}: {what}{private}\n", i.key, i.title));
            }
        }
        for s in &r.skipped {
            out.push_str(&format!("  skipped {} {:?}: {}\n", s.key, s.title, s.reason));
        }
        for s in &r.failed {
            out.push_str(&format!("  failed {} {:?}: {}\n", s.key, s.title, s.reason));
        }
        for w in &r.warnings {
            out.push_str(&format!("  warning {}: {}\n", w.key, w.warning));
        }
        if !r.gone.is_empty() {
            out.push_str(&format!(
                "{} paper(s) imported earlier are no longer in Zotero; they stay in your library (remove one with `jarvis kb remove SOURCE`):\n",
                r.gone.len()
            ));
            for g in &r.gone {
                out.push_str(&format!("  gone {} {:?}: {}\n", g.key, g.title, g.source));
            }
        }
        t.out(&out)?;
    }
    if r.stopped {
        let done = r.imported.len() + r.replaced.len();
        t.err(&format!(
            "stopped: {done} item(s) imported before the stop stay; run the same command again to import the rest\n"
        ));
        return Ok(130);
    }
    Ok(if r.failed.is_empty() { 0 } else { 1 })
}
