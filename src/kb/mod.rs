//! The knowledge base: one handle over the fjall store (truth), the BM25
//! index and the vector index (both derived), the embedder and the optional
//! re-ranker.
//!
//! Owns: staging documents into chunks ([`stage`]), the one write path
//! ([`Kb::commit`]: store first, then both indexes, stamped with the store's
//! sequence number), recovery on open ([`recover`]: indexes behind the store replay its
//! journal; an index ahead of it or without a usable journal is rebuilt),
//! the embedding-model guard, hybrid search ([`search`]), metadata-only
//! operations ([`ops`]), `reindex` / `doctor` ([`maintain`]) and the
//! papers' citation keys and BibTeX ([`cite`], [`bibtex`]).
//! Must not: parse files (that is `ingest`), talk to LLMs, or know HTTP/CLI.
//!
//! Crash safety: a commit is durable once the store's batch is; the indexes
//! are only ever brought *up to* the store, never ahead of it, and a search
//! checks every hit against the store before returning it. So after a crash
//! at any instant a document is wholly present (store + both indexes after
//! recovery) or wholly absent.

pub mod bibtex;
pub mod change;
pub mod chunker;
pub mod cite;
pub mod error;
pub mod eval;
pub mod maintain;
pub mod ops;
mod recover;
use recover::net_touched;
pub mod search;
pub mod stage;
pub mod trees;
pub mod tune;
pub mod undo;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::doc_type::DocType;
use crate::embed::rerank::CrossEncoder;
use crate::embed::{Embedder, ModelSpec};
use crate::index::bm25::{Bm25Error, Bm25Index};
use crate::index::flat::FlatIndex;
use crate::index::vector::VectorIndex;
use crate::index::{ChunkId, IndexDoc};
use crate::store::{JournalEntry, Seq, Store};

/// A stored chunk, as searches and listings hand it out.
pub use crate::store::ChunkRecord;

pub use crate::store::{Actor, AuditReport, DocState, Event, EventId, EventKind, Kept, LogSize, Mismatch, Prior};
pub use crate::store::{NewRecordEvent, RecordChange};
pub use error::{KbError, Result};
pub use stage::{Document, ReplaceBy};

/// `rag.rerank_budget_ms`'s default.
pub const DEFAULT_RERANK_BUDGET_MS: u64 = 400;

/// `rag.exact_scan_max`'s default: the library size (chunks) up to which
/// the exact int8 scan answers the dense leg. Measured with `cargo xtask
/// bench kb` on the 2-core reference VM (quiet, synthetic vectors, issue
/// 22): at 1M chunks the VNNI scan alone takes p50 14–15 / p95 17–19 ms on
/// both cores (recall@10 1.000), and hybrid `kb.search` with it p50 29–31 /
/// p95 37–50 ms in four runs, inside the 50 ms goal; with arroy's trees
/// instead (64 trees, 6.2 GiB on disk, built in the background) `kb.search`
/// took p50 63 / p95 81 ms and its candidates held 0.48 of the true top 10.
/// So the exact scan answers up to a million chunks and only a larger
/// library pays for trees.
pub const DEFAULT_EXACT_SCAN_MAX: u64 = 1_000_000;

/// Knobs from `[rag]`.
#[derive(Debug, Clone)]
pub struct KbSettings {
    pub hybrid: bool,
    /// How many of the fused results the re-ranker re-orders.
    pub rerank_top_n: usize,
    /// Longest a re-rank may take before the fused order is kept instead.
    pub rerank_budget: std::time::Duration,
    /// Library size (chunks) up to which dense search is an exact scan and
    /// no arroy trees are kept; above it arroy picks the candidates.
    pub exact_scan_max: u64,
    pub chunk_size: usize,
    pub chunk_overlap: usize,
    /// BM25 field boosts.
    pub field_boosts: crate::index::bm25::FieldBoosts,
    /// RRF weight of the exact-name leg (dense and BM25 weigh 1).
    pub exact_name_weight: f32,
    /// RRF weight of the exact-heading leg (0 turns it off).
    pub exact_heading_weight: f32,
    /// How `search_documents` scores a document from its chunks.
    pub doc_aggregation: search::DocAggregation,
    /// The reciprocal-rank-fusion constant `k` (see `index::fuse`).
    pub rrf_k: f32,
    /// How the dense and BM25 legs are fused (`rag.fusion`, `rag.dense_weight`).
    pub fusion: search::Fusion,
    /// How the store writes (when a commit is bulk).
    pub store: crate::store::StoreOptions,
    /// A vault note larger than this (bytes) is skipped, not indexed
    /// (`vault.max_note_bytes`): embedding one costs about a second per
    /// few chunks on a small machine, and a pasted log of megabytes would
    /// keep the index busy for many minutes while adding nothing findable.
    pub max_note_bytes: u64,
    /// How long a removed or replaced document's chunks are kept so that
    /// undo can restore them (`history.keep_days`; 0 keeps none).
    pub keep_days: u32,
}

/// The default of [`KbSettings::keep_days`].
pub const KEEP_DAYS: u32 = 30;

/// The default of [`KbSettings::max_note_bytes`].
pub const MAX_NOTE_BYTES: u64 = 2_000_000;

impl Default for KbSettings {
    fn default() -> Self {
        KbSettings {
            hybrid: true,
            rerank_top_n: 25,
            rerank_budget: std::time::Duration::from_millis(DEFAULT_RERANK_BUDGET_MS),
            exact_scan_max: DEFAULT_EXACT_SCAN_MAX,
            chunk_size: 1024,
            chunk_overlap: 128,
            field_boosts: crate::index::bm25::FieldBoosts::default(),
            exact_name_weight: search::EXACT_NAME_WEIGHT,
            exact_heading_weight: search::EXACT_HEADING_WEIGHT,
            doc_aggregation: search::DocAggregation::Decay(search::DOC_DECAY),
            rrf_k: search::RRF_K,
            fusion: search::Fusion::default(),
            store: crate::store::StoreOptions::default(),
            max_note_bytes: MAX_NOTE_BYTES,
            keep_days: KEEP_DAYS,
        }
    }
}

pub(crate) struct Indexes {
    pub bm25: Bm25Index,
    /// arroy's trees: only above `exact_scan_max` (see [`trees`]), and
    /// never while the embedding-model guard is tripped.
    pub vectors: Option<VectorIndex>,
    /// The exact dense index (int8 copy of every vector); None exactly
    /// when the embedding-model guard tripped (dims may differ).
    pub flat: Option<FlatIndex>,
}

pub struct Kb {
    indexes: Mutex<Indexes>,
    /// The configured model's registry entry: its id and dimensions are
    /// known without loading anything.
    spec: ModelSpec,
    /// Loaded on first use (see [`Kb::open_lazy`]), so commands that never
    /// embed never load ONNX Runtime or the model.
    embedder: Mutex<Option<Embedder>>,
    loader: Option<EmbedderLoader>,
    /// When the embedder was last handed back after use: an owner process
    /// unloads a model idle for longer than its keep-alive
    /// ([`Kb::release_idle_embedder`]).
    embedder_used: Mutex<std::time::Instant>,
    /// Loaded the first time a search re-ranks (see [`Reranker`]).
    reranker: Option<Mutex<RerankSlot>>,
    settings: KbSettings,
    /// The fusion searches use: the settings' at open, replaced when `kb
    /// eval --tune --apply` writes a tuned one (no restart needed).
    fusion: Mutex<search::Fusion>,
    /// Set when the store's model differs from the embedder's; cleared by
    /// a reindex through a shared handle, hence the lock.
    mismatch: Mutex<Option<(String, String)>>,
    /// Serialises writers; readers only take `indexes` briefly.
    write: Mutex<()>,
    /// A change reached the store but not every index (a full disk while
    /// the indexes wrote): the next write, or [`Kb::settle`], catches them
    /// up from the journal first, so no later commit stamps an index past
    /// a change it lacks.
    behind: std::sync::atomic::AtomicBool,
    /// Searches waiting for the embedder right now. A write embeds one
    /// batch per hold of the embedder and lets these go first, so a search
    /// waits for at most one batch of a long write, never for all of it.
    queries_waiting: std::sync::atomic::AtomicUsize,
    /// The background arroy build, when one runs or waits to be installed
    /// (dropping it stops and joins the build thread, before the store).
    trees: Mutex<trees::TreeSlot>,
    /// The papers' citation entries as last read (see [`cite`]).
    cite: Mutex<cite::CiteCache>,
    /// Last, because fields drop in order: the store holds `rag/owner.lock`,
    /// and it must outlive the indexes' own locks (tantivy's writer lock),
    /// or the next process to take the store lock finds BM25 still locked.
    /// Shared with the background tree build (see [`trees`]), which is
    /// joined before this drops.
    store: std::sync::Arc<Store>,
}

fn index_dir(rag: &Path, gen: u32) -> PathBuf {
    rag.join("index").join(format!("g{gen}"))
}

impl Kb {
    /// Open the knowledge base in `rag_dir` (taking the one-owner lock),
    /// check the embedding model and bring both indexes up to the store.
    pub fn open(
        rag_dir: &Path,
        embedder: Embedder,
        reranker: Option<CrossEncoder>,
        settings: KbSettings,
    ) -> Result<Kb> {
        let spec = embedder.spec().clone();
        let reranker = reranker.map(|r| Reranker::Loaded(Box::new(r)));
        Self::open_with(rag_dir, spec, Some(embedder), None, reranker, settings)
    }

    /// Like [`Kb::open`], but the embedder is loaded by `loader` the first
    /// time a search or write needs it: `kb stats`, `list`, `schema` and the
    /// like never load ONNX Runtime or the model. `spec` is the configured
    /// model's registry entry (its id is checked against the store now).
    /// A [`Reranker::Lazy`] waits likewise for the first re-ranked search.
    pub fn open_lazy(
        rag_dir: &Path,
        spec: ModelSpec,
        loader: EmbedderLoader,
        reranker: Option<Reranker>,
        settings: KbSettings,
    ) -> Result<Kb> {
        Self::open_with(rag_dir, spec, None, Some(loader), reranker, settings)
    }

    fn open_with(
        rag_dir: &Path,
        spec: ModelSpec,
        embedder: Option<Embedder>,
        loader: Option<EmbedderLoader>,
        reranker: Option<Reranker>,
        settings: KbSettings,
    ) -> Result<Kb> {
        let store = std::sync::Arc::new(Store::open_with(rag_dir, settings.store)?);
        let configured = spec.id.to_string();
        let mismatch = match store.meta_string("embed_model")? {
            Some(stored) if stored != configured => Some((stored, configured.clone())),
            Some(_) => None,
            None if store.count()? == 0 => {
                store.set_meta_string("embed_model", &configured)?;
                None
            }
            // Chunks without a recorded model: refuse rather than mix spaces.
            None => Some(("(unrecorded)".to_string(), configured.clone())),
        };
        let gen = store.generation()?;
        let dir = index_dir(rag_dir, gen);
        let mut bm25 = open_bm25(&dir.join("bm25"))?;
        bm25.set_boosts(settings.field_boosts);
        let (vectors, flat) = match mismatch {
            None => {
                let flat = FlatIndex::open_or_create(&dir.join("flat"), spec.dims)?;
                (
                    trees::open(&dir.join("vectors"), spec.dims, &flat, &settings)?,
                    Some(flat),
                )
            }
            Some(_) => (None, None),
        };
        let kb = Kb {
            store,
            trees: Mutex::new(trees::TreeSlot::default()),
            cite: Mutex::new(cite::CiteCache::default()),
            indexes: Mutex::new(Indexes { bm25, vectors, flat }),
            spec,
            embedder: Mutex::new(embedder),
            loader,
            embedder_used: Mutex::new(std::time::Instant::now()),
            reranker: reranker.map(|r| Mutex::new(RerankSlot::from(r))),
            fusion: Mutex::new(settings.fusion),
            settings,
            mismatch: Mutex::new(mismatch),
            write: Mutex::new(()),
            behind: std::sync::atomic::AtomicBool::new(false),
            queries_waiting: std::sync::atomic::AtomicUsize::new(0),
        };
        kb.catch_up()?;
        maintain::remove_stale_generations(&kb, rag_dir, gen);
        kb.backfill_once();
        // Retention is enforced on open (every command opens) and after
        // each undo; a failure only delays it.
        if let Err(e) = kb.store.drop_expired_copies(kb.settings.keep_days) {
            tracing::warn!(error = %e, "could not drop kept copies past history.keep_days yet");
        }
        Ok(kb)
    }

    /// Close the knowledge base (releasing its lock) and hand back the
    /// embedder, so a caller that reopens — a crash test, a benchmark — does
    /// not pay the model load again.
    pub fn into_embedder(self) -> Result<Embedder> {
        if let Some(e) = self.embedder.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Ok(e);
        }
        match &self.loader {
            Some(load) => load().map_err(KbError::EmbedderLoad),
            None => Err(KbError::EmbedderLoad("no embedder and no way to load one".into())),
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The fusion searches use now.
    pub fn fusion(&self) -> search::Fusion {
        *lock(&self.fusion)
    }

    /// Use `fusion` from the next search on.
    pub fn set_fusion(&self, fusion: search::Fusion) {
        *lock(&self.fusion) = fusion;
    }

    pub fn settings(&self) -> &KbSettings {
        &self.settings
    }

    pub fn model_id(&self) -> String {
        self.spec.id.to_string()
    }

    /// Vector length of the configured model (known without loading it).
    pub fn dims(&self) -> usize {
        self.spec.dims
    }

    /// Whether the embedder has been loaded in this process (for tests and
    /// start-up measurements).
    pub fn embedder_loaded(&self) -> bool {
        lock(&self.embedder).is_some()
    }

    /// How the loaded embedder's session was prepared; `None` while no
    /// model is loaded.
    pub fn embedder_profile(&self) -> Option<crate::embed::SessionProfile> {
        lock(&self.embedder).as_ref().map(Embedder::profile)
    }

    /// The refusal every search and write gives while the model differs.
    pub fn check_model(&self) -> Result<()> {
        match &*lock(&self.mismatch) {
            Some((stored, configured)) => Err(KbError::ModelMismatch {
                stored: stored.clone(),
                configured: configured.clone(),
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn indexes(&self) -> std::sync::MutexGuard<'_, Indexes> {
        lock(&self.indexes)
    }

    /// The embedder, loading it first if this is its first use. Loading
    /// happens under the lock, so two threads never load it twice; a failed
    /// load is reported and retried on the next call.
    pub(crate) fn embedder(&self) -> Result<EmbedderGuard<'_>> {
        let mut slot = lock(&self.embedder);
        if slot.is_none() {
            let Some(load) = &self.loader else {
                return Err(KbError::EmbedderLoad("no embedder and no way to load one".into()));
            };
            let started = std::time::Instant::now();
            let embedder = load().map_err(KbError::EmbedderLoad)?;
            tracing::debug!(
                ms = started.elapsed().as_millis() as u64,
                profile = %embedder.profile(),
                "embedder loaded on first use"
            );
            *slot = Some(embedder);
        }
        Ok(EmbedderGuard(slot, &self.embedder_used))
    }

    /// The embedder for a search's query: marked as waiting, so a write in
    /// progress hands the model over after its current batch.
    pub(crate) fn query_embedder(&self) -> Result<EmbedderGuard<'_>> {
        use std::sync::atomic::Ordering;
        self.queries_waiting.fetch_add(1, Ordering::SeqCst);
        let guard = self.embedder();
        self.queries_waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Called by a write between its batches: while searches wait for the
    /// embedder, step aside (bounded, so a flood of searches cannot stall a
    /// write for good).
    pub(crate) fn let_queries_pass(&self) {
        use std::sync::atomic::Ordering;
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.queries_waiting.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Unloads the embedding model when nobody has used it for `idle`:
    /// a long-lived owner would otherwise hold ONNX Runtime's weights and
    /// arena (most of its memory) through hours of nothing happening. The
    /// next search or write loads it again through the loader, so this only
    /// ever happens to a lazily opened knowledge base. Never waits: a model
    /// in use right now is simply not idle. Returns whether it unloaded.
    pub fn release_idle_embedder(&self, idle: std::time::Duration) -> bool {
        if self.loader.is_none() {
            return false;
        }
        let Ok(mut slot) = self.embedder.try_lock() else {
            return false;
        };
        let unused_for = lock(&self.embedder_used).elapsed();
        if slot.is_none() || unused_for < idle {
            return false;
        }
        drop(slot.take());
        drop(slot);
        crate::embed::release_freed_memory();
        tracing::info!(
            idle_secs = unused_for.as_secs(),
            "embedding model unloaded while idle; the next search loads it again"
        );
        true
    }

    /// The re-ranker, if one is configured, loading it on first use.
    pub(crate) fn reranker(&self) -> Result<Option<std::sync::MutexGuard<'_, RerankSlot>>> {
        let Some(slot) = &self.reranker else {
            return Ok(None);
        };
        let mut slot = lock(slot);
        if slot.model.is_none() {
            let started = std::time::Instant::now();
            let load = slot
                .loader
                .as_ref()
                .ok_or_else(|| KbError::RerankerLoad("no re-ranker and no way to load one".into()))?;
            let model = load().map_err(KbError::RerankerLoad)?;
            slot.model = Some(model);
            tracing::debug!(
                ms = started.elapsed().as_millis() as u64,
                "re-ranker loaded on first use"
            );
        }
        Ok(Some(slot))
    }

    /// Whether a configured re-ranker has been loaded yet.
    pub fn reranker_loaded(&self) -> bool {
        self.reranker.as_ref().is_some_and(|s| lock(s).model.is_some())
    }

    /// The store's cause for a write by `actor`.
    pub(crate) fn cause(&self, actor: &Actor) -> crate::store::Cause {
        crate::store::Cause::new(actor.clone(), self.settings.keep_days > 0)
    }

    pub(crate) fn write_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        lock(&self.write)
    }
}

/// Loads the cross-encoder (and ONNX Runtime) when a search first re-ranks.
pub type RerankerLoader =
    Box<dyn Fn() -> std::result::Result<CrossEncoder, Box<dyn std::error::Error + Send + Sync>> + Send + Sync>;

/// A configured re-ranker.
pub enum Reranker {
    Loaded(Box<CrossEncoder>),
    /// Loaded the first time a search re-ranks, so that commands which
    /// never search (`kb stats`, `list`, `schema`…) never load ONNX Runtime
    /// for it.
    Lazy(RerankerLoader),
}

/// The re-ranker under its lock: the model once loaded, and how to load it.
pub(crate) struct RerankSlot {
    pub(crate) model: Option<CrossEncoder>,
    loader: Option<RerankerLoader>,
}

impl From<Reranker> for RerankSlot {
    fn from(r: Reranker) -> Self {
        match r {
            Reranker::Loaded(m) => RerankSlot {
                model: Some(*m),
                loader: None,
            },
            Reranker::Lazy(l) => RerankSlot {
                model: None,
                loader: Some(l),
            },
        }
    }
}

/// Loads the embedding model (and ONNX Runtime) when first needed.
pub type EmbedderLoader =
    Box<dyn Fn() -> std::result::Result<Embedder, Box<dyn std::error::Error + Send + Sync>> + Send + Sync>;

/// The loaded embedder, held under its lock. Dropping it stamps the
/// last-use time, so a long bulk embedding counts as use until it ends.
pub(crate) struct EmbedderGuard<'a>(
    std::sync::MutexGuard<'a, Option<Embedder>>,
    &'a Mutex<std::time::Instant>,
);

impl Drop for EmbedderGuard<'_> {
    fn drop(&mut self) {
        *lock(self.1) = std::time::Instant::now();
    }
}

impl std::ops::Deref for EmbedderGuard<'_> {
    type Target = Embedder;
    fn deref(&self) -> &Embedder {
        match self.0.as_ref() {
            Some(e) => e,
            // Only Kb::embedder builds a guard, and only after filling the slot.
            None => unreachable!("an EmbedderGuard is only made over a loaded embedder"),
        }
    }
}

impl std::ops::DerefMut for EmbedderGuard<'_> {
    fn deref_mut(&mut self) -> &mut Embedder {
        match self.0.as_mut() {
            Some(e) => e,
            None => unreachable!("an EmbedderGuard is only made over a loaded embedder"),
        }
    }
}

/// Opens the BM25 index; one built with another schema (an older Jarvis,
/// before a field was added) is derived data, so it is removed and the
/// catch-up on open rebuilds it from the store instead of refusing to start.
fn open_bm25(dir: &Path) -> Result<Bm25Index> {
    match Bm25Index::open_or_create(dir) {
        Err(Bm25Error::SchemaMismatch { detail, .. }) => {
            tracing::warn!(path = %dir.display(), %detail, "the BM25 index has an older schema; rebuilding it from the store");
            std::fs::remove_dir_all(dir).map_err(|e| {
                KbError::Bm25(Bm25Error::Open {
                    path: dir.to_path_buf(),
                    source: Box::new(e),
                })
            })?;
            Ok(Bm25Index::open_or_create(dir)?)
        }
        other => Ok(other?),
    }
}

/// Fault injection for the crash tests (compiled into test builds only; see
/// [`crate::failpoint`]): the process aborts here when `name` is armed.
pub fn failpoint(name: &str) {
    crate::failpoint::abort_at(name);
}

use crate::lock::lock;

/// What BM25 indexes for a chunk: its embedded text and filter fields.
pub(crate) fn index_doc(rec: &ChunkRecord) -> IndexDoc {
    let s = |k: &str| rec.meta_str(k).map(str::to_string);
    // A paper's title is a headline, not a name (see `IndexDoc::headlines`).
    let (titles, headlines) = if rec.is(DocType::Paper) {
        (Vec::new(), names(rec))
    } else {
        (names(rec), Vec::new())
    };
    IndexDoc {
        chunk_id: ChunkId(rec.id),
        text: if rec.embed_text.is_empty() {
            rec.text.clone()
        } else {
            rec.embed_text.clone()
        },
        titles,
        headlines,
        aliases: aliases(rec),
        headings: s("section").unwrap_or_default(),
        authors: s("authors").unwrap_or_default(),
        source: s("source").unwrap_or_default(),
        visibility: rec.visibility(),
        doc_type: s("doc_type").unwrap_or_default(),
        annotation_kind: s("annotation_kind"),
        category: s("category"),
        status: s("status"),
        entity: s("entity"),
        tags: rec.meta_str("tags").map(split_tags).unwrap_or_default(),
        fields: rec
            .meta
            .iter()
            .filter(|(k, _)| k.starts_with("x_"))
            .map(|(k, v)| (k.clone(), scalar_string(v)))
            .collect(),
    }
}

/// A document's titles: its `title`, and for a note also its file stem
/// (Obsidian's name for it) when that differs.
fn names(rec: &ChunkRecord) -> Vec<String> {
    let mut out: Vec<String> = rec
        .meta_str("title")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .into_iter()
        .collect();
    if rec.is(DocType::Note) {
        if let Some(stem) = rec
            .meta_str("file_path")
            .and_then(|p| Path::new(p).file_stem())
            .map(|s| s.to_string_lossy().into_owned())
        {
            if !out.iter().any(|t| t == &stem) {
                out.push(stem);
            }
        }
    }
    out
}

/// A note's aliases: the `aliases` list written by vault ingest (a string
/// counts as one alias).
fn aliases(rec: &ChunkRecord) -> Vec<String> {
    match rec.meta.get("aliases") {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str())
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect(),
        Some(serde_json::Value::String(a)) if !a.trim().is_empty() => vec![a.trim().to_string()],
        _ => Vec::new(),
    }
}

/// `|a|b|c|` → [a, b, c].
pub fn split_tags(s: &str) -> Vec<String> {
    s.split('|').filter(|t| !t.is_empty()).map(str::to_string).collect()
}

/// A metadata scalar as the string filters compare against.
pub use crate::store::scalar_string;

#[cfg(test)]
mod tests;
