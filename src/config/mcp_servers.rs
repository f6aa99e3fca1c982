//! `[mcp_servers.NAME]`: other MCP servers whose tools the chat may use,
//! in the shape other agents use, so a user can paste theirs:
//!
//! ```toml
//! [mcp_servers.files]            # stdio: a command Jarvis starts
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/papers"]
//! env = { LOG_LEVEL = "warn" }
//!
//! [mcp_servers.docs]             # streamable HTTP
//! url = "https://docs.example.com/mcp"
//! headers = { Authorization = "Bearer …" }
//! ```
//!
//! Optional on both: `local` (a stdio server is local unless it says
//! `local = false`; an HTTP one is remote unless it says `local = true`),
//! `enabled` (default true), `type` (`stdio`, `http` or `streamable-http`,
//! checked against the rest when given); `cwd` for stdio; `http_headers`
//! is read as `headers`.
//!
//! A malformed entry is a warning and is skipped: one bad server must not
//! keep Jarvis from starting.

use toml_edit::Item;

/// One server as configured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct McpServerConfig {
    pub name: String,
    /// `Some` for a stdio server.
    pub command: Option<String>,
    pub args: Vec<String>,
    #[serde(skip)]
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
    /// `Some` for an HTTP server.
    pub url: Option<String>,
    #[serde(skip)]
    pub headers: Vec<(String, String)>,
    pub local: bool,
    pub enabled: bool,
}

/// The servers in `item` (the `[mcp_servers]` table), and a warning for
/// each entry that was skipped.
pub fn parse(item: &Item) -> (Vec<McpServerConfig>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let Some(table) = item.as_table_like() else {
        warnings.push("`mcp_servers` must be tables like [mcp_servers.NAME]; ignored".into());
        return (out, warnings);
    };
    for (name, entry) in table.iter() {
        match parse_one(name, entry) {
            Ok(s) => out.push(s),
            Err(why) => warnings.push(format!("[mcp_servers.{name}] is ignored: {why}")),
        }
    }
    (out, warnings)
}

fn parse_one(name: &str, entry: &Item) -> Result<McpServerConfig, String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err("a server name may use only letters, digits, `_` and `-`".into());
    }
    if name.contains("__") {
        return Err("a server name may not contain `__` (it separates server and tool names)".into());
    }
    let t = entry
        .as_table_like()
        .ok_or("expected a table with `command` (stdio) or `url` (streamable HTTP)")?;
    let string = |k: &str| -> Result<Option<String>, String> {
        match t.get(k) {
            None => Ok(None),
            Some(i) => i
                .as_str()
                .map(|s| Some(s.to_string()))
                .ok_or_else(|| format!("`{k}` must be a string")),
        }
    };
    let boolean = |k: &str| -> Result<Option<bool>, String> {
        match t.get(k) {
            None => Ok(None),
            Some(i) => i
                .as_bool()
                .map(Some)
                .ok_or_else(|| format!("`{k}` must be true or false")),
        }
    };
    let pairs = |k: &str| -> Result<Vec<(String, String)>, String> {
        let Some(i) = t.get(k) else { return Ok(Vec::new()) };
        let inner = i
            .as_table_like()
            .ok_or_else(|| format!("`{k}` must be a table of strings, like {{ NAME = \"value\" }}"))?;
        inner
            .iter()
            .map(|(key, v)| {
                v.as_str()
                    .map(|s| (key.to_string(), s.to_string()))
                    .ok_or_else(|| format!("`{k}.{key}` must be a string"))
            })
            .collect()
    };
    let command = string("command")?.filter(|c| !c.trim().is_empty());
    let url = string("url")?.filter(|u| !u.trim().is_empty());
    let kind = string("type")?;
    match (&command, &url) {
        (Some(_), Some(_)) => return Err("give either `command` (stdio) or `url` (HTTP), not both".into()),
        (None, None) => return Err("give `command` (a stdio server) or `url` (a streamable-HTTP server)".into()),
        _ => {}
    }
    match (kind.as_deref(), command.is_some()) {
        (None | Some("stdio"), true) | (None | Some("http" | "streamable-http" | "streamable_http"), false) => {}
        (Some("sse"), _) => {
            return Err("the old SSE transport is not supported; use the server's streamable-HTTP URL".into())
        }
        (Some(other), _) => return Err(format!("`type = \"{other}\"` does not match the rest of the entry")),
    }
    if let Some(u) = &url {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return Err(format!("`url` must start with http:// or https:// (got {u})"));
        }
    }
    let args = match t.get("args") {
        None => Vec::new(),
        Some(i) => i
            .as_array()
            .ok_or("`args` must be a list of strings")?
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or("`args` must be a list of strings"))
            .collect::<Result<_, _>>()?,
    };
    let mut headers = pairs("headers")?;
    headers.extend(pairs("http_headers")?);
    Ok(McpServerConfig {
        name: name.to_string(),
        local: boolean("local")?.unwrap_or(command.is_some()),
        enabled: boolean("enabled")?.unwrap_or(true),
        command,
        args,
        env: pairs("env")?,
        cwd: string("cwd")?,
        url,
        headers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (Vec<McpServerConfig>, Vec<String>) {
        let doc: toml_edit::DocumentMut = text.parse().unwrap();
        parse(doc.get("mcp_servers").unwrap())
    }

    #[test]
    fn stdio_and_http_entries_in_the_shape_other_agents_use() {
        let (servers, warnings) = parsed(
            r#"
[mcp_servers.files]
command = "npx"
args = ["-y", "server-filesystem", "/tmp"]
env = { LOG_LEVEL = "warn" }

[mcp_servers.docs]
type = "http"
url = "https://docs.example.com/mcp"
http_headers = { Authorization = "Bearer abc" }
enabled = false
"#,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let files = &servers[0];
        assert_eq!(files.command.as_deref(), Some("npx"));
        assert_eq!(files.args.len(), 3);
        assert_eq!(files.env, vec![("LOG_LEVEL".to_string(), "warn".to_string())]);
        assert!(files.local && files.enabled, "stdio is local by default");
        let docs = &servers[1];
        assert_eq!(docs.headers[0].1, "Bearer abc");
        assert!(!docs.local && !docs.enabled, "HTTP is remote unless marked local");
    }

    #[test]
    fn a_bad_entry_is_a_warning_and_the_others_stand() {
        let (servers, warnings) = parsed(
            r#"
[mcp_servers.both]
command = "x"
url = "http://127.0.0.1/mcp"

[mcp_servers.old]
type = "sse"
url = "http://127.0.0.1/sse"

[mcp_servers."a__b"]
command = "x"

[mcp_servers.good]
command = "x"
local = false
"#,
        );
        assert_eq!(servers.len(), 1);
        assert!(!servers[0].local, "a stdio server may say it is remote");
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("not both"));
        assert!(warnings[1].contains("streamable-HTTP"));
    }
}
