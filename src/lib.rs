//! Jarvis: a personal knowledge base and research assistant in one binary.
//!
//! The crate is a library first; `src/main.rs` only calls [`cli::main`].
//!
//! [`LAYERS`] is THE layer order, the one place it is written
//! (`tests/integration/tidy_layers.rs` checks every `crate::` import of
//! library code against it): a module may use only modules after it. See
//! `docs/ARCHITECTURE.md`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(unsafe_code)]

pub mod cli;
pub mod mcp;
pub mod web;

pub mod app;

pub mod chat;
pub mod digest;
pub mod drafts;
pub mod ingest;
pub mod jobs;
pub mod kb;
pub mod memory;

pub mod embed;
pub mod index;
pub mod llm;
pub mod mcp_client;
pub mod ocr;
pub mod pdf;

pub mod store;

pub mod runtime;
pub mod sandbox;

pub mod cancel;
pub mod config;
pub mod doc_type;
pub mod error_kind;
pub mod failpoint;
pub mod lock;
pub mod logging;
pub mod paths;
pub mod prompts;
pub mod visibility;

/// Every top-level module, top to bottom: edges (cli, web, mcp) → app →
/// features (chat, memory, digest, ingest, kb, jobs, drafts) → engines
/// (mcp_client, embed, index, llm, ocr, pdf) → store → process helpers (runtime, sandbox) →
/// foundations. A module may use only the modules listed after it, so no
/// import runs back up and there are no circles between modules.
#[rustfmt::skip]
pub const LAYERS: &[&str] = &[
    "cli", "web", "mcp",                                      // edges
    "app",                                                    // composition
    "chat", "memory", "digest", "ingest", "kb", "jobs",       // features
    "drafts",
    "mcp_client", "embed", "index", "llm", "ocr", "pdf",      // engines
    "store",                                                  // truth
    "runtime", "sandbox",                                     // process helpers
    "config", "logging", "prompts", "paths", "cancel",        // foundations
    "doc_type", "visibility", "failpoint", "error_kind", "lock",
];
