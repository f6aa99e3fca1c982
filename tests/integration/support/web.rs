#![allow(dead_code)] // grows with the routes; browser tests use the rest
//! An in-process `jarvis serve` for HTTP and browser tests, and a tiny raw
//! HTTP/1.1 client (raw so tests control every header, Host included).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use jarvis::cancel::Cancel;

use super::runtime::{pdf_worker, shared_ort};
use super::Sandbox;

/// A running web app on 127.0.0.1:<free port>, stopped on drop.
pub struct WebServer {
    pub sandbox: Sandbox,
    pub addr: SocketAddr,
    pub app: Arc<jarvis::app::App>,
    stop: Cancel,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WebServer {
    pub fn start() -> WebServer {
        Self::start_with_config("")
    }

    /// A server on `config`, its first-run panel already finished (the
    /// views under test are the everyday ones; see [`WebServer::fresh`]).
    pub fn start_with_config(config: &str) -> WebServer {
        Self::start_in(Sandbox::new(), config)
    }

    /// [`WebServer::start_with_config`] in a sandbox the caller prepared
    /// (the disk-full test mounts a small filesystem at its JARVIS_HOME).
    pub fn start_in(sandbox: Sandbox, config: &str) -> WebServer {
        if !config.is_empty() {
            sandbox.write_config(config);
        }
        let home = jarvis::paths::JarvisHome::at(sandbox.jarvis_home());
        let state = home.ensure(jarvis::paths::Dir::State).unwrap();
        std::fs::write(state.join("first_run.json"), r#"{"state":"finished"}"#).unwrap();
        Self::serve(sandbox, open_app(home))
    }

    /// A brand-new home: no config file, nothing chosen, the first-run
    /// panel not yet seen. `env` adds variables (OLLAMA_HOST, …).
    pub fn fresh(env: &[(&str, &str)]) -> WebServer {
        let sandbox = Sandbox::new();
        let home = jarvis::paths::JarvisHome::at(sandbox.jarvis_home());
        let extra: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Self::serve(sandbox, open_app_with(home, extra))
    }

    fn serve(sandbox: Sandbox, app: Arc<jarvis::app::App>) -> WebServer {
        let stop = Cancel::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let (app2, stop2) = (app.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let bound = jarvis::web::bind(0).await.unwrap();
                tx.send(bound.addr()).unwrap();
                jarvis::web::serve_bound(app2, bound, stop2).await.unwrap();
            });
        });
        let addr = rx.recv_timeout(Duration::from_secs(30)).expect("server did not bind");
        WebServer {
            sandbox,
            addr,
            app,
            stop,
            thread: Some(thread),
        }
    }

    /// A server whose default model is Ollama at `llm_url` (a fake).
    pub fn with_llm(llm_url: &str, extra: &str) -> WebServer {
        Self::start_with_config(&format!(
            "[chat]\nprovider = \"ollama\"\nollama_host = \"{llm_url}\"\n{extra}"
        ))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.host())
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }

    /// A same-origin JSON POST, as the UI sends it.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> Resp {
        let origin = self.origin();
        self.request(
            "POST",
            path,
            &[
                ("Origin", &origin),
                ("Sec-Fetch-Site", "same-origin"),
                ("Content-Type", "application/json"),
            ],
            Some(body.to_string().as_bytes()),
        )
    }

    pub fn delete(&self, path: &str) -> Resp {
        let origin = self.origin();
        self.request(
            "DELETE",
            path,
            &[("Origin", &origin), ("Sec-Fetch-Site", "same-origin")],
            None,
        )
    }

    /// Any request with the default Host unless `headers` names one.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
        let host = self.host();
        let mut hs: Vec<(&str, &str)> = Vec::new();
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            hs.push(("Host", &host));
        }
        hs.extend_from_slice(headers);
        raw_request(self.addr, method, path, &hs, body)
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

pub fn open_app(home: jarvis::paths::JarvisHome) -> Arc<jarvis::app::App> {
    open_app_with(home, Vec::new())
}

/// [`open_app`] with more environment variables.
pub fn open_app_with(home: jarvis::paths::JarvisHome, extra: Vec<(String, String)>) -> Arc<jarvis::app::App> {
    let user_home = home.root().parent().unwrap().join("home");
    let jh = home.root().display().to_string();
    let ort = shared_ort().to_string();
    let app = jarvis::app::App::open(home, move |k| match k {
        "HOME" => Some(user_home.display().to_string()),
        "JARVIS_HOME" => Some(jh.clone()),
        "JARVIS_ORT_LIB" => Some(ort.clone()),
        _ => extra.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
    })
    .unwrap();
    // This process is the test harness, not `jarvis`: pages of a compiled
    // draft are drawn by the built binary's PDF worker.
    app.set_pdf_worker_command(pdf_worker(None));
    app
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Open a connection, send one request, and return the stream positioned
/// after the response head (for streaming bodies).
pub fn send_head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> (u16, Vec<(String, String)>, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    if let Some(b) = body {
        // A server refusing early may close before the whole body is sent.
        let _ = s.write_all(b);
    }
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    let mut hs = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            hs.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    (status, hs, r)
}

/// Read one chunk of a chunked body (None at the end).
pub fn read_chunk(r: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
    if size == 0 {
        return None;
    }
    let mut buf = vec![0; size + 2];
    r.read_exact(&mut buf).ok()?;
    buf.truncate(size);
    Some(buf)
}

pub fn raw_request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
    let (status, hs, mut r) = send_head(addr, method, path, headers, body);
    let chunked = hs
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let mut out = Vec::new();
    if chunked {
        while let Some(c) = read_chunk(&mut r) {
            out.extend(c);
        }
    } else {
        let _ = r.read_to_end(&mut out);
    }
    Resp {
        status,
        headers: hs,
        body: out,
    }
}

/// One SSE event as it arrived.
#[derive(Debug, Clone)]
pub struct Arrived {
    pub at: std::time::Instant,
    pub data: serde_json::Value,
}

/// An open SSE response of `POST /chat`.
pub struct SseStream {
    pub status: u16,
    pub error: Option<serde_json::Value>,
    reader: BufReader<TcpStream>,
    buf: String,
    done: bool,
}

impl SseStream {
    /// The next `data:` event, or None when the stream ended.
    pub fn next(&mut self) -> Option<Arrived> {
        loop {
            if let Some(i) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..i + 2).collect();
                let data: String = frame
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect::<Vec<_>>()
                    .join("\n");
                if data.is_empty() {
                    continue;
                }
                let v = serde_json::from_str(&data).unwrap_or_else(|e| panic!("bad SSE data ({e}): {data}"));
                return Some(Arrived {
                    at: std::time::Instant::now(),
                    data: v,
                });
            }
            if self.done {
                return None;
            }
            match read_chunk(&mut self.reader) {
                Some(c) => self.buf.push_str(&String::from_utf8_lossy(&c)),
                None => self.done = true,
            }
        }
    }

    /// Every remaining event.
    pub fn rest(&mut self) -> Vec<Arrived> {
        let mut v = Vec::new();
        while let Some(a) = self.next() {
            v.push(a);
        }
        v
    }
}

impl WebServer {
    /// `POST /chat` and return the open stream.
    pub fn chat(&self, session_id: &str, message: &str) -> SseStream {
        let body = serde_json::json!({ "message": message, "session_id": session_id }).to_string();
        let origin = self.origin();
        let host = self.host();
        let (status, hs, mut reader) = send_head(
            self.addr,
            "POST",
            "/chat",
            &[
                ("Host", &host),
                ("Origin", &origin),
                ("Content-Type", "application/json"),
            ],
            Some(body.as_bytes()),
        );
        let mut error = None;
        if status != 200 {
            let chunked = hs
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
            let mut out = Vec::new();
            if chunked {
                while let Some(c) = read_chunk(&mut reader) {
                    out.extend(c);
                }
            } else {
                let _ = reader.read_to_end(&mut out);
            }
            error = serde_json::from_slice(&out).ok();
        }
        SseStream {
            status,
            error,
            reader,
            buf: String::new(),
            done: status != 200,
        }
    }

    /// A fresh session's id.
    pub fn new_session(&self) -> String {
        let r = self.post("/sessions/new", &serde_json::json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["session"]["id"].as_str().unwrap().to_string()
    }
}

/// A paper straight into the server's knowledge base (no PDF, no model).
pub fn add_paper(s: &WebServer, title: &str, source: &str) {
    let kb = s.app.kb().unwrap();
    let p = jarvis::kb::ops::Paper {
        title: title.into(),
        authors: "Vaswani et al.".into(),
        source: source.into(),
        ..jarvis::kb::ops::Paper::default()
    };
    kb.add_paper(
        &p,
        &format!("{title}: attention mechanisms replace recurrence."),
        &jarvis::kb::Actor::Web,
    )
    .unwrap();
}
