//! `with_retries`: exponential backoff with jitter for transient failures.

use std::time::Duration;

use rand::Rng;

use crate::cancel::{Cancel, Cancelled};
use crate::llm::error::{CallError, ErrorKind};

/// Maximum share of the base delay added as random jitter, so repeated
/// failures of many callers don't hammer a struggling service in lockstep.
pub const MAX_JITTER: f64 = 0.25;

/// Base delay before retry number `attempt` (1-based): `backoff * 2^(attempt-1)`.
pub fn base_delay(backoff: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    backoff.saturating_mul(factor)
}

/// Base delay plus up to 25% jitter; `unit` is a sample in `[0, 1)`.
pub fn jittered(base: Duration, unit: f64) -> Duration {
    let unit = unit.clamp(0.0, 1.0);
    base + base.mul_f64(MAX_JITTER * unit)
}

/// Runs `f` up to `max_attempts` times, retrying only errors whose kind is in
/// `kinds`. A rate limit's `Retry-After` is honoured when longer than the
/// backoff. Cancellation is never retried.
pub fn with_retries<T>(
    max_attempts: u32,
    backoff: Duration,
    kinds: &[ErrorKind],
    f: impl FnMut() -> Result<T, CallError>,
) -> Result<T, CallError> {
    with_retries_sleeping(max_attempts, backoff, kinds, f, std::thread::sleep)
}

/// Longest wait [`with_retries_cancellable`] accepts: a `Retry-After`
/// beyond it ends the retries with the error, because someone is waiting.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(120);

/// [`with_retries`] for work a user may stop: the wait between attempts
/// ends at once on `cancel` (returning `Cancelled`), and a service asking
/// for more than [`MAX_RETRY_WAIT`] gets its error reported instead of a
/// silent long wait.
pub fn with_retries_cancellable<T>(
    max_attempts: u32,
    backoff: Duration,
    kinds: &[ErrorKind],
    cancel: Option<&Cancel>,
    mut f: impl FnMut() -> Result<T, CallError>,
) -> Result<T, CallError> {
    let stopped = std::cell::Cell::new(false);
    let out = with_retries_sleeping(
        max_attempts,
        backoff,
        kinds,
        || {
            if stopped.get() {
                return Err(CallError::Cancelled(Cancelled));
            }
            f()
        },
        |delay| stopped.set(!sleep_unless_cancelled(delay, cancel)),
    );
    if stopped.get() {
        return Err(CallError::Cancelled(Cancelled));
    }
    out
}

/// Sleeps `delay`; `false` when `cancel` fired first.
pub fn sleep_unless_cancelled(delay: Duration, cancel: Option<&Cancel>) -> bool {
    let Some(cancel) = cancel else {
        std::thread::sleep(delay);
        return true;
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let _guard = cancel.on_cancel(move || {
        let _ = tx.send(());
    });
    // Woken by the hook (or its sender dropping): cancelled. Timed out: slept.
    !matches!(
        rx.recv_timeout(delay),
        Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
    ) && !cancel.is_cancelled()
}

/// [`with_retries`] with an injectable sleep, for tests.
pub fn with_retries_sleeping<T>(
    max_attempts: u32,
    backoff: Duration,
    kinds: &[ErrorKind],
    mut f: impl FnMut() -> Result<T, CallError>,
    mut sleep: impl FnMut(Duration),
) -> Result<T, CallError> {
    let max_attempts = max_attempts.max(1);
    let mut attempt = 1;
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(CallError::Llm(e)) if attempt < max_attempts && kinds.contains(&e.kind()) => {
                let unit: f64 = rand::rng().random();
                let mut delay = jittered(base_delay(backoff, attempt), unit);
                if let Some(after) = e.retry_after() {
                    if after > MAX_RETRY_WAIT {
                        return Err(CallError::Llm(e));
                    }
                    delay = delay.max(after);
                }
                tracing::warn!(attempt, ?delay, error = %e, "retrying after transient LLM error");
                sleep(delay);
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::error::LlmError;

    #[test]
    fn jitter_stays_within_a_quarter() {
        let base = base_delay(Duration::from_millis(100), 3);
        assert_eq!(base, Duration::from_millis(400));
        for i in 0..100 {
            let d = jittered(base, f64::from(i) / 100.0);
            assert!(d >= base && d <= base.mul_f64(1.25), "{d:?}");
        }
        for _ in 0..200 {
            let d = jittered(base, rand::rng().random());
            assert!(d >= base && d <= base.mul_f64(1.25));
        }
    }

    #[test]
    fn retries_transient_only_and_honours_retry_after() {
        let mut calls = 0;
        let mut slept = Vec::new();
        let out: Result<(), CallError> = with_retries_sleeping(
            3,
            Duration::from_millis(10),
            ErrorKind::TRANSIENT,
            || {
                calls += 1;
                Err(CallError::Llm(LlmError::RateLimit {
                    provider: "p".into(),
                    message: "slow down".into(),
                    retry_after: Some(Duration::from_secs(2)),
                }))
            },
            |d| slept.push(d),
        );
        assert!(out.is_err());
        assert_eq!(calls, 3);
        assert_eq!(slept, vec![Duration::from_secs(2); 2]);

        let mut calls = 0;
        let out: Result<(), CallError> = with_retries_sleeping(
            5,
            Duration::from_millis(1),
            ErrorKind::TRANSIENT,
            || {
                calls += 1;
                Err(CallError::Llm(LlmError::Auth {
                    provider: "p".into(),
                    message: "no".into(),
                }))
            },
            |_| {},
        );
        assert!(out.is_err());
        assert_eq!(calls, 1);
    }

    #[test]
    fn a_stop_ends_the_wait_between_attempts() {
        let cancel = Cancel::new();
        let c = cancel.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            c.cancel();
        });
        let mut calls = 0;
        let out: Result<(), CallError> =
            with_retries_cancellable(3, Duration::from_secs(60), ErrorKind::TRANSIENT, Some(&cancel), || {
                calls += 1;
                Err(CallError::Llm(LlmError::Server {
                    provider: "p".into(),
                    status: Some(503),
                    message: "busy".into(),
                }))
            });
        stopper.join().unwrap();
        assert!(matches!(out, Err(CallError::Cancelled(_))), "{out:?}");
        assert_eq!(calls, 1, "no attempt after the stop");
    }

    #[test]
    fn a_retry_after_beyond_the_cap_is_reported_not_waited() {
        let mut calls = 0;
        let out: Result<(), CallError> =
            with_retries_cancellable(3, Duration::from_millis(1), ErrorKind::TRANSIENT, None, || {
                calls += 1;
                Err(CallError::Llm(LlmError::RateLimit {
                    provider: "p".into(),
                    message: "quota".into(),
                    retry_after: Some(Duration::from_secs(3600)),
                }))
            });
        assert!(matches!(out, Err(CallError::Llm(LlmError::RateLimit { .. }))));
        assert_eq!(calls, 1);
    }
}
