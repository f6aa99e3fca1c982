//! Jarvis: a personal knowledge base and research assistant in one binary.
//!
//! The crate is a library first; `src/main.rs` only parses the command line
//! and calls into [`cli`]. Modules are listed in layer order, top to bottom:
//! edges (cli, web) → app → features → engines → store. A module may only
//! use modules listed below it. See `docs/ARCHITECTURE.md`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![deny(unsafe_code)]

pub mod llm;
pub mod paths;
