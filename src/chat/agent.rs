//! The agent handle: its plain dependencies, the running-turn registry
//! (each turn's stop switch; a turn is registered by
//! [`ChatAgent::begin_turn`] before its worker starts), the brand-new
//! sessions that have no file yet, the pending confirmations, and the
//! human-side session operations (new, resume, pin, rename, delete, switch
//! model, stop — the one rollback path —, confirm).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::cancel::Cancel;
use crate::kb::{Actor, Kb};
use crate::paths::JarvisHome;

use super::indexer::Indexer;
use super::models::{validate_switch, ProviderSource};
use super::session::{clean_title, Session, SessionMeta, SessionStore};
use super::tools::{ConfirmAction, PendingAction, PendingKind, ToolDeps};
use super::{history, session_events, ChatError, SharedSession};

/// What [`ChatAgent::rename`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// The title as cleaned and saved.
    pub title: String,
    /// Set when the rename's event could not be added to the history.
    pub history_warning: Option<String>,
}

/// Knobs from `[chat]`.
#[derive(Debug, Clone)]
pub struct ChatSettings {
    pub response_style: String,
    pub compact_after_tokens: usize,
    pub compact_keep_exchanges: usize,
    /// Model requests that may ask for tools in one turn before the turn is
    /// ended with a clear message.
    pub max_tool_rounds: usize,
    /// Hits per search.
    pub search_results: usize,
    /// `kb_only` of brand-new sessions.
    pub default_kb_only: bool,
    /// Output cap of one model step (tokens), sent to the server and
    /// watched as the output streams (a server may ignore it).
    pub max_output_tokens: u32,
    /// Wall-clock budget of one turn, tool calls included.
    pub turn_timeout: std::time::Duration,
    /// Limits of a research run (`[research]`).
    pub research: super::research::ResearchSettings,
    /// Long-term memory: auto-accept and the summary's budget.
    pub memory: crate::memory::MemorySettings,
}

/// Default cap on tool rounds per turn. A real question rarely needs more
/// than a handful (search, read, maybe search again); twelve leaves room for
/// a thorough one while ending a model that loops on tools before it spends
/// real money.
pub const DEFAULT_MAX_TOOL_ROUNDS: usize = 12;

/// Default output cap of one step: a long answer is 1,500–3,000 tokens; a
/// step that needs more than this is a model that lost the thread.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4096;

/// Default wall-clock budget of one turn. A thorough turn on a slow local
/// model (a dozen tool rounds, a long answer) takes a few minutes; ten is
/// past anything useful, and the runaway watch ends a looping model far
/// sooner.
pub const DEFAULT_TURN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

impl Default for ChatSettings {
    fn default() -> Self {
        ChatSettings {
            response_style: String::new(),
            compact_after_tokens: 12_000,
            compact_keep_exchanges: 6,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            search_results: 8,
            default_kb_only: true,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            turn_timeout: DEFAULT_TURN_TIMEOUT,
            research: super::research::ResearchSettings::default(),
            memory: crate::memory::MemorySettings::default(),
        }
    }
}

/// Everything the agent is built from. No App: whoever composes passes
/// these in.
pub struct ChatDeps {
    pub tools: ToolDeps,
    pub providers: Arc<dyn ProviderSource>,
    /// For the prompts directory.
    pub home: JarvisHome,
    pub sessions: SessionStore,
    pub settings: ChatSettings,
}

pub(crate) struct Running {
    pub session: SharedSession,
    pub cancel: Cancel,
    pub generation: u64,
}

/// A confirmation still waiting for the human, as a page shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingView {
    pub token: String,
    pub description: String,
    pub action: ConfirmAction,
}

/// A turn taken out of the registry with its switch flipped, waiting for
/// [`ChatAgent::finish_stop`] to roll it back.
pub struct StopTicket {
    id: String,
    running: Running,
}

/// What a stop did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopOutcome {
    /// False when a finished reply won the race and stands.
    pub rolled_back: bool,
}

/// How many unsaved new sessions are remembered (each "New chat" makes one;
/// only the newest few can still receive a first message).
const UNSAVED_KEEP: usize = 32;

pub struct ChatAgent {
    pub(crate) deps: ChatDeps,
    /// Brand-new sessions with no file yet (saved by their first turn).
    unsaved: Mutex<Vec<SharedSession>>,
    pub(crate) settings: RwLock<ChatSettings>,
    pub(crate) running: Mutex<HashMap<String, Running>>,
    pub(crate) pending: Mutex<HashMap<String, PendingAction>>,
    pub(crate) indexer: Indexer,
    /// `logs/chat.log`: a line per turn and per failed tool call.
    pub(crate) chatlog: super::chatlog::ChatLog,
    /// Messages queued per session while turns run.
    pub(crate) queues: super::queue::Queues,
    /// Pinned context, added to every turn.
    pub(crate) pins: super::pins::Pins,
    next_generation: AtomicU64,
}

pub(crate) use crate::lock::lock;

impl ChatAgent {
    pub fn new(deps: ChatDeps) -> ChatAgent {
        let settings = RwLock::new(deps.settings.clone());
        let indexer = Indexer::new(deps.tools.kb.clone(), deps.sessions.clone());
        let chatlog = super::chatlog::ChatLog::new(deps.home.clone());
        let state = deps.home.path(crate::paths::Dir::State);
        ChatAgent {
            indexer,
            chatlog,
            queues: super::queue::Queues::new(state.join("queues")),
            pins: super::pins::Pins::new(state.join("pins.json")),
            deps,
            settings,
            running: Mutex::new(HashMap::new()),
            unsaved: Mutex::new(Vec::new()),
            pending: Mutex::new(HashMap::new()),
            next_generation: AtomicU64::new(1),
        }
    }

    pub fn kb(&self) -> &Arc<Kb> {
        &self.deps.tools.kb
    }

    pub fn store(&self) -> &SessionStore {
        &self.deps.sessions
    }

    pub fn settings(&self) -> ChatSettings {
        crate::lock::read(&self.settings).clone()
    }

    /// Change settings for the next turn (e.g. the response style).
    pub fn set_settings(&self, s: ChatSettings) {
        *crate::lock::write(&self.settings) = s;
    }

    /// A fresh, unsaved session on `spec` (the default when `None`).
    pub fn new_session(&self, spec: Option<&str>, kb_only: Option<bool>) -> Result<Session, ChatError> {
        self.new_session_as(spec, kb_only, None)
    }

    /// [`ChatAgent::new_session`] with a profile: its model unless `spec`
    /// names one.
    pub fn new_session_as(
        &self,
        spec: Option<&str>,
        kb_only: Option<bool>,
        profile: Option<&str>,
    ) -> Result<Session, ChatError> {
        let profile = match profile.filter(|p| !p.is_empty()) {
            Some(id) => Some(self.profile(id)?),
            None => None,
        };
        let spec = spec
            .map(str::to_string)
            .or_else(|| profile.as_ref().and_then(|p| p.model.clone()))
            .unwrap_or_else(|| self.deps.providers.default_spec());
        let (provider, model) = self.deps.providers.resolve(&spec)?;
        let mut s = Session::new(&provider, &model, kb_only.unwrap_or(self.settings().default_kb_only));
        if let Some(p) = profile {
            s.profile = p.id;
        }
        Ok(s)
    }

    /// Every profile, and the files that could not be read.
    pub fn profiles(&self) -> super::profiles::Catalogue {
        super::profiles::load(&self.deps.home)
    }

    /// The profile `id`.
    pub fn profile(&self, id: &str) -> Result<super::profiles::Profile, ChatError> {
        self.profiles()
            .get(id)
            .cloned()
            .ok_or_else(|| ChatError::NoProfile(id.to_string()))
    }

    /// Give a session the profile `id` ("" for none) from its next turn,
    /// with the profile's model when it names one (validated like any
    /// model switch: a private session never moves to a cloud model).
    /// Returns the profile, `None` for none.
    pub fn set_profile(
        &self,
        session: &SharedSession,
        id: &str,
    ) -> Result<Option<super::profiles::Profile>, ChatError> {
        let profile = match id {
            "" => None,
            id => Some(self.profile(id)?),
        };
        let mut s = lock(session);
        if let Some(m) = profile.as_ref().and_then(|p| p.model.as_deref()) {
            let (provider, model) = validate_switch(self.deps.providers.as_ref(), s.private, m)?;
            if s.provider != provider || s.model != model {
                s.provider = provider;
                s.model = model;
                s.served_model = None;
            }
        }
        s.profile = profile.as_ref().map(|p| p.id.clone()).unwrap_or_default();
        if !s.is_empty() {
            self.deps.sessions.save(&s)?;
        }
        Ok(profile)
    }

    /// The session to continue: the live object when a turn is running on
    /// it (a disk copy would be stale), else the file. A private session
    /// is refused under a cloud model.
    pub fn resume(&self, id: &str) -> Result<(SharedSession, bool), ChatError> {
        if let Some(r) = lock(&self.running).get(id) {
            return Ok((r.session.clone(), true));
        }
        let s = self.deps.sessions.load(id)?;
        self.check_resume(&s)?;
        Ok((Arc::new(Mutex::new(s)), false))
    }

    /// The session `id` wherever it lives: the running turn's live object,
    /// the file, or a new chat not saved yet (`NoConversation` when none).
    /// The flag says whether a turn is running on it.
    pub fn find(&self, id: &str) -> Result<(SharedSession, bool), ChatError> {
        match self.resume(id) {
            Err(ChatError::Session(super::SessionError::NotFound(_))) => match self.unsaved(id) {
                Some(s) => Ok((s, false)),
                None => Err(ChatError::NoConversation(id.to_string())),
            },
            found => found,
        }
    }

    /// Refuse a private session under a cloud model.
    pub fn check_resume(&self, s: &Session) -> Result<(), ChatError> {
        let spec = s.model_spec();
        if s.private && self.deps.providers.is_cloud(&spec) {
            return Err(ChatError::PrivateUnderCloud(s.id.clone(), spec));
        }
        Ok(())
    }

    pub fn list(&self) -> Result<Vec<SessionMeta>, ChatError> {
        Ok(self.deps.sessions.list()?)
    }

    /// Remember a brand-new session (no file until its first turn saves
    /// it), so the first message can find it.
    pub fn add_unsaved(&self, s: SharedSession) {
        let mut unsaved = lock(&self.unsaved);
        unsaved.push(s);
        let n = unsaved.len();
        if n > UNSAVED_KEEP {
            unsaved.drain(..n - UNSAVED_KEEP);
        }
    }

    /// The unsaved new session `id`, if it is remembered.
    pub fn unsaved(&self, id: &str) -> Option<SharedSession> {
        lock(&self.unsaved).iter().find(|s| lock(s).id == id).cloned()
    }

    /// Forget an unsaved session (deleted, or saved by its first turn).
    pub fn forget_unsaved(&self, id: &str) {
        lock(&self.unsaved).retain(|s| lock(s).id != id);
    }

    /// Ids with a turn in flight.
    pub fn busy(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.running).keys().cloned().collect();
        v.sort();
        v
    }

    pub fn is_busy(&self, id: &str) -> bool {
        lock(&self.running).contains_key(id)
    }

    /// Move a session to another model from its next turn. Validated the
    /// same way every time; `served_model` is cleared (a routed pick belongs
    /// to the model being replaced).
    pub fn switch_model(&self, session: &SharedSession, spec: &str) -> Result<String, ChatError> {
        let mut s = lock(session);
        let (provider, model) = validate_switch(self.deps.providers.as_ref(), s.private, spec)?;
        if s.provider != provider || s.model != model {
            s.provider = provider;
            s.model = model;
            s.served_model = None;
            if !s.is_empty() {
                self.deps.sessions.save(&s)?;
            }
        }
        Ok(s.model_spec())
    }

    /// Set a session's knowledge-source mode from its next turn.
    pub fn set_kb_only(&self, session: &SharedSession, kb_only: bool) -> Result<(), ChatError> {
        let mut s = lock(session);
        s.kb_only = kb_only;
        if !s.is_empty() {
            self.deps.sessions.save(&s)?;
        }
        Ok(())
    }

    pub fn pin(&self, id: &str, pinned: bool) -> Result<(), ChatError> {
        // The live session first (a running turn's commit must not write
        // the old value back), undone if the file cannot take it.
        let live = lock(&self.running).get(id).map(|r| r.session.clone());
        let before = live.as_ref().map(|s| std::mem::replace(&mut lock(s).pinned, pinned));
        if let Err(e) = self.deps.sessions.set_pinned(id, pinned) {
            if let (Some(s), Some(before)) = (live, before) {
                lock(&s).pinned = before;
            }
            return Err(e.into());
        }
        Ok(())
    }

    /// Rename (trimmed, ≤ 120 characters, non-empty): the file, the live
    /// session if a turn is running, and then — in the background — the
    /// indexed chat chunks' titles (metadata only). The rename is `by`'s
    /// event in the history (see [`super::session_events`]).
    pub fn rename(&self, id: &str, title: &str, by: &Actor) -> Result<Renamed, ChatError> {
        self.rename_recorded(id, title, &|new| session_events::record(self.kb(), new, by))
    }

    /// [`ChatAgent::rename`], its event appended by `record` (which
    /// returns the warning when it could not be): an undo appends it with
    /// the cause that names the event it undoes.
    pub fn rename_recorded(
        &self,
        id: &str,
        title: &str,
        record: &dyn Fn(crate::kb::NewRecordEvent) -> Option<String>,
    ) -> Result<Renamed, ChatError> {
        let title = clean_title(title)?;
        let was = self.deps.sessions.load(id)?;
        // As in `pin`: the live session first, undone when the file cannot
        // be written (a full disk), so a running turn never saves a rename
        // that was reported as failed.
        let live = lock(&self.running).get(id).map(|r| r.session.clone());
        let before = live
            .as_ref()
            .map(|s| std::mem::replace(&mut lock(s).title, title.clone()));
        if let Err(e) = self.deps.sessions.rename(id, &title) {
            if let (Some(s), Some(before)) = (live, before) {
                let mut s = lock(&s);
                if s.title == title {
                    s.title = before;
                }
            }
            return Err(e.into());
        }
        // The chunks follow on the indexer's thread, after any pass in
        // flight — a rename never waits for an embedding.
        self.indexer.retitle(id);
        let history_warning = (was.title != title)
            .then(|| record(session_events::renamed(id, &was.title, &title, was.private)))
            .flatten();
        Ok(Renamed { title, history_warning })
    }

    /// Delete a session's file and its chat chunks; refused mid-turn. The
    /// deletion is `by`'s event in the history; returns the warning when
    /// that event could not be recorded.
    pub fn delete(&self, id: &str, by: &Actor) -> Result<Option<String>, ChatError> {
        self.deps.sessions.path(id)?;
        if self.is_busy(id) {
            return Err(ChatError::Busy(id.to_string()));
        }
        // Its title and visibility, for the event (unknown counts as private).
        let (title, private) = match self.deps.sessions.load(id) {
            Ok(s) => (s.title, s.private),
            Err(_) => (String::new(), true),
        };
        // A pass that read the session before the delete would re-add its
        // chunks after it.
        let _x = self.indexer.exclusive();
        let existed = self.deps.sessions.delete_file(id)?;
        let chunks = history::delete_chunks(self.kb(), id)?;
        if !existed && chunks == 0 {
            return Err(super::SessionError::NotFound(id.to_string()).into());
        }
        self.clear_pending_for(id);
        self.queues.forget(id);
        Ok(session_events::record(
            self.kb(),
            session_events::deleted(id, &title, private),
            by,
        ))
    }

    /// Stop a running turn and roll it back, unless its reply already
    /// landed. Never waits for the worker: the stop switch closes any
    /// request in flight, and the commit lock decides the race.
    pub fn stop(&self, id: &str) -> Result<StopOutcome, ChatError> {
        let ticket = self.begin_stop(id)?;
        self.finish_stop(ticket)
    }

    /// The first half of [`ChatAgent::stop`], which never waits: take the
    /// turn out of the registry and flip its switch (closing any model
    /// request in flight). From here the worker writes nothing — it checks
    /// the switch inside the commit lock — and the ticket's holder owns the
    /// rollback.
    pub fn begin_stop(&self, id: &str) -> Result<StopTicket, ChatError> {
        let Some(running) = lock(&self.running).remove(id) else {
            return Err(ChatError::NotRunning(id.to_string()));
        };
        running.cancel.cancel();
        Ok(StopTicket {
            id: id.to_string(),
            running,
        })
    }

    /// The second half of [`ChatAgent::stop`]: under the commit lock (it may
    /// wait for a worker mid-save), roll the turn back unless its reply
    /// already landed. The one rollback path.
    pub fn finish_stop(&self, ticket: StopTicket) -> Result<StopOutcome, ChatError> {
        let StopTicket { id, running } = ticket;
        let id = id.as_str();
        let mut s = lock(&running.session);
        let rolled_back = if s.ends_with_reply() {
            false
        } else {
            let undone = s.rollback_turn();
            if undone {
                if s.is_empty() {
                    self.deps.sessions.delete_file(&s.id)?;
                } else {
                    self.deps.sessions.save(&s)?;
                }
            }
            undone
        };
        // What a rolled-back turn took from the queue goes back to its
        // front, and the queue waits for the human either way. Under the
        // commit lock, like the worker's settling of what it took.
        self.queues.on_stop(id);
        drop(s);
        self.clear_pending_for(id);
        Ok(StopOutcome { rolled_back })
    }

    /// Register a turn; refused when one is already running on the session.
    pub(crate) fn register(&self, session: &SharedSession, cancel: &Cancel) -> Result<(String, u64), ChatError> {
        let id = lock(session).id.clone();
        let mut running = lock(&self.running);
        if running.contains_key(&id) {
            return Err(ChatError::Busy(id));
        }
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        running.insert(
            id.clone(),
            Running {
                session: session.clone(),
                cancel: cancel.clone(),
                generation,
            },
        );
        Ok((id, generation))
    }

    /// Deregister, but only if the registered turn is still this one.
    pub(crate) fn deregister(&self, id: &str, generation: u64) {
        let mut running = lock(&self.running);
        if running.get(id).is_some_and(|r| r.generation == generation) {
            running.remove(id);
        }
    }

    /// Confirmations still waiting for the human, for one session.
    pub fn pending_for(&self, session_id: &str) -> Vec<PendingView> {
        lock(&self.pending)
            .values()
            .filter(|p| p.session_id == session_id)
            .map(|p| PendingView {
                token: p.token.clone(),
                description: p.description.clone(),
                action: p.action(),
            })
            .collect()
    }

    pub fn clear_pending_for(&self, session_id: &str) {
        lock(&self.pending).retain(|_, p| p.session_id != session_id);
    }

    /// The human's answer to one confirmation. Token possession is the
    /// capability; a token is used at most once. Removal deletes database
    /// entries only; an add reads the local file only now, through the
    /// same paper pipeline as `kb add` (a PDF in a private vault folder is
    /// stored private). Blocking: an add converts, maybe summarises, and
    /// embeds.
    pub fn confirm_action(&self, token: &str, confirmed: bool) -> Result<String, ChatError> {
        let Some(p) = lock(&self.pending).remove(token) else {
            return Err(ChatError::UnknownToken);
        };
        // The change is the agent's, made after this human confirmation.
        let actor = crate::kb::Actor::Agent {
            session: p.session_id.clone(),
            token: Some(token.to_string()),
        };
        match p.kind {
            PendingKind::Remove(doc) => {
                if !confirmed {
                    return Ok(format!("Kept \"{}\"; nothing was removed.", doc.title));
                }
                let n = self.kb().remove_document(&doc, &actor)?;
                Ok(format!(
                    "Removed {} chunks of \"{}\" from the knowledge base. No files were touched.",
                    n, doc.title
                ))
            }
            PendingKind::AddFile {
                request,
                allow_duplicate,
            } => {
                let path = request.input.label();
                if !confirmed {
                    return Ok(format!("Did not add {path}; the file was not read."));
                }
                let Some(papers) = self.deps.tools.papers.clone() else {
                    return Err(ChatError::Add(crate::ingest::paper::AddError::BadInput(format!(
                        "{path}: adding papers is not available here"
                    ))));
                };
                let r = papers
                    .add(&request, allow_duplicate, &actor, &crate::cancel::Cancel::new())
                    .map_err(ChatError::Add)?;
                Ok(match &r.skipped {
                    Some(why) => format!("Not added: {why}."),
                    None => super::tools::added_text(&r),
                })
            }
            PendingKind::McpCall {
                server,
                tool,
                arguments,
            } => {
                if !confirmed {
                    return Ok(format!(
                        "Did not call {tool} on the MCP server `{server}`; nothing was sent."
                    ));
                }
                let clients = self
                    .deps
                    .tools
                    .mcp
                    .clone()
                    .ok_or_else(|| ChatError::Mcp(crate::mcp_client::McpClientError::Unknown(server.clone())))?;
                let secrets = clients.spec(&server).map(|s| s.secrets()).unwrap_or_default();
                let out = clients.call(&server, &tool, &arguments);
                let shown = match &out {
                    Ok(r) => r.text.clone(),
                    Err(e) => e.to_string(),
                };
                self.chatlog.mcp_call(
                    &p.session_id,
                    &crate::mcp_client::exposed_name(&server, &tool),
                    &arguments,
                    &shown,
                    out.as_ref().map_or(true, |r| r.is_error),
                    &secrets,
                );
                let r = out.map_err(ChatError::Mcp)?;
                Ok(format!("{tool} on `{server}` answered:\n{}", r.text))
            }
        }
    }

    /// Index the history of every stored session the knowledge base lacks
    /// — exchanges a previous run saved but died before indexing. Runs in
    /// the background; [`ChatAgent::wait_for_history`] waits for it.
    pub fn catch_up_history(&self) {
        self.indexer.catch_up();
    }

    /// Block until chat-history indexing queued so far (after turns, and
    /// the catch-up) has finished.
    pub fn wait_for_history(&self) {
        self.indexer.wait_idle();
    }
}

impl ChatAgent {
    /// The system prompt's line about the file open in the editor: only
    /// for a file that still exists, and never a private draft's name to a
    /// cloud model (that name is the user's, like its text).
    pub(super) fn open_file_note(&self, context: &super::TurnContext, cloud: bool) -> Option<String> {
        let f = context.open_file.as_ref()?;
        let drafts = self.deps.tools.drafts.as_ref()?;
        let meta = match drafts.workspace.meta(&f.draft_id) {
            Ok(m) => m,
            Err(e) => {
                tracing::info!(draft = %f.draft_id, error = %e, "the file open in the editor is gone; not named to the model");
                return None;
            }
        };
        if let Err(e) = drafts.workspace.read_file(&f.draft_id, &f.filename) {
            tracing::info!(draft = %f.draft_id, error = %e, "the file open in the editor is gone; not named to the model");
            return None;
        }
        if cloud && meta.visibility == crate::drafts::Visibility::Private {
            return None;
        }
        Some(super::prompt::open_file_note(&f.draft_id, &f.filename))
    }
}
