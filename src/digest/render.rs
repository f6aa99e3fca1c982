//! The digest file: `digest-YYYY-MM-DD.md` with three tiers — Must-Read
//! (score ≥ 9), Worth Reading (8) and Skim (< 8) — each paper with title,
//! authors, link, score, why and summary; a "Generated HH:MM" line and a
//! provider/model footer.
//!
//! Titles, abstracts and the model's words are untrusted text: they are
//! escaped so they can never become Markdown structure (links, headings,
//! HTML), and links are only the ones built from validated ids.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::score::Scored;
use super::{Candidate, DigestError, SourceOutcome, SourceStatus, TokenUse};

/// The scored papers by tier, best first.
#[derive(Debug, Clone, Default)]
pub struct Tiers {
    pub must_read: Vec<Scored>,
    pub worth_reading: Vec<Scored>,
    pub skim: Vec<Scored>,
}

impl Tiers {
    /// Sort by score and split. The top two tiers hold `max_results`
    /// papers at most; the overflow moves down to Skim, so nothing scored
    /// is ever dropped from the digest.
    pub fn split(mut scored: Vec<Scored>, max_results: usize) -> Tiers {
        scored.sort_by_key(|s| std::cmp::Reverse(s.score));
        let mut t = Tiers::default();
        for s in scored {
            let room = t.must_read.len() + t.worth_reading.len() < max_results;
            match s.score {
                9.. if room => t.must_read.push(s),
                8 if room => t.worth_reading.push(s),
                _ => t.skim.push(s),
            }
        }
        t
    }

    pub fn all(&self) -> impl Iterator<Item = &Scored> {
        self.must_read.iter().chain(&self.worth_reading).chain(&self.skim)
    }
}

/// Untrusted text as inert Markdown: one line, every character Markdown
/// or HTML could read as structure backslash-escaped.
pub fn escape(s: &str) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(one_line.len());
    for c in one_line.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '<' | '>' | '#' | '+' | '!' | '|' | '~'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The inverse of [`escape`], for reading a digest back.
pub fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A link the digest may print: only `https://arxiv.org/abs/…` and
/// `https://doi.org/…` built from validated ids.
fn safe_link(c: &Candidate) -> Option<&str> {
    let ok = (c.link.starts_with("https://arxiv.org/abs/") || c.link.starts_with("https://doi.org/10."))
        && !c.link.contains([' ', '(', ')', '<', '>', '[', ']', '"']);
    ok.then_some(c.link.as_str())
}

pub struct DigestView<'a> {
    pub date: &'a str,
    pub now: OffsetDateTime,
    pub tiers: &'a Tiers,
    pub skipped: &'a [(Candidate, String)],
    pub sources: &'a [SourceOutcome],
    pub model: &'a str,
    pub usage: &'a TokenUse,
    pub gated_out: usize,
    /// The web app's address, for each paper's "Rate in Jarvis" link.
    pub web_url: Option<&'a str>,
}

/// The Digest view's address for one paper (`#digest=KEY`, the key's
/// reserved characters percent-encoded).
fn rate_link(web: &str, key: &str) -> String {
    let mut k = String::new();
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
            k.push(char::from(b));
        } else {
            k.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{}/#digest={k}", web.trim_end_matches('/'))
}

fn entry(out: &mut String, s: &Scored, web: Option<&str>) {
    let c = &s.candidate;
    match safe_link(c) {
        Some(l) => out.push_str(&format!("### [{}]({l})\n\n", escape(&c.title))),
        None => out.push_str(&format!("### {}\n\n", escape(&c.title))),
    }
    out.push_str(&format!(
        "**Authors:** {} · **Score:** {}/10 · **Track:** {} · {}\n\n",
        escape(&c.authors_line()),
        s.score,
        escape(if s.track.is_empty() { "—" } else { &s.track }),
        escape(&c.via)
    ));
    out.push_str(&format!("**Why:** {}\n\n", escape(&s.why)));
    out.push_str(&format!("**Summary:** {}\n\n", escape(&s.summary)));
    if let Some(web) = web {
        out.push_str(&format!("[Rate or add in Jarvis]({})\n\n", rate_link(web, &c.key)));
    }
}

/// The digest Markdown.
pub fn render(v: &DigestView<'_>) -> String {
    let mut out = format!("# Paper Digest — {}\n\n", v.date);
    out.push_str(&format!(
        "Generated {:02}:{:02} UTC · {} papers scored",
        v.now.hour(),
        v.now.minute(),
        v.tiers.all().count()
    ));
    if v.gated_out > 0 {
        out.push_str(&format!(" · {} more set aside as least like your library", v.gated_out));
    }
    out.push_str("\n\n");
    let sources: Vec<String> = v
        .sources
        .iter()
        .map(|s| match &s.status {
            SourceStatus::Ok => format!("{} ({})", s.name, s.fetched),
            SourceStatus::Quiet(_) => format!("{} (quiet)", s.name),
            SourceStatus::Failed(_) => format!("{} (failed)", s.name),
        })
        .collect();
    out.push_str(&format!("Sources: {}\n\n", escape(&sources.join(", "))));
    let sections: [(&str, &[Scored]); 2] = [
        ("Must-Read (score ≥ 9)", &v.tiers.must_read),
        ("Worth Reading (score 8)", &v.tiers.worth_reading),
    ];
    for (name, list) in sections {
        out.push_str(&format!("## {name}\n\n"));
        if list.is_empty() {
            out.push_str("None this time.\n\n");
        }
        for s in list {
            entry(&mut out, s, v.web_url);
        }
    }
    out.push_str("## Skim (score < 8)\n\n");
    if v.tiers.skim.is_empty() {
        out.push_str("None this time.\n\n");
    }
    for s in &v.tiers.skim {
        let c = &s.candidate;
        let title = match safe_link(c) {
            Some(l) => format!("[{}]({l})", escape(&c.title)),
            None => escape(&c.title),
        };
        out.push_str(&format!(
            "- {title} — {} · {}/10 — {} {}\n",
            escape(&c.authors_line()),
            s.score,
            escape(&s.why),
            escape(&s.summary)
        ));
    }
    if !v.skipped.is_empty() {
        out.push_str("\n## Not scored\n\n");
        for (c, why) in v.skipped {
            out.push_str(&format!("- {} — {}\n", escape(&c.title), escape(why)));
        }
    }
    out.push_str(&format!(
        "\n---\n\nScored by {} · {}\n",
        escape(v.model),
        escape(&super::usage_line(v.usage))
    ));
    out
}

/// Write `digest-DATE.md` (a same-day re-run gets `digest-DATE-2.md`, …:
/// an earlier digest is never overwritten).
pub fn write_digest(dir: &Path, date: &str, markdown: &str) -> Result<PathBuf, DigestError> {
    let fail = |path: &Path, e: String| DigestError::Write {
        path: path.to_path_buf(),
        reason: e,
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e.to_string()))?;
    for n in 1..1000 {
        let name = if n == 1 {
            format!("digest-{date}.md")
        } else {
            format!("digest-{date}-{n}.md")
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(markdown.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| fail(&path, e.to_string()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fail(&path, e.to_string())),
        }
    }
    Err(fail(dir, "too many digests for one day".into()))
}
