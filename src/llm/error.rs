//! The classified LLM error. Every variant carries a complete, actionable
//! message (already redacted) so callers can show it as-is.

use std::time::Duration;

use crate::cancel::Cancelled;

/// What went wrong, coarsely: the axis retries and UIs decide on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Network,
    Timeout,
    RateLimit,
    Auth,
    Payment,
    ModelNotFound,
    ContextTooLong,
    Server,
    BadRequest,
    /// Jarvis-side misconfiguration: unknown provider, no model chosen.
    Config,
}

impl ErrorKind {
    /// Kinds worth retrying after a pause.
    pub const TRANSIENT: &'static [ErrorKind] = &[
        ErrorKind::Network,
        ErrorKind::Timeout,
        ErrorKind::RateLimit,
        ErrorKind::Server,
    ];
}

/// A failure talking to a model service. Construct through the helpers so
/// the message is redacted; `Display` is the user-facing text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{message}")]
    Network { provider: String, message: String },
    #[error("{message}")]
    Timeout { provider: String, message: String },
    #[error("{message}")]
    RateLimit {
        provider: String,
        message: String,
        /// From the `Retry-After` header, when the service sent one.
        retry_after: Option<Duration>,
    },
    #[error("{message}")]
    Auth { provider: String, message: String },
    #[error("{message}")]
    Payment { provider: String, message: String },
    #[error("{message}")]
    ModelNotFound {
        provider: String,
        model: String,
        message: String,
    },
    #[error("{message}")]
    ContextTooLong { provider: String, message: String },
    #[error("{message}")]
    Server {
        provider: String,
        status: Option<u16>,
        message: String,
    },
    #[error("{message}")]
    BadRequest { provider: String, message: String },
    #[error("{message}")]
    Config { message: String },
}

impl LlmError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            LlmError::Network { .. } => ErrorKind::Network,
            LlmError::Timeout { .. } => ErrorKind::Timeout,
            LlmError::RateLimit { .. } => ErrorKind::RateLimit,
            LlmError::Auth { .. } => ErrorKind::Auth,
            LlmError::Payment { .. } => ErrorKind::Payment,
            LlmError::ModelNotFound { .. } => ErrorKind::ModelNotFound,
            LlmError::ContextTooLong { .. } => ErrorKind::ContextTooLong,
            LlmError::Server { .. } => ErrorKind::Server,
            LlmError::BadRequest { .. } => ErrorKind::BadRequest,
            LlmError::Config { .. } => ErrorKind::Config,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            LlmError::Network { message, .. }
            | LlmError::Timeout { message, .. }
            | LlmError::RateLimit { message, .. }
            | LlmError::Auth { message, .. }
            | LlmError::Payment { message, .. }
            | LlmError::ModelNotFound { message, .. }
            | LlmError::ContextTooLong { message, .. }
            | LlmError::Server { message, .. }
            | LlmError::BadRequest { message, .. }
            | LlmError::Config { message } => message,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimit { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn config(message: impl Into<String>) -> Self {
        LlmError::Config {
            message: message.into(),
        }
    }

    /// Applies `redact` to the message. Used at the single point where each
    /// provider turns a failure into an `LlmError`.
    pub(crate) fn redacted(mut self, redact: impl Fn(&str) -> String) -> Self {
        let m = match &mut self {
            LlmError::Network { message, .. }
            | LlmError::Timeout { message, .. }
            | LlmError::RateLimit { message, .. }
            | LlmError::Auth { message, .. }
            | LlmError::Payment { message, .. }
            | LlmError::ModelNotFound { message, .. }
            | LlmError::ContextTooLong { message, .. }
            | LlmError::Server { message, .. }
            | LlmError::BadRequest { message, .. }
            | LlmError::Config { message } => message,
        };
        *m = redact(m);
        self
    }
}

/// What a provider call can end with besides success.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl CallError {
    pub fn is_cancelled(&self) -> bool {
        matches!(self, CallError::Cancelled(_))
    }

    pub fn llm(&self) -> Option<&LlmError> {
        match self {
            CallError::Llm(e) => Some(e),
            CallError::Cancelled(_) => None,
        }
    }
}

/// Parses `Retry-After` in either form RFC 9110 allows: delay-seconds
/// (`120`, tolerated as a decimal) or an HTTP-date (`Wed, 21 Oct 2015
/// 07:28:00 GMT`, also the obsolete RFC 850 and asctime forms). A date in
/// the past means "now" (zero); anything else unreadable is `None`.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    parse_retry_after_at(value, std::time::SystemTime::now())
}

/// [`parse_retry_after`] against a given clock, for tests.
pub fn parse_retry_after_at(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Some(d) = v
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e12)
        .map(Duration::from_secs_f64)
    {
        return Some(d);
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Cuts a service's error body down to a readable detail: the `message` of a
/// JSON error when there is one, else the first few hundred characters.
pub fn error_detail(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let candidates = [
            v.pointer("/error/message"),
            v.pointer("/error"),
            v.pointer("/message"),
            v.pointer("/detail"),
        ];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str() {
                return truncate(s, 400);
            }
        }
    }
    truncate(body.trim(), 400)
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// True when an error body says the prompt did not fit the model's window.
pub fn mentions_context_overflow(detail: &str) -> bool {
    let d = detail.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "prompt is too long",
        "maximum context",
        "too many tokens",
        "input is too long",
    ]
    .iter()
    .any(|needle| d.contains(needle))
}

/// Shared status classification; providers specialise the wording of the
/// cases where they know the fix better (e.g. `ollama pull`).
pub struct StatusContext<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub key_hint: &'a str,
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub detail: &'a str,
}

pub fn classify_status(c: &StatusContext<'_>) -> LlmError {
    let provider = c.provider.to_string();
    let detail = c.detail;
    let lower = detail.to_ascii_lowercase();
    match c.status {
        401 | 403 => LlmError::Auth {
            provider,
            message: format!(
                "{} rejected the API key (HTTP {}): {detail} — check {}",
                c.provider, c.status, c.key_hint
            ),
        },
        402 => LlmError::Payment {
            provider,
            message: format!(
                "{} says the account is out of credit or over quota: {detail} — top up or raise the limit",
                c.provider
            ),
        },
        429 => {
            let wait = c
                .retry_after
                .map(|d| format!(" — retry after {}s", d.as_secs().max(1)))
                .unwrap_or_else(|| " — wait a moment and retry".to_string());
            LlmError::RateLimit {
                provider,
                message: format!("{} is rate limiting requests: {detail}{wait}", c.provider),
                retry_after: c.retry_after,
            }
        }
        _ if mentions_context_overflow(detail) => LlmError::ContextTooLong {
            provider,
            message: format!(
                "the conversation is too long for {} `{}`: {detail} — start a new session or pick a model with a larger context",
                c.provider, c.model
            ),
        },
        404 => LlmError::ModelNotFound {
            provider,
            model: c.model.to_string(),
            message: format!(
                "{} has no model `{}`: {detail} — check the model name",
                c.provider, c.model
            ),
        },
        400 | 422 if lower.contains("model") && (lower.contains("not found") || lower.contains("not a valid") || lower.contains("does not exist")) => {
            LlmError::ModelNotFound {
                provider,
                model: c.model.to_string(),
                message: format!(
                    "{} has no model `{}`: {detail} — check the model name",
                    c.provider, c.model
                ),
            }
        }
        408 | 504 => LlmError::Timeout {
            provider,
            message: format!("{} timed out (HTTP {}): {detail} — try again", c.provider, c.status),
        },
        s if s >= 500 => LlmError::Server {
            provider,
            status: Some(s),
            message: format!(
                "{} had a server error (HTTP {s}): {detail} — usually temporary, try again",
                c.provider
            ),
        },
        s => LlmError::BadRequest {
            provider,
            message: format!("{} refused the request (HTTP {s}): {detail}", c.provider),
        },
    }
}

impl LlmError {
    /// This failure on the crate-wide axis edges report by (exit codes,
    /// HTTP statuses); [`LlmError::kind`] stays the finer LLM-call axis.
    pub fn error_kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind as K;
        match self.kind() {
            ErrorKind::Network | ErrorKind::Timeout | ErrorKind::RateLimit | ErrorKind::Server => K::Unavailable,
            ErrorKind::Auth | ErrorKind::Payment | ErrorKind::Config | ErrorKind::BadRequest => K::User,
            ErrorKind::ModelNotFound => K::NotFound,
            ErrorKind::ContextTooLong => K::User,
        }
    }
}

impl CallError {
    /// See [`LlmError::error_kind`].
    pub fn error_kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            CallError::Cancelled(_) => crate::error_kind::ErrorKind::Cancelled,
            CallError::Llm(e) => e.error_kind(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(status: u16, detail: &str) -> LlmError {
        classify_status(&StatusContext {
            provider: "OpenRouter",
            model: "m",
            key_hint: "OPENROUTER_API_KEY",
            status,
            retry_after: Some(Duration::from_secs(7)),
            detail,
        })
    }

    #[test]
    fn statuses_classify() {
        assert_eq!(ctx(401, "bad").kind(), ErrorKind::Auth);
        assert_eq!(ctx(402, "x").kind(), ErrorKind::Payment);
        assert_eq!(ctx(429, "x").retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(ctx(404, "x").kind(), ErrorKind::ModelNotFound);
        assert_eq!(ctx(400, "model foo does not exist").kind(), ErrorKind::ModelNotFound);
        assert_eq!(
            ctx(400, "This model's maximum context length is 8192").kind(),
            ErrorKind::ContextTooLong
        );
        assert_eq!(ctx(500, "x").kind(), ErrorKind::Server);
        assert_eq!(ctx(400, "x").kind(), ErrorKind::BadRequest);
        assert_eq!(ctx(504, "x").kind(), ErrorKind::Timeout);
        assert!(ctx(401, "bad").to_string().contains("OPENROUTER_API_KEY"));
    }

    #[test]
    fn retry_after_and_detail() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        for form in [
            "Wed, 21 Oct 2015 07:28:30 GMT",
            "Wednesday, 21-Oct-15 07:28:30 GMT",
            "Wed Oct 21 07:28:30 2015",
        ] {
            assert_eq!(parse_retry_after_at(form, now), Some(Duration::from_secs(30)), "{form}");
        }
        assert_eq!(
            parse_retry_after_at("Tue, 20 Oct 2015 07:28:00 GMT", now),
            Some(Duration::ZERO),
            "a past date means now"
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-3"), None);
        assert_eq!(error_detail(r#"{"error":{"message":"nope"}}"#), "nope");
        assert_eq!(error_detail(r#"{"error":"model not found"}"#), "model not found");
        assert_eq!(error_detail("plain"), "plain");
    }
}
