//! The web app at the HTTP level, against an in-process server: hardening
//! (Host allowlist, cross-site refusal, body limits, ids), assets and the
//! routes that need no LLM.

use serde_json::json;

use crate::support::web::WebServer;

#[test]
fn health_answers_and_every_response_carries_the_security_headers() {
    let s = WebServer::start();
    let r = s.get("/health");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["ok"], true);
    let csp = r.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    // Refusals carry them too.
    let r = s.request("GET", "/health", &[("Host", "evil.example:80")], None);
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

#[test]
fn a_foreign_host_header_is_misdirected() {
    let s = WebServer::start();
    let port = s.addr.port();
    for bad in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "127.0.0.1".to_string(),
        format!("127.0.0.1.evil.example:{port}"),
        String::new(),
    ] {
        let r = s.request("GET", "/health", &[("Host", &bad)], None);
        assert_eq!(r.status, 421, "Host {bad:?}: {}", r.text());
        assert!(r.text().contains("DNS rebinding"), "{}", r.text());
    }
    for good in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let r = s.request("GET", "/health", &[("Host", &good)], None);
        assert_eq!(r.status, 200, "Host {good:?}");
    }
    // The index page is refused too, not just the API.
    assert_eq!(s.request("GET", "/", &[("Host", "evil.example")], None).status, 421);
}

#[test]
fn a_cross_site_post_is_refused_before_any_route_runs() {
    let s = WebServer::start();
    let body = json!({"response_style": "pwned"}).to_string();
    let cases: &[&[(&str, &str)]] = &[
        &[("Origin", "http://evil.example"), ("Content-Type", "application/json")],
        &[("Sec-Fetch-Site", "cross-site"), ("Content-Type", "application/json")],
        &[("Sec-Fetch-Site", "same-site"), ("Content-Type", "application/json")],
        &[("Origin", "null"), ("Content-Type", "application/json")],
        // The right host but the wrong scheme/port is another origin.
        &[("Origin", "https://127.0.0.1"), ("Content-Type", "application/json")],
    ];
    for hs in cases {
        let r = s.request("POST", "/settings", hs, Some(body.as_bytes()));
        assert_eq!(r.status, 403, "{hs:?}: {}", r.text());
        assert_eq!(r.json()["kind"], "cross_site");
    }
    let r = s.request("DELETE", "/sessions/abc", &[("Origin", "http://evil.example")], None);
    assert_eq!(r.status, 403);
    // GETs from anywhere are fine (they change nothing and CORS keeps the
    // answer from a foreign page).
    let r = s.request("GET", "/health", &[("Sec-Fetch-Site", "cross-site")], None);
    assert_eq!(r.status, 200);
}

#[test]
fn an_oversized_body_gets_413_and_bad_json_400() {
    let s = WebServer::start();
    let big = vec![b'a'; jarvis::web::BODY_LIMIT + 10];
    let origin = s.origin();
    let r = s.request(
        "POST",
        "/settings",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        Some(&big),
    );
    assert_eq!(r.status, 413, "{}", r.text());
    let r = s.request(
        "POST",
        "/settings",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        Some(b"{not json"),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.json()["error"].as_str().unwrap().contains("bad request body"));
    // A form post (what a cross-site <form> could send) is not JSON.
    let r = s.request(
        "POST",
        "/settings",
        &[
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(b"response_style=x"),
    );
    assert_eq!(r.status, 415, "{}", r.text());
}

#[test]
fn assets_are_embedded_with_their_mime_types_and_nothing_else_is_reachable() {
    let s = WebServer::start();
    let r = s.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r.text().contains("<script src=\"/static/app.js\""), "{}", r.text());
    assert!(!r.text().contains("<script>"), "no inline script");
    let r = s.get("/static/app.js");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/javascript; charset=utf-8"));
    let r = s.get("/static/style.css");
    assert_eq!(r.header("content-type"), Some("text/css; charset=utf-8"));
    let etag = r.header("etag").unwrap().to_string();
    let r = s.request("GET", "/static/style.css", &[("If-None-Match", &etag)], None);
    assert_eq!(r.status, 304);
    for bad in [
        "/static/../Cargo.toml",
        "/static/%2e%2e/Cargo.toml",
        "/static/..%2f..%2fCargo.toml",
        "/static/nope.js",
    ] {
        let r = s.get(bad);
        assert_eq!(r.status, 404, "{bad}");
    }
    assert_eq!(s.get("/no-such-route").status, 404);
}

#[test]
fn two_host_headers_get_400_whatever_their_order() {
    let s = WebServer::start();
    let good = s.host();
    for pair in [
        [good.as_str(), "evil.example"],
        ["evil.example", good.as_str()],
        [good.as_str(), good.as_str()],
    ] {
        let r = s.request("GET", "/health", &[("Host", pair[0]), ("Host", pair[1])], None);
        assert_eq!(r.status, 400, "Host {pair:?}: {}", r.text());
        assert!(r.text().contains("more than one Host"), "{}", r.text());
    }
}

#[test]
fn a_body_that_stalls_after_its_headers_gets_408_and_the_connection_closes() {
    use std::io::{Read, Write};
    let s = WebServer::start();
    let mut c = std::net::TcpStream::connect(s.addr).expect("connect");
    // Longer than the deadline: the server must answer well before this.
    c.set_read_timeout(Some(jarvis::web::security::BODY_DEADLINE * 3))
        .expect("timeout");
    let origin = s.origin();
    let head = format!(
        "POST /settings HTTP/1.1\r\nHost: {}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"resp",
        s.host()
    );
    c.write_all(head.as_bytes()).expect("send");
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let read = c.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(
        read.is_ok(),
        "the connection was still held after {:?}: {read:?}",
        started.elapsed()
    );
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");
    // A body that arrives whole is unaffected.
    let r = s.post("/settings", &json!({}));
    assert_ne!(r.status, 408, "{}", r.text());
}

#[test]
fn reading_the_active_session_creates_none() {
    let s = WebServer::start();
    let before = s.get("/sessions").json();
    for _ in 0..3 {
        let r = s.get("/sessions/active");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["session"], serde_json::Value::Null, "{}", r.text());
    }
    assert_eq!(s.get("/sessions").json(), before, "a GET changed the session list");
    // The page asks for a new one explicitly, and then it is the active one.
    let made = s.post("/sessions/new", &json!({}));
    assert_eq!(made.status, 200, "{}", made.text());
    let id = made.json()["session"]["id"].as_str().expect("id").to_string();
    assert_eq!(s.get("/sessions/active").json()["session"]["id"], id.as_str());
}

#[test]
fn headers_that_never_finish_do_not_hold_the_connection() {
    use std::io::{Read, Write};
    let s = WebServer::start();
    let mut c = std::net::TcpStream::connect(s.addr).expect("connect");
    c.set_read_timeout(Some(jarvis::web::HEADER_DEADLINE * 2))
        .expect("timeout");
    // A request head that never ends (a slow-loris).
    c.write_all(format!("GET /health HTTP/1.1\r\nHost: {}\r\nX-Slow: ", s.host()).as_bytes())
        .expect("send");
    let mut answer = Vec::new();
    let read = c.read_to_end(&mut answer);
    assert!(read.is_ok(), "the connection was still held: {read:?}");
    // The app itself still answers, and a streamed chat is not cut by it
    // (web_chat covers streams longer than the deadline).
    assert_eq!(s.get("/health").status, 200);
}
