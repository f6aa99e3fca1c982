use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use roaring::RoaringBitmap;

use super::*;

fn random_vectors(n: usize, dims: usize, seed: u64) -> Vec<(ChunkId, Vec<f32>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            (ChunkId(i as u64 * 3 + 1), v)
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// Brute-force f32 top-k over the allowed vectors.
fn brute(all: &[(ChunkId, Vec<f32>)], q: &[f32], pool: Option<&RoaringBitmap>, k: usize) -> Vec<ChunkId> {
    let mut s: Vec<(f32, ChunkId)> = all
        .iter()
        .filter(|(id, _)| pool.is_none_or(|p| p.contains(id.0 as u32)))
        .map(|(id, v)| (cosine(q, v), *id))
        .collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0));
    s.into_iter().take(k).map(|x| x.1).collect()
}

/// The int8 candidates re-scored in f32, as `kb::search` does.
fn rescored(
    index: &FlatIndex,
    all: &[(ChunkId, Vec<f32>)],
    q: &[f32],
    pool: Option<&RoaringBitmap>,
    k: usize,
) -> Vec<ChunkId> {
    let cands = index.search(q, pool, (k * 2).max(k + 32)).unwrap();
    let mut s: Vec<(f32, ChunkId)> = cands
        .into_iter()
        .map(|(id, _)| {
            let v = &all.iter().find(|(i, _)| *i == id).unwrap().1;
            (cosine(q, v), id)
        })
        .collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0));
    s.into_iter().take(k).map(|x| x.1).collect()
}

fn built(dir: &Path, all: &[(ChunkId, Vec<f32>)], dims: usize) -> FlatIndex {
    let mut index = FlatIndex::open_or_create(dir, dims).unwrap();
    index.add(all).unwrap();
    index.commit(7).unwrap();
    index
}

#[test]
fn quantization_keeps_direction_and_refuses_degenerate_vectors() {
    let v = [3.0f32, -4.0, 0.0, 1.0];
    let q = quantize(&v).unwrap();
    assert_eq!(q.q.iter().map(|x| x.unsigned_abs()).max(), Some(127));
    let back: Vec<f32> = q.q.iter().map(|&x| q.scale * f32::from(x)).collect();
    assert!(cosine(&v, &back) > 0.9999, "{back:?}");
    let norm: f32 = back.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 0.01, "unit length: {norm}");
    assert!(quantize(&[0.0; 4]).is_none());
    assert!(quantize(&[1.0, f32::NAN, 0.0, 0.0]).is_none());
}

#[test]
fn dot_i8_matches_the_plain_sum_at_every_length() {
    let mut rng = StdRng::seed_from_u64(1);
    for len in [0usize, 1, 15, 16, 17, 384, 385] {
        let a: Vec<i8> = (0..len).map(|_| rng.random_range(-127i8..=127)).collect();
        let b: Vec<i8> = (0..len).map(|_| rng.random_range(-127i8..=127)).collect();
        let plain: i32 = a.iter().zip(&b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
        assert_eq!(dot_i8(&a, &b), plain, "len {len}");
    }
}

/// Every kernel this CPU can run gives the portable loop's candidates, in
/// the same order with the same scores: dimensions that are and are not a
/// multiple of the 32-byte step, the extreme components ±127, with a pool,
/// on one thread and on the block-shared parallel path.
#[test]
fn every_kernel_gives_the_portable_scan_exactly() {
    let kernels = Kernel::available();
    assert_eq!(kernels.last(), Some(&Kernel::Portable));
    assert_eq!(Kernel::detect(), kernels[0]);
    for dims in [8usize, 32, 33, 100, 384] {
        let mut all = random_vectors(
            if dims == 384 { PARALLEL_MIN * 2 + 77 } else { 2000 },
            dims,
            dims as u64,
        );
        // Vectors whose quantised components hit ±127 in many places.
        all.push((
            ChunkId(1_000_003),
            (0..dims).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect(),
        ));
        all.push((
            ChunkId(1_000_006),
            (0..dims).map(|i| if i % 3 == 0 { -1.0 } else { 0.0 }).collect(),
        ));
        let dir = tempfile::tempdir().unwrap();
        let mut index = built(dir.path(), &all, dims);
        let pool: RoaringBitmap = all.iter().map(|(id, _)| id.0 as u32).filter(|id| id % 5 != 0).collect();
        let mut queries: Vec<Vec<f32>> = random_vectors(5, dims, 7).into_iter().map(|x| x.1).collect();
        queries.push((0..dims).map(|i| if i % 2 == 0 { -1.0 } else { 1.0 }).collect());
        for q in &queries {
            for p in [None, Some(&pool)] {
                index.set_threads(1);
                assert!(index.set_kernel(Kernel::Portable));
                let want = index.search(q, p, 60).unwrap();
                assert_eq!(want.len(), 60);
                for &kernel in &kernels {
                    assert!(index.set_kernel(kernel));
                    for threads in [1, 2, 3] {
                        index.set_threads(threads);
                        assert_eq!(
                            index.search(q, p, 60).unwrap(),
                            want,
                            "{kernel:?}, {dims} dims, {threads} threads"
                        );
                    }
                }
            }
        }
    }
}

/// The exact path: int8 candidates re-scored in f32 are exactly the
/// brute-force f32 top-k, on one thread and on several, with and without a
/// pool; and the approximate order alone is already close.
#[test]
fn rescored_scan_is_the_brute_force_top_k() {
    let dims = 96;
    let all = random_vectors(3000, dims, 42);
    let dir = tempfile::tempdir().unwrap();
    let mut index = built(dir.path(), &all, dims);
    let queries = random_vectors(40, dims, 43);
    let pool: RoaringBitmap = all.iter().map(|(id, _)| id.0 as u32).filter(|id| id % 2 == 0).collect();
    for threads in [1, 3] {
        index.set_threads(threads);
        // Force the parallel path on a small set too.
        for (_, q) in &queries {
            for p in [None, Some(&pool)] {
                assert_eq!(
                    rescored(&index, &all, q, p, 10),
                    brute(&all, q, p, 10),
                    "threads {threads}"
                );
            }
        }
    }
    let (_, q) = &queries[0];
    let approx: Vec<ChunkId> = index.search(q, None, 10).unwrap().into_iter().map(|x| x.0).collect();
    let truth = brute(&all, q, None, 10);
    let overlap = approx.iter().filter(|id| truth.contains(id)).count();
    assert!(overlap >= 7, "int8 order alone: {overlap}/10");
}

#[test]
fn the_parallel_scan_agrees_with_the_single_threaded_one() {
    let dims = 32;
    let all = random_vectors(PARALLEL_MIN * 2 + 5, dims, 9);
    let dir = tempfile::tempdir().unwrap();
    let mut index = built(dir.path(), &all, dims);
    let (_, q) = &random_vectors(1, dims, 10)[0];
    index.set_threads(1);
    let one = index.search(q, None, 50).unwrap();
    index.set_threads(2);
    let two = index.search(q, None, 50).unwrap();
    assert_eq!(one, two);
    assert_eq!(one.len(), 50);
}

/// Privacy holds before ranking: the best match outside the pool is never
/// returned, however good; an empty pool returns nothing.
#[test]
fn chunks_outside_the_pool_are_never_returned() {
    let dims = 8;
    let dir = tempfile::tempdir().unwrap();
    let mut index = FlatIndex::open_or_create(dir.path(), dims).unwrap();
    let q = vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let mut items = vec![(ChunkId(9), q.clone())];
    for i in 1..6u64 {
        let mut v = vec![0.1; dims];
        v[0] = 1.0 - i as f32 * 0.1;
        items.push((ChunkId(i), v));
    }
    index.add(&items).unwrap();
    index.commit(1).unwrap();
    assert_eq!(index.search(&q, None, 3).unwrap()[0].0, ChunkId(9));
    let pool: RoaringBitmap = (1..6).collect();
    let hits = index.search(&q, Some(&pool), 10).unwrap();
    assert_eq!(hits.len(), 5);
    assert!(hits.iter().all(|(id, _)| id.0 != 9), "{hits:?}");
    assert!(index.search(&q, Some(&RoaringBitmap::new()), 10).unwrap().is_empty());
}

/// Deletions move the last record into the hole; replacements and
/// re-opens keep every vector with its own id.
#[test]
fn deletes_replacements_and_reopen_keep_ids_and_vectors_together() {
    let dims = 16;
    let all = random_vectors(200, dims, 5);
    let dir = tempfile::tempdir().unwrap();
    let mut index = built(dir.path(), &all, dims);
    let deleted: Vec<ChunkId> = all.iter().step_by(7).map(|x| x.0).collect();
    index.delete(&deleted);
    let (rid, _) = all[1].clone();
    let replacement = random_vectors(1, dims, 77).remove(0).1;
    index.add(&[(rid, replacement.clone())]).unwrap();
    index.commit(8).unwrap();
    drop(index);

    let index = FlatIndex::open_or_create(dir.path(), dims).unwrap();
    assert_eq!(index.committed_seq(), Some(8));
    assert_eq!(index.len(), (all.len() - deleted.len()) as u64);
    for (id, v) in &all {
        let got = index.get(*id);
        if deleted.contains(id) {
            assert!(got.is_none(), "{id} was deleted");
            assert!(!index.all_ids().contains(id.0 as u32));
        } else {
            let want = if *id == rid { &replacement } else { v };
            let got = got.unwrap_or_else(|| panic!("{id} missing"));
            assert!(cosine(&got, want) > 0.999, "{id} holds another vector");
        }
    }
}

/// A commit interrupted between its first write and its new metadata
/// leaves no `meta.json`: the next open empties the copy and reports no
/// sequence number, so the knowledge base rebuilds it.
#[test]
fn an_interrupted_commit_is_distrusted_at_open() {
    let dims = 8;
    let all = random_vectors(20, dims, 3);
    let dir = tempfile::tempdir().unwrap();
    drop(built(dir.path(), &all, dims));
    std::fs::remove_file(dir.path().join(META_FILE)).unwrap();
    let index = FlatIndex::open_or_create(dir.path(), dims).unwrap();
    assert_eq!(index.committed_seq(), None);
    assert!(index.is_empty());

    // So is a data file that disagrees with its metadata, and other dimensions.
    drop(built(dir.path(), &all, dims));
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join(DATA_FILE))
        .unwrap();
    f.set_len(f.metadata().unwrap().len() - 3).unwrap();
    assert_eq!(
        FlatIndex::open_or_create(dir.path(), dims).unwrap().committed_seq(),
        None
    );
    drop(built(dir.path(), &all, dims));
    assert_eq!(
        FlatIndex::open_or_create(dir.path(), dims * 2).unwrap().committed_seq(),
        None
    );

    // A commit with nothing staged only moves the stamp.
    let mut index = built(dir.path(), &all, dims);
    index.commit(9).unwrap();
    drop(index);
    let index = FlatIndex::open_or_create(dir.path(), dims).unwrap();
    assert_eq!((index.committed_seq(), index.len()), (Some(9), 20));
}

#[test]
fn bad_vectors_stage_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = FlatIndex::open_or_create(dir.path(), 4).unwrap();
    let err = index
        .add(&[(ChunkId(1), vec![1.0; 4]), (ChunkId(2), vec![0.0; 4])])
        .unwrap_err();
    assert!(matches!(err, FlatError::Degenerate { .. }), "{err}");
    assert!(matches!(
        index.add(&[(ChunkId(1), vec![1.0; 3])]),
        Err(FlatError::WrongLength { .. })
    ));
    assert!(matches!(
        index.add(&[(ChunkId(u64::from(u32::MAX) + 1), vec![1.0; 4])]),
        Err(FlatError::IdOutOfRange(_))
    ));
    index.commit(1).unwrap();
    assert!(index.is_empty());
}
