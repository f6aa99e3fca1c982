//! `jarvis undo`, `jarvis log` and `jarvis kb audit`: the event log at the
//! command line. Each runs in the owner when one is alive (see
//! `cli::delegate`), else here.
//! Must not: decide what can be undone (`kb::undo` does) or read the store.

use std::sync::Arc;

use clap::Args;

use crate::app::App;
use crate::cli::term::Term;
use crate::kb::undo::LogQuery;
use crate::kb::Actor;
use crate::kb::{AuditReport, DocState, Event, EventKind, Mismatch};

use super::kb::emit_json;

/// `jarvis undo`.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The event to undo (`jarvis log` shows each id); without one, your
    /// newest change that can still be undone.
    pub event: Option<u64>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// `jarvis log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only events since a date (2024-06-01), a time (RFC 3339) or this
    /// long ago (7d, 12h, 30m).
    #[arg(long)]
    pub since: Option<String>,
    /// Only changes by: user (you anywhere, and the agent after your
    /// confirmation), cli, web, agent, job or jarvis.
    #[arg(long, value_parser = ["user", "cli", "web", "agent", "job", "jarvis"])]
    pub actor: Option<String>,
    /// Only events of this kind.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::kb::undo::kind_filters()))]
    pub kind: Option<String>,
    /// At most this many events, newest first (0: all).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// The top-level commands of this file.
#[derive(Debug)]
pub enum HistoryCmd {
    Undo(UndoArgs),
    Log(LogArgs),
}

pub fn run(cmd: HistoryCmd, app: &Arc<App>, t: &dyn Term) -> anyhow::Result<u8> {
    match cmd {
        HistoryCmd::Undo(a) => undo(a, app, t),
        HistoryCmd::Log(a) => log(a, app, t),
    }
}

fn undo(a: UndoArgs, app: &Arc<App>, t: &dyn Term) -> anyhow::Result<u8> {
    let done = app.undo(a.event, &Actor::Cli)?;
    if a.json {
        emit_json(t, &done)?;
        return Ok(0);
    }
    let recorded = done
        .event
        .map(|id| format!(" (recorded as event {id})"))
        .unwrap_or_default();
    t.out(&format!(
        "undid event {} ({}): {}{recorded}\n",
        done.of.id,
        describe(&done.of),
        done.summary
    ))?;
    Ok(0)
}

/// `--since` as an RFC 3339 UTC time, which sorts like the events' own.
fn since(s: &str, now: time::OffsetDateTime) -> anyhow::Result<String> {
    use time::format_description::well_known::Rfc3339;
    let s = s.trim();
    let ago = |n: &str, unit: fn(i64) -> time::Duration| -> Option<time::OffsetDateTime> {
        n.parse::<i64>().ok().map(|n| now - unit(n))
    };
    let at = if let Some(n) = s.strip_suffix('d') {
        ago(n, time::Duration::days)
    } else if let Some(n) = s.strip_suffix('h') {
        ago(n, time::Duration::hours)
    } else if let Some(n) = s.strip_suffix('m') {
        ago(n, time::Duration::minutes)
    } else if let Ok(t) = time::OffsetDateTime::parse(s, &Rfc3339) {
        Some(t)
    } else {
        let day = time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(s, &day).ok().map(|d| d.midnight().assume_utc())
    };
    let at = at.ok_or_else(|| {
        anyhow::anyhow!("--since {s:?} is not a date (2024-06-01), a time (RFC 3339) or a span (7d, 12h, 30m)")
    })?;
    Ok(at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)?)
}

fn log(a: LogArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let query = LogQuery {
        since: a
            .since
            .as_deref()
            .map(|s| since(s, time::OffsetDateTime::now_utc()))
            .transpose()?,
        actor: a.actor,
        kind: a.kind,
        public_only: false,
        limit: a.limit,
    };
    let rows = app.timeline(&query)?;
    if a.json {
        emit_json(t, &rows)?;
        return Ok(0);
    }
    if rows.is_empty() {
        t.err("no events\n");
        return Ok(0);
    }
    let mut out = String::new();
    let mut day = "";
    for r in &rows {
        let e = &r.event;
        let (d, time) = e.at.split_once('T').unwrap_or((e.at.as_str(), ""));
        if d != day {
            out.push_str(&format!("{}{d}\n", if day.is_empty() { "" } else { "\n" }));
            day = d;
        }
        let undo = if r.undoable {
            format!(" · undo: jarvis undo {}", e.id)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  {}  #{:<5} {}{undo}\n",
            time.get(..8).unwrap_or(time),
            e.id,
            describe(e)
        ));
    }
    t.out(&out)?;
    Ok(0)
}

/// One event in words: what happened to which document, and by whom.
fn describe(e: &Event) -> String {
    let what = match (e.undo_of, e.kind) {
        (Some(n), _) => format!("undo of #{n}: {}", kind_word(e.kind)),
        (None, k) => kind_word(k).to_string(),
    };
    let name = if e.title.is_empty() {
        e.key.clone()
    } else {
        format!("\"{}\" ({})", e.title, e.key)
    };
    let fields = if e.kind == EventKind::MetadataSet && !e.fields.is_empty() {
        format!(" [{}]", e.fields.keys().cloned().collect::<Vec<_>>().join(", "))
    } else if let Some(r) = e.record.as_ref().filter(|r| !r.detail.is_empty()) {
        format!(": {}", r.detail)
    } else {
        String::new()
    };
    format!("{what} {name}{fields} — by {}", e.actor)
}

fn kind_word(k: EventKind) -> &'static str {
    match k {
        EventKind::Present => "present when the log began:",
        EventKind::Added => "added",
        EventKind::Replaced => "replaced",
        EventKind::Removed => "removed",
        EventKind::MetadataSet => "metadata set on",
        EventKind::MemoryAccepted => "memory fact accepted:",
        EventKind::MemoryEdited => "memory fact edited:",
        EventKind::MemoryForgotten => "memory fact forgotten:",
        EventKind::DraftEditApplied => "suggested edit applied to draft",
        EventKind::DraftRestored => "earlier version restored in draft",
        EventKind::DraftDeleted => "draft deleted:",
        EventKind::PromptEdited => "prompt edited:",
        EventKind::SettingEdited => "setting edited:",
        EventKind::SessionCreated => "chat created:",
        EventKind::SessionRenamed => "chat renamed:",
        EventKind::SessionDeleted => "chat deleted:",
        EventKind::SessionPrivate => "chat made private:",
    }
}

/// `jarvis kb audit`.
pub fn audit(json_out: bool, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let a = app.audit()?;
    if json_out {
        emit_json(t, &a)?;
    } else {
        t.out(&audit_text(&a))?;
    }
    if a.ok() {
        if !json_out {
            t.err("kb audit: the event log and the store agree\n");
        }
        Ok(0)
    } else {
        t.err(&format!("error: {}\n", crate::app::history::audit_problem(&a)));
        Ok(1)
    }
}

fn audit_text(a: &AuditReport) -> String {
    let state = |s: &Option<DocState>| match s {
        None => "absent".to_string(),
        Some(s) => format!("{} chunk{}", s.chunks, if s.chunks == 1 { "" } else { "s" }),
    };
    let line = |m: &Mismatch| {
        let by = m
            .event
            .map_or("no event records it".to_string(), |e| format!("event {e} left it"));
        format!(
            "    {}: log {}, store {} ({by})\n",
            m.key,
            state(&m.log),
            state(&m.store)
        )
    };
    let mut out = format!("events     {}\nmatched    {} documents\n", a.events, a.matched);
    for (label, list) in [
        ("missing", &a.missing),
        ("extra", &a.extra),
        ("differing", &a.differing),
    ] {
        out.push_str(&format!("{label:<10} {}\n", list.len()));
        for m in list.iter() {
            out.push_str(&line(m));
        }
    }
    if a.state_drift > 0 {
        out.push_str(&format!(
            "drift      the log's running state is off for {} documents\n",
            a.state_drift
        ));
    }
    if let Some(e) = a.first_differing_event {
        out.push_str(&format!("first differing event  {e}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_dates_times_and_spans_as_utc() {
        let now = time::macros::datetime!(2024-06-10 12:00 UTC);
        assert_eq!(since("2024-06-01", now).unwrap(), "2024-06-01T00:00:00Z");
        assert_eq!(since("7d", now).unwrap(), "2024-06-03T12:00:00Z");
        assert_eq!(since("90m", now).unwrap(), "2024-06-10T10:30:00Z");
        assert_eq!(since("2024-06-01T10:00:00+02:00", now).unwrap(), "2024-06-01T08:00:00Z");
        let err = since("last week", now).unwrap_err().to_string();
        assert!(err.contains("7d"), "{err}");
    }
}
