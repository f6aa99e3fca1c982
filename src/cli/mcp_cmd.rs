//! `jarvis mcp`: the knowledge base as an MCP server on stdin/stdout, for
//! an MCP client (a coding assistant, a desktop chat app) to launch.
//!
//! stdout carries only the protocol, so everything for the person goes to
//! stderr — above all which documents the client may see.

use crate::cancel::Cancel;
use crate::config::Config;
use crate::mcp::Scope;

pub fn run(config: Config) -> anyhow::Result<u8> {
    match crate::mcp::scope(&config) {
        Scope::IncludePrivate => eprintln!(
            "jarvis mcp: include_private = true — MCP clients can read PRIVATE notes too ([mcp] in {}). \
             Set it to false to share public documents only.",
            config.home.config_file().display()
        ),
        Scope::PublicOnly => eprintln!(
            "jarvis mcp: sharing public documents only (private notes stay out; `[mcp] include_private = true` would lift that)"
        ),
    }
    let shutdown = Cancel::new();
    let on_signal = shutdown.clone();
    super::signals::install(move || on_signal.cancel())?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(crate::mcp::serve_stdio(config, shutdown))?;
    // Blocking tool threads may still be finishing; do not wait for them.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(0)
}
