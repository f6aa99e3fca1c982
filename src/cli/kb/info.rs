//! `jarvis kb stats` and `jarvis kb schema`.

use std::collections::BTreeMap;

use serde_json::json;

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::trees::DensePath;

use super::emit_json;

pub(crate) fn legacy_warning(keys: &[String]) -> String {
    format!(
        "warning: {} private paper{} from before papers became always public: {} — remove with `jarvis kb remove <source>` and re-add as a public paper, or move the content into the vault as a note",
        keys.len(),
        if keys.len() == 1 { "" } else { "s" },
        keys.join(", ")
    )
}

pub fn stats(json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let s = app.stats()?;
    let totals = &s.totals;
    let (docs_by_type, chunks_by_type, chunks) = (&totals.docs_by_type, &totals.chunks_by_type, totals.chunks);
    let (configured, recorded, usage) = (&s.configured_model, &s.recorded_model, &s.usage);
    if !totals.legacy_private_papers.is_empty() {
        t.err(&format!("{}\n", legacy_warning(&totals.legacy_private_papers)));
    }
    if let Some(m) = &s.mismatch {
        t.err(&format!("warning: {m}\n"));
    }
    if json_out {
        let by_type: BTreeMap<_, _> = chunks_by_type
            .keys()
            .chain(docs_by_type.keys())
            .map(|t| {
                (
                    t.clone(),
                    json!({ "documents": docs_by_type.get(t).copied().unwrap_or(0),
                            "chunks": chunks_by_type.get(t).copied().unwrap_or(0) }),
                )
            })
            .collect();
        emit_json(
            t,
            &json!({
                "documents": totals.documents,
                "chunks": chunks,
                "by_doc_type": by_type,
                "categories": totals.categories,
                "statuses": totals.statuses,
                "embed_model": { "configured": configured, "index": recorded, "mismatch": s.mismatch.is_some() },
                "disk_bytes": usage,
                "dense_search": s.dense,
                "history": s.history,
                "legacy_private_papers": totals.legacy_private_papers,
            }),
        )?;
        return Ok(0);
    }
    let mut out = format!("documents  {}\nchunks     {chunks}\n", totals.documents);
    if !docs_by_type.is_empty() {
        out.push_str("\nby type\n");
        for (t, n) in docs_by_type {
            let c = chunks_by_type.get(t).copied().unwrap_or(0);
            out.push_str(&format!("  {t:<10} {n:>6} documents {c:>8} chunks\n"));
        }
    }
    for (label, counts) in [
        ("record categories", &totals.categories),
        ("record statuses", &totals.statuses),
    ] {
        if !counts.is_empty() {
            out.push_str(&format!("\n{label}\n"));
            for (v, n) in counts {
                out.push_str(&format!("  {v:<24} {n:>6}\n"));
            }
        }
    }
    out.push_str(&format!("\nembedding model  {configured}"));
    match recorded.as_deref() {
        Some(r) if r != configured => {
            out.push_str(&format!(" (the index was built with {r}: run `jarvis kb reindex`)"))
        }
        None if chunks > 0 => out.push_str(" (the index does not record its model: run `jarvis kb reindex`)"),
        _ => {}
    }
    out.push_str(&format!(
        "\nindex size       store {}, BM25 {}, int8 vectors {}, arroy trees {}\n",
        human_bytes(usage.store_bytes),
        human_bytes(usage.bm25_bytes),
        human_bytes(usage.exact_bytes),
        human_bytes(usage.vector_bytes)
    ));
    out.push_str(match s.dense {
        DensePath::Exact => "dense search     exact (every vector scanned, re-scored in f32)\n",
        DensePath::ExactWhileTreesBuild => {
            "dense search     exact while arroy's trees are built in the background (over rag.exact_scan_max)\n"
        }
        DensePath::Trees => {
            "dense search     arroy's trees pick candidates, re-scored exactly (over rag.exact_scan_max)\n"
        }
    });
    let h = &s.history;
    out.push_str(&format!(
        "event log        {} events ({}), kept for undo: {} chunks of {} removed documents ({})\n",
        h.events,
        human_bytes(h.event_bytes),
        h.kept_chunks,
        h.kept_events,
        human_bytes(h.kept_bytes)
    ));
    t.out(&out)?;
    Ok(0)
}

pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["B", "kB", "MB", "GB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

pub fn schema(key: Option<String>, json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let Some(key) = key else {
        let counts = app.schema_keys()?;
        if json_out {
            emit_json(t, &counts)?;
        } else if counts.is_empty() {
            t.err("the knowledge base is empty\n");
        } else {
            t.out(&render_counts("key", &counts))?;
        }
        return Ok(0);
    };
    let values = app.schema_values(&key)?;
    if json_out {
        emit_json(t, &json!({ "key": key, "values": values }))?;
    } else {
        t.out(&render_counts(&key, &values))?;
    }
    Ok(0)
}

fn render_counts(label: &str, counts: &BTreeMap<String, usize>) -> String {
    let width = counts
        .keys()
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0)
        .max(label.len());
    let mut out = format!("{label:<width$}  chunks\n");
    for (k, n) in counts {
        let shown = if k.is_empty() { "(empty)" } else { k };
        out.push_str(&format!("{shown:<width$}  {n:>6}\n"));
    }
    out
}
