//! The answer eval's stand-in model: deterministic, in process, behind the
//! real agentic loop. Shared with `cargo xtask eval answers` (so it uses
//! nothing else from `support`), where it proves the scorer end to end.
//!
//! For a question it first calls `search_kb` with the question itself.
//! Given the numbered passages back, it cites the one sharing the most
//! content words with the question (`[n]`, opening with that passage's
//! first sentence) when it shares at least two and at least a third of
//! them; otherwise it abstains, saying what it searched and that the
//! library has nothing on it. Every `invent_every`-th answer (0: never)
//! also cites a number no passage has, which the agent must remove and
//! count.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use jarvis::cancel::Cancel;
use jarvis::chat::{CachedProviders, ProviderSource, SwitchError};
use jarvis::llm::provider::{Exchange, PdfToText, Turn};
use jarvis::llm::transcript::{Block, Message, Role};
use jarvis::llm::{CallError, ChatProvider, LlmError, LlmSettings};
use serde_json::json;

/// The spec sessions use for the stand-in.
pub const STAND_IN_SPEC: &str = "ollama:stand-in";

const STOP: &[&str] = &[
    "about", "after", "also", "does", "from", "have", "into", "much", "that", "their", "them", "then", "there", "this",
    "what", "when", "where", "which", "while", "will", "with", "would", "your", "can", "how", "the", "and", "for",
    "are", "get", "use", "its",
];

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(&w.as_str()))
        .collect()
}

/// `(n, text)` of every `--- [n] ---` passage in a tool result.
fn passages(result: &str) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    for line in result.lines() {
        let head = line
            .strip_prefix("--- [")
            .and_then(|r| r.split_once(']'))
            .and_then(|(n, _)| n.parse::<u32>().ok());
        match (head, out.last_mut()) {
            (Some(n), _) => out.push((n, String::new())),
            (None, Some((_, text))) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// The first sentence of a passage's body (after its descriptive lines).
fn first_sentence(text: &str) -> String {
    let body = text
        .lines()
        .filter(|l| {
            let l = l.trim();
            !(l.is_empty()
                || l.starts_with('[')
                || l.starts_with("path:")
                || l.starts_with("section:")
                || l.starts_with("tags:")
                || l.starts_with("END RETRIEVED"))
        })
        .collect::<Vec<_>>()
        .join(" ");
    let end = body.find(". ").map_or(body.len(), |i| i + 1);
    body[..end].chars().take(200).collect::<String>().trim().to_string()
}

pub struct StandIn {
    invent_every: usize,
    answers: AtomicUsize,
}

impl StandIn {
    pub fn new(invent_every: usize) -> StandIn {
        StandIn {
            invent_every,
            answers: AtomicUsize::new(0),
        }
    }

    fn answer(&self, question: &str, results: &[String]) -> String {
        let q = words(question);
        let found: Vec<(u32, String)> = results.iter().flat_map(|r| passages(r)).collect();
        let best = found
            .iter()
            .map(|(n, text)| (q.intersection(&words(text)).count(), *n, text))
            .filter(|(shared, _, _)| *shared >= 2 && *shared * 3 >= q.len())
            .max_by_key(|(shared, n, _)| (*shared, std::cmp::Reverse(*n)));
        let Some((_, n, text)) = best else {
            return format!("I searched your library for “{question}” and it has nothing on this.");
        };
        let k = self.answers.fetch_add(1, Ordering::Relaxed) + 1;
        let mut answer = format!("{} [{n}]", first_sentence(text));
        if self.invent_every > 0 && k.is_multiple_of(self.invent_every) {
            let max = found.iter().map(|(n, _)| *n).max().unwrap_or(0);
            answer.push_str(&format!(" See also [{}].", max + 10));
        }
        answer
    }
}

impl Exchange for StandIn {
    fn provider_name(&self) -> &str {
        "ollama"
    }
    fn model(&self) -> &str {
        "stand-in"
    }
    fn exchange(
        &self,
        turn: &Turn<'_>,
        _: Option<&Cancel>,
        _: &mut jarvis::llm::stream::OnEvent<'_>,
    ) -> Result<Message, CallError> {
        let msgs = turn.messages;
        let start = msgs
            .iter()
            .rposition(|m| m.role == Role::User && m.content.iter().any(|b| matches!(b, Block::Text { .. })))
            .unwrap_or(0);
        let question = msgs.get(start).map(Message::text).unwrap_or_default();
        let results: Vec<String> = msgs[start..]
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        if results.is_empty() {
            return Ok(Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "search-1".into(),
                    name: "search_kb".into(),
                    arguments: json!({ "query": question }),
                }],
            });
        }
        Ok(Message::assistant(self.answer(&question, &results)))
    }
    fn pdf_to_text(&self) -> Option<&PdfToText> {
        None
    }
}

/// A provider source whose every spec is the stand-in.
/// A source where every spec is one in-process model, and local: the
/// answer eval's stand-in here, the research tests' stand-in in
/// `support::research`.
pub struct LocalSource<P> {
    inner: CachedProviders,
    pub model: Arc<P>,
    spec: &'static str,
}

impl<P> LocalSource<P> {
    pub fn with(model: P, spec: &'static str) -> LocalSource<P> {
        LocalSource {
            inner: CachedProviders::new(LlmSettings::default()),
            model: Arc::new(model),
            spec,
        }
    }
}

/// The answer eval's source.
pub type StandInSource = LocalSource<StandIn>;

impl StandInSource {
    pub fn new(invent_every: usize) -> StandInSource {
        LocalSource::with(StandIn::new(invent_every), STAND_IN_SPEC)
    }
}

impl<P: ChatProvider + 'static> ProviderSource for LocalSource<P> {
    fn resolve(&self, spec: &str) -> Result<(String, String), SwitchError> {
        self.inner.resolve(spec)
    }
    fn provider(&self, _: &str) -> Result<Arc<dyn ChatProvider>, LlmError> {
        Ok(self.model.clone())
    }
    fn is_cloud(&self, _: &str) -> bool {
        false
    }
    fn secrets(&self) -> Vec<String> {
        Vec::new()
    }
    fn default_spec(&self) -> String {
        self.spec.into()
    }
}
