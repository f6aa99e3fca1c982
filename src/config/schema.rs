//! The table of every setting: section, key, env var, kind, default, help.
//!
//! One table drives loading, validation, `config show` and `config set`, so a
//! new setting is one row here plus one field in the typed [`super::Config`].

pub use super::kind::Kind;

pub use super::value::Value;

pub use super::field::{Default, Field};

#[macro_use]
mod sections;
use sections::WEEKDAYS;
pub use sections::{LEGACY, SECTIONS};

/// Every setting. Order within a section is display order. The table is
/// kept in parts (this file's rows, and the `[research]` and `[runtime]`
/// rows in `schema/`) so no file of it passes the length limit; the parts
/// are joined when the program is compiled.
pub const FIELDS: &[Field] = &join::<{ CORE.len() + research::FIELDS.len() + runtime::FIELDS.len() }>(&[
    CORE,
    research::FIELDS,
    runtime::FIELDS,
]);

/// The parts of the table as one array of `N` rows (`N` must be their
/// total: a wrong one fails the build).
const fn join<const N: usize>(parts: &[&[Field]]) -> [Field; N] {
    let mut out = [CORE[0]; N];
    let (mut k, mut p) = (0, 0);
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[k] = parts[p][i];
            k += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(k == N, "the settings table's parts do not add up");
    out
}

mod research;
mod runtime;

/// The rows of every section but `[research]` and `[runtime]`.
const CORE: &[Field] = &[
    // [chat]
    field!(
        "chat",
        "provider",
        Some("CHAT_PROVIDER"),
        Kind::ProviderSpec,
        Default::Str("ollama"),
        "default LLM for new sessions: provider or provider:model"
    ),
    field!(
        "chat",
        "ollama_model",
        Some("OLLAMA_MODEL"),
        Kind::NonEmpty,
        Default::Str("qwen3-vl:30b"),
        "Ollama model tag (needs tool calling; vision for figures)"
    ),
    field!(
        "chat",
        "ollama_host",
        Some("OLLAMA_HOST"),
        Kind::NonEmpty,
        Default::Str("http://127.0.0.1:11434"),
        "where the local Ollama server listens"
    ),
    field!(
        "chat",
        "ollama_local",
        None,
        Kind::Bool,
        Default::Bool(false),
        "treat a non-loopback ollama_host as local (a machine of yours on a trusted network); loopback hosts always are"
    ),
    field!(
        "chat",
        "anthropic_model",
        Some("ANTHROPIC_MODEL"),
        Kind::NonEmpty,
        Default::Str("claude-sonnet-4-6"),
        "Anthropic model for chat and the digest"
    ),
    field!(
        "chat",
        "anthropic_api_key",
        Some("ANTHROPIC_API_KEY"),
        Kind::Secret,
        Default::Str(""),
        "Anthropic API key (the env var is preferred)"
    ),
    field!(
        "chat",
        "response_style",
        None,
        Kind::Str,
        Default::Str(""),
        "free-text style instruction appended to the system prompt"
    ),
    field!(
        "chat",
        "compact_after_tokens",
        None,
        Kind::Int {
            min: 1000,
            max: 10_000_000
        },
        Default::Int(12000),
        "compact a session once its context passes this many estimated tokens"
    ),
    field!(
        "chat",
        "compact_keep_exchanges",
        None,
        Kind::Int { min: 0, max: 1000 },
        Default::Int(6),
        "recent exchanges kept verbatim when compacting"
    ),
    field!(
        "chat",
        "max_tool_rounds",
        None,
        Kind::Int { min: 1, max: 100 },
        Default::Int(12),
        "tool calls one chat turn may make before it is ended with a message"
    ),
    field!(
        "chat",
        "max_output_tokens",
        None,
        Kind::Int { min: 256, max: 65_536 },
        Default::Int(4096),
        "output cap of one model step in a chat turn (tokens); a step far past it is ended with a message"
    ),
    field!(
        "chat",
        "turn_timeout_secs",
        None,
        Kind::Int { min: 10, max: 86_400 },
        Default::Int(600),
        "wall-clock budget of one chat turn, tool calls included; a turn past it ends with a message naming the model"
    ),
    // [openrouter]
    field!(
        "openrouter",
        "model",
        Some("OPENROUTER_MODEL"),
        Kind::Str,
        Default::Str(""),
        "default OpenRouter model; empty means Jarvis asks instead of guessing"
    ),
    field!(
        "openrouter",
        "api_key",
        Some("OPENROUTER_API_KEY"),
        Kind::Secret,
        Default::Str(""),
        "OpenRouter API key (the env var is preferred)"
    ),
    field!(
        "openrouter",
        "data_collection",
        None,
        Kind::Choice(&["deny", "allow"]),
        Default::Str("deny"),
        "exclude upstream providers that train on prompts"
    ),
    field!(
        "openrouter",
        "allow_fallbacks",
        None,
        Kind::Bool,
        Default::Bool(false),
        "let OpenRouter reroute to an upstream provider you did not pick"
    ),
    field!(
        "openrouter",
        "only",
        None,
        Kind::StrList,
        Default::List(&[]),
        "optional allowlist of upstream provider slugs"
    ),
    // [models]
    field!(
        "models",
        "catalogue",
        None,
        Kind::ModelTable,
        Default::EmptyModels,
        "switchable models per provider; written as `[models]` provider = [\"model\", ...]"
    ),
    // [rag]
    field!(
        "rag",
        "dir",
        None,
        Kind::Path,
        Default::InHome("rag"),
        "knowledge-base storage (fjall + tantivy + arroy)"
    ),
    field!(
        "rag",
        "embed_model",
        None,
        Kind::NonEmpty,
        Default::Str("sentence-transformers/all-MiniLM-L6-v2"),
        "embedding model (changing it requires `jarvis kb reindex`)"
    ),
    field!(
        "rag",
        "query_prefix",
        None,
        Kind::OptStr,
        Default::Unset,
        "prepended to queries only; unset uses the model's own default, \"\" disables"
    ),
    field!(
        "rag",
        "chunk_size",
        None,
        Kind::Int { min: 128, max: 16384 },
        Default::Int(1024),
        "characters per chunk"
    ),
    field!(
        "rag",
        "chunk_overlap",
        None,
        Kind::Int { min: 0, max: 4096 },
        Default::Int(128),
        "characters shared by neighbouring chunks (less than chunk_size)"
    ),
    field!(
        "rag",
        "rerank_model",
        None,
        Kind::Str,
        Default::Str(""),
        "a registry re-ranker (\"cross-encoder/ms-marco-MiniLM-L-6-v2\", downloaded and verified on first use) or a directory with a cross-encoder model.onnx + tokenizer.json; \"\" disables re-ranking"
    ),
    field!(
        "rag",
        "rerank_budget_ms",
        None,
        Kind::Int { min: 1, max: 600_000 },
        Default::Int(400),
        "milliseconds a re-rank may take; one that would run longer returns the fused order instead (and `kb search --json` says so)"
    ),
    field!(
        "rag",
        "exact_scan_max",
        None,
        Kind::Int {
            min: 0,
            max: 1_000_000_000
        },
        Default::Int(1_000_000),
        "chunks up to which dense search scans every vector exactly; above it arroy trees (built once, in the background) pick the candidates"
    ),
    field!(
        "rag",
        "rerank_top_n",
        None,
        Kind::Int { min: 1, max: 1000 },
        Default::Int(25),
        "fused results the re-ranker re-orders (the rest keep the fused order)"
    ),
    field!(
        "rag",
        "hybrid",
        None,
        Kind::Bool,
        Default::Bool(true),
        "fuse BM25 with dense retrieval; false gives dense only"
    ),
    field!(
        "rag",
        "fusion",
        None,
        Kind::Choice(&["rrf", "weighted"]),
        Default::Str("weighted"),
        "how the BM25 and dense results are combined: reciprocal rank fusion, or weighted normalised scores (`jarvis kb eval FILE --tune` finds the best on your own queries)"
    ),
    field!(
        "rag",
        "dense_weight",
        None,
        Kind::Int { min: 0, max: 100 },
        Default::Int(50),
        "the dense leg's share of the fusion in percent (BM25 gets the rest; 50 weighs both alike)"
    ),
    field!(
        "rag",
        "figure_captions",
        None,
        Kind::Bool,
        Default::Bool(false),
        "caption PDF figures at ingest (one vision call per figure)"
    ),
    field!(
        "rag",
        "figure_max_per_doc",
        None,
        Kind::Int { min: 0, max: 1000 },
        Default::Int(20),
        "cap on figures captioned per document"
    ),
    field!(
        "rag",
        "figure_min_pixels",
        None,
        Kind::Int {
            min: 0,
            max: 100_000_000
        },
        Default::Int(40000),
        "skip embedded images smaller than this many pixels"
    ),
    field!(
        "rag",
        "pdf_timeout_seconds",
        None,
        Kind::Int { min: 1, max: 86400 },
        Default::Int(120),
        "time limit for reading one PDF (PDFium runs in a child process that is killed past it)"
    ),
    field!(
        "rag",
        "lock_wait_seconds",
        Some("JARVIS_LOCK_WAIT_SECONDS"),
        Kind::Int { min: 0, max: 86400 },
        Default::Int(60),
        "how long a one-shot `kb` command waits for another one-shot command holding the knowledge base before giving up"
    ),
    field!(
        "rag",
        "pdf_memory_mb",
        None,
        Kind::Int {
            min: 64,
            max: 1_048_576
        },
        Default::Int(2048),
        "address-space limit in MiB for the child process that reads a PDF"
    ),
    // [vault]
    field!(
        "vault",
        "path",
        Some("VAULT_PATH"),
        Kind::Path,
        Default::InUserHome("vault"),
        "Obsidian vault root"
    ),
    field!(
        "vault",
        "private_dirs",
        None,
        Kind::StrList,
        Default::List(&["private"]),
        "top-level vault folders whose notes are private"
    ),
    field!(
        "vault",
        "max_note_bytes",
        None,
        Kind::Int {
            min: 1_000,
            max: 1_000_000_000
        },
        Default::Int(2_000_000),
        "a note larger than this is skipped, with a message (each MB is about 1,100 chunks to embed)"
    ),
    // [sync]
    field!(
        "sync",
        "pdf_watch_dir",
        Some("PDF_WATCH_DIR"),
        Kind::OptPath,
        Default::Unset,
        "PDF inbox scanned by the scheduler; unset disables the scan"
    ),
    field!(
        "sync",
        "pdf_watch_minutes",
        None,
        Kind::Int { min: 1, max: 10080 },
        Default::Int(30),
        "minutes between PDF inbox scans"
    ),
    field!(
        "sync",
        "watch",
        None,
        Kind::Bool,
        Default::Bool(true),
        "watch the vault and the PDF inbox for changes (the periodic refresh runs either way)"
    ),
    field!(
        "sync",
        "vault_refresh_minutes",
        None,
        Kind::Int { min: 1, max: 10080 },
        Default::Int(30),
        "minutes between vault refreshes"
    ),
    // [papers]
    field!(
        "papers",
        "arxiv_api_url",
        None,
        Kind::NonEmpty,
        Default::Str("https://export.arxiv.org"),
        "arXiv API base (`/api/query` is appended)"
    ),
    field!(
        "papers",
        "arxiv_pdf_url",
        None,
        Kind::NonEmpty,
        Default::Str("https://arxiv.org"),
        "arXiv PDF base (`/pdf/<id>` is appended)"
    ),
    field!(
        "papers",
        "courtesy_delay_ms",
        None,
        Kind::Int { min: 0, max: 60_000 },
        Default::Int(3000),
        "minimum gap between arXiv requests (arXiv asks for 3 s)"
    ),
    field!(
        "papers",
        "retry_backoff_ms",
        None,
        Kind::Int { min: 0, max: 600_000 },
        Default::Int(2000),
        "first pause before retrying a failed arXiv request (doubling each time, with jitter)"
    ),
    field!(
        "papers",
        "contact_email",
        Some("JARVIS_CONTACT_EMAIL"),
        Kind::Str,
        Default::Str(""),
        "your e-mail, sent to Crossref and Unpaywall as their terms ask; without it a DOI adds metadata and abstract only (no open-access PDF lookup)"
    ),
    field!(
        "papers",
        "allow_local_urls",
        None,
        Kind::Bool,
        Default::Bool(false),
        "let a DOI or web-address add fetch from this machine or its local network (off: such a paper is added as a file; the configured service URLs are always allowed)"
    ),
    field!(
        "papers",
        "crossref_url",
        None,
        Kind::NonEmpty,
        Default::Str("https://api.crossref.org"),
        "Crossref REST API base (`/works/<doi>` is appended)"
    ),
    field!(
        "papers",
        "unpaywall_url",
        None,
        Kind::NonEmpty,
        Default::Str("https://api.unpaywall.org"),
        "Unpaywall API base (`/v2/<doi>?email=…` is appended)"
    ),
    field!(
        "papers",
        "host_delay_ms",
        None,
        Kind::Int { min: 0, max: 60_000 },
        Default::Int(1000),
        "minimum gap between two requests to the same host when adding by DOI or URL (one request at a time per host)"
    ),
    // [pdf]
    field!(
        "pdf",
        "ocr",
        None,
        Kind::Bool,
        Default::Bool(true),
        "read scanned pages, and pages whose text layer does not read as words, with Tesseract (OCR)"
    ),
    field!(
        "pdf",
        "ocr_languages",
        None,
        Kind::StrList,
        Default::List(&["eng"]),
        "languages OCR reads, as Tesseract codes (eng, deu, fra, chi_sim…); each needs the Debian package tesseract-ocr-<code>"
    ),
    field!(
        "pdf",
        "tesseract",
        None,
        Kind::NonEmpty,
        Default::Str("tesseract"),
        "the Tesseract program (Debian's tesseract-ocr): a name on PATH or a path"
    ),
    field!(
        "pdf",
        "ocr_timeout_seconds",
        None,
        Kind::Int { min: 1, max: 3600 },
        Default::Int(120),
        "time limit for reading one page with OCR"
    ),
    field!(
        "pdf",
        "ocr_memory_mb",
        None,
        Kind::Int {
            min: 64,
            max: 1_048_576
        },
        Default::Int(1024),
        "address-space limit in MiB for Tesseract reading one page"
    ),
    // [digest]
    field!(
        "digest",
        "enabled",
        None,
        Kind::Bool,
        Default::Bool(false),
        "weekly paper digest opt-in"
    ),
    field!(
        "digest",
        "output_dir",
        None,
        Kind::Path,
        Default::InHome("digest"),
        "where digest Markdown files are written"
    ),
    field!(
        "digest",
        "max_results",
        None,
        Kind::Int { min: 1, max: 1000 },
        Default::Int(10),
        "papers listed under Must-Read and Worth Reading at most (Skim lists the rest)"
    ),
    field!(
        "digest",
        "arxiv_categories",
        None,
        Kind::PairList,
        Default::Pairs(&[]),
        "arXiv categories to follow and how many recent papers to read from each, e.g. [[\"cs.LG\", 200]] (none until you choose)"
    ),
    field!(
        "digest",
        "biorxiv_categories",
        None,
        Kind::PairList,
        Default::Pairs(&[]),
        "bioRxiv categories (server-side filter) and a cap for each, e.g. [[\"bioinformatics\", 100]]"
    ),
    field!(
        "digest",
        "biorxiv_keywords",
        None,
        Kind::PairList,
        Default::Pairs(&[]),
        "bioRxiv keywords matched in title or abstract, with a cap for each, e.g. [[\"proteomics\", 50]]"
    ),
    field!(
        "digest",
        "max_candidates",
        None,
        Kind::Int { min: 1, max: 2000 },
        Default::Int(100),
        "new papers sent to the LLM for scoring, picked by similarity to your own library"
    ),
    field!(
        "digest",
        "batch_size",
        None,
        Kind::Int { min: 1, max: 100 },
        Default::Int(10),
        "abstracts per scoring request at most (fewer when the model's context is small)"
    ),
    field!(
        "digest",
        "context_tokens",
        None,
        Kind::Int { min: 0, max: 2_000_000 },
        Default::Int(0),
        "context window of the scoring model in tokens (0: 8192 for ollama, 100000 for cloud models)"
    ),
    field!(
        "digest",
        "biorxiv_url",
        None,
        Kind::NonEmpty,
        Default::Str("https://api.biorxiv.org"),
        "bioRxiv API base (`/details/biorxiv/...` is appended)"
    ),
    field!(
        "digest",
        "biorxiv_days",
        None,
        Kind::Int { min: 1, max: 90 },
        Default::Int(7),
        "days a first digest run looks back (later runs cover the days since the last successful one)"
    ),
    field!(
        "digest",
        "day",
        None,
        Kind::Choice(WEEKDAYS),
        Default::Str("mon"),
        "day of the week the digest runs"
    ),
    field!(
        "digest",
        "hour",
        None,
        Kind::Int { min: 0, max: 23 },
        Default::Int(5),
        "hour of the day the digest runs"
    ),
    // [drafts]
    // [history]
    field!(
        "history",
        "keep_days",
        None,
        Kind::Int { min: 0, max: 3650 },
        Default::Int(30),
        "days a removed or replaced paper's chunks and vectors are kept so `jarvis undo` can restore them (0 keeps none)"
    ),
    // [memory]
    field!(
        "memory",
        "auto_accept",
        None,
        Kind::Bool,
        Default::Bool(false),
        "accept the facts the assistant proposes to remember about you at once, instead of waiting for your review (the Memory view, `jarvis memory review`)"
    ),
    field!(
        "memory",
        "summary_tokens",
        None,
        Kind::Int { min: 0, max: 8000 },
        Default::Int(400),
        "token budget of \"What I remember about you\", the accepted facts placed after the system prompt (0: none)"
    ),
    field!(
        "memory",
        "idle_minutes",
        None,
        Kind::Int { min: 0, max: 10_080 },
        Default::Int(30),
        "minutes a chat session must be idle before one model call proposes facts from it, once (0: never)"
    ),
    field!(
        "memory",
        "extract_model",
        None,
        Kind::Str,
        Default::Str(""),
        "provider:model the extraction uses (empty: `chat.provider`); a private session is only ever read by a local model"
    ),
    // [web]
    field!(
        "web",
        "port",
        Some("JARVIS_PORT"),
        Kind::Int { min: 1, max: 65535 },
        Default::Int(8080),
        "port of the web app on 127.0.0.1 (`jarvis serve --port` overrides; never a public address)"
    ),
    // [mcp]
    field!(
        "mcp",
        "include_private",
        None,
        Kind::Bool,
        Default::Bool(false),
        "let MCP clients (`jarvis mcp`, /mcp of `jarvis serve`) see private notes; off, they are treated as cloud and see public documents only"
    ),
    field!(
        "drafts",
        "dir",
        None,
        Kind::Path,
        Default::InHome("drafts"),
        "the agent-writable sandbox"
    ),
    field!(
        "drafts",
        "extensions",
        None,
        Kind::StrList,
        Default::List(&[".md", ".tex", ".bib", ".txt", ".csv", ".json", ".yaml"]),
        "file types drafts may contain"
    ),
    field!(
        "drafts",
        "max_file_bytes",
        None,
        Kind::Int {
            min: 1,
            max: 1_000_000_000
        },
        Default::Int(2_000_000),
        "cap on one draft file"
    ),
    field!(
        "drafts",
        "retention_days",
        None,
        Kind::Int { min: 0, max: 36500 },
        Default::Int(30),
        "sweep drafts untouched this long; 0 disables"
    ),
    field!(
        "drafts",
        "gc_hour",
        None,
        Kind::Int { min: 0, max: 23 },
        Default::Int(4),
        "hour of the day for the retention sweep"
    ),
    field!(
        "drafts",
        "latex_engine",
        None,
        Kind::Str,
        Default::Str("latexmk"),
        "compiles .tex drafts; \"\" disables compilation"
    ),
    field!(
        "drafts",
        "pdf_engine",
        None,
        Kind::Str,
        Default::Str("xelatex"),
        "the TeX engine for Markdown → PDF (pandoc) and .tex compiles (latexmk): xelatex reads any UTF-8 text; pdflatex and lualatex also work"
    ),
    field!(
        "drafts",
        "pdf_mainfont",
        None,
        Kind::Str,
        Default::Str("DejaVu Serif"),
        "body font of a Markdown → PDF export under xelatex/lualatex (it must cover your scripts; \"\" keeps Latin Modern)"
    ),
    field!(
        "drafts",
        "compile_timeout_seconds",
        None,
        Kind::Int { min: 1, max: 3600 },
        Default::Int(180),
        "hard ceiling on one LaTeX or pandoc run"
    ),
    field!(
        "drafts",
        "pdf_margin",
        None,
        Kind::NonEmpty,
        Default::Str("2cm"),
        "page margin for Markdown → PDF export"
    ),
];

pub use super::schema_find::{find, find_dotted, keys_of, suggest};

#[cfg(test)]
mod tests;
