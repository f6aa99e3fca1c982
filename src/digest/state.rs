//! What the digest remembers between runs, in `state/digest_seen.json`:
//! every paper it suggested (by canonical id/DOI and by normalised title,
//! pruned after 90 days) and when the last run succeeded. Written
//! atomically, so a crash leaves the old file or the new one.
//!
//! Also the run's time window and cross-source deduplication.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use time::{Duration, OffsetDateTime};

use super::Candidate;
use crate::kb::ops::normalise_title;

/// Entries older than this are forgotten (a paper that old is out of any
/// window anyway).
pub const PRUNE_DAYS: i64 = 90;
/// A later run starts this long before the last success: arXiv's index
/// lags announcements, and the seen-set makes the overlap free.
pub const OVERLAP_DAYS: i64 = 2;
/// A run never looks further back than this, however long it was off.
pub const MAX_WINDOW_DAYS: i64 = 30;

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct File {
    #[serde(default)]
    last_success: Option<String>,
    /// key → day it was suggested (`YYYY-MM-DD`).
    #[serde(default)]
    seen: BTreeMap<String, String>,
}

/// The persistent seen-set.
#[derive(Debug)]
pub struct SeenSet {
    path: PathBuf,
    file: File,
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `YYYY-MM-DD` of `t` (UTC).
pub fn day(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
}

impl SeenSet {
    pub fn path(state_dir: &Path) -> PathBuf {
        state_dir.join("digest_seen.json")
    }

    /// The stored set, or an empty one when there is none yet. A damaged
    /// file is an error (not silently emptied: that would re-suggest
    /// everything).
    pub fn load(state_dir: &Path) -> Result<SeenSet, String> {
        let path = Self::path(state_dir);
        let file = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("it is not valid JSON ({e}); fix or delete it to start afresh"))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(e) => return Err(e.to_string()),
        };
        Ok(SeenSet { path, file })
    }

    pub fn last_success(&self) -> Option<OffsetDateTime> {
        self.file
            .last_success
            .as_deref()
            .and_then(|s| OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok())
    }

    pub fn set_last_success(&mut self, t: OffsetDateTime) {
        self.file.last_success = Some(rfc3339(t));
    }

    fn keys(c: &Candidate) -> [String; 2] {
        [c.key.clone(), format!("title:{}", normalise_title(&c.title))]
    }

    pub fn contains(&self, c: &Candidate) -> bool {
        Self::keys(c).iter().any(|k| self.file.seen.contains_key(k))
    }

    pub fn insert(&mut self, c: &Candidate, now: OffsetDateTime) {
        for k in Self::keys(c) {
            self.file.seen.insert(k, day(now));
        }
    }

    pub fn len(&self) -> usize {
        self.file.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.file.seen.is_empty()
    }

    /// Prune entries older than [`PRUNE_DAYS`], then write atomically.
    pub fn save(&mut self, now: OffsetDateTime) -> Result<(), String> {
        let cutoff = day(now - Duration::days(PRUNE_DAYS));
        self.file.seen.retain(|_, d| d.as_str() >= cutoff.as_str());
        let bytes = serde_json::to_vec_pretty(&self.file).map_err(|e| e.to_string())?;
        if let Some(dir) = self.path.parent() {
            crate::paths::ensure_dir(dir, 0o700).map_err(|e| e.to_string())?;
        }
        crate::paths::write_atomic(&self.path, &bytes, 0o600).map_err(|e| e.to_string())
    }
}

/// The last recorded success in `state_dir`, for the scheduler's catch-up.
pub fn last_success(state_dir: &Path) -> Option<OffsetDateTime> {
    SeenSet::load(state_dir).ok().and_then(|s| s.last_success())
}

/// The days to look at: from the last success (less a small overlap) or,
/// on a first run, `first_run_days` back — never more than
/// [`MAX_WINDOW_DAYS`] — up to now. A missed weekly run therefore loses
/// nothing: the next one covers its days too.
pub fn window(
    last_success: Option<OffsetDateTime>,
    now: OffsetDateTime,
    first_run_days: u32,
) -> (OffsetDateTime, OffsetDateTime) {
    let start = match last_success {
        Some(t) if t <= now => t - Duration::days(OVERLAP_DAYS),
        _ => now - Duration::days(i64::from(first_run_days.max(1))),
    };
    let earliest = now - Duration::days(MAX_WINDOW_DAYS);
    (start.max(earliest), now)
}

/// Unique candidates (first occurrence wins) by canonical key and by
/// normalised title across sources, and how many were dropped.
pub fn dedup(all: Vec<Candidate>) -> (Vec<Candidate>, usize) {
    let mut keys = std::collections::HashSet::new();
    let mut titles = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut dropped = 0;
    for c in all {
        let t = normalise_title(&c.title);
        if keys.contains(&c.key) || (!t.is_empty() && titles.contains(&t)) {
            dropped += 1;
            continue;
        }
        keys.insert(c.key.clone());
        titles.insert(t);
        out.push(c);
    }
    (out, dropped)
}
