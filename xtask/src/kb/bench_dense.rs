//! The dense leg of `bench kb` on its own: latency straight on the vector
//! index (no query embedding, no store reads) and recall@10 against exact
//! search, for the product's settings and, with `--sweep`, for other search
//! budgets and tree counts — so a speed figure never hides a recall loss.

use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use jarvis::index::vector::{BuildParams, SearchParams, VectorIndex};
use jarvis::index::ChunkId;

use crate::common::{disk_usage, mib, percentiles};

/// Top-`k` ids by cosine over every vector (the vectors are unit length).
fn exact(all: &[(ChunkId, Vec<f32>)], q: &[f32], k: usize) -> Vec<ChunkId> {
    let mut best: Vec<(f32, ChunkId)> = Vec::with_capacity(k + 1);
    for (id, v) in all {
        let s: f32 = q.iter().zip(v).map(|(a, b)| a * b).sum();
        if best.len() < k || s > best[best.len() - 1].0 {
            let at = best.partition_point(|(b, _)| *b >= s);
            best.insert(at, (s, *id));
            best.truncate(k);
        }
    }
    best.into_iter().map(|(_, id)| id).collect()
}

/// Exact top-10 of every query.
pub fn truth(all: &[(ChunkId, Vec<f32>)], queries: &[Vec<f32>]) -> Vec<Vec<ChunkId>> {
    queries.iter().map(|q| exact(all, q, 10)).collect()
}

/// (p50 ms, p95 ms, recall@10) of `queries` asking the index for `count`
/// neighbours (the top 10 of them scored against `truth`).
fn measure(index: &VectorIndex, queries: &[Vec<f32>], truth: &[Vec<ChunkId>], count: usize) -> Result<(f64, f64, f64)> {
    let mut ms = Vec::with_capacity(queries.len());
    let mut found = 0usize;
    for (q, t) in queries.iter().zip(truth) {
        let start = Instant::now();
        let hits = index.search(q, None, count)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        found += hits.iter().take(10).filter(|(id, _)| t.contains(id)).count();
    }
    let (p50, p95) = percentiles(&mut ms);
    Ok((p50, p95, found as f64 / (10 * queries.len().max(1)) as f64))
}

fn row(index: &VectorIndex, queries: &[Vec<f32>], truth: &[Vec<ChunkId>], count: usize, label: &str) -> Result<()> {
    let (p50, p95, recall) = measure(index, queries, truth, count)?;
    println!("  {label:<44} {p50:>7.2}  {p95:>7.2}   recall@10 {recall:.3}");
    Ok(())
}

fn sweep(index: &mut VectorIndex, queries: &[Vec<f32>], truth: &[Vec<ChunkId>], leg: usize) -> Result<()> {
    let product = index.search_params();
    for count in [10, leg] {
        for over in [1usize, 2, 4, 8] {
            index.set_search_params(SearchParams {
                oversampling: NonZeroUsize::new(over).unwrap_or(NonZeroUsize::MIN),
                ..product
            });
            row(
                index,
                queries,
                truth,
                count,
                &format!("count {count}, oversampling {over}"),
            )?;
        }
    }
    index.set_search_params(product);
    Ok(())
}

/// Reports the dense index in `dir` (the knowledge base's own), and with
/// `trees` builds scratch copies with those tree counts under `scratch`.
#[allow(clippy::too_many_arguments)]
pub fn report(
    dir: &Path,
    dims: usize,
    all: &[(ChunkId, Vec<f32>)],
    queries: &[Vec<f32>],
    leg: usize,
    do_sweep: bool,
    trees: &[usize],
    scratch: &Path,
) -> Result<()> {
    let t = Instant::now();
    let truth = truth(all, queries);
    println!(
        "dense index only (ms)                          p50      p95   (exact top-10 of {} queries: {:.1} s brute force)",
        queries.len(),
        t.elapsed().as_secs_f64()
    );
    let mut index = VectorIndex::open_or_create(dir, dims)?;
    println!(
        "  the knowledge base's index: {} trees, {:.1} MiB",
        index.n_trees()?,
        mib(disk_usage(dir))
    );
    row(
        &index,
        queries,
        &truth,
        leg,
        &format!("product settings (count {leg}, as kb.search asks)"),
    )?;
    if do_sweep {
        sweep(&mut index, queries, &truth, leg)?;
    }
    drop(index);
    for &n in trees {
        let path = scratch.join(format!("trees-{n}"));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        let mut index = VectorIndex::open_or_create(&path, dims)?;
        index.set_build_params(BuildParams {
            n_trees: NonZeroUsize::new(n),
        });
        let t = Instant::now();
        index.add(all)?;
        index.commit(1)?;
        println!(
            "  scratch index with {} trees: built in {:.1} s, {:.1} MiB",
            index.n_trees()?,
            t.elapsed().as_secs_f64(),
            mib(disk_usage(&path))
        );
        row(
            &index,
            queries,
            &truth,
            leg,
            &format!("product search params (count {leg})"),
        )?;
        if do_sweep {
            sweep(&mut index, queries, &truth, leg)?;
        }
        drop(index);
        std::fs::remove_dir_all(&path)?;
    }
    Ok(())
}
