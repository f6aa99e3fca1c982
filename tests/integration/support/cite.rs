//! The citation tests' shared script: a question, a model that searches
//! once and answers citing `[1]` (the pasta note) and a made-up `[7]`,
//! what the answer reads like once checked, and a web app over an indexed
//! vault of the public [`NOTES`].

use jarvis::cancel::Cancel;
use jarvis::ingest::vault::{refresh_vault, VaultOptions};

use crate::support::chat::NOTES;
use crate::support::fakes::llm::Reply;
use crate::support::fakes::wires::Wire;
use crate::support::fs::write;
use crate::support::web::WebServer;

pub const QUESTION: &str = "How long do I boil pasta?";
pub const ANSWER: &str = "Boil it for nine minutes in salted water [1]. It was invented in 1154 [7].";
/// [`ANSWER`] with the marker that names nothing removed.
pub const CHECKED: &str = "Boil it for nine minutes in salted water [1]. It was invented in 1154.";

/// A web app whose vault (the public notes of [`NOTES`], in a directory
/// named `vault`) is indexed, on the fake model at `llm_url`.
pub fn web_with_vault(llm_url: &str) -> (WebServer, tempfile::TempDir) {
    let vault_dir = tempfile::tempdir().unwrap();
    let vault = vault_dir.path().join("vault");
    for (rel, text) in NOTES.iter().filter(|(p, _)| !p.starts_with("private/")) {
        write(&vault, rel, text);
    }
    let s = WebServer::with_llm(llm_url, &format!("\n[vault]\npath = \"{}\"\n", vault.display()));
    let opts = VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    refresh_vault(&s.app.kb().unwrap(), &vault, &opts, &|_, _| {}, &Cancel::new()).unwrap();
    (s, vault_dir)
}

/// The one-search-then-`[1]`-and-`[7]` script's replies, to chain more.
pub fn cited_turn(wire: Wire) -> Vec<Reply> {
    vec![
        wire.tool_calls(&[("c1", "search_kb", vec![r#"{"query":"boil pasta minutes"}"#])]),
        wire.text(&[&ANSWER[..25], &ANSWER[25..52], &ANSWER[52..]]),
    ]
}
