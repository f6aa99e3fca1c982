//! Tests for the vector index, against real arroy/LMDB environments.

use super::*;

const D: usize = 16;

fn tmp() -> tempfile::TempDir {
    match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => panic!("tempdir: {e}"),
    }
}

fn open(dir: &Path, dims: usize) -> VectorIndex {
    match VectorIndex::open_or_create(dir, dims) {
        Ok(i) => i,
        Err(e) => panic!("open failed: {e}"),
    }
}

/// A deterministic pseudo-random generator for test vectors.
struct Lcg(u64);

impl Lcg {
    fn next_f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn vector(&mut self, dims: usize) -> Vec<f32> {
        (0..dims).map(|_| self.next_f32()).collect()
    }
}

/// A unit vector pointing along axis `i` (with a little of axis 0 so that
/// no two are orthogonal-and-tied).
fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.01; D];
    v[i % D] = 1.0;
    v
}

fn ids(hits: &[(ChunkId, f32)]) -> Vec<u64> {
    hits.iter().map(|h| h.0 .0).collect()
}

#[test]
fn commit_persists_vectors_and_sequence_number() -> Result<()> {
    let dir = tmp();
    {
        let mut index = open(dir.path(), D);
        assert_eq!(index.committed_seq()?, None);
        assert!(index.is_empty()?);
        assert!(index.search(&axis(1), None, 5)?.is_empty());
        index.add(&[(ChunkId(1), axis(1)), (ChunkId(2), axis(2))])?;
        index.commit(4)?;
        assert_eq!(index.committed_seq()?, Some(4));
        // Staged, never committed: gone after the "crash".
        index.add(&[(ChunkId(3), axis(3))])?;
        assert_eq!(index.pending_len(), 1);
    }
    let index = open(dir.path(), D);
    assert_eq!(index.committed_seq()?, Some(4));
    assert_eq!(index.len()?, 2);
    assert_eq!(index.all_ids()?.iter().collect::<Vec<_>>(), [1, 2]);
    let hits = index.search(&axis(2), None, 1)?;
    assert_eq!(ids(&hits), [2]);
    assert!(
        (hits[0].1 - 1.0).abs() < 1e-3,
        "similarity of a vector to itself: {}",
        hits[0].1
    );
    Ok(())
}

#[test]
fn reopening_with_other_dimensions_is_refused() {
    let dir = tmp();
    drop(open(dir.path(), D));
    let err = VectorIndex::open_or_create(dir.path(), D * 2);
    assert!(
        matches!(
            err,
            Err(VectorError::DimensionMismatch {
                stored: 16,
                requested: 32,
                ..
            })
        ),
        "{err:?}"
    );
    let msg = err.map(|_| ()).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("jarvis kb reindex"), "{msg}");
}

#[test]
fn adding_an_existing_id_replaces_it_and_deletes_are_idempotent() -> Result<()> {
    let dir = tmp();
    let mut index = open(dir.path(), D);
    index.add(&[(ChunkId(1), axis(1)), (ChunkId(2), axis(2))])?;
    index.commit(1)?;
    index.add(&[(ChunkId(1), axis(5))])?;
    index.commit(2)?;
    assert_eq!(index.len()?, 2);
    assert_eq!(ids(&index.search(&axis(5), None, 1)?), [1]);

    index.delete(&[ChunkId(1), ChunkId(77), ChunkId(u64::MAX)]);
    index.delete(&[ChunkId(1)]);
    index.commit(3)?;
    assert_eq!(index.all_ids()?.iter().collect::<Vec<_>>(), [2]);
    // Add then delete in one batch: the later call wins.
    index.add(&[(ChunkId(9), axis(9))])?;
    index.delete(&[ChunkId(9)]);
    index.commit(4)?;
    assert_eq!(index.len()?, 1);
    Ok(())
}

#[test]
fn candidates_restrict_the_pool_and_private_vectors_are_never_seen() -> Result<()> {
    let dir = tmp();
    let mut index = open(dir.path(), D);
    let mut rng = Lcg(7);
    let query = rng.vector(D);
    // Chunk 1000 is "private" and is the query itself: the best match.
    let mut items: Vec<(ChunkId, Vec<f32>)> = (0..200).map(|i| (ChunkId(i), rng.vector(D))).collect();
    items.push((ChunkId(1000), query.clone()));
    index.add(&items)?;
    index.commit(1)?;

    assert_eq!(ids(&index.search(&query, None, 1)?), [1000]);

    let public: RoaringBitmap = (0..200u32).collect();
    let filtered = index.search(&query, Some(&public), 10)?;
    assert_eq!(filtered.len(), 10);
    assert!(filtered.iter().all(|h| h.0 .0 < 200));
    // Exactly the brute-force top 10 of the public pool.
    let cos = |a: &[f32], b: &[f32]| {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (n(a) * n(b))
    };
    let mut brute: Vec<(u64, f32)> = items[..200].iter().map(|(id, v)| (id.0, cos(&query, v))).collect();
    brute.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert_eq!(ids(&filtered), brute[..10].iter().map(|b| b.0).collect::<Vec<_>>());
    for (got, want) in filtered.iter().zip(&brute) {
        assert!((got.1 - want.1).abs() < 1e-3);
    }

    let small: RoaringBitmap = [3u32, 4, 5].into_iter().collect();
    let mut got = ids(&index.search(&query, Some(&small), 10)?);
    got.sort_unstable();
    assert_eq!(got, [3, 4, 5]);
    assert!(index.search(&query, Some(&RoaringBitmap::new()), 10)?.is_empty());
    Ok(())
}

#[test]
fn clear_and_discard() -> Result<()> {
    let dir = tmp();
    let mut index = open(dir.path(), D);
    index.add(&[(ChunkId(1), axis(1)), (ChunkId(2), axis(2))])?;
    index.commit(1)?;
    index.delete(&[ChunkId(1)]);
    index.discard_uncommitted();
    index.commit(2)?;
    assert_eq!(index.len()?, 2);
    index.clear();
    index.add(&[(ChunkId(3), axis(3))])?;
    index.commit(3)?;
    assert_eq!(index.all_ids()?.iter().collect::<Vec<_>>(), [3]);
    Ok(())
}

#[test]
fn bad_inputs_are_refused_and_stage_nothing() -> Result<()> {
    let dir = tmp();
    let mut index = open(dir.path(), D);
    let too_big = index.add(&[(ChunkId(1), axis(1)), (ChunkId(1 << 40), axis(1))]);
    assert!(matches!(too_big, Err(VectorError::IdOutOfRange(_))));
    assert_eq!(index.pending_len(), 0);
    assert!(matches!(
        index.add(&[(ChunkId(1), vec![1.0; D + 1])]),
        Err(VectorError::WrongLength {
            got: 17,
            expected: 16,
            ..
        })
    ));
    let mut nan = axis(1);
    nan[3] = f32::NAN;
    assert!(matches!(
        index.add(&[(ChunkId(1), nan)]),
        Err(VectorError::Degenerate { .. })
    ));
    assert!(matches!(
        index.search(&[0.0; D], None, 3),
        Err(VectorError::Degenerate { .. })
    ));
    assert!(matches!(
        index.search(&[1.0; 3], None, 3),
        Err(VectorError::WrongLength { .. })
    ));
    Ok(())
}

#[test]
fn a_cancelled_commit_writes_nothing_and_keeps_the_staged_changes() -> Result<()> {
    let dir = tmp();
    let mut index = open(dir.path(), D);
    index.add(&[(ChunkId(1), axis(1))])?;
    index.commit(1)?;
    index.add(&[(ChunkId(2), axis(2))])?;
    let out = index.commit_cancellable(2, &|| true);
    assert!(matches!(out, Err(VectorError::Cancelled)), "{out:?}");
    assert_eq!(index.committed_seq()?, Some(1));
    assert_eq!(index.len()?, 1);
    assert_eq!(index.pending_len(), 1);
    index.commit_cancellable(2, &|| false)?;
    assert_eq!(index.len()?, 2);
    assert_eq!(index.committed_seq()?, Some(2));
    Ok(())
}

/// Gaussian-ish clustered vectors: closer to real embeddings than uniform
/// noise, which has no neighbourhood structure at all.
fn clustered(n: usize, dims: usize, clusters: usize, rng: &mut Lcg) -> Vec<Vec<f32>> {
    let centers: Vec<Vec<f32>> = (0..clusters).map(|_| rng.vector(dims)).collect();
    (0..n)
        .map(|i| {
            let c = &centers[i % clusters];
            c.iter()
                .map(|x| x + 0.35 * (rng.next_f32() + rng.next_f32() + rng.next_f32()))
                .collect()
        })
        .collect()
}

/// Prints build time, recall and latency at several search efforts for 10k
/// 384-d vectors; run with `--ignored --nocapture`. Figures only.
#[test]
#[ignore = "timing printout, not a check"]
fn timing_and_recall_10k() -> Result<()> {
    use std::time::Instant;
    let dims = DEFAULT_DIMENSIONS;
    let n = 10_000;
    let mut rng = Lcg(42);
    let vectors = clustered(n, dims, 200, &mut rng);
    let dir = tmp();
    let mut index = open(dir.path(), dims);
    let items: Vec<(ChunkId, Vec<f32>)> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| (ChunkId(i as u64), v.clone()))
        .collect();
    let t = Instant::now();
    index.add(&items)?;
    index.commit(1)?;
    println!(
        "vector: built 10k x {dims} in {:?}, {} MB on disk",
        t.elapsed(),
        index.disk_size()? >> 20
    );

    let queries: Vec<Vec<f32>> = clustered(100, dims, 200, &mut Lcg(99));
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let exact = |q: &[f32], k: usize| {
        let mut s: Vec<(usize, f32)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                (
                    i,
                    q.iter().zip(v).map(|(a, b)| a * b).sum::<f32>() / (norm(q) * norm(v)),
                )
            })
            .collect();
        s.sort_by(|a, b| b.1.total_cmp(&a.1));
        s.truncate(k);
        s.into_iter().map(|x| x.0 as u64).collect::<Vec<_>>()
    };
    let truth: Vec<Vec<u64>> = queries.iter().map(|q| exact(q, 10)).collect();
    for over in [1usize, 2, 4, 8, 16] {
        index.set_search_params(SearchParams {
            oversampling: NonZeroUsize::new(over).unwrap_or(NonZeroUsize::MIN),
            ..SearchParams::default()
        });
        let mut times = Vec::new();
        let mut found = 0;
        for (q, t_ids) in queries.iter().zip(&truth) {
            let t = Instant::now();
            let hits = index.search(q, None, 10)?;
            times.push(t.elapsed());
            found += ids(&hits).iter().filter(|id| t_ids.contains(id)).count();
        }
        times.sort();
        println!(
            "vector top-10 oversampling {over:>2}: recall {:.3} p50 {:?} p95 {:?}",
            found as f64 / (10.0 * queries.len() as f64),
            times[50],
            times[95]
        );
    }
    index.set_search_params(SearchParams::default());
    let tenth: RoaringBitmap = (0..n as u32).filter(|i| i % 10 == 0).collect();
    let t = Instant::now();
    for q in &queries {
        index.search(q, Some(&tenth), 10)?;
    }
    println!(
        "vector top-10 with a 10% candidate bitmap: {:?}/query",
        t.elapsed() / queries.len() as u32
    );

    let t = Instant::now();
    let fresh: Vec<(ChunkId, Vec<f32>)> = (0..100).map(|i| (ChunkId((n + i) as u64), rng.vector(dims))).collect();
    index.add(&fresh)?;
    index.delete(&(0..100).map(ChunkId).collect::<Vec<_>>());
    index.commit(2)?;
    println!("vector: incremental +100/-100 commit in {:?}", t.elapsed());
    Ok(())
}

#[test]
fn tree_count_follows_the_shipped_rule_and_an_override() -> Result<()> {
    let dir = tmp();
    let mut index = open(dir.path(), D);
    let mut rng = Lcg(11);
    let batch = |rng: &mut Lcg, from: u64, n: u64| -> Vec<(ChunkId, Vec<f32>)> {
        (from..from + n).map(|i| (ChunkId(i), rng.vector(D))).collect()
    };
    // Everything fits one leaf (≤ dims items): one tree, not copies of it.
    index.add(&batch(&mut rng, 0, D as u64))?;
    index.commit(1)?;
    assert_eq!(index.n_trees()?, 1);
    // Past one leaf: the default count.
    index.add(&batch(&mut rng, 100, 40))?;
    index.commit(2)?;
    assert_eq!(index.n_trees()?, DEFAULT_TREES);
    // An override shrinks an existing forest at the next commit, and
    // searches still find an item's own vector.
    index.set_build_params(BuildParams {
        n_trees: NonZeroUsize::new(4),
    });
    let probe = rng.vector(D);
    index.add(&[(ChunkId(500), probe.clone())])?;
    index.commit(3)?;
    assert_eq!(index.n_trees()?, 4);
    let hits = index.search(&probe, None, 1)?;
    assert_eq!(hits.first().map(|h| h.0), Some(ChunkId(500)));
    Ok(())
}
