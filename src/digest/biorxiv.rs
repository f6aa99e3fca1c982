//! New bioRxiv preprints from the details API
//! (`/details/biorxiv/{from}/{to}/{cursor}/json[?category=…]`): per
//! configured category (server-side filter) and one uncategorised walk for
//! the keywords (matched case-insensitively in title + abstract).
//!
//! The API's quirks: 100 records per page walked by an offset cursor; the
//! `total` it reports can overstate the records, so the walk stops at the
//! first short page instead; numbers may come as strings; dates may be
//! unpadded (`2026-6-30`); revisions are new rows with the same DOI, so
//! only `version == "1"` counts as new. An empty first page is retried
//! (bioRxiv posts every day), then reported as quiet.

use std::time::Duration;

use rand::Rng;
use serde_json::Value;
use time::OffsetDateTime;

use super::{Candidate, Origin, SourceOutcome, SourceStatus};
use crate::cancel::Cancel;

/// Records per page the API serves.
pub const PAGE: usize = 100;
/// Pages one walk reads at most (a safety stop for a runaway cursor).
const MAX_PAGES: usize = 200;

#[derive(Debug, Clone)]
pub struct BiorxivSettings {
    /// e.g. `https://api.biorxiv.org`.
    pub api_base: String,
    pub max_attempts: u32,
    pub backoff: Duration,
    pub timeout: Duration,
}

impl Default for BiorxivSettings {
    fn default() -> Self {
        BiorxivSettings {
            api_base: "https://api.biorxiv.org".into(),
            max_attempts: 4,
            backoff: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
        }
    }
}

/// `2026-6-30` → `2026-06-30`; `None` for something that is not a date.
pub fn lenient_date(s: &str) -> Option<String> {
    let mut parts = s.trim().split(['-', 'T', ' ']);
    let y: u32 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    ((1..=12).contains(&m) && (1..=31).contains(&d) && y > 1900).then(|| format!("{y:04}-{m:02}-{d:02}"))
}

fn text(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(s)) => s.split_whitespace().collect::<Vec<_>>().join(" "),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// A DOI safe to put in a link (`10.1101/2026.06.30.123456`).
pub fn valid_doi(doi: &str) -> bool {
    doi.starts_with("10.")
        && doi.len() < 200
        && doi
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_' | ';' | '(' | ')' | ':'))
}

/// One record → a candidate, if it is a first version with a usable DOI.
pub fn to_candidate(rec: &Value, via: &str) -> Option<Candidate> {
    let version = text(rec, "version");
    if !(version.is_empty() || version == "1") {
        return None;
    }
    let doi = text(rec, "doi").to_lowercase();
    if !valid_doi(&doi) {
        return None;
    }
    let authors = text(rec, "authors")
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect();
    Some(Candidate {
        key: format!("doi:{doi}"),
        link: format!("https://doi.org/{doi}"),
        title: text(rec, "title"),
        authors,
        abstract_text: text(rec, "abstract"),
        date: lenient_date(&text(rec, "date")).unwrap_or_default(),
        origin: Origin::Biorxiv {
            doi,
            category: text(rec, "category"),
        },
        via: via.to_string(),
    })
}

/// One page: its records (`None`: the API said there are none).
fn get_page(agent: &ureq::Agent, s: &BiorxivSettings, url: &str, cancel: &Cancel) -> Result<Vec<Value>, String> {
    let attempts = s.max_attempts.max(1);
    let mut reason = String::new();
    for attempt in 1..=attempts {
        if cancel.is_cancelled() {
            return Err("stopped".into());
        }
        let r = agent.get(url).call().map_err(|e| e.to_string()).and_then(|resp| {
            let status = resp.status().as_u16();
            let body = resp.into_body().read_to_vec().map_err(|e| e.to_string())?;
            Ok((status, body))
        });
        match r {
            Ok((200, body)) => {
                let v: Value = serde_json::from_slice(&body)
                    .map_err(|e| format!("bioRxiv sent something that is not JSON ({e})"))?;
                return Ok(v
                    .get("collection")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default());
            }
            Ok((st, _)) if st == 429 || st >= 500 => reason = format!("HTTP {st}"),
            Ok((st, _)) => return Err(format!("HTTP {st}")),
            Err(e) => reason = e,
        }
        tracing::warn!(url, attempt, reason = %reason, "bioRxiv request failed; retrying");
        if attempt < attempts {
            let base = s.backoff.mul_f64(2f64.powi(attempt as i32 - 1));
            std::thread::sleep(base.mul_f64(1.0 + rand::rng().random_range(0.0..0.25)));
        }
    }
    Err(format!("failed after {attempts} attempts: {reason}"))
}

/// Walk one interval (optionally one category), keeping records `keep`
/// accepts, up to `cap`. `Ok(None)`: the first page stayed empty.
fn walk(
    agent: &ureq::Agent,
    s: &BiorxivSettings,
    interval: &str,
    category: Option<&str>,
    cap: usize,
    cancel: &Cancel,
    mut keep: impl FnMut(&Value) -> bool,
) -> Result<Option<Vec<Value>>, String> {
    let base = s.api_base.trim_end_matches('/');
    let query = category
        .map(|c| format!("?category={}", c.trim().replace(' ', "_")))
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut cursor = 0usize;
    for page in 0..MAX_PAGES {
        let url = format!("{base}/details/biorxiv/{interval}/{cursor}/json{query}");
        let mut records = get_page(agent, s, &url, cancel)?;
        if records.is_empty() && page == 0 {
            // bioRxiv posts daily: an empty first page is retried once more
            // after a pause before it is believed.
            std::thread::sleep(s.backoff);
            records = get_page(agent, s, &url, cancel)?;
            if records.is_empty() {
                return Ok(None);
            }
        }
        let got = records.len();
        out.extend(records.into_iter().filter(|r| keep(r)));
        // The reported `total` can overstate; a short page is the end.
        if got < PAGE || out.len() >= cap {
            break;
        }
        cursor += got;
    }
    out.truncate(cap);
    Ok(Some(out))
}

fn category_valid(c: &str) -> bool {
    !c.trim().is_empty()
        && c.len() < 64
        && c.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, ' ' | '_' | '-'))
}

/// Every configured category and the keyword walk over `window`.
pub fn fetch(
    s: &BiorxivSettings,
    categories: &[(String, usize)],
    keywords: &[(String, usize)],
    window: (OffsetDateTime, OffsetDateTime),
    cancel: &Cancel,
) -> (Vec<Candidate>, Vec<SourceOutcome>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(s.timeout))
        .http_status_as_error(false)
        .build()
        .new_agent();
    let interval = format!("{}/{}", super::state::day(window.0), super::state::day(window.1));
    let mut papers = Vec::new();
    let mut outcomes = Vec::new();
    for (cat, cap) in categories {
        let name = format!("bioRxiv {cat}");
        if !category_valid(cat) {
            outcomes.push(SourceOutcome {
                name,
                fetched: 0,
                status: SourceStatus::Failed(format!(
                    "{cat:?} is not a bioRxiv category name (e.g. bioinformatics, cell biology)"
                )),
            });
            continue;
        }
        let result = walk(&agent, s, &interval, Some(cat), *cap, cancel, |_| true);
        let (got, status) = match result {
            Ok(Some(records)) => {
                let c: Vec<Candidate> = records.iter().filter_map(|r| to_candidate(r, &name)).collect();
                (c, SourceStatus::Ok)
            }
            Ok(None) => (Vec::new(), SourceStatus::Quiet(format!("no posts for {interval}"))),
            Err(e) => (Vec::new(), SourceStatus::Failed(e)),
        };
        outcomes.push(SourceOutcome {
            name,
            fetched: got.len(),
            status,
        });
        papers.extend(got);
    }
    if !keywords.is_empty() {
        let name = "bioRxiv keywords".to_string();
        let lowered: Vec<(String, usize)> = keywords.iter().map(|(k, n)| (k.to_lowercase(), *n)).collect();
        let mut per_kw = vec![0usize; lowered.len()];
        let total_cap: usize = lowered.iter().map(|(_, n)| *n).sum();
        // One walk for every keyword: a paper matching two appears once,
        // tagged with the first keyword that still had room.
        let mut tags: Vec<String> = Vec::new();
        let result = walk(&agent, s, &interval, None, total_cap, cancel, |r| {
            let hay = format!("{} {}", text(r, "title"), text(r, "abstract")).to_lowercase();
            for (i, (k, cap)) in lowered.iter().enumerate() {
                if !k.is_empty() && hay.contains(k.as_str()) && per_kw[i] < *cap {
                    per_kw[i] += 1;
                    tags.push(keywords[i].0.clone());
                    return true;
                }
            }
            false
        });
        let (got, status) = match result {
            Ok(Some(records)) => {
                let c: Vec<Candidate> = records
                    .iter()
                    .zip(tags.iter())
                    .filter_map(|(r, k)| to_candidate(r, &format!("bioRxiv: {k}")))
                    .collect();
                (c, SourceStatus::Ok)
            }
            Ok(None) => (Vec::new(), SourceStatus::Quiet(format!("no posts for {interval}"))),
            Err(e) => (Vec::new(), SourceStatus::Failed(e)),
        };
        outcomes.push(SourceOutcome {
            name,
            fetched: got.len(),
            status,
        });
        papers.extend(got);
    }
    (papers, outcomes)
}
