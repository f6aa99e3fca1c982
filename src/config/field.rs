//! One row of the settings table ([`super::schema::FIELDS`]): its key,
//! environment variable, kind, default and help. Kept apart so the table
//! itself stays one reviewable file.
//! Must not: read or validate values (that is `schema` and `mod`).

use super::kind::Kind;

/// A default, some of which depend on `JARVIS_HOME`.
#[derive(Debug, Clone, Copy)]
pub enum Default {
    Bool(bool),
    Int(i64),
    Str(&'static str),
    /// A path relative to `JARVIS_HOME`.
    InHome(&'static str),
    /// A path relative to the user's home directory.
    InUserHome(&'static str),
    Unset,
    List(&'static [&'static str]),
    Pairs(&'static [(&'static str, i64)]),
    EmptyModels,
}

#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub section: &'static str,
    pub key: &'static str,
    pub env: Option<&'static str>,
    pub kind: Kind,
    pub default: Default,
    pub help: &'static str,
}

impl Field {
    pub fn dotted(&self) -> String {
        format!("{}.{}", self.section, self.key)
    }
}
