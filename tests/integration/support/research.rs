//! A stand-in model for research runs: in process, behind the real
//! agentic loop, telling the planner, a sub-agent and the report writer
//! apart by what the request says.
//!
//! - The planner gets the sub-questions the test gave.
//! - A sub-agent first calls `search_kb` with its sub-question, then cites
//!   passage [1] (opening with its first line) — unless `hold` is set,
//!   when it waits in its first request until the run is stopped, so a
//!   test can stop a run with its sub-agents mid-request.
//! - The report writer cites [1] and [2] and one number no passage has.
//!
//! It counts sub-agent requests in flight (and the most at once), so a
//! test can see them run in parallel and see none left after a stop.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jarvis::cancel::Cancel;
use jarvis::llm::provider::{Exchange, PdfToText, Turn};
use jarvis::llm::transcript::{Block, Message, Role};
use jarvis::llm::CallError;
use serde_json::json;

pub const SPEC: &str = "ollama:stand-in";

/// The report the stand-in writes (before its markers are checked).
pub const REPORT: &str =
    "The notes agree on the basics [1].\n\n## Details\n\nThe budget review is on Friday [2], and more [9].\n\n## Open questions\n\nNothing on the rest.";

#[derive(Default)]
pub struct Counters {
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    pub subagent_requests: AtomicUsize,
}

pub struct ResearchStandIn {
    pub questions: Vec<String>,
    pub hold: AtomicBool,
    pub counters: Arc<Counters>,
}

struct Flight<'a>(&'a Counters);

impl<'a> Flight<'a> {
    fn start(c: &'a Counters) -> Flight<'a> {
        let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        c.max_in_flight.fetch_max(now, Ordering::SeqCst);
        c.subagent_requests.fetch_add(1, Ordering::SeqCst);
        Flight(c)
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn text_of(msgs: &[Message]) -> String {
    msgs.iter().map(Message::text).collect::<Vec<_>>().join("\n")
}

impl Exchange for ResearchStandIn {
    fn provider_name(&self) -> &str {
        "ollama"
    }
    fn model(&self) -> &str {
        "stand-in"
    }
    fn exchange(
        &self,
        turn: &Turn<'_>,
        cancel: Option<&Cancel>,
        _: &mut jarvis::llm::stream::OnEvent<'_>,
    ) -> Result<Message, CallError> {
        let all = text_of(turn.messages);
        if all.contains("You plan a research report") {
            let list: Vec<String> = self
                .questions
                .iter()
                .enumerate()
                .map(|(i, q)| format!("{}. {q}", i + 1))
                .collect();
            return Ok(Message::assistant(format!("Sub-questions:\n{}", list.join("\n"))));
        }
        if all.contains("You write a research report") {
            return Ok(Message::assistant(REPORT));
        }
        // A sub-agent.
        let _flight = Flight::start(&self.counters);
        if self.hold.load(Ordering::SeqCst) {
            loop {
                if cancel.is_some_and(Cancel::is_cancelled) {
                    return Err(CallError::Cancelled(jarvis::cancel::Cancelled));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // Long enough for the other sub-agent's request to overlap.
        std::thread::sleep(Duration::from_millis(150));
        let sub = all
            .split("Your sub-question: ")
            .nth(1)
            .and_then(|s| s.lines().next())
            .unwrap_or("")
            .to_string();
        let result = turn
            .messages
            .iter()
            .flat_map(|m| m.content.iter())
            .find_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            });
        match result {
            None => Ok(Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "search-1".into(),
                    name: "search_kb".into(),
                    arguments: json!({ "query": sub }),
                }],
            }),
            Some(r) if r.contains("--- [1]") => Ok(Message::assistant(format!("On “{sub}”: the library says so [1]."))),
            Some(_) => Ok(Message::assistant("The library has nothing on this.")),
        }
    }
    fn pdf_to_text(&self) -> Option<&PdfToText> {
        None
    }
}

/// Every spec is the research stand-in, and local.
pub type Source = super::answer_standin::LocalSource<ResearchStandIn>;

impl Source {
    pub fn new(questions: &[&str]) -> Source {
        Source::with(
            ResearchStandIn {
                questions: questions.iter().map(|q| q.to_string()).collect(),
                hold: AtomicBool::new(false),
                counters: Arc::default(),
            },
            SPEC,
        )
    }
}
