//! Turning raw content into chunks ready to embed and index.
//!
//! Owns the pure transformation steps of ingest: today the Markdown-aware
//! [`chunker`]. Modules here must not touch the store, the indexes, the
//! network or the file system; callers hand them text and get values back,
//! which is what lets `build_*` functions stage whole documents in memory
//! before a single atomic commit.

pub mod chunker;
