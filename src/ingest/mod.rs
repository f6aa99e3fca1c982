//! Ingest: turning outside content into knowledge-base documents.
//!
//! Owns reading sources (the Obsidian vault today; PDFs and papers later),
//! classifying them (visibility, doc_type), mapping their metadata, and
//! handing staged documents to `kb` for one atomic commit per source.
//! Must not: write to the store or indexes except through `kb`'s commit,
//! delete any file, or talk HTTP itself.

pub mod arxiv;
pub mod frontmatter;
pub mod metadata;
pub mod paper;
pub mod vault;
