//! The owner socket's wire format: newline-delimited JSON frames, one
//! object per line, each tagged by `"t"`.
//!
//! ```text
//! client                                   owner
//!   ── connect ───────────────────────────▶
//!   ◀─────────────── hello {pid, command, role}
//!   ── run {argv, cwd, stdin_tty, stderr_tty} ▶
//!   ◀──── out / err / bar / ask  (any number, in order)
//!   ── line {text} (answer to ask) ───────▶
//!   ── cancel (Ctrl-C; or just close) ────▶   the owner stops the command
//!   ◀─────────────── exit {code}            and the connection closes
//! ```
//!
//! `status` instead of `run` gets one `status` frame back (who the owner
//! is, how long it has run). A frame that does not parse ends the session.
//!
//! `jarvis ask` needs nothing more: its answer streams as `out` frames as
//! the model produces it, tool lines as `err`, a removal's `[y/N]` is an
//! `err` then an `ask`, and `cancel` (or a hang-up) stops and rolls back
//! the turn in the owner.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Protocol revision: a client and owner built from different Jarvis
/// versions refuse each other rather than misread frames.
pub const VERSION: u32 = 1;

/// Longest frame a client accepts from the owner (a `kb search --full
/// --json` of 200 hits fits).
pub const MAX_FRAME: usize = 64 << 20;

/// Longest frame the owner accepts from a client: a `run` (an argument
/// vector, a directory and a few settings) or one answered line. Anything
/// longer is refused after this many bytes, so a connection never makes
/// the owner buffer more.
pub const MAX_CLIENT_FRAME: usize = 1 << 20;

/// What a client sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Run one command. `argv` starts after the program name
    /// (`["kb", "search", "q", "--json"]`); relative paths in it are
    /// relative to `cwd`.
    Run {
        argv: Vec<String>,
        cwd: PathBuf,
        stdin_tty: bool,
        stderr_tty: bool,
        /// The client's non-empty values of the environment variables the
        /// configuration reads (`VAULT_PATH`, `CHAT_PROVIDER`, …). The owner
        /// runs the command with its own settings and warns when they differ.
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    /// The answer to an `ask` (None: end of input).
    Line { text: Option<String> },
    /// Stop the running command (the user pressed Ctrl-C).
    Cancel,
    /// Who is the owner?
    Status,
}

/// What the owner sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum OwnerFrame {
    /// First frame on every connection.
    Hello {
        version: u32,
        pid: u32,
        command: String,
        /// `serve` or `sync`.
        role: String,
    },
    /// Text for the client's stdout.
    Out { text: String },
    /// Text for the client's stderr.
    Err { text: String },
    /// A progress-bar update, mirrored by the client's own bar.
    Bar { event: BarEvent },
    /// Read one line from the client's stdin and answer with `line`.
    Ask,
    /// The command ended with this exit code; nothing follows.
    Exit { code: i32 },
    /// Reply to `status`.
    Status {
        pid: u32,
        role: String,
        uptime_ms: u64,
        kb_open: bool,
    },
}

/// A progress bar's life, as the client redraws it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum BarEvent {
    /// A new bar: a spinner, or a bar with this indicatif template.
    New {
        template: Option<String>,
    },
    Length {
        n: u64,
    },
    Position {
        n: u64,
    },
    Message {
        text: String,
    },
    Finish,
}

/// Write one frame and flush it.
pub fn write_frame<T: Serialize>(w: &mut impl Write, frame: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(frame).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()
}

/// Read one frame of at most [`MAX_FRAME`] bytes; `Ok(None)` at end of
/// stream.
pub fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl BufRead) -> std::io::Result<Option<T>> {
    read_frame_within(r, MAX_FRAME)
}

/// Read one frame of at most `max` bytes (reading no more than `max + 1`
/// to find out); `Ok(None)` at end of stream.
pub fn read_frame_within<T: for<'de> Deserialize<'de>>(r: &mut impl BufRead, max: usize) -> std::io::Result<Option<T>> {
    let mut line = Vec::new();
    let n = std::io::Read::take(&mut *r, max as u64 + 1).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame too long (over {max} bytes)"),
        ));
    }
    serde_json::from_slice(&line)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_one_per_line() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &OwnerFrame::Out { text: "a\nb".into() }).unwrap();
        write_frame(
            &mut buf,
            &OwnerFrame::Bar {
                event: BarEvent::Position { n: 3 },
            },
        )
        .unwrap();
        write_frame(&mut buf, &OwnerFrame::Exit { code: 130 }).unwrap();
        assert_eq!(
            buf.iter().filter(|&&b| b == b'\n').count(),
            3,
            "newlines inside text are escaped"
        );
        let mut r = std::io::BufReader::new(&buf[..]);
        assert_eq!(
            read_frame::<OwnerFrame>(&mut r).unwrap(),
            Some(OwnerFrame::Out { text: "a\nb".into() })
        );
        assert_eq!(
            read_frame::<OwnerFrame>(&mut r).unwrap(),
            Some(OwnerFrame::Bar {
                event: BarEvent::Position { n: 3 }
            })
        );
        assert_eq!(
            read_frame::<OwnerFrame>(&mut r).unwrap(),
            Some(OwnerFrame::Exit { code: 130 })
        );
        assert_eq!(read_frame::<OwnerFrame>(&mut r).unwrap(), None);
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_having_read_no_more_than_the_limit() {
        struct Counting<'a>(&'a [u8], usize);
        impl std::io::Read for Counting<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = std::io::Read::read(&mut self.0, buf)?;
                self.1 += n;
                Ok(n)
            }
        }
        let huge = vec![b'a'; 3 * MAX_CLIENT_FRAME];
        let mut counting = Counting(&huge, 0);
        let mut r = std::io::BufReader::with_capacity(8 * 1024, &mut counting);
        let e = read_frame_within::<ClientFrame>(&mut r, MAX_CLIENT_FRAME).unwrap_err();
        assert!(e.to_string().contains("frame too long"), "{e}");
        drop(r);
        assert!(
            counting.1 <= MAX_CLIENT_FRAME + 8 * 1024,
            "read {} bytes of a refused frame",
            counting.1
        );
        // A real `run` frame is far below the limit.
        let mut buf = Vec::new();
        write_frame(
            &mut buf,
            &ClientFrame::Run {
                argv: vec!["kb".into(), "search".into(), "x".repeat(10_000)],
                cwd: "/home/u".into(),
                stdin_tty: false,
                stderr_tty: false,
                env: Vec::new(),
            },
        )
        .unwrap();
        let mut r = std::io::BufReader::new(&buf[..]);
        assert!(read_frame_within::<ClientFrame>(&mut r, MAX_CLIENT_FRAME)
            .unwrap()
            .is_some());
    }

    #[test]
    fn garbage_is_an_error_not_a_frame() {
        let mut r = std::io::BufReader::new(&b"{\"t\":\"nope\"}\n"[..]);
        assert!(read_frame::<ClientFrame>(&mut r).is_err());
        let mut r = std::io::BufReader::new(&b"not json\n"[..]);
        assert!(read_frame::<ClientFrame>(&mut r).is_err());
    }
}
