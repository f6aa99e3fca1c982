//! Helpers shared by the integration tests, one file per concern. A
//! helper two test modules need lives here, once; a test module keeps
//! only what is its own. tests/README.md has the layout.
//!
//! - `sandbox`: a throwaway HOME + JARVIS_HOME, the built `jarvis` pointed
//!   at it, and a finished run's code and output.
//! - `owner`: long-running `jarvis sync` / `serve` processes (the `Owned`
//!   guard), waiting until they are ready, stopping them.
//! - `fs`: the committed fixtures, writing notes, a folder's contents.
//! - `net`: loopback ports, free or dead.
//! - `pdf`: poppler's tools reading a PDF a test built.
//! - `runtime`: the natives unpacked once per test binary and in-process
//!   configurations that use them.
//! - `chat`: a real knowledge base over a generated vault, and chat agents
//!   on fake models.
//! - `cite`: the citation tests' script (`[1]` and a made-up `[7]`) and a
//!   web app over an indexed vault.
//! - `web`: the web app in-process, and a raw HTTP client for it.
//! - `browser`: Debian's chromium through chromedriver.
//! - `fakes`: the model servers and web services Jarvis talks to.
//! - `tidy`: reading `src/` for the architecture checks.
//! - `research`: the research runs' stand-in model (planner, sub-agents
//!   and report writer told apart by their requests).
//! - `answer_standin`: the answer eval's deterministic stand-in model,
//!   shared with `cargo xtask eval answers` (so it uses nothing else from
//!   here).
//! - `sync_crash_core`: the kill -9 campaign against `jarvis sync`, shared
//!   with `cargo xtask crash sync` (so it uses nothing else from here).

pub mod answer_standin;
pub mod browser;
pub mod chat;
pub mod cite;
pub mod fakes;
pub mod fs;
pub mod net;
pub mod owner;
pub mod pdf;
pub mod research;
pub mod runtime;
pub mod sandbox;
pub mod sync_crash_core;
pub mod tidy;
pub mod web;

pub use owner::Owned;
pub use sandbox::{run, Run, Sandbox};
