//! The sandbox against real processes: children never see API keys, a
//! killed group leaves no grandchild, a child dies with its parent, output
//! is capped, and the working directory is honoured.
//!
//! Tests that need secrets in the *parent's* environment re-run this test
//! binary as a child with those variables set (the test process's own
//! environment is never mutated), and that child does the sandboxed spawn.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use jarvis::sandbox::{self, ChildSpec, Ending};

const INNER: &str = "JARVIS_SANDBOX_TEST_INNER";

const SECRETS: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "sk-ant-test-0123456789"),
    ("OPENROUTER_API_KEY", "sk-or-v1-test-0123456789"),
    ("OPENAI_API_KEY", "sk-openai-test-0123456789"),
    ("GITHUB_TOKEN", "ghp_test0123456789"),
    ("HF_TOKEN", "hf_test0123456789"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-test-0123456789"),
    ("DB_PASSWORD", "db-password-test-0123456789"),
    ("JARVIS_API_KEY", "jarvis-key-test-0123456789"),
];

/// Re-run one test of this binary with `env` added and the inner marker set.
fn rerun_self(test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("test exe");
    let mut c = Command::new(exe);
    c.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INNER, "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("re-run the test binary")
}

fn alive(pid: u32) -> bool {
    // Gone, or a zombie nobody has reaped yet (PID 1 in a container may
    // not reap), both count as dead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|r| r.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
    }
}

fn wait_dead(pid: u32, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

#[test]
fn sandboxed_child_sees_no_api_keys() {
    if std::env::var_os(INNER).is_none() {
        let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
        env.push(("JARVIS_HOME", "/tmp/jarvis-sandbox-test-home"));
        env.push(("OPENROUTER_MODEL", "some/model"));
        let out = rerun_self("sandbox::sandboxed_child_sees_no_api_keys", &env);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "inner run failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("INNER-OK 2"), "the inner test did not run: {stdout}");
        return;
    }
    // Inner: this process has the keys; its sandboxed children must not.
    for (k, v) in SECRETS {
        assert_eq!(std::env::var(k).as_deref(), Ok(*v), "the outer run did not set {k}");
    }
    let mut checked = 0;
    for inherit in [&[][..], sandbox::env::SELF_INHERIT] {
        let out = sandbox::run_child(
            Path::new("/usr/bin/env"),
            &ChildSpec {
                inherit,
                timeout: Duration::from_secs(10),
                ..ChildSpec::default()
            },
        )
        .expect("run env");
        assert!(out.ending == Ending::Exited { code: 0 }, "{:?}", out.ending);
        let seen = String::from_utf8_lossy(&out.stdout);
        for (k, v) in SECRETS {
            assert!(!seen.contains(k), "child saw {k}:\n{seen}");
            assert!(!seen.contains(v), "child saw the value of {k}:\n{seen}");
        }
        assert!(seen.lines().any(|l| l.starts_with("PATH=")), "PATH is passed: {seen}");
        if inherit.is_empty() {
            assert!(!seen.contains("JARVIS_HOME="), "base allowlist has no JARVIS_*: {seen}");
        } else {
            assert!(seen.contains("JARVIS_HOME=/tmp/jarvis-sandbox-test-home"), "{seen}");
            assert!(seen.contains("OPENROUTER_MODEL=some/model"), "{seen}");
        }
        checked += 1;
    }
    println!("INNER-OK {checked}");
}

#[test]
fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("grandchild.pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let out = sandbox::run_child(
        Path::new("/bin/sh"),
        &ChildSpec {
            args: &["-c", &script],
            timeout: Duration::from_millis(700),
            ..ChildSpec::default()
        },
    )
    .expect("run sh");
    assert!(matches!(out.ending, Ending::TimedOut { .. }), "{:?}", out.ending);
    let grandchild: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        wait_dead(grandchild, Duration::from_secs(5)),
        "grandchild {grandchild} outlived the group kill"
    );
    assert!(!alive(out.pid), "the leader is gone");
}

#[test]
fn a_grandchild_left_behind_by_a_finished_child_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("grandchild.pid");
    // The shell exits at once, leaving `sleep` holding the stdout pipe; the
    // call must neither wait for it nor leave it running.
    let script = format!("sleep 300 & echo $! > {}; echo done", pidfile.display());
    let start = Instant::now();
    let out = sandbox::run_child(
        Path::new("/bin/sh"),
        &ChildSpec {
            args: &["-c", &script],
            timeout: Duration::from_secs(60),
            ..ChildSpec::default()
        },
    )
    .expect("run sh");
    assert_eq!(out.ending, Ending::Exited { code: 0 });
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    assert!(start.elapsed() < Duration::from_secs(30), "waited for the grandchild");
    let grandchild: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    assert!(
        wait_dead(grandchild, Duration::from_secs(5)),
        "grandchild {grandchild} survived"
    );
}

#[test]
fn stop_hook_kills_the_group() {
    let flag = std::sync::atomic::AtomicBool::new(false);
    let started = Instant::now();
    let stop = || {
        if started.elapsed() > Duration::from_millis(300) {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        flag.load(std::sync::atomic::Ordering::SeqCst)
    };
    let out = sandbox::run_child(
        Path::new("/bin/sleep"),
        &ChildSpec {
            args: &["300"],
            timeout: Duration::from_secs(60),
            stop: Some(&stop),
            ..ChildSpec::default()
        },
    )
    .expect("run sleep");
    assert!(matches!(out.ending, Ending::Stopped { .. }), "{:?}", out.ending);
    assert!(!alive(out.pid));
}

#[test]
fn child_dies_with_its_parent() {
    let dir = std::env::var_os("JARVIS_SANDBOX_TEST_DIR");
    if std::env::var_os(INNER).is_some() {
        // Inner: start a long child that records its pid, then wait to be
        // SIGKILLed by the outer test.
        let dir = std::path::PathBuf::from(dir.expect("dir"));
        let script = format!("echo $$ > {}/child.pid; exec sleep 300", dir.display());
        let _ = sandbox::run_child(
            Path::new("/bin/sh"),
            &ChildSpec {
                args: &["-c", &script],
                timeout: Duration::from_secs(300),
                ..ChildSpec::default()
            },
        );
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("exe");
    let mut inner = Command::new(exe)
        .args([
            "sandbox::child_dies_with_its_parent",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(INNER, "1")
        .env("JARVIS_SANDBOX_TEST_DIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn inner");
    let pidfile = tmp.path().join("child.pid");
    let start = Instant::now();
    let child: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "inner never started its child"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(alive(child));
    inner.kill().expect("SIGKILL the parent");
    inner.wait().expect("reap the parent");
    assert!(
        wait_dead(child, Duration::from_secs(5)),
        "child {child} outlived its SIGKILLed parent"
    );
}

#[test]
fn output_is_capped_and_cwd_is_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = sandbox::run_child(
        Path::new("/bin/sh"),
        &ChildSpec {
            args: &["-c", "pwd; head -c 3000000 /dev/zero; echo oops >&2"],
            cwd: Some(dir.path()),
            output_limit: 1000,
            timeout: Duration::from_secs(30),
            ..ChildSpec::default()
        },
    )
    .expect("run sh");
    assert_eq!(out.ending, Ending::Exited { code: 0 });
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.stdout_truncated);
    assert!(!out.stderr_truncated);
    assert_eq!(out.stderr, "oops\n");
    let first = String::from_utf8_lossy(&out.stdout);
    let cwd = std::fs::canonicalize(dir.path()).expect("canon");
    assert!(first.starts_with(&format!("{}\n", cwd.display())), "{first:?}");
}

#[test]
fn a_missing_program_is_a_spawn_error() {
    let err = sandbox::run_child(Path::new("/nonexistent/program"), &ChildSpec::default()).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/program"), "{err}");
}

/// A child asked to run without network cannot reach even a loopback
/// server the test holds open; the same child with network can (so the
/// probe itself works).
#[test]
fn a_child_without_network_reaches_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let probe = format!("import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected')");
    let run = |no_network: bool| {
        sandbox::run_child(
            Path::new("python3"),
            &ChildSpec {
                args: &["-c", &probe],
                timeout: Duration::from_secs(30),
                no_network,
                ..ChildSpec::default()
            },
        )
        .expect("spawn python3 (network namespaces must be available here)")
    };
    let cut_off = run(true);
    assert_ne!(cut_off.ending, Ending::Exited { code: 0 }, "connected without network");
    assert!(
        cut_off.stderr.contains("Network is unreachable") || cut_off.stderr.contains("refused"),
        "{}",
        cut_off.stderr
    );
    assert!(listener.accept().is_err(), "the server saw a connection");
    // Files the child writes are still the user's (its own uid inside).
    let dir = tempfile::tempdir().expect("tempdir");
    let made = sandbox::run_child(
        Path::new("sh"),
        &ChildSpec {
            args: &["-c", "echo x > made && id -u"],
            cwd: Some(dir.path()),
            no_network: true,
            ..ChildSpec::default()
        },
    )
    .expect("spawn sh");
    assert_eq!(made.ending, Ending::Exited { code: 0 }, "{}", made.stderr);
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(dir.path().join("made")).expect("made").uid();
    assert_eq!(owner, dir.path().metadata().expect("dir").uid());
    assert_eq!(String::from_utf8_lossy(&made.stdout).trim(), owner.to_string());

    let open = run(false);
    assert_eq!(
        open.ending,
        Ending::Exited { code: 0 },
        "the probe itself failed: {}",
        open.stderr
    );
}
