//! The settings table's frame: the `field!` row macro, the sections in
//! display order and the keys that moved. The rows themselves are
//! `super::FIELDS`.

pub(super) const WEEKDAYS: &[&str] = &["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

macro_rules! field {
    ($s:literal, $k:literal, $env:expr, $kind:expr, $def:expr, $help:literal) => {
        Field {
            section: $s,
            key: $k,
            env: $env,
            kind: $kind,
            default: $def,
            help: $help,
        }
    };
}

/// Sections in display order.
pub const SECTIONS: &[&str] = &[
    "chat",
    "research",
    "openrouter",
    "models",
    "rag",
    "vault",
    "sync",
    "papers",
    "pdf",
    "digest",
    "drafts",
    "history",
    "memory",
    "web",
    "mcp",
    "runtime",
];

/// Keys that used to live elsewhere: (section, key, canonical dotted key).
pub const LEGACY: &[(&str, &str, &str)] = &[("digest", "anthropic_model", "chat.anthropic_model")];
