//! Ids that arrive over the network, validated before any path is built.
//!
//! Owns: the one id alphabet for sessions and drafts (`[0-9a-z-]{1,64}`,
//! what Jarvis generates) and the `Path` extractor that enforces it.
//! Must not: touch the filesystem. A valid id is only *well-formed*; whether
//! it exists is the feature's question (404).

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;

use super::error::ApiError;

/// Whether `id` is in the generated alphabet: 1–64 of `0-9`, `a-z`, `-`.
/// Rejects `..`, `/`, `%2F` once decoded, NUL, upper case and the empty id.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
}

/// A session or draft id from the URL path, already validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state).await?;
        check_id(&raw).map(Id)
    }
}

/// Validate an id from a JSON body.
pub fn check_id(raw: &str) -> Result<String, ApiError> {
    if valid_id(raw) {
        Ok(raw.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "malformed id {:?}: ids are 1–64 characters of a–z, 0–9 and '-'",
            raw.chars().take(80).collect::<String>()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::valid_id;

    #[test]
    fn the_alphabet_is_enforced() {
        for ok in ["a", "20261201-abc", "0-9", &"a".repeat(64)] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            "../etc",
            "a/b",
            "A",
            "a b",
            "a\0",
            "é",
            "a.json",
            &"a".repeat(65),
            "%2e%2e",
        ] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }
}
