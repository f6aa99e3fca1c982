//! `jarvis kb …`: search, list, stats, schema, bibtex, set-meta, remove,
//! reindex, doctor, add, import-zotero, index-vault, eval. One file per
//! kind of work: [`search`] (search, list), [`info`] (stats, schema),
//! [`bibtex`], [`edit`] (set-meta, remove),
//! [`maintain`] (reindex, doctor and the hidden probe doctor runs in a
//! child process), [`add`], [`zotero`], [`vault`], [`eval`],
//! [`sync_status`].
//!
//! `--json` prints the reports the lower layers return, serialised as they
//! are (no copies field by field); its `tests` pin each one's exact JSON,
//! so a field renamed in `kb`, `ingest` or `digest` fails a test here
//! instead of silently changing what scripts read.
//!
//! Every command goes through the [`App`]: in this process (direct mode,
//! which takes the store's one-owner lock, waiting for another one-shot
//! command that holds it) or in a running `jarvis serve`/`jarvis sync`
//! (delegated, see `cli::delegate`). Output goes through a [`Term`], so
//! both modes print the same.

pub(crate) mod add;
mod bibtex;
mod digest;
mod edit;
mod eval;
mod info;
mod maintain;
mod search;
pub(crate) use search::one_line;
mod sync_status;
mod vault;
mod zotero;

use clap::{Args, Subcommand, ValueEnum};

use crate::app::{App, SessionProfile};
use crate::cli::term::Term;
use crate::doc_type::DocKind;
use crate::index::Filter;

#[derive(Debug, Subcommand)]
pub enum KbCmd {
    /// Hybrid search (BM25 + vectors, fused; re-ranked when a re-ranker is configured).
    Search(search::SearchArgs),
    /// Documents in the knowledge base, newest first, with chunk counts.
    List(search::ListArgs),
    /// Counts by type, record categories and statuses, the embedding model, index sizes.
    Stats {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Every metadata key with chunk counts, or one key's distinct values.
    ///
    /// Jarvis enforces no vocabulary, so a typo in a note's frontmatter
    /// (`stauts: rejected`) becomes its own key that never matches a filter;
    /// this is how you find it.
    Schema {
        /// Show this key's distinct values instead of all keys.
        key: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The library's papers as BibTeX, each under its stable citation key (`smith2021protein`).
    ///
    /// Cite them in a draft with `\cite{key}` (LaTeX) or `[@key]` (Markdown);
    /// compiling the draft writes the `.bib` of the keys it uses beside it.
    Bibtex(bibtex::BibtexArgs),
    /// Correct a paper's title, authors or DOI (metadata only, nothing is re-embedded).
    SetMeta(edit::SetMetaArgs),
    /// Remove one document's database entry. Files on disk are never touched.
    Remove(edit::RemoveArgs),
    /// Re-embed every stored chunk with the configured model into fresh indexes and switch to them atomically.
    ///
    /// The fix whenever `rag.embed_model` changed or an index is damaged:
    /// chunk texts are stored, so no LLM is called and nothing is re-read
    /// from disk.
    Reindex {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Diagnose the knowledge base: open, count, check the three stores agree, and run a search probe in a child process.
    Doctor {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Replay the event log and compare it with the store: every document the log says should be there, as the log says, and nothing else.
    ///
    /// Reports matched, missing, extra and differing documents and the
    /// first event the store no longer matches; exits 1 when they disagree.
    /// `kb doctor` runs it too.
    Audit {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Add a paper: a local PDF or an arXiv id/URL, with its highlights, notes and (optionally) figures.
    Add(add::AddArgs),
    /// Import a Zotero library — its database (read from a copy) or a BibTeX / CSL-JSON export — with PDFs, notes, annotations and collections as tags.
    ///
    /// Incremental: a re-run adds only what is new and replaces an item
    /// whose PDF or record changed. Nothing in Zotero's folder is written.
    ImportZotero(zotero::ImportZoteroArgs),
    /// Add the Must-Read and Worth Reading papers of digest Markdown files as summary entries (no LLM call).
    AddDigest(digest::AddDigestArgs),
    /// Index the Obsidian vault incrementally: new and changed notes, deletions, visibility changes.
    IndexVault(vault::IndexVaultArgs),
    /// Measure retrieval on a golden query set: hit@1, hit@10, MRR@10 (nDCG@10, Recall@100 with qrels), latency.
    ///
    /// Keep a file of queries whose right answer you know
    /// (`{"query": "…", "answer": "folder/Note.md"}` per line) and run it
    /// after changing settings or models.
    Eval(eval::EvalArgs),
    /// One MCP tool call forwarded by a `jarvis mcp` to this owner (internal):
    /// prints one JSON line, the result or the tool's error.
    #[command(name = "__mcp-call", hide = true)]
    McpCall {
        /// search, get_document, list_documents or kb_stats.
        tool: String,
        /// The arguments, a JSON object.
        args: String,
        /// The calling server has `[mcp] include_private = true`.
        #[arg(long)]
        include_private: bool,
    },
    /// Is the background schedule running, and how did each job do (last run, success, error, next run)?
    SyncStatus(sync_status::SyncStatusArgs),
    /// The search probe `kb doctor` runs in a child process (internal).
    #[command(name = "__probe", hide = true)]
    Probe,
}

impl KbCmd {
    /// How the embedding model loads when this command runs in its own
    /// process (direct mode; an owner keeps its throughput session).
    ///
    /// Quick start only where the process embeds one query and exits: the
    /// optimised session's ~250 ms load would be most of a `kb search`,
    /// and its per-query advantage (~4 ms against ~20 ms) is paid back only
    /// after a dozen queries. Everything that embeds in bulk (add, indexing,
    /// reindex) or many queries (eval, MCP calls in an owner) keeps the
    /// throughput session, whose batches are several times faster. Commands
    /// that embed nothing never load a model, so their choice is moot; every
    /// variant is listed so a new command has to decide.
    pub fn embed_profile(&self) -> SessionProfile {
        match self {
            // One query each: the search, and doctor's probe child.
            KbCmd::Search(_) | KbCmd::Probe => SessionProfile::QuickStart,
            KbCmd::Add(_)
            | KbCmd::ImportZotero(_)
            | KbCmd::AddDigest(_)
            | KbCmd::IndexVault(_)
            | KbCmd::Reindex { .. }
            | KbCmd::Eval(_)
            | KbCmd::McpCall { .. } => SessionProfile::Throughput,
            KbCmd::List(_)
            | KbCmd::Stats { .. }
            | KbCmd::Schema { .. }
            | KbCmd::Bibtex(_)
            | KbCmd::SetMeta(_)
            | KbCmd::Remove(_)
            | KbCmd::Doctor { .. }
            | KbCmd::Audit { .. }
            | KbCmd::SyncStatus(_) => SessionProfile::Throughput,
        }
    }
}

pub fn run(cmd: KbCmd, app: &App, t: &dyn Term) -> anyhow::Result<u8> {
    match cmd {
        KbCmd::Search(a) => search::search(a, app, t),
        KbCmd::List(a) => search::list(a, app, t),
        KbCmd::Stats { json } => info::stats(json, app, t),
        KbCmd::Schema { key, json } => info::schema(key, json, app, t),
        KbCmd::Bibtex(a) => bibtex::bibtex(a, app, t),
        KbCmd::SetMeta(a) => edit::set_meta(a, app, t),
        KbCmd::Remove(a) => edit::remove(a, app, t),
        KbCmd::Reindex { json } => maintain::reindex(json, app, t),
        KbCmd::Doctor { json } => maintain::doctor(json, app, t),
        KbCmd::Audit { json } => crate::cli::history_cmd::audit(json, app, t),
        KbCmd::Probe => maintain::probe(app, t),
        KbCmd::McpCall {
            tool,
            args,
            include_private,
        } => {
            t.out(&crate::mcp::backend::owner_reply(app, include_private, &tool, &args))?;
            Ok(0)
        }
        KbCmd::IndexVault(a) => vault::index_vault(a, app, t),
        KbCmd::Add(a) => add::add(a, app, t),
        KbCmd::AddDigest(a) => digest::add_digest(a, app, t),
        KbCmd::ImportZotero(a) => zotero::import_zotero(a, app, t),
        KbCmd::Eval(a) => eval::eval(a, app, t),
        KbCmd::SyncStatus(a) => sync_status::sync_status(a, app, t),
    }
}

/// `--kind`: which document types a command looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Papers and digests.
    Papers,
    /// Vault notes (and records).
    Notes,
    /// Indexed chat sessions.
    Chats,
    /// Everything.
    All,
}

impl Kind {
    /// The filter's document types (`crate::doc_type` holds the mapping).
    pub fn doc_types(self) -> Vec<String> {
        let kind = match self {
            Kind::Papers => DocKind::Papers,
            Kind::Notes => DocKind::Notes,
            Kind::Chats => DocKind::Chats,
            Kind::All => DocKind::All,
        };
        kind.type_names()
    }
}

/// Filters shared by `search` and `list`.
#[derive(Debug, Clone, Args)]
pub struct CommonFilter {
    /// Which documents: papers (papers and digests), notes, chats or all.
    #[arg(long, value_enum, default_value_t = Kind::All)]
    pub kind: Kind,
    /// Only records of this category (frontmatter `type:`/`category:`).
    #[arg(long)]
    pub category: Option<String>,
    /// Only records with this status.
    #[arg(long)]
    pub status: Option<String>,
    /// Only records about this entity (organisation, person…).
    #[arg(long)]
    pub entity: Option<String>,
    /// Only chunks carrying this tag (repeatable: all must be present).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only chunks whose frontmatter field equals a value, e.g. `--field company=Acme`
    /// (the `x_` prefix is optional). Repeatable: all must match.
    #[arg(long = "field", value_name = "KEY=VALUE", value_parser = search::parse_field)]
    pub fields: Vec<(String, String)>,
}

impl CommonFilter {
    pub fn to_filter(&self) -> Filter {
        Filter {
            doc_types: self.kind.doc_types(),
            category: self.category.clone(),
            status: self.status.clone(),
            entity: self.entity.clone(),
            tags: self.tags.clone(),
            fields: self.fields.clone(),
            ..Filter::default()
        }
    }
}

/// A document's display title: its title, else its file path, else its source.
pub(crate) fn display_title(title: &str, file_path: Option<&str>, source: &str) -> String {
    if !title.trim().is_empty() {
        title.trim().to_string()
    } else if let Some(p) = file_path.filter(|p| !p.is_empty()) {
        p.to_string()
    } else if !source.is_empty() {
        source.to_string()
    } else {
        "(untitled)".to_string()
    }
}

/// Pretty JSON plus a newline, on stdout.
pub(crate) fn emit_json(t: &dyn Term, v: &impl serde::Serialize) -> anyhow::Result<()> {
    t.out(&format!("{}\n", serde_json::to_string_pretty(v)?))
}

#[cfg(test)]
mod tests;
