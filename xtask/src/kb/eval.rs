//! `cargo xtask eval scifact`: nDCG@10, Recall@100 and MRR@10 of BM25,
//! dense and hybrid retrieval on the BEIR SciFact test split.
//!
//! Each abstract is one chunk (title + text), as BEIR embeds it: the model
//! truncates past its max tokens, BM25 sees the whole text. The embedded
//! knowledge base is cached under `target/xtask-kb/` and rebuilt when the
//! corpus or model changes (or with `--rebuild`). Besides the product's own
//! hybrid (`Kb::search`), a few RRF variants are fused from the same two
//! legs for comparison — reported, not special-cased.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use jarvis::index::bm25::Bm25Index;
use jarvis::index::fuse::rrf;
use jarvis::index::{ChunkId, Filter};
use jarvis::kb::search::SearchRequest;
use jarvis::kb::{Document, Kb};
use jarvis::store::Metadata;

use crate::common;

const DEPTH: usize = 100;

struct Data {
    /// (doc id, title, text)
    corpus: Vec<(String, String, String)>,
    /// query id → text, for queries that have judgements.
    queries: Vec<(String, String)>,
    /// query id → doc id → grade.
    qrels: HashMap<String, HashMap<String, u32>>,
}

fn read_jsonl(path: &Path) -> Result<Vec<serde_json::Value>> {
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    std::io::BufReader::new(f)
        .lines()
        .filter(|l| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
        .map(|l| Ok(serde_json::from_str(&l?)?))
        .collect()
}

fn load(dir: &Path) -> Result<Data> {
    let s = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
    let corpus = read_jsonl(&dir.join("corpus.jsonl"))?
        .iter()
        .map(|v| (s(v, "_id"), s(v, "title"), s(v, "text")))
        .collect();
    let mut qrels: HashMap<String, HashMap<String, u32>> = HashMap::new();
    let tsv = std::fs::read_to_string(dir.join("qrels/test.tsv")).context("read qrels/test.tsv")?;
    for line in tsv.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if let [q, d, score] = f.as_slice() {
            let g: u32 = score.trim().parse().unwrap_or(0);
            if g > 0 {
                qrels.entry(q.to_string()).or_default().insert(d.to_string(), g);
            }
        }
    }
    let queries = read_jsonl(&dir.join("queries.jsonl"))?
        .iter()
        .map(|v| (s(v, "_id"), s(v, "text")))
        .filter(|(id, _)| qrels.contains_key(id))
        .collect();
    Ok(Data { corpus, queries, qrels })
}

#[derive(Default)]
struct Scores {
    ndcg10: f64,
    recall100: f64,
    mrr10: f64,
}

fn score(data: &Data, runs: &[Vec<String>]) -> Scores {
    let mut s = Scores::default();
    for ((qid, _), ranked) in data.queries.iter().zip(runs) {
        let rel = &data.qrels[qid];
        let gain = |d: &String| rel.get(d).copied().unwrap_or(0) as f64;
        let dcg: f64 = ranked
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, d)| (2f64.powf(gain(d)) - 1.0) / (i as f64 + 2.0).log2())
            .sum();
        let mut ideal: Vec<f64> = rel.values().map(|&g| g as f64).collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let idcg: f64 = ideal
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, g)| (2f64.powf(*g) - 1.0) / (i as f64 + 2.0).log2())
            .sum();
        s.ndcg10 += if idcg > 0.0 { dcg / idcg } else { 0.0 };
        let found = ranked.iter().take(DEPTH).filter(|d| rel.contains_key(*d)).count();
        s.recall100 += found as f64 / rel.len() as f64;
        s.mrr10 += ranked
            .iter()
            .take(10)
            .position(|d| rel.contains_key(d))
            .map_or(0.0, |p| 1.0 / (p as f64 + 1.0));
    }
    let n = data.queries.len().max(1) as f64;
    Scores {
        ndcg10: s.ndcg10 / n,
        recall100: s.recall100 / n,
        mrr10: s.mrr10 / n,
    }
}

/// A fingerprint of what the cached KB was built from.
fn stamp(data_dir: &Path, model: &str) -> Result<String> {
    let m = std::fs::metadata(data_dir.join("corpus.jsonl"))?;
    Ok(format!(
        "corpus {} bytes, model {model}, one chunk per abstract v1\n",
        m.len()
    ))
}

fn build(kb: &Kb, data: &Data) -> Result<()> {
    let t = Instant::now();
    for (n, batch) in data.corpus.chunks(64).enumerate() {
        let docs = batch
            .iter()
            .map(|(id, title, text)| {
                let body = format!("{title}\n{text}");
                let mut meta = Metadata::new();
                meta.insert("source".into(), format!("scifact:{id}").into());
                meta.insert("doc_type".into(), "paper".into());
                meta.insert("visibility".into(), "public".into());
                meta.insert("title".into(), title.clone().into());
                Document {
                    embed_text: body.clone(),
                    text: body,
                    meta,
                }
            })
            .collect();
        let prepared = kb.prepare(docs, &jarvis::cancel::Cancel::new())?;
        kb.commit(prepared, None, &jarvis::kb::Actor::Cli)?;
        let done = ((n + 1) * 64).min(data.corpus.len());
        if n % 8 == 7 || done == data.corpus.len() {
            let secs = t.elapsed().as_secs_f64();
            eprintln!(
                "  embedded {done}/{} abstracts ({:.1}/s)",
                data.corpus.len(),
                done as f64 / secs
            );
        }
    }
    Ok(())
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let data_dir = common::flag(args, "--data")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::shared_data(root, "scifact"));
    if !data_dir.join("corpus.jsonl").is_file() {
        bail!("no SciFact data at {} (pass --data DIR)", data_dir.display());
    }
    let data = load(&data_dir)?;
    println!(
        "SciFact: {} abstracts, {} test queries with judgements ({})",
        data.corpus.len(),
        data.queries.len(),
        data_dir.display()
    );
    let cfg = common::config(root)?;
    let embedder = common::load_embedder(&cfg)?;
    let model = embedder.model_id().to_string();
    let cache = common::work_dir(root).join("scifact");
    let rag = cache.join("rag");
    let want = stamp(&data_dir, &model)?;
    let fresh = args.contains(&"--rebuild") || std::fs::read_to_string(cache.join("STAMP")).ok() != Some(want.clone());
    if fresh && cache.exists() {
        std::fs::remove_dir_all(&cache).context("clear the cached KB")?;
    }
    let settings = crate::eval_vault::settings_from_args(args)?;
    println!(
        "field boosts {:?}, exact-name weight {}, exact-heading weight {}, RRF k {}",
        settings.field_boosts, settings.exact_name_weight, settings.exact_heading_weight, settings.rrf_k
    );
    let rrf_k = settings.rrf_k;
    let boosts = settings.field_boosts;
    common::retree(&rag, embedder.dims())?;
    let kb = Kb::open(&rag, embedder, None, settings)?;
    if fresh {
        println!("embedding the corpus into {} (cached for reruns)…", rag.display());
        build(&kb, &data)?;
        std::fs::write(cache.join("STAMP"), &want)?;
    }

    // chunk id → corpus id, to score documents.
    let mut doc_of: HashMap<u64, String> = HashMap::new();
    for rec in kb.store().iter_chunks() {
        let rec = rec?;
        if let Some(s) = rec.meta_str("source").and_then(|s| s.strip_prefix("scifact:")) {
            doc_of.insert(rec.id, s.to_string());
        }
    }
    let to_docs = |ids: &[ChunkId]| -> Vec<String> {
        let mut seen = HashSet::new();
        ids.iter()
            .filter_map(|c| doc_of.get(&c.0).cloned())
            .filter(|d| seen.insert(d.clone()))
            .collect()
    };

    let t = Instant::now();
    let mut dense_runs = Vec::new();
    let mut hybrid_runs = Vec::new();
    let mut dense_ids: Vec<Vec<ChunkId>> = Vec::new();
    for (_, q) in &data.queries {
        let mut req = SearchRequest::new(q.clone(), DEPTH);
        req.rerank = false;
        req.hybrid = Some(false);
        let ids: Vec<ChunkId> = kb.search(&req)?.iter().map(|h| ChunkId(h.record.id)).collect();
        dense_runs.push(to_docs(&ids));
        dense_ids.push(ids);
        req.hybrid = Some(true);
        let ids: Vec<ChunkId> = kb.search(&req)?.iter().map(|h| ChunkId(h.record.id)).collect();
        hybrid_runs.push(to_docs(&ids));
    }
    let gen = kb.store().generation()?;
    drop(kb);
    let mut bm25 = Bm25Index::open_or_create(&rag.join("index").join(format!("g{gen}")).join("bm25"))?;
    bm25.set_boosts(boosts);
    let mut bm25_ids = Vec::new();
    for (_, q) in &data.queries {
        let ids: Vec<ChunkId> = bm25
            .search(q, &Filter::default(), DEPTH)?
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        bm25_ids.push(ids);
    }
    let bm25_runs: Vec<Vec<String>> = bm25_ids.iter().map(|ids| to_docs(ids)).collect();
    let secs = t.elapsed().as_secs_f64();

    let mut rows: BTreeMap<usize, (String, Scores)> = BTreeMap::new();
    rows.insert(0, ("bm25".into(), score(&data, &bm25_runs)));
    rows.insert(1, ("dense".into(), score(&data, &dense_runs)));
    rows.insert(
        2,
        (
            format!("hybrid (Kb::search, RRF k={rrf_k})"),
            score(&data, &hybrid_runs),
        ),
    );
    // Variants fused from the same legs, for tuning.
    for (i, (k, wd, wb)) in [
        (10.0, 1.0, 1.0),
        (30.0, 1.0, 1.0),
        (100.0, 1.0, 1.0),
        (60.0, 0.7, 1.0),
        (60.0, 1.0, 0.7),
    ]
    .into_iter()
    .enumerate()
    .map(|(j, v)| (j + 3, v))
    {
        let runs: Vec<Vec<String>> = dense_ids
            .iter()
            .zip(&bm25_ids)
            .map(|(d, b)| {
                let fused: Vec<ChunkId> = rrf(&[(d, wd), (b, wb)], k).into_iter().map(|(c, _)| c).collect();
                to_docs(&fused)
            })
            .collect();
        rows.insert(
            i,
            (format!("  rrf k={k} w_dense={wd} w_bm25={wb}"), score(&data, &runs)),
        );
    }
    println!(
        "\n{:<40} {:>8} {:>10} {:>8}",
        "system", "nDCG@10", "Recall@100", "MRR@10"
    );
    for (name, s) in rows.values() {
        println!("{name:<40} {:>8.4} {:>10.4} {:>8.4}", s.ndcg10, s.recall100, s.mrr10);
    }
    println!("\n({} queries × 3 systems in {secs:.1} s)", data.queries.len());
    Ok(())
}
