//! Provider cooldown: one model service that says "slow down" is left alone
//! for a while by every caller in this process — the chat, the digest, the
//! jobs — instead of each of them hammering it on its own schedule.
//!
//! Owns: the per-provider cooldown table (keyed by provider name and base
//! URL, so two servers of one family, or two test fakes, never share a
//! cooldown), the policy that fills it, and the wait (or the one clear
//! refusal) every request goes through before it is sent. The providers'
//! one streamed exchange is the only caller.
//!
//! The policy, from the desktop assistant's decisions log:
//! - a `Retry-After` on any error response is honoured as given (capped at
//!   [`MAX_COOLDOWN`]), whatever the provider;
//! - [`REPEATED_FAILURES`] rate limits or server errors in a row without one
//!   start a cooldown of [`FIRST_COOLDOWN`], doubling with each further
//!   failure up to [`MAX_COOLDOWN`]; a success clears it;
//! - a service on this machine (a loopback base URL) is exempt from that
//!   second rule: local inference has no quota, and locking the user out of
//!   their own model for a restart's worth of errors only hurts them.
//!
//! A caller facing a cooldown of at most [`MAX_WAIT`] waits it out (a stop
//! ends the wait at once); a longer one is refused at once with a rate-limit
//! error that names the provider and when it may be used again.
//! Must not: send requests, sleep without the stop switch, or know which
//! caller is asking.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::cancel::{Cancel, Cancelled};
use crate::llm::error::LlmError;
use crate::llm::retry::sleep_unless_cancelled;

/// Failures in a row (without a `Retry-After`) that start a cooldown.
pub const REPEATED_FAILURES: u32 = 3;
/// The first cooldown after [`REPEATED_FAILURES`].
pub const FIRST_COOLDOWN: Duration = Duration::from_secs(30);
/// No cooldown is longer, whatever a service asks for.
pub const MAX_COOLDOWN: Duration = Duration::from_secs(600);
/// The longest a caller waits in place; beyond it the request is refused.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// Which service a cooldown belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    provider: String,
    base_url: String,
}

impl Key {
    pub fn new(provider: &str, base_url: &str) -> Key {
        Key {
            provider: provider.to_string(),
            base_url: base_url.trim_end_matches('/').to_ascii_lowercase(),
        }
    }

    fn is_local(&self) -> bool {
        crate::llm::http::is_loopback_url(&self.base_url)
    }
}

#[derive(Debug, Default)]
struct State {
    until: Option<Instant>,
    failures: u32,
    /// Why the cooldown started, for the refusal ("rate limit (429)").
    reason: String,
}

/// The cooldown table. One per process ([`global`]); tests make their own.
#[derive(Debug, Default)]
pub struct Cooldowns {
    table: Mutex<HashMap<Key, State>>,
}

static GLOBAL: LazyLock<Cooldowns> = LazyLock::new(Cooldowns::default);

/// The process's table, which every provider request consults.
pub fn global() -> &'static Cooldowns {
    &GLOBAL
}

/// Whether a status is the service saying it is overloaded or limiting us
/// (as opposed to a request it will never accept, such as a bad key).
pub fn is_backoff_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

impl Cooldowns {
    /// How long `key` is still cooling down at `now`, and why.
    pub fn remaining(&self, key: &Key, now: Instant) -> Option<(Duration, String)> {
        let table = crate::lock::lock(&self.table);
        let state = table.get(key)?;
        let until = state.until?;
        (until > now).then(|| (until - now, state.reason.clone()))
    }

    /// Records an error response from `key`. Returns the cooldown it
    /// started, if any.
    pub fn record_failure(
        &self,
        key: &Key,
        status: u16,
        retry_after: Option<Duration>,
        now: Instant,
    ) -> Option<Duration> {
        let backoff = is_backoff_status(status);
        if retry_after.is_none() && !backoff {
            return None;
        }
        let mut table = crate::lock::lock(&self.table);
        let state = table.entry(key.clone()).or_default();
        if backoff {
            state.failures = state.failures.saturating_add(1);
        }
        let reason = if status == 429 {
            "a rate limit (429)".to_string()
        } else {
            format!("server errors ({status})")
        };
        let length = match retry_after {
            Some(asked) => asked.min(MAX_COOLDOWN),
            None if key.is_local() || state.failures < REPEATED_FAILURES => return None,
            None => {
                let doublings = state.failures - REPEATED_FAILURES;
                FIRST_COOLDOWN
                    .saturating_mul(2u32.saturating_pow(doublings))
                    .min(MAX_COOLDOWN)
            }
        };
        let until = now + length;
        // A later, shorter Retry-After does not cut an earlier cooldown short.
        if state.until.is_none_or(|u| u < until) {
            state.until = Some(until);
            state.reason = reason;
        }
        Some(length)
    }

    /// A reply arrived: the service is healthy again.
    pub fn record_success(&self, key: &Key) {
        crate::lock::lock(&self.table).remove(key);
    }

    /// Before a request to `key`: returns at once when it is not cooling
    /// down, waits out a cooldown of at most [`MAX_WAIT`] (a stop ends the
    /// wait), and refuses a longer one with the one clear message.
    pub fn honour(&self, key: &Key, label: &str, cancel: Option<&Cancel>) -> Result<(), CooldownStop> {
        let Some((left, reason)) = self.remaining(key, Instant::now()) else {
            return Ok(());
        };
        if left > MAX_WAIT {
            return Err(CooldownStop::Refused(refusal(key, label, left, &reason)));
        }
        tracing::info!(
            provider = %key.provider,
            wait_ms = left.as_millis() as u64,
            "{label} is cooling down after {reason}; waiting before the next request"
        );
        if !sleep_unless_cancelled(left, cancel) {
            return Err(CooldownStop::Cancelled(Cancelled));
        }
        Ok(())
    }
}

/// Why a request was not sent.
#[derive(Debug)]
pub enum CooldownStop {
    Cancelled(Cancelled),
    Refused(LlmError),
}

fn refusal(key: &Key, label: &str, left: Duration, reason: &str) -> LlmError {
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    let wait = if secs >= 60 {
        format!("{} min {} s", secs / 60, secs % 60)
    } else {
        format!("{secs} s")
    };
    LlmError::RateLimit {
        provider: key.provider.clone(),
        message: format!(
            "{label} is on a cooldown for another {wait} after {reason} — Jarvis sends it nothing until then so as not to make the limit worse; try again later or switch to another model"
        ),
        retry_after: Some(left),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> Key {
        Key::new("anthropic", "https://api.anthropic.com/")
    }

    #[test]
    fn retry_after_is_honoured_for_that_provider_only() {
        let c = Cooldowns::default();
        let now = Instant::now();
        let other = Key::new("openrouter", "https://openrouter.ai/api/v1");
        assert_eq!(
            c.record_failure(&remote(), 429, Some(Duration::from_secs(2)), now),
            Some(Duration::from_secs(2))
        );
        let (left, reason) = c.remaining(&remote(), now + Duration::from_millis(500)).unwrap();
        assert_eq!(left, Duration::from_millis(1500));
        assert!(reason.contains("429"), "{reason}");
        assert!(c.remaining(&other, now).is_none());
        assert!(c.remaining(&remote(), now + Duration::from_secs(2)).is_none());
        // The trailing slash and case of a base URL do not make a new key.
        assert!(c
            .remaining(&Key::new("anthropic", "https://API.anthropic.com"), now)
            .is_some());
    }

    #[test]
    fn repeated_failures_start_a_doubling_cooldown_and_a_success_clears_it() {
        let c = Cooldowns::default();
        let now = Instant::now();
        assert_eq!(c.record_failure(&remote(), 503, None, now), None);
        assert_eq!(c.record_failure(&remote(), 429, None, now), None);
        assert_eq!(c.record_failure(&remote(), 500, None, now), Some(FIRST_COOLDOWN));
        assert_eq!(c.record_failure(&remote(), 500, None, now), Some(FIRST_COOLDOWN * 2));
        for _ in 0..10 {
            c.record_failure(&remote(), 529, None, now);
        }
        assert_eq!(c.remaining(&remote(), now).unwrap().0, MAX_COOLDOWN);
        c.record_success(&remote());
        assert!(c.remaining(&remote(), now).is_none());
        assert_eq!(
            c.record_failure(&remote(), 500, None, now),
            None,
            "the count starts again"
        );
    }

    #[test]
    fn a_bad_request_counts_for_nothing_and_a_local_server_only_honours_retry_after() {
        let c = Cooldowns::default();
        let now = Instant::now();
        for _ in 0..5 {
            assert_eq!(c.record_failure(&remote(), 401, None, now), None);
        }
        let local = Key::new("ollama", "http://127.0.0.1:11434");
        for _ in 0..5 {
            assert_eq!(c.record_failure(&local, 500, None, now), None);
        }
        assert!(c.remaining(&local, now).is_none());
        assert_eq!(
            c.record_failure(&local, 503, Some(Duration::from_secs(1)), now),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            c.record_failure(&remote(), 429, Some(Duration::from_secs(86_400)), now),
            Some(MAX_COOLDOWN),
            "no service locks a provider for a day"
        );
    }

    #[test]
    fn a_long_cooldown_is_refused_with_one_clear_message_and_a_short_one_waited() {
        let c = Cooldowns::default();
        c.record_failure(&remote(), 429, Some(Duration::from_secs(300)), Instant::now());
        let Err(CooldownStop::Refused(e)) = c.honour(&remote(), "Anthropic", None) else {
            panic!("a five-minute cooldown is not waited in place");
        };
        let text = e.to_string();
        assert!(text.contains("Anthropic is on a cooldown for another 5 min"), "{text}");
        assert!(text.contains("switch to another model"), "{text}");
        assert!(e.retry_after().is_some_and(|d| d > Duration::from_secs(290)));

        let short = Key::new("openrouter", "https://openrouter.ai/api/v1");
        c.record_failure(&short, 429, Some(Duration::from_millis(200)), Instant::now());
        let started = Instant::now();
        c.honour(&short, "OpenRouter", None).unwrap();
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "{:?}",
            started.elapsed()
        );

        let stopped = Cancel::new();
        stopped.cancel();
        c.record_failure(&short, 429, Some(Duration::from_secs(30)), Instant::now());
        assert!(matches!(
            c.honour(&short, "OpenRouter", Some(&stopped)),
            Err(CooldownStop::Cancelled(_))
        ));
    }
}
