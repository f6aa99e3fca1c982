//! Jarvis as an MCP *client*: a real MCP server built with the official
//! Python SDK (tests/integration/mcp_tool_server.py, `MCPServer`, run from
//! the virtualenv `cargo xtask test` installs) over stdio and over
//! streamable HTTP. A stand-in model calls its tools in a chat turn; a
//! killed server is started again (stdio) or reconnected (HTTP); a remote
//! server's call after a private read waits for the human and is refused on
//! "no"; a cloud model never receives a private note through a tool result.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jarvis::cancel::Cancel;
use jarvis::chat::tools::{ConfirmAction, ToolDeps, VaultSettings};
use jarvis::chat::{CachedProviders, ChatAgent, ChatDeps, ChatSettings, SessionStore};
use jarvis::llm::LlmSettings;
use jarvis::mcp_client::{McpClients, ServerSpec, Status, Transport};
use jarvis::paths::JarvisHome;

use crate::support::chat::{assert_no_private_text, fixture, session, split_settings, Events, Fx, NOTES, SECRET};
use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::net::free_port;

/// The SDK's python (the virtualenv of `cargo xtask mcp-sdk`).
fn sdk_python() -> PathBuf {
    let venv = std::env::var_os("JARVIS_TEST_MCP_VENV").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/jarvis-tests/python-mcp-2.3.0"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(
        python.exists() && venv.join(".jarvis-ready").exists(),
        "the MCP SDK is not installed at {} — run `cargo xtask mcp-sdk`",
        venv.display()
    );
    python
}

fn server_script() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/integration/mcp_tool_server.py").to_string()
}

fn stdio_server(name: &str, env: Vec<(String, String)>) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        transport: Transport::Stdio {
            command: sdk_python().display().to_string(),
            args: vec![server_script(), "stdio".into()],
            env,
            cwd: None,
        },
        local: true,
        enabled: true,
    }
}

/// The HTTP server as its own process, killed on drop.
struct HttpServer {
    child: Child,
    port: u16,
    record: PathBuf,
}

impl HttpServer {
    fn start(port: u16, record: PathBuf) -> HttpServer {
        let child = Command::new(sdk_python())
            .args([server_script(), "http".into(), port.to_string()])
            .env("RECORD", &record)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the MCP test server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the MCP test server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        HttpServer { child, port, record }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn received(&self) -> String {
        std::fs::read_to_string(&self.record).unwrap_or_default()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TOKEN: &str = "mcp-secret-token-0123456789";

fn http_server(name: &str, url: &str) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        transport: Transport::Http {
            url: url.into(),
            headers: vec![("Authorization".into(), format!("Bearer {TOKEN}"))],
        },
        local: false,
        enabled: true,
    }
}

fn agent(fx: &Fx, llm: LlmSettings, clients: Arc<McpClients>) -> ChatAgent {
    ChatAgent::new(ChatDeps {
        tools: ToolDeps {
            drafts: None,
            kb: fx.kb.clone(),
            vault: VaultSettings {
                root: Some(fx.vault.clone()),
                private_dirs: vec!["private".into()],
            },
            papers: None,
            mcp: Some(clients),
        },
        providers: Arc::new(CachedProviders::new(llm)),
        home: JarvisHome::at(fx.sb.jarvis_home()),
        sessions: SessionStore::new(fx.sb.jarvis_home().join("sessions")),
        settings: ChatSettings::default(),
    })
}

fn offered(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|x| x["function"]["name"].as_str().or(x["name"].as_str()).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn chat_log(fx: &Fx) -> String {
    std::fs::read_to_string(fx.sb.jarvis_home().join("logs/chat.log")).unwrap_or_default()
}

#[test]
fn a_stand_in_model_calls_a_stdio_server_and_the_server_is_started_again_after_a_kill() {
    let fx = fixture(NOTES);
    let clients = Arc::new(McpClients::new(vec![stdio_server(
        "tools",
        vec![("MARK".into(), "(configured env)".into())],
    )]));
    let model = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "tools__weather", vec![r#"{"city":"Oslo"}"#])]),
        Wire::OpenRouter.text(&["Sunny in Oslo, 21 degrees."]),
    ]);
    let a = agent(&fx, split_settings(&model, &model), clients.clone());
    let s = session(&a, "openrouter:acme/model-1");
    let r = a
        .run_turn(&s, "Weather in Oslo?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert_eq!(r.text.trim(), "Sunny in Oslo, 21 degrees.");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    let tools = offered(&reqs[0].body);
    for t in ["tools__weather", "tools__whoami", "tools__echo", "search_kb"] {
        assert!(tools.iter().any(|x| x == t), "{t} is offered: {tools:?}");
    }
    let second = reqs[1].body.to_string();
    assert!(
        second.contains("Forecast for Oslo: sunny, 21 degrees. (configured env)"),
        "the tool's result reached the model: {second}"
    );
    let log = chat_log(&fx);
    assert!(log.contains("mcp_call") && log.contains("tool=tools__weather"), "{log}");

    // Killed mid-session: the next call starts the server again.
    let pid = |c: &McpClients| c.call("tools", "whoami", &serde_json::json!({})).unwrap().text;
    let before = pid(&clients);
    let n: i32 = before.trim_start_matches("pid ").parse().unwrap();
    // SAFETY-free: a plain kill of the child we know by its own answer.
    Command::new("kill").args(["-9", &n.to_string()]).status().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let after = pid(&clients);
    assert_ne!(before, after, "a new server process answered");
    assert!(matches!(&clients.list()[0].1, Status::Connected { tools } if tools.len() == 4));
}

#[test]
fn over_http_a_stand_in_model_calls_the_tool_and_a_restarted_server_is_reconnected() {
    let fx = fixture(NOTES);
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = HttpServer::start(port, dir.path().join("record.txt"));
    let clients = Arc::new(McpClients::new(vec![http_server("web", &server.url())]));
    let model = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "web__weather", vec![r#"{"city":"Lima"}"#])]),
        Wire::OpenRouter.text(&["Lima is sunny."]),
        Wire::OpenRouter.tool_calls(&[("c2", "web__weather", vec![r#"{"city":"Quito"}"#])]),
        Wire::OpenRouter.text(&["Quito is sunny."]),
    ]);
    let a = agent(&fx, split_settings(&model, &model), clients.clone());
    let s = session(&a, "openrouter:acme/model-1");
    let r = a
        .run_turn(&s, "Lima?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert_eq!(r.text.trim(), "Lima is sunny.");
    assert!(model.requests()[1]
        .body
        .to_string()
        .contains("Forecast for Lima: sunny"));

    // The server goes away and comes back on the same port: its old session
    // is unknown to it, and the client connects afresh.
    drop(server);
    let _server = HttpServer::start(port, dir.path().join("record.txt"));
    let r = a
        .run_turn(&s, "Quito?", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert_eq!(r.text.trim(), "Quito is sunny.");
    assert!(model.requests()[3]
        .body
        .to_string()
        .contains("Forecast for Quito: sunny"));
    let log = chat_log(&fx);
    assert!(!log.contains(TOKEN), "the header's token is never logged");
}

#[test]
fn a_remote_call_after_a_private_read_waits_for_the_human_and_no_sends_nothing() {
    let fx = fixture(NOTES);
    let dir = tempfile::tempdir().unwrap();
    let server = HttpServer::start(free_port(), dir.path().join("record.txt"));
    let clients = Arc::new(McpClients::new(vec![http_server("web", &server.url())]));
    let echo = format!(r#"{{"text":"the code word is {SECRET}"}}"#);
    let model = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("x", "read_file", vec![r#"{"path":"private/diary.md"}"#])]),
        Wire::Ollama.tool_calls(&[("y", "web__echo", vec![echo.as_str()])]),
        Wire::Ollama.text(&["I asked you first."]),
        Wire::Ollama.tool_calls(&[("z", "web__echo", vec![echo.as_str()])]),
        Wire::Ollama.text(&["Asked again."]),
    ]);
    let a = agent(&fx, split_settings(&model, &model), clients);
    let s = session(&a, "ollama:qwen3-vl:30b");
    let events = Events::default();
    let r = a
        .run_turn(
            &s,
            "Send my code word to the echo service",
            &events.sink(),
            &Cancel::new(),
        )
        .unwrap()
        .unwrap();
    assert!(r.private);
    let third = model.requests()[2].body.to_string();
    assert!(
        third.contains("confirmation dialog"),
        "the model is told it waits: {third}"
    );
    assert!(server.received().is_empty(), "nothing reached the remote server");

    let pending = a.pending_for(&r.session_id);
    assert_eq!(pending.len(), 1);
    let p = &pending[0];
    assert_eq!(p.action, ConfirmAction::McpCall);
    assert!(p.description.contains("MCP server `web`") && p.description.contains(&server.url()));
    assert!(
        p.description.contains(SECRET),
        "the arguments are shown as sent: {}",
        p.description
    );

    let said = a.confirm_action(&p.token, false).unwrap();
    assert!(said.contains("nothing was sent"), "{said}");
    assert!(server.received().is_empty(), "refused on no");

    // Asked again and answered yes: the call runs and its result is shown.
    let r = a
        .run_turn(&s, "Please send it", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    let token = a.pending_for(&r.session_id)[0].token.clone();
    let said = a.confirm_action(&token, true).unwrap();
    assert!(said.contains(&format!("echo: the code word is {SECRET}")), "{said}");
    assert!(server.received().contains(SECRET));
    let log = chat_log(&fx);
    assert!(log.contains("tool=web__echo"), "{log}");
}

#[test]
fn a_cloud_model_never_receives_a_private_note_through_a_tool_result() {
    let fx = fixture(NOTES);
    let clients = Arc::new(McpClients::new(vec![stdio_server("files", vec![])]));
    let diary = fx.vault.join("private/diary.md");
    let public = fx.vault.join("cooking/pasta.md");
    let read = |p: &std::path::Path| format!(r#"{{"path":"{}"}}"#, p.display());
    let (read_diary, read_pasta) = (read(&diary), read(&public));
    let model = FakeServer::start(vec![
        Wire::OpenRouter.tool_calls(&[("c1", "files__read_note", vec![read_diary.as_str()])]),
        Wire::OpenRouter.tool_calls(&[("c2", "files__read_note", vec![read_pasta.as_str()])]),
        Wire::OpenRouter.text(&["Pasta: nine minutes."]),
    ]);
    let a = agent(&fx, split_settings(&model, &model), clients);
    let s = session(&a, "openrouter:acme/model-1");
    let r = a
        .run_turn(&s, "Read my notes", &Events::default().sink(), &Cancel::new())
        .unwrap()
        .unwrap();
    assert_eq!(r.text.trim(), "Pasta: nine minutes.");
    let reqs = model.requests();
    assert!(reqs[1].body.to_string().contains("Withheld"), "{}", reqs[1].body);
    assert!(
        reqs[2].body.to_string().contains("Boil the pasta"),
        "a public note passes"
    );
    assert_no_private_text(&model);
}
