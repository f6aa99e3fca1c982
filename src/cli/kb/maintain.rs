//! `jarvis kb reindex`, `jarvis kb doctor` and the hidden `kb __probe`.
//!
//! Doctor runs its search probe in a child process of this same binary
//! (through [`crate::sandbox`]): a crash inside a native library (ONNX
//! Runtime, LMDB under arroy, tantivy, fjall) then ends the child, and the
//! parent reports the exit status or signal as the diagnosis instead of
//! dying with it. The child needs the one-owner lock, so doctor runs the
//! probe *before* opening the store itself, and opens it itself only when
//! the probe did not crash.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::cancel::Cancel;
use crate::config::Config;
use crate::kb::search::SearchRequest;
use crate::sandbox::{self, Ending};

use super::info::{legacy_private_papers, legacy_warning};
use super::{emit_json, open};

/// How long the probe child may take (loading the model is most of it).
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// The probe's exit code for "ran, and the knowledge base reported an
/// error" (distinct from clap's 2 and from a crash).
const PROBE_FAILED: i32 = 3;

pub fn reindex(json_out: bool, config: &Config) -> anyhow::Result<ExitCode> {
    let kb = open(config)?;
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("re-embedding {bar:40} {pos}/{len} chunks, {per_sec}, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = kb.reindex(
        &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        },
        &Cancel::new(),
    );
    bar.finish_and_clear();
    let report = report?;
    drop(kb);
    if json_out {
        emit_json(&report)?;
    } else {
        super::super::emit(&format!(
            "re-embedded {} chunks with {} into index generation {}; added the title — authors header to {} paper chunk{}\n",
            report.chunks,
            report.model,
            report.generation,
            report.headers_added,
            if report.headers_added == 1 { "" } else { "s" }
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The child side of doctor's probe: open, count, search; one JSON line.
pub fn probe(config: &Config) -> anyhow::Result<ExitCode> {
    // Lets the tests crash the probe the way a damaged native index would.
    crate::kb::failpoint("kb_probe");
    let result = (|| -> anyhow::Result<serde_json::Value> {
        let kb = open(config)?;
        let chunks = kb.count()?;
        let documents = kb.count_unique_documents()?;
        // Query with words the index holds, so both legs have work to do.
        let query = match kb.store().iter_chunks().next() {
            Some(rec) => rec?.text.split_whitespace().take(8).collect::<Vec<_>>().join(" "),
            None => "knowledge base probe".to_string(),
        };
        let start = Instant::now();
        let mut req = SearchRequest::new(query, 3);
        req.rerank = false;
        let hits = kb.search(&req)?;
        Ok(
            json!({ "ok": true, "chunks": chunks, "documents": documents, "hits": hits.len(),
                   "search_ms": start.elapsed().as_millis() as u64 }),
        )
    })();
    match result {
        Ok(v) => {
            super::super::emit(&format!("{v}\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            super::super::emit(&format!("{}\n", json!({ "ok": false, "error": format!("{e:#}") })))?;
            Ok(ExitCode::from(PROBE_FAILED as u8))
        }
    }
}

#[derive(Debug, Default, serde::Serialize)]
struct Doctor {
    ok: bool,
    /// How the index was reached. Always direct for now: loopback
    /// delegation to a running `serve`/`sync` comes with the web issue.
    access: &'static str,
    rag_dir: String,
    probe: serde_json::Value,
    store: Option<serde_json::Value>,
    agreement: Option<crate::kb::maintain::Agreement>,
    legacy_private_papers: Vec<String>,
    problems: Vec<String>,
}

pub fn doctor(json_out: bool, config: &Config) -> anyhow::Result<ExitCode> {
    let mut d = Doctor {
        access: "direct",
        rag_dir: config.rag_dir().display().to_string(),
        ..Doctor::default()
    };
    let mut lines = vec![format!(
        "access     direct — this process opened {} itself (no running jarvis serve/sync to go through)",
        d.rag_dir
    )];

    // 1. The probe, first and in a child, while this process holds no lock.
    let outcome = sandbox::run_self(&["kb", "__probe"], PROBE_TIMEOUT)?;
    let reported: Option<serde_json::Value> = outcome.stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok());
    let crashed = !matches!(outcome.ending, Ending::Exited { code } if code == 0 || code == PROBE_FAILED);
    let mut probe_error = None;
    d.probe = json!({ "pid": outcome.pid, "ending": outcome.ending, "elapsed_ms": outcome.elapsed_ms,
                      "report": reported });
    if crashed {
        let tail: Vec<&str> = outcome
            .stderr
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        lines.push(format!(
            "probe      FAILED — the search probe (child pid {}) ended with {}",
            outcome.pid, outcome.ending
        ));
        for l in &tail {
            lines.push(format!("           │ {l}"));
        }
        d.problems.push(match &outcome.ending {
            Ending::Signalled { .. } => format!(
                "the search probe crashed ({}) inside a native library — the index files are likely damaged: run `jarvis kb reindex` to rebuild the indexes from the stored text (the store itself is not changed), then `jarvis kb doctor` again; if opening the store itself crashes, move {} aside and re-add your documents",
                outcome.ending, d.rag_dir
            ),
            Ending::TimedOut { .. } => format!(
                "the search probe hung ({}) — check `jarvis runtime check`, then try `jarvis kb reindex`",
                outcome.ending
            ),
            Ending::Exited { .. } | Ending::Stopped { .. } => format!(
                "the search probe failed unexpectedly ({}) — see the output above and the log in $JARVIS_HOME/logs",
                outcome.ending
            ),
        });
    } else {
        match reported.as_ref() {
            Some(r) if r["ok"] == true => lines.push(format!(
                "probe      ok — a search in a child process (pid {}) returned {} hit{} in {} ms",
                outcome.pid,
                r["hits"],
                if r["hits"] == 1 { "" } else { "s" },
                r["search_ms"]
            )),
            Some(r) => {
                let e = r["error"].as_str().unwrap_or("unknown error").to_string();
                lines.push(format!("probe      FAILED — {e}"));
                probe_error = Some(e);
            }
            None => {
                let e = format!("the probe child printed no report ({})", outcome.ending);
                lines.push(format!("probe      FAILED — {e}"));
                probe_error = Some(e);
            }
        }
    }

    // 2. Open here, count, and compare the three stores — only when the
    // probe showed that opening does not crash.
    if !crashed {
        match open(config) {
            Err(e) => {
                let msg = format!("{e:#}");
                lines.push(format!("store      FAILED — {msg}"));
                d.problems.push(msg);
            }
            Ok(kb) => {
                let chunks = kb.count()?;
                let documents = kb.count_unique_documents()?;
                lines.push(format!(
                    "store      ok — {documents} document{}, {chunks} chunk{}, embedding model {}",
                    if documents == 1 { "" } else { "s" },
                    if chunks == 1 { "" } else { "s" },
                    kb.model_id()
                ));
                d.store = Some(json!({ "documents": documents, "chunks": chunks, "embed_model": kb.model_id() }));
                match kb.check_model() {
                    Err(e) => {
                        lines.push("agreement  skipped — the vectors are unusable until a reindex".into());
                        d.problems.push(e.to_string());
                    }
                    Ok(()) => {
                        let a = kb.agreement()?;
                        lines.push(format!(
                            "agreement  {} — store seq {}, BM25 seq {}, vectors seq {}; chunks: store {}, BM25 {}, vectors {}",
                            if a.ok() { "ok" } else { "FAILED" },
                            a.store_seq,
                            seq(a.bm25_seq),
                            seq(a.vector_seq),
                            a.store_chunks,
                            a.bm25_docs,
                            a.vector_items
                        ));
                        if !a.ok() {
                            d.problems.push(format!(
                                "the indexes disagree with the store (missing in BM25 {}, in vectors {}; orphans in BM25 {}, in vectors {}) — run `jarvis kb reindex` to rebuild them from the store",
                                a.missing_in_bm25, a.missing_in_vectors, a.orphans_in_bm25, a.orphans_in_vectors
                            ));
                        }
                        d.agreement = Some(a);
                    }
                }
                d.legacy_private_papers = legacy_private_papers(&kb)?;
                drop(kb);
            }
        }
        // Reported once: a lock or model error the probe met shows up in
        // this process's own open or model check too.
        if let Some(e) = probe_error {
            if !d
                .problems
                .iter()
                .any(|p| p.contains(e.as_str()) || e.contains(p.as_str()))
            {
                d.problems.push(e);
            }
        }
    }
    d.ok = d.problems.is_empty();

    if json_out {
        emit_json(&d)?;
    } else {
        super::super::emit(&format!("{}\n", lines.join("\n")))?;
    }
    if !d.legacy_private_papers.is_empty() {
        eprintln!("{}", legacy_warning(&d.legacy_private_papers));
    }
    if d.ok {
        if !json_out {
            eprintln!("kb doctor: healthy");
        }
        Ok(ExitCode::SUCCESS)
    } else {
        for p in &d.problems {
            eprintln!("error: {p}");
        }
        Ok(ExitCode::FAILURE)
    }
}

fn seq(s: Option<u64>) -> String {
    s.map_or("none".into(), |v| v.to_string())
}
