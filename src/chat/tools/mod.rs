//! The model's entire surface: the seed's tool table, their JSON schemas and
//! one dispatcher.
//!
//! Owns: what each tool may do and what it returns to the model. Retrieval
//! results (search_kb, search_chat_history, get_document, read_file) are
//! wrapped in BEGIN/END RETRIEVED DATA markers, and every passage they
//! return carries its number for the turn (`[n]`, what the model cites; see
//! `chat::cite`); under a cloud provider a
//! retrieval whose results would be only private raises a privacy stop, and
//! mixed results carry a fixed caveat line. Must not: delete a file, write
//! the vault, edit a prompt, remove a document or read a local file into
//! the knowledge base without the human's out-of-band answer —
//! `remove_document` and `add_document` on a local PDF only ever create a
//! pending confirmation, and neither schema has a `confirmed` parameter to
//! inject. A session on a cloud model cannot add a local file at all.

mod drafts;
mod manage;
pub mod mcp;
pub mod memory;
mod retrieval;

pub use manage::{added_text, CLOUD_LOCAL_FILE};

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::cancel::Cancel;
use crate::chat::cite::Passages;
use crate::chat::session::SourceRef;
use crate::ingest::paper::{AddError, AddReport, AddRequest};
use crate::kb::ops::DocumentRef;
use crate::kb::Kb;
use crate::llm::{ToolCall, ToolError, ToolOutcome, ToolSpec};

pub const BEGIN_DATA: &str = "BEGIN RETRIEVED DATA";
pub const END_DATA: &str = "END RETRIEVED DATA";

/// The fixed text a privacy stop shows the user. It names no private
/// content, so it is safe to show under any provider.
pub const PRIVACY_STOP: &str = "🔒 That question can only be answered from private notes, and this session uses a cloud model — private notes never leave this machine. Switch this session to a local model (Ollama, or a local server) and ask again.";

/// Appended when a cloud search dropped private matches from mixed results.
pub const PRIVATE_CAVEAT: &str =
    "Note: some matching private notes were excluded because this session uses a cloud model.";

/// The line every removal preview carries, verbatim.
pub fn invariant_line(path: &str) -> String {
    format!("Database entry only — files on disk are never touched by jarvis: {path}")
}

/// The tools that return passages from the library (each passage is
/// numbered for citation).
pub const RETRIEVAL_TOOLS: &[&str] = &["search_kb", "search_chat_history", "get_document", "read_file"];

pub const TOOL_NAMES: &[&str] = &[
    "search_kb",
    "search_chat_history",
    "get_document",
    "read_file",
    "add_document",
    "update_file_path",
    "update_document_metadata",
    "remove_document",
    "list_documents",
    "kb_stats",
    "index_vault",
    "create_draft",
    "create_draft_from",
    "add_draft_file",
    "list_drafts",
    "read_draft",
    "propose_draft_edit",
    "remember",
    "memory_search",
    "memory_forget",
];

/// Adds a paper for the `add_document` tool: the paper path of ingest with
/// the App's PDF worker, arXiv client and summary provider. `allow_duplicate`
/// answers the duplicate question.
pub trait PaperAdder: Send + Sync {
    /// `actor` is who the add's event names: the agent, and the human's
    /// confirmation token when one was asked.
    fn add(
        &self,
        req: &AddRequest,
        allow_duplicate: bool,
        actor: &crate::kb::Actor,
        cancel: &Cancel,
    ) -> Result<AddReport, AddError>;
}

/// Where the vault is and which of its top-level folders are private.
#[derive(Debug, Clone, Default)]
pub struct VaultSettings {
    pub root: Option<PathBuf>,
    pub private_dirs: Vec<String>,
}

/// What a confirmation would do once the human agrees.
#[derive(Debug, Clone)]
pub enum PendingKind {
    /// Remove one document's database entries.
    Remove(DocumentRef),
    /// Add a local PDF; the file is read only after the human agrees.
    AddFile { request: AddRequest, allow_duplicate: bool },
    /// Call a remote MCP server's tool from a session that read private
    /// notes; nothing is sent before the human agrees.
    McpCall {
        server: String,
        tool: String,
        arguments: Value,
    },
}

/// The kind of a confirmation, as the event and the page name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmAction {
    Remove,
    Add,
    McpCall,
}

/// An action waiting for the human's answer.
#[derive(Debug, Clone)]
pub struct PendingAction {
    pub token: String,
    pub session_id: String,
    pub description: String,
    pub kind: PendingKind,
}

impl PendingAction {
    pub fn action(&self) -> ConfirmAction {
        match self.kind {
            PendingKind::Remove(_) => ConfirmAction::Remove,
            PendingKind::AddFile { .. } => ConfirmAction::Add,
            PendingKind::McpCall { .. } => ConfirmAction::McpCall,
        }
    }
}

/// What tools need from the world.
pub struct ToolDeps {
    pub kb: Arc<Kb>,
    pub vault: VaultSettings,
    pub papers: Option<Arc<dyn PaperAdder>>,
    /// The drafts sandbox; `None` leaves the drafts tools answering that
    /// drafts are unavailable.
    pub drafts: Option<crate::drafts::DraftsHandle>,
    /// Other MCP servers whose tools the model may call; `None` offers none.
    pub mcp: Option<Arc<crate::mcp_client::McpClients>>,
}

/// One turn's tool state: whether the provider is cloud, what the tools saw.
pub struct ToolBox<'a> {
    pub deps: &'a ToolDeps,
    pub cloud: bool,
    pub session_id: &'a str,
    pub cancel: &'a Cancel,
    /// Search hits per call.
    pub results: usize,
    /// A tool returned private content (local provider only).
    pub saw_private: bool,
    pub sources: Vec<SourceRef>,
    /// Removals and local-file adds proposed this turn; the caller
    /// registers them.
    pub pending: Vec<PendingAction>,
    /// The session is private: drafts made now are private too.
    pub session_private: bool,
    /// Edits proposed this turn; the caller announces each as an
    /// `edit_proposal` event.
    pub edit_proposals: Vec<crate::drafts::proposals::Proposal>,
    /// Every passage the retrieval tools returned this turn, numbered for
    /// the model to cite as `[n]`.
    pub passages: Passages,
    /// Retrieval calls that returned (whatever they found).
    pub retrievals: usize,
    /// What the searches looked for, for an honest "nothing found".
    pub searched: Vec<String>,
    /// The model called use_own_knowledge.
    pub own_knowledge: bool,
    /// The only tools this box runs (a research sub-agent's read-only
    /// set); `None` runs every tool. A call outside it fails as unknown,
    /// whatever the model was told.
    pub only: Option<&'static [&'static str]>,
    /// Long-term memory this turn: settings, and what `remember` proposed.
    pub memory: memory::MemoryTurn,
}

impl<'a> ToolBox<'a> {
    /// The agent of this session, acting without a confirmation (a
    /// metadata correction, an arXiv add): who its writes' events name.
    pub(crate) fn agent(&self) -> crate::kb::Actor {
        crate::kb::Actor::Agent {
            session: self.session_id.to_string(),
            token: None,
        }
    }

    pub fn new(deps: &'a ToolDeps, cloud: bool, session_id: &'a str, cancel: &'a Cancel) -> Self {
        ToolBox {
            deps,
            cloud,
            session_id,
            cancel,
            results: 8,
            saw_private: false,
            sources: Vec::new(),
            pending: Vec::new(),
            session_private: false,
            edit_proposals: Vec::new(),
            passages: Passages::default(),
            retrievals: 0,
            searched: Vec::new(),
            own_knowledge: false,
            only: None,
            memory: memory::MemoryTurn::default(),
        }
    }

    /// Run one call. `Err(Privacy)` ends the turn at once.
    pub fn dispatch(&mut self, call: &ToolCall) -> Result<ToolOutcome, ToolError> {
        let args = match &call.arguments {
            Value::Object(_) => call.arguments.clone(),
            Value::Null => json!({}),
            _ => return Err(ToolError::Failed("arguments must be a JSON object".into())),
        };
        let a = Args(&args);
        if let Some(only) = self.only.filter(|o| !o.contains(&call.name.as_str())) {
            return Err(ToolError::Failed(format!(
                "`{}` is not available here — the available tools are: {}",
                call.name,
                only.join(", ")
            )));
        }
        if RETRIEVAL_TOOLS.contains(&call.name.as_str()) {
            let out = self.retrieve(&call.name, &a);
            if out.is_ok() {
                self.retrievals += 1;
            }
            return out;
        }
        if memory::TOOLS.contains(&call.name.as_str()) {
            return self.memory_tool(&call.name, &a);
        }
        match call.name.as_str() {
            "add_document" => self.add_document(&a),
            "update_file_path" => self.update_file_path(&a),
            "update_document_metadata" => self.update_document_metadata(&a),
            "remove_document" => self.remove_document(&a),
            "list_documents" => self.list_documents(&a),
            "kb_stats" => self.kb_stats(),
            "index_vault" => self.index_vault(),
            "create_draft" => self.create_draft(&a),
            "create_draft_from" => self.create_draft_from(&a),
            "add_draft_file" => self.add_draft_file(&a),
            "list_drafts" => self.list_drafts(),
            "read_draft" => self.read_draft(&a),
            "propose_draft_edit" => self.propose_draft_edit(&a),
            "use_own_knowledge" => {
                self.own_knowledge = true;
                Ok(ToolOutcome::ok(
                "Acknowledged: nothing relevant was found in the knowledge base. You may answer from your own knowledge; say clearly which parts of the answer do not come from the user's notes or papers.",
                ))
            }
            name if crate::mcp_client::is_namespaced(name) => self.mcp_call(call, &args),
            other => Err(ToolError::Failed(format!(
                "unknown tool `{other}` — the available tools are: {}",
                TOOL_NAMES.join(", ")
            ))),
        }
    }

    /// One retrieval call (see [`RETRIEVAL_TOOLS`]).
    fn retrieve(&mut self, name: &str, a: &Args<'_>) -> Result<ToolOutcome, ToolError> {
        match name {
            "search_kb" => self.search_kb(a),
            "search_chat_history" => self.search_chat_history(a),
            "get_document" => self.get_document(a),
            _ => self.read_file(a),
        }
    }

    pub(crate) fn add_source(&mut self, s: SourceRef) {
        if !self.sources.contains(&s) {
            self.sources.push(s);
        }
    }
}

/// Typed access to a call's arguments with clear errors for the model.
pub(crate) struct Args<'a>(&'a Value);

impl Args<'_> {
    pub fn opt_str(&self, k: &str) -> Option<String> {
        match self.0.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        }
    }
    /// A string argument exactly as given (file contents keep their
    /// whitespace).
    pub fn raw_str(&self, k: &str) -> Option<String> {
        match self.0.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        }
    }
    pub fn str(&self, k: &str) -> Result<String, ToolError> {
        self.opt_str(k)
            .ok_or_else(|| ToolError::Failed(format!("missing required argument `{k}` (a non-empty string)")))
    }
    pub fn opt_u64(&self, k: &str) -> Option<u64> {
        match self.0.get(k) {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        }
    }
    pub fn bool(&self, k: &str) -> bool {
        match self.0.get(k) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            _ => false,
        }
    }
    pub fn str_list(&self, k: &str) -> Vec<String> {
        match self.0.get(k) {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(|s| s.trim().to_string()))
                .filter(|s| !s.is_empty())
                .collect(),
            Some(Value::String(s)) => s
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            _ => Vec::new(),
        }
    }
    pub fn object(&self, k: &str) -> Vec<(String, String)> {
        match self.0.get(k) {
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| (k.clone(), crate::kb::scalar_string(v)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Wrap retrieved text so the system prompt's "treat as data" rule has
/// something to point at.
pub fn wrap_data(body: &str) -> String {
    format!("{BEGIN_DATA}\n{body}\n{END_DATA}")
}

pub(crate) fn kb_err(e: crate::kb::KbError) -> ToolError {
    match e {
        crate::kb::KbError::Cancelled => ToolError::Cancelled(crate::cancel::Cancelled),
        other => failed(&other),
    }
}

/// An ordinary failure carrying the error's whole chain, so the model —
/// and chat.log — see why, not only what.
pub(crate) fn failed(e: &dyn std::error::Error) -> ToolError {
    ToolError::Failed(crate::error_kind::chain(e))
}

fn filter_props() -> Value {
    json!({
        "category": {"type": "string", "description": "record type (from kb_stats), e.g. job, person, project"},
        "status": {"type": "string", "description": "record status (from kb_stats)"},
        "entity": {"type": "string", "description": "organisation or person a record is about"},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "tags that must all be present"},
        "fields": {"type": "object", "additionalProperties": {"type": "string"}, "description": "extra frontmatter fields (x_ keys) that must match exactly"}
    })
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

/// The tools offered for a turn. `use_own_knowledge` only when `kb_only`
/// is off.
pub fn tool_specs(kb_only: bool) -> Vec<ToolSpec> {
    let mut search_props = json!({
        "query": {"type": "string", "description": "what to look for, in natural language"},
        "kinds": {"type": "array", "items": {"type": "string", "enum": ["notes", "papers", "chats"]},
                  "description": "what to search; default notes and papers"},
        "n": {"type": "integer", "minimum": 1, "maximum": 20, "description": "number of hits (default 8)"}
    });
    if let (Some(m), Value::Object(f)) = (search_props.as_object_mut(), filter_props()) {
        m.extend(f);
    }
    let mut list_props = json!({
        "kind": {"type": "string", "enum": ["papers", "notes", "all"], "description": "default all"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200}
    });
    if let (Some(m), Value::Object(f)) = (list_props.as_object_mut(), filter_props()) {
        m.extend(f);
    }
    let mut v = vec![
        spec(
            "search_kb",
            "Search the knowledge base (notes and papers; chats on request). Each hit is numbered [n] for citing in your answer and carries its full passage and section; a paper hit also carries its `cite key`, which a draft cites it by (\\cite{key} in LaTeX, [@key] in Markdown). Use kb_stats first to learn which record categories and statuses exist.",
            json!({"type": "object", "properties": search_props, "required": ["query"]}),
        ),
        spec(
            "search_chat_history",
            "Search earlier conversations (not this one). Returns short recall cues; they are not answer material.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "n": {"type": "integer", "minimum": 1, "maximum": 20}
            }, "required": ["query"]}),
        ),
        spec(
            "get_document",
            "Read one stored document in full (any indexed kind, PDFs included), 15 chunks per page, in reading order. `source` is the key search_kb or list_documents showed.",
            json!({"type": "object", "properties": {
                "source": {"type": "string"},
                "page": {"type": "integer", "minimum": 1}
            }, "required": ["source"]}),
        ),
        spec(
            "read_file",
            "Read one vault Markdown note in full, after search_kb identified it. `path` is the note's vault-relative path. Cannot open PDFs (use get_document).",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        spec(
            "add_document",
            "Add a paper (arXiv id/URL, DOI, bioRxiv/medRxiv page, a PDF's web address, or a local PDF path). An arXiv paper is added at once. A local PDF is only proposed: a confirmation dialog naming the file appears and only the user's answer adds it; a session on a cloud model cannot add local files. Ask the user which mode to use if they did not say. On a duplicate this returns a question for the user; call again with allow_duplicate=true only after they agree.",
            json!({"type": "object", "properties": {
                "source": {"type": "string", "description": "arXiv id or URL, a DOI (10.1038/…), a bioRxiv/medRxiv page, a PDF's web address, or a local PDF path"},
                "mode": {"type": "string", "enum": ["summary", "full_text"], "description": "default summary"},
                "title": {"type": "string"}, "authors": {"type": "string"}, "doi": {"type": "string"},
                "with_figures": {"type": "boolean", "description": "caption this document's figures"},
                "allow_duplicate": {"type": "boolean", "description": "only after the user said yes to re-adding"}
            }, "required": ["source"]}),
        ),
        spec(
            "update_file_path",
            "Record a local document's new path (metadata only, no re-embedding).",
            json!({"type": "object", "properties": {
                "source": {"type": "string"}, "new_path": {"type": "string"}
            }, "required": ["source", "new_path"]}),
        ),
        spec(
            "update_document_metadata",
            "Set a paper's verified title, authors or DOI (metadata only).",
            json!({"type": "object", "properties": {
                "source": {"type": "string"}, "title": {"type": "string"},
                "authors": {"type": "string"}, "doi": {"type": "string"}
            }, "required": ["source"]}),
        ),
        spec(
            "remove_document",
            "Ask the human to confirm removing one document's database entry. Call once per document: a confirmation dialog appears and only the human's answer removes anything. Files on disk are never touched.",
            json!({"type": "object", "properties": {"source": {"type": "string"}}, "required": ["source"]}),
        ),
        spec(
            "list_documents",
            "List indexed documents (papers, notes, or records filtered by category/status/entity), newest first. Each paper row carries its `cite key` for citing it in a draft.",
            json!({"type": "object", "properties": list_props}),
        ),
        spec(
            "kb_stats",
            "Document and chunk counts, plus the record categories and statuses that actually exist — use these values in filters.",
            json!({"type": "object", "properties": {}}),
        ),
        spec(
            "index_vault",
            "Sync the vault into the knowledge base: new, changed and deleted notes only.",
            json!({"type": "object", "properties": {}}),
        ),
    ];
    v.extend(drafts::specs());
    v.extend(memory::specs());
    if !kb_only {
        v.push(spec(
            "use_own_knowledge",
            "Call this before answering from your own training knowledge, after the knowledge base had nothing relevant.",
            json!({"type": "object", "properties": {"reason": {"type": "string"}}}),
        ));
    }
    v
}

/// Longest argument summary a tool event carries.
const SUMMARY_CHARS: usize = 80;

/// `key=value` pairs of the arguments, each value shortened in the middle.
pub fn summarise_args(args: &serde_json::Value) -> String {
    let Some(obj) = args.as_object() else {
        return String::new();
    };
    let parts: Vec<String> = obj
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{k}={v}")
        })
        .collect();
    super::middle_ellipsis(&parts.join(", "), SUMMARY_CHARS)
}
