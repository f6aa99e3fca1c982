//! The MCP servers list in a real browser: a stdio server (the SDK test
//! server) connected by the first chat turn, one whose command does not
//! exist (reported, and the chat works anyway), and an HTTP server switched
//! off in the configuration. The switch turns a server off for the next
//! turn and is remembered. Screenshots (desktop and phone) land in
//! `target/screenshots/`.

use crate::support::browser::{assert_only_app_origin, text_of, Browser};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::web::WebServer;

const ENTER: &str = "\u{E007}";

fn python() -> String {
    let venv = std::env::var_os("JARVIS_TEST_MCP_VENV").map_or_else(
        || {
            std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/jarvis-tests/python-mcp-2.3.0")
        },
        std::path::PathBuf::from,
    );
    venv.join("bin/python").display().to_string()
}

#[test]
fn the_mcp_servers_list_shows_each_servers_state_and_switches_one_off() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.text(&["Hello."]),
        Wire::Ollama.text(&["Hello again."]),
    ]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/integration/mcp_tool_server.py");
    let s = WebServer::with_llm(
        &llm.url,
        &format!(
            r#"
[mcp_servers.tools]
command = "{}"
args = ["{script}", "stdio"]

[mcp_servers.broken]
command = "/nonexistent/bin/mcp-server"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
headers = {{ Authorization = "Bearer never-shown-123456" }}
enabled = false
"#,
            python()
        ),
    );
    let b = Browser::start(1280, 860);
    b.goto(&s.url("/"));
    b.wait(
        "the composer",
        "return document.activeElement && document.activeElement.id === 'input'",
    );
    // The first turn starts the servers it needs: the working one's tools
    // are offered, the broken one is reported, the turn answers anyway.
    b.type_into("#input", &format!("Hi{ENTER}"));
    b.wait(
        "the reply",
        "return [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('Hello.'))",
    );
    let first = llm.requests()[0].body.to_string();
    assert!(first.contains("tools__weather"), "the tools are offered");
    assert!(!first.contains("docs__"), "a switched-off server offers nothing");

    b.js("document.querySelector('#menu-button').click()");
    b.click("#menu [data-action='mcp']");
    b.wait(
        "three servers",
        "return document.querySelectorAll('#mcp-body .mcp-server').length === 3",
    );
    let tools = text_of(&b, "#mcp-body .mcp-server[data-name='tools']");
    assert!(tools.contains("Connected · 4 tools"), "{tools}");
    assert!(tools.contains("local") && tools.contains("stdio"), "{tools}");
    let broken = text_of(&b, "#mcp-body .mcp-server[data-name='broken']");
    assert!(
        broken.contains("Failed") && broken.contains("could not start"),
        "{broken}"
    );
    let docs = text_of(&b, "#mcp-body .mcp-server[data-name='docs']");
    assert!(docs.contains("remote") && docs.contains("Off"), "{docs}");
    let page = b
        .js("return document.querySelector('#mcp-body').textContent")
        .to_string();
    assert!(!page.contains("never-shown-123456"), "headers are never shown");
    b.screenshot("30-mcp-servers-desktop");

    // Switch the working one off: the next turn offers none of its tools.
    b.click("#mcp-body .mcp-server[data-name='tools'] input[role='switch']");
    b.wait(
        "switched off",
        "return (document.querySelector(\"#mcp-body .mcp-server[data-name='tools'] .mcp-state\")?.textContent || '').startsWith('Off')",
    );
    let listed = s.get("/mcp-servers").json();
    let tools = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "tools")
        .unwrap()
        .clone();
    assert_eq!(tools["enabled"], false);
    b.resize(400, 800);
    b.screenshot("31-mcp-servers-phone");
    b.js("document.querySelector('#mcp-dialog').close()");
    b.type_into("#input", &format!("Again{ENTER}"));
    b.wait(
        "the second reply",
        "return [...document.querySelectorAll('.msg.assistant')].some(e => e.textContent.includes('Hello again.'))",
    );
    let second = llm.requests()[1].body.to_string();
    assert!(
        !second.contains("tools__weather"),
        "a switched-off server's tools are gone"
    );
    assert_only_app_origin(&b.finish(), &s.url(""));
}
