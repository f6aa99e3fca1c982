//! `jarvis kb stats` and `jarvis kb schema`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::json;

use crate::config::Config;
use crate::index::Filter;
use crate::kb::{scalar_string, Kb};

use super::{emit_json, open};

/// Papers are always public; a private one predates that invariant.
pub(crate) fn legacy_private_papers(kb: &Kb) -> anyhow::Result<Vec<String>> {
    let f = Filter {
        doc_types: vec!["paper".into()],
        visibility: Some("private".into()),
        ..Filter::default()
    };
    Ok(kb.list_documents(&f, usize::MAX)?.into_iter().map(|d| d.key).collect())
}

pub(crate) fn legacy_warning(keys: &[String]) -> String {
    format!(
        "warning: {} private paper{} from before papers became always public: {} — remove with `jarvis kb remove <source>` and re-add as a public paper, or move the content into the vault as a note",
        keys.len(),
        if keys.len() == 1 { "" } else { "s" },
        keys.join(", ")
    )
}

pub fn stats(json_out: bool, config: &Config) -> anyhow::Result<ExitCode> {
    let kb = open(config)?;
    let docs = kb.list_documents(&Filter::default(), usize::MAX)?;
    let chunks = kb.count()?;
    let chunks_by_type = kb.metadata_value_counts("doc_type")?;
    let mut docs_by_type: BTreeMap<String, usize> = BTreeMap::new();
    let mut categories: BTreeMap<String, usize> = BTreeMap::new();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for d in &docs {
        *docs_by_type.entry(d.doc_type.clone()).or_default() += 1;
        if let Some(c) = d.meta.get("category") {
            *categories.entry(scalar_string(c)).or_default() += 1;
        }
        if let Some(s) = d.meta.get("status") {
            *statuses.entry(scalar_string(s)).or_default() += 1;
        }
    }
    let configured = kb.model_id();
    let recorded = kb.store().meta_string("embed_model")?;
    let mismatch = kb.check_model().err().map(|e| e.to_string());
    let usage = kb.disk_usage()?;
    let legacy = legacy_private_papers(&kb)?;
    drop(kb);

    if !legacy.is_empty() {
        eprintln!("{}", legacy_warning(&legacy));
    }
    if let Some(m) = &mismatch {
        eprintln!("warning: {m}");
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
        emit_json(&json!({
            "documents": docs.len(),
            "chunks": chunks,
            "by_doc_type": by_type,
            "categories": categories,
            "statuses": statuses,
            "embed_model": { "configured": configured, "index": recorded, "mismatch": mismatch.is_some() },
            "disk_bytes": usage,
            "legacy_private_papers": legacy,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!("documents  {}\nchunks     {chunks}\n", docs.len());
    if !docs_by_type.is_empty() {
        out.push_str("\nby type\n");
        for (t, n) in &docs_by_type {
            let c = chunks_by_type.get(t).copied().unwrap_or(0);
            out.push_str(&format!("  {t:<10} {n:>6} documents {c:>8} chunks\n"));
        }
    }
    for (label, counts) in [("record categories", &categories), ("record statuses", &statuses)] {
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
        "\nindex size       store {}, BM25 {}, vectors {}\n",
        human_bytes(usage.store_bytes),
        human_bytes(usage.bm25_bytes),
        human_bytes(usage.vector_bytes)
    ));
    super::super::emit(&out)?;
    Ok(ExitCode::SUCCESS)
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

pub fn schema(key: Option<String>, json_out: bool, config: &Config) -> anyhow::Result<ExitCode> {
    let kb = open(config)?;
    let Some(key) = key else {
        let counts = kb.metadata_key_counts()?;
        drop(kb);
        if json_out {
            emit_json(&counts)?;
        } else if counts.is_empty() {
            eprintln!("the knowledge base is empty");
        } else {
            super::super::emit(&render_counts("key", &counts))?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let values = kb.metadata_value_counts(&key)?;
    if values.is_empty() {
        let keys = kb.metadata_key_counts()?;
        drop(kb);
        let guess = keys
            .keys()
            .map(|k| (strsim::jaro_winkler(k, &key), k))
            .filter(|(s, _)| *s > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| format!(" (did you mean `{k}`?)"))
            .unwrap_or_default();
        anyhow::bail!("no chunk carries the metadata key `{key}`{guess} — `jarvis kb schema` lists every key");
    }
    drop(kb);
    if json_out {
        emit_json(&json!({ "key": key, "values": values }))?;
    } else {
        super::super::emit(&render_counts(&key, &values))?;
    }
    Ok(ExitCode::SUCCESS)
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
