//! The environment a child gets: never the parent's whole environment.
//!
//! Owns: the allowlist of variables a child may inherit and the rule that a
//! name which looks like a credential is never inherited, whatever a caller
//! asks for. API keys live in the parent's environment (`ANTHROPIC_API_KEY`,
//! `OPENROUTER_API_KEY`, …); a LaTeX run, a PDF worker or a probe has no use
//! for them, and a hostile document must not be able to read them.
//! Must not: read or change the process environment itself (the caller
//! passes it in, so tests stay independent of the real one).

use std::ffi::{OsStr, OsString};

/// Inherited by every child: what programs need to find each other, the
/// user's home and temp dir, and the locale (LaTeX and pandoc read it).
pub const BASE_INHERIT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TERM",
    "NO_COLOR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
];

/// What a child that is this same binary also inherits, so it resolves the
/// same home, config and logging as its parent: jarvis's own variables and
/// the non-secret settings the config table reads from the environment.
/// Keys are still filtered out by [`looks_secret`].
pub const SELF_INHERIT: &[&str] = &[
    "JARVIS_*",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "CHAT_PROVIDER",
    "*_MODEL",
    "VAULT_PATH",
    "PDF_WATCH_DIR",
    "OLLAMA_HOST",
    "HF_ENDPOINT",
];

/// Whether a variable name suggests it holds a credential. Such a variable
/// is never inherited, even when an allowlist pattern matches it.
pub fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
        "PRIVATE",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// `pattern` is an exact name, `PREFIX*` or `*SUFFIX`.
fn matches(pattern: &str, name: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix('*') {
        name.starts_with(prefix)
    } else if let Some(suffix) = pattern.strip_prefix('*') {
        name.ends_with(suffix)
    } else {
        pattern == name
    }
}

/// The child's environment: the variables of `parent` that [`BASE_INHERIT`]
/// or `inherit` allow and that do not [`looks_secret`], then `extra` (the
/// caller's deliberate additions, which win).
pub fn child_environment<I>(parent: I, inherit: &[&str], extra: &[(String, String)]) -> Vec<(OsString, OsString)>
where
    I: IntoIterator<Item = (OsString, OsString)>,
{
    let mut out: Vec<(OsString, OsString)> = parent
        .into_iter()
        .filter(|(k, _)| {
            // A name that is not UTF-8 is nothing we allow.
            k.to_str()
                .is_some_and(|name| !looks_secret(name) && BASE_INHERIT.iter().chain(inherit).any(|p| matches(p, name)))
        })
        .collect();
    for (k, v) in extra {
        out.retain(|(name, _)| name.as_os_str() != OsStr::new(k));
        out.push((k.into(), v.into()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C.UTF-8"),
            ("ANTHROPIC_API_KEY", "sk-ant-1"),
            ("OPENROUTER_API_KEY", "sk-or-1"),
            ("GITHUB_TOKEN", "ghp_1"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("JARVIS_HOME", "/tmp/j"),
            ("JARVIS_API_KEY", "nope"),
            ("OPENROUTER_MODEL", "m"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("RANDOM_THING", "x"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn base_allowlist_drops_secrets_and_unknowns() {
        let env = child_environment(parent(), &[], &[]);
        assert_eq!(names(&env), ["PATH", "HOME", "LC_ALL"]);
    }

    #[test]
    fn self_allowlist_adds_jarvis_settings_but_never_keys() {
        let env = child_environment(parent(), SELF_INHERIT, &[]);
        assert_eq!(
            names(&env),
            ["PATH", "HOME", "LC_ALL", "JARVIS_HOME", "OPENROUTER_MODEL"]
        );
        // Asking for a secret by name does not help either.
        let env = child_environment(parent(), &["ANTHROPIC_API_KEY", "*_TOKEN", "SSH_AUTH_SOCK"], &[]);
        assert_eq!(names(&env), ["PATH", "HOME", "LC_ALL"]);
    }

    #[test]
    fn extras_are_added_and_override() {
        let env = child_environment(
            parent(),
            &[],
            &[("HOME".into(), "/x".into()), ("openin_any".into(), "p".into())],
        );
        assert_eq!(names(&env), ["PATH", "LC_ALL", "HOME", "openin_any"]);
        assert_eq!(env[2].1, OsString::from("/x"));
    }
}
