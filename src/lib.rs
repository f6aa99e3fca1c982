//! Jarvis: a personal knowledge base and research assistant in one binary.
//!
//! The crate is a library first; `src/main.rs` only calls [`cli::main`].
//! Modules are listed in layer order, top to bottom:
//! edges (cli, web, mcp) → app → features (drafts, ingest, kb) → engines (embed, index, ocr, pdf) →
//! store → foundations (runtime, sandbox, config, paths, logging). A module may only
//! use modules listed below it. See `docs/ARCHITECTURE.md`.
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

pub mod embed;
pub mod index;
pub mod llm;
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
pub mod logging;
pub mod paths;
pub mod prompts;
pub mod visibility;
