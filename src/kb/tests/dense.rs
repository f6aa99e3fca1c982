//! The dense leg end to end: the exact int8 scan with its f32 re-score
//! against brute force, and arroy's background build past
//! `exact_scan_max` (real model, fjall, arroy in temp dirs).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::embed::test_support::natives;
use crate::index::{Filter, Visibility};
use crate::kb::search::SearchRequest;
use crate::kb::trees::DensePath;
use crate::kb::*;
use crate::store::Metadata;

fn embedder() -> Embedder {
    let n = natives();
    Embedder::load(&n.ort_dylib, &n.files, lookup(DEFAULT_MODEL_ID).unwrap(), None, 2).unwrap()
}

fn open(dir: &Path, exact_scan_max: u64) -> Kb {
    let settings = KbSettings {
        exact_scan_max,
        ..KbSettings::default()
    };
    Kb::open(dir, embedder(), None, settings).unwrap()
}

fn random_vectors(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| (0..dims).map(|_| rng.random_range(-1.0f32..1.0)).collect())
        .collect()
}

/// Commits one chunk per vector, every other one private; returns
/// (chunk id, vector, visibility) for the brute force.
fn commit_vectors(kb: &Kb, vectors: Vec<Vec<f32>>, tag: &str) -> Vec<(u64, Vec<f32>, Visibility)> {
    let docs: Vec<Document> = (0..vectors.len())
        .map(|i| {
            let vis = if i % 2 == 0 { "public" } else { "private" };
            let mut meta = Metadata::new();
            meta.insert("doc_type".into(), json!("note"));
            meta.insert("visibility".into(), json!(vis));
            meta.insert("source".into(), json!("local"));
            meta.insert("file_path".into(), json!(format!("{tag}-{i}.md")));
            Document {
                text: format!("{tag} {i}"),
                embed_text: format!("{tag} {i}"),
                meta,
            }
        })
        .collect();
    let prepared = kb.prepare_with_vectors(docs, vectors.clone()).unwrap();
    let ids = kb.commit(prepared, None, &Actor::Cli).unwrap();
    ids.into_iter()
        .zip(vectors)
        .enumerate()
        .map(|(i, (id, v))| {
            let vis = if i % 2 == 0 {
                Visibility::Public
            } else {
                Visibility::Private
            };
            (id.0, v, vis)
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (n(a) * n(b))
}

fn brute(all: &[(u64, Vec<f32>, Visibility)], q: &[f32], public_only: bool, k: usize) -> Vec<u64> {
    let mut s: Vec<(f32, u64)> = all
        .iter()
        .filter(|(_, _, vis)| !public_only || *vis == Visibility::Public)
        .map(|(id, v, _)| (cosine(q, v), *id))
        .collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0));
    s.into_iter().take(k).map(|x| x.1).collect()
}

fn dense(kb: &Kb, q: &[f32], public_only: bool, k: usize) -> Vec<search::Hit> {
    let mut req = SearchRequest::new("q", k);
    req.rerank = false;
    req.hybrid = Some(false);
    if public_only {
        req.filter = Filter::public_only();
    }
    kb.search_embedded(&req, q).unwrap()
}

fn ids(hits: &[search::Hit]) -> Vec<u64> {
    hits.iter().map(|h| h.record.id).collect()
}

/// The f32 re-score covers the candidates that can reach the kept hits and
/// the leg's last one (where weighted fusion puts the leg's zero); the
/// others keep their int8 estimates, which do differ from the f32 cosine.
#[test]
fn the_rescore_is_exact_for_the_best_candidates_and_the_last_one() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), 250_000);
    let dims = kb.dims();
    let all = commit_vectors(&kb, random_vectors(600, dims, 5), "random");
    let q = &random_vectors(1, dims, 6)[0];
    let exact = |id: crate::index::ChunkId| cosine(q, &all.iter().find(|x| x.0 == id.0).unwrap().1);
    let cands = kb.indexes().flat.as_ref().unwrap().search(q, None, 100).unwrap();
    assert_eq!(cands.len(), 100);
    let out = kb.rescore(q, cands.clone(), 42, 100).unwrap();
    assert_eq!(out.len(), 100);
    assert!(out.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
    for (i, (id, estimate)) in cands.iter().enumerate() {
        let got = out.iter().find(|x| x.0 == *id).unwrap().1;
        if i < 42 || i == 99 {
            assert!(
                (got - exact(*id)).abs() < 1e-6,
                "candidate {i}: {got} vs {}",
                exact(*id)
            );
        } else {
            assert_eq!(got, *estimate, "candidate {i} keeps its int8 estimate");
        }
    }
    assert!(
        cands[42..99].iter().any(|(id, s)| (s - exact(*id)).abs() > 1e-5),
        "the int8 estimates differ from the f32 cosines, so the check above means something"
    );
}

/// The exact path returns exactly the brute-force f32 top-k — on random
/// vectors and on real MiniLM embeddings — and with the public-only filter
/// exactly the brute force over the public chunks, never a private one.
#[test]
fn the_exact_dense_leg_is_the_brute_force_top_k_and_filters_before_ranking() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), 250_000);
    let dims = kb.dims();
    let mut all = commit_vectors(&kb, random_vectors(800, dims, 1), "random");
    let texts = [
        "Basalt lava flows from shield volcanoes.",
        "Sourdough needs a lively starter and patience.",
        "The Rust borrow checker enforces aliasing rules.",
        "Quarterly budget planning for the design team.",
        "Tide pools hold anemones, crabs and sea stars.",
        "Gradient descent minimises a differentiable loss.",
        "A sonnet has fourteen lines in iambic pentameter.",
        "The marathon route follows the river embankment.",
        "Photosynthesis turns light into chemical energy.",
        "Packing list: tent, stove, headlamp, water filter.",
        "Interest rates rose twice this year.",
        "Cats sleep for most of the day.",
    ];
    let real = kb.embedder().unwrap().embed_documents(&texts).unwrap();
    all.extend(commit_vectors(&kb, real, "real"));
    assert_eq!(kb.dense_path(), DensePath::Exact);

    let mut queries = random_vectors(15, dims, 2);
    for q in ["volcanic rock", "bread baking", "memory safety", "ocean life", "money"] {
        queries.push(kb.embedder().unwrap().embed_query(q).unwrap());
    }
    for q in &queries {
        assert_eq!(ids(&dense(&kb, q, false, 10)), brute(&all, q, false, 10));
        let public = dense(&kb, q, true, 10);
        assert!(public.iter().all(|h| !h.record.visibility().is_private()));
        assert_eq!(ids(&public), brute(&all, q, true, 10));
        // The scores are the exact f32 cosines, not the int8 estimates.
        let h = &public[0];
        let v = &all.iter().find(|x| x.0 == h.record.id).unwrap().1;
        assert!((h.score - cosine(q, v)).abs() < 1e-5, "{} vs {}", h.score, cosine(q, v));
    }
    // No trees below the crossover: not even the directory.
    assert!(!t.path().join("index/g0/vectors").exists());
}

/// Crossing `exact_scan_max` builds arroy's trees once, in the background,
/// while searches keep answering (exactly, from the scan); then arroy picks
/// the candidates, recall@10 against exact stays ≥ 0.95, the privacy
/// filter still holds, and a reopen keeps the trees — unless the crossover
/// moved above the library, which removes them.
#[test]
fn crossing_exact_scan_max_builds_trees_in_the_background_and_search_answers_throughout() {
    let t = tempfile::tempdir().unwrap();
    let kb = open(t.path(), 300);
    let dims = kb.dims();
    let mut all = commit_vectors(&kb, random_vectors(280, dims, 3), "a");
    assert_eq!(kb.dense_path(), DensePath::Exact);
    assert!(!t.path().join("index/g0/vectors").exists());
    all.extend(commit_vectors(&kb, random_vectors(220, dims, 4), "b"));
    let queries = random_vectors(20, dims, 5);

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut answered_while_building = 0;
    loop {
        let path = kb.dense_path();
        assert_ne!(
            path,
            DensePath::Exact,
            "over the crossover a build must be under way or done"
        );
        if path == DensePath::Trees {
            break;
        }
        // Meanwhile the exact scan answers, exactly (a search may also be
        // the one that installs the finished trees, and then uses them).
        let q = &queries[answered_while_building % queries.len()];
        let got = ids(&dense(&kb, q, false, 10));
        if kb.dense_path() != DensePath::Trees {
            assert_eq!(got, brute(&all, q, false, 10));
        }
        answered_while_building += 1;
        assert!(std::time::Instant::now() < deadline, "the trees were never installed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(t.path().join("index/g0/vectors").exists());
    assert!(kb.agreement().unwrap().ok(), "{:?}", kb.agreement().unwrap());

    let recall = |kb: &Kb, public_only: bool| {
        let mut found = 0;
        for q in &queries {
            let got = dense(kb, q, public_only, 10);
            if public_only {
                assert!(got.iter().all(|h| !h.record.visibility().is_private()));
            }
            let truth = brute(&all, q, public_only, 10);
            found += ids(&got).iter().filter(|id| truth.contains(id)).count();
        }
        found as f64 / (10 * queries.len()) as f64
    };
    let r = recall(&kb, false);
    assert!(r >= 0.95, "recall@10 on the tree path {r}");
    assert!(recall(&kb, true) >= 0.95);

    // A commit after the hand-over reaches the trees too.
    all.extend(commit_vectors(&kb, random_vectors(10, dims, 6), "c"));
    assert!(kb.agreement().unwrap().ok(), "{:?}", kb.agreement().unwrap());
    let embedder = kb.into_embedder().unwrap();

    let kb = Kb::open(
        t.path(),
        embedder,
        None,
        KbSettings {
            exact_scan_max: 300,
            ..KbSettings::default()
        },
    )
    .unwrap();
    assert_eq!(kb.dense_path(), DensePath::Trees, "a reopen keeps the trees");
    let embedder = kb.into_embedder().unwrap();
    let kb = Kb::open(t.path(), embedder, None, KbSettings::default()).unwrap();
    assert_eq!(kb.dense_path(), DensePath::Exact);
    assert!(
        !t.path().join("index/g0/vectors").exists(),
        "under the crossover the trees are removed"
    );
    let q = &queries[0];
    assert_eq!(ids(&dense(&kb, q, false, 10)), brute(&all, q, false, 10));
}
