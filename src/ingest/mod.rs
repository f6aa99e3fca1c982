//! Ingest: turning outside content into knowledge-base documents.
//!
//! Owns reading sources (the Obsidian vault, PDFs, papers from arXiv, DOIs
//! and the web, a Zotero library or its export), classifying them (visibility, doc_type), mapping their
//! metadata, and handing staged documents to `kb` for one atomic commit
//! per source.
//! Must not: write to the store or indexes except through `kb`'s commit,
//! delete any file, or speak HTTP beyond the fetchers (`arxiv.rs`,
//! `web.rs`), which only ever GET.

pub mod arxiv;
pub mod doi;
pub mod frontmatter;
pub mod identity;
pub mod metadata;
pub mod paper;
pub mod reach;
pub mod remote;
pub mod scholarly;
pub mod vault;
pub mod web;
pub mod zotero;
