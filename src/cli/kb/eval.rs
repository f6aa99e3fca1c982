//! `jarvis kb eval`: run a golden query set against the knowledge base and
//! print hit@1, hit@10, MRR@10 (nDCG@10 and Recall@100 for qrels) and
//! search latency; with `--tune`, every fusion on the set and the best
//! (`--apply` writes it). The work is `Kb::evaluate` / `Kb::tune`; this
//! file is flags and printing.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::eval::{parse_beir, parse_known_items, EvalOptions, EvalReport};
use crate::kb::tune::TuneReport;

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
    /// Try every fusion (RRF and weighted scores, the dense share from 0 to
    /// 100 % in steps of 10) on this set and report the best (nDCG@10 with
    /// --qrels, else MRR@10).
    #[arg(long, conflicts_with = "dense_only")]
    pub tune: bool,
    /// With --tune: write the best to the configuration (`rag.fusion`,
    /// `rag.dense_weight`) when it beats what is configured.
    #[arg(long, requires = "tune")]
    pub apply: bool,
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
    if a.tune {
        let report = app.tune(&set, &opts, &|_, _| {}, t.cancel())?;
        let applied = a.apply && report.improves();
        if applied {
            app.apply_fusion(report.best.fusion, report.best.dense_weight)?;
        }
        if a.json {
            emit_json(t, &serde_json::json!({ "tune": report, "applied": applied }))?;
        } else {
            t.out(&render_tune(&report, a.apply, applied))?;
        }
        return Ok(0);
    }
    let report = app.evaluate(&set, &opts, &|_, _| {}, t.cancel())?;
    if a.json {
        emit_json(t, &report)?;
    } else {
        t.out(&render(&report))?;
    }
    Ok(0)
}

/// Every fusion tried, the configured one and the best, and what was done.
pub fn render_tune(r: &TuneReport, asked_to_apply: bool, applied: bool) -> String {
    let mut out = format!(
        "{} queries, scored by {}\n\n  fusion    dense  score\n",
        r.queries, r.metric
    );
    for t in &r.tried {
        let mark = if t.fusion == r.best.fusion && t.dense_weight == r.best.dense_weight {
            "  ← best"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {:<9} {:>4}%  {:.4}{mark}\n",
            t.fusion, t.dense_weight, t.score
        ));
    }
    out.push_str(&format!(
        "\nconfigured: {} at {}% dense → {:.4}\nbest:       {} at {}% dense → {:.4}\n",
        r.current.fusion, r.current.dense_weight, r.current.score, r.best.fusion, r.best.dense_weight, r.best.score
    ));
    out.push_str(&if !r.improves() {
        "what is configured is already the best on this set; nothing to change\n".to_string()
    } else if applied {
        format!(
            "written: rag.fusion = \"{}\", rag.dense_weight = {} (searches use it now)\n",
            r.best.fusion, r.best.dense_weight
        )
    } else if asked_to_apply {
        String::new()
    } else {
        format!(
            "to use it: jarvis config set rag.fusion {} && jarvis config set rag.dense_weight {} (or run again with --apply)\n",
            r.best.fusion, r.best.dense_weight
        )
    });
    out
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
