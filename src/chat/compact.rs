//! Compaction: when a session's transcript grows past
//! `compact_after_tokens` (estimated as serialised length / 4), everything
//! before the last `compact_keep_exchanges` turns is summarised by the
//! session's *own* provider and replaced by a summary pair.
//!
//! The cut always lands on a `turn_starts` boundary, so a tool call and its
//! result are never separated. The display list is untouched (the human
//! always sees the whole conversation). The rewrite happens only once the
//! summary is in hand, so a stop during compaction leaves the session as it
//! was.

use crate::cancel::Cancel;
use crate::llm::transcript::{Block, Message};
use crate::llm::{CallError, ChatProvider};

use super::session::Session;

const SUMMARY_MAX_TOKENS: u32 = 2048;

const INSTRUCTION: &str = "Summarise the conversation above for your own later reference: the user's questions, what you found in their knowledge base (document titles, paths and sources), the answers you gave, and anything still open. Be factual and compact. Plain text, no preamble.";

/// Crude but adequate: serialised JSON length / 4.
pub fn estimate_tokens(messages: &[Message]) -> usize {
    serde_json::to_string(messages).map_or(0, |s| s.len() / 4)
}

/// Where the kept tail begins, or `None` when there is nothing to fold.
fn cut_point(s: &Session, keep: usize) -> Option<usize> {
    if s.turn_starts.len() <= keep {
        return None;
    }
    let cut = s.turn_starts[s.turn_starts.len() - keep..]
        .first()
        .copied()
        .unwrap_or(s.messages.len());
    // Everything before a turn start is whole turns; folding the first
    // message alone (or nothing) is pointless.
    (cut >= 2 && cut <= s.messages.len()).then_some(cut)
}

/// The same decision as [`maybe_compact`], without the side effect, so a
/// front end can say a compaction is about to happen.
pub fn needs_compaction(s: &Session, after_tokens: usize, keep: usize) -> bool {
    estimate_tokens(&s.messages) > after_tokens && cut_point(s, keep).is_some()
}

/// Render a stretch of transcript as plain text for the summariser, so a
/// provider never receives another provider's tool-call shapes.
fn render(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let who = match m.role {
            crate::llm::Role::User => "User",
            crate::llm::Role::Assistant => "Assistant",
        };
        for b in &m.content {
            match b {
                Block::Text { text } => out.push_str(&format!("{who}: {text}\n\n")),
                Block::ToolCall { name, arguments, .. } => {
                    out.push_str(&format!("{who} called {name} with {arguments}\n\n"))
                }
                Block::ToolResult { content, .. } => {
                    let short: String = content.chars().take(1500).collect();
                    out.push_str(&format!("Tool result: {short}\n\n"))
                }
                Block::ProviderOpaque { .. } => {}
            }
        }
    }
    out
}

/// Compact when needed. Returns whether it did. On error or stop the
/// session is unchanged.
pub fn maybe_compact(
    s: &mut Session,
    provider: &dyn ChatProvider,
    after_tokens: usize,
    keep: usize,
    cancel: &Cancel,
) -> Result<bool, CallError> {
    if !needs_compaction(s, after_tokens, keep) {
        return Ok(false);
    }
    let Some(cut) = cut_point(s, keep) else {
        return Ok(false);
    };
    let prompt = format!("{}\n\n{INSTRUCTION}", render(&s.messages[..cut]));
    let summary = provider.complete(&[Message::user(prompt)], SUMMARY_MAX_TOKENS, None, Some(cancel))?;
    cancel.check()?;
    if summary.trim().is_empty() {
        // A model that answers with a tool call or nothing at all gives
        // no summary: folding the turns into it would drop them from every
        // later request. Keep them; the next turn tries again.
        tracing::warn!(session = %s.id, "the model returned an empty summary; the conversation stays uncompacted");
        return Ok(false);
    }
    let mut messages = vec![
        Message::user(format!("[Summary of the earlier conversation]\n{}", summary.trim())),
        Message::assistant("Understood — I will continue from that summary."),
    ];
    messages.extend(s.messages.drain(cut..));
    let shift = cut as isize - 2;
    s.turn_starts = s
        .turn_starts
        .iter()
        .filter(|t| **t >= cut)
        .map(|t| (*t as isize - shift) as usize)
        .collect();
    s.messages = messages;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::session::Session;
    use crate::llm::transcript::{push_tool_result, ToolOutcome};
    use crate::llm::Role;

    fn long_session(turns: usize) -> Session {
        let mut s = Session::new("ollama", "m", true);
        for i in 0..turns {
            s.begin_turn(&format!("question {i} {}", "x".repeat(400)));
            s.messages.push(Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: format!("c{i}"),
                    name: "search_kb".into(),
                    arguments: serde_json::json!({"query": "q"}),
                }],
            });
            push_tool_result(&mut s.messages, format!("c{i}"), ToolOutcome::ok("y".repeat(400)));
            s.messages.push(Message::assistant(format!("answer {i}")));
        }
        s
    }

    /// A model whose every answer is `reply`.
    struct Says(&'static str);

    impl ChatProvider for Says {
        fn provider_name(&self) -> &str {
            "ollama"
        }
        fn model(&self) -> &str {
            "stand-in"
        }
        fn complete(&self, _: &[Message], _: u32, _: Option<u32>, _: Option<&Cancel>) -> Result<String, CallError> {
            Ok(self.0.to_string())
        }
        fn summarize(
            &self,
            _: &str,
            _: &crate::llm::SummarySource,
            _: u32,
            _: Option<&Cancel>,
        ) -> Result<String, CallError> {
            unreachable!("compaction only completes")
        }
        fn agentic_turn(
            &self,
            _: &mut Vec<Message>,
            _: &[crate::llm::ToolSpec],
            _: &mut dyn FnMut(&crate::llm::ToolCall) -> Result<ToolOutcome, crate::llm::ToolError>,
            _: &str,
            _: Option<&Cancel>,
        ) -> Result<crate::llm::TurnEnd, CallError> {
            unreachable!("compaction only completes")
        }
        fn describe_image(&self, _: &[u8], _: &str, _: Option<&Cancel>) -> Result<String, CallError> {
            unreachable!("compaction only completes")
        }
        fn pop_usage(&self) -> Option<crate::llm::Usage> {
            None
        }
    }

    #[test]
    fn an_empty_summary_folds_nothing_and_a_real_one_folds_the_old_turns() {
        let mut s = long_session(10);
        let before = s.messages.clone();
        let cancel = Cancel::new();
        assert!(!maybe_compact(&mut s, &Says("  \n"), 1000, 3, &cancel).unwrap());
        assert_eq!(s.messages, before, "nothing was dropped");
        assert!(maybe_compact(&mut s, &Says("They asked ten questions."), 1000, 3, &cancel).unwrap());
        assert!(s.messages.len() < before.len());
        assert_eq!(
            s.messages[0].text(),
            "[Summary of the earlier conversation]\nThey asked ten questions."
        );
    }

    #[test]
    fn the_cut_lands_on_a_turn_boundary() {
        let s = long_session(10);
        assert!(needs_compaction(&s, 1000, 3));
        assert!(!needs_compaction(&s, 1_000_000, 3));
        assert!(!needs_compaction(&s, 1000, 10), "nothing to fold");
        let cut = cut_point(&s, 3).unwrap();
        assert_eq!(cut, s.turn_starts[7]);
        assert!(matches!(s.messages[cut].content[0], Block::Text { .. }));
    }
}
