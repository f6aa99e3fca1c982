//! `cargo xtask eval dump scifact|vault --out DIR`: every query's raw legs
//! (all dense cosines in the order of `chunks.jsonl`, BM25 top 400 with scores, exact-name and
//! exact-heading matches, the query vector) and every chunk's document
//! (`--vectors`: and its normalised vector), as JSON lines, so
//! fusion and aggregation ideas can be tried offline on the very numbers
//! the product fuses. Reads the caches `eval scifact` / `eval vault` built.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use jarvis::index::bm25::Bm25Index;
use jarvis::index::Filter;
use jarvis::kb::eval::parse_known_items;
use jarvis::kb::Kb;

use crate::common;

const DEPTH: usize = 400;

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let which = args.first().copied().unwrap_or("");
    let out = PathBuf::from(common::flag(args, "--out").context("--out DIR")?);
    std::fs::create_dir_all(&out)?;
    let cfg = common::config(root)?;
    let embedder = common::load_embedder(&cfg)?;
    let settings = crate::eval_vault::settings_from_args(args)?;
    let boosts = settings.field_boosts;
    // (set, qid, query, relevant doc → grade)
    let mut queries: Vec<(String, String, String, HashMap<String, u32>)> = Vec::new();
    let rag = match which {
        "scifact" => {
            let dir = common::shared_data(root, "scifact");
            let mut rel: HashMap<String, HashMap<String, u32>> = HashMap::new();
            let tsv = std::fs::read_to_string(dir.join("qrels/test.tsv"))?;
            for line in tsv.lines().skip(1) {
                if let [q, d, g] = line.split('\t').collect::<Vec<_>>().as_slice() {
                    let g: u32 = g.trim().parse().unwrap_or(0);
                    if g > 0 {
                        rel.entry(q.to_string()).or_default().insert(format!("scifact:{d}"), g);
                    }
                }
            }
            for line in std::fs::read_to_string(dir.join("queries.jsonl"))?.lines() {
                if line.trim().is_empty() {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(line)?;
                let id = v["_id"].as_str().unwrap_or("").to_string();
                if let Some(r) = rel.get(&id) {
                    queries.push(("scifact".into(), id, v["text"].as_str().unwrap_or("").into(), r.clone()));
                }
            }
            common::work_dir(root)
                .join(common::flag(args, "--cache").unwrap_or("scifact"))
                .join("rag")
        }
        "vault" => {
            let data = common::shared_data(root, "obsidian-help");
            for name in ["anchors", "aliases"] {
                let set = parse_known_items(&std::fs::read_to_string(data.join(format!("{name}.jsonl")))?)?;
                for q in set.queries {
                    queries.push((name.into(), q.id, q.query, q.relevant.into_iter().collect()));
                }
            }
            common::work_dir(root)
                .join(common::flag(args, "--cache").unwrap_or("vault-eval"))
                .join("rag")
        }
        _ => bail!("eval dump takes scifact or vault"),
    };
    common::retree(&rag, embedder.dims())?;
    let kb = Kb::open(&rag, embedder, None, settings)?;
    let mut chunks = std::io::BufWriter::new(std::fs::File::create(out.join("chunks.jsonl"))?);
    let mut ids = Vec::new();
    let mut vectors = Vec::new();
    for rec in kb.store().iter_chunks() {
        let rec = rec?;
        let key = jarvis::kb::search::doc_key(&rec).to_string();
        let line = serde_json::json!({
            "id": rec.id,
            "doc": key,
            "chunk_index": rec.meta_i64("chunk_index").unwrap_or(0),
            "section": rec.meta_str("section").unwrap_or(""),
            "title": rec.meta_str("title").unwrap_or(""),
            "chars": rec.text.chars().count(),
            "embed_chars": rec.embed_text.chars().count(),
            "text": if rec.embed_text.is_empty() { &rec.text } else { &rec.embed_text },
        });
        writeln!(chunks, "{line}")?;
        let v = kb.store().vector(rec.id)?.context("a chunk without a vector")?;
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        vectors.push(v.into_iter().map(|x| x / n).collect::<Vec<f32>>());
        ids.push(rec.id);
    }
    chunks.flush()?;
    if args.contains(&"--vectors") {
        let mut vw = std::io::BufWriter::new(std::fs::File::create(out.join("vectors.jsonl"))?);
        for v in &vectors {
            writeln!(vw, "{}", serde_json::json!(v))?;
        }
        vw.flush()?;
    }
    let mut dense_all = Vec::new();
    let mut qvecs = Vec::new();
    for (_, _, q, _) in &queries {
        let qv = kb.embed_query(q)?;
        qvecs.push(qv.clone());
        let n = qv.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        let cos: Vec<f32> = vectors
            .iter()
            .map(|v| v.iter().zip(&qv).map(|(a, b)| a * b).sum::<f32>() / n)
            .collect();
        dense_all.push(cos);
    }
    let gen = kb.store().generation()?;
    drop(kb);
    let mut bm25 = Bm25Index::open_or_create(&rag.join("index").join(format!("g{gen}")).join("bm25"))?;
    bm25.set_boosts(boosts);
    let mut w = std::io::BufWriter::new(std::fs::File::create(out.join("queries.jsonl"))?);
    let f = Filter::default();
    for (((set, qid, q, rel), cos), qv) in queries.iter().zip(dense_all).zip(qvecs) {
        let sparse: Vec<(u64, f32)> = bm25.search(q, &f, DEPTH)?.into_iter().map(|(c, s)| (c.0, s)).collect();
        let exact: Vec<u64> = bm25
            .exact_name_matches(q, &f, DEPTH)?
            .into_iter()
            .map(|c| c.0)
            .collect();
        let heading: Vec<u64> = bm25
            .exact_heading_matches(q, &f, DEPTH)?
            .into_iter()
            .map(|c| c.0)
            .collect();
        let cos: Vec<f32> = cos.into_iter().map(|c| (c * 1e5).round() / 1e5).collect();
        let line = serde_json::json!({
            "set": set, "qid": qid, "query": q, "rel": rel,
            "cos": cos, "qv": qv, "bm25": sparse, "exact": exact, "heading": heading,
        });
        writeln!(w, "{line}")?;
    }
    w.flush()?;
    println!("{} queries, {} chunks → {}", queries.len(), ids.len(), out.display());
    Ok(())
}
