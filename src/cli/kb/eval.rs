//! `jarvis kb eval`: run a golden query set against the knowledge base and
//! print hit@1, hit@10, MRR@10 (nDCG@10 and Recall@100 for qrels) and
//! search latency. The work is `Kb::evaluate`; this file is flags and
//! printing.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::eval::{parse_beir, parse_known_items, EvalOptions, EvalReport};

use super::emit_json;
use super::search::Group;

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Queries: JSON lines `{"query": …, "answer": …}` (answer = a note's
    /// vault-relative path or a paper's source), or BEIR queries
    /// (`{"_id", "text"}`) with --qrels.
    pub file: PathBuf,
    /// BEIR qrels TSV (query-id, corpus-id, score): graded judgements, adds
    /// nDCG@10 and Recall@100.
    #[arg(long)]
    pub qrels: Option<PathBuf>,
    /// With --qrels: document keys are this prefix + the corpus id.
    #[arg(long, default_value = "", requires = "qrels")]
    pub key_prefix: String,
    /// Rank chunks (default) or documents.
    #[arg(long, value_enum, default_value_t = Group::Chunks)]
    pub group: Group,
    /// Vector search only (no BM25 leg, no fusion).
    #[arg(long)]
    pub dense_only: bool,
    /// Machine-readable output, with every query's rank and top results.
    #[arg(long)]
    pub json: bool,
}

pub fn eval(a: EvalArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    // Relative to the directory the user typed it in (the owner's is not theirs).
    let read =
        |p: &PathBuf| std::fs::read_to_string(t.cwd().join(p)).with_context(|| format!("cannot read {}", p.display()));
    let text = read(&a.file)?;
    let set = match &a.qrels {
        Some(q) => parse_beir(&text, &read(q)?, &a.key_prefix)?,
        None => parse_known_items(&text)?,
    };
    let opts = EvalOptions {
        group_docs: a.group == Group::Docs,
        dense_only: a.dense_only,
        ..EvalOptions::default()
    };
    let report = app.evaluate(&set, &opts, &|_, _| {}, t.cancel())?;
    if a.json {
        emit_json(t, &report)?;
    } else {
        t.out(&render(&report))?;
    }
    Ok(0)
}

/// The summary table and the misses (queries whose answer is not in the top 10).
pub fn render(r: &EvalReport) -> String {
    let mut out = format!(
        "{} queries, {}-level\nhit@1 {:.3}  hit@10 {:.3}  MRR@10 {:.3}",
        r.queries,
        if r.group_docs { "document" } else { "chunk" },
        r.hit1,
        r.hit10,
        r.mrr10
    );
    if let (Some(n), Some(rc)) = (r.ndcg10, r.recall100) {
        out.push_str(&format!("  nDCG@10 {n:.3}  Recall@100 {rc:.3}"));
    }
    out.push_str(&format!(
        "\nsearch latency p50 {:.1} ms, p95 {:.1} ms\n",
        r.latency_p50_ms, r.latency_p95_ms
    ));
    let misses: Vec<_> = r.per_query.iter().filter(|q| q.rank.is_none_or(|x| x > 10)).collect();
    if !misses.is_empty() && r.ndcg10.is_none() {
        out.push_str(&format!("\nnot in the top 10 ({}):\n", misses.len()));
        for q in misses {
            out.push_str(&format!(
                "  {:?} → {} (got {})\n",
                q.query,
                q.relevant.join(", "),
                q.top.first().map_or("nothing", String::as_str)
            ));
        }
    }
    out
}
