//! Loopback addresses for tests: a port free to listen on, and an address
//! where nothing listens (a model or a service that is down).

use std::net::TcpListener;

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind loopback")
        .local_addr()
        .expect("addr")
        .port()
}

/// `http://127.0.0.1:PORT` with nothing listening: the port was bound and
/// let go, so a connection is refused at once.
pub fn dead_url() -> String {
    format!("http://127.0.0.1:{}", free_port())
}
