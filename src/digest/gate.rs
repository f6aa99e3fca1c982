//! The cheap gate before the LLM: rank new papers by how close their title
//! and abstract sit to the user's own library (the papers and notes they
//! chose to keep) and send only the best `max_candidates` on.
//!
//! Similarity is the dense (cosine) score of the nearest library chunk,
//! from the knowledge base's own vector search — no LLM, no network. Under
//! a cloud provider only public documents are compared: what a cloud model
//! is sent must not be picked by private notes.
//!
//! The user's digest votes nudge that score ([`Taste`]): closer to papers
//! they liked or added, further from papers they did not want.

use std::collections::BTreeMap;

use crate::cancel::Cancel;
use crate::doc_type::DocType;
use crate::index::{Filter, Visibility};
use crate::kb::search::SearchRequest;
use crate::kb::Kb;

use super::feedback::{self, Feedback, Taste};
use super::{Candidate, DigestError};

/// Characters of title + abstract embedded per candidate.
const QUERY_CHARS: usize = 1500;

/// The gate's decision.
#[derive(Debug, Clone, Default)]
pub struct Gated {
    /// Sent to scoring, most similar first.
    pub kept: Vec<Candidate>,
    /// Ranked out, with their similarity.
    pub dropped: Vec<(Candidate, f32)>,
    /// The library had nothing to compare with: the newest were kept.
    pub no_library: bool,
}

/// The filter for "the user's own library".
pub fn library_filter(cloud: bool) -> Filter {
    Filter {
        visibility: cloud.then_some(Visibility::Public),
        doc_types: vec![DocType::Paper.as_str().into(), DocType::Note.as_str().into()],
        ..Filter::default()
    }
}

/// The text a candidate is embedded from: title and the start of its abstract.
pub fn candidate_text(title: &str, abstract_text: &str) -> String {
    let mut q = format!("{title}\n\n{abstract_text}");
    if q.len() > QUERY_CHARS {
        let mut cut = QUERY_CHARS;
        while !q.is_char_boundary(cut) {
            cut -= 1;
        }
        q.truncate(cut);
    }
    q
}

/// Similarity of one candidate to the library (`None`: nothing to compare).
pub fn similarity(kb: &Kb, c: &Candidate, cloud: bool) -> Result<Option<f32>, DigestError> {
    let q = candidate_text(&c.title, &c.abstract_text);
    let v = kb.embed_query(&q)?;
    library_similarity(kb, q, &v, cloud)
}

fn library_similarity(kb: &Kb, q: String, v: &[f32], cloud: bool) -> Result<Option<f32>, DigestError> {
    let req = SearchRequest {
        filter: library_filter(cloud),
        rerank: false,
        hybrid: Some(false),
        ..SearchRequest::new(q, 3)
    };
    Ok(kb.search_embedded(&req, v)?.first().map(|h| h.score))
}

/// The user's votes as the gate uses them: each side's newest
/// [`feedback::TASTE_VOTES`] embedded as candidates are, averaged.
pub fn taste(kb: &Kb, votes: &BTreeMap<String, Feedback>) -> Result<Taste, DigestError> {
    let (liked, disliked) = feedback::recent(votes, feedback::TASTE_VOTES);
    let embed = |side: &[&Feedback]| -> Result<Vec<Vec<f32>>, DigestError> {
        side.iter()
            .map(|f| Ok(kb.embed_query(&candidate_text(&f.title, &f.abstract_text))?))
            .collect()
    };
    Ok(Taste::from_vectors(&embed(&liked)?, &embed(&disliked)?))
}

/// The gate's score for one candidate: its library similarity plus the
/// taste nudge (`None`: neither a library nor votes to compare with).
pub fn gate_score(kb: &Kb, c: &Candidate, cloud: bool, taste: &Taste) -> Result<Option<f32>, DigestError> {
    let q = candidate_text(&c.title, &c.abstract_text);
    let v = kb.embed_query(&q)?;
    let lib = library_similarity(kb, q, &v, cloud)?;
    if taste.is_empty() {
        return Ok(lib);
    }
    Ok(Some(lib.unwrap_or(0.0) + taste.nudge(&v)))
}

/// Keep the `max` candidates closest to the library (and to the user's
/// taste). When everything fits no embedding is done at all.
pub fn rank(
    kb: &Kb,
    candidates: Vec<Candidate>,
    max: usize,
    cloud: bool,
    taste: &Taste,
    cancel: &Cancel,
) -> Result<Gated, DigestError> {
    if candidates.len() <= max {
        return Ok(Gated {
            kept: candidates,
            ..Gated::default()
        });
    }
    let mut scored: Vec<(Candidate, Option<f32>)> = Vec::with_capacity(candidates.len());
    for c in candidates {
        if cancel.is_cancelled() {
            return Err(DigestError::Cancelled);
        }
        let s = gate_score(kb, &c, cloud, taste)?;
        scored.push((c, s));
    }
    let no_library = scored.iter().all(|(_, s)| s.is_none());
    if !no_library {
        // Stable: equal scores keep feed order (newest first).
        scored.sort_by(|a, b| {
            let (x, y) = (a.1.unwrap_or(f32::MIN), b.1.unwrap_or(f32::MIN));
            y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal)
        });
    } else {
        // Nothing to compare with: newest first.
        scored.sort_by(|a, b| b.0.date.cmp(&a.0.date));
    }
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (i, (c, s)) in scored.into_iter().enumerate() {
        if i < max {
            kept.push(c);
        } else {
            dropped.push((c, s.unwrap_or(0.0)));
        }
    }
    Ok(Gated {
        kept,
        dropped,
        no_library,
    })
}
