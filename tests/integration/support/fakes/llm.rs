//! Hand-rolled HTTP/1.1 fake model servers bound to 127.0.0.1:0. Hand-rolled
//! so a test controls every byte: mid-stream drops, silences, malformed lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How a streamed reply ends.
#[derive(Debug, Clone)]
pub enum End {
    /// Proper end of the chunked body.
    Complete,
    /// Close the socket without the terminating chunk.
    Drop,
    /// Keep the connection open, sending `trickle` every `every` (if any),
    /// and report when the client closes it.
    Hang { trickle: Option<String>, every: Duration },
}

#[derive(Debug, Clone)]
pub enum Reply {
    Stream {
        content_type: &'static str,
        chunks: Vec<String>,
        end: End,
    },
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request, then say nothing at all (a model cold-loading).
    Silent,
    /// Read the request, wait, then answer with the inner reply (a slow
    /// model: time for the test to act while a turn is mid-step).
    Delayed(Duration, Box<Reply>),
}

impl Reply {
    pub fn sse(chunks: Vec<String>) -> Reply {
        Reply::Stream {
            content_type: "text/event-stream",
            chunks,
            end: End::Complete,
        }
    }

    pub fn ndjson(chunks: Vec<String>) -> Reply {
        Reply::Stream {
            content_type: "application/x-ndjson",
            chunks,
            end: End::Complete,
        }
    }

    pub fn with_end(self, new_end: End) -> Reply {
        match self {
            Reply::Stream {
                content_type, chunks, ..
            } => Reply::Stream {
                content_type,
                chunks,
                end: new_end,
            },
            other => other,
        }
    }

    /// This reply, sent `wait` after the request arrives.
    pub fn after(self, wait: Duration) -> Reply {
        Reply::Delayed(wait, Box::new(self))
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }
}

pub struct FakeServer {
    pub url: String,
    /// What `GET /api/tags` (Ollama's installed-model list) answers; such a
    /// request is neither recorded nor served a queued reply.
    tags: Arc<Mutex<Vec<String>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// When the server saw a hanging connection closed by the client.
    pub closed: Receiver<Instant>,
}

impl FakeServer {
    /// Serves the replies in order, one per model request; the last
    /// repeats. `GET /api/tags` answers the installed-model list instead
    /// (empty unless [`FakeServer::set_installed`]).
    pub fn start(replies: Vec<Reply>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let tags: Arc<Mutex<Vec<String>>> = Arc::default();
        let (closed_tx, closed) = mpsc::channel();
        let recorded = requests.clone();
        let installed = tags.clone();
        let next = Arc::new(Mutex::new(0usize));
        let replies = Arc::new(replies);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let (recorded, closed_tx, installed, next, replies) = (
                    recorded.clone(),
                    closed_tx.clone(),
                    installed.clone(),
                    next.clone(),
                    replies.clone(),
                );
                thread::spawn(move || {
                    let Some(req) = read_request(&mut stream) else {
                        return;
                    };
                    if req.path == "/api/tags" {
                        let models: Vec<Value> = installed
                            .lock()
                            .expect("lock")
                            .iter()
                            .map(|m| serde_json::json!({ "name": m, "model": m, "size": 1 }))
                            .collect();
                        let body = serde_json::json!({ "models": models }).to_string();
                        let _ = stream.write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        );
                        return;
                    }
                    // An OpenAI-compatible server's probe (the web app's
                    // model indicator) is no turn of the script either.
                    if req.path.ends_with("/models") {
                        let body = r#"{"object":"list","data":[{"id":"stand-in","object":"model"}]}"#;
                        let _ = stream.write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        );
                        return;
                    }
                    // The reply is picked when the request is complete, so
                    // a tags request in between does not shift the queue.
                    let reply = {
                        let mut n = next.lock().expect("lock");
                        let r = replies.get(*n).or(replies.last()).cloned().expect("at least one reply");
                        *n += 1;
                        recorded.lock().expect("lock").push(req);
                        r
                    };
                    serve(stream, reply, &closed_tx);
                });
            }
        });
        FakeServer {
            url,
            tags,
            requests,
            closed,
        }
    }

    /// The models `GET /api/tags` lists from now on.
    pub fn set_installed(&self, models: &[&str]) {
        *self.tags.lock().expect("lock") = models.iter().map(|m| m.to_string()).collect();
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn write_chunk(stream: &mut TcpStream, data: &str) -> std::io::Result<()> {
    write!(stream, "{:x}\r\n{data}\r\n", data.len())?;
    stream.flush()
}

fn serve(mut stream: TcpStream, reply: Reply, closed: &Sender<Instant>) {
    match reply {
        Reply::Delayed(wait, inner) => {
            thread::sleep(wait);
            serve(stream, *inner, closed)
        }
        Reply::Silent => hang(&mut stream, None, Duration::from_secs(60), closed),
        Reply::Status { status, headers, body } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            let _ = stream.write_all(format!("{head}\r\n{body}").as_bytes());
        }
        Reply::Stream {
            content_type,
            chunks,
            end,
        } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            );
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            for c in &chunks {
                if write_chunk(&mut stream, c).is_err() {
                    return;
                }
            }
            match end {
                End::Complete => {
                    let _ = stream.write_all(b"0\r\n\r\n");
                }
                End::Drop => {
                    let _ = stream.shutdown(Shutdown::Both);
                }
                End::Hang { trickle, every } => hang(&mut stream, trickle.as_deref(), every, closed),
            }
        }
    }
}

/// How long a hanging reply stays open at most.
const HANG_FOR: Duration = Duration::from_secs(120);

/// Keeps a stream open and reports the moment the client closes it.
fn hang(stream: &mut TcpStream, trickle: Option<&str>, every: Duration, closed: &Sender<Instant>) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(5)));
    let started = Instant::now();
    let mut last = Instant::now();
    let mut buf = [0u8; 64];
    // Long enough that a test on a loaded machine stops the turn itself:
    // at 20 s, a browser test typing into a second session under a load of
    // 14 saw the first session's hanging turn end on its own.
    while started.elapsed() < HANG_FOR {
        match stream.read(&mut buf) {
            Ok(0) => {
                let _ = closed.send(Instant::now());
                return;
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => {
                let _ = closed.send(Instant::now());
                return;
            }
        }
        if let Some(t) = trickle {
            if last.elapsed() >= every {
                last = Instant::now();
                if write_chunk(stream, t).is_err() {
                    let _ = closed.send(Instant::now());
                    return;
                }
            }
        }
    }
}
