//! The event log's use cases every edge shares: undo, the timeline, the
//! replay audit and the log's size. Each is one call into the shared `Kb`
//! (`kb::undo`), which owns the rules; records kept in files (drafts,
//! prompts, settings, sessions) are undone through `app::records`.
//! Must not: decide whether an event can be undone, or format anything.

use std::sync::Arc;

use crate::kb::undo::{LogQuery, TimelineRow, Undone};
use crate::kb::{Actor, EventId};
use crate::store::{AuditReport, LogSize};

use super::ops::OpError;
use super::App;

impl App {
    /// Undo event `id`, or the newest change a person made that can be
    /// undone; the undo is itself an event by `actor`.
    pub fn undo(self: &Arc<Self>, id: Option<EventId>, actor: &Actor) -> Result<Undone, OpError> {
        let kb = self.kb()?;
        let files = super::records::FileRecords {
            app: self,
            kb: &kb,
            shared: Some(self),
        };
        Ok(kb.undo_with(id, actor, &files)?)
    }

    /// The events, newest first, with whether each can be undone now.
    pub fn timeline(&self, query: &LogQuery) -> Result<Vec<TimelineRow>, OpError> {
        let kb = self.kb()?;
        let files = super::records::FileRecords {
            app: self,
            kb: &kb,
            shared: None,
        };
        Ok(kb.timeline_with(query, &files)?)
    }

    /// Replay the log and compare it with the store.
    pub fn audit(&self) -> Result<AuditReport, OpError> {
        Ok(self.kb()?.audit()?)
    }

    /// How big the log and its kept copies are.
    pub fn log_size(&self) -> Result<LogSize, OpError> {
        Ok(self.kb()?.log_size()?)
    }
}

/// The one line a failed audit is reported with, naming the fix.
pub fn audit_problem(a: &AuditReport) -> String {
    format!(
        "the event log and the store disagree ({} missing, {} extra, {} differing{}; first differing event {}) — `jarvis kb audit` lists them; a document changed behind the log's back is put right by adding or removing it again",
        a.missing.len(),
        a.extra.len(),
        a.differing.len(),
        if a.state_drift > 0 {
            format!(", the log's running state off for {}", a.state_drift)
        } else {
            String::new()
        },
        a.first_differing_event.map_or("none".to_string(), |e| e.to_string())
    )
}
