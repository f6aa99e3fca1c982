//! The dense leg of `bench kb` on its own: latency straight on the dense
//! indexes (no query embedding, no store reads) and recall@10 against
//! brute-force search — the exact int8 path with its re-score (and the
//! crossover it implies for `rag.exact_scan_max`), arroy's trees when the
//! library has them, and with `--sweep` / `--trees` other search budgets
//! and tree counts — so a speed figure never hides a recall loss.

use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use jarvis::index::flat::{FlatIndex, Kernel};
use jarvis::index::vector::{BuildParams, SearchParams, VectorIndex};
use jarvis::index::ChunkId;
use jarvis::kb::search::rescore_count;

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
    // arroy's budget is count × trees × oversampling leaf items, so the
    // count asked for matters as much as the oversampling.
    let plan: [(usize, &[usize]); 2] = [(10, &[2, 8, 32]), (leg, &[2, 4, 8, 16, 32])];
    for (count, overs) in plan {
        for &over in overs {
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

/// Where the index's bytes go (vectors, split planes, leaves, LMDB pages).
fn space(index: &VectorIndex, dims: usize) -> Result<()> {
    let s = index.space()?;
    let raw = s.items * (dims as u64) * 4;
    let page = s.page_size.max(1);
    println!(
        "    space: {:.1} MiB raw f32 for {} vectors; payloads: vectors {:.1} MiB, {} split planes {:.1} MiB, {} leaves {:.1} MiB",
        mib(raw),
        s.items,
        mib(s.item_bytes),
        s.split_nodes,
        mib(s.split_bytes),
        s.descendant_nodes,
        mib(s.descendant_bytes)
    );
    println!(
        "    LMDB: {:.1} MiB in pages holding data ({:.2} KiB per entry), {:.1} MiB of free pages, file {:.1} MiB = {:.1}× raw",
        mib(s.data_pages * page),
        (s.data_pages * page) as f64 / 1024.0 / (s.items + s.split_nodes + s.descendant_nodes).max(1) as f64,
        mib(s.file_pages.saturating_sub(s.data_pages) * page),
        mib(s.file_pages * page),
        (s.file_pages * page) as f64 / raw.max(1) as f64
    );
    Ok(())
}

/// The product's exact path (`index::flat`): the int8 copy built from
/// `all`, scanned for the leg's candidates, the best `rescore_count(10)`
/// re-scored in f32 (here from memory; `kb.search` reads them from the
/// store), on one thread and on every core, with each scan kernel the CPU
/// has. Prints where the scan's p95 would cross
/// `goal_ms` if it grows linearly with the library: the measured crossover
/// for `rag.exact_scan_max`.
fn exact_path(
    all: &[(ChunkId, Vec<f32>)],
    queries: &[Vec<f32>],
    truth: &[Vec<ChunkId>],
    leg: usize,
    scratch: &Path,
    goal_ms: f64,
) -> Result<()> {
    let Some(dims) = all.first().map(|(_, v)| v.len()) else {
        return Ok(());
    };
    let path = scratch.join("exact");
    if path.exists() {
        std::fs::remove_dir_all(&path)?;
    }
    let mut flat = FlatIndex::open_or_create(&path, dims)?;
    flat.add(all)?;
    flat.commit(1)?;
    let f32s: std::collections::HashMap<ChunkId, &Vec<f32>> = all.iter().map(|(id, v)| (*id, v)).collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut p95_all = 0.0;
    let best = flat.kernel();
    // The product's kernel on one thread and on every core, then each
    // slower kernel this CPU also has, on every core.
    let mut runs: Vec<(Kernel, usize)> = vec![(best, 1), (best, cores)];
    runs.extend(
        Kernel::available()
            .into_iter()
            .filter(|k| *k != best)
            .map(|k| (k, cores)),
    );
    for (kernel, threads) in runs {
        flat.set_threads(threads);
        flat.set_kernel(kernel);
        let mut ms = Vec::with_capacity(queries.len());
        let mut found = 0usize;
        for (q, t) in queries.iter().zip(truth) {
            let start = Instant::now();
            let mut cands = flat.search(q, None, leg.max(rescore_count(10)))?;
            // As the product does: the best `rescore_count` and the leg's
            // last candidate (weighted fusion puts the leg's zero there).
            let last = (cands.len() > rescore_count(10)).then(|| cands[cands.len() - 1]);
            cands.truncate(rescore_count(10));
            cands.extend(last);
            let mut scored: Vec<(f32, ChunkId)> = cands
                .into_iter()
                .filter_map(|(id, _)| {
                    f32s.get(&id)
                        .map(|v| (q.iter().zip(v.iter()).map(|(a, b)| a * b).sum(), id))
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            found += scored.iter().take(10).filter(|(_, id)| t.contains(id)).count();
        }
        let (p50, p95) = percentiles(&mut ms);
        if kernel == best {
            p95_all = p95;
        }
        let recall = found as f64 / (10 * queries.len().max(1)) as f64;
        let label = format!(
            "EXACT int8 scan ({:.1} MiB, {kernel:?}) + f32 re-score of {}+1, {threads} thread{}",
            mib(flat.disk_size()),
            rescore_count(10),
            if threads == 1 { "" } else { "s" }
        );
        println!("  {label:<44} {p50:>7.2}  {p95:>7.2}   recall@10 {recall:.3}");
    }
    flat.set_kernel(best);
    let crossover = all.len() as f64 * goal_ms / p95_all.max(1e-6);
    println!(
        "  crossover: the exact scan's p95 reaches {goal_ms:.0} ms near {:.0}k chunks on this machine now (linear from {} chunks; rag.exact_scan_max default {})",
        crossover / 1000.0,
        all.len(),
        jarvis::kb::DEFAULT_EXACT_SCAN_MAX
    );
    drop(flat);
    std::fs::remove_dir_all(&path)?;
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
    // What kb.search asks of the dense leg for 10 results.
    let count = leg.max(rescore_count(10));
    if dir.join("data.mdb").is_file() {
        let mut index = VectorIndex::open_or_create(dir, dims)?;
        println!(
            "  the knowledge base's arroy trees: {} trees, {:.1} MiB",
            index.n_trees()?,
            mib(disk_usage(dir))
        );
        space(&index, dims)?;
        row(
            &index,
            queries,
            &truth,
            count,
            &format!("arroy candidates (count {count}, as kb.search asks)"),
        )?;
        if do_sweep {
            sweep(&mut index, queries, &truth, count)?;
        }
    } else {
        println!(
            "  no arroy trees: {} chunks is under rag.exact_scan_max ({}); `--trees 64` builds a scratch copy to compare",
            all.len(),
            jarvis::kb::DEFAULT_EXACT_SCAN_MAX
        );
    }
    // The dense leg's share of the 12 ms hybrid goal (issue 22): what is
    // left after the query embedding and BM25 (~3 ms each here).
    exact_path(all, queries, &truth, leg, scratch, 5.0)?;
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
        space(&index, dims)?;
        row(
            &index,
            queries,
            &truth,
            count,
            &format!("product search params (count {count})"),
        )?;
        if do_sweep {
            sweep(&mut index, queries, &truth, count)?;
        }
        drop(index);
        std::fs::remove_dir_all(&path)?;
    }
    Ok(())
}
