//! What values a setting accepts ([`Kind`]), and how the "what is
//! allowed" half of a validation error names them. The table itself is
//! `schema.rs`.

/// What values a setting accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Str,
    /// A string that must not be empty.
    NonEmpty,
    /// One of a fixed set of strings.
    Choice(&'static [&'static str]),
    /// A filesystem path; `~` expands to the user's home.
    Path,
    /// A path that may be left unset (`""` unsets it).
    OptPath,
    /// A string that may be left unset, distinct from `""`.
    OptStr,
    /// An API key or other secret: never printed, only "set" / "not set".
    Secret,
    /// `provider` or `provider:model`.
    ProviderSpec,
    StrList,
    /// `[[name, limit], ...]`, e.g. arXiv categories with a per-category cap.
    PairList,
    /// `{ provider = [model, ...] }`.
    ModelTable,
}

impl Kind {
    /// The "what is allowed" half of a validation error.
    pub fn allowed(&self) -> String {
        match self {
            Kind::Bool => "true or false".into(),
            Kind::Int { min, max } => format!("a whole number from {min} to {max}"),
            Kind::Str | Kind::OptStr => "a string".into(),
            Kind::NonEmpty => "a non-empty string".into(),
            Kind::Choice(c) => format!("one of {}", c.join(", ")),
            Kind::Path => "a path (~ means your home directory)".into(),
            Kind::OptPath => "a path, or \"\" to leave it unset".into(),
            Kind::Secret => "a string (shown only as set / not set)".into(),
            Kind::ProviderSpec => {
                "`provider` or `provider:model`, provider being ollama, anthropic, openrouter or a server from [servers]"
                    .into()
            }
            Kind::StrList => "a list of strings, e.g. [\"a\", \"b\"]".into(),
            Kind::PairList => "a list of [name, limit] pairs, e.g. [[\"cs.LG\", 50]]".into(),
            Kind::ModelTable => "a table of provider = [\"model\", ...]".into(),
        }
    }
}
