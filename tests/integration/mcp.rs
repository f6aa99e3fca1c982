//! `jarvis mcp` and `/mcp` of `jarvis serve`, driven by the official MCP
//! Python SDK (PyPI `mcp`, installed by `cargo xtask test` into a
//! virtualenv; see xtask/src/setup.rs): initialize, list the tools, call
//! each, check the results. A private note planted as the best match never
//! appears under the default; with `[mcp] include_private = true` it does.
//! Over HTTP, a foreign Host and a foreign Origin are refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::fs::write;
use crate::support::owner::addr_of;
use crate::support::{run, Owned, Sandbox};

/// Only the planted private note contains this.
const SECRET: &str = "pelican-zebra-417";
const PRIVATE_PATH: &str = "private/diary.md";

/// The SDK's python: the virtualenv `cargo xtask test` makes (same path
/// rule as xtask's `mcp_venv_dir`).
fn sdk_python() -> PathBuf {
    let venv = std::env::var_os("JARVIS_TEST_MCP_VENV").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/jarvis-tests/python-mcp-2.3.0"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(
        python.exists() && venv.join(".jarvis-ready").exists(),
        "the MCP SDK is not installed at {} — run `cargo xtask mcp-sdk` (or `cargo xtask test`, which installs it too)",
        venv.display()
    );
    python
}

struct Fixture {
    sb: Sandbox,
    vault: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let sb = Sandbox::new();
        let vault = sb.dir.path().join("vault");
        write(
            &vault,
            "cooking/bread.md",
            "# Sourdough\n\nFeed the starter twice a day; bake at 250 degrees with steam for the first twenty minutes.\n",
        );
        write(
            &vault,
            "jobs/acme.md",
            "---\ntype: job_application\ncompany: Acme Bio\nstatus: applied\nsalary: 100k\ntags: [remote, biotech]\n---\n# Acme Bio\n\nApplied for the pelican tracking data role; interview on Friday.\n",
        );
        write(
            &vault,
            PRIVATE_PATH,
            &format!("# Diary\n\nThe pelican code word is {SECRET}. Pelican pelican code word: {SECRET}.\n"),
        );
        let fx = Fixture { sb, vault };
        fx.config(false);
        let mut c = fx.jarvis();
        c.args(["kb", "index-vault", "--json"]);
        let r = run(c);
        assert_eq!(r.code, 0, "index-vault: {}", r.stderr);
        fx
    }

    fn config(&self, include_private: bool) {
        self.config_with(include_private, "");
    }

    fn config_with(&self, include_private: bool, rag: &str) {
        self.sb.write_config(&format!(
            "[vault]\npath = \"{}\"\n\n[mcp]\ninclude_private = {include_private}\n\n[rag]\n{rag}\n",
            self.vault.display()
        ));
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.sb.home().display().to_string()),
            ("JARVIS_HOME", self.sb.jarvis_home().display().to_string()),
            ("JARVIS_ORT_LIB", crate::support::runtime::shared_ort().to_string()),
            ("PATH", "/usr/bin:/bin".to_string()),
        ]
    }

    fn jarvis(&self) -> Command {
        let mut c = self.sb.jarvis();
        c.env("JARVIS_ORT_LIB", crate::support::runtime::shared_ort());
        c
    }

    /// Run the SDK client against `target` ({"stdio": …} or {"url": …}).
    fn client(&self, plan: Value, calls: &Value) -> Value {
        self.client_then(plan, calls, json!([]))
    }

    /// [`Fixture::client`], then run `then` steps while the session is open.
    fn client_then(&self, mut plan: Value, calls: &Value, then: Value) -> Value {
        plan["calls"] = calls.clone();
        plan["then"] = then;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/mcp_client.py");
        let mut c = Command::new(sdk_python());
        c.env_clear()
            .arg(script)
            .arg(plan.to_string())
            .current_dir(self.sb.dir.path());
        for (k, v) in self.env() {
            c.env(k, v);
        }
        let r = run(c);
        assert_eq!(r.code, 0, "the MCP client failed:\n{}\n{}", r.stdout, r.stderr);
        let mut v: Value = serde_json::from_str(r.stdout.trim())
            .unwrap_or_else(|e| panic!("client output: {e}\n{}\n{}", r.stdout, r.stderr));
        v["stderr"] = json!(r.stderr);
        v
    }

    /// `mode`: "legacy" (the `initialize` handshake) or "auto" (the SDK
    /// discovers the newest protocol the server speaks).
    fn stdio_plan(&self, mode: &str) -> Value {
        let env: serde_json::Map<String, Value> =
            self.env().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        json!({"mode": mode, "stdio": {"command": env!("CARGO_BIN_EXE_jarvis"), "args": ["mcp"], "env": env}})
    }
}

/// One call of each tool, plus the private note asked for by path.
fn calls() -> Value {
    json!([
        {"name": "search", "args": {"query": "pelican code word", "n": 5}},
        {"name": "search", "args": {"query": "pelican", "kinds": ["notes"], "category": "job_application", "status": "applied", "entity": "Acme Bio", "tags": ["remote"], "fields": {"salary": "100k"}, "group_by_document": true}},
        {"name": "get_document", "args": {"source": "cooking/bread.md"}},
        {"name": "get_document", "args": {"source": PRIVATE_PATH}},
        {"name": "list_documents", "args": {"kinds": ["notes"]}},
        {"name": "kb_stats", "args": {}},
        {"name": "search", "args": {"query": "x", "bogus": 1}},
        // Nasty: every note shares source "local"; a kind with no documents;
        // a page past the end; a search asking for private only by filter.
        {"name": "get_document", "args": {"source": "local"}},
        {"name": "search", "args": {"query": "pelican code word", "kinds": ["chats"]}},
        {"name": "get_document", "args": {"source": "jobs/acme.md", "page": 99}},
        {"name": "search", "args": {"query": "pelican code word", "kinds": "all", "n": 50, "group_by_document": true}},
    ])
}

fn cites(result: &Value, key: &str) -> Vec<String> {
    result["structured"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {result}"))
        .iter()
        .map(|r| r["cite"].as_str().unwrap().to_string())
        .collect()
}

/// What every transport must show under the default (public-only) scope.
fn check_public_only(out: &Value) {
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "get_document", "list_documents", "kb_stats"], "{out}");
    for t in out["tools"].as_array().unwrap() {
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    assert_eq!(out["server_name"], "jarvis");
    let r = out["results"].as_array().unwrap();

    // The private note is the best match for this query, yet absent.
    assert!(!r[0]["is_error"].as_bool().unwrap(), "{}", r[0]);
    let found = cites(&r[0], "results");
    assert!(found.contains(&"jobs/acme.md".to_string()), "{found:?}");
    assert!(!found.iter().any(|c| c.contains("private")), "{found:?}");
    assert!(r[0]["structured"]["results"][0]["path"].is_string(), "{}", r[0]);
    // Numbered from 1 as the chat numbers its passages, to cite as [n].
    let numbers: Vec<u64> = r[0]["structured"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["n"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>(), "{}", r[0]);

    // Record filters and grouping.
    assert_eq!(cites(&r[1], "results"), ["jobs/acme.md"], "{}", r[1]);
    assert_eq!(r[1]["structured"]["grouped_by_document"], true);
    assert!(
        r[1]["structured"]["results"][0]["more_passages"].is_number(),
        "{}",
        r[1]
    );

    // get_document: a public note in full; the private one refused by name
    // of the setting.
    assert!(!r[2]["is_error"].as_bool().unwrap(), "{}", r[2]);
    assert_eq!(r[2]["structured"]["cite"], "cooking/bread.md");
    assert!(
        r[2]["structured"]["passages"][0]["text"]
            .as_str()
            .unwrap()
            .contains("starter"),
        "{}",
        r[2]
    );
    assert_eq!(
        r[2]["structured"]["passages"][0]["n"], 1,
        "a document's passages are numbered by their place in it: {}",
        r[2]
    );
    assert!(r[3]["is_error"].as_bool().unwrap(), "{}", r[3]);
    let refusal = r[3]["text"].as_str().unwrap();
    assert!(
        refusal.contains("include_private") && refusal.contains("[mcp]"),
        "{refusal}"
    );

    // Listings and counts see public documents only.
    let listed = cites(&r[4], "documents");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(!listed.contains(&PRIVATE_PATH.to_string()));
    assert_eq!(r[5]["structured"]["by_kind"]["note"]["documents"], 2, "{}", r[5]);
    assert_eq!(r[5]["structured"]["documents"], 2, "{}", r[5]);

    // A bad argument is a tool error the model can read.
    assert!(
        r[6]["is_error"].as_bool().unwrap() && r[6]["text"].as_str().unwrap().contains("bogus"),
        "{}",
        r[6]
    );

    assert!(r[7]["is_error"].as_bool().unwrap(), "{}", r[7]);
    assert!(
        r[7]["text"].as_str().unwrap().contains("no single document"),
        "{}",
        r[7]
    );
    assert_eq!(cites(&r[8], "results").len(), 0, "{}", r[8]);
    assert_eq!(r[9]["structured"]["page"], 1, "clamped to the last page: {}", r[9]);
    assert_eq!(r[9]["structured"]["next_page"], Value::Null);
    let all = cites(&r[10], "results");
    assert_eq!(all.len(), 2, "both public notes, nothing else: {all:?}");

    // Never returned or mentioned anywhere, except in the refusal that
    // echoes the path the client asked for.
    for (i, res) in r.iter().enumerate() {
        let text = res.to_string();
        assert!(!text.contains(SECRET), "call {i} leaked the private note: {text}");
        if i != 3 {
            assert!(
                !text.contains(PRIVATE_PATH),
                "call {i} mentioned the private note: {text}"
            );
        }
    }
}

#[test]
fn stdio_server_shares_public_documents_only_unless_include_private() {
    let fx = Fixture::new();
    let out = fx.client(fx.stdio_plan("legacy"), &calls());
    check_public_only(&out);
    assert!(
        out["protocol_version"].as_str().unwrap().starts_with("2025-"),
        "an initialize handshake: {}",
        out["protocol_version"]
    );
    assert!(
        out["stderr"].as_str().unwrap().contains("public documents only"),
        "{}",
        out["stderr"]
    );

    fx.config(true);
    let out = fx.client(
        fx.stdio_plan("auto"),
        &json!([
            {"name": "search", "args": {"query": "pelican code word", "n": 3}},
            {"name": "get_document", "args": {"source": PRIVATE_PATH}},
            {"name": "kb_stats", "args": {}},
        ]),
    );
    assert!(
        out["stderr"].as_str().unwrap().contains("include_private = true"),
        "{}",
        out["stderr"]
    );
    let r = out["results"].as_array().unwrap();
    assert_eq!(cites(&r[0], "results")[0], PRIVATE_PATH, "{}", r[0]);
    assert_eq!(r[0]["structured"]["results"][0]["visibility"], "private");
    assert!(!r[1]["is_error"].as_bool().unwrap(), "{}", r[1]);
    assert!(r[1]["text"].as_str().unwrap().contains(SECRET), "{}", r[1]);
    assert_eq!(r[2]["structured"]["documents"], 3, "{}", r[2]);
}

/// Start `jarvis serve --port 0`; returns it and its port once it serves.
/// The guard kills it if the test panics.
fn start_serve(fx: &Fixture) -> (Owned, u16) {
    let mut c = fx.jarvis();
    c.args(["serve", "--port", "0"]);
    let child = Owned::spawn(c);
    let port = addr_of(&child.web_url()).port();
    (child, port)
}

#[test]
fn through_a_running_owner_and_over_http_with_host_and_origin_checks() {
    let fx = Fixture::new();
    let (mut serve, port) = start_serve(&fx);

    // stdio while serve owns the knowledge base: the calls go through its
    // socket (this process could not open the store itself).
    let out = fx.client(fx.stdio_plan("auto"), &calls());
    check_public_only(&out);

    // The same tools over streamable HTTP at /mcp.
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = fx.client(json!({ "url": url, "mode": "legacy" }), &calls());
    check_public_only(&out);
    let out = fx.client(json!({ "url": url, "mode": "auto" }), &calls());
    check_public_only(&out);

    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let host = format!("127.0.0.1:{port}");
    let post = |headers: &[(&str, &str)]| {
        let mut hs = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        hs.extend_from_slice(headers);
        crate::support::web::raw_request(addr, "POST", "/mcp", &hs, Some(body))
    };
    let ok = post(&[("Host", &host)]);
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.text().contains("jarvis"), "{}", ok.text());
    let foreign_host = format!("evil.example:{port}");
    let r = post(&[("Host", &foreign_host)]);
    assert_eq!(r.status, 421, "a foreign Host is refused: {}", r.text());
    let r = post(&[("Host", &host), ("Origin", "http://evil.example")]);
    assert_eq!(r.status, 403, "a foreign Origin is refused: {}", r.text());
    let r = crate::support::web::raw_request(
        addr,
        "GET",
        "/mcp",
        &[
            ("Host", &host),
            ("Origin", "http://evil.example"),
            ("Accept", "text/event-stream"),
        ],
        None,
    );
    assert_eq!(r.status, 403, "a foreign Origin is refused on GET too: {}", r.text());
    // Stops on SIGTERM (its exit status is not what this test is about).
    serve.terminate();
}

/// `include_private = true` lifts the default over HTTP as well: `/mcp` on
/// `jarvis serve` returns, reads and counts the private note.
#[test]
fn over_http_include_private_lifts_the_default() {
    let fx = Fixture::new();
    fx.config(true);
    let (mut serve, port) = start_serve(&fx);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = fx.client(
        json!({ "url": url, "mode": "auto" }),
        &json!([
            {"name": "search", "args": {"query": "pelican code word", "n": 3}},
            {"name": "get_document", "args": {"source": PRIVATE_PATH}},
            {"name": "kb_stats", "args": {}},
        ]),
    );
    let r = out["results"].as_array().unwrap();
    assert_eq!(cites(&r[0], "results")[0], PRIVATE_PATH, "{}", r[0]);
    assert!(!r[1]["is_error"].as_bool().unwrap(), "{}", r[1]);
    assert!(r[1]["text"].as_str().unwrap().contains(SECRET), "{}", r[1]);
    assert_eq!(r[2]["structured"]["documents"], 3, "{}", r[2]);
    // Stops on SIGTERM (its exit status is not what this test is about).
    serve.terminate();
}

#[test]
fn a_stdio_server_without_an_owner_lets_go_of_the_knowledge_base_when_idle() {
    let fx = Fixture::new();
    // A one-shot command that finds the store held fails at once here.
    fx.config_with(false, "lock_wait_seconds = 0");
    let stats = json!([env!("CARGO_BIN_EXE_jarvis"), "kb", "stats", "--json"]);
    let out = fx.client_then(
        fx.stdio_plan("legacy"),
        &json!([{"name": "kb_stats", "args": {}}]),
        json!([{"sleep": 0, "argv": stats}, {"sleep": 13, "argv": stats}]),
    );
    assert_eq!(out["results"][0]["structured"]["documents"], 2, "{out}");
    let then = out["then"].as_array().unwrap();
    assert_ne!(then[0]["code"], 0, "held right after a call: {}", then[0]);
    assert!(
        then[0]["stderr"].as_str().unwrap().contains("mcp"),
        "names the holder: {}",
        then[0]
    );
    assert_eq!(then[1]["code"], 0, "released after 10 idle seconds: {}", then[1]);
}
