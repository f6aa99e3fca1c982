//! `jarvis kb set-meta` and `jarvis kb remove`.

use clap::{ArgGroup, Args};

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::ops::DocumentRef;
use crate::kb::Actor;

use super::display_title;

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

pub fn set_meta(a: SetMetaArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let n = app.set_meta(
        &a.source,
        a.title.as_deref(),
        a.authors.as_deref(),
        a.doi.as_deref(),
        &Actor::Cli,
    )?;
    let changed: Vec<&str> = [("title", &a.title), ("authors", &a.authors), ("doi", &a.doi)]
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k)
        .collect();
    t.err(&format!(
        "updated {} of {} ({n} chunk{}); metadata only, nothing was re-embedded\n",
        changed.join(", "),
        a.source,
        if n == 1 { "" } else { "s" }
    ));
    Ok(0)
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

pub fn remove(a: RemoveArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    // Refuses before asking under a model mismatch: the removal would fail.
    let (preview, local) = app.removal_preview(&a.source)?;
    t.out(&render_preview(&preview, local.as_deref()))?;
    if !a.yes && !confirm(t) {
        if t.cancel().is_cancelled() {
            return Err(crate::app::ingest::WriteError::Cancelled.into());
        }
        t.err("cancelled — nothing was removed\n");
        return Ok(1);
    }
    let n = app.remove(&preview, &Actor::Cli)?;
    t.err(&format!(
        "removed {n} chunk{} of {} from the knowledge base\n",
        if n == 1 { "" } else { "s" },
        preview.key
    ));
    Ok(0)
}

/// `Remove? [y/N]` on stderr, answer from stdin. Only `y`/`yes` proceed;
/// anything else, or end of input, cancels.
fn confirm(t: &dyn Term) -> bool {
    t.err("Remove? [y/N] ");
    let line = t.read_line();
    // A terminal echoes the answer and its newline; piped input does not.
    if line.is_none() || !t.stdin_is_terminal() {
        t.err("\n");
    }
    line.is_some_and(|l| matches!(l.trim().to_lowercase().as_str(), "y" | "yes"))
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
            visibility: crate::visibility::Visibility::Public,
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
