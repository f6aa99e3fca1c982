//! `cargo xtask bench kb`: ingest throughput, query latency, index size and
//! peak memory of the knowledge base at 10k and 100k chunks.
//!
//! Embedding 100k chunks for real would take hours on a laptop CPU, so each
//! size is built from synthetic text with synthetic vectors (a random
//! projection of the chunk's words, so similar chunks get similar vectors)
//! committed through the ordinary `Kb` API. On top of that, a sample of
//! chunks is ingested with real embeddings and compared with raw ONNX
//! Runtime throughput on the same texts: the ratio is the knowledge base's
//! overhead (staging, store, both index commits) over embedding alone.
//! Queries are embedded for real by the bundled model. The dense leg is also
//! measured alone, with synthetic query vectors, against exact search
//! (`bench_dense`: the exact int8 scan with its f32 re-score and the
//! crossover it implies for `rag.exact_scan_max`; arroy's trees when the
//! library is over it; `--sweep` tries other search budgets, `--trees 8,16`
//! scratch tree counts). `--scifact` adds the same dense report
//! on real embeddings (the index `eval scifact` caches, its real queries);
//! `--sizes 0` skips the synthetic sizes.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use jarvis::index::bm25::Bm25Index;
use jarvis::index::Filter;
use jarvis::kb::search::SearchRequest;
use jarvis::kb::{Document, Kb, KbSettings};
use jarvis::store::Metadata;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::{self, mib, percentiles};

const WORDS_PER_CHUNK: usize = 60;
const VOCAB: usize = 6000;
const BATCH: usize = 1000;
/// Chunks per document when ingesting with real embeddings.
const DOC_CHUNKS: usize = 16;
/// Chunks per commit, as `index-vault` groups whole files.
const GROUP_CHUNKS: usize = jarvis::ingest::vault::GROUP_CHUNKS;

/// Pseudo-words with a Zipf-like frequency, so BM25 postings look natural.
struct Corpus {
    words: Vec<String>,
    /// Cumulative weights 1/rank.
    cdf: Vec<f64>,
    /// One random unit-ish vector per word, for synthetic chunk vectors.
    word_vecs: Vec<Vec<f32>>,
}

impl Corpus {
    fn new(dims: usize) -> Corpus {
        let mut rng = StdRng::seed_from_u64(7);
        const SYL: &[&str] = &[
            "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zen", "dra", "pol", "quin", "ber", "cor", "fal", "gim",
            "hul", "jor", "lex", "mor", "nax", "ori", "pe", "sul",
        ];
        let words: Vec<String> = (0..VOCAB)
            .map(|i| {
                let n = 2 + i % 3;
                let mut w: String = (0..n).map(|_| SYL[rng.random_range(0..SYL.len())]).collect();
                w.push_str(&format!("{}", i % 10)); // unique, and stemmer-proof
                w
            })
            .collect();
        let mut acc = 0.0;
        let cdf = (1..=VOCAB)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        let word_vecs = (0..VOCAB)
            .map(|_| (0..dims).map(|_| rng.random_range(-1.0f32..1.0)).collect())
            .collect();
        Corpus { words, cdf, word_vecs }
    }

    fn word(&self, rng: &mut StdRng) -> usize {
        let total = self.cdf[self.cdf.len() - 1];
        let x = rng.random_range(0.0..total);
        self.cdf.partition_point(|&c| c < x).min(VOCAB - 1)
    }

    /// Chunk `i`: its text and synthetic vector.
    fn chunk(&self, i: usize) -> (Document, Vec<f32>) {
        let mut rng = StdRng::seed_from_u64(i as u64);
        let ids: Vec<usize> = (0..WORDS_PER_CHUNK).map(|_| self.word(&mut rng)).collect();
        let text = ids
            .iter()
            .map(|&w| self.words[w].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let dims = self.word_vecs[0].len();
        let mut v = vec![0f32; dims];
        for &w in &ids {
            for (a, b) in v.iter_mut().zip(&self.word_vecs[w]) {
                *a += b;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|x| *x /= norm);
        let mut meta = Metadata::new();
        meta.insert("source".into(), format!("bench://doc{}", i / DOC_CHUNKS).into());
        meta.insert("doc_type".into(), "note".into());
        meta.insert("visibility".into(), "public".into());
        let doc = Document {
            embed_text: text.clone(),
            text,
            meta,
        };
        (doc, v)
    }

    /// A 2–4 word query of mid-frequency words, and its synthetic vector
    /// (made like a chunk's, so its neighbours share its words).
    fn query(&self, rng: &mut StdRng) -> (String, Vec<f32>) {
        let n = rng.random_range(2..=4);
        let ids: Vec<usize> = (0..n).map(|_| rng.random_range(50..2000)).collect();
        let text = ids
            .iter()
            .map(|&w| self.words[w].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut v = vec![0f32; self.word_vecs[0].len()];
        for &w in &ids {
            for (a, b) in v.iter_mut().zip(&self.word_vecs[w]) {
                *a += b;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter_mut().for_each(|x| *x /= norm);
        (text, v)
    }
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let sizes: Vec<usize> = match common::flag(args, "--sizes") {
        // `--sizes 0` skips the synthetic indexes (for `--scifact` alone).
        Some(s) => s
            .split(',')
            .map(|x| x.trim().parse())
            .collect::<Result<Vec<usize>, _>>()?
            .into_iter()
            .filter(|&n| n > 0)
            .collect(),
        None => vec![10_000, 100_000],
    };
    let sample: usize = common::flag(args, "--sample").map_or(Ok(GROUP_CHUNKS), str::parse)?;
    let nq: usize = common::flag(args, "--queries").map_or(Ok(200), str::parse)?;
    let work = common::work_dir(root).join("bench");
    let cfg = common::config(root)?;
    let mut embedder = common::load_embedder(&cfg)?;
    let dims = embedder.dims();
    let corpus = Corpus::new(dims);
    let mut qrng = StdRng::seed_from_u64(42);
    let (queries, query_vecs): (Vec<String>, Vec<Vec<f32>>) = (0..nq).map(|_| corpus.query(&mut qrng)).unzip();
    let sweep = args.contains(&"--sweep");
    let trees: Vec<usize> = match common::flag(args, "--trees") {
        Some(s) => s.split(',').map(|x| x.trim().parse()).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    println!(
        "kb bench: model {} ({} dims), {} chunks of {WORDS_PER_CHUNK} synthetic words; {nq} queries, top 10",
        embedder.model_id(),
        dims,
        sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" and ")
    );
    println!("  (the bulk of each index is synthetic vectors; a {sample}-chunk sample is embedded for real)");
    println!("  load average at start: {}", common::load_average());

    // Query embedding alone, to separate model time from index time.
    let mut embed_ms = Vec::new();
    let mut embedded = Vec::with_capacity(queries.len());
    for q in &queries {
        let t = Instant::now();
        embedded.push(embedder.embed_query(q)?);
        embed_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (e50, e95) = percentiles(&mut embed_ms);
    println!("query embedding alone: p50 {e50:.2} ms, p95 {e95:.2} ms");

    let mut embedder = Some(embedder);
    if args.contains(&"--scifact") {
        let emb = embedder.take().context("embedder")?;
        embedder = Some(real_scifact(root, emb, sweep, &trees, &work)?);
    }
    for &n in &sizes {
        let rag = work.join(format!("kb-{n}"));
        if rag.exists() {
            std::fs::remove_dir_all(&rag).with_context(|| format!("clear {}", rag.display()))?;
        }
        println!("\n== {n} chunks ==");
        // Raw ONNX Runtime throughput on the sample texts.
        let sample_docs: Vec<Document> = (n..n + sample).map(|i| corpus.chunk(i).0).collect();
        let texts: Vec<&str> = sample_docs.iter().map(|d| d.embed_text.as_str()).collect();
        let emb = embedder.as_mut().context("embedder")?;
        let t = Instant::now();
        emb.embed_documents(&texts)?;
        let raw_rate = sample as f64 / t.elapsed().as_secs_f64();

        let kb = Kb::open(&rag, embedder.take().context("embedder")?, None, KbSettings::default())?;
        let t = Instant::now();
        for start in (0..n).step_by(BATCH) {
            let (docs, vecs): (Vec<_>, Vec<_>) = (start..(start + BATCH).min(n)).map(|i| corpus.chunk(i)).unzip();
            let prepared = kb.prepare_with_vectors(docs, vecs)?;
            kb.commit(prepared, None, &jarvis::kb::Actor::Cli)?;
        }
        let synth_secs = t.elapsed().as_secs_f64();
        println!(
            "build from synthetic vectors: {:.1} s = {:.0} chunks/s (store + BM25 + vector commits, {BATCH} per commit)",
            synth_secs,
            n as f64 / synth_secs
        );

        // Committed the way `index-vault` commits: documents of
        // DOC_CHUNKS chunks, many whole documents per commit (up to the
        // vault's group size), so the trees are built once per group.
        let t = Instant::now();
        let (mut embed_secs, mut commit_secs) = (0.0, 0.0);
        for group in sample_docs.chunks(GROUP_CHUNKS) {
            let docs: Vec<Vec<Document>> = group.chunks(DOC_CHUNKS).map(<[Document]>::to_vec).collect();
            let te = Instant::now();
            let prepared = kb.prepare_groups(docs, &jarvis::cancel::Cancel::new())?;
            embed_secs += te.elapsed().as_secs_f64();
            let tc = Instant::now();
            kb.commit_many(
                prepared.into_iter().map(|p| (p, None)).collect(),
                &jarvis::kb::Actor::Cli,
            )?;
            commit_secs += tc.elapsed().as_secs_f64();
        }
        let ingest_rate = sample as f64 / t.elapsed().as_secs_f64();
        // Back to back, so robust to the load drifting between the raw
        // measurement above and this one.
        let split = format!(
            "  of which embedding {embed_secs:.1} s and the commit (store + BM25 + vector trees at {n}) {commit_secs:.1} s → the knowledge base adds {:.0}% over its own embedding",
            100.0 * commit_secs / embed_secs.max(1e-9)
        );
        println!(
            "ingest with real embeddings: {ingest_rate:.1} chunks/s vs raw ORT {raw_rate:.1} chunks/s on the same {sample} texts → {:.0}% of raw ORT (×{:.2}; documents of {DOC_CHUNKS} chunks, up to {GROUP_CHUNKS} chunks per commit as index-vault groups them)",
            100.0 * ingest_rate / raw_rate,
            raw_rate / ingest_rate
        );
        println!("{split}");

        let lat = |hybrid: bool| -> Result<(f64, f64)> {
            let mut ms = Vec::new();
            for q in &queries {
                let mut req = SearchRequest::new(q.clone(), 10);
                req.rerank = false;
                req.hybrid = Some(hybrid);
                let t = Instant::now();
                kb.search(&req)?;
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Ok(percentiles(&mut ms))
        };
        // One untimed pass first: the timed loops below then all meet the
        // same warm caches (store blocks, the int8 copy's pages). Without it
        // whichever loop ran first paid for the cold reads, and `kb.search`
        // looked ~4 ms slower than its parts measured after it.
        lat(true)?;
        let (d50, d95) = lat(false)?;
        let (h50, h95) = lat(true)?;
        // The same searches with the query vectors computed beforehand.
        let lat_embedded = |hybrid: bool| -> Result<(f64, f64)> {
            let mut ms = Vec::new();
            for (q, qv) in queries.iter().zip(&embedded) {
                let mut req = SearchRequest::new(q.clone(), 10);
                req.rerank = false;
                req.hybrid = Some(hybrid);
                let t = Instant::now();
                kb.search_embedded(&req, qv)?;
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            Ok(percentiles(&mut ms))
        };
        let (dn50, dn95) = lat_embedded(false)?;
        let (hn50, hn95) = lat_embedded(true)?;
        let agreement = kb.agreement()?;
        // Every stored vector, for exact search in the dense report.
        let mut all = Vec::with_capacity(n + sample);
        for id in kb.store().all_ids()? {
            if let Some(v) = kb.store().vector(id)? {
                all.push((jarvis::index::ChunkId(id), v));
            }
        }
        let gen = kb.store().generation()?;
        embedder = Some(kb.into_embedder()?);
        // Query embedding alone again, now that the model has embedded
        // documents and the machine has worked for a while: kb.search's
        // figures include exactly this.
        let emb = embedder.as_mut().context("embedder")?;
        let mut ms = Vec::with_capacity(queries.len());
        for q in &queries {
            let t = Instant::now();
            emb.embed_query(q)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let (ea50, ea95) = percentiles(&mut ms);

        // BM25 alone, straight on the index (the KB is closed, so its
        // writer lock is free).
        let index = rag.join("index").join(format!("g{gen}"));
        let bm25 = Bm25Index::open_or_create(&index.join("bm25"))?;
        let mut ms = Vec::new();
        for q in &queries {
            let t = Instant::now();
            bm25.search(q, &Filter::default(), 10)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        drop(bm25);
        let (b50, b95) = percentiles(&mut ms);
        println!("query latency (ms)     p50      p95");
        println!("  bm25 (index only) {b50:>7.2}  {b95:>7.2}");
        println!("  dense (kb.search) {d50:>7.2}  {d95:>7.2}   includes query embedding");
        println!("  hybrid (kb.search){h50:>7.2}  {h95:>7.2}   includes query embedding, every leg, RRF, store reads");
        println!("  dense  (embedded) {dn50:>7.2}  {dn95:>7.2}   kb.search_embedded: query vector computed beforehand");
        println!("  hybrid (embedded) {hn50:>7.2}  {hn95:>7.2}   kb.search_embedded: query vector computed beforehand");
        println!(
            "  query embedding   {ea50:>7.2}  {ea95:>7.2}   alone, right after (load average {})",
            common::load_average()
        );
        // kb.search for 10 results asks the dense leg for MIN_LEG neighbours.
        crate::bench_dense::report(
            &index.join("vectors"),
            dims,
            &all,
            &query_vecs,
            jarvis::kb::search::MIN_LEG,
            sweep,
            &trees,
            &work,
        )?;
        let store = common::disk_usage(&rag.join("store"));
        let b = common::disk_usage(&index.join("bm25"));
        let v = common::disk_usage(&index.join("vectors"));
        let x = common::disk_usage(&index.join("flat"));
        println!(
            "on disk: {:.1} MiB total = store {:.1} + bm25 {:.1} + int8 copy {:.1} + arroy trees {:.1} ({} chunks, agreement {})",
            mib(store + b + v + x),
            mib(store),
            mib(b),
            mib(x),
            mib(v),
            agreement.store_chunks,
            if agreement.ok() { "ok" } else { "NOT ok" }
        );
        if let Some(rss) = common::peak_rss() {
            println!("peak RSS so far (VmHWM): {:.0} MiB", mib(rss));
        }
    }
    Ok(())
}

/// The dense leg on real embeddings: the SciFact index `cargo xtask eval
/// scifact` cached (5,183 abstracts embedded by the bundled model) and its
/// test queries embedded for real, against exact search over the same
/// vectors. Synthetic vectors may be harder or easier for trees than
/// real ones; this says which.
fn real_scifact(
    root: &Path,
    embedder: jarvis::embed::Embedder,
    sweep: bool,
    trees: &[usize],
    work: &Path,
) -> Result<jarvis::embed::Embedder> {
    let rag = common::work_dir(root).join("scifact").join("rag");
    let queries_file = common::shared_data(root, "scifact").join("queries.jsonl");
    if !rag.is_dir() || !queries_file.is_file() {
        println!(
            "\n(--scifact: no cached SciFact index at {}; run `cargo xtask eval scifact` first)",
            rag.display()
        );
        return Ok(embedder);
    }
    let kb = Kb::open(&rag, embedder, None, KbSettings::default())?;
    let mut all = Vec::new();
    for id in kb.store().all_ids()? {
        if let Some(v) = kb.store().vector(id)? {
            all.push((jarvis::index::ChunkId(id), v));
        }
    }
    let gen = kb.store().generation()?;
    let mut embedder = kb.into_embedder()?;
    let text = std::fs::read_to_string(&queries_file).with_context(|| format!("read {}", queries_file.display()))?;
    let mut qv = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)?;
        if let Some(q) = v.get("text").and_then(|t| t.as_str()) {
            qv.push(embedder.embed_query(q)?);
        }
    }
    println!(
        "\n== SciFact, real embeddings: {} vectors, {} real queries ==",
        all.len(),
        qv.len()
    );
    let vectors = rag.join("index").join(format!("g{gen}")).join("vectors");
    crate::bench_dense::report(&vectors, embedder.dims(), &all, &qv, 50, sweep, trees, work)?;
    Ok(embedder)
}
