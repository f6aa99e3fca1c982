//! Citation keys: every paper in the library has one (`smith2021protein`),
//! stored as the `cite_key` metadata of each of its chunks in the store.
//!
//! Owns: deriving a key from a paper's metadata (first author's family
//! name, year, first significant title word, folded to ASCII), making it
//! unique against the keys already given (`a`, `b`, … `z`, `aa`, …), stamping
//! it on a paper's chunks in the same commit that adds them (a commit that
//! replaces a paper hands the old entry's key on), the one backfill of
//! papers stored before keys existed (metadata only, one commit, nothing
//! re-embedded), and the catalogue of keyed papers ([`CiteEntry`]) that the
//! BibTeX export, the editor's completion and draft builds read.
//! Must not: change a key once given — a later paper with the same base
//! takes the next free suffix, never the other way round — or give one to
//! anything but a paper (digests, notes and chats have none).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;

use crate::doc_type::DocType;
use crate::store::{LookupField, Metadata, NewChunk, Seq};

use super::{Kb, Result};

/// The metadata key a paper's citation key is stored under.
pub const CITE_KEY: &str = "cite_key";

/// Store meta key set once every paper stored before keys existed has one.
const BACKFILLED: &str = "cite_keys_v1";

/// Longest key accepted from a caller (an import that brings its own).
const MAX_KEY_LEN: usize = 64;

/// One author as a citation needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Author {
    pub given: String,
    /// Empty only when nothing could be read as a family name.
    pub family: String,
}

/// A paper as a citation sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CiteEntry {
    /// The citation key; empty for a paper not keyed yet.
    pub key: String,
    /// The document key (`kb list`'s key: the paper's source).
    pub source: String,
    pub title: String,
    pub authors: Vec<Author>,
    pub year: Option<i32>,
    /// Journal, proceedings or preprint server.
    pub venue: Option<String>,
    pub doi: Option<String>,
    /// arXiv id without version.
    pub arxiv_id: Option<String>,
    /// Crossref's type (`journal-article`, `posted-content`, …).
    pub publication_type: Option<String>,
    pub publisher: Option<String>,
    pub volume: Option<String>,
    pub issue: Option<String>,
    pub pages: Option<String>,
    pub date_added: String,
    pub private: bool,
}

fn meta_str(m: &Metadata, k: &str) -> Option<String> {
    m.get(k)
        .map(crate::store::scalar_string)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "null")
}

impl CiteEntry {
    /// The entry a paper chunk's metadata describes.
    pub fn from_meta(source: &str, m: &Metadata) -> CiteEntry {
        let authors = match m.get("author_list") {
            Some(serde_json::Value::Array(list)) if !list.is_empty() => list
                .iter()
                .map(|p| {
                    let s = |k: &str| p.get(k).and_then(|v| v.as_str()).unwrap_or("").trim().to_string();
                    let (given, family) = (s("given"), s("family"));
                    if family.is_empty() {
                        split_name(&given)
                    } else {
                        Author { given, family }
                    }
                })
                .filter(|a| !a.family.is_empty() || !a.given.is_empty())
                .collect(),
            _ => parse_authors(&meta_str(m, "authors").unwrap_or_default()),
        };
        let year = m
            .get("year")
            .and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().get(..4)?.parse().ok()))
            })
            .and_then(|y| i32::try_from(y).ok())
            .filter(|y| (1000..=9999).contains(y));
        CiteEntry {
            key: meta_str(m, CITE_KEY).unwrap_or_default(),
            source: source.to_string(),
            title: meta_str(m, "title").unwrap_or_default(),
            authors,
            year,
            venue: meta_str(m, "venue"),
            doi: meta_str(m, "doi"),
            arxiv_id: meta_str(m, "arxiv_id"),
            publication_type: meta_str(m, "publication_type"),
            publisher: meta_str(m, "publisher"),
            volume: meta_str(m, "volume"),
            issue: meta_str(m, "issue"),
            pages: meta_str(m, "pages"),
            date_added: meta_str(m, "date_added").unwrap_or_default(),
            private: crate::visibility::Visibility::from_stored(m.get("visibility").and_then(|v| v.as_str()))
                .is_private(),
        }
    }

    /// The key this paper would get with nothing else in the library.
    pub fn base_key(&self) -> String {
        let family = self.authors.first().map(|a| a.family.as_str()).unwrap_or("");
        base_key(family, self.year, &self.title)
    }

    /// "Smith, Doe and Lee" / "Smith et al." — for lists and completion.
    pub fn authors_short(&self) -> String {
        let names: Vec<&str> = self
            .authors
            .iter()
            .map(|a| {
                if a.family.is_empty() {
                    a.given.as_str()
                } else {
                    a.family.as_str()
                }
            })
            .collect();
        match names.as_slice() {
            [] => String::new(),
            [one] => one.to_string(),
            [a, b] => format!("{a} and {b}"),
            [a, ..] => format!("{a} et al."),
        }
    }

    /// Whether every word of `query` appears in the key, title, authors,
    /// year or venue (folded: case and accents do not matter).
    pub fn matches(&self, query: &str) -> bool {
        let words: Vec<String> = fold(query).split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            return true;
        }
        let mut hay = format!("{} {} {}", self.key, self.title, self.venue.as_deref().unwrap_or(""));
        for a in &self.authors {
            hay.push(' ');
            hay.push_str(&a.given);
            hay.push(' ');
            hay.push_str(&a.family);
        }
        if let Some(y) = self.year {
            hay.push_str(&format!(" {y}"));
        }
        let hay = fold(&hay);
        words.iter().all(|w| hay.contains(w.as_str()))
    }
}

/// Name particles that belong to a family name ("van der Berg").
const PARTICLES: &[&str] = &[
    "van", "von", "der", "den", "de", "da", "di", "del", "della", "dos", "das", "du", "la", "le", "ter", "ten", "bin",
    "al", "st.",
];

/// "Jane Q. Smith" → Smith, Jane Q.; "Smith, Jane" → the same; a name with
/// a particle keeps it in the family name.
pub fn split_name(name: &str) -> Author {
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((family, given)) = name.split_once(',') {
        return Author {
            given: given.trim().to_string(),
            family: family.trim().to_string(),
        };
    }
    let mut words: Vec<&str> = name.split(' ').filter(|w| !w.is_empty()).collect();
    let suffix = match words.last() {
        Some(w)
            if words.len() > 2
                && matches!(
                    w.trim_end_matches('.').to_lowercase().as_str(),
                    "jr" | "sr" | "ii" | "iii" | "iv"
                ) =>
        {
            words.pop()
        }
        _ => None,
    };
    let Some(last) = words.pop() else {
        return Author::default();
    };
    let mut family = vec![last];
    while words.len() > 1
        && words
            .last()
            .is_some_and(|w| PARTICLES.contains(&w.to_lowercase().as_str()))
    {
        family.insert(0, words.pop().unwrap_or_default());
    }
    let mut family = family.join(" ");
    if let Some(s) = suffix {
        family = format!("{family} {s}");
    }
    Author {
        given: words.join(" "),
        family,
    }
}

/// An `authors` line as people write it: "A. Smith, B. Jones and C. Lee",
/// "Smith, A.; Jones, B." (semicolons mean each part is "Family, Given").
/// "et al." and "others" are dropped.
pub fn parse_authors(line: &str) -> Vec<Author> {
    let line = line.trim();
    if line.is_empty() {
        return Vec::new();
    }
    let parts: Vec<String> = if line.contains(';') {
        line.split(';').map(str::to_string).collect()
    } else {
        line.split(',')
            .flat_map(|p| p.split(" and ").map(str::to_string).collect::<Vec<_>>())
            .flat_map(|p| p.split(" & ").map(str::to_string).collect::<Vec<_>>())
            .map(|p| p.trim_start_matches("and ").to_string())
            .collect()
    };
    parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .filter(|p| !matches!(p.to_lowercase().trim_end_matches('.'), "et al" | "others"))
        .map(split_name)
        .filter(|a| !a.family.is_empty())
        .collect()
}

/// Lower-case ASCII: accents dropped (é → e), letters that do not
/// decompose spelt out (ø → o, ß → ss, æ → ae), anything else kept as is.
pub fn fold(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mut out = String::with_capacity(s.len());
    for c in s.nfkd() {
        if unicode_normalization::char::is_combining_mark(c) {
            continue;
        }
        for l in c.to_lowercase() {
            match l {
                'ø' => out.push('o'),
                'ł' => out.push('l'),
                'đ' | 'ð' => out.push('d'),
                'ı' => out.push('i'),
                'ß' => out.push_str("ss"),
                'æ' => out.push_str("ae"),
                'œ' => out.push_str("oe"),
                'þ' => out.push_str("th"),
                other => out.push(other),
            }
        }
    }
    out
}

/// Title words a key skips ("On the structure of …" → structure).
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "on", "of", "in", "for", "and", "or", "to", "with", "without", "from", "by", "at", "as", "is",
    "are", "be", "via", "towards", "toward", "into", "onto", "over", "under", "about", "its", "it", "do", "does",
    "can", "what", "how", "why", "when", "where", "which", "who", "we", "our", "not", "no", "than", "versus", "vs",
    "upon", "through", "between", "among", "within", "le", "la", "les", "der", "die", "das", "el", "un", "une", "ein",
    "eine",
];

/// The first title word that is not a stopword, folded to `[a-z0-9]`.
pub fn first_significant_word(title: &str) -> String {
    let folded = fold(title);
    folded
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(w))
        .find(|w| w.chars().any(|c| c.is_ascii_alphabetic()))
        .map(|w| w.chars().take(20).collect())
        .unwrap_or_default()
}

/// `family` + `year` + first significant title word, in `[a-z0-9]`:
/// `smith2021protein`. A paper with no author reads as `anon`.
pub fn base_key(family: &str, year: Option<i32>, title: &str) -> String {
    let mut name: String = fold(family)
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .take(24)
        .collect();
    if name.is_empty() {
        name = "anon".into();
    }
    let year = year.map(|y| y.to_string()).unwrap_or_default();
    format!("{name}{year}{}", first_significant_word(title))
}

/// The `n`th suffix: "", a, b, … z, aa, ab, …
fn suffix(mut n: usize) -> String {
    let mut out = Vec::new();
    while n > 0 {
        n -= 1;
        out.push(b'a' + (n % 26) as u8);
        n /= 26;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// `base` itself when free, else `base` with the first free suffix.
pub fn first_free(base: &str, taken: &BTreeSet<String>) -> String {
    (0..)
        .map(|n| format!("{base}{}", suffix(n)))
        .find(|k| !taken.contains(k))
        .unwrap_or_else(|| base.to_string())
}

/// A key a caller brought (an import's own): kept when it is a plausible
/// BibTeX key — a letter first, then letters, digits and `_ - : .`.
fn acceptable(key: &str) -> bool {
    key.len() <= MAX_KEY_LEN
        && key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.'))
}

/// The keyed papers, with the store sequence they were read at.
#[derive(Default)]
pub(crate) struct CiteCache(Option<(Seq, Arc<Vec<CiteEntry>>)>);

fn is_paper(m: &Metadata) -> bool {
    m.get("doc_type").and_then(|v| v.as_str()) == Some(DocType::Paper.as_str())
}

impl Kb {
    /// Every paper with its citation entry (keyed or not), by document key.
    /// Read once per store sequence: a search-as-you-type asks often.
    fn catalogue(&self) -> Result<Arc<Vec<CiteEntry>>> {
        let seq = self.store.seq()?;
        if let Some((at, c)) = &super::lock(&self.cite).0 {
            if *at == seq {
                return Ok(Arc::clone(c));
            }
        }
        let mut out = Vec::new();
        for (key, entry) in self.store.docs()? {
            if !DocType::Paper.is(&entry.doc_type) {
                continue;
            }
            let ids = match self.store.ids_by(LookupField::Source, &key)? {
                ids if ids.is_empty() => self.store.ids_by(LookupField::FilePath, &key)?,
                ids => ids,
            };
            // The body's first chunk speaks for the paper; an annotation
            // carries the same bibliographic fields if it is all there is.
            let mut first = None;
            for id in ids {
                let Some(rec) = self.store.get(id)? else { continue };
                if !is_paper(&rec.meta) || crate::store::doc_key(&rec.meta) != key {
                    continue;
                }
                let body = rec.meta_str("annotation_kind").is_none();
                if first.is_none() || body {
                    first = Some(rec);
                }
                if body {
                    break;
                }
            }
            if let Some(rec) = first {
                out.push(CiteEntry::from_meta(&key, &rec.meta));
            }
        }
        let out = Arc::new(out);
        super::lock(&self.cite).0 = Some((seq, Arc::clone(&out)));
        Ok(out)
    }

    /// Every keyed paper, sorted by key. Papers stored before keys existed
    /// get theirs first (once; see [`Kb::backfill_cite_keys`]).
    pub fn cite_entries(&self) -> Result<Vec<CiteEntry>> {
        let mut all = self.catalogue()?;
        if all.iter().any(|e| e.key.is_empty()) {
            match self.backfill_cite_keys() {
                Ok(_) => all = self.catalogue()?,
                // A model mismatch refuses writes: the keyed ones still serve.
                Err(e) => tracing::warn!(error = %e, "cannot give the older papers citation keys yet"),
            }
        }
        let mut out: Vec<CiteEntry> = all.iter().filter(|e| !e.key.is_empty()).cloned().collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Give every paper without a key one, in a stable order (oldest added
    /// first, then by document key), as ONE metadata-only commit. Returns
    /// how many papers were keyed.
    pub fn backfill_cite_keys(&self) -> Result<usize> {
        if self.catalogue()?.iter().all(|e| !e.key.is_empty()) {
            return Ok(0);
        }
        self.check_model()?;
        let _w = self.write_lock();
        let all = self.catalogue()?;
        let mut taken: BTreeSet<String> = all.iter().map(|e| e.key.to_lowercase()).collect();
        let mut missing: Vec<&CiteEntry> = all.iter().filter(|e| e.key.is_empty()).collect();
        missing.sort_by(|a, b| a.date_added.cmp(&b.date_added).then(a.source.cmp(&b.source)));
        let mut groups: Vec<(Vec<u64>, Metadata)> = Vec::new();
        for e in &missing {
            let key = first_free(&e.base_key(), &taken);
            taken.insert(key.clone());
            let mut ids = self.store.ids_by(LookupField::Source, &e.source)?;
            if ids.is_empty() {
                ids = self.store.ids_by(LookupField::FilePath, &e.source)?;
            }
            let mut ours = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(rec) = self.store.get(id)? {
                    if is_paper(&rec.meta) && crate::store::doc_key(&rec.meta) == e.source {
                        ours.push(id);
                    }
                }
            }
            let mut f = Metadata::new();
            f.insert(CITE_KEY.into(), key.into());
            groups.push((ours, f));
        }
        let refs: Vec<(&[u64], &Metadata)> = groups.iter().map(|(i, f)| (i.as_slice(), f)).collect();
        // Jarvis's own upkeep, logged like any other metadata edit.
        self.update_metadata_locked(&refs, &self.cause(&crate::store::Actor::Jarvis))?;
        tracing::info!(
            papers = missing.len(),
            "gave the papers stored before citation keys existed their keys"
        );
        Ok(missing.len())
    }

    /// At open: the one backfill of an older store, remembered in the
    /// store's meta so later opens skip the pass. Never fails the open.
    pub(crate) fn backfill_once(&self) {
        match self.store.meta_string(BACKFILLED) {
            Ok(Some(v)) if v == "1" => return,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read whether citation keys were backfilled");
                return;
            }
        }
        if self.check_model().is_err() {
            return;
        }
        let done = self
            .backfill_cite_keys()
            .and_then(|_| Ok(self.store.set_meta_string(BACKFILLED, "1")?));
        if let Err(e) = done {
            tracing::warn!(error = %e, "cannot give the older papers citation keys now; the first use tries again");
        }
    }

    /// Stamp a citation key on every new paper chunk of a commit, under the
    /// write lock and before the store commits (so the key lands in the
    /// same batch as the paper). A paper replacing one with the same
    /// document key — or the only paper this commit deletes — keeps that
    /// paper's key; a key the caller brought is kept when free; anything
    /// else gets its base key's first free suffix.
    pub(crate) fn stamp_cite_keys(&self, chunks: &mut [NewChunk], delete: &[u64]) -> Result<()> {
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            if is_paper(&c.meta) {
                let key = crate::store::doc_key(&c.meta).to_string();
                if !groups.contains_key(&key) {
                    order.push(key.clone());
                }
                groups.entry(key).or_default().push(i);
            }
        }
        if groups.is_empty() {
            return Ok(());
        }
        let mut replaced: BTreeMap<String, String> = BTreeMap::new();
        for &id in delete {
            if let Some(rec) = self.store.get(id)? {
                if let (true, Some(k)) = (is_paper(&rec.meta), rec.meta_str(CITE_KEY)) {
                    replaced
                        .entry(crate::store::doc_key(&rec.meta).to_string())
                        .or_insert_with(|| k.to_string());
                }
            }
        }
        let going: BTreeSet<String> = replaced.values().map(|k| k.to_lowercase()).collect();
        let mut taken: BTreeSet<String> = self
            .catalogue()?
            .iter()
            .map(|e| e.key.to_lowercase())
            .filter(|k| !k.is_empty() && !going.contains(k))
            .collect();
        let lone = match replaced
            .values()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()[..]
        {
            [one] => Some(one.clone()),
            _ => None,
        };
        for doc in order {
            let idxs = &groups[&doc];
            let entry = idxs
                .iter()
                .map(|&i| &chunks[i].meta)
                .find(|m| m.get("annotation_kind").is_none())
                .unwrap_or(&chunks[idxs[0]].meta);
            let brought = idxs
                .iter()
                .find_map(|&i| chunks[i].meta.get(CITE_KEY).and_then(|v| v.as_str()).map(str::trim))
                .filter(|k| acceptable(k))
                .map(str::to_string);
            let free = |k: &String| !taken.contains(&k.to_lowercase());
            let key = replaced
                .get(&doc)
                .cloned()
                .filter(free)
                .or_else(|| brought.filter(free))
                .or_else(|| lone.clone().filter(free))
                .unwrap_or_else(|| first_free(&CiteEntry::from_meta(&doc, entry).base_key(), &taken));
            taken.insert(key.to_lowercase());
            for &i in idxs {
                chunks[i].meta.insert(CITE_KEY.into(), key.clone().into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
