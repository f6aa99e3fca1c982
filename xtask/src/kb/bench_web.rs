//! `cargo xtask bench web`: figures for the web app, in release, in one
//! process (server, a fake Ollama speaking its NDJSON wire, and raw HTTP
//! clients over loopback). Prints figures only; asserts nothing on time.
//!
//! - start: `serve` bound to `/health` answering;
//! - page weight: the embedded HTML + CSS + JS;
//! - one turn whose model streams 1,000 tokens: request → first SSE event,
//!   the fake's last byte → the `reply` event at the client, and the
//!   server's overhead per token: the fake stamps when it wrote each token
//!   (same process, same clock), the client when its `text` event arrived;
//! - stop latency: `POST /chat/stop` sent → the `stopped` event read, and
//!   → the stop's own answer (rollback done), against a model that would
//!   stream for 20 s;
//! - 20 sessions at once (a tool round, then text each): p50/p95 of the
//!   gap between the fake sending and the client receiving each event
//!   kind, events lost or out of order;
//! - RSS of the whole process idle and under that load.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use jarvis::cancel::Cancel;

/// What the fake does for one request.
#[derive(Clone, Copy)]
pub(crate) enum Script {
    /// `n` tokens, then done.
    Tokens(usize),
    /// One tool call (kb_stats), done.
    Tool,
    /// A token every 100 ms for 20 s.
    Slow,
    /// One tool call (search_kb, a knowledge-base search), done.
    Search,
}

pub(crate) struct Fake {
    pub(crate) url: String,
    /// When the fake wrote the last byte of each answer, in order.
    sent: Arc<Mutex<Vec<Instant>>>,
    /// When it wrote token `i` of the first `Tokens` answer (its text is
    /// `t{i} `), for the per-token overhead.
    token_sent: Arc<Mutex<Vec<Instant>>>,
    /// Tool calls sent whole (each must reach a client as a tool round).
    pub(crate) tools_sent: Arc<std::sync::atomic::AtomicUsize>,
}

fn ndjson(content: &str) -> String {
    format!(
        "{}\n",
        json!({"model":"bench","message":{"role":"assistant","content":content},"done":false})
    )
}

pub(crate) fn fake_ollama(plan: impl Fn(usize) -> Script + Send + Sync + 'static) -> Result<Fake> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let sent = Arc::new(Mutex::new(Vec::new()));
    let sent2 = sent.clone();
    let token_sent = Arc::new(Mutex::new(Vec::new()));
    let token_sent2 = token_sent.clone();
    let plan = Arc::new(plan);
    let tools_sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tools2 = tools_sent.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut s) = stream else { break };
            let (plan, sent, stamps, tools) = (plan.clone(), sent2.clone(), token_sent2.clone(), tools2.clone());
            std::thread::spawn(move || {
                if read_request(&mut s).is_none() {
                    return;
                }
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n");
                let chunk = |s: &mut TcpStream, d: &str| -> std::io::Result<()> {
                    write!(s, "{:x}\r\n{d}\r\n", d.len())?;
                    s.flush()
                };
                let done = format!(
                    "{}\n",
                    json!({"model":"bench","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"})
                );
                let script = plan(n);
                let ok = match script {
                    Script::Tokens(k) => (0..k).all(|i| {
                        let ok = chunk(&mut s, &ndjson(&format!("t{i} "))).is_ok();
                        if n == 0 {
                            stamps.lock().unwrap_or_else(|p| p.into_inner()).push(Instant::now());
                        }
                        ok
                    }),
                    Script::Tool => chunk(
                        &mut s,
                        &format!("{}\n", json!({"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"kb_stats","arguments":{}}}]},"done":false})),
                    )
                    .is_ok(),
                    Script::Search => chunk(
                        &mut s,
                        &format!("{}\n", json!({"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"search_kb","arguments":{"query":"burst note river"}}}]},"done":false})),
                    )
                    .is_ok(),
                    Script::Slow => {
                        let start = Instant::now();
                        while start.elapsed() < Duration::from_secs(20) {
                            if chunk(&mut s, &ndjson("tick ")).is_err() {
                                return;
                            }
                            std::thread::sleep(Duration::from_millis(100));
                        }
                        true
                    }
                };
                if ok && chunk(&mut s, &done).is_ok() && s.write_all(b"0\r\n\r\n").is_ok() {
                    sent.lock().unwrap_or_else(|p| p.into_inner()).push(Instant::now());
                    if matches!(script, Script::Search | Script::Tool) {
                        tools.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
        }
    });
    Ok(Fake {
        url,
        sent,
        token_sent,
        tools_sent,
    })
}

fn read_request(s: &mut TcpStream) -> Option<()> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).ok()?;
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(())
}

/// A raw HTTP/1.1 request; returns (status, reader positioned at the body).
pub(crate) fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, BufReader<TcpStream>)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let host = format!("127.0.0.1:{}", addr.port());
    let b = body.map(|v| v.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
        b.len()
    )?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status = line.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    loop {
        line.clear();
        r.read_line(&mut line)?;
        if line.trim_end().is_empty() {
            break;
        }
    }
    Ok((status, r))
}

pub(crate) fn json_call(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    let (status, mut r) = request(addr, method, path, body)?;
    let mut text = String::new();
    // Bodies here are small and either chunked or length-delimited; read
    // all and strip chunk framing crudely by finding the JSON.
    r.read_to_string(&mut text)?;
    let start = text.find(['{', '[']).unwrap_or(0);
    let end = text.rfind(['}', ']']).map(|i| i + 1).unwrap_or(text.len());
    let v: Value = serde_json::from_str(&text[start..end]).with_context(|| format!("{path} → {status}: {text}"))?;
    Ok(v)
}

/// Read SSE `data:` events (each with its arrival time) until the stream ends.
pub(crate) fn read_events(r: &mut BufReader<TcpStream>, mut each: impl FnMut(&Value, Instant)) -> Result<()> {
    let mut buf = String::new();
    loop {
        let mut size = String::new();
        if r.read_line(&mut size)? == 0 {
            return Ok(());
        }
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            return Ok(());
        }
        let mut chunk = vec![0; n + 2];
        r.read_exact(&mut chunk)?;
        buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
        while let Some(i) = buf.find("\n\n") {
            let frame: String = buf.drain(..i + 2).collect();
            let data: String = frame.lines().filter_map(|l| l.strip_prefix("data:")).collect();
            if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                each(&v, Instant::now());
            }
        }
    }
}

pub(crate) fn new_session(addr: SocketAddr) -> Result<String> {
    let v = json_call(addr, "POST", "/sessions/new", Some(&json!({})))?;
    Ok(v["session"]["id"].as_str().context("session id")?.to_string())
}

fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

pub(crate) fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Bytes of our own HTML, CSS and JS a browser fetches to open the page:
/// `index.html`, the stylesheets and module scripts it links (vendored
/// files aside), and every module those import statically. A dynamic
/// `import()` is fetched only when the code that calls it runs.
fn page_load(web: &Path) -> Result<(usize, usize)> {
    let html = std::fs::read_to_string(web.join("index.html")).context("read assets/web/index.html")?;
    let mut todo: Vec<String> = Vec::new();
    for attr in ["href=\"/static/", "src=\"/static/"] {
        for piece in html.split(attr).skip(1) {
            let name = piece.split('"').next().unwrap_or("");
            if !name.starts_with("vendor/") && (name.ends_with(".css") || name.ends_with(".js")) {
                todo.push(name.to_string());
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut total = html.len();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(web.join(&name)).with_context(|| format!("read assets/web/{name}"))?;
        total += text.len();
        if name.ends_with(".js") {
            // `import … from './x.js'` and `import './x.js'`, never `import(`.
            for line in text.lines().map(str::trim_start) {
                if !line.starts_with("import ") && !line.starts_with("} from ") {
                    continue;
                }
                if let Some(spec) = line.split(['\'', '"']).nth(1).and_then(|s| s.strip_prefix("./")) {
                    todo.push(spec.to_string());
                }
            }
        }
    }
    Ok((total, seen.len() + 1))
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Server {
    addr: SocketAddr,
    stop: Cancel,
    _home: tempfile::TempDir,
    thread: Option<std::thread::JoinHandle<()>>,
    start_to_health: Duration,
}

fn start_server(root: &Path, llm_url: &str) -> Result<Server> {
    let home = tempfile::tempdir()?;
    let cfg = format!("[chat]\nprovider = \"ollama:bench\"\nollama_host = \"{llm_url}\"\n");
    std::fs::write(home.path().join("config.toml"), cfg)?;
    let user_home = home.path().join("user");
    std::fs::create_dir_all(&user_home)?;
    // The bundled runtime is unpacked once under target/ and reused.
    let runtime_cfg = super::common::config(root)?;
    let ort = jarvis::runtime::resolve_onnxruntime(
        &runtime_cfg.home,
        &jarvis::runtime::Overrides {
            onnxruntime: None,
            pdfium: None,
            model_dir: None,
        },
    )?
    .path
    .display()
    .to_string();
    let jh = home.path().display().to_string();
    let t0 = Instant::now();
    let app = jarvis::app::App::open(jarvis::paths::JarvisHome::at(home.path()), move |k| match k {
        "HOME" => Some(user_home.display().to_string()),
        "JARVIS_HOME" => Some(jh.clone()),
        "JARVIS_ORT_LIB" => Some(ort.clone()),
        _ => None,
    })?;
    let stop = Cancel::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let (app2, stop2) = (app.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
            return;
        };
        rt.block_on(async move {
            let Ok(bound) = jarvis::web::bind(0).await else { return };
            let _ = tx.send(bound.addr());
            let _ = jarvis::web::serve_bound(app2, bound, stop2).await;
        });
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .context("the server did not bind")?;
    loop {
        if let Ok(v) = json_call(addr, "GET", "/health", None) {
            if v["ok"] == true {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let start_to_health = t0.elapsed();
    // Open the knowledge base and the agent before measuring anything else.
    app.chat().context("build the chat agent")?;
    Ok(Server {
        addr,
        stop,
        _home: home,
        thread: Some(thread),
        start_to_health,
    })
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    if args.contains(&"--with-writers") {
        return super::bench_web_writers::run(root, args);
    }
    println!(
        "bench web (release, one process; load average before: {})",
        crate::common::load_average()
    );
    let files = jarvis::web::assets::files();
    let page = |vendored: bool| -> usize {
        files
            .iter()
            .filter(|(n, _)| n.ends_with(".html") || n.ends_with(".css") || n.ends_with(".js"))
            .filter(|(n, _)| n.starts_with("vendor/") == vendored)
            .map(|(_, s)| s)
            .sum()
    };
    let (load, load_files) = page_load(&root.join("assets").join("web"))?;
    println!(
        "page weight (HTML+CSS+JS, uncompressed): {:.1} KB of our own loaded by opening the page (goal ≤ 150 KB; {load_files} files: index.html, its stylesheets and app.js with its static imports), {:.1} KB of our own in all (the editor's modules load when first used), plus {:.1} KB of vendored editor code",
        load as f64 / 1024.0,
        page(false) as f64 / 1024.0,
        page(true) as f64 / 1024.0
    );

    // Connection n of the fake: 0 → 1,000 tokens, 1 → slow (stop), then
    // pairs of (tool, 5 tokens) for the 20 sessions.
    let fake = fake_ollama(|n| match n {
        0 => Script::Tokens(1000),
        1 => Script::Slow,
        n if n % 2 == 0 => Script::Tool,
        _ => Script::Tokens(5),
    })?;
    let srv = start_server(root, &fake.url)?;
    println!(
        "serve start → /health OK: {:.1} ms (in process, before the knowledge base opens)",
        ms(srv.start_to_health)
    );
    let idle = rss();
    println!(
        "RSS idle (server + knowledge base + embedder, this process): {:.1} MiB",
        idle as f64 / 1048576.0
    );
    let addr = srv.addr;

    // One turn, 1,000 streamed tokens.
    let id = new_session(addr)?;
    let t0 = Instant::now();
    let (_, mut r) = request(
        addr,
        "POST",
        "/chat",
        Some(&json!({"session_id": id, "message": "stream"})),
    )?;
    let mut first = None;
    let mut reply_at = None;
    let mut token_at: Vec<(usize, Instant)> = Vec::new();
    read_events(&mut r, |v, at| {
        first.get_or_insert(at);
        if v["type"] == "reply" {
            reply_at = Some(at);
        }
        if v["type"] == "text" {
            // One event may carry several tokens if the parser coalesced
            // them; each counts at this event's arrival.
            for w in v["text"].as_str().unwrap_or("").split_whitespace() {
                if let Some(i) = w.strip_prefix('t').and_then(|n| n.parse().ok()) {
                    token_at.push((i, at));
                }
            }
        }
    })?;
    let last_sent = *fake
        .sent
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .first()
        .context("the fake sent nothing")?;
    if let (Some(f), Some(rep)) = (first, reply_at) {
        println!(
            "1,000-token turn: request → first event {:.1} ms; model's last byte → reply event {:.1} ms (parse, save the session file, SSE; the exchange is indexed after)",
            ms(f - t0),
            ms(rep.saturating_duration_since(last_sent))
        );
    }
    let stamps = fake.token_sent.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut gaps: Vec<f64> = token_at
        .iter()
        .filter_map(|&(i, at)| stamps.get(i).map(|&s| ms(at.saturating_duration_since(s))))
        .collect();
    let (seen, events) = (
        gaps.len(),
        token_at
            .iter()
            .map(|t| t.1)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
    );
    println!(
        "per-token overhead (fake wrote token → its text event read by the client; parse, agent, SSE, loopback): p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms over {seen} of {} tokens in {events} events",
        pct(&mut gaps, 0.5),
        pct(&mut gaps, 0.95),
        gaps.iter().cloned().fold(f64::NAN, f64::max),
        stamps.len()
    );

    // Stop latency.
    let id = new_session(addr)?;
    let (_, mut r) = request(
        addr,
        "POST",
        "/chat",
        Some(&json!({"session_id": id, "message": "slow"})),
    )?;
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let _ = read_events(&mut r, |v, at| {
            if v["type"] == "stopped" {
                let _ = tx.send(at);
            }
        });
    });
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let stop = json_call(addr, "POST", "/chat/stop", Some(&json!({"session_id": id})))?;
    let answered = t0.elapsed();
    let stopped_at = rx.recv_timeout(Duration::from_secs(10)).context("no stopped event")?;
    let _ = reader.join();
    println!(
        "stop: POST /chat/stop → stopped event at the client {:.2} ms; → the stop's answer (rolled back: {}) {:.2} ms (goal ≤ 100 ms)",
        ms(stopped_at.saturating_duration_since(t0)),
        stop["rolled_back"],
        ms(answered)
    );

    // 20 sessions at once.
    let ids: Vec<String> = (0..20).map(|_| new_session(addr)).collect::<Result<_>>()?;
    let peak = Arc::new(Mutex::new(rss()));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                let r = rss();
                let mut p = peak.lock().unwrap_or_else(|e| e.into_inner());
                *p = (*p).max(r);
                drop(p);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let t0 = Instant::now();
    let handles: Vec<_> = ids
        .into_iter()
        .map(|id| {
            std::thread::spawn(move || -> Result<(Vec<String>, Vec<f64>)> {
                let sent = Instant::now();
                let (status, mut r) =
                    request(addr, "POST", "/chat", Some(&json!({"session_id": id, "message": "go"})))?;
                anyhow::ensure!(status == 200, "status {status}");
                let mut kinds = Vec::new();
                let mut first = Vec::new();
                read_events(&mut r, |v, at| {
                    if kinds.is_empty() {
                        first.push(ms(at - sent));
                    }
                    kinds.push(v["type"].as_str().unwrap_or("?").to_string());
                })?;
                Ok((kinds, first))
            })
        })
        .collect();
    // The fake model is shared: it answers requests in arrival order, so
    // one session may get two tool rounds and another none. What must hold
    // is per stream (starts with status, every tool_start closed by its
    // tool_finish before the next, ends with exactly one reply) and overall
    // (the 20 tool rounds the fake served all reached a client).
    let mut firsts = Vec::new();
    let mut bad = 0;
    let mut tool_rounds = 0;
    for h in handles {
        match h.join() {
            Ok(Ok((kinds, f))) => {
                firsts.extend(f);
                let mut open = false;
                let mut paired = true;
                for k in &kinds {
                    match k.as_str() {
                        "tool_start" if open => paired = false,
                        "tool_start" => open = true,
                        "tool_finish" if !open => paired = false,
                        "tool_finish" => {
                            open = false;
                            tool_rounds += 1;
                        }
                        _ => {}
                    }
                }
                let ok = kinds.first().map(String::as_str) == Some("status")
                    && kinds.last().map(String::as_str) == Some("reply")
                    && kinds.iter().filter(|k| *k == "reply").count() == 1
                    && paired
                    && !open;
                if !ok {
                    bad += 1;
                    eprintln!("malformed event stream: {kinds:?}");
                }
            }
            _ => bad += 1,
        }
    }
    if tool_rounds != 20 {
        eprintln!("tool rounds seen by the clients: {tool_rounds} (the fake served 20)");
        bad += 20usize.abs_diff(tool_rounds);
    }
    let wall = t0.elapsed();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let _ = sampler.join();
    let peak = *peak.lock().unwrap_or_else(|e| e.into_inner());
    println!(
        "20 concurrent sessions (tool round + text each): all done in {:.0} ms; request → first event p50 {:.1} ms, p95 {:.1} ms; lost/reordered: {bad}",
        ms(wall),
        pct(&mut firsts.clone(), 0.5),
        pct(&mut firsts, 0.95)
    );
    println!("RSS peak under the 20-session load: {:.1} MiB", peak as f64 / 1048576.0);
    Ok(())
}
