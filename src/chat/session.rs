//! Persistent chat sessions: one JSON file per session under
//! `$JARVIS_HOME/sessions/` (directory 0700, files 0600, atomic writes).
//!
//! Owns: the session file format (`format_version` 2: the neutral transcript
//! plus the display list), id validation, listing, pinning, renaming,
//! pruning and deleting files, and the in-memory edits a turn makes
//! (recording a question, rolling a turn back, recording spend).
//! Must not: talk to a model or the knowledge base — indexing chat history
//! and propagating a rename to the index live in `history`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::chat::cite::Citation;
use crate::llm::transcript::{Message, Role};
use crate::llm::{ModelCost, Usage};
use crate::paths::{ensure_dir, write_atomic, PathsError};

/// The file format written today: the provider-neutral transcript.
pub const FORMAT_VERSION: u32 = 2;
/// How many unpinned sessions survive a prune.
pub const KEEP_UNPINNED: usize = 50;
/// Longest title a rename accepts (characters, after trimming).
pub const MAX_TITLE_CHARS: usize = 120;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The id is not `[0-9a-z-]{1,64}`; no path was built from it.
    #[error("invalid session id {0:?} — ids are 1–64 characters of 0-9, a-z and '-'")]
    BadId(String),
    /// No file for that id.
    #[error("no session {0} — `GET /sessions` (or the sessions directory) lists the ones that exist")]
    NotFound(String),
    /// The file is not a session this version can read.
    #[error("session file {path} cannot be read: {message} — move it aside; other sessions are unaffected")]
    Corrupt { path: PathBuf, message: String },
    /// An empty (or whitespace) title.
    #[error("a session title cannot be empty")]
    EmptyTitle,
    /// The sessions directory could not be created or written.
    #[error(transparent)]
    Paths(#[from] PathsError),
    /// Reading or removing a session file failed.
    #[error("cannot access {}: {}", path.display(), crate::error_kind::io_reason(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SessionError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            SessionError::BadId(_) | SessionError::EmptyTitle => ErrorKind::User,
            SessionError::NotFound(_) => ErrorKind::NotFound,
            SessionError::Corrupt { .. } => ErrorKind::Internal,
            SessionError::Paths(e) => e.kind(),
            SessionError::Io { source, .. } => crate::error_kind::io_kind(source),
        }
    }
}

/// A source an answer drew on, shown as a citation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceRef {
    /// `note`, `paper`, `digest` or `chat`.
    pub kind: String,
    pub title: String,
    /// A note's vault-relative path, a paper's source URL/path, `session:<id>`.
    pub location: String,
    /// Section breadcrumb, when the hit had one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub section: String,
    /// PDF page (annotations, figures), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<i64>,
}

/// One tool call as the human sees it in the reply's tool log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolLogEntry {
    pub name: String,
    /// Argument summary (middle-ellipsised).
    pub summary: String,
    pub duration_ms: u64,
    pub result_chars: usize,
    pub is_error: bool,
}

/// One bubble of the conversation as the human sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DisplayEntry {
    pub role: Role,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolLogEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceRef>,
    /// A "⚠️" reply standing for a failed turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    #[serde(default)]
    pub at: String,
    /// The passages the answer cites, by marker number (files written
    /// before citations existed have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Citation>,
    /// Markers the model wrote that named no passage of the turn; they were
    /// removed from `text`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsupported_citations: usize,
    /// The answer cites nothing from the library although the turn
    /// searched it (or the model used its own knowledge).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_from_library: bool,
    /// The reasoning the model streamed before this answer (shown folded;
    /// never part of the transcript sent to a model).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thinking: String,
    /// The numbered plan the planning phase made for this answer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan: String,
    /// Paragraphs stating something with no citation, in an answer that
    /// cites the library: "partly not from your library"
    /// (`cite::uncited_paragraphs`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncited_paragraphs: usize,
    /// A question handed to a running turn ("send now"): shown as sent
    /// while Jarvis worked, never a turn of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steered: bool,
    /// Quiet lines under an answer (a pinned private note left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// The long-term memory facts in this answer's context, by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<crate::store::FactId>,
    /// Facts this answer's turn proposed to remember.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remembered: Vec<crate::store::FactId>,
}

impl DisplayEntry {
    /// A message handed to a running turn, as the transcript shows it.
    pub fn steered(text: &str) -> DisplayEntry {
        DisplayEntry {
            role: Role::User,
            text: text.to_string(),
            tools: Vec::new(),
            sources: Vec::new(),
            error: false,
            at: now(),
            citations: Vec::new(),
            unsupported_citations: 0,
            not_from_library: false,
            uncited_paragraphs: 0,
            thinking: String::new(),
            plan: String::new(),
            steered: true,
            notices: Vec::new(),
            memory: Vec::new(),
            remembered: Vec::new(),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One conversation. `messages` is what the model sees (compaction shrinks
/// it); `display` is what the human sees (never shrunk). The two cannot be
/// rebuilt from each other, so both are stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub format_version: u32,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub created: String,
    #[serde(default)]
    pub updated: String,
    #[serde(default)]
    pub pinned: bool,
    /// Set by the first private sighting and never cleared.
    #[serde(default)]
    pub private: bool,
    pub provider: String,
    pub model: String,
    #[serde(default = "yes")]
    pub kb_only: bool,
    /// The profile's id (`chat::profiles`); empty for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub profile: String,
    #[serde(default)]
    pub messages: Vec<Message>,
    #[serde(default)]
    pub display: Vec<DisplayEntry>,
    /// Spend per served model (`provider:model`). Empty when no provider
    /// reported money — never a fabricated zero.
    #[serde(default)]
    pub cost: BTreeMap<String, ModelCost>,
    /// The model a router actually used, when it differs from `model`.
    #[serde(default)]
    pub served_model: Option<String>,
    /// Index into `messages` where each user turn began.
    #[serde(default)]
    pub turn_starts: Vec<usize>,
    // What is indexed of the history is read back from the knowledge base
    // (see `history`); files written before that kept `indexed_exchanges`
    // and `reindex_private` counters here, which loading ignores.
}

fn yes() -> bool {
    true
}

fn now() -> String {
    crate::kb::stage::now_iso()
}

/// Whether `id` may name a session file: `[0-9a-z-]{1,64}`. Checked before
/// any path is built, so `../x` or `a/b` never reach the filesystem.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
}

/// A fresh id: UTC timestamp plus a random suffix, e.g. `20260101-120000-3fa2c9`.
pub fn new_id() -> String {
    let t = time::OffsetDateTime::now_utc();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        &suffix[..6]
    )
}

impl Session {
    /// A brand-new, unsaved session on a concrete provider and model.
    pub fn new(provider: &str, model: &str, kb_only: bool) -> Session {
        let at = now();
        Session {
            id: new_id(),
            format_version: FORMAT_VERSION,
            title: String::new(),
            created: at.clone(),
            updated: at,
            pinned: false,
            private: false,
            provider: provider.to_string(),
            model: model.to_string(),
            kb_only,
            profile: String::new(),
            messages: Vec::new(),
            display: Vec::new(),
            cost: BTreeMap::new(),
            served_model: None,
            turn_starts: Vec::new(),
        }
    }

    /// `provider:model`, the key switching and the provider cache use.
    pub fn model_spec(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }

    /// Nothing said yet: such a session is never written.
    pub fn is_empty(&self) -> bool {
        self.display.is_empty() && self.messages.is_empty()
    }

    /// Record the user's question: a turn start, the message and its bubble.
    /// The first question also names an untitled session.
    pub fn begin_turn(&mut self, text: &str) {
        self.begin_turn_as(text, text);
    }

    /// [`Session::begin_turn`] for a question the human typed as `shown`
    /// (a custom command line) and the model is sent as `text` (its
    /// expansion): the bubble and the title show what was typed.
    pub fn begin_turn_as(&mut self, text: &str, shown: &str) {
        self.turn_starts.push(self.messages.len());
        self.messages.push(Message::user(text));
        self.display.push(DisplayEntry {
            role: Role::User,
            text: shown.to_string(),
            tools: Vec::new(),
            sources: Vec::new(),
            error: false,
            at: now(),
            citations: Vec::new(),
            unsupported_citations: 0,
            not_from_library: false,
            thinking: String::new(),
            plan: String::new(),
            steered: false,
            notices: Vec::new(),
            uncited_paragraphs: 0,
            memory: Vec::new(),
            remembered: Vec::new(),
        });
        if self.title.is_empty() {
            self.title = default_title(shown);
        }
        self.updated = now();
    }

    /// Undo the last turn: the question leaves messages, display and
    /// turn_starts together, and anything after it in the transcript goes
    /// too. Returns false when there was no turn to undo.
    pub fn rollback_turn(&mut self) -> bool {
        let Some(start) = self.turn_starts.pop() else {
            return false;
        };
        self.messages.truncate(start);
        if let Some(i) = self.display.iter().rposition(|d| d.role == Role::User && !d.steered) {
            self.display.truncate(i);
        }
        // A first question taken back leaves a conversation with nothing
        // to be named after (its title came from that question).
        if self.display.is_empty() {
            self.title.clear();
        }
        true
    }

    /// Whether the last bubble is an answer (a finished turn stands).
    pub fn ends_with_reply(&self) -> bool {
        self.display.last().is_some_and(|d| d.role == Role::Assistant)
    }

    /// Add one turn's spend, keyed by the model that served it, and keep
    /// `served_model` true: set when a router picked another model, cleared
    /// when the requested model answered for itself.
    pub fn record_usage(&mut self, usage: &Usage) {
        for (served, c) in usage {
            // Served names are bare model names (an Ollama tag has its own
            // colons), so the key always gets this session's provider.
            let e = self.cost.entry(format!("{}:{served}", self.provider)).or_default();
            e.usd += c.usd;
            e.requests += c.requests;
        }
        if let Some(served) = usage.keys().next() {
            self.served_model = (*served != self.model).then(|| served.clone());
        }
    }

    /// Flag the session private, permanently. Exchanges already indexed as
    /// public are re-indexed private on the next indexing pass (which
    /// sees public chunks under a private session).
    pub fn mark_private(&mut self) {
        self.private = true;
    }

    /// (user, assistant) pairs of the display list, in order.
    /// Messages sent while a turn worked are part of that turn, not pairs.
    pub fn exchanges(&self) -> Vec<(&DisplayEntry, &DisplayEntry)> {
        let shown: Vec<&DisplayEntry> = self.display.iter().filter(|d| !d.steered).collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i + 1 < shown.len() {
            let (u, a) = (shown[i], shown[i + 1]);
            if u.role == Role::User && a.role == Role::Assistant {
                out.push((u, a));
                i += 2;
            } else {
                i += 1;
            }
        }
        out
    }
}

/// A title from the first question: its first line, capped.
pub fn default_title(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut t: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        t.push('…');
    }
    t
}

/// Trim and check a new title.
pub fn clean_title(title: &str) -> Result<String, SessionError> {
    let t = title.trim();
    if t.is_empty() {
        return Err(SessionError::EmptyTitle);
    }
    Ok(t.chars().take(MAX_TITLE_CHARS).collect())
}

/// What the sidebar lists for one stored session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionMeta {
    pub id: String,
    pub title: String,
    pub updated: String,
    pub pinned: bool,
    pub private: bool,
    pub provider: String,
    pub model: String,
    pub exchanges: usize,
}

/// Just the fields listing and pruning need, so a listing does not parse
/// whole transcripts.
#[derive(Deserialize)]
struct Header {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    updated: String,
    #[serde(default)]
    pinned: bool,
    #[serde(default)]
    private: bool,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    display: Vec<serde::de::IgnoredAny>,
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    pub fn new(dir: impl Into<PathBuf>) -> SessionStore {
        SessionStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file for `id`, after validating it.
    pub fn path(&self, id: &str) -> Result<PathBuf, SessionError> {
        if !valid_id(id) {
            return Err(SessionError::BadId(id.to_string()));
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    pub fn exists(&self, id: &str) -> Result<bool, SessionError> {
        Ok(self.path(id)?.is_file())
    }

    pub fn load(&self, id: &str) -> Result<Session, SessionError> {
        let path = self.path(id)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(SessionError::NotFound(id.to_string())),
            Err(source) => return Err(SessionError::Io { path, source }),
        };
        let s: Session = serde_json::from_str(&text).map_err(|e| SessionError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if s.format_version != FORMAT_VERSION {
            return Err(SessionError::Corrupt {
                path,
                message: format!(
                    "format_version {} (this build reads {FORMAT_VERSION})",
                    s.format_version
                ),
            });
        }
        if s.id != id {
            return Err(SessionError::Corrupt {
                path,
                message: format!("the file names session {:?}", s.id),
            });
        }
        Ok(s)
    }

    /// Write the session atomically (0600 in a 0700 directory). An empty
    /// session is never written. Returns whether a file was written.
    pub fn save(&self, s: &Session) -> Result<bool, SessionError> {
        if s.is_empty() {
            return Ok(false);
        }
        let path = self.path(&s.id)?;
        ensure_dir(&self.dir, 0o700)?;
        let bytes = serde_json::to_vec_pretty(s).map_err(|e| SessionError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&path, &bytes, 0o600)?;
        Ok(true)
    }

    /// Every readable session, pinned first, then newest first. Unreadable
    /// files are skipped with a warning (never deleted).
    pub fn list(&self) -> Result<Vec<SessionMeta>, SessionError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(SessionError::Io {
                    path: self.dir.clone(),
                    source,
                })
            }
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if !valid_id(id) {
                continue;
            }
            let parsed = std::fs::read_to_string(e.path())
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Header>(&t).map_err(|e| e.to_string()));
            match parsed {
                Ok(h) if h.id == id => out.push(SessionMeta {
                    id: h.id,
                    title: h.title,
                    updated: h.updated,
                    pinned: h.pinned,
                    private: h.private,
                    provider: h.provider,
                    model: h.model,
                    exchanges: h.display.len() / 2,
                }),
                Ok(_) => tracing::warn!(file = %e.path().display(), "session file names another id; skipped"),
                Err(err) => {
                    tracing::warn!(file = %e.path().display(), error = %err, "unreadable session file; skipped")
                }
            }
        }
        out.sort_by(|a, b| {
            b.pinned
                .cmp(&a.pinned)
                .then(b.updated.cmp(&a.updated))
                .then(b.id.cmp(&a.id))
        });
        Ok(out)
    }

    /// Keep the `keep` most recently updated unpinned sessions; pinned ones
    /// are exempt and uncounted. `protect` (the session being saved) is
    /// never pruned. Returns the ids removed.
    pub fn prune(&self, keep: usize, protect: &str) -> Result<Vec<String>, SessionError> {
        let unpinned: Vec<SessionMeta> = self.list()?.into_iter().filter(|m| !m.pinned).collect();
        let mut removed = Vec::new();
        for m in unpinned.iter().skip(keep) {
            if m.id == protect {
                continue;
            }
            self.delete_file(&m.id)?;
            removed.push(m.id.clone());
        }
        Ok(removed)
    }

    /// Remove a session's file (its chat chunks are the caller's business).
    pub fn delete_file(&self, id: &str) -> Result<bool, SessionError> {
        let path = self.path(id)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(SessionError::Io { path, source }),
        }
    }

    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<Session, SessionError> {
        let mut s = self.load(id)?;
        s.pinned = pinned;
        self.save(&s)?;
        Ok(s)
    }

    /// Rename a stored session; returns the cleaned title.
    pub fn rename(&self, id: &str, title: &str) -> Result<String, SessionError> {
        let title = clean_title(title)?;
        let mut s = self.load(id)?;
        s.title = title.clone();
        self.save(&s)?;
        Ok(title)
    }
}

#[cfg(test)]
mod tests;
