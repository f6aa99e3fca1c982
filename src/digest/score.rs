//! Scoring: abstracts in batches sized to the model's context, the prompt
//! from the prompt store as the instructions, and a reply parsed
//! tolerantly — code fences, chatter around the JSON, a bare object instead
//! of a list, JSON lines, numbers as strings, `8.5` or `"9/10"` as scores.
//!
//! The count check: every paper sent ends with a score or an explicit
//! "skipped: why". Papers a parsed reply left out are asked about once
//! more; a batch whose reply cannot be parsed is retried once, then
//! recorded as failed — one bad batch never sinks the run.

use serde_json::Value;

use super::{Candidate, DigestError, TokenUse};
use crate::cancel::Cancel;
use crate::llm::retry::with_retries_cancellable;
use crate::llm::{CallError, ChatProvider, ErrorKind, Message, StreamEvent};

/// Output tokens allowed per paper in a reply (score, track, two-sentence
/// summary, one-sentence why).
pub const REPLY_TOKENS_PER_PAPER: usize = 220;
/// Transient LLM failures (rate limit, overload) are retried this often
/// within one try of a batch.
const CALL_ATTEMPTS: u32 = 3;

/// How big a batch may get.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    pub max_papers: usize,
    pub context_tokens: usize,
}

impl BatchLimits {
    pub fn new(max_papers: usize, context_tokens: usize) -> Self {
        BatchLimits {
            max_papers: max_papers.max(1),
            context_tokens: context_tokens.max(2048),
        }
    }
}

/// A rough token count (four characters a token), plenty for sizing.
pub fn estimate_tokens(s: &str) -> usize {
    s.len().div_ceil(4)
}

/// One paper's score.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Scored {
    pub candidate: Candidate,
    /// 0–10.
    pub score: i64,
    pub track: String,
    pub summary: String,
    pub why: String,
}

/// Everything scoring produced.
#[derive(Debug, Clone, Default)]
pub struct Scoring {
    pub scored: Vec<Scored>,
    pub skipped: Vec<(Candidate, String)>,
    pub failed_batches: Vec<String>,
    pub usage: TokenUse,
}

/// What the model said about one paper.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyItem {
    /// 1-based position in the batch.
    pub id: usize,
    pub score: i64,
    pub track: String,
    pub summary: String,
    pub why: String,
}

fn paper_block(i: usize, c: &Candidate) -> String {
    format!(
        "[{i}] id: {i}\nTitle: {}\nAuthors: {}\nAbstract: {}\n",
        c.title,
        c.authors_line(),
        c.abstract_text
    )
}

/// Split `papers` into batches that fit the context: the prompt, each
/// abstract and each reply's share must fit in 80% of the window.
pub fn batches<'c>(prompt: &str, papers: &'c [Candidate], limits: &BatchLimits) -> Vec<Vec<&'c Candidate>> {
    let budget = limits.context_tokens * 4 / 5;
    let fixed = estimate_tokens(prompt) + 200;
    let mut out: Vec<Vec<&Candidate>> = Vec::new();
    let mut cur: Vec<&Candidate> = Vec::new();
    let mut used = fixed;
    for (i, c) in papers.iter().enumerate() {
        let cost = estimate_tokens(&paper_block(i + 1, c)) + REPLY_TOKENS_PER_PAPER;
        if !cur.is_empty() && (cur.len() >= limits.max_papers || used + cost > budget) {
            out.push(std::mem::take(&mut cur));
            used = fixed;
        }
        used += cost;
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The request text for one batch.
pub fn batch_message(papers: &[&Candidate]) -> String {
    let mut s = format!(
        "Score these {} papers. Reply with a JSON list holding exactly one object per paper, with the keys \"id\" (the number in brackets), \"score\" (an integer from 0 to 10), \"track\" (a short topic label), \"summary\" and \"why\".\n\n",
        papers.len()
    );
    for (i, c) in papers.iter().enumerate() {
        s.push_str(&paper_block(i + 1, c));
        s.push('\n');
    }
    s
}

fn strip_fences(s: &str) -> String {
    // Keep what is inside fences when there are any; else the whole text.
    if !s.contains("```") {
        return s.to_string();
    }
    let mut inside = String::new();
    for (i, part) in s.split("```").enumerate() {
        if i % 2 == 1 {
            // Drop a language tag on the fence line (```json).
            let body = match part.split_once('\n') {
                Some((first, rest)) if !first.trim_start().starts_with(['[', '{']) => rest,
                _ => part,
            };
            inside.push_str(body);
            inside.push('\n');
        }
    }
    inside
}

fn int_of(v: &Value) -> Option<i64> {
    let f = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => {
            let t = s.trim();
            let head: String = t
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
                .collect();
            head.parse::<f64>().ok()?
        }
        _ => return None,
    };
    f.is_finite().then(|| f.round() as i64)
}

fn str_of(o: &serde_json::Map<String, Value>, keys: &[&str]) -> String {
    for k in keys {
        match o.get(*k) {
            Some(Value::String(s)) => return s.trim().to_string(),
            Some(v @ Value::Number(_)) => return v.to_string(),
            _ => {}
        }
    }
    String::new()
}

fn item_of(v: &Value) -> Option<ReplyItem> {
    let o = v.as_object()?;
    let id = o
        .get("id")
        .or_else(|| o.get("index"))
        .or_else(|| o.get("paper"))
        .and_then(|v| match v {
            Value::Number(n) => n.as_u64().map(|n| n as usize),
            // "3", "[3]", "P3", "paper 3".
            Value::String(s) => s.chars().filter(char::is_ascii_digit).collect::<String>().parse().ok(),
            _ => None,
        })?;
    let score = o.get("score").or_else(|| o.get("relevance")).and_then(int_of)?;
    Some(ReplyItem {
        id,
        score: score.clamp(0, 10),
        track: str_of(o, &["track", "topic"]),
        summary: str_of(o, &["summary", "tldr"]),
        why: str_of(o, &["why", "reason", "reasons"]),
    })
}

fn items_from(v: &Value, out: &mut Vec<ReplyItem>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| items_from(x, out)),
        Value::Object(o) => {
            if let Some(it) = item_of(v) {
                out.push(it);
            } else {
                // {"papers": [...]} or {"results": [...]}.
                for inner in o.values() {
                    if inner.is_array() {
                        items_from(inner, out);
                    }
                }
            }
        }
        _ => {}
    }
}

/// Every scored item in a model reply, however it was wrapped. `Err` when
/// nothing usable is in it.
pub fn parse_reply(reply: &str) -> Result<Vec<ReplyItem>, String> {
    let text = strip_fences(reply);
    let mut items = Vec::new();
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        if bytes[i] == b'[' || bytes[i] == b'{' {
            let mut de = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
            if let Some(Ok(v)) = de.next() {
                let before = items.len();
                items_from(&v, &mut items);
                if items.len() > before || v.is_array() || v.is_object() {
                    i += de.byte_offset();
                    continue;
                }
            }
        }
        i += 1;
    }
    if items.is_empty() {
        let head: String = reply.chars().take(120).collect();
        return Err(format!("no scores in the reply (it began {head:?})"));
    }
    Ok(items)
}

/// One request: the reply text, with the usage added to `usage`.
fn ask(
    provider: &dyn ChatProvider,
    prompt: &str,
    papers: &[&Candidate],
    limits: &BatchLimits,
    usage: &mut TokenUse,
    cancel: &Cancel,
) -> Result<String, CallError> {
    let messages = [Message::user(format!("{prompt}\n\n---\n\n{}", batch_message(papers)))];
    let max_tokens = (REPLY_TOKENS_PER_PAPER * papers.len() + 300) as u32;
    let ctx = Some(limits.context_tokens as u32);
    with_retries_cancellable(
        CALL_ATTEMPTS,
        std::time::Duration::from_secs(2),
        ErrorKind::TRANSIENT,
        Some(cancel),
        || {
            let mut on_event = |e: StreamEvent<'_>| {
                if let StreamEvent::Usage(u) = e {
                    usage.requests += 1;
                    usage.input_tokens += u.input_tokens.unwrap_or(0);
                    usage.output_tokens += u.output_tokens.unwrap_or(0);
                    if let Some(c) = u.cost_usd {
                        *usage.cost_usd.get_or_insert(0.0) += c;
                    }
                }
            };
            provider.complete_reusable(
                &messages,
                max_tokens,
                ctx,
                &|reply: &str| parse_reply(reply).is_ok(),
                Some(cancel),
                &mut on_event,
            )
        },
    )
}

/// Score every paper (see the module docs for the count check).
pub fn score_all(
    provider: &dyn ChatProvider,
    prompt: &str,
    papers: &[Candidate],
    limits: &BatchLimits,
    say: &dyn Fn(&str),
    cancel: &Cancel,
) -> Result<Scoring, DigestError> {
    let mut out = Scoring::default();
    let all = batches(prompt, papers, limits);
    let n = all.len();
    for (b, batch) in all.into_iter().enumerate() {
        if cancel.is_cancelled() {
            return Err(DigestError::Cancelled);
        }
        say(&format!("scoring batch {} of {n} ({} papers)…", b + 1, batch.len()));
        let mut pending: Vec<&Candidate> = batch;
        let mut last_error = String::new();
        let mut parsed_once = false;
        for attempt in 0..2 {
            let got = match ask(provider, prompt, &pending, limits, &mut out.usage, cancel) {
                Err(CallError::Cancelled(_)) => return Err(DigestError::Cancelled),
                Err(e) => Err(format!("the model call failed: {e}")),
                Ok(reply) => parse_reply(&reply),
            };
            match got {
                Ok(items) => {
                    parsed_once = true;
                    let mut rest = Vec::new();
                    for (i, c) in pending.iter().enumerate() {
                        match items.iter().find(|it| it.id == i + 1) {
                            Some(it) => out.scored.push(Scored {
                                candidate: (*c).clone(),
                                score: it.score,
                                track: it.track.clone(),
                                summary: it.summary.clone(),
                                why: it.why.clone(),
                            }),
                            None => rest.push(*c),
                        }
                    }
                    if !rest.is_empty() {
                        tracing::warn!(
                            batch = b + 1,
                            missing = rest.len(),
                            attempt,
                            "the reply left papers out"
                        );
                        last_error = format!(
                            "the model's reply left it out{}",
                            if attempt == 0 { "" } else { " twice" }
                        );
                    }
                    pending = rest;
                }
                Err(e) => {
                    tracing::warn!(batch = b + 1, attempt, error = %e, "scoring reply unusable");
                    last_error = e;
                }
            }
            if pending.is_empty() {
                break;
            }
        }
        if !pending.is_empty() {
            if !parsed_once {
                out.failed_batches.push(format!(
                    "batch {} of {n} ({} papers): {last_error}",
                    b + 1,
                    pending.len()
                ));
            }
            for c in pending {
                out.skipped.push((c.clone(), format!("skipped: {last_error}")));
            }
        }
    }
    Ok(out)
}
