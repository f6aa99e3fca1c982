//! `jarvis kb search` and `jarvis kb list`.

use clap::{Args, ValueEnum};
use serde_json::json;

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::search::{DocHit, Hit, RerankOutcome, SearchRequest};

use super::{display_title, emit_json, CommonFilter};

pub use crate::visibility::Visibility;

// The one `Visibility` type lives below every layer; clap is known only
// here, so its flag parsing is implemented here.
impl ValueEnum for Visibility {
    fn value_variants<'a>() -> &'a [Self] {
        &[Visibility::Public, Visibility::Private]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

/// What one result stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Group {
    /// One result per chunk (passage).
    Chunks,
    /// One result per document: its best passage, "+N more passages".
    Docs,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    #[command(flatten)]
    pub filter: CommonFilter,
    /// How many results.
    #[arg(short = 'n', long = "n-results", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=200))]
    pub n: u32,
    /// Only public or only private chunks.
    #[arg(long, value_enum)]
    pub visibility: Option<Visibility>,
    /// Skip the cross-encoder re-ranker even if one is configured.
    #[arg(long)]
    pub no_rerank: bool,
    /// Vector search only (no BM25 leg, no fusion).
    #[arg(long)]
    pub dense_only: bool,
    /// Print each chunk's whole text instead of a one-line snippet.
    #[arg(long)]
    pub full: bool,
    /// One result per chunk (default) or per document.
    #[arg(long, value_enum, default_value_t = Group::Chunks)]
    pub group: Group,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// `key=value` → (`x_key`, value). Frontmatter extras are stored with an
/// `x_` prefix; accept the key either way so users need not know that.
pub fn parse_field(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE (e.g. --field company=Acme), got {s:?}"))?;
    let k = k.trim();
    if k.is_empty() || k == "x_" {
        return Err(format!(
            "the key is empty in {s:?}; expected KEY=VALUE (e.g. --field company=Acme)"
        ));
    }
    let key = if k.starts_with("x_") {
        k.to_string()
    } else {
        format!("x_{k}")
    };
    Ok((key, v.to_string()))
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: CommonFilter,
    /// At most this many documents.
    #[arg(short = 'n', long = "limit", default_value_t = 100)]
    pub n: usize,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn search(a: SearchArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let mut req = SearchRequest::new(a.query.clone(), a.n as usize);
    req.filter = a.filter.to_filter();
    req.filter.visibility = a.visibility;
    req.rerank = !a.no_rerank;
    if a.dense_only {
        req.hybrid = Some(false);
    }
    if a.group == Group::Docs {
        let docs = app.search_documents(&req)?;
        if a.json {
            let results: Vec<_> = docs.iter().enumerate().map(|(i, d)| doc_json(i + 1, d)).collect();
            let rerank = docs.first().map_or(RerankOutcome::Off, |d| d.best.rerank);
            emit_json(
                t,
                &json!({ "query": a.query, "group": "docs", "rerank": rerank, "results": results }),
            )?;
        } else if docs.is_empty() {
            t.err("no matches — `jarvis kb stats` shows what is indexed; loosen the filters or rephrase\n");
        } else {
            t.out(&render_docs(&docs, a.full))?;
        }
        return Ok(0);
    }
    let hits = app.search(&req)?;
    if a.json {
        let results: Vec<_> = hits.iter().enumerate().map(|(i, h)| hit_json(i + 1, h)).collect();
        let rerank = hits.first().map_or(RerankOutcome::Off, |h| h.rerank);
        emit_json(t, &json!({ "query": a.query, "rerank": rerank, "results": results }))?;
    } else if hits.is_empty() {
        t.err("no matches — `jarvis kb stats` shows what is indexed; loosen the filters or rephrase\n");
    } else {
        t.out(&render_hits(&hits, a.full))?;
    }
    Ok(0)
}

/// Where a chunk came from, as a user would look it up: a note's file
/// path (all notes share `source = "local"`), otherwise its source.
fn origin(h: &Hit) -> &str {
    crate::kb::search::doc_key(&h.record)
}

/// A document result: notes are named by `file_path`, papers by `source`.
fn doc_json(rank: usize, d: &DocHit) -> serde_json::Value {
    let mut v = hit_json(rank, &d.best);
    if let Some(o) = v.as_object_mut() {
        o.insert("score".into(), json!(d.score));
        o.insert("more_passages".into(), json!(d.more));
        o.insert("name_match".into(), json!(d.best.name_match));
    }
    v
}

fn hit_json(rank: usize, h: &Hit) -> serde_json::Value {
    let r = &h.record;
    json!({
        "rank": rank,
        "chunk_id": r.id,
        "title": r.meta_str("title").unwrap_or(""),
        "section": r.meta_str("section").unwrap_or(""),
        "source": r.meta_str("source").unwrap_or(""),
        "file_path": r.meta_str("file_path"),
        "doc_type": r.meta_str("doc_type").unwrap_or(""),
        "visibility": r.visibility(),
        "score": h.score,
        "dense_rank": h.dense_rank,
        "bm25_rank": h.bm25_rank,
        "name_match": h.name_match,
        "snippet": snippet(&r.text, 200),
        "text": r.text,
    })
}

fn render_docs(docs: &[DocHit], full: bool) -> String {
    let blocks: Vec<String> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut block = render_hit(i + 1, &d.best, full);
            if d.more > 0 {
                let s = if d.more == 1 { "" } else { "s" };
                block.push_str(&format!("    +{} more passage{s}\n", d.more));
            }
            block
        })
        .collect();
    blocks.join("\n")
}

fn render_hits(hits: &[Hit], full: bool) -> String {
    let blocks: Vec<String> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| render_hit(i + 1, h, full))
        .collect();
    blocks.join("\n")
}

fn render_hit(rank: usize, h: &Hit, full: bool) -> String {
    let mut out = String::new();
    let r = &h.record;
    let title = display_title(r.meta_str("title").unwrap_or(""), r.meta_str("file_path"), origin(h));
    let section = r.meta_str("section").filter(|s| !s.is_empty());
    out.push_str(&format!("{rank:>2}. {title}"));
    if let Some(s) = section {
        out.push_str(&format!(" › {s}"));
    }
    out.push('\n');
    let doc_type = r.meta_str("doc_type").unwrap_or("?");
    let private = if r.visibility().is_private() { " · private" } else { "" };
    out.push_str(&format!(
        "    {} · {doc_type}{private} · score {:.4}\n",
        origin(h),
        h.score
    ));
    if full {
        for line in r.text.lines() {
            out.push_str(&format!("    │ {line}\n"));
        }
    } else {
        out.push_str(&format!("    {}\n", snippet(&r.text, 160)));
    }
    out
}

/// Untrusted text (a note, a file's name or description) as one line for
/// the terminal: control characters (an escape sequence's ESC, a carriage
/// return) become spaces, so a file cannot drive the terminal, and runs of
/// whitespace collapse.
pub fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`one_line`], cut at a char boundary.
pub fn snippet(text: &str, max_chars: usize) -> String {
    let flat = one_line(text);
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let cut: String = flat.chars().take(max_chars).collect();
    format!("{}…", cut.trim_end())
}

pub fn list(a: ListArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let docs = app.list(&a.filter.to_filter(), a.n)?;
    if a.json {
        emit_json(t, &docs)?;
        return Ok(0);
    }
    if docs.is_empty() {
        t.err("no documents match — `jarvis kb stats` shows what is indexed\n");
        return Ok(0);
    }
    let mut out = String::new();
    for d in &docs {
        let date = d.date_added.get(..10).unwrap_or(&d.date_added);
        let title = display_title(&d.title, d.file_path.as_deref(), &d.source);
        out.push_str(&format!(
            "{date:<10}  {:<6} {:<7} {:>4} chunk{}  {title}\n",
            d.doc_type,
            d.visibility,
            d.chunks,
            if d.chunks == 1 { " " } else { "s" }
        ));
        let mut extra = vec![format!("key: {}", d.key)];
        for k in ["authors", "doi", "category", "status", "entity"] {
            if let Some(v) = d.meta.get(k).map(crate::kb::scalar_string).filter(|v| !v.is_empty()) {
                extra.push(format!("{k}: {v}"));
            }
        }
        out.push_str(&format!("{:12}{}\n", "", extra.join(" · ")));
    }
    t.out(&out)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_normalised_to_the_x_prefix() {
        assert_eq!(parse_field("company=Acme"), Ok(("x_company".into(), "Acme".into())));
        assert_eq!(
            parse_field("x_company=Acme=B"),
            Ok(("x_company".into(), "Acme=B".into()))
        );
        assert!(parse_field("novalue").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_field("=x").is_err());
    }

    #[test]
    fn snippets_are_one_line_and_bounded() {
        assert_eq!(snippet("a\n\n b  c", 10), "a b c");
        assert_eq!(snippet("ééééé ééééé", 5), "ééééé…");
        // A hostile note's escape sequence loses its ESC (and a carriage
        // return cannot rewrite the line).
        assert_eq!(snippet("red\u{1b}[31m text\rover", 40), "red [31m text over");
    }
}
