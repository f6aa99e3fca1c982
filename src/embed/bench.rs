//! A throughput probe for the embedder: chunks per second at 128 and 256
//! tokens, for `cargo xtask bench` and the ingest-overhead comparison.
//!
//! It measures; it asserts nothing. The figures depend on the machine and on
//! the ORT thread count the embedder was loaded with.

use std::fmt;
use std::time::Instant;

#[cfg(test)]
use super::DEFAULT_BATCH_SIZE;
use super::{EmbedError, Embedder};

/// The probe's token lengths.
pub const BENCH_TOKENS: [usize; 2] = [128, 256];

/// One measured length.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    /// Target tokens per chunk (special tokens included), capped at the model max.
    pub tokens: usize,
    pub chunks: usize,
    pub seconds: f64,
    pub chunks_per_sec: f64,
}

/// What [`bench_embed`] measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub model: String,
    pub batch_size: usize,
    pub rows: Vec<BenchRow>,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "embedding throughput, {} (batch {})", self.model, self.batch_size)?;
        for r in &self.rows {
            writeln!(
                f,
                "  {:>4} tokens: {:>4} chunks in {:>6.2} s = {:>6.1} chunks/s",
                r.tokens, r.chunks, r.seconds, r.chunks_per_sec
            )?;
        }
        Ok(())
    }
}

const WORDS: &[&str] = &[
    "retrieval",
    "vector",
    "index",
    "paper",
    "cytometry",
    "protein",
    "graph",
    "neural",
    "sequence",
    "measurement",
    "sample",
    "analysis",
    "kernel",
    "memory",
    "latency",
    "corpus",
    "annotation",
    "experiment",
    "method",
    "result",
    "figure",
    "table",
    "model",
    "signal",
];

/// Synthetic prose of about `tokens` tokens; `seed` varies the word order so
/// no two chunks are identical.
fn synthetic_chunk(embedder: &Embedder, tokens: usize, seed: usize) -> Result<String, EmbedError> {
    let mut text = String::new();
    let mut i = seed;
    // Each word is 1–3 word pieces; grow in steps and re-count, which is
    // cheap next to the embedding being measured.
    while embedder.count_tokens(&text)? < tokens {
        for _ in 0..8 {
            text.push_str(WORDS[(i * 7 + seed) % WORDS.len()]);
            text.push(if i % 11 == 10 { '.' } else { ' ' });
            i += 1;
        }
    }
    Ok(text)
}

/// Embeds `n` synthetic chunks at each of [`BENCH_TOKENS`] (capped at the
/// model's max tokens) with the embedder's batch size and reports chunks/s.
pub fn bench_embed(embedder: &mut Embedder, n: usize) -> Result<BenchReport, EmbedError> {
    let n = n.max(1);
    let mut rows = Vec::new();
    for target in BENCH_TOKENS {
        let tokens = target.min(embedder.spec().max_tokens);
        let texts = (0..n)
            .map(|s| synthetic_chunk(embedder, tokens, s))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        // One untimed batch so session warm-up (allocations, kernel
        // selection) is not billed to the first length measured.
        embedder.embed_documents(&refs[..refs.len().min(2)])?;
        let started = Instant::now();
        embedder.embed_documents(&refs)?;
        let seconds = started.elapsed().as_secs_f64();
        let row = BenchRow {
            tokens,
            chunks: n,
            seconds,
            chunks_per_sec: n as f64 / seconds.max(1e-9),
        };
        tracing::info!(
            tokens,
            chunks = n,
            seconds,
            chunks_per_sec = row.chunks_per_sec,
            "embed bench"
        );
        rows.push(row);
    }
    Ok(BenchReport {
        model: embedder.model_id().to_owned(),
        batch_size: embedder.batch_size(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::test_support::natives;
    use super::super::{lookup, runtime, DEFAULT_MODEL_ID};
    use super::*;

    /// Prints load times and chunks/s (run with `--nocapture`; set
    /// `JARVIS_BENCH_N` for a longer run). Asserts only that it ran.
    #[test]
    fn throughput_probe_reports_both_lengths() {
        let n_chunks = std::env::var("JARVIS_BENCH_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8);
        let n = natives();
        let started = Instant::now();
        runtime::environment(&n.ort_dylib).unwrap();
        let env_ms = started.elapsed().as_millis();
        let started = Instant::now();
        let spec = lookup(DEFAULT_MODEL_ID).unwrap();
        let mut e = Embedder::load(&n.ort_dylib, &n.files, spec, None, 2).unwrap();
        let load_ms = started.elapsed().as_millis();
        eprintln!("ORT environment {env_ms} ms (0 if another test loaded it first); model + tokenizer {load_ms} ms");

        let chunk = synthetic_chunk(&e, 128, 3).unwrap();
        let count = e.count_tokens(&chunk).unwrap();
        assert!((128..140).contains(&count), "{count} tokens");
        for batch in [1, DEFAULT_BATCH_SIZE] {
            e.set_batch_size(batch);
            let report = bench_embed(&mut e, n_chunks).unwrap();
            eprintln!("{report}");
            assert_eq!(report.rows.iter().map(|r| r.tokens).collect::<Vec<_>>(), [128, 256]);
            assert!(report.rows.iter().all(|r| r.chunks_per_sec > 0.0));
        }
    }
}
