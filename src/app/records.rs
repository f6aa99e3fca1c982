//! Changes to records kept in files — a draft edit applied, a draft
//! version restored, a draft deleted, a prompt or a setting edited — with
//! their events in the history, and the undo of those events (a chat
//! rename's too: its event is the chat's, `chat::session_events`).
//!
//! The rule (see `store::records`): the file write is the truth and comes
//! first; the event is appended right after it succeeds, naming who made
//! the change (the user via the CLI or the web app, the agent in session S
//! after the human's answer under token T, a job). An append that fails
//! does not undo the change: it is logged as an error and handed back in
//! [`Recorded::history_warning`] for the edge to show — never swallowed.
//! Undo ([`FileRecords`]) puts back the inverse each event captured when
//! it was written (the saved version holding a draft file's text from
//! before, a prompt's previous text, a setting's previous value), only
//! while the record still holds what the event left, and appends its own
//! event (`undo of N`).
//! Must not: decide the rules of undo shared with the library (later
//! events, retention: `kb::undo`), or write a draft or prompt file except
//! through its feature.

use serde::Serialize;

use crate::drafts::proposals::Applied;
use crate::drafts::{content_hash, versions, DraftsError};
use crate::kb::undo::RecordUndo;
use crate::kb::{Actor, Event, EventId, EventKind, Kb, KbError, NewRecordEvent, RecordChange};

use super::ops::OpError;
use super::{App, AppError};

/// Whether a change's event made it into the history.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recorded {
    pub event: Option<EventId>,
    /// Set when the change was made but its event could not be appended:
    /// what to tell the person who made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_warning: Option<String>,
}

/// The log key of a draft file.
fn draft_file_key(draft: &str, file: &str) -> String {
    format!("draft:{draft}/{file}")
}

fn file_error(e: impl std::fmt::Display, kind: crate::error_kind::ErrorKind) -> KbError {
    KbError::RecordFile {
        message: e.to_string(),
        kind,
    }
}

fn drafts_error(e: DraftsError) -> KbError {
    let kind = e.kind();
    file_error(e, kind)
}

impl App {
    /// Append `new` by `actor` after its file write succeeded: a failure
    /// is logged and returned as a warning, the change stands.
    pub(crate) fn record(&self, new: NewRecordEvent, actor: &Actor) -> Recorded {
        let kind = new.kind.as_str();
        let key = new.key.clone();
        let appended = self
            .kb()
            .map_err(OpError::from)
            .and_then(|kb| kb.record_event(new, actor).map_err(OpError::from));
        match appended {
            Ok(id) => Recorded {
                event: Some(id),
                history_warning: None,
            },
            Err(e) => {
                tracing::error!(kind, key = %key, error = %e, "a change was made but its event could not be added to the history");
                Recorded {
                    event: None,
                    history_warning: Some(format!(
                        "the change was made, but the history could not record it ({e}), so it cannot be undone from the Timeline — `jarvis kb doctor` checks the store"
                    )),
                }
            }
        }
    }

    /// The title, visibility of a draft, for its events.
    fn draft_label(&self, ws: &crate::drafts::Workspace, draft: &str) -> (String, bool) {
        match ws.meta(draft) {
            Ok(m) => (m.title, m.visibility == crate::drafts::Visibility::Private),
            // Unknown visibility counts as private.
            Err(_) => (String::new(), true),
        }
    }

    /// Apply the accepted hunks of a suggestion (the human's answer under
    /// its token) and record it: the agent's change when a chat turn
    /// proposed it, else the web user's.
    pub fn draft_apply(&self, token: &str, accepted: &[usize]) -> Result<(Applied, Recorded), OpError> {
        let d = self.drafts()?;
        let applied = d
            .proposals
            .apply_hunks(&d.workspace, token, accepted)
            .map_err(AppError::from)?;
        let Some(before) = applied.snapshot.clone() else {
            // Nothing changed: nothing to record.
            return Ok((applied, Recorded::default()));
        };
        let actor = match &applied.session_id {
            Some(session) => Actor::Agent {
                session: session.clone(),
                token: Some(token.to_string()),
            },
            None => Actor::Web,
        };
        let (title, private) = self.draft_label(&d.workspace, &applied.draft_id);
        let n = applied.accepted.len();
        let recorded = self.record(
            NewRecordEvent {
                kind: EventKind::DraftEditApplied,
                key: draft_file_key(&applied.draft_id, &applied.filename),
                title,
                doc_type: "draft".into(),
                private,
                change: RecordChange {
                    inverse_is_default: false,
                    detail: format!(
                        "{n} suggested change{} to {}",
                        if n == 1 { "" } else { "s" },
                        applied.filename
                    ),
                    after: Some(applied.hash.clone()),
                    inverse: Some(before),
                    not_undoable: None,
                },
                kept_text: None,
            },
            &actor,
        );
        Ok((applied, recorded))
    }

    /// Put a saved version of a draft file back (itself undoable: the text
    /// it replaces is saved first) and record it. Returns the new hash.
    pub fn draft_restore(
        &self,
        draft: &str,
        file: &str,
        version: &str,
        actor: &Actor,
    ) -> Result<(String, Recorded), OpError> {
        let d = self.drafts()?;
        let (hash, before) =
            versions::restore_with_snapshot(&d.workspace, draft, file, version, None).map_err(AppError::from)?;
        let Some(before) = before else {
            return Ok((hash, Recorded::default()));
        };
        let (title, private) = self.draft_label(&d.workspace, draft);
        let recorded = self.record(
            NewRecordEvent {
                kind: EventKind::DraftRestored,
                key: draft_file_key(draft, file),
                title,
                doc_type: "draft".into(),
                private,
                change: RecordChange {
                    inverse_is_default: false,
                    detail: format!("{file} put back to its version {version}"),
                    after: Some(hash.clone()),
                    inverse: Some(before),
                    not_undoable: None,
                },
                kept_text: None,
            },
            actor,
        );
        Ok((hash, recorded))
    }

    /// The human's delete of a whole draft (its pending suggestions and
    /// held builds go with it), recorded; not undoable: nothing is kept.
    /// Returns how many suggestions were dropped.
    pub fn draft_delete(&self, draft: &str, actor: &Actor) -> Result<(usize, Recorded), OpError> {
        let d = self.drafts()?;
        let (title, private) = self.draft_label(&d.workspace, draft);
        crate::drafts::retention::delete_draft(&d.workspace, draft).map_err(AppError::from)?;
        let dropped = d.proposals.discard_draft(draft);
        d.builds.forget_draft(draft);
        Ok((dropped, self.record(draft_deleted(draft, title, private), actor)))
    }

    /// Record drafts the retention sweep (job `job`) removed.
    pub(crate) fn record_drafts_pruned(&self, removed: &[(String, String, bool)], job: &str) {
        for (id, title, private) in removed {
            let r = self.record(draft_deleted(id, title.clone(), *private), &Actor::job(job));
            if let Some(w) = r.history_warning {
                tracing::warn!(draft = %id, "{w}");
            }
        }
    }
}

fn draft_deleted(draft: &str, title: String, private: bool) -> NewRecordEvent {
    NewRecordEvent {
        kind: EventKind::DraftDeleted,
        key: format!("draft:{draft}"),
        title,
        doc_type: "draft".into(),
        private,
        change: RecordChange {
            inverse_is_default: false,
            detail: "the draft's folder, with its files and saved versions".into(),
            after: None,
            inverse: None,
            not_undoable: Some(
                "a deleted draft's folder is gone with its files and saved versions; Jarvis keeps no copy of drafts"
                    .into(),
            ),
        },
        kept_text: None,
    }
}

/// Undoes the events of records kept in files, for `kb::undo`.
pub struct FileRecords<'a> {
    pub app: &'a App,
    pub kb: &'a Kb,
    /// The app as the chat agent needs it (an undo of a chat rename goes
    /// through the agent: a running turn's session and the indexed
    /// exchanges take the title too). None: checks only (the timeline).
    pub shared: Option<&'a std::sync::Arc<App>>,
}

impl FileRecords<'_> {
    /// The draft file an event names, and the version and hash it captured.
    fn draft_parts<'e>(&self, e: &'e Event) -> Result<(&'e str, &'e str, &'e str, &'e str), String> {
        let (draft, file) = e
            .key
            .strip_prefix("draft:")
            .and_then(|k| k.split_once('/'))
            .ok_or_else(|| format!("{} names no draft file", e.key))?;
        let r = e.record.as_ref();
        let version = r.and_then(|r| r.inverse.as_deref());
        let after = r.and_then(|r| r.after.as_deref());
        match (version, after) {
            (Some(v), Some(a)) => Ok((draft, file, v, a)),
            _ => Err("the event kept no earlier version of the file".into()),
        }
    }

    fn check_draft(&self, e: &Event) -> Result<Option<String>, KbError> {
        let (draft, file, version, after) = match self.draft_parts(e) {
            Ok(p) => p,
            Err(why) => return Ok(Some(why)),
        };
        let d = self.app.drafts().map_err(|e| file_error(&e, e.kind()))?;
        let now = match d.workspace.read_bytes(draft, file) {
            Ok(b) => content_hash(&b),
            Err(DraftsError::NoDraft { .. }) => return Ok(Some(format!("draft {draft} was deleted since"))),
            Err(DraftsError::NoFile { .. }) => return Ok(Some(format!("{file} is no longer in draft {draft}"))),
            Err(other) => return Err(drafts_error(other)),
        };
        if now != after {
            return Ok(Some(format!(
                "{file} changed since event {} (a save in the editor?), and undoing would overwrite that — pick the version to go back to in the editor's history instead",
                e.id
            )));
        }
        if let Err(DraftsError::NoVersion { .. }) = versions::read_version(&d.workspace, draft, file, version) {
            return Ok(Some(format!(
                "the saved version {version} of {file} from before the change is gone"
            )));
        }
        Ok(None)
    }

    fn undo_draft(&self, e: &Event, cause: &crate::store::Cause) -> Result<String, KbError> {
        let (draft, file, version, after) = self
            .draft_parts(e)
            .map_err(|reason| KbError::UndoRefused { id: e.id, reason })?;
        let d = self.app.drafts().map_err(|e| file_error(&e, e.kind()))?;
        // The hash guard closes the gap since the check.
        let (hash, replaced) =
            versions::restore_with_snapshot(&d.workspace, draft, file, version, Some(after)).map_err(drafts_error)?;
        if let Some(replaced) = replaced {
            let new = NewRecordEvent {
                kind: EventKind::DraftRestored,
                key: e.key.clone(),
                title: e.title.clone(),
                doc_type: "draft".into(),
                private: e.private,
                change: RecordChange {
                    inverse_is_default: false,
                    detail: format!("{file} put back to its text from before event {}", e.id),
                    after: Some(hash),
                    inverse: Some(replaced),
                    not_undoable: None,
                },
                kept_text: None,
            };
            let unrecorded = self.append(new, cause);
            return Ok(format!(
                "put {file} of draft \"{}\" back to its text from before event {}{unrecorded}",
                e.title, e.id
            ));
        }
        Ok(format!(
            "{file} of draft \"{}\" already held its text from before event {}",
            e.title, e.id
        ))
    }

    /// Append an undo's event. A failure is logged, and returned as the
    /// words the undo's summary ends with (the undo itself stands).
    pub(super) fn append(&self, new: NewRecordEvent, cause: &crate::store::Cause) -> String {
        match self.kb.record_undo_event(new, cause) {
            Ok(_) => String::new(),
            Err(err) => {
                tracing::error!(undo_of = ?cause.undo_of, error = %err, "an undo was made but its event could not be added to the history");
                format!(" — but the history could not record this undo ({err})")
            }
        }
    }
}

impl FileRecords<'_> {
    /// The chat session a rename names, its previous and its new title.
    fn rename_parts<'e>(&self, e: &'e Event) -> Option<(&'e str, &'e str, &'e str)> {
        let id = e.key.strip_prefix("chat:")?;
        let r = e.record.as_ref()?;
        Some((id, r.inverse.as_deref()?, r.after.as_deref()?))
    }

    fn check_rename(&self, e: &Event) -> Result<Option<String>, KbError> {
        let Some((id, _, after)) = self.rename_parts(e) else {
            return Ok(Some("the event kept no previous title".into()));
        };
        let dir = self
            .app
            .home()
            .ensure(crate::paths::Dir::Sessions)
            .map_err(|err| file_error(&err, err.kind()))?;
        match crate::chat::SessionStore::new(dir).load(id) {
            Ok(s) if s.title == after => Ok(None),
            Ok(s) => Ok(Some(format!(
                "the chat was renamed since (it is now \"{}\"); rename it by hand",
                s.title
            ))),
            Err(crate::chat::SessionError::NotFound(_)) => Ok(Some("the chat was deleted since".into())),
            Err(err) => Err(file_error(&err, err.kind())),
        }
    }

    fn undo_rename(&self, e: &Event, cause: &crate::store::Cause) -> Result<String, KbError> {
        let refuse = |reason: &str| KbError::UndoRefused {
            id: e.id,
            reason: reason.into(),
        };
        let (id, before, _) = self
            .rename_parts(e)
            .ok_or_else(|| refuse("the event kept no previous title"))?;
        let app = self.shared.ok_or_else(|| refuse("the chat is out of reach here"))?;
        let agent = app.chat().map_err(|err| file_error(&err, err.kind()))?;
        // What the summary ends with when the undo's event is missing.
        let unrecorded = std::cell::RefCell::new(String::new());
        agent
            .rename_recorded(id, before, &|new| {
                unrecorded.replace(self.append(new, cause));
                None
            })
            .map_err(|err| file_error(&err, err.kind()))?;
        Ok(format!(
            "renamed the chat back to \"{before}\", as before event {}{}",
            e.id,
            unrecorded.into_inner()
        ))
    }
}

impl RecordUndo for FileRecords<'_> {
    fn check(&self, e: &Event) -> Result<Option<String>, KbError> {
        match e.kind {
            EventKind::SessionRenamed => self.check_rename(e),
            EventKind::DraftEditApplied | EventKind::DraftRestored => self.check_draft(e),
            EventKind::PromptEdited => super::records_config::check_prompt(self, e),
            EventKind::SettingEdited => super::records_config::check_setting(self, e),
            _ => Ok(Some("this kind of change cannot be undone".into())),
        }
    }

    fn undo(&self, e: &Event, cause: &crate::store::Cause) -> Result<String, KbError> {
        match e.kind {
            EventKind::SessionRenamed => self.undo_rename(e, cause),
            EventKind::DraftEditApplied | EventKind::DraftRestored => self.undo_draft(e, cause),
            EventKind::PromptEdited => super::records_config::undo_prompt(self, e, cause),
            EventKind::SettingEdited => super::records_config::undo_setting(self, e, cause),
            _ => Err(KbError::UndoRefused {
                id: e.id,
                reason: "this kind of change cannot be undone".into(),
            }),
        }
    }
}
