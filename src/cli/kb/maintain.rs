//! `jarvis kb reindex`, `jarvis kb doctor` and the hidden `kb __probe`.
//!
//! Doctor runs its search probe in a child process of this same binary
//! (`App::probe_in_child`): a crash inside a native library (ONNX
//! Runtime, LMDB under arroy, tantivy, fjall) then ends the child, and the
//! parent reports the exit status or signal as the diagnosis instead of
//! dying with it. The child needs the one-owner lock, so doctor runs the
//! probe *before* opening the store itself, and opens it itself only when
//! the probe did not crash.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::app::ops::legacy_private_papers;
use crate::app::ops::{ChildOutcome, Ending};
use crate::app::App;
use crate::cli::term::{Access, Term};

use super::emit_json;
use super::info::legacy_warning;

/// How long the probe child may take (loading the model is most of it).
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// The probe's exit code for "ran, and the knowledge base reported an
/// error" (distinct from clap's 2 and from a crash).
const PROBE_FAILED: i32 = 3;

pub fn reindex(json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    app.check_reindex_model()?;
    // A registry model named in rag.embed_model is fetched (and verified)
    // first, so switching models is a config change plus this command.
    let dl = t.bar(Some(
        "downloading {msg} {bar:40} {bytes}/{total_bytes}, {bytes_per_sec}, eta {eta}",
    ));
    let fetched = crate::app::kb::ensure_model(&app.config(), &|file, done, total| {
        dl.set_message(file.to_string());
        if let Some(n) = total {
            dl.set_length(n);
        }
        dl.set_position(done);
    });
    dl.finish_and_clear();
    if let Some(d) = fetched? {
        if d.bytes > 0 {
            t.err(&format!(
                "downloaded {} ({} bytes, sha256 verified)\n",
                d.files.model.display(),
                d.bytes
            ));
        }
    }
    let bar = t.bar(Some("re-embedding {bar:40} {pos}/{len} chunks, {per_sec}, eta {eta}"));
    let report = app.reindex(
        &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        },
        t.cancel(),
    );
    bar.finish_and_clear();
    let report = report?;
    if json_out {
        emit_json(t, &super::dto::Reindex::from(&report))?;
    } else {
        t.out(&format!(
            "re-embedded {} chunks with {} into index generation {}; added the title — authors header to {} paper chunk{}\n",
            report.chunks,
            report.model,
            report.generation,
            report.headers_added,
            if report.headers_added == 1 { "" } else { "s" }
        ))?;
    }
    Ok(0)
}

/// Open, count, search: the probe's report as one JSON value.
fn probe_report(app: &App) -> anyhow::Result<serde_json::Value> {
    let r = app.probe_search()?;
    Ok(
        json!({ "ok": true, "chunks": r.chunks, "documents": r.documents, "hits": r.hits,
               "search_ms": r.search_ms }),
    )
}

/// The child side of doctor's probe: open, count, search; one JSON line.
pub fn probe(app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    // Lets the tests crash the probe the way a damaged native index would.
    crate::kb::failpoint("kb_probe");
    let result = probe_report(app);
    match result {
        Ok(v) => {
            t.out(&format!("{v}\n"))?;
            Ok(0)
        }
        Err(e) => {
            t.out(&format!("{}\n", json!({ "ok": false, "error": format!("{e:#}") })))?;
            Ok(PROBE_FAILED as u8)
        }
    }
}

#[derive(Debug, Default, serde::Serialize)]
struct Doctor {
    ok: bool,
    /// How the index was reached: `direct`, or `via jarvis sync, pid N`.
    access: String,
    rag_dir: String,
    probe: serde_json::Value,
    store: Option<serde_json::Value>,
    agreement: Option<super::dto::Agree>,
    legacy_private_papers: Vec<String>,
    problems: Vec<String>,
}

pub fn doctor(json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let mut d = Doctor {
        rag_dir: app.config().rag_dir().display().to_string(),
        ..Doctor::default()
    };
    let mut lines = Vec::new();
    match t.access() {
        Access::Direct => {
            d.access = "direct".into();
            lines.push(format!(
                "access     direct — this process opened {} itself (no running jarvis serve/sync to go through)",
                d.rag_dir
            ));
        }
        Access::Owner { role, pid } => {
            d.access = format!("via jarvis {role}, pid {pid}");
            lines.push(format!(
                "access     via jarvis {role}, pid {pid} — the owner ran this with the knowledge base it keeps open at {}",
                d.rag_dir
            ));
        }
    }

    // 1. The probe. Direct: first and in a child, while this process holds
    // no lock, so a native crash is a diagnosis. In the owner the store is
    // already open (and locked), so the probe searches in-process.
    let outcome = match t.access() {
        Access::Direct => app.probe_in_child(PROBE_TIMEOUT)?,
        Access::Owner { pid, .. } => {
            let start = Instant::now();
            let (report, code) = match probe_report(app) {
                Ok(v) => (v, 0),
                Err(e) => (json!({ "ok": false, "error": format!("{e:#}") }), PROBE_FAILED),
            };
            ChildOutcome {
                pid: *pid,
                ending: Ending::Exited { code },
                stdout: format!("{report}\n"),
                stderr: String::new(),
                elapsed_ms: start.elapsed().as_millis() as u64,
            }
        }
    };
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
                "probe      ok — a search in {} (pid {}) returned {} hit{} in {} ms",
                if t.access() == &Access::Direct {
                    "a child process"
                } else {
                    "the owner process"
                },
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
        match app.kb() {
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
                            "agreement  {} — store seq {}, BM25 seq {}, vectors seq {}, exact seq {}; chunks: store {}, BM25 {}, vectors {}, exact {}",
                            if a.ok() { "ok" } else { "FAILED" },
                            a.store_seq,
                            seq(a.bm25_seq),
                            seq(a.vector_seq),
                            seq(a.exact_seq),
                            a.store_chunks,
                            a.bm25_docs,
                            a.vector_items,
                            a.exact_items
                        ));
                        if !a.ok() {
                            d.problems.push(format!(
                                "the indexes disagree with the store (missing in BM25 {}, in vectors {}, in the exact index {}; orphans in BM25 {}, in vectors {}, in the exact index {}; stale in the exact index {}) — run `jarvis kb reindex` to rebuild them from the store",
                                a.missing_in_bm25,
                                a.missing_in_vectors,
                                a.missing_in_exact,
                                a.orphans_in_bm25,
                                a.orphans_in_vectors,
                                a.orphans_in_exact,
                                a.stale_in_exact
                            ));
                        }
                        d.agreement = Some(super::dto::Agree::from(&a));
                    }
                }
                d.legacy_private_papers = legacy_private_papers(&kb)?;
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
        emit_json(t, &d)?;
    } else {
        t.out(&format!("{}\n", lines.join("\n")))?;
    }
    if !d.legacy_private_papers.is_empty() {
        t.err(&format!("{}\n", legacy_warning(&d.legacy_private_papers)));
    }
    if d.ok {
        if !json_out {
            t.err("kb doctor: healthy\n");
        }
        Ok(0)
    } else {
        for p in &d.problems {
            t.err(&format!("error: {p}\n"));
        }
        Ok(1)
    }
}

fn seq(s: Option<u64>) -> String {
    s.map_or("none".into(), |v| v.to_string())
}
