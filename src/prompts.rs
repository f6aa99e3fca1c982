//! Prompts: shipped defaults (embedded from `prompts/`) and the user's
//! editable copies in `$JARVIS_HOME/prompts/`.
//!
//! Owns: seeding a copy on first use (lazily, whichever entry point runs
//! first; a legacy `$JARVIS_HOME/system_prompt.md` is carried across into the
//! system prompt's first seed), reading the copy back on every call (nothing
//! is cached, so an edit applies to the next call), and the human-only edit
//! and revert. An empty or unreadable copy falls back to the default with a
//! logged warning, so a bad edit degrades a prompt rather than breaking a
//! feature. Must not: know what a prompt is for, or be reachable from a
//! model's tool (editing the agent's instructions is a human action).

use rust_embed::RustEmbed;

use crate::paths::{write_atomic, Dir, JarvisHome, PathsError};

#[derive(RustEmbed)]
#[folder = "prompts/"]
struct Shipped;

/// `prompts/README.md` documents the folder; it is not a prompt.
fn is_prompt(name: &str) -> bool {
    name.ends_with(".md") && name != "README.md"
}

pub const SYSTEM: &str = "system.md";
pub const PAPER_SUMMARY: &str = "paper_summary.md";
pub const DIGEST_SCORE: &str = "digest_score.md";
/// Where the system prompt used to be overridden.
pub const LEGACY_SYSTEM: &str = "system_prompt.md";
pub const PDF_METADATA: &str = "pdf_metadata.md";

/// The shipped default of a prompt.
pub fn default_of(name: &str) -> Option<String> {
    is_prompt(name)
        .then(|| Shipped::get(name))
        .flatten()
        .map(|f| String::from_utf8_lossy(&f.data).into_owned())
}

/// Every shipped prompt name.
pub fn names() -> Vec<String> {
    Shipped::iter()
        .filter(|n| is_prompt(n))
        .map(|n| n.into_owned())
        .collect()
}

/// The prompt to run: the user's copy, seeded from the default if missing.
pub fn load(home: &JarvisHome, name: &str) -> Result<String, PathsError> {
    let default = default_of(name).unwrap_or_default();
    let dir = home.ensure(Dir::Prompts)?;
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Ok(text),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "prompt file is empty; using the shipped default");
            Ok(default)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let seed = first_seed(home, name).unwrap_or(default);
            write_atomic(&path, seed.as_bytes(), 0o600)?;
            Ok(seed)
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read prompt file; using the shipped default");
            Ok(default)
        }
    }
}

/// The legacy system prompt override, when one exists and is not empty:
/// carried across so nobody's wording is silently replaced by the default.
fn first_seed(home: &JarvisHome, name: &str) -> Option<String> {
    if name != SYSTEM {
        return None;
    }
    let legacy = std::fs::read_to_string(home.root().join(LEGACY_SYSTEM)).ok()?;
    (!legacy.trim().is_empty()).then_some(legacy)
}

/// Seed every prompt that has no copy yet (the web server does this at
/// start so the files are there before anyone looks for them).
pub fn seed_all(home: &JarvisHome) -> Result<(), PathsError> {
    for name in names() {
        load(home, &name)?;
    }
    Ok(())
}

/// Why an edit or a revert was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// Not one of the shipped prompt names.
    #[error("no prompt named {0:?} — the prompts are: {1}")]
    Unknown(String, String),
    /// An edit that would leave the prompt empty.
    #[error("a prompt cannot be empty — use revert to go back to the default")]
    Empty,
    /// The prompts directory could not be written.
    #[error(transparent)]
    Paths(#[from] PathsError),
}

impl PromptError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        match self {
            PromptError::Unknown(..) => crate::error_kind::ErrorKind::NotFound,
            PromptError::Empty => crate::error_kind::ErrorKind::User,
            PromptError::Paths(e) => e.kind(),
        }
    }
}

fn known(name: &str) -> Result<String, PromptError> {
    default_of(name).ok_or_else(|| PromptError::Unknown(name.to_string(), names().join(", ")))
}

/// The human's edit of a prompt: replaces the user's copy atomically. The
/// shipped default is never written.
pub fn save(home: &JarvisHome, name: &str, text: &str) -> Result<(), PromptError> {
    known(name)?;
    if text.trim().is_empty() {
        return Err(PromptError::Empty);
    }
    let dir = home.ensure(Dir::Prompts)?;
    write_atomic(&dir.join(name), text.as_bytes(), 0o600)?;
    Ok(())
}

/// Overwrite the user's copy with the shipped default; returns it.
pub fn revert(home: &JarvisHome, name: &str) -> Result<String, PromptError> {
    let default = known(name)?;
    let dir = home.ensure(Dir::Prompts)?;
    write_atomic(&dir.join(name), default.as_bytes(), 0o600)?;
    Ok(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_then_reads_the_users_copy() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let first = load(&home, PAPER_SUMMARY).unwrap();
        assert!(first.contains("{title}"));
        let copy = t.path().join("prompts").join(PAPER_SUMMARY);
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), first);
        std::fs::write(&copy, "My own prompt for {title}").unwrap();
        assert_eq!(load(&home, PAPER_SUMMARY).unwrap(), "My own prompt for {title}");
        std::fs::write(&copy, "  \n").unwrap();
        assert_eq!(load(&home, PAPER_SUMMARY).unwrap(), first, "an emptied copy falls back");
        assert!(names().contains(&PDF_METADATA.to_string()));
        assert!(!names().iter().any(|n| n == "README.md"));
    }

    #[test]
    fn edit_revert_and_the_legacy_system_prompt() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        std::fs::write(t.path().join(LEGACY_SYSTEM), "My old instructions").unwrap();
        assert_eq!(
            load(&home, SYSTEM).unwrap(),
            "My old instructions",
            "carried across on first seed"
        );
        save(&home, SYSTEM, "Edited").unwrap();
        assert_eq!(
            load(&home, SYSTEM).unwrap(),
            "Edited",
            "no caching: the next load sees the edit"
        );
        assert!(matches!(save(&home, SYSTEM, "  "), Err(PromptError::Empty)));
        assert!(matches!(save(&home, "../x.md", "x"), Err(PromptError::Unknown(..))));
        let d = revert(&home, SYSTEM).unwrap();
        assert_eq!(d, default_of(SYSTEM).unwrap());
        assert_eq!(load(&home, SYSTEM).unwrap(), d);
        seed_all(&home).unwrap();
        for n in [SYSTEM, PAPER_SUMMARY, DIGEST_SCORE, PDF_METADATA] {
            assert!(t.path().join("prompts").join(n).is_file(), "{n} seeded");
        }
        assert!(default_of(DIGEST_SCORE).unwrap().contains("Research context"));
    }
}
