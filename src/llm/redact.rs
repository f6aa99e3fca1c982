//! Blanking secrets out of error text before it becomes a message, a log
//! line or anything saved. A service may quote the credential it just
//! rejected, and error text ends up on screen, in chat.log and in the saved
//! (and indexed) session, all of which outlive the request.

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are ignored so a one-character "key" cannot
/// blank out whole messages.
pub const MIN_SECRET_LEN: usize = 8;

/// Replaces every configured secret and every key-bearing environment
/// variable's value in `text`. The environment is consulted too because a
/// key may come straight from `ANTHROPIC_API_KEY` without ever landing in
/// the config. If redaction itself fails, the text is returned unchanged
/// rather than turning one error into a different one.
pub fn redact_secrets(text: &str, configured: &[String]) -> String {
    let attempt = std::panic::catch_unwind(|| {
        let mut secrets: Vec<String> = configured.to_vec();
        secrets.extend(env_secrets());
        redact_with(text, &secrets)
    });
    attempt.unwrap_or_else(|_| text.to_string())
}

/// Redaction against an explicit list only (no environment).
pub fn redact_with(text: &str, secrets: &[String]) -> String {
    let mut secrets: Vec<&str> = secrets
        .iter()
        .map(|s| s.trim())
        .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
        .collect();
    // Longest first, so a secret containing another is blanked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    let mut out = text.to_string();
    for secret in secrets {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    out
}

/// Whether an environment variable name suggests it holds a credential.
pub fn is_key_bearing(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|w| n.contains(w))
}

fn env_secrets() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| is_key_bearing(k))
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_configured_keys_and_ignores_short_values() {
        let secrets = vec!["sk-or-v1-abcdef123456".to_string(), "abc".to_string()];
        let out = redact_with("bad key sk-or-v1-abcdef123456 (abc)", &secrets);
        assert_eq!(out, "bad key [REDACTED] (abc)");
    }

    #[test]
    fn longest_secret_wins() {
        let secrets = vec!["12345678".to_string(), "12345678abcdefgh".to_string()];
        assert_eq!(redact_with("x 12345678abcdefgh y", &secrets), "x [REDACTED] y");
    }

    #[test]
    fn key_bearing_names() {
        assert!(is_key_bearing("ANTHROPIC_API_KEY"));
        assert!(is_key_bearing("GITHUB_TOKEN"));
        assert!(!is_key_bearing("HOME"));
    }

    #[test]
    fn public_entry_point_uses_configured_list() {
        let out = redact_secrets("token=configured-secret-value", &["configured-secret-value".into()]);
        assert_eq!(out, "token=[REDACTED]");
    }
}
