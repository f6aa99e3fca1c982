//! The HTTP plumbing under the providers' one streamed exchange: one
//! streamed POST with a fresh agent whose connection `stop()` can shut down.
//! Only `providers::stream_exchange` calls into this module.

use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;
use ureq::Agent;

use crate::cancel::{Cancel, CancelGuard};
use crate::llm::error::{parse_retry_after, ErrorKind};

/// A transport-level failure (no HTTP status): the provider words it.
#[derive(Debug)]
pub(crate) struct TransportFailure {
    pub kind: ErrorKind,
    pub detail: String,
}

/// A non-2xx response, body read in full.
#[derive(Debug)]
pub(crate) struct StatusFailure {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
}

pub(crate) enum Opened {
    Stream(StreamBody),
    Status(StatusFailure),
}

pub(crate) struct Timeouts {
    pub connect: Duration,
    /// Longest silence between bytes of a response.
    pub read: Duration,
}

/// A streaming 2xx body. Dropping it closes the connection.
pub(crate) struct StreamBody {
    reader: BufReader<ureq::BodyReader<'static>>,
    // Unregisters the stop hook once the request is over, so a later stop()
    // of the same token doesn't touch a finished request.
    _guard: Option<CancelGuard>,
}

impl StreamBody {
    /// The next line without its terminator, `None` at end of stream.
    pub fn next_line(&mut self) -> Result<Option<String>, TransportFailure> {
        let mut buf = Vec::new();
        match self.reader.read_until(b'\n', &mut buf) {
            Ok(0) => Ok(None),
            Ok(_) => {
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
            }
            Err(e) => Err(io_failure(&e)),
        }
    }
}

fn io_failure(e: &std::io::Error) -> TransportFailure {
    // ureq wraps its own timeout errors inside the io::Error of a body read.
    let wrapped_timeout = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
    let kind = if e.kind() == std::io::ErrorKind::TimedOut || wrapped_timeout {
        ErrorKind::Timeout
    } else {
        ErrorKind::Network
    };
    TransportFailure {
        kind,
        detail: e.to_string(),
    }
}

fn transport_failure(e: ureq::Error) -> TransportFailure {
    let kind = match &e {
        ureq::Error::Timeout(_) => ErrorKind::Timeout,
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => ErrorKind::Timeout,
        _ => ErrorKind::Network,
    };
    TransportFailure {
        kind,
        detail: e.to_string(),
    }
}

/// Whether a URL's host is a loopback address (or `localhost`).
pub(crate) fn is_loopback_url(url: &str) -> bool {
    url_host(url).is_some_and(|h| is_loopback_host(&h))
}

/// POSTs `body` as JSON and returns the streaming body on 2xx, or the status
/// and full error body otherwise. A fresh agent per request means `stop()`
/// shuts down exactly this request's connection.
pub(crate) fn post_stream(
    url: &str,
    headers: &[(&str, String)],
    body: &Value,
    timeouts: &Timeouts,
    cancel: Option<&Cancel>,
) -> Result<Opened, TransportFailure> {
    let mut config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(timeouts.connect))
        .timeout_per_read(Some(timeouts.read))
        // No pooling: a connection is never reused after a stop could have
        // shut it down, and LLM calls are long enough that setup is noise.
        .max_idle_connections(0)
        .user_agent("jarvis");
    if is_loopback_url(url) {
        // A local server must never be reached through a proxy from the env.
        config = config.proxy(None);
    }
    let agent: Agent = config.build().into();
    let guard = cancel.map(|c| {
        let a = agent.clone();
        c.on_cancel(move || a.shutdown())
    });
    let mut request = agent.post(url).header("content-type", "application/json");
    for (k, v) in headers {
        request = request.header(*k, v.as_str());
    }
    let response = request.send_json(body).map_err(transport_failure)?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        let reader = response.into_body().into_reader();
        return Ok(Opened::Stream(StreamBody {
            reader: BufReader::new(reader),
            _guard: guard,
        }));
    }
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body = response
        .into_body()
        .with_config()
        .limit(64 * 1024)
        .lossy_utf8(true)
        .read_to_string()
        .unwrap_or_default();
    Ok(Opened::Status(StatusFailure {
        status,
        retry_after,
        body,
    }))
}

/// The host of a URL, lowercased (userinfo, port and IPv6 brackets removed).
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(stripped) = host_port.strip_prefix('[') {
        stripped.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

pub fn is_loopback_host(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
