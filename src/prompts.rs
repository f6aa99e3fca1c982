//! Prompts: shipped defaults (embedded from `prompts/`) and the user's
//! editable copies in `$JARVIS_HOME/prompts/`.
//!
//! Owns: seeding a copy on first use and reading the copy back. An empty or
//! unreadable copy falls back to the default with a logged warning, so a bad
//! edit degrades a prompt rather than breaking a feature.
//! Must not: know what a prompt is for.

use rust_embed::RustEmbed;

use crate::paths::{write_atomic, Dir, JarvisHome, PathsError};

#[derive(RustEmbed)]
#[folder = "prompts/"]
struct Shipped;

/// `prompts/README.md` documents the folder; it is not a prompt.
fn is_prompt(name: &str) -> bool {
    name.ends_with(".md") && name != "README.md"
}

pub const PAPER_SUMMARY: &str = "paper_summary.md";
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
            write_atomic(&path, default.as_bytes(), 0o600)?;
            Ok(default)
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read prompt file; using the shipped default");
            Ok(default)
        }
    }
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
}
