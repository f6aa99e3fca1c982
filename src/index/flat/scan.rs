//! The int8 scan itself: the dot-product kernels, the best-`k` heap, the
//! pool bit set, and the split of one scan over several threads.
//!
//! Kernels, picked once per CPU ([`Kernel::detect`]):
//! - **VNNI** (`vpdpbusd`, AVX-VNNI or AVX-512 VNNI on 256-bit registers):
//!   one instruction multiplies 32 byte pairs and adds them in fours into
//!   eight i32 lanes. It takes an *unsigned* byte operand, so the query
//!   goes in as `|q|` and its signs move onto the stored vector
//!   (`vpsignb`): `Σ |qᵢ| · sign(qᵢ)·vᵢ = Σ qᵢ·vᵢ`, exactly, since stored
//!   components lie in −127…127 and their negation cannot overflow. Four
//!   accumulators keep the multiply-adds from waiting on each other.
//! - **AVX2** and the portable baseline: the same scalar loop, written as 16
//!   independent i32 lanes so LLVM vectorises it (sign-extend + `vpmaddwd`),
//!   compiled twice and chosen at run time.
//!
//! Every kernel computes the same integer dot product, so the candidates and
//! their order do not depend on the CPU; the tests check each kernel the
//! machine can run against the portable one.
//!
//! A scan above [`PARALLEL_MIN`] records per thread is cut into blocks that
//! the threads take in turn from a shared counter, so a core the system
//! borrows for a moment delays only the blocks it would have taken, not a
//! fixed half of the scan (measured at 1M records on 2 cores: p95 within
//! 0.5 ms of p50 this way, against up to 7 ms over with fixed halves).
//!
//! Must not: read the store, decide the pool, or know what a chunk is.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};

use roaring::RoaringBitmap;

/// Bytes before the quantised components: id (u32 LE) and scale (f32 LE).
pub(super) const HEADER: usize = 8;
/// Records per thread below which a scan stays on one thread: spawning
/// costs more than it saves on a small pool.
pub(super) const PARALLEL_MIN: usize = 16_384;
/// Records per block that a thread takes at a time: big enough that the
/// shared counter is touched a few hundred times per million records, small
/// enough that the last block finishes soon after the others.
const BLOCK: usize = 4_096;

/// A scored candidate, ordered so that a `BinaryHeap` of them is a
/// min-heap on the score (the worst kept candidate on top).
#[derive(Debug, Clone, Copy)]
pub(super) struct Cand(pub f32, pub u32);

impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Reversed: the smallest score is the heap's maximum. Ties: the
        // larger id is "worse", so results are deterministic.
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}

/// The best `k` candidates seen so far.
pub(super) struct Top {
    heap: BinaryHeap<Cand>,
    k: usize,
}

impl Top {
    pub(super) fn new(k: usize) -> Self {
        Top {
            heap: BinaryHeap::with_capacity(k + 1),
            k,
        }
    }

    #[inline(always)]
    fn offer(&mut self, c: Cand) {
        if self.heap.len() < self.k {
            self.heap.push(c);
        } else if self.heap.peek().is_some_and(|w| c < *w) {
            self.heap.pop();
            self.heap.push(c);
        }
    }

    fn merge(&mut self, other: Top) {
        for c in other.heap {
            self.offer(c);
        }
    }

    /// Best first.
    pub(super) fn into_sorted(self) -> Vec<Cand> {
        // `into_sorted_vec` is ascending by `Ord`, which is descending score.
        self.heap.into_sorted_vec()
    }
}

/// The pool as a dense bit set over chunk ids: one bit test per record
/// instead of a roaring lookup.
pub(super) struct Pool(Vec<u64>);

impl Pool {
    pub(super) fn new(b: &RoaringBitmap) -> Self {
        let words = b.max().map_or(0, |m| m as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for id in b {
            bits[id as usize / 64] |= 1 << (id % 64);
        }
        Pool(bits)
    }

    #[inline(always)]
    fn contains(&self, id: u32) -> bool {
        self.0.get(id as usize / 64).is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
}

/// The query in the forms the kernels read: signed components, and their
/// magnitudes as unsigned bytes for VNNI.
pub(super) struct Query {
    q: Vec<i8>,
    abs: Vec<u8>,
}

impl Query {
    pub(super) fn new(q: &[i8]) -> Self {
        Query {
            q: q.to_vec(),
            abs: q.iter().map(|x| x.unsigned_abs()).collect(),
        }
    }
}

/// Dot product of two int8 vectors in i32. Sixteen independent lanes so
/// LLVM vectorises the loop; `#[inline(always)]` so each scan variant
/// (baseline, AVX2) gets its own copy compiled for its features.
#[inline(always)]
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
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

/// `&[u8]` as `&[i8]` (same size and alignment, every bit pattern valid).
#[inline(always)]
pub(super) fn bytemuck_i8(b: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size and alignment and every bit
    // pattern is a valid value of both; the length is unchanged.
    #[allow(unsafe_code)]
    unsafe {
        std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len())
    }
}

#[inline(always)]
fn id_scale(r: &[u8]) -> (u32, f32) {
    (
        u32::from_le_bytes([r[0], r[1], r[2], r[3]]),
        f32::from_le_bytes([r[4], r[5], r[6], r[7]]),
    )
}

/// Scans `records` (whole records of `rec` bytes) into `top`.
#[inline(always)]
fn scan_generic(records: &[u8], rec: usize, q: &Query, pool: Option<&Pool>, top: &mut Top) {
    for r in records.chunks_exact(rec) {
        let (id, scale) = id_scale(r);
        if pool.is_some_and(|p| !p.contains(id)) {
            continue;
        }
        top.offer(Cand(scale * dot_i8(&q.q, bytemuck_i8(&r[HEADER..])) as f32, id));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn scan_avx2(records: &[u8], rec: usize, q: &Query, pool: Option<&Pool>, top: &mut Top) {
    scan_generic(records, rec, q, pool, top)
}

/// One VNNI kernel per instruction set that has `vpdpbusd` on 256-bit
/// registers; the bodies are identical but for the intrinsic's name.
macro_rules! vnni_kernel {
    ($name:ident, $features:literal, $dpbusd:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(unsafe_code)]
        fn $name(records: &[u8], rec: usize, q: &Query, pool: Option<&Pool>, top: &mut Top) {
            use std::arch::x86_64::*;
            let dims = q.q.len();
            let blocks = dims / 32;
            let tail = blocks * 32;
            for r in records.chunks_exact(rec) {
                let (id, scale) = id_scale(r);
                if pool.is_some_and(|p| !p.contains(id)) {
                    continue;
                }
                let v = &r[HEADER..HEADER + dims];
                let mut acc = [_mm256_setzero_si256(); 4];
                for j in 0..blocks {
                    // SAFETY: `j * 32 + 32 <= tail <= dims`, and `v`,
                    // `q.q` and `q.abs` each hold `dims` bytes, so every
                    // unaligned 32-byte load stays inside its slice.
                    let (x, sign, mag) = unsafe {
                        (
                            _mm256_loadu_si256(v.as_ptr().add(j * 32).cast()),
                            _mm256_loadu_si256(q.q.as_ptr().add(j * 32).cast()),
                            _mm256_loadu_si256(q.abs.as_ptr().add(j * 32).cast()),
                        )
                    };
                    acc[j % 4] = $dpbusd(acc[j % 4], mag, _mm256_sign_epi8(x, sign));
                }
                let a = _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), _mm256_add_epi32(acc[2], acc[3]));
                let s4 = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256::<1>(a));
                let s2 = _mm_add_epi32(s4, _mm_shuffle_epi32::<0b0100_1110>(s4));
                let s1 = _mm_add_epi32(s2, _mm_shuffle_epi32::<0b1011_0001>(s2));
                let dot = _mm_cvtsi128_si32(s1) + dot_i8(&q.q[tail..], bytemuck_i8(&v[tail..]));
                top.offer(Cand(scale * dot as f32, id));
            }
        }
    };
}

vnni_kernel!(scan_avx_vnni, "avx2,avxvnni", _mm256_dpbusd_avx_epi32);
vnni_kernel!(scan_avx512_vnni, "avx2,avx512vnni,avx512vl", _mm256_dpbusd_epi32);

/// Which scan loop this CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The auto-vectorised loop on the target's baseline (SSE2 on x86-64).
    Portable,
    /// The same loop compiled for AVX2.
    Avx2,
    /// `vpdpbusd` from AVX-VNNI (Alder Lake, Sapphire Rapids, Zen 5 …).
    AvxVnni,
    /// `vpdpbusd` from AVX-512 VNNI on 256-bit registers (Ice Lake, Zen 4 …).
    Avx512Vnni,
}

impl Kernel {
    /// Every kernel this CPU can run, fastest first.
    pub fn available() -> Vec<Kernel> {
        let mut all = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                if std::arch::is_x86_feature_detected!("avxvnni") {
                    all.push(Kernel::AvxVnni);
                }
                if std::arch::is_x86_feature_detected!("avx512vnni") && std::arch::is_x86_feature_detected!("avx512vl")
                {
                    all.push(Kernel::Avx512Vnni);
                }
                all.push(Kernel::Avx2);
            }
        }
        all.push(Kernel::Portable);
        all
    }

    /// The fastest kernel this CPU can run.
    pub fn detect() -> Kernel {
        Kernel::available().first().copied().unwrap_or(Kernel::Portable)
    }

    fn scan(self, records: &[u8], rec: usize, q: &Query, pool: Option<&Pool>, top: &mut Top) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY (all three): `available()` only lists a kernel after
            // `is_x86_feature_detected!` confirmed every feature its
            // `target_feature` attribute enables, and `FlatIndex` only holds
            // kernels from that list.
            #[allow(unsafe_code)]
            match self {
                Kernel::AvxVnni => return unsafe { scan_avx_vnni(records, rec, q, pool, top) },
                Kernel::Avx512Vnni => return unsafe { scan_avx512_vnni(records, rec, q, pool, top) },
                Kernel::Avx2 => return unsafe { scan_avx2(records, rec, q, pool, top) },
                Kernel::Portable => {}
            }
        }
        scan_generic(records, rec, q, pool, top)
    }
}

/// The best `k` of `records` records of `rec` bytes in `data`, on up to
/// `threads` threads (the caller's among them).
pub(super) fn scan(
    kernel: Kernel,
    data: &[u8],
    rec: usize,
    q: &Query,
    pool: Option<&Pool>,
    k: usize,
    threads: usize,
) -> Top {
    let records = data.len() / rec;
    let threads = threads.min(records / PARALLEL_MIN).max(1);
    let mut top = Top::new(k);
    if threads == 1 {
        kernel.scan(data, rec, q, pool, &mut top);
        return top;
    }
    let blocks = records.div_ceil(BLOCK);
    let next = AtomicUsize::new(0);
    let work = |top: &mut Top| loop {
        let b = next.fetch_add(1, Ordering::Relaxed);
        if b >= blocks {
            break;
        }
        let end = ((b + 1) * BLOCK).min(records);
        kernel.scan(&data[b * BLOCK * rec..end * rec], rec, q, pool, top);
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Top::new(k);
                    work(&mut mine);
                    mine
                })
            })
            .collect();
        work(&mut top);
        for h in helpers {
            // A scan cannot panic short of a bug; its blocks are then
            // missing from the answer, which the log says.
            match h.join() {
                Ok(part) => top.merge(part),
                Err(_) => tracing::error!(
                    "a thread of the exact vector scan panicked; its blocks are missing from this search"
                ),
            }
        }
    });
    top
}
