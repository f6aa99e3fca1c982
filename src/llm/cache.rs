//! The response cache: an identical request that is safe to reuse is
//! answered from disk instead of being sent again.
//!
//! "Safe to reuse" is the caller's word, given by calling
//! [`ChatProvider::complete_reusable`] (digest scoring, metadata
//! extraction) — plus figure captions, which are always reusable: the same
//! picture under the same title and model gets the same caption. A chat
//! turn, a compaction or a summary never comes from here.
//!
//! Owns: [`ResponseCache`] (one file per answer under the directory the
//! caller names, 0700, each written atomically), its key — the SHA-256 of
//! the provider, the model and everything the request sends (prompt,
//! messages, output cap, context length, attached bytes) — and its bounds:
//! at most [`MAX_ENTRIES`] answers and [`MAX_BYTES`] on disk, none older
//! than [`MAX_AGE`], none bigger than [`MAX_ENTRY_BYTES`]; past a bound the
//! oldest answers go first. [`Cached`] wraps a provider with it.
//!
//! The cache is an optimisation and never a reason for a call to fail: a
//! file it cannot read or write is logged and the request goes to the model.
//! Must not: decide which requests are reusable, or keep anything outside
//! its directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cancel::Cancel;
use crate::llm::error::CallError;
use crate::llm::provider::{
    ChatProvider, StepOptions, SummarySource, ToolCall, ToolError, ToolOutcome, ToolSpec, TurnEnd, Usage,
    FIGURE_CAPTION_PROMPT,
};
use crate::llm::stream::OnEvent;
use crate::llm::transcript::Message;

/// Most answers kept.
pub const MAX_ENTRIES: usize = 2000;
/// Most bytes kept, all answers together.
pub const MAX_BYTES: u64 = 32 << 20;
/// An answer older than this is asked again (a model behind a name can change).
pub const MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);
/// An answer bigger than this is not kept.
pub const MAX_ENTRY_BYTES: usize = 256 << 10;

/// A bounded directory of answers.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    dir: PathBuf,
    max_entries: usize,
    max_bytes: u64,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    provider: String,
    model: String,
    /// Seconds since the epoch when the answer was kept.
    created: u64,
    text: String,
}

impl ResponseCache {
    /// A cache in `dir` (created 0700 on the first write) with the default bounds.
    pub fn new(dir: impl Into<PathBuf>) -> ResponseCache {
        ResponseCache::with_bounds(dir, MAX_ENTRIES, MAX_BYTES)
    }

    pub fn with_bounds(dir: impl Into<PathBuf>, max_entries: usize, max_bytes: u64) -> ResponseCache {
        ResponseCache {
            dir: dir.into(),
            max_entries,
            max_bytes,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The kept answer for `key`, if there is a fresh one.
    pub fn get(&self, key: &str) -> Option<String> {
        let bytes = match std::fs::read(self.path(key)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot read the response cache; asking the model");
                return None;
            }
        };
        let entry: Entry = match serde_json::from_slice(&bytes) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(key, error = %e, "a response cache entry is unreadable; asking the model");
                return None;
            }
        };
        let age = now_secs().saturating_sub(entry.created);
        (age < MAX_AGE.as_secs()).then_some(entry.text)
    }

    /// Keeps `text` under `key`, then trims the directory to its bounds.
    pub fn put(&self, key: &str, provider: &str, model: &str, text: &str) {
        if text.len() > MAX_ENTRY_BYTES {
            return;
        }
        let entry = Entry {
            provider: provider.to_string(),
            model: model.to_string(),
            created: now_secs(),
            text: text.to_string(),
        };
        let written = serde_json::to_vec(&entry).map_err(|e| e.to_string()).and_then(|bytes| {
            crate::paths::ensure_dir(&self.dir, 0o700).map_err(|e| e.to_string())?;
            crate::paths::write_atomic(&self.path(key), &bytes, 0o600).map_err(|e| e.to_string())
        });
        if let Err(e) = written {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot keep an answer in the response cache");
            return;
        }
        self.trim();
    }

    /// Removes answers past the age bound, then the oldest until the
    /// directory is within its entry and byte bounds.
    fn trim(&self) {
        let listing = match std::fs::read_dir(&self.dir) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot list the response cache to trim it");
                return;
            }
        };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = listing
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        // Newest first: everything past a bound is older than what stays.
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        let oldest_kept = SystemTime::now().checked_sub(MAX_AGE);
        let mut total = 0u64;
        for (n, (modified, len, path)) in files.into_iter().enumerate() {
            total += len;
            let stale = oldest_kept.is_some_and(|t| modified < t);
            if n >= self.max_entries || total > self.max_bytes || stale {
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot trim the response cache");
                }
            }
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The key of one request: SHA-256 over the provider, the model, what kind
/// of request it is and every part of it, each length-prefixed so no two
/// different requests run together into the same bytes.
pub fn key(provider: &str, model: &str, op: &str, parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in [provider.as_bytes(), model.as_bytes(), op.as_bytes()]
        .into_iter()
        .chain(parts.iter().copied())
    {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A provider whose reusable requests go through a [`ResponseCache`].
/// Everything else is passed through untouched.
pub struct Cached {
    inner: Box<dyn ChatProvider>,
    cache: ResponseCache,
}

impl Cached {
    pub fn new(inner: Box<dyn ChatProvider>, cache: ResponseCache) -> Cached {
        Cached { inner, cache }
    }

    fn answer(
        &self,
        key: String,
        keep: &dyn Fn(&str) -> bool,
        ask: impl FnOnce() -> Result<String, CallError>,
    ) -> Result<String, CallError> {
        if let Some(text) = self.cache.get(&key) {
            tracing::info!(
                provider = self.inner.provider_name(),
                model = self.inner.model(),
                "answered from the response cache (an identical request was answered before)"
            );
            return Ok(text);
        }
        let text = ask()?;
        if keep(&text) {
            self.cache
                .put(&key, self.inner.provider_name(), self.inner.model(), &text);
        }
        Ok(text)
    }
}

impl ChatProvider for Cached {
    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn complete(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        cancel: Option<&Cancel>,
    ) -> Result<String, CallError> {
        self.inner.complete(messages, max_tokens, context_length, cancel)
    }

    fn complete_streaming(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<String, CallError> {
        self.inner
            .complete_streaming(messages, max_tokens, context_length, cancel, on_event)
    }

    fn complete_reusable(
        &self,
        messages: &[Message],
        max_tokens: u32,
        context_length: Option<u32>,
        keep: &dyn Fn(&str) -> bool,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<String, CallError> {
        let transcript = match serde_json::to_vec(messages) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "cannot key a request for the response cache; asking the model");
                return self
                    .inner
                    .complete_streaming(messages, max_tokens, context_length, cancel, on_event);
            }
        };
        let key = key(
            self.inner.provider_name(),
            self.inner.model(),
            "complete",
            &[
                &transcript,
                &max_tokens.to_le_bytes(),
                &context_length.unwrap_or(0).to_le_bytes(),
            ],
        );
        self.answer(key, keep, || {
            self.inner
                .complete_streaming(messages, max_tokens, context_length, cancel, on_event)
        })
    }

    fn summarize(
        &self,
        prompt: &str,
        source: &SummarySource,
        max_tokens: u32,
        cancel: Option<&Cancel>,
    ) -> Result<String, CallError> {
        self.inner.summarize(prompt, source, max_tokens, cancel)
    }

    fn agentic_turn(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        cancel: Option<&Cancel>,
    ) -> Result<TurnEnd, CallError> {
        self.inner.agentic_turn(messages, tools, dispatch, system, cancel)
    }

    fn agentic_turn_streaming(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<TurnEnd, CallError> {
        self.inner
            .agentic_turn_streaming(messages, tools, dispatch, system, cancel, on_event)
    }

    #[allow(clippy::too_many_arguments)]
    fn agentic_turn_capped(
        &self,
        messages: &mut Vec<Message>,
        tools: &[ToolSpec],
        dispatch: &mut dyn FnMut(&ToolCall) -> Result<ToolOutcome, ToolError>,
        system: &str,
        step: StepOptions,
        cancel: Option<&Cancel>,
        on_event: &mut OnEvent<'_>,
    ) -> Result<TurnEnd, CallError> {
        self.inner
            .agentic_turn_capped(messages, tools, dispatch, system, step, cancel, on_event)
    }

    fn describe_image(&self, image: &[u8], context: &str, cancel: Option<&Cancel>) -> Result<String, CallError> {
        let key = key(
            self.inner.provider_name(),
            self.inner.model(),
            "caption",
            &[FIGURE_CAPTION_PROMPT.as_bytes(), context.as_bytes(), image],
        );
        // An empty caption is not worth keeping; any other is.
        self.answer(key, &|t: &str| !t.trim().is_empty(), || {
            self.inner.describe_image(image, context, cancel)
        })
    }

    fn pop_usage(&self) -> Option<Usage> {
        self.inner.pop_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_every_part_and_never_run_parts_together() {
        let base = key("openrouter", "m", "complete", &[b"prompt", b"x"]);
        assert_eq!(base, key("openrouter", "m", "complete", &[b"prompt", b"x"]));
        assert_eq!(base.len(), 64);
        for other in [
            key("anthropic", "m", "complete", &[b"prompt", b"x"]),
            key("openrouter", "m2", "complete", &[b"prompt", b"x"]),
            key("openrouter", "m", "caption", &[b"prompt", b"x"]),
            key("openrouter", "m", "complete", &[b"prompt", b"y"]),
            key("openrouter", "m", "complete", &[b"promptx", b""]),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn answers_come_back_and_the_directory_stays_within_its_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::with_bounds(dir.path().join("llm"), 3, 1 << 20);
        assert_eq!(cache.get("a"), None);
        cache.put("a", "p", "m", "first");
        assert_eq!(cache.get("a").as_deref(), Some("first"));
        for (n, k) in ["b", "c", "d", "e"].iter().enumerate() {
            // Distinct modification times, so "oldest" is well defined.
            std::thread::sleep(Duration::from_millis(20));
            cache.put(k, "p", "m", &format!("answer {n}"));
        }
        let left = std::fs::read_dir(cache.dir()).unwrap().count();
        assert_eq!(left, 3, "the entry bound holds");
        assert_eq!(cache.get("a"), None, "the oldest went first");
        assert_eq!(cache.get("e").as_deref(), Some("answer 3"));

        let tiny = ResponseCache::with_bounds(dir.path().join("tiny"), 100, 400);
        tiny.put("x", "p", "m", &"y".repeat(150));
        std::thread::sleep(Duration::from_millis(20));
        tiny.put("z", "p", "m", &"w".repeat(150));
        assert_eq!(tiny.get("x"), None, "the byte bound holds");
        assert!(tiny.get("z").is_some());

        cache.put("huge", "p", "m", &"h".repeat(MAX_ENTRY_BYTES + 1));
        assert_eq!(cache.get("huge"), None, "an oversized answer is not kept");

        std::fs::write(cache.path("broken"), b"{ not json").unwrap();
        assert_eq!(cache.get("broken"), None, "a damaged entry is a miss, not an error");
    }
}
