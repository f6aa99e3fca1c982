//! Looking settings up in the table: by section and key, by dotted key,
//! and the closest name for "did you mean".

use super::schema::{Field, FIELDS};

pub fn find(section: &str, key: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.section == section && f.key == key)
}

/// Look a dotted key up; `models` also answers to `models.<provider>`.
pub fn find_dotted(dotted: &str) -> Option<&'static Field> {
    let (s, k) = dotted.split_once('.')?;
    find(s, k)
}

pub fn keys_of(section: &str) -> impl Iterator<Item = &'static str> + '_ {
    FIELDS.iter().filter(move |f| f.section == section).map(|f| f.key)
}

/// The closest candidate within a small edit distance, for "did you mean".
pub fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= 3.max(c.len() / 3) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}
