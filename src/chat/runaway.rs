//! Telling a model that has lost the thread from one that is answering, as
//! its output streams in.
//!
//! Owns: [`Watch`], fed every text and reasoning delta of one model step,
//! which says when the step has run away — the model writes its chat
//! template's role markers (`<|im_start|>user …`: it is inventing the next
//! turns of the conversation, a sign its server applies the wrong template
//! or the model is too small for the job), repeats the same text over and
//! over, or writes far more than the per-step output cap without stopping
//! (a server that ignores `max_tokens`). And [`Runaway`], the reason, with
//! the message that ends the turn.
//! Must not: stop anything itself (the turn cancels the request), or judge
//! content: markers inside code (a fenced block or `inline code`) are an
//! answer *about* templates and never count.

use std::fmt;

/// Chat-template markers no answer writes outside code: ChatML (Qwen,
/// many fine-tunes), Gemma, Llama 2/Mistral `[INST]`, Llama 3, Phi.
pub const TEMPLATE_MARKERS: &[&str] = &[
    "<|im_start|>",
    "<|im_end|>",
    "<start_of_turn>",
    "<end_of_turn>",
    "[INST]",
    "[/INST]",
    "<|start_header_id|>",
    "<|eot_id|>",
    "<|endoftext|>",
    "<|user|>",
    "<|assistant|>",
    "<|end|>",
];

/// Bytes of a step's tail checked for exact repetition.
const REPEAT_WINDOW: usize = 2048;
/// Longest repeating unit looked for (a paragraph said again and again).
const REPEAT_MAX_PERIOD: usize = 512;
/// New bytes between two repetition checks.
const REPEAT_EVERY: usize = 256;
/// Non-empty lines looked back over for a line said again and again.
const LINE_WINDOW: usize = 24;
/// How often one line (of at least [`LINE_MIN_CHARS`]) may appear among the
/// last [`LINE_WINDOW`] before the step counts as looping.
const LINE_MAX_REPEATS: usize = 10;
const LINE_MIN_CHARS: usize = 12;
/// Characters per token above which a step certainly passed its token cap
/// (no tokenizer packs more into one token): the backstop for servers that
/// ignore `max_tokens`.
const CHARS_PER_TOKEN_CEILING: usize = 8;

/// Why a step was ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runaway {
    /// A chat-template marker outside code.
    TemplateMarker(String),
    /// The same text again and again.
    Repeating,
    /// Far more output than the per-step cap.
    OutputCap(u32),
    /// The turn's wall-clock budget ran out.
    TimeBudget(u64),
}

impl Runaway {
    /// A short name for chat.log's outcome field.
    pub fn outcome(&self) -> &'static str {
        match self {
            Runaway::TemplateMarker(_) => "runaway_template",
            Runaway::Repeating => "runaway_repeating",
            Runaway::OutputCap(_) => "runaway_output_cap",
            Runaway::TimeBudget(_) => "time_budget",
        }
    }

    /// The reply that ends the turn: what happened, with which model, and
    /// what to try.
    pub fn message(&self, model: &str) -> String {
        let what = match self {
            Runaway::TemplateMarker(m) => format!(
                "{model} started writing chat-template markers ({}) instead of an answer — it is making up the rest of the conversation. That happens when a model is too small for tool use or its server applies the wrong chat template",
                marker_name(m)
            ),
            Runaway::Repeating => format!("{model} kept repeating the same text instead of finishing its answer"),
            Runaway::OutputCap(cap) => format!(
                "{model} wrote far more than chat.max_output_tokens ({cap} tokens) in one step without finishing — its server seems to ignore the output cap"
            ),
            Runaway::TimeBudget(secs) => format!(
                "this turn on {model} ran past its time budget of {secs} s (chat.turn_timeout_secs) without finishing"
            ),
        };
        let fix = match self {
            Runaway::TimeBudget(_) => "Try a faster or larger model (switch this session's model), check that its server is not overloaded, or raise chat.turn_timeout_secs if answers here really take longer.",
            _ => "Try a larger model (switch this session's model), or another server for it (Ollama applies each model's own template; llama.cpp's server needs --jinja).",
        };
        format!("⚠️ I stopped: {what}. {fix}")
    }
}

/// A marker's name without its brackets: the message is saved in the
/// session and sent back to the model with the history, where a literal
/// `<|im_start|>` could be read as the real token again.
fn marker_name(m: &str) -> String {
    m.trim_matches(|c| matches!(c, '<' | '>' | '|' | '[' | ']' | '/'))
        .to_string()
}

impl fmt::Display for Runaway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.outcome())
    }
}

/// Watches one stream of output (the answer or the reasoning) of one
/// step. Feed every delta; the first `Some` is the verdict.
#[derive(Debug, Default)]
struct Stream {
    /// The step's output so far (only the tail is needed for repetition,
    /// but a step is bounded by the output cap anyway).
    text: String,
    /// Bytes scanned for markers and code state.
    scanned: usize,
    in_fence: bool,
    /// Backticks seen on the current line outside a fence.
    line_ticks: usize,
    /// The current line so far (fence detection, line repetition).
    line: String,
    /// Recent non-empty lines, oldest first.
    recent: std::collections::VecDeque<String>,
    checked_repeat_at: usize,
}

impl Stream {
    fn feed(&mut self, delta: &str) -> Option<Runaway> {
        self.text.push_str(delta);
        let max_marker = TEMPLATE_MARKERS.iter().map(|m| m.len()).max().unwrap_or(0);
        let start = self.scanned;
        self.scanned = self.text.len();
        let mut verdict = None;
        let new = self.text[start..].to_string();
        for (i, c) in new.char_indices() {
            let end = start + i + c.len_utf8();
            if c == '\n' {
                self.end_line();
                if verdict.is_none() {
                    verdict = self.line_verdict();
                }
                continue;
            }
            self.line.push(c);
            if c == '`' && !self.in_fence {
                self.line_ticks += 1;
            }
            let trimmed = self.line.trim_start();
            if trimmed == "```" || trimmed == "~~~" {
                // The fence opens or closes as its third mark arrives; the
                // backticks of a fence line are not inline code.
                self.in_fence = !self.in_fence;
                self.line_ticks = 0;
            }
            if verdict.is_none() && !self.in_fence && self.line_ticks.is_multiple_of(2) {
                let from = end.saturating_sub(max_marker);
                let from = (from..=end).find(|&j| self.text.is_char_boundary(j)).unwrap_or(end);
                let tail = &self.text[from..end];
                if let Some(m) = TEMPLATE_MARKERS.iter().find(|m| tail.ends_with(*m)) {
                    verdict = Some(Runaway::TemplateMarker((*m).to_string()));
                }
            }
        }
        if verdict.is_none() && self.text.len() >= self.checked_repeat_at + REPEAT_EVERY {
            self.checked_repeat_at = self.text.len();
            if periodic_tail(self.text.as_bytes()) {
                verdict = Some(Runaway::Repeating);
            }
        }
        verdict
    }

    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.line_ticks = 0;
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        self.recent.push_back(t.to_string());
        while self.recent.len() > LINE_WINDOW {
            self.recent.pop_front();
        }
    }

    /// One line (long enough to mean something) said again and again.
    fn line_verdict(&self) -> Option<Runaway> {
        let last = self.recent.back()?;
        if last.chars().count() < LINE_MIN_CHARS || self.in_fence {
            return None;
        }
        let n = self.recent.iter().filter(|l| *l == last).count();
        (n >= LINE_MAX_REPEATS).then_some(Runaway::Repeating)
    }
}

/// The last [`REPEAT_WINDOW`] bytes are one unit of at most
/// [`REPEAT_MAX_PERIOD`] bytes said at least four times over.
fn periodic_tail(text: &[u8]) -> bool {
    if text.len() < REPEAT_WINDOW {
        return false;
    }
    let tail = &text[text.len() - REPEAT_WINDOW..];
    (1..=REPEAT_MAX_PERIOD.min(REPEAT_WINDOW / 4)).any(|p| tail[p..] == tail[..REPEAT_WINDOW - p])
}

/// Everything one step streams, watched. See the module docs.
#[derive(Debug)]
pub struct Watch {
    answer: Stream,
    reasoning: Stream,
    cap_tokens: u32,
}

impl Watch {
    /// A watch for one step whose output is capped at `cap_tokens`.
    pub fn new(cap_tokens: u32) -> Watch {
        Watch {
            answer: Stream::default(),
            reasoning: Stream::default(),
            cap_tokens,
        }
    }

    /// A new step starts: the output so far no longer counts.
    pub fn reset(&mut self) {
        *self = Watch::new(self.cap_tokens);
    }

    /// A piece of the answer.
    pub fn text(&mut self, delta: &str) -> Option<Runaway> {
        self.answer.feed(delta).or_else(|| self.over_cap())
    }

    /// A piece of the reasoning.
    pub fn thinking(&mut self, delta: &str) -> Option<Runaway> {
        self.reasoning.feed(delta).or_else(|| self.over_cap())
    }

    fn over_cap(&self) -> Option<Runaway> {
        let chars = self.answer.text.len() + self.reasoning.text.len();
        (chars > self.cap_tokens as usize * CHARS_PER_TOKEN_CEILING).then_some(Runaway::OutputCap(self.cap_tokens))
    }
}

/// A turn's wall-clock budget: runs `on_expire` once `budget` has passed,
/// unless dropped first. One short-lived thread per turn.
pub(crate) struct Deadline {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Deadline {
    pub fn start(budget: std::time::Duration, on_expire: impl FnOnce() + Send + 'static) -> Deadline {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("jarvis-turn-budget".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(budget) {
                    on_expire();
                }
            });
        match thread {
            Ok(t) => Deadline {
                done: Some(done),
                thread: Some(t),
            },
            Err(e) => {
                // Without the thread the turn still has the runaway watch
                // and the stop button; say so rather than fail the turn.
                tracing::warn!(error = %e, "cannot start the turn's budget timer; this turn has no time budget");
                Deadline {
                    done: None,
                    thread: None,
                }
            }
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        // Closing the channel wakes the timer at once.
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(w: &mut Watch, pieces: &[&str]) -> Option<Runaway> {
        pieces.iter().find_map(|p| w.text(p))
    }

    #[test]
    fn a_role_marker_outside_code_is_a_runaway_even_split_across_deltas() {
        let mut w = Watch::new(4096);
        let v = feed_all(&mut w, &["Sure! The answer is 4.", "\n<|im_", "start|>user\nAnd 5?"]);
        assert_eq!(v, Some(Runaway::TemplateMarker("<|im_start|>".into())));
        let mut w = Watch::new(4096);
        assert_eq!(
            feed_all(&mut w, &["<start_of_turn>model\nhi"]),
            Some(Runaway::TemplateMarker("<start_of_turn>".into()))
        );
        let mut w = Watch::new(4096);
        assert!(feed_all(&mut w, &["ok [INST] more"]).is_some());
    }

    #[test]
    fn markers_inside_code_are_an_answer_about_templates() {
        let mut w = Watch::new(4096);
        let answer = "ChatML wraps each turn: `<|im_start|>user` … `<|im_end|>`.\n\n```\n<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n```\n\nGemma uses `<start_of_turn>` instead.\n";
        // Delta by delta, as a stream delivers it.
        let pieces: Vec<String> = answer.chars().map(String::from).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(feed_all(&mut w, &refs), None);
    }

    #[test]
    fn exact_repetition_and_a_repeated_line_are_runaways() {
        let mut w = Watch::new(100_000);
        let mut v = None;
        for _ in 0..200 {
            v = v.or(w.text("I am a helpful assistant. "));
        }
        assert_eq!(v, Some(Runaway::Repeating));
        let mut w = Watch::new(100_000);
        let mut v = None;
        for i in 0..30 {
            v = v.or(w.text(&format!("Let me search the notes again.\n{}\n", "x".repeat(i % 3))));
        }
        assert_eq!(v, Some(Runaway::Repeating));
    }

    #[test]
    fn an_ordinary_long_answer_is_not_a_runaway() {
        let mut w = Watch::new(4096);
        let mut v = None;
        for i in 0..300 {
            v = v.or(w.text(&format!(
                "{i}. Step {i} of the recipe uses {} grams and takes {} minutes.\n",
                i * 7 % 13,
                i % 11
            )));
        }
        // A table's rows differ; its separator line is short.
        for i in 0..40 {
            v = v.or(w.text(&format!("| row {i} | {} |\n|---|---|\n", i * 3)));
        }
        assert_eq!(v, None);
    }

    #[test]
    fn output_far_past_the_cap_is_a_runaway_and_a_new_step_starts_afresh() {
        let mut w = Watch::new(10);
        let mut v = None;
        for i in 0..20 {
            v = v.or(w.thinking(&format!("thought {i}; ")));
        }
        assert_eq!(v, Some(Runaway::OutputCap(10)));
        w.reset();
        assert_eq!(w.text("fine"), None);
    }

    #[test]
    fn a_deadline_fires_once_when_it_passes_and_never_after_a_drop() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let d = Deadline::start(std::time::Duration::from_millis(10), move || {
            f.fetch_add(1, Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(d);
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        let f = fired.clone();
        drop(Deadline::start(std::time::Duration::from_secs(3600), move || {
            f.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(fired.load(Ordering::SeqCst), 1, "dropped before its time: never fires");
    }

    #[test]
    fn the_message_names_the_model_and_what_to_try() {
        let m = Runaway::TemplateMarker("<|im_start|>".into()).message("llama:gemma-3-270m");
        assert!(m.contains("llama:gemma-3-270m") && m.contains("(im_start)") && m.contains("larger model"));
        assert!(!m.contains("<|"), "no live marker goes back into the history: {m}");
        let m = Runaway::TimeBudget(300).message("ollama:x");
        assert!(m.contains("300 s") && m.contains("chat.turn_timeout_secs"));
    }
}
