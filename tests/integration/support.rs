//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// A throwaway HOME + JARVIS_HOME pair.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        Sandbox { dir }
    }
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub fn jarvis_home(&self) -> PathBuf {
        self.dir.path().join("jarvis")
    }
    pub fn config_file(&self) -> PathBuf {
        self.jarvis_home().join("config.toml")
    }
    pub fn write_config(&self, text: &str) {
        std::fs::create_dir_all(self.jarvis_home()).expect("mkdir");
        std::fs::write(self.config_file(), text).expect("write config");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.config_file(), std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    /// The jarvis binary with a clean environment pointing at this sandbox.
    pub fn jarvis(&self) -> Command {
        self.jarvis_at(Path::new(env!("CARGO_BIN_EXE_jarvis")))
    }
    pub fn jarvis_at(&self, bin: &Path) -> Command {
        let mut c = Command::new(bin);
        c.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.home())
            .env("JARVIS_HOME", self.jarvis_home())
            .current_dir(self.dir.path());
        c
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(mut c: Command) -> Run {
    let Output { status, stdout, stderr } = c.output().expect("spawn jarvis");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

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
