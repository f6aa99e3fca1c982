//! Where a command's output goes: this process's own terminal (direct
//! mode), or a client's, frame by frame over the owner socket (delegated
//! mode). Command code writes through [`Term`] only, so both modes print
//! the same bytes, bars and questions.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::app::owner::protocol::{BarEvent, OwnerFrame};
use crate::app::owner::server::Session;
use crate::cancel::Cancel;

/// How this command reached the knowledge base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Direct,
    /// Run by the owner process: `jarvis serve` or `jarvis sync`, pid N.
    Owner {
        role: String,
        pid: u32,
    },
}

pub trait Term: Send + Sync {
    /// Text for stdout (a closed pipe is not an error).
    fn out(&self, text: &str) -> anyhow::Result<()>;
    /// Text for stderr, as given (callers add the newline).
    fn err(&self, text: &str);
    fn stderr_is_terminal(&self) -> bool;
    fn stdin_is_terminal(&self) -> bool;
    /// One line of stdin; None at end of input.
    fn read_line(&self) -> Option<String>;
    /// A progress bar: a spinner (`template: None`) or an indicatif template.
    fn bar(&self, template: Option<&str>) -> Bar<'_>;
    /// Stopped by Ctrl-C / SIGTERM (direct) or by the client (delegated).
    fn cancel(&self) -> &Cancel;
    fn access(&self) -> &Access;
    /// The directory relative paths on the command line are relative to.
    fn cwd(&self) -> &Path;
}

/// A progress bar drawn locally, or mirrored on a client — or, when the
/// stderr it would draw on is not a terminal (a pipe, a log, a service
/// manager), plain progress lines, so a long run is never silent.
pub struct Bar<'a> {
    local: ProgressBar,
    remote: Option<Box<dyn Fn(BarEvent) + Send + Sync + 'a>>,
    lines: Option<Lines<'a>>,
}

/// Progress as lines: at the start, at every tenth of the way, and at least
/// every [`LINE_EVERY`] while it moves — never a line per step.
struct Lines<'a> {
    template: String,
    state: std::sync::Mutex<LineState>,
    sink: Box<dyn Fn(&str) + Send + Sync + 'a>,
}

#[derive(Default)]
struct LineState {
    len: Option<u64>,
    pos: u64,
    msg: String,
    /// Tenths of the way said so far (None: nothing said yet).
    said: Option<u64>,
    at: Option<std::time::Instant>,
}

/// The longest a moving bar stays silent in line mode.
const LINE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl<'a> Lines<'a> {
    /// Line mode for a bar with a length (a spinner has no progress to
    /// tell; its command prints its own outcome).
    fn for_template(template: Option<&str>, sink: Box<dyn Fn(&str) + Send + Sync + 'a>) -> Option<Self> {
        let template = template?;
        Some(Lines {
            template: template.to_string(),
            state: std::sync::Mutex::default(),
            sink,
        })
    }

    fn update(&self, f: impl FnOnce(&mut LineState)) {
        let mut st = crate::lock::lock(&self.state);
        f(&mut st);
        let Some(len) = st.len.filter(|&l| l > 0) else { return };
        let tenth = (st.pos.min(len) * 10) / len;
        let due = match (st.said, st.at) {
            (None, _) => true,
            (Some(s), _) if tenth > s => true,
            (Some(_), Some(at)) => at.elapsed() >= LINE_EVERY,
            (Some(_), None) => false,
        };
        if due {
            st.said = Some(tenth);
            st.at = Some(std::time::Instant::now());
            (self.sink)(&progress_line(&self.template, &st.msg, st.pos.min(len), len));
        }
    }
}

/// `indexing: 40/174 notes (22%)` from an indicatif template such as
/// `indexing {bar:40} {pos}/{len} notes, eta {eta}`: the words before the
/// first placeholder, the message, the counts (bytes as MiB), the unit.
pub fn progress_line(template: &str, msg: &str, pos: u64, len: u64) -> String {
    let label = template.split('{').next().unwrap_or("").trim();
    let mut out = label.to_string();
    if !msg.is_empty() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(msg);
    }
    let pct = (pos * 100).checked_div(len).unwrap_or(100);
    let counts = if template.contains("{bytes}") {
        let mib = |b: u64| b as f64 / 1_048_576.0;
        format!("{:.1}/{:.1} MiB", mib(pos), mib(len))
    } else {
        let unit = template
            .split_once("{len}")
            .map(|(_, rest)| rest.split([',', '{']).next().unwrap_or("").trim())
            .unwrap_or("");
        if unit.is_empty() {
            format!("{pos}/{len}")
        } else {
            format!("{pos}/{len} {unit}")
        }
    };
    format!("{out}: {counts} ({pct}%)\n")
}

/// The bar this process draws for `template` on its own stderr (hidden
/// when stderr is not a terminal).
pub fn local_bar(template: Option<&str>, stderr_tty: bool) -> ProgressBar {
    if !stderr_tty {
        return ProgressBar::hidden();
    }
    match template {
        None => {
            let b = ProgressBar::new_spinner();
            b.set_draw_target(ProgressDrawTarget::stderr());
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            b
        }
        Some(t) => {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(ProgressStyle::with_template(t).unwrap_or_else(|_| ProgressStyle::default_bar()));
            b
        }
    }
}

impl Bar<'_> {
    fn send(&self, e: BarEvent) {
        if let Some(r) = &self.remote {
            r(e);
        }
    }
    pub fn set_length(&self, n: u64) {
        self.local.set_length(n);
        self.send(BarEvent::Length { n });
        if let Some(l) = &self.lines {
            l.update(|s| s.len = Some(n));
        }
    }
    pub fn set_position(&self, n: u64) {
        self.local.set_position(n);
        self.send(BarEvent::Position { n });
        if let Some(l) = &self.lines {
            l.update(|s| s.pos = n);
        }
    }
    pub fn set_message(&self, text: String) {
        self.send(BarEvent::Message { text: text.clone() });
        if let Some(l) = &self.lines {
            l.update(|s| {
                if s.msg != text {
                    // Another file or stage: say it from its start.
                    s.said = None;
                    s.msg = text.clone();
                }
            });
        }
        self.local.set_message(text);
    }
    pub fn finish_and_clear(&self) {
        self.local.finish_and_clear();
        self.send(BarEvent::Finish);
    }
    /// Run `f` with the bar hidden (to ask a question under it). The client
    /// hides its own mirror when it is asked.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.local.suspend(f)
    }
}

/// One line of this process's stdin, or `None` at end of input — or as soon
/// as `cancel` is flipped. A blocking read would hold a question open past
/// the first Ctrl-C and make the user press it twice; the read runs on a
/// helper thread instead, which is left blocked when the stop wins (the
/// process is about to exit).
pub fn read_stdin_line(cancel: &Cancel) -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let mut line = String::new();
        let got = match std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        };
        let _ = tx.send(got);
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the stdin reader; treating the question as unanswered");
        return None;
    }
    loop {
        if cancel.is_cancelled() {
            return None;
        }
        match rx.recv_timeout(std::time::Duration::from_millis(25)) {
            Ok(got) => return got,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// This process's own stdin, stdout and stderr.
pub struct Direct {
    cancel: Cancel,
    access: Access,
    cwd: PathBuf,
}

impl Direct {
    pub fn new(cancel: Cancel) -> Self {
        Direct {
            cancel,
            access: Access::Direct,
            cwd: std::env::current_dir().unwrap_or_default(),
        }
    }
}

impl Term for Direct {
    fn out(&self, text: &str) -> anyhow::Result<()> {
        super::emit(text)
    }
    fn err(&self, text: &str) {
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
    }
    fn stderr_is_terminal(&self) -> bool {
        std::io::stderr().is_terminal()
    }
    fn stdin_is_terminal(&self) -> bool {
        std::io::stdin().is_terminal()
    }
    fn read_line(&self) -> Option<String> {
        read_stdin_line(&self.cancel)
    }
    fn bar(&self, template: Option<&str>) -> Bar<'_> {
        let tty = self.stderr_is_terminal();
        Bar {
            local: local_bar(template, tty),
            remote: None,
            lines: if tty {
                None
            } else {
                Lines::for_template(template, Box::new(|line| self.err(line)))
            },
        }
    }
    fn cancel(&self) -> &Cancel {
        &self.cancel
    }
    fn access(&self) -> &Access {
        &self.access
    }
    fn cwd(&self) -> &Path {
        &self.cwd
    }
}

/// A client's terminal, reached through an owner [`Session`].
pub struct Remote<'a> {
    session: &'a Session,
    access: Access,
}

impl<'a> Remote<'a> {
    pub fn new(session: &'a Session) -> Self {
        Remote {
            session,
            access: Access::Owner {
                role: session.role.clone(),
                pid: session.owner_pid,
            },
        }
    }
}

impl Term for Remote<'_> {
    fn out(&self, text: &str) -> anyhow::Result<()> {
        self.session.send(&OwnerFrame::Out { text: text.to_string() });
        Ok(())
    }
    fn err(&self, text: &str) {
        self.session.send(&OwnerFrame::Err { text: text.to_string() });
    }
    fn stderr_is_terminal(&self) -> bool {
        self.session.stderr_tty
    }
    fn stdin_is_terminal(&self) -> bool {
        self.session.stdin_tty
    }
    fn read_line(&self) -> Option<String> {
        self.session.ask()
    }
    fn bar(&self, template: Option<&str>) -> Bar<'_> {
        // The client draws the bar; when its stderr is not a terminal it
        // would draw nothing, so it gets the same progress lines a direct
        // run prints there instead.
        let session = self.session;
        let remote: Option<Box<dyn Fn(BarEvent) + Send + Sync + '_>> = session
            .stderr_tty
            .then(|| Box::new(move |event| session.send(&OwnerFrame::Bar { event })) as Box<_>);
        if let Some(r) = &remote {
            r(BarEvent::New {
                template: template.map(str::to_string),
            });
        }
        Bar {
            local: ProgressBar::hidden(),
            lines: if session.stderr_tty {
                None
            } else {
                Lines::for_template(template, Box::new(move |line| self.err(line)))
            },
            remote,
        }
    }
    fn cancel(&self) -> &Cancel {
        &self.session.cancel
    }
    fn access(&self) -> &Access {
        &self.access
    }
    fn cwd(&self) -> &Path {
        &self.session.cwd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_say_what_how_far_and_of_what() {
        let t = "indexing {bar:40} {pos}/{len} notes, eta {eta}";
        assert_eq!(progress_line(t, "", 40, 174), "indexing: 40/174 notes (22%)\n");
        let t = "re-embedding {bar:40} {pos}/{len} chunks, {per_sec}, eta {eta}";
        assert_eq!(progress_line(t, "", 0, 10), "re-embedding: 0/10 chunks (0%)\n");
        let t = "downloading {msg} {bar:40} {bytes}/{total_bytes}, {bytes_per_sec}, eta {eta}";
        assert_eq!(
            progress_line(t, "model.onnx", 1_048_576, 4_194_304),
            "downloading model.onnx: 1.0/4.0 MiB (25%)\n"
        );
    }

    #[test]
    fn line_mode_speaks_at_each_tenth_not_at_each_step() {
        let said = std::sync::Mutex::new(Vec::<String>::new());
        let lines = Lines::for_template(
            Some("indexing {bar:40} {pos}/{len} notes"),
            Box::new(|l| said.lock().unwrap().push(l.to_string())),
        )
        .unwrap();
        for i in 0..=200u64 {
            lines.update(|s| {
                s.len = Some(200);
                s.pos = i;
            });
        }
        let said = said.lock().unwrap();
        assert_eq!(said.len(), 11, "{said:?}");
        assert_eq!(said[0], "indexing: 0/200 notes (0%)\n");
        assert_eq!(said[5], "indexing: 100/200 notes (50%)\n");
        assert_eq!(said[10], "indexing: 200/200 notes (100%)\n");
        assert!(
            Lines::for_template(None, Box::new(|_| {})).is_none(),
            "a spinner stays quiet"
        );
    }
}
