//! Cross-encoder re-ranking: score (query, text) pairs jointly.
//!
//! The retrieval pipeline's last, optional stage. A cross-encoder reads the
//! query and one candidate chunk *together* as a BERT sentence pair
//! (`[CLS] query [SEP] text [SEP]`, token types 0 then 1) and returns one
//! relevance logit per pair; nothing can be precomputed, which is why it only
//! sees the `rerank_top_n` candidates the indexes already chose — and only
//! candidates from the privacy-filtered pool, since it never reads the store.
//!
//! Scores are the model's raw logits (higher = more relevant). For a
//! single-logit model such as ms-marco-MiniLM-L6-v2, sentence-transformers'
//! `predict` would apply a sigmoid; that is monotonic, so the ranking is the
//! same and we skip it.
//!
//! **Testing, honestly:** no real cross-encoder weights are obtainable where
//! Jarvis is developed, so the tests drive this exact code path with a tiny
//! deterministic ONNX model built by
//! `tests/fixtures/tiny-cross-encoder/make_tiny_cross_encoder.py` (its scores
//! count query-word overlaps plus a fixed per-word weight and a length term). The tests prove
//! the pairs, attention mask and token types reach the graph correctly and
//! that the ranking follows the model's output; they say nothing about
//! re-ranking *quality*, which has not been measured.
//!
//! Blocking and CPU-heavy like the rest of [`super`]: run it off the async
//! runtime.

use std::path::Path;

use ort::session::Session;
use tokenizers::{EncodeInput, Tokenizer};

use super::{build_session, load_tokenizer, session_inputs, EmbedError, SessionProfile};

/// Pairs per ORT run. Re-ranking sees ~25 candidates per query.
pub const DEFAULT_RERANK_BATCH: usize = 8;

/// The usual sequence limit for MiniLM/BERT cross-encoders.
pub const DEFAULT_RERANK_MAX_TOKENS: usize = 512;

/// A loaded cross-encoder.
pub struct CrossEncoder {
    session: Session,
    tokenizer: Tokenizer,
    output_name: String,
    label: String,
    batch_size: usize,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("model", &self.label)
            .field("output", &self.output_name)
            .finish_non_exhaustive()
    }
}

impl CrossEncoder {
    /// Loads ONNX Runtime (once per process, from `ort_dylib`), the model and
    /// its tokenizer. Pairs longer than `max_tokens` are truncated, longest
    /// side first (the text, normally), as sentence-transformers does.
    pub fn load(
        ort_dylib: &Path,
        model_path: &Path,
        tokenizer_path: &Path,
        max_tokens: usize,
        intra_threads: usize,
    ) -> Result<Self, EmbedError> {
        super::runtime::environment(ort_dylib)?;
        let tokenizer = load_tokenizer(tokenizer_path, max_tokens)?;
        // Always the throughput profile: a re-rank scores every one of the
        // top-N (query, passage) pairs at up to 512 tokens, which is bulk
        // work even inside a one-shot `kb search`.
        let session = build_session(ort_dylib, model_path, intra_threads, SessionProfile::Throughput)?;
        let label = model_path.display().to_string();
        // `logits` by convention (HF sequence-classification exports).
        let output_name = session
            .outputs()
            .iter()
            .find(|o| o.name() == "logits")
            .or_else(|| session.outputs().first())
            .map(|o| o.name().to_owned())
            .ok_or_else(|| EmbedError::UnsupportedModel {
                model: label.clone(),
                reason: "the graph has no outputs".to_owned(),
            })?;
        tracing::info!(model = %label, output = %output_name, "cross-encoder loaded");
        Ok(Self {
            session,
            tokenizer,
            output_name,
            label,
            batch_size: DEFAULT_RERANK_BATCH,
        })
    }

    /// Pairs per ORT run (minimum 1).
    pub fn set_batch_size(&mut self, n: usize) {
        self.batch_size = n.max(1);
    }

    /// One relevance score per text, in input order.
    pub fn score(&mut self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let mut scores = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            scores.extend(self.score_batch(query, batch)?);
        }
        Ok(scores)
    }

    /// Indices into `texts` with their scores, best first. Ties keep input
    /// order (the fused ranking's order), so re-ranking is deterministic.
    pub fn rerank(&mut self, query: &str, texts: &[&str]) -> Result<Vec<(usize, f32)>, EmbedError> {
        let mut ranked: Vec<(usize, f32)> = self.score(query, texts)?.into_iter().enumerate().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(ranked)
    }

    fn score_batch(&mut self, query: &str, texts: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let pairs: Vec<EncodeInput> = texts.iter().map(|t| (query, *t).into()).collect();
        let encodings = self
            .tokenizer
            .encode_batch(pairs, true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        let inputs = session_inputs(&self.session, &encodings, &self.label)?;
        let infer = |reason: String| EmbedError::Inference {
            model: self.label.clone(),
            reason,
        };
        let outputs = self.session.run(inputs).map_err(|e| infer(e.to_string()))?;
        let value = outputs
            .get(&self.output_name)
            .ok_or_else(|| infer(format!("output `{}` missing", self.output_name)))?;
        let (shape, data) = value.try_extract_tensor::<f32>().map_err(|e| infer(e.to_string()))?;
        // [batch] or [batch, 1]: one logit per pair. Multi-class heads would
        // need a choice of class; refuse rather than guess.
        let dims: &[i64] = shape;
        let one_per_row = match dims {
            [b] | [b, 1] => usize::try_from(*b).ok() == Some(texts.len()),
            _ => false,
        };
        if !one_per_row || data.len() != texts.len() {
            return Err(EmbedError::UnsupportedModel {
                model: self.label.clone(),
                reason: format!(
                    "output `{}` has shape {shape:?}; a cross-encoder must give one logit per pair ([batch] or [batch, 1])",
                    self.output_name
                ),
            });
        }
        Ok(data.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::super::test_support::natives;
    use super::*;

    fn fixture_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-cross-encoder")
    }

    fn tiny(max_tokens: usize) -> CrossEncoder {
        let dir = fixture_dir();
        CrossEncoder::load(
            &natives().ort_dylib,
            &dir.join("model.onnx"),
            &dir.join("tokenizer.json"),
            max_tokens,
            1,
        )
        .unwrap_or_else(|e| panic!("loading the tiny cross-encoder: {e}"))
    }

    /// The fixture's formula (see make_tiny_cross_encoder.py), recomputed
    /// from the tokenizer's own encoding of the pair.
    fn expected_score(query: &str, text: &str) -> f32 {
        let tok = Tokenizer::from_file(fixture_dir().join("tokenizer.json")).unwrap();
        let enc = tok.encode((query, text), true).unwrap();
        let word = |i: usize| enc.get_ids()[i] > 4;
        let (mut q, mut d) = (HashMap::<u32, f32>::new(), Vec::new());
        for i in 0..enc.len() {
            if !word(i) {
                continue;
            }
            match enc.get_type_ids()[i] {
                0 => *q.entry(enc.get_ids()[i]).or_default() += 1.0,
                _ => d.push(enc.get_ids()[i]),
            }
        }
        let overlap: f32 = d.iter().map(|id| q.get(id).copied().unwrap_or(0.0)).sum();
        let lex: f32 = d.iter().map(|&k| ((37 * k) % 11) as f32 / 100.0).sum();
        let length = enc.get_attention_mask().iter().sum::<u32>() as f32;
        overlap + 0.1 * lex + 0.01 * length
    }

    const QUERY: &str = "protein folding in cells";
    const TEXTS: [&str; 5] = [
        "The stock market fell in April",
        "Protein folding of a protein in cells",
        "Cells measure flow",
        "A neural network model for protein folding",
        "Rain and weather",
    ];

    #[test]
    fn scores_follow_the_models_formula_for_each_pair() {
        let mut ce = tiny(64);
        // Several batches, each padded to its longest pair; the formula's
        // length term would expose any padding counted as input.
        ce.set_batch_size(2);
        let scores = ce.score(QUERY, &TEXTS).unwrap();
        for (text, got) in TEXTS.iter().zip(&scores) {
            let want = expected_score(QUERY, text);
            assert!((got - want).abs() < 1e-4, "{text:?}: got {got}, formula {want}");
        }
        // The formula is not degenerate: overlap dominates, and differs.
        assert!(scores[1] > 4.0 && scores[0] < 1.5, "{scores:?}");
    }

    #[test]
    fn rerank_orders_candidates_by_score() {
        let mut ce = tiny(64);
        let ranked = ce.rerank(QUERY, &TEXTS).unwrap();
        let order: Vec<usize> = ranked.iter().map(|(i, _)| *i).collect();
        let mut want: Vec<(usize, f32)> = TEXTS
            .iter()
            .enumerate()
            .map(|(i, t)| (i, expected_score(QUERY, t)))
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(order, want.iter().map(|(i, _)| *i).collect::<Vec<_>>());
        assert_eq!(order[0], 1, "the on-topic text must win");
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    #[test]
    fn query_and_text_are_not_interchangeable() {
        // Token types mark which side is the text: only text tokens carry the
        // per-word weight, so swapping the pair changes the score. ("and" has
        // the largest weight in the fixture, 0.10.)
        let mut ce = tiny(64);
        let q = "cells";
        let t = "cells and and and";
        let forward = ce.score(q, &[t]).unwrap()[0];
        let swapped = ce.score(t, &[q]).unwrap()[0];
        assert!((forward - expected_score(q, t)).abs() < 1e-4);
        assert!((swapped - expected_score(t, q)).abs() < 1e-4);
        assert!((forward - swapped).abs() > 0.02, "{forward} vs {swapped}");
    }

    #[test]
    fn long_pairs_are_truncated_and_empty_input_is_fine() {
        let mut ce = tiny(16);
        let long = "protein ".repeat(500);
        let scores = ce.score(QUERY, &[&long, ""]).unwrap();
        assert_eq!(scores.len(), 2);
        assert!(scores.iter().all(|s| s.is_finite()));
        assert!(ce.score(QUERY, &[]).unwrap().is_empty());
    }

    #[test]
    fn an_embedding_model_is_refused_as_a_cross_encoder() {
        // MiniLM outputs [batch, seq, 384], not one logit per pair.
        let n = natives();
        let mut ce = CrossEncoder::load(&n.ort_dylib, &n.files.model, &n.files.tokenizer, 128, 1).unwrap();
        let err = ce.score("q", &["t"]).unwrap_err();
        assert!(matches!(err, EmbedError::UnsupportedModel { .. }), "{err}");
        assert!(err.to_string().contains("one logit per pair"), "{err}");
    }
}
