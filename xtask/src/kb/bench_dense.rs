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

/// The swap the issue asks to propose rather than make, measured: an
/// exact scan over one contiguous array (what a flat index behind
/// `index/vector.rs` would keep), in f32, and in int8 with the best 100
/// re-scored in f32. Single-threaded, no `unsafe`, portable SIMD by the
/// compiler only.
fn flat_scan(all: &[(ChunkId, Vec<f32>)], queries: &[Vec<f32>], truth: &[Vec<ChunkId>]) -> Result<()> {
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let mut acc = [0f32; 16];
        for (x, y) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
            for i in 0..16 {
                acc[i] += x[i] * y[i];
            }
        }
        let tail: f32 = a
            .chunks_exact(16)
            .remainder()
            .iter()
            .zip(b.chunks_exact(16).remainder())
            .map(|(x, y)| x * y)
            .sum();
        acc.iter().sum::<f32>() + tail
    }
    fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        let mut acc = [0i32; 16];
        for (x, y) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
            for i in 0..16 {
                acc[i] += i32::from(x[i]) * i32::from(y[i]);
            }
        }
        let tail: i32 = a
            .chunks_exact(16)
            .remainder()
            .iter()
            .zip(b.chunks_exact(16).remainder())
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        acc.iter().sum::<i32>() + tail
    }
    fn top(scores: &mut [(f32, u32)], k: usize) -> Vec<u32> {
        let k = k.min(scores.len());
        if k == 0 {
            return Vec::new();
        }
        scores.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
        let mut best = scores[..k].to_vec();
        best.sort_by(|a, b| b.0.total_cmp(&a.0));
        best.into_iter().map(|(_, i)| i).collect()
    }
    let Some(dims) = all.first().map(|(_, v)| v.len()) else {
        return Ok(());
    };
    let flat: Vec<f32> = all.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let max = flat.iter().fold(0f32, |m, x| m.max(x.abs())).max(f32::MIN_POSITIVE);
    let q8 = |v: &[f32]| -> Vec<i8> {
        v.iter()
            .map(|x| (x / max * 127.0).round().clamp(-127.0, 127.0) as i8)
            .collect()
    };
    let flat8: Vec<i8> = q8(&flat);
    let mut scores: Vec<(f32, u32)> = Vec::with_capacity(all.len());
    for int8 in [false, true] {
        let mut ms = Vec::with_capacity(queries.len());
        let mut found = 0usize;
        for (q, t) in queries.iter().zip(truth) {
            let start = Instant::now();
            scores.clear();
            let best = if int8 {
                let qq = q8(q);
                scores.extend(
                    flat8
                        .chunks_exact(dims)
                        .enumerate()
                        .map(|(i, v)| (dot_i8(&qq, v) as f32, i as u32)),
                );
                let mut rescored: Vec<(f32, u32)> = top(&mut scores, 100)
                    .into_iter()
                    .map(|i| (dot(q, &flat[i as usize * dims..(i as usize + 1) * dims]), i))
                    .collect();
                top(&mut rescored, 10)
            } else {
                scores.extend(flat.chunks_exact(dims).enumerate().map(|(i, v)| (dot(q, v), i as u32)));
                top(&mut scores, 10)
            };
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            found += best.iter().filter(|&&i| t.contains(&all[i as usize].0)).count();
        }
        let (p50, p95) = percentiles(&mut ms);
        let recall = found as f64 / (10 * queries.len().max(1)) as f64;
        let label = if int8 {
            format!(
                "PROPOSAL flat int8 scan ({:.1} MiB) + f32 re-score of 100",
                mib(flat8.len() as u64)
            )
        } else {
            format!("PROPOSAL flat f32 scan ({:.1} MiB)", mib(4 * flat.len() as u64))
        };
        println!("  {label:<44} {p50:>7.2}  {p95:>7.2}   recall@10 {recall:.3}");
    }
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
    space(&index, dims)?;
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
    flat_scan(all, queries, &truth)?;
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
