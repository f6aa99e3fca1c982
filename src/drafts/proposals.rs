//! Agent changes as proposals: built without writing, applied only by a
//! human's per-hunk answer.
//!
//! Owns: [`Proposals`], the in-memory table of pending suggestions keyed by
//! a one-shot token (they do not survive a restart — the coarse way to
//! clear them), [`Proposals::propose_edit`] (writes nothing) and
//! [`Proposals::apply_hunks`] — the only path that writes an agent's change:
//! it refuses a stale proposal, snapshots the current text, applies the
//! chosen hunks and replaces the file atomically.
//! Must not: write on propose, apply a token twice, or apply over a file
//! that moved since the proposal was made.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use super::hunks::{self, Hunk};
use super::workspace::Workspace;
use super::{content_hash, DraftsError};

/// The line a proposal hands back to the model, verbatim.
pub const INVARIANT_LINE: &str = "Proposal only — jarvis never writes to a file unless you accept the specific change.";

/// A pending suggestion.
#[derive(Debug, Clone, Serialize)]
pub struct Proposal {
    pub token: String,
    pub draft_id: String,
    pub filename: String,
    /// Hash of the file the hunks were computed against.
    pub base_hash: String,
    pub hunks: Vec<Hunk>,
    /// The session whose turn made it, if any.
    pub session_id: Option<String>,
    #[serde(skip)]
    old_text: String,
    #[serde(skip)]
    new_text: String,
}

impl Proposal {
    pub fn new_text(&self) -> &str {
        &self.new_text
    }
    pub fn old_text(&self) -> &str {
        &self.old_text
    }
}

/// What applying did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Applied {
    pub draft_id: String,
    pub filename: String,
    pub accepted: Vec<usize>,
    pub hash: String,
    /// The snapshot holding the text before the change, if anything changed.
    pub snapshot: Option<String>,
    /// The session whose turn proposed it, if any: the change is that
    /// agent's, made by the human's answer under the proposal's token.
    pub session_id: Option<String>,
}

/// The pending suggestions of this process.
#[derive(Debug, Default)]
pub struct Proposals {
    pending: Mutex<HashMap<String, Proposal>>,
}

impl Proposals {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Proposal>> {
        // A panic while holding the lock cannot leave the map half-updated
        // (every change is a single insert or remove), so recover it.
        crate::lock::lock(&self.pending)
    }

    /// Build hunks from the file's current text to `new_text` and hold
    /// them under a fresh token. Writes nothing.
    pub fn propose_edit(
        &self,
        ws: &Workspace,
        draft_id: &str,
        filename: &str,
        new_text: &str,
        session_id: Option<&str>,
    ) -> Result<Proposal, DraftsError> {
        let current = ws.read_file(draft_id, filename)?;
        let hunks = hunks::compute(&current.text, new_text);
        self.hold(ws, current, draft_id, filename, new_text, hunks, session_id)
    }

    /// [`Proposals::propose_edit`] for a file that is still empty: the new
    /// text in one hunk per part ([`hunks::sections`]), so a whole new
    /// document is reviewed part by part. A file with text gets the
    /// ordinary diff. Writes nothing.
    pub fn propose_new(
        &self,
        ws: &Workspace,
        draft_id: &str,
        filename: &str,
        new_text: &str,
        session_id: Option<&str>,
    ) -> Result<Proposal, DraftsError> {
        let current = ws.read_file(draft_id, filename)?;
        let hunks = if current.text.is_empty() {
            hunks::sections(new_text)
        } else {
            hunks::compute(&current.text, new_text)
        };
        self.hold(ws, current, draft_id, filename, new_text, hunks, session_id)
    }

    /// Hold `hunks` (from `current` to `new_text`) under a fresh token.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &self,
        ws: &Workspace,
        current: super::DraftFile,
        draft_id: &str,
        filename: &str,
        new_text: &str,
        hunks: Vec<Hunk>,
        session_id: Option<&str>,
    ) -> Result<Proposal, DraftsError> {
        if new_text.len() as u64 > ws.settings().max_file_bytes {
            return Err(DraftsError::TooLarge {
                name: filename.into(),
                bytes: new_text.len() as u64,
                max: ws.settings().max_file_bytes,
            });
        }
        if hunks.is_empty() {
            return Err(DraftsError::NoChange { name: filename.into() });
        }
        let proposal = Proposal {
            token: uuid::Uuid::new_v4().simple().to_string(),
            draft_id: draft_id.into(),
            filename: filename.into(),
            base_hash: current.hash,
            hunks,
            session_id: session_id.map(str::to_string),
            old_text: current.text,
            new_text: new_text.into(),
        };
        self.lock().insert(proposal.token.clone(), proposal.clone());
        Ok(proposal)
    }

    /// Pending suggestions, optionally for one draft.
    pub fn pending(&self, draft_id: Option<&str>) -> Vec<Proposal> {
        let mut out: Vec<Proposal> = self
            .lock()
            .values()
            .filter(|p| draft_id.is_none_or(|d| p.draft_id == d))
            .cloned()
            .collect();
        out.sort_by(|a, b| (&a.draft_id, &a.filename, &a.token).cmp(&(&b.draft_id, &b.filename, &b.token)));
        out
    }

    /// Drop one suggestion (rejected without review); false if unknown.
    pub fn discard(&self, token: &str) -> bool {
        self.lock().remove(token).is_some()
    }

    /// Drop every suggestion for a draft (it was deleted); returns how many.
    pub fn discard_draft(&self, draft_id: &str) -> usize {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, p| p.draft_id != draft_id);
        before - map.len()
    }

    /// Apply the accepted hunks of a suggestion. The token is used up
    /// whatever happens (a stale proposal can never become applicable).
    pub fn apply_hunks(&self, ws: &Workspace, token: &str, accepted: &[usize]) -> Result<Applied, DraftsError> {
        let proposal = self.lock().remove(token).ok_or(DraftsError::NoProposal)?;
        let count = proposal.hunks.len();
        let mut chosen: Vec<usize> = Vec::with_capacity(accepted.len());
        for &i in accepted {
            if i >= count || chosen.contains(&i) {
                // Put it back: a malformed answer should not cost the user
                // the suggestion.
                self.lock().insert(proposal.token.clone(), proposal);
                return Err(DraftsError::BadHunk { index: i, count });
            }
            chosen.push(i);
        }
        chosen.sort_unstable();
        let current = ws.read_bytes(&proposal.draft_id, &proposal.filename)?;
        if content_hash(&current) != proposal.base_hash {
            return Err(DraftsError::Stale {
                name: proposal.filename.clone(),
            });
        }
        let text = hunks::apply(&proposal.old_text, &proposal.new_text, &proposal.hunks, &chosen);
        if text.as_bytes() == current.as_slice() {
            return Ok(Applied {
                draft_id: proposal.draft_id,
                filename: proposal.filename,
                accepted: chosen,
                hash: proposal.base_hash,
                snapshot: None,
                session_id: proposal.session_id,
            });
        }
        // Snapshots the current text first, then replaces atomically; the
        // hash guard closes the gap since the check above.
        let (hash, snapshot) =
            ws.save_with_snapshot(&proposal.draft_id, &proposal.filename, &text, Some(&proposal.base_hash))?;
        Ok(Applied {
            draft_id: proposal.draft_id,
            filename: proposal.filename,
            accepted: chosen,
            hash,
            snapshot,
            session_id: proposal.session_id,
        })
    }
}
