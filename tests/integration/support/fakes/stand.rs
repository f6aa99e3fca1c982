//! A stand-in HTTP service on 127.0.0.1 that answers each request from a
//! handler the test writes (`handler(request, n)`, `n` counting requests
//! from 0), so a test decides per request — the paper services `kb add`
//! asks, arXiv and bioRxiv for the digest, a scoring model, a model hub, a
//! publisher serving PDFs. It records what it was asked (path, body,
//! User-Agent, Accept, when) and may answer with extra headers
//! (`Retry-After`).
//!
//! [`Stand::start`] serves connections concurrently and holds each for
//! 30 ms, so a client that sent two requests at once is seen doing it
//! ([`Stand::max_in_flight`]); [`Stand::one_at_a_time`] serves one
//! connection after the other and answers at once, for tests that time
//! the gaps between requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub body: String,
    pub user_agent: String,
    pub accept: String,
    /// When its request line arrived.
    pub at: Instant,
}

pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// 200 with `body` as `content_type`.
    pub fn ok(content_type: &'static str, body: Vec<u8>) -> Answer {
        Answer {
            status: 200,
            content_type,
            headers: Vec::new(),
            body,
        }
    }
    pub fn json(v: Value) -> Answer {
        Answer::ok("application/json", v.to_string().into_bytes())
    }
    pub fn pdf(bytes: Vec<u8>) -> Answer {
        Answer::ok("application/pdf", bytes)
    }
    pub fn html(text: &str) -> Answer {
        Answer::ok("text/html; charset=utf-8", text.as_bytes().to_vec())
    }
    /// An Atom feed (arXiv's API).
    pub fn atom(feed: String) -> Answer {
        Answer::ok("application/atom+xml", feed.into_bytes())
    }
    /// Any status with a plain-text body.
    pub fn status(status: u16, text: &str) -> Answer {
        Answer {
            status,
            ..Answer::ok("text/plain", text.as_bytes().to_vec())
        }
    }
    pub fn with_header(mut self, k: &'static str, v: &str) -> Answer {
        self.headers.push((k, v.to_string()));
        self
    }
}

type Handler = dyn Fn(&Seen, usize) -> Answer + Send + Sync;

/// A running stand-in; it serves until the test binary ends.
pub struct Stand {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Stand {
    /// Serve connections concurrently (see the module's note).
    pub fn start(handler: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Stand {
        Stand::spawn(Arc::new(handler), true)
    }

    /// Serve one connection after the other, answering at once.
    pub fn one_at_a_time(handler: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Stand {
        Stand::spawn(Arc::new(handler), false)
    }

    fn spawn(handler: Arc<Handler>, concurrent: bool) -> Stand {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Shared {
            seen: Arc::new(Mutex::new(Vec::new())),
            max_in_flight: Arc::new(AtomicUsize::new(0)),
            in_flight: Arc::new(AtomicUsize::new(0)),
            handler,
        };
        let stand = Stand {
            url,
            seen: shared.seen.clone(),
            max_in_flight: shared.max_in_flight.clone(),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                if concurrent {
                    let shared = shared.clone();
                    // Long enough for a second request to overlap if sent.
                    std::thread::spawn(move || shared.serve(stream, Duration::from_millis(30)));
                } else {
                    shared.serve(stream, Duration::ZERO);
                }
            }
        });
        stand
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    /// The most requests that were being answered at once.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    max_in_flight: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    handler: Arc<Handler>,
}

impl Shared {
    fn serve(&self, mut stream: TcpStream, hold: Duration) {
        let Some(req) = read(&mut stream) else { return };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let n = {
            let mut s = self.seen.lock().expect("lock");
            s.push(req.clone());
            s.len() - 1
        };
        std::thread::sleep(hold);
        let a = (self.handler)(&req, n);
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
            a.status,
            a.content_type,
            a.body.len()
        );
        for (k, v) in &a.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&a.body);
        let _ = stream.flush();
    }
}

fn read(stream: &mut TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let at = Instant::now();
    let path = line.split_whitespace().nth(1)?.to_string();
    let (mut user_agent, mut accept, mut len) = (String::new(), String::new(), 0usize);
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("user-agent") {
                user_agent = v.trim().to_string();
            } else if k.eq_ignore_ascii_case("accept") {
                accept = v.trim().to_string();
            } else if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        path,
        body: String::from_utf8_lossy(&body).into_owned(),
        user_agent,
        accept,
        at,
    })
}
