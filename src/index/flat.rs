//! The exact dense index: an int8 copy of every chunk vector, scanned in
//! full for each query.
//!
//! Owns one directory holding `vectors.i8` (fixed-size records: chunk id
//! `u32`, scale `f32`, then `dims` signed bytes) and `meta.json` (format,
//! dimensions, record count and the store sequence number the file
//! reflects). The data file is memory-mapped read-only and written with
//! `pwrite`, so an idle owner's *anonymous* memory does not grow with the
//! library: the records live in the page cache, which the kernel may drop.
//!
//! Each vector is L2-normalised and quantised with its own scale
//! (`v ≈ scale · q`, `|q| ≤ 127`), so `scale_a · scale_b · (q_a · q_b)`
//! approximates the cosine. The scan returns *candidates* in that
//! approximate order; the caller re-scores them in f32 from the truth store
//! (see `kb::search`), which makes the final ranking exact as long as the
//! true top-k is among the candidates. With the caller's margin (several
//! times `k`) that holds on every set measured.
//!
//! SIMD (`flat/scan.rs`): on a CPU with VNNI the dot product is the
//! `vpdpbusd` instruction (32 byte pairs per step); otherwise a loop LLVM
//! auto-vectorises, compiled for AVX2 and for the baseline. The kernel is
//! picked once at open and every kernel gives the same integers. A large
//! pool is split in blocks over the machine's cores.
//!
//! Must not: decide what is visible (the caller passes the allowed chunk
//! ids, and chunks outside them are never scored), read the store, or embed.
//!
//! # Durability
//! [`FlatIndex::add`] and [`FlatIndex::delete`] stage changes;
//! [`FlatIndex::commit`] first removes `meta.json`, then rewrites the
//! touched records (a deletion moves the last record into the hole, so the
//! file stays dense), fsyncs, and writes `meta.json` anew (temp file +
//! rename). A crash in between leaves no `meta.json`: the next open finds
//! the copy unreliable, empties it, and the knowledge base's catch-up
//! rebuilds it (journal replay from zero, or the whole store). A crash
//! before or after leaves a file that matches its `meta.json`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use roaring::RoaringBitmap;
use thiserror::Error;

use super::ChunkId;

mod scan;
#[cfg(test)]
use scan::PARALLEL_MIN;
use scan::{bytemuck_i8, Pool, Query, HEADER};
pub use scan::{dot_i8, Kernel};

const DATA_FILE: &str = "vectors.i8";
const META_FILE: &str = "meta.json";
const FORMAT: u32 = 1;

/// What went wrong in the exact index, and what to do about it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FlatError {
    /// Reading or writing the index files failed.
    #[error("the exact vector index at {} could not {action}: {}", path.display(), io_advice(source))]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A vector passed in has the wrong length.
    #[error("vector for {what} has {got} dimensions, expected {expected}; the embedder and the index disagree, so run `jarvis kb reindex`")]
    WrongLength { what: String, got: usize, expected: usize },
    /// A vector is all zeros or not finite.
    #[error("vector for {what} is zero or not finite and has no cosine direction; this is an embedder bug, please report it")]
    Degenerate { what: String },
    /// The chunk id does not fit a `u32`.
    #[error("chunk id {0} is above 4294967295 and cannot be stored in the vector index; the store must allocate chunk ids below 2^32")]
    IdOutOfRange(ChunkId),
}

/// A full disk says so and how to fix it; anything else keeps the repair.
fn io_advice(e: &std::io::Error) -> String {
    if crate::error_kind::is_disk_full(e) {
        crate::error_kind::io_reason(e)
    } else {
        format!("{e}; check the disk, or delete the directory and run `jarvis kb reindex`")
    }
}

impl FlatError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            FlatError::Io { source, .. } => crate::error_kind::io_kind(source),
            _ => ErrorKind::Internal,
        }
    }
}

type Result<T> = std::result::Result<T, FlatError>;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Meta {
    format: u32,
    dims: usize,
    records: u64,
    seq: u64,
}

/// One vector, normalised and quantised: `v / |v| ≈ scale · q`.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    pub scale: f32,
    pub q: Vec<i8>,
}

/// Normalises `v` and quantises it with its own scale (max |component| →
/// 127). `None` for a zero or non-finite vector.
pub fn quantize(v: &[f32]) -> Option<Quantized> {
    if v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs())) / norm;
    if !(norm > 0.0 && max > 0.0) {
        return None;
    }
    let scale = max / 127.0;
    let q = v
        .iter()
        .map(|x| (x / norm / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    Some(Quantized { scale, q })
}

/// Changes staged since the last commit.
#[derive(Debug, Default)]
struct Pending {
    clear: bool,
    /// id → new vector, or `None` for a deletion. Later calls win.
    ops: BTreeMap<u32, Option<Quantized>>,
}

/// The int8 copy of every chunk vector (see the module docs).
pub struct FlatIndex {
    dir: PathBuf,
    dims: usize,
    file: File,
    map: Option<Mmap>,
    records: usize,
    ids: RoaringBitmap,
    seq: Option<u64>,
    pending: Pending,
    threads: usize,
    kernel: Kernel,
}

impl std::fmt::Debug for FlatIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatIndex")
            .field("dir", &self.dir)
            .field("dims", &self.dims)
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

impl FlatIndex {
    /// Opens the copy in `dir` for `dims`-dimensional vectors, creating it
    /// if needed. A copy that cannot be trusted — no `meta.json` (a crash
    /// inside a commit), other dimensions, a size or id set that disagrees
    /// with its metadata — is emptied and reports no sequence number, so
    /// the caller rebuilds it.
    pub fn open_or_create(dir: &Path, dims: usize) -> Result<Self> {
        let io = |action: &'static str| {
            let path = dir.to_owned();
            move |source| FlatError::Io { path, action, source }
        };
        std::fs::create_dir_all(dir).map_err(io("create its directory"))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(DATA_FILE))
            .map_err(io("open its data file"))?;
        let mut index = FlatIndex {
            dir: dir.to_owned(),
            dims,
            file,
            map: None,
            records: 0,
            ids: RoaringBitmap::new(),
            seq: None,
            pending: Pending::default(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: Kernel::detect(),
        };
        let meta: Option<Meta> = std::fs::read(dir.join(META_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let len = index.file.metadata().map_err(io("read its size"))?.len();
        let trusted = match &meta {
            Some(m) if m.format == FORMAT && m.dims == dims && len == m.records * index.rec() as u64 => {
                index.records = m.records as usize;
                index.remap()?;
                index.load_ids()
            }
            _ => false,
        };
        if trusted {
            index.seq = meta.map(|m| m.seq);
        } else {
            if len > 0 || meta.is_some() {
                tracing::warn!(path = %dir.display(), "the exact vector index is incomplete (interrupted write); it will be rebuilt from the store");
            }
            index.reset()?;
        }
        tracing::debug!(path = %dir.display(), records = index.records, seq = ?index.seq, "opened the exact vector index");
        Ok(index)
    }

    fn rec(&self) -> usize {
        HEADER + self.dims
    }

    /// Empties the file and forgets the sequence number.
    fn reset(&mut self) -> Result<()> {
        let _ = std::fs::remove_file(self.dir.join(META_FILE));
        self.map = None;
        self.file.set_len(0).map_err(self.io("empty its data file"))?;
        self.records = 0;
        self.ids = RoaringBitmap::new();
        self.seq = None;
        Ok(())
    }

    fn io(&self, action: &'static str) -> impl FnOnce(std::io::Error) -> FlatError {
        let path = self.dir.clone();
        move |source| FlatError::Io { path, action, source }
    }

    /// Maps the first `records` records (or nothing when empty).
    fn remap(&mut self) -> Result<()> {
        self.map = None;
        if self.records == 0 {
            return Ok(());
        }
        // SAFETY: the file is only modified by this struct, through `&mut
        // self`, and the map is dropped and re-made after every change;
        // the store's owner lock keeps other processes out of the
        // directory. A truncation behind our back would be a SIGBUS, not
        // silent corruption.
        #[allow(unsafe_code)]
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(self.records * self.rec())
                .map(&self.file)
        }
        .map_err(self.io("map its data file"))?;
        self.map = Some(map);
        Ok(())
    }

    /// Reads every record's id; false when an id repeats (not a state a
    /// commit leaves).
    fn load_ids(&mut self) -> bool {
        let rec = self.rec();
        let mut ids = RoaringBitmap::new();
        let ok = self
            .data()
            .chunks_exact(rec)
            .all(|r| ids.insert(u32::from_le_bytes([r[0], r[1], r[2], r[3]])));
        self.ids = ids;
        ok
    }

    fn data(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The vectors' dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Use at most `n` threads per scan (at least 1).
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    /// Scan with `kernel` (one of [`Kernel::available`]; benchmarks and
    /// tests compare them). A kernel this CPU cannot run is refused and the
    /// current one kept.
    pub fn set_kernel(&mut self, kernel: Kernel) -> bool {
        let ok = Kernel::available().contains(&kernel);
        if ok {
            self.kernel = kernel;
        }
        ok
    }

    /// The kernel scans use.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The sequence number of the last commit, or `None` when never
    /// committed (or emptied because it could not be trusted).
    pub fn committed_seq(&self) -> Option<u64> {
        self.seq
    }

    /// Number of committed vectors.
    pub fn len(&self) -> u64 {
        self.records as u64
    }

    /// True when nothing is committed.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Every committed chunk id.
    pub fn all_ids(&self) -> &RoaringBitmap {
        &self.ids
    }

    /// Bytes on disk.
    pub fn disk_size(&self) -> u64 {
        (self.records * self.rec()) as u64
    }

    /// The committed (dequantised, unit-length) vector of `id`, for
    /// consistency checks. Linear in the index size.
    pub fn get(&self, id: ChunkId) -> Option<Vec<f32>> {
        let id = id.as_item_id()?;
        let r = self
            .data()
            .chunks_exact(self.rec())
            .find(|r| r[..4] == id.to_le_bytes())?;
        let scale = f32::from_le_bytes([r[4], r[5], r[6], r[7]]);
        Some(
            bytemuck_i8(&r[HEADER..])
                .iter()
                .map(|&x| scale * f32::from(x))
                .collect(),
        )
    }

    /// Every committed record as (chunk id, dequantised unit vector), in
    /// file order: for consistency checks against the store.
    pub fn records(&self) -> impl Iterator<Item = (ChunkId, Vec<f32>)> + '_ {
        self.data().chunks_exact(self.rec()).map(|r| {
            let scale = f32::from_le_bytes([r[4], r[5], r[6], r[7]]);
            let id = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let v = bytemuck_i8(&r[HEADER..])
                .iter()
                .map(|&x| scale * f32::from(x))
                .collect();
            (ChunkId::from(id), v)
        })
    }

    /// Stages vectors for the next commit; an id already present is replaced.
    pub fn add(&mut self, items: &[(ChunkId, Vec<f32>)]) -> Result<()> {
        let mut staged = Vec::with_capacity(items.len());
        for (id, v) in items {
            let item = id.as_item_id().ok_or(FlatError::IdOutOfRange(*id))?;
            if v.len() != self.dims {
                return Err(FlatError::WrongLength {
                    what: format!("chunk {id}"),
                    got: v.len(),
                    expected: self.dims,
                });
            }
            let q = quantize(v).ok_or_else(|| FlatError::Degenerate {
                what: format!("chunk {id}"),
            })?;
            staged.push((item, q));
        }
        for (item, q) in staged {
            self.pending.ops.insert(item, Some(q));
        }
        Ok(())
    }

    /// Stages deletion of `ids`; ids not in the index are ignored.
    pub fn delete(&mut self, ids: &[ChunkId]) {
        for id in ids {
            if let Some(item) = id.as_item_id() {
                self.pending.ops.insert(item, None);
            }
        }
    }

    /// Stages removal of every vector.
    pub fn clear(&mut self) {
        self.pending = Pending {
            clear: true,
            ops: BTreeMap::new(),
        };
    }

    /// Drops every staged change.
    pub fn discard_uncommitted(&mut self) {
        self.pending = Pending::default();
    }

    /// Applies the staged changes and records `seq` (see the module docs
    /// for the crash protocol). Without staged changes only `meta.json` is
    /// rewritten.
    pub fn commit(&mut self, seq: u64) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let changes = pending.clear || !pending.ops.is_empty();
        if changes {
            // From here until the new meta.json exists, an open distrusts
            // the file.
            match std::fs::remove_file(self.dir.join(META_FILE)) {
                Ok(()) => sync_dir(&self.dir).map_err(self.io("sync its directory"))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.io("remove its metadata")(e)),
            }
            self.seq = None;
            let applied = self.apply(pending);
            if let Err(e) = applied {
                // The file may be half-changed: empty it, so nothing reads
                // it before a rebuild (catch-up does that on the next open).
                let _ = self.reset();
                return Err(e);
            }
            crate::failpoint::abort_at("flat_data_written");
            self.file.sync_data().map_err(self.io("sync its data file"))?;
        }
        self.write_meta(seq)?;
        self.seq = Some(seq);
        Ok(())
    }

    fn apply(&mut self, pending: Pending) -> Result<()> {
        let rec = self.rec();
        if pending.clear {
            self.map = None;
            self.file.set_len(0).map_err(self.io("empty its data file"))?;
            self.records = 0;
            self.ids = RoaringBitmap::new();
        }
        // Every present id the commit touches leaves first (a replacement
        // is a deletion plus an addition).
        let mut gone: RoaringBitmap = pending.ops.keys().copied().collect();
        gone &= &self.ids;
        if !gone.is_empty() {
            let data = self.data();
            let holes: Vec<usize> = data
                .chunks_exact(rec)
                .enumerate()
                .filter(|(_, r)| gone.contains(u32::from_le_bytes([r[0], r[1], r[2], r[3]])))
                .map(|(i, _)| i)
                .collect();
            let new_len = self.records - holes.len();
            // Holes below the new end are filled by the surviving records
            // above it.
            let low: Vec<usize> = holes.iter().copied().filter(|&h| h < new_len).collect();
            let movers: Vec<usize> = (new_len..self.records)
                .filter(|i| holes.binary_search(i).is_err())
                .collect();
            let mut moves = Vec::with_capacity(low.len());
            for (&to, &from) in low.iter().zip(&movers) {
                moves.push((to, data[from * rec..(from + 1) * rec].to_vec()));
            }
            for (to, bytes) in moves {
                self.file
                    .write_all_at(&bytes, (to * rec) as u64)
                    .map_err(self.io("write a record"))?;
            }
            self.map = None;
            self.file
                .set_len((new_len * rec) as u64)
                .map_err(self.io("shrink its data file"))?;
            self.records = new_len;
            self.ids -= &gone;
        }
        let adds: Vec<(u32, Quantized)> = pending.ops.into_iter().filter_map(|(id, q)| Some((id, q?))).collect();
        if !adds.is_empty() {
            let mut buf = Vec::with_capacity(adds.len() * rec);
            for (id, q) in &adds {
                buf.extend_from_slice(&id.to_le_bytes());
                buf.extend_from_slice(&q.scale.to_le_bytes());
                buf.extend(q.q.iter().map(|&x| x as u8));
                self.ids.insert(*id);
            }
            self.map = None;
            self.file
                .write_all_at(&buf, (self.records * rec) as u64)
                .map_err(self.io("append records"))?;
            self.records += adds.len();
        }
        self.remap()
    }

    fn write_meta(&self, seq: u64) -> Result<()> {
        let meta = Meta {
            format: FORMAT,
            dims: self.dims,
            records: self.records as u64,
            seq,
        };
        let bytes = serde_json::to_vec(&meta).map_err(|e| self.io("encode its metadata")(std::io::Error::other(e)))?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(self.io("write its metadata"))?;
        tmp.write_all(&bytes).map_err(self.io("write its metadata"))?;
        tmp.as_file().sync_all().map_err(self.io("write its metadata"))?;
        tmp.persist(self.dir.join(META_FILE))
            .map_err(|e| self.io("write its metadata")(e.error))?;
        sync_dir(&self.dir).map_err(self.io("sync its directory"))
    }

    /// The `k` committed chunks most similar to `query` by the int8
    /// approximation, best first, as approximate cosines. With `pool`, only
    /// those chunk ids are scored (an empty pool allows nothing).
    pub fn search(&self, query: &[f32], pool: Option<&RoaringBitmap>, k: usize) -> Result<Vec<(ChunkId, f32)>> {
        if query.len() != self.dims {
            return Err(FlatError::WrongLength {
                what: "the query".into(),
                got: query.len(),
                expected: self.dims,
            });
        }
        let q = quantize(query).ok_or_else(|| FlatError::Degenerate {
            what: "the query".into(),
        })?;
        if k == 0 || self.records == 0 || pool.is_some_and(RoaringBitmap::is_empty) {
            return Ok(Vec::new());
        }
        let pool = pool.map(Pool::new);
        let top = scan::scan(
            self.kernel,
            self.data(),
            self.rec(),
            &Query::new(&q.q),
            pool.as_ref(),
            k,
            self.threads,
        );
        Ok(top
            .into_sorted()
            .into_iter()
            .map(|c| (ChunkId::from(c.1), c.0 * q.scale))
            .collect())
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests;
