//! `jarvis kb sync-status [--json]`: is the owner running the schedule
//! alive, and per job the last run, last success, last error, next run and
//! duration; then the tail of its log.

use clap::Args;

use crate::app::jobs::{JobView, SyncStatusView};
use crate::app::App;
use crate::cli::term::Term;

#[derive(Debug, Clone, Args)]
pub struct SyncStatusArgs {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// How many log lines to show.
    #[arg(long, default_value_t = 15)]
    pub lines: usize,
}

fn when(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|| "—".into())
}

fn job_lines(j: &JobView, digest_enabled: bool, out: &mut String) {
    let s = &j.status;
    let digest = j.id == "digest" || j.id == "digest_catchup";
    if digest && !digest_enabled {
        out.push_str(&format!("  {:<15} digest: disabled ([digest] enabled = false)\n", j.id));
        return;
    }
    if !s.registered {
        let why = s.disabled.clone().unwrap_or_else(|| "not registered".into());
        out.push_str(&format!("  {:<15} {why}\n", j.id));
        return;
    }
    let state = if s.running {
        "running".to_string()
    } else {
        s.last_outcome.clone().unwrap_or_else(|| "not run yet".into())
    };
    out.push_str(&format!(
        "  {:<15} {state:<9} last run {}  last success {}  next run {}  took {}\n",
        j.id,
        when(s.last_run),
        when(s.last_success),
        when(s.next_run),
        s.duration_ms
            .map(|ms| format!("{:.1} s", ms as f64 / 1000.0))
            .unwrap_or_else(|| "—".into()),
    ));
    if let Some(t) = &s.trigger {
        out.push_str(&format!("  {:<15} trigger: {t}\n", ""));
    }
    if let Some(sum) = &s.last_summary {
        out.push_str(&format!("  {:<15} {sum}\n", ""));
    }
    if let Some(e) = &s.last_error {
        out.push_str(&format!(
            "  {:<15} last error {}: {}\n",
            "",
            when(Some(e.at)),
            e.message
        ));
    }
}

fn render(v: &SyncStatusView) -> String {
    let mut out = String::new();
    match &v.owner {
        Some(o) if o.alive => out.push_str(&format!(
            "owner: jarvis {} running (pid {}, since {})\n",
            o.role,
            o.pid,
            when(Some(o.since))
        )),
        Some(o) => out.push_str(&format!(
            "owner: not running (jarvis {} pid {} started {} is gone) — start it with `jarvis sync`\n",
            o.role,
            o.pid,
            when(Some(o.since))
        )),
        None => {
            out.push_str("owner: not running (no schedule has run on this home yet) — start it with `jarvis sync`\n")
        }
    }
    if let Some(p) = &v.problem {
        out.push_str(&format!("warning: {p}\n"));
    }
    out.push_str("jobs:\n");
    for j in &v.jobs {
        job_lines(j, v.digest_enabled, &mut out);
    }
    if let Some(w) = &v.watcher {
        if let Some(e) = &w.error {
            out.push_str(&format!("watcher: {e}\n"));
        }
        if !w.watching.is_empty() {
            out.push_str(&format!(
                "watcher: {} — {} batch(es), last {} ({} event(s))\n",
                w.watching.join(", "),
                w.batches,
                when(w.last_batch),
                w.last_batch_events
            ));
        }
    }
    out.push_str(&format!("status file: {}\n", v.status_file.display()));
    if v.log_tail.is_empty() {
        out.push_str(&format!("log: {} (empty)\n", v.log_file.display()));
    } else {
        out.push_str(&format!(
            "log: {} (last {} lines)\n",
            v.log_file.display(),
            v.log_tail.len()
        ));
        for l in &v.log_tail {
            out.push_str(&format!("  {l}\n"));
        }
    }
    out
}

pub fn sync_status(a: SyncStatusArgs, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    let view = app.sync_status(a.lines);
    if a.json {
        super::emit_json(t, &view)?;
    } else {
        t.out(&render(&view))?;
    }
    Ok(0)
}
