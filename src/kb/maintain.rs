//! Maintenance: `reindex` (re-embed everything into a new generation and
//! switch atomically), the agreement check behind `doctor`, and stale
//! generation cleanup.

use std::collections::BTreeSet;
use std::path::Path;

use crate::cancel::Cancel;
use crate::doc_type::DocType;
use crate::index::bm25::Bm25Index;
use crate::index::flat::FlatIndex;
use crate::index::vector::VectorIndex;
use crate::index::ChunkId;

use super::ops::paper_header;
use super::{index_dir, index_doc, Indexes, Kb, KbError, Result};

/// Derived-index directories and embeddings of generations other than the
/// current one are leftovers of an interrupted reindex (or of the one before
/// a finished reindex); remove them. Failures are logged, never fatal.
pub(crate) fn remove_stale_generations(kb: &Kb, rag: &Path, current: u32) {
    if let Ok(entries) = std::fs::read_dir(rag.join("index")) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name != format!("g{current}") {
                if let Err(err) = std::fs::remove_dir_all(e.path()) {
                    tracing::warn!(dir = %e.path().display(), error = %err, "cannot remove a stale index generation");
                }
            }
        }
    }
    match kb.store.generations_present() {
        Ok(gens) => {
            for g in gens.into_iter().filter(|g| *g != current) {
                if let Err(err) = kb.store.drop_generation(g) {
                    tracing::warn!(generation = g, error = %err, "cannot drop stale embeddings");
                }
            }
        }
        Err(err) => tracing::warn!(error = %err, "cannot list embedding generations"),
    }
}

/// What a reindex did; its JSON is `kb reindex --json` (pinned in
/// `cli/kb/tests.rs`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReindexReport {
    pub chunks: usize,
    pub headers_added: usize,
    pub model: String,
    pub generation: u32,
}

/// Whether the store and the indexes hold the same chunks; its JSON is the
/// `agreement` of `kb doctor --json` (pinned in `cli/kb/tests.rs`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Agreement {
    pub store_seq: u64,
    pub bm25_seq: Option<u64>,
    /// arroy's trees; `None` (with `trees` false) when none are kept.
    pub vector_seq: Option<u64>,
    /// Whether arroy trees exist (only above `rag.exact_scan_max`).
    pub trees: bool,
    pub store_chunks: usize,
    pub bm25_docs: usize,
    pub vector_items: usize,
    /// In the store but missing from an index.
    pub missing_in_bm25: usize,
    pub missing_in_vectors: usize,
    /// In an index but not in the store.
    pub orphans_in_bm25: usize,
    pub orphans_in_vectors: usize,
    /// The exact (int8) dense index: its seq, its size, the ids it lacks or
    /// holds beyond the store, and the vectors in it that are not the
    /// store's vector for that id (cosine below 0.99).
    pub exact_seq: Option<u64>,
    pub exact_items: usize,
    pub missing_in_exact: usize,
    pub orphans_in_exact: usize,
    pub stale_in_exact: usize,
}

impl Agreement {
    pub fn ok(&self) -> bool {
        self.missing_in_bm25
            + self.missing_in_vectors
            + self.orphans_in_bm25
            + self.orphans_in_vectors
            + self.missing_in_exact
            + self.orphans_in_exact
            + self.stale_in_exact
            == 0
            // An index that never committed stands at 0, as `catch_up`
            // treats it: a fresh, empty knowledge base agrees with itself.
            && self.bm25_seq.unwrap_or(0) == self.store_seq
            && (!self.trees || self.vector_seq.unwrap_or(0) == self.store_seq)
            && self.exact_seq.unwrap_or(0) == self.store_seq
    }
}

impl Kb {
    /// Compare the store with both indexes, id by id.
    pub fn agreement(&self) -> Result<Agreement> {
        let store: BTreeSet<u64> = self.store.all_ids()?.into_iter().collect();
        let ix = self.indexes();
        let bm25: BTreeSet<u64> = ix.bm25.all_chunk_ids()?.into_iter().map(|c| c.0).collect();
        let (vectors, vseq): (BTreeSet<u64>, Option<u64>) = match ix.vectors.as_ref() {
            Some(v) => (v.all_ids()?.iter().map(u64::from).collect(), v.committed_seq()?),
            None => (BTreeSet::new(), None),
        };
        let (mut exact, mut stale, mut exact_seq) = (BTreeSet::new(), 0, None);
        if let Some(f) = ix.flat.as_ref() {
            exact_seq = f.committed_seq();
            for (id, v) in f.records() {
                exact.insert(id.0);
                let agrees = self.store.vector(id.0)?.is_some_and(|s| cosine(&s, &v) >= 0.99);
                if store.contains(&id.0) && !agrees {
                    stale += 1;
                }
            }
        }
        Ok(Agreement {
            exact_seq,
            exact_items: exact.len(),
            missing_in_exact: if ix.flat.is_some() {
                store.difference(&exact).count()
            } else {
                0
            },
            orphans_in_exact: exact.difference(&store).count(),
            stale_in_exact: stale,
            store_seq: self.store.seq()?,
            bm25_seq: ix.bm25.committed_seq()?,
            vector_seq: vseq,
            store_chunks: store.len(),
            bm25_docs: bm25.len(),
            vector_items: vectors.len(),
            missing_in_bm25: store.difference(&bm25).count(),
            // No trees (under the crossover, or being built) is not a gap.
            missing_in_vectors: if ix.vectors.is_some() {
                store.difference(&vectors).count()
            } else {
                0
            },
            trees: ix.vectors.is_some(),
            orphans_in_bm25: bm25.difference(&store).count(),
            orphans_in_vectors: vectors.difference(&store).count(),
        })
    }

    /// Re-embed every stored chunk from its stored text with the configured
    /// model into a new generation, build fresh indexes beside the old ones,
    /// and switch in one store batch. A crash before the switch leaves the
    /// old generation working; the leftovers are removed on the next open.
    /// Paper body chunks lacking the `title — authors` header get it.
    pub fn reindex(&self, progress: &dyn Fn(usize, usize), cancel: &Cancel) -> Result<ReindexReport> {
        let w = crate::lock::lock(&self.write);
        // A background tree build belongs to the generation being replaced.
        super::lock(&self.trees).stop();
        let rag = self.store.dir().to_path_buf();
        let old = self.store.generation()?;
        let gen = old + 1;
        let dir = index_dir(&rag, gen);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| KbError::Invalid(format!("cannot clear {}: {e}", dir.display())))?;
        }
        self.store.drop_generation(gen)?;
        let ids = self.store.all_ids()?;
        let total = ids.len();
        let mut bm25 = Bm25Index::open_or_create(&dir.join("bm25"))?;
        let dims = self.dims();
        // Trees only over the crossover (built here, in the long operation
        // the user asked for, rather than in the background after it).
        let mut vectors = if total as u64 > self.settings.exact_scan_max {
            Some(VectorIndex::open_or_create(&dir.join("vectors"), dims)?)
        } else {
            None
        };
        let mut flat = FlatIndex::open_or_create(&dir.join("flat"), dims)?;
        let mut headers_added = 0;
        let mut done = 0;
        for batch in ids.chunks(64) {
            if cancel.is_cancelled() {
                return Err(KbError::Cancelled);
            }
            let mut recs = Vec::new();
            for &id in batch {
                let Some(mut rec) = self.store.get(id)? else { continue };
                if rec.embed_text.is_empty() {
                    rec.embed_text = rec.text.clone();
                }
                if needs_paper_header(&rec) {
                    let header = paper_header(
                        rec.meta_str("title").unwrap_or(""),
                        rec.meta_str("authors").unwrap_or(""),
                    );
                    rec.embed_text = format!("{header}\n{}", rec.embed_text);
                    headers_added += 1;
                }
                recs.push(rec);
            }
            let texts: Vec<&str> = recs.iter().map(|r| r.embed_text.as_str()).collect();
            let vecs = self.embedder()?.embed_documents(&texts)?;
            let items: Vec<_> = recs
                .iter()
                .zip(&vecs)
                .map(|(r, v)| (r.id, r.embed_text.clone(), v.clone()))
                .collect();
            self.store.put_embeddings(gen, &items)?;
            bm25.add(&recs.iter().map(index_doc).collect::<Vec<_>>())?;
            let items: Vec<_> = recs.iter().zip(vecs).map(|(r, v)| (ChunkId(r.id), v)).collect();
            flat.add(&items)?;
            if let Some(v) = vectors.as_mut() {
                v.add(&items)?;
            }
            done += batch.len();
            progress(done, total);
        }
        let seq = self.store.seq()? + 1;
        bm25.commit(seq)?;
        if let Some(v) = vectors.as_mut() {
            v.commit(seq)?;
        }
        flat.commit(seq)?;
        super::failpoint("reindex_before_switch");
        let model = self.model_id();
        let switched = self.store.switch_generation(gen, &model)?;
        debug_assert_eq!(switched, seq);
        *self.indexes() = Indexes {
            bm25,
            vectors,
            flat: Some(flat),
        };
        *super::lock(&self.mismatch) = None;
        drop(w);
        remove_stale_generations(self, &rag, gen);
        if let Err(e) = self.store.prune_journal(seq) {
            tracing::warn!(error = %e, "cannot prune the journal after reindex");
        }
        Ok(ReindexReport {
            chunks: total,
            headers_added,
            model,
            generation: gen,
        })
    }
}

/// A paper body chunk whose embedded text does not start with its title.
fn needs_paper_header(rec: &crate::store::ChunkRecord) -> bool {
    let title = rec.meta_str("title").unwrap_or("").trim();
    rec.is(DocType::Paper)
        && rec.meta_str("annotation_kind").is_none()
        && !title.is_empty()
        && !rec.embed_text.starts_with(title)
}

/// Bytes on disk of the store and the current generation's indexes; its
/// JSON is the `disk_bytes` of `kb stats --json` (pinned in
/// `cli/kb/tests.rs`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DiskUsage {
    pub store_bytes: u64,
    pub bm25_bytes: u64,
    pub vector_bytes: u64,
    /// The exact dense index's int8 copy.
    pub exact_bytes: u64,
}

impl Kb {
    pub fn disk_usage(&self) -> Result<DiskUsage> {
        let dir = index_dir(self.store.dir(), self.store.generation()?);
        Ok(DiskUsage {
            store_bytes: self.store.disk_bytes(),
            bm25_bytes: dir_bytes(&dir.join("bm25")),
            vector_bytes: dir_bytes(&dir.join("vectors")),
            exact_bytes: dir_bytes(&dir.join("flat")),
        })
    }
}

/// Total size of the files under `dir`; unreadable entries count as 0
/// (this only feeds `kb stats`).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na * nb)
}
