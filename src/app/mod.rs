//! The application layer: composes the engines and features into the
//! operations the CLI and the web server call.
//!
//! Owns: wiring configuration into engines (which library, which model),
//! and cross-cutting checks such as `runtime check`.
//! Must not: parse arguments, print, or speak HTTP — that is `cli` and `web`.

pub mod convert_pdf;
pub mod kb;
pub mod llm;
pub mod papers;
pub mod pdf_isolated;
pub mod runtime_check;
