//! [`Visibility`]: whether a chunk may ever reach a cloud model.
//!
//! Owns the one type every layer uses for it (index filters, stored chunks,
//! the vault policy's answer, the CLI flag) and the fail-closed reading of a
//! stored value. Must not decide which notes are private — that is
//! `ingest::vault::get_visibility`, the one policy.
//!
//! Fail closed: only the exact stored string `"public"` is public. A chunk
//! whose visibility is missing, misspelt or not a string is private
//! everywhere — in filters, listings and the privacy check — so a bug that
//! drops the field can hide a public chunk but never expose a private one.

use std::fmt;
use std::str::FromStr;

/// A paper's metadata key saying why it is private. Papers are public
/// unless their PDF is in one of the vault's private folders; a private
/// paper without this key predates that rule (`kb stats` warns about it).
pub const PRIVATE_REASON_KEY: &str = "private_reason";
/// The one value of [`PRIVATE_REASON_KEY`]: the PDF is in a private folder
/// of the vault.
pub const PRIVATE_FOLDER_REASON: &str = "vault_private_folder";

/// Public chunks may be sent to any configured provider; private ones only
/// to local models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// May reach a cloud model.
    Public,
    /// Never leaves this machine except to a local model.
    Private,
}

impl Visibility {
    /// The stored (and indexed) spelling: `"public"` or `"private"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private => "private",
        }
    }

    /// Exactly `"public"` or `"private"`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Visibility> {
        match s {
            "public" => Some(Visibility::Public),
            "private" => Some(Visibility::Private),
            _ => None,
        }
    }

    /// How a stored value is read: missing or unknown is private.
    pub fn from_stored(value: Option<&str>) -> Visibility {
        match value {
            Some("public") => Visibility::Public,
            _ => Visibility::Private,
        }
    }

    pub fn is_private(self) -> bool {
        self == Visibility::Private
    }
}

impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad` so `{:<7}` in a table lines up.
        f.pad(self.as_str())
    }
}

/// A value that is neither `public` nor `private`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("visibility must be `public` or `private`, not {0:?}")]
pub struct UnknownVisibility(pub String);

impl FromStr for Visibility {
    type Err = UnknownVisibility;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Visibility::parse(s).ok_or_else(|| UnknownVisibility(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::Visibility;

    #[test]
    fn only_an_exact_public_is_public() {
        assert_eq!(Visibility::from_stored(Some("public")), Visibility::Public);
        for v in [
            None,
            Some(""),
            Some("Public"),
            Some("publik"),
            Some(" public"),
            Some("private"),
        ] {
            assert_eq!(Visibility::from_stored(v), Visibility::Private, "{v:?}");
        }
        assert_eq!("private".parse::<Visibility>(), Ok(Visibility::Private));
        assert!("PUBLIC".parse::<Visibility>().is_err());
        assert_eq!(
            serde_json::to_value(Visibility::Private).ok(),
            Some(serde_json::json!("private"))
        );
    }
}
