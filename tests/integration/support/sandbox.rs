//! A throwaway HOME + JARVIS_HOME for one test, the built `jarvis` pointed
//! at it with a clean environment, and what a finished run left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

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
    /// `jarvis ARGS` to the end, stdin closed (a question it asks is
    /// answered "no input", never waits on the test's terminal).
    pub fn run(&self, args: &[&str]) -> Run {
        let mut c = self.jarvis();
        c.args(args).stdin(Stdio::null());
        run(c)
    }
    /// `jarvis kb ARGS`, as [`Sandbox::run`].
    pub fn kb(&self, args: &[&str]) -> Run {
        let mut c = self.jarvis();
        c.arg("kb").args(args).stdin(Stdio::null());
        run(c)
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Stdout as JSON, after checking the run succeeded; `what` names the
    /// command in a failure.
    pub fn json(&self, what: &str) -> Value {
        assert_eq!(self.code, 0, "{what}: {}\n{}", self.stdout, self.stderr);
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{what}: {e}\n{}", self.stdout))
    }
}

pub fn run(mut c: Command) -> Run {
    let Output { status, stdout, stderr } = c.output().expect("spawn jarvis");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}
