//! `jarvis kb reindex`, `jarvis kb doctor` and the hidden `kb __probe`:
//! each calls `App` (`prepare_model` + `reindex`, `doctor`, `probe_line`)
//! and renders what it returns — the diagnosis itself, the probe child
//! and its report are `app::doctor`'s.

use serde_json::json;

use crate::app::doctor::{AgreementCheck, ProbeVerdict, ProbeWhere, PROBE_FAILED};
use crate::app::App;
use crate::cli::term::{Access, Term};
use crate::kb::maintain::Agreement;

use super::emit_json;
use super::info::legacy_warning;

pub fn reindex(json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    app.check_reindex_model()?;
    // A registry model named in rag.embed_model is fetched (and verified)
    // first, so switching models is a config change plus this command.
    let dl = t.bar(Some(
        "downloading {msg} {bar:40} {bytes}/{total_bytes}, {bytes_per_sec}, eta {eta}",
    ));
    let fetched = app.prepare_model(&|file, done, total| {
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
        emit_json(t, &report)?;
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

/// The child side of doctor's probe: open, count, search; one JSON line.
pub fn probe(app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    // Lets the tests crash the probe the way a damaged native index would.
    crate::kb::failpoint("kb_probe");
    match app.probe_line() {
        Ok(line) => {
            t.out(&format!("{line}\n"))?;
            Ok(0)
        }
        Err(line) => {
            t.out(&format!("{line}\n"))?;
            Ok(PROBE_FAILED)
        }
    }
}

/// `kb doctor --json`.
#[derive(Debug, Default, serde::Serialize)]
struct Doctor {
    ok: bool,
    /// How the index was reached: `direct`, or `via jarvis sync, pid N`.
    access: String,
    rag_dir: String,
    probe: serde_json::Value,
    store: Option<serde_json::Value>,
    agreement: Option<Agreement>,
    /// The event log replayed against the store.
    audit: Option<crate::kb::AuditReport>,
    legacy_private_papers: Vec<String>,
    problems: Vec<String>,
}

pub fn doctor(json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let place = match t.access() {
        Access::Direct => ProbeWhere::Child,
        Access::Owner { .. } => ProbeWhere::Owner,
    };
    let diag = app.doctor(place)?;
    let rag_dir = diag.rag_dir.display().to_string();
    let mut lines = Vec::new();
    let access = match t.access() {
        Access::Direct => {
            lines.push(format!(
                "access     direct — this process opened {rag_dir} itself (no running jarvis serve/sync to go through)"
            ));
            "direct".to_string()
        }
        Access::Owner { role, pid } => {
            lines.push(format!(
                "access     via jarvis {role}, pid {pid} — the owner ran this with the knowledge base it keeps open at {rag_dir}"
            ));
            format!("via jarvis {role}, pid {pid}")
        }
    };
    let p = &diag.probe;
    match &p.verdict {
        ProbeVerdict::Crashed { stderr_tail } => {
            lines.push(format!(
                "probe      FAILED — the search probe (child pid {}) ended with {}",
                p.pid, p.ending
            ));
            lines.extend(stderr_tail.iter().map(|l| format!("           │ {l}")));
        }
        ProbeVerdict::Ok { hits, search_ms } => lines.push(format!(
            "probe      ok — a search in {} (pid {}) returned {hits} hit{} in {search_ms} ms",
            match p.place {
                ProbeWhere::Child => "a child process",
                ProbeWhere::Owner => "the owner process",
            },
            p.pid,
            if *hits == 1 { "" } else { "s" },
        )),
        ProbeVerdict::Failed(e) => lines.push(format!("probe      FAILED — {e}")),
    }
    let mut store = None;
    match &diag.store {
        None => {}
        Some(Err(msg)) => lines.push(format!("store      FAILED — {msg}")),
        Some(Ok(s)) => {
            lines.push(format!(
                "store      ok — {} document{}, {} chunk{}, embedding model {}",
                s.documents,
                if s.documents == 1 { "" } else { "s" },
                s.chunks,
                if s.chunks == 1 { "" } else { "s" },
                s.embed_model
            ));
            store = Some(json!({ "documents": s.documents, "chunks": s.chunks, "embed_model": s.embed_model }));
        }
    }
    let mut agreement = None;
    match &diag.agreement {
        None => {}
        Some(AgreementCheck::Skipped) => {
            lines.push("agreement  skipped — the vectors are unusable until a reindex".into());
        }
        Some(AgreementCheck::Checked(a)) => {
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
            agreement = Some(a.clone());
        }
    }
    if let Some(a) = &diag.audit {
        lines.push(format!(
            "event log  {} — {} events, {} documents as the log says; missing {}, extra {}, differing {}",
            if a.ok() { "ok" } else { "FAILED" },
            a.events,
            a.matched,
            a.missing.len(),
            a.extra.len(),
            a.differing.len()
        ));
    }
    let d = Doctor {
        ok: diag.ok(),
        access,
        rag_dir,
        probe: json!({ "pid": p.pid, "ending": p.ending, "elapsed_ms": p.elapsed_ms, "report": p.report }),
        store,
        agreement,
        audit: diag.audit.clone(),
        legacy_private_papers: diag.legacy_private_papers.clone(),
        problems: diag.problems.clone(),
    };

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
