//! `jarvis kb set-meta` and `jarvis kb remove`.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args};

use crate::config::Config;
use crate::kb::ops::DocumentRef;

use super::{display_title, open};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("fields").required(true).multiple(true).args(["title", "authors", "doi"])))]
pub struct SetMetaArgs {
    /// The paper's source (as `jarvis kb list` shows it).
    pub source: String,
    /// The corrected title.
    #[arg(long)]
    pub title: Option<String>,
    /// The corrected authors, e.g. "Vaswani, Shazeer, Parmar".
    #[arg(long)]
    pub authors: Option<String>,
    /// The corrected DOI.
    #[arg(long)]
    pub doi: Option<String>,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The document's key from `jarvis kb list`: a paper's source or a note's file path.
    pub source: String,
    /// Do not ask; remove straight away (for scripts).
    #[arg(short, long)]
    pub yes: bool,
}

pub fn set_meta(a: SetMetaArgs, config: &Config) -> anyhow::Result<ExitCode> {
    let kb = open(config)?;
    // Resolve the key first: notes all share `source = "local"`, and a
    // note's title comes from the note itself, so only correct non-notes.
    let doc = kb.find_document(&a.source)?;
    if doc.by != "source" || doc.doc_type == "note" {
        anyhow::bail!(
            "{} is a note; its metadata comes from the note's own text and frontmatter — edit the note in the vault instead",
            a.source
        );
    }
    let n = kb.update_paper_metadata(&a.source, a.title.as_deref(), a.authors.as_deref(), a.doi.as_deref())?;
    drop(kb);
    let changed: Vec<&str> = [("title", &a.title), ("authors", &a.authors), ("doi", &a.doi)]
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k)
        .collect();
    eprintln!(
        "updated {} of {} ({n} chunk{}); metadata only, nothing was re-embedded",
        changed.join(", "),
        a.source,
        if n == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}

/// The local file a document came from, as a full path: notes store a
/// vault-relative path, local PDFs an absolute one.
fn local_path(p: &DocumentRef, config: &Config) -> Option<PathBuf> {
    let fp = p.file_path.as_deref().filter(|f| !f.is_empty())?;
    let path = PathBuf::from(fp);
    if path.is_absolute() {
        return Some(path);
    }
    Some(match config.path("vault.path") {
        Some(vault) => vault.join(path),
        None => path,
    })
}

pub fn render_preview(p: &DocumentRef, local: Option<&std::path::Path>) -> String {
    let title = display_title(&p.title, p.file_path.as_deref(), &p.source);
    let local_line = match local {
        Some(path) => path.display().to_string(),
        None => "no local file".to_string(),
    };
    // The invariant line names the file if there is one, else the source,
    // so the user sees exactly what stays where it is.
    let named = match local {
        Some(path) => path.display().to_string(),
        None => p.source.clone(),
    };
    format!(
        "Title:      {title}\nType:       {} ({})\nSource:     {}\nChunks:     {}\nLocal file: {local_line}\nDatabase entry only — files on disk are never touched by jarvis: {named}\n",
        p.doc_type, p.visibility, p.source, p.chunks
    )
}

pub fn remove(a: RemoveArgs, config: &Config) -> anyhow::Result<ExitCode> {
    let kb = open(config)?;
    // Refuse before asking: a removal under a model mismatch would fail anyway.
    kb.check_model()?;
    let preview = kb.find_document(&a.source)?;
    let local = local_path(&preview, config);
    super::super::emit(&render_preview(&preview, local.as_deref()))?;
    if !a.yes && !confirm()? {
        eprintln!("cancelled — nothing was removed");
        return Ok(ExitCode::FAILURE);
    }
    let n = kb.remove_document(&preview)?;
    drop(kb);
    eprintln!(
        "removed {n} chunk{} of {} from the knowledge base",
        if n == 1 { "" } else { "s" },
        preview.key
    );
    Ok(ExitCode::SUCCESS)
}

/// `Remove? [y/N]` on stderr, answer from stdin. Only `y`/`yes` proceed;
/// anything else, or end of input, cancels.
fn confirm() -> anyhow::Result<bool> {
    use std::io::Write;
    eprint!("Remove? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let stdin = std::io::stdin();
    let n = stdin.lock().read_line(&mut line)?;
    // A terminal echoes the answer and its newline; piped input does not.
    if n == 0 || !std::io::IsTerminal::is_terminal(&stdin) {
        eprintln!();
    }
    if n == 0 {
        return Ok(false);
    }
    Ok(matches!(line.trim().to_lowercase().as_str(), "y" | "yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_states_the_invariant_with_the_path_or_the_source() {
        let p = DocumentRef {
            key: "https://x".into(),
            by: "source",
            title: "T".into(),
            doc_type: "paper".into(),
            visibility: "public".into(),
            source: "https://x".into(),
            file_path: None,
            chunks: 2,
        };
        let text = render_preview(&p, None);
        assert!(text.contains("Local file: no local file"));
        assert!(text.contains("Database entry only — files on disk are never touched by jarvis: https://x\n"));
        let text = render_preview(&p, Some(std::path::Path::new("/v/a.md")));
        assert!(text.contains("Database entry only — files on disk are never touched by jarvis: /v/a.md\n"));
    }
}
