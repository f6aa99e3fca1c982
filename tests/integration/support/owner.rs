//! Long-running `jarvis sync` / `jarvis serve` processes a test starts:
//! the [`Owned`] guard that never leaves one behind, the two meanings of
//! "ready" (answers `kb` commands; has finished its at-start jobs), the
//! web address a `serve` prints, and the signals a test sends.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Sandbox;

/// How long an owner may take to start or to stop on a loaded machine;
/// the real latencies are the benchmarks' business.
const PATIENCE: Duration = Duration::from_secs(120);

/// A long-running `jarvis sync` / `jarvis serve` started by a test.
///
/// Dropping it — also while a failed assertion unwinds — kills and reaps the
/// process, so a panicking test never leaves an owner behind holding its
/// socket, its store and a share of the CPU after the test binary has gone.
/// Its stderr is drained on a thread (a full pipe would block the owner's
/// logging mid-test) and kept, and each line is offered to
/// [`Owned::line_matching`].
pub struct Owned {
    child: Child,
    stderr: Arc<Mutex<Vec<u8>>>,
    lines: mpsc::Receiver<String>,
}

impl Owned {
    /// Spawn `c` with stdin and stdout closed and stderr captured.
    pub fn spawn(mut c: Command) -> Owned {
        use std::io::{BufRead, BufReader};
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn the owner");
        let pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = mpsc::channel();
        let keep = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut r = BufReader::new(pipe);
            let mut line = Vec::new();
            while r.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                keep.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&line);
                let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                line.clear();
            }
        });
        Owned { child, stderr, lines }
    }
    pub fn id(&self) -> u32 {
        self.child.id()
    }
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait()
    }
    /// Everything the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
    /// The first `f(line)` that is `Some` among stderr lines not yet seen
    /// here, waiting up to `within`.
    pub fn line_matching<T>(&self, within: Duration, f: impl Fn(&str) -> Option<T>) -> Option<T> {
        let until = std::time::Instant::now() + within;
        loop {
            let left = until.checked_duration_since(std::time::Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(t) = f(&line) {
                        return Some(t);
                    }
                }
                Err(_) => return None,
            }
        }
    }
    /// SIGKILL and reap.
    pub fn kill9(&mut self) -> ExitStatus {
        self.child.kill().expect("SIGKILL the owner");
        self.child.wait().expect("reap the owner")
    }
    /// SIGTERM (what `systemctl stop` and Ctrl-C's cousin send), then the
    /// exit status, which must come within [`PATIENCE`].
    pub fn terminate(&mut self) -> ExitStatus {
        signal(self.id(), "-TERM");
        self.exit_within(PATIENCE, "SIGTERM did not stop the owner")
    }
    /// The exit status once the process has ended, failing the test with
    /// `what` and the owner's stderr if that takes longer than `within`.
    pub fn exit_within(&mut self, within: Duration, what: &str) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.try_wait().expect("poll the owner") {
                return s;
            }
            assert!(start.elapsed() < within, "{what} within {within:?}: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    /// The address a `jarvis serve` prints once it listens
    /// (`web app on http://127.0.0.1:PORT/`), as printed.
    pub fn web_url(&self) -> String {
        self.line_matching(PATIENCE, |l| {
            l.strip_prefix("web app on ")
                .and_then(|r| r.split_whitespace().next())
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("serve never printed its address: {}", self.stderr()))
    }
}

/// `http://127.0.0.1:PORT/` → `127.0.0.1:PORT`.
pub fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap_or_else(|e| panic!("{url}: {e}"))
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // A failing test shows what the owner logged, the end of it.
        if std::thread::panicking() {
            let text = self.stderr();
            let start = text.len().saturating_sub(16 * 1024);
            let start = (start..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            eprintln!("--- the owner's stderr (last 16 KiB) ---\n{}", &text[start..]);
        }
    }
}

/// The owner's socket in `sb`.
pub fn socket(sb: &Sandbox) -> PathBuf {
    sb.jarvis_home().join("state/owner.sock")
}

/// Start an owner (`args`: `["sync"]`, `["serve", "--port", "0"]`, …) and
/// wait until it answers `kb` commands with the store open. The guard
/// kills it if the test panics.
pub fn start_owner(sb: &Sandbox, args: &[&str]) -> Owned {
    let mut c = sb.jarvis();
    c.args(args);
    let mut child = Owned::spawn(c);
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            // Give the drain thread a moment to read the last words.
            std::thread::sleep(Duration::from_millis(100));
            panic!("the owner exited early ({status}): {}", child.stderr());
        }
        // Ready once a status request is answered with the store open.
        if socket(sb).exists() && sb.kb(&["stats", "--json"]).code == 0 {
            return child;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "the owner never became ready: {}",
            child.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Start `jarvis sync` and wait until its at-start jobs are done (the
/// vault refresh has succeeded once). The guard kills it if the test
/// panics.
pub fn start_sync_settled(sb: &Sandbox) -> Owned {
    let mut c = sb.jarvis();
    c.arg("sync");
    let mut child = Owned::spawn(c);
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            // Give the drain thread a moment to read the last words.
            std::thread::sleep(Duration::from_millis(100));
            panic!("jarvis sync exited early ({status}): {}", child.stderr());
        }
        let st = sync_status(sb);
        let done = st["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == "vault_refresh"))
            .is_some_and(|j| j["last_success"].is_string() && j["running"] == false);
        if st["owner"]["alive"] == true && done {
            return child;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "jarvis sync never finished its start-up run: {st}\n{}",
            child.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `kb sync-status --json`, or `Null` while it cannot be read.
pub fn sync_status(sb: &Sandbox) -> Value {
    let r = sb.kb(&["sync-status", "--json"]);
    if r.code != 0 {
        return Value::Null;
    }
    serde_json::from_str(&r.stdout).unwrap_or(Value::Null)
}

/// `kill SIG PID` (`sig` as `kill` spells it: `-TERM`, `-INT`, …), which
/// must be delivered.
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill {sig} {pid}");
}
