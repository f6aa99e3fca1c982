//! The answer eval: a question file run through the real agent, scored on
//! whether the answers can be checked (`cargo xtask eval answers`).
//!
//! Owns: the question file format ([`parse_questions`]: TOML, one
//! `[[question]]` each with an `id`, the `question`, and either the `gold`
//! documents that answer it — document keys, a note's vault-relative path —
//! or `not_in_library = true`), running the questions one fresh session
//! each ([`run`]), and the scoring ([`score`]), which is pure:
//!
//! - retrieval recall: answerable questions whose turn fetched (had a tool
//!   return a passage of) a gold document;
//! - citation precision: cited passages of answerable questions that come
//!   from a gold document, over all their cited passages;
//! - unsupported-marker rate: markers that named no passage of the turn,
//!   over all markers written;
//! - abstention accuracy: not-in-the-library questions answered with no
//!   citation at all (the answer to those is "the library has nothing");
//! - answered rate: answerable questions whose answer cites something;
//! - model steps (rounds) and wall time per question.
//!
//! Must not: pick the model or build the knowledge base — the caller hands
//! in an agent over both — or print.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{ChatAgent, ChatError, Reply};
use crate::cancel::Cancel;
use crate::error_kind::ErrorKind;

/// One question of the file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub id: String,
    pub question: String,
    /// Document keys that answer it (a note's vault-relative path).
    #[serde(default)]
    pub gold: Vec<String>,
    /// The library has nothing on it: the right answer cites nothing.
    #[serde(default)]
    pub not_in_library: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionFile {
    #[serde(default)]
    question: Vec<Question>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The file is not TOML of the expected shape.
    #[error("the question file cannot be read: {0} — each question is a [[question]] table with id, question, and gold = [\"path.md\", …] or not_in_library = true")]
    Parse(String),
    /// A question breaks a rule of the format.
    #[error("question {id:?}: {why}")]
    Invalid { id: String, why: String },
    /// A turn could not run at all (not a failed model call: that is
    /// scored as a failure of its question).
    #[error(transparent)]
    Chat(#[from] ChatError),
}

impl EvalError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            EvalError::Parse(_) | EvalError::Invalid { .. } => ErrorKind::User,
            EvalError::Chat(e) => e.kind(),
        }
    }
}

/// Read and check a question file: unique non-empty ids, a question, and
/// exactly one of gold documents or `not_in_library`.
pub fn parse_questions(text: &str) -> Result<Vec<Question>, EvalError> {
    let file: QuestionFile = toml::from_str(text).map_err(|e| EvalError::Parse(e.to_string()))?;
    let mut seen = BTreeSet::new();
    for q in &file.question {
        let bad = |why: &str| EvalError::Invalid {
            id: q.id.clone(),
            why: why.to_string(),
        };
        if q.id.trim().is_empty() {
            return Err(bad("the id is empty"));
        }
        if !seen.insert(q.id.as_str()) {
            return Err(bad("the id is used twice"));
        }
        if q.question.trim().is_empty() {
            return Err(bad("the question is empty"));
        }
        match (q.gold.is_empty(), q.not_in_library) {
            (true, false) => return Err(bad("name the gold documents, or set not_in_library = true")),
            (false, true) => return Err(bad("a not_in_library question has no gold documents")),
            _ => {}
        }
        if q.gold.iter().any(|g| g.trim().is_empty()) {
            return Err(bad("a gold document is empty"));
        }
    }
    if file.question.is_empty() {
        return Err(EvalError::Parse("no [[question]] in the file".into()));
    }
    Ok(file.question)
}

/// What one question's turn did, as the scorer needs it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Outcome {
    pub id: String,
    /// Document keys of every passage the tools returned (deduplicated).
    pub fetched: Vec<String>,
    /// Document key of each cited passage (one per citation).
    pub cited: Vec<String>,
    /// Markers kept (each number written that named a passage).
    pub kept_markers: usize,
    /// Markers removed (each number written that named nothing).
    pub unsupported: usize,
    /// Model steps.
    pub rounds: usize,
    pub latency_ms: f64,
    /// The turn failed (a model error, a stop): its answer is not scored
    /// as an answer or an abstention.
    pub error: Option<String>,
}

impl Outcome {
    pub fn from_reply(id: &str, reply: &Reply, latency_ms: f64) -> Outcome {
        let mut fetched: Vec<String> = Vec::new();
        for p in &reply.evidence.passages {
            if !fetched.contains(&p.key) {
                fetched.push(p.key.clone());
            }
        }
        Outcome {
            id: id.to_string(),
            fetched,
            cited: reply.citations.iter().map(|c| c.key.clone()).collect(),
            kept_markers: reply.evidence.kept_markers,
            unsupported: reply.unsupported_citations,
            rounds: reply.evidence.rounds,
            latency_ms,
            error: (reply.error || reply.privacy_stop).then(|| reply.text.clone()),
        }
    }

    fn failed(id: &str, why: String, latency_ms: f64) -> Outcome {
        Outcome {
            id: id.to_string(),
            latency_ms,
            error: Some(why),
            ..Outcome::default()
        }
    }
}

/// One question's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionScore {
    pub id: String,
    pub not_in_library: bool,
    /// A gold document was among the fetched ones (answerable only).
    pub fetched_gold: bool,
    pub cited: usize,
    pub cited_gold: usize,
    /// The answer cites nothing (and the turn did not fail).
    pub abstained: bool,
    pub kept_markers: usize,
    pub unsupported: usize,
    pub rounds: usize,
    pub latency_ms: f64,
    pub error: Option<String>,
}

/// The figures of one run. A rate with nothing to measure is `None`, never
/// a made-up zero.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub questions: usize,
    pub answerable: usize,
    pub not_in_library: usize,
    pub failed: usize,
    pub retrieval_recall: Option<f64>,
    pub citation_precision: Option<f64>,
    pub unsupported_rate: Option<f64>,
    pub abstention_accuracy: Option<f64>,
    pub answered_rate: Option<f64>,
    pub rounds_mean: f64,
    pub rounds_max: usize,
    pub latency_p50_ms: f64,
    pub latency_p95_ms: f64,
    pub per_question: Vec<QuestionScore>,
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// The `q`-quantile of `v` (nearest rank on the sorted values).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * q).round() as usize]
}

/// Score `outcomes` against `questions` (matched by id; a question with no
/// outcome counts as failed).
pub fn score(questions: &[Question], outcomes: &[Outcome]) -> Report {
    let mut per = Vec::new();
    let (mut recall_hits, mut answerable) = (0, 0);
    let (mut cited_all, mut cited_gold_all) = (0, 0);
    let (mut kept_all, mut unsupported_all) = (0, 0);
    let (mut nil, mut nil_abstained, mut answered) = (0, 0, 0);
    let mut failed = 0;
    for q in questions {
        let missing = Outcome::failed(&q.id, "no outcome for this question".into(), 0.0);
        let o = outcomes.iter().find(|o| o.id == q.id).unwrap_or(&missing);
        let gold: BTreeSet<&str> = q.gold.iter().map(|g| normalise(g)).collect();
        let is_gold = |k: &String| gold.contains(normalise(k));
        let ok = o.error.is_none();
        let fetched_gold = o.fetched.iter().any(is_gold);
        let cited_gold = o.cited.iter().filter(|k| is_gold(k)).count();
        let abstained = ok && o.cited.is_empty();
        if !ok {
            failed += 1;
        }
        kept_all += o.kept_markers;
        unsupported_all += o.unsupported;
        if q.not_in_library {
            nil += 1;
            nil_abstained += usize::from(abstained);
        } else {
            answerable += 1;
            recall_hits += usize::from(fetched_gold);
            cited_all += o.cited.len();
            cited_gold_all += cited_gold;
            answered += usize::from(ok && !o.cited.is_empty());
        }
        per.push(QuestionScore {
            id: q.id.clone(),
            not_in_library: q.not_in_library,
            fetched_gold,
            cited: o.cited.len(),
            cited_gold,
            abstained,
            kept_markers: o.kept_markers,
            unsupported: o.unsupported,
            rounds: o.rounds,
            latency_ms: o.latency_ms,
            error: o.error.clone(),
        });
    }
    let latencies: Vec<f64> = per.iter().map(|p| p.latency_ms).collect();
    let rounds: Vec<usize> = per.iter().map(|p| p.rounds).collect();
    Report {
        questions: questions.len(),
        answerable,
        not_in_library: nil,
        failed,
        retrieval_recall: ratio(recall_hits, answerable),
        citation_precision: ratio(cited_gold_all, cited_all),
        unsupported_rate: ratio(unsupported_all, unsupported_all + kept_all),
        abstention_accuracy: ratio(nil_abstained, nil),
        answered_rate: ratio(answered, answerable),
        rounds_mean: if rounds.is_empty() {
            0.0
        } else {
            rounds.iter().sum::<usize>() as f64 / rounds.len() as f64
        },
        rounds_max: rounds.iter().copied().max().unwrap_or(0),
        latency_p50_ms: quantile(&latencies, 0.50),
        latency_p95_ms: quantile(&latencies, 0.95),
        per_question: per,
    }
}

fn normalise(key: &str) -> &str {
    key.trim().trim_start_matches("./")
}

/// How to run the questions.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `provider:model` for every question's session.
    pub spec: String,
    /// DB only (the product's default) or own knowledge allowed.
    pub kb_only: bool,
}

/// Run every question in a fresh session of its own through the real
/// turn, timing it; the session (its file and its indexed history) is
/// deleted afterwards so no question sees another's answer. `progress`
/// hears each outcome as it lands.
pub fn run(
    agent: &ChatAgent,
    questions: &[Question],
    opts: &RunOptions,
    progress: &dyn Fn(usize, &Outcome),
) -> Result<Vec<Outcome>, EvalError> {
    let mut out = Vec::with_capacity(questions.len());
    for (i, q) in questions.iter().enumerate() {
        let session = Arc::new(Mutex::new(agent.new_session(Some(&opts.spec), Some(opts.kb_only))?));
        let id = crate::lock::lock(&session).id.clone();
        let started = Instant::now();
        let result = agent.run_turn(&session, &q.question, &|_| {}, &Cancel::new());
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let outcome = match result {
            Ok(Some(reply)) => Outcome::from_reply(&q.id, &reply, ms),
            Ok(None) => Outcome::failed(&q.id, "the turn was stopped".into(), ms),
            Err(e) => Outcome::failed(&q.id, e.to_string(), ms),
        };
        agent.wait_for_history();
        match agent.delete(&id, &crate::kb::Actor::job("eval")) {
            Ok(_) => {}
            Err(ChatError::Session(super::SessionError::NotFound(_))) => {}
            Err(e) => return Err(e.into()),
        }
        progress(i, &outcome);
        out.push(outcome);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
