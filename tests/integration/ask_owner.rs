//! `jarvis ask` in the everyday set-up, through the real binary: with a
//! `jarvis sync` (or `serve`) owning the knowledge base the turn runs in
//! the owner, streams back, continues with `--session`, and a stop rolls it
//! back; a removal the model asks for is answered `[y/N]` on a terminal (a
//! pseudo-terminal here), left pending in a `serve`'s web app, and never
//! carried out without an answer.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::fakes::llm::{End, FakeServer, Reply};
use crate::support::fakes::wires::Wire;
use crate::support::fs::write;
use crate::support::owner::{addr_of, signal, start_owner};
use crate::support::{run, Sandbox};

/// A home with two notes indexed and Ollama at `llm`.
fn home(llm: &FakeServer) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write(
        &vault,
        "notes/pasta.md",
        "# Pasta\n\nBoil pasta for nine minutes in salted water.\n",
    );
    write(
        &vault,
        "notes/bread.md",
        "# Bread\n\nBake the loaf at 230 degrees for forty minutes.\n",
    );
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n[vault]\npath = \"{}\"\n[sync]\nwatch = false\n",
        llm.url,
        vault.display()
    ));
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"]).stdin(Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    (sb, vault)
}

fn ask(sb: &Sandbox, args: &[&str]) -> crate::support::Run {
    let mut c = sb.jarvis();
    c.arg("ask").args(args).stdin(Stdio::null());
    run(c)
}

fn session_file(sb: &Sandbox, id: &str) -> Value {
    let p = sb.jarvis_home().join("sessions").join(format!("{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn session_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session line in {stderr}"))
        .to_string()
}

fn notes(sb: &Sandbox) -> Vec<String> {
    let mut c = sb.jarvis();
    c.args(["kb", "list", "--json"]).stdin(Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let mut keys: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        // Notes only: each asked exchange is indexed as chat history too.
        .filter_map(|d| d["file_path"].as_str().filter(|p| !p.is_empty()).map(str::to_string))
        .collect();
    keys.sort();
    keys
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        assert!(start.elapsed() < within, "the command did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ask_runs_in_a_running_sync_streams_continues_and_a_stop_rolls_back() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.tool_calls(&[("c", "search_kb", vec![r#"{"query":"pasta"}"#])]),
        Wire::Ollama.text(&["Boil it ", "nine minutes."]),
        Wire::Ollama.text(&["Salt the water."]),
        Wire::Ollama
            .reply(Wire::Ollama.text_events(&["A half answer"]))
            .with_end(End::Hang {
                trickle: None,
                every: Duration::from_secs(1),
            }),
    ]);
    let (sb, _vault) = home(&llm);
    let mut owner = start_owner(&sb, &["sync"]);

    // Answered by the owner (a direct run would find the store owned).
    let r = ask(&sb, &["How long for pasta?"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("Boil it nine minutes."), "{}", r.stdout);
    assert!(r.stderr.contains("→ search_kb(query=pasta)"), "{}", r.stderr);
    assert!(!r.stderr.contains("owned by"), "{}", r.stderr);
    let id = session_id(&r.stderr);
    let log = std::fs::read_to_string(sb.jarvis_home().join("logs/sync.log")).unwrap();
    assert!(
        log.contains("running a delegated command") && log.contains("\"ask\""),
        "{log}"
    );

    // --session continues it, --json gives the same shape as direct.
    let r = ask(&sb, &["And the water?", "--session", &id, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["session_id"], id.as_str());
    assert_eq!(v["text"], "Salt the water.");
    assert_eq!(v["confirmations"], serde_json::json!([]));
    let before = session_file(&sb, &id);
    assert_eq!(before["display"].as_array().unwrap().len(), 4, "{before}");

    // A stop mid-answer: the text streamed before the turn ended, and the
    // session is left exactly as it was.
    let mut c = sb.jarvis();
    c.args(["ask", "And the sauce?", "--session", &id])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let keep = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            keep.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let start = Instant::now();
    while !seen.lock().unwrap().contains("A half answer") {
        assert!(start.elapsed() < Duration::from_secs(120), "the answer never streamed");
        assert!(child.try_wait().unwrap().is_none(), "ended before streaming");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(child.id(), "-INT");
    let code = wait_exit(&mut child, Duration::from_secs(30));
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("stopped"), "{err}");
    assert!(
        llm.closed.recv_timeout(Duration::from_secs(10)).is_ok(),
        "the owner closed the model's stream"
    );
    let after = session_file(&sb, &id);
    assert_eq!(after["display"], before["display"], "the stopped turn left nothing");
    assert_eq!(after["messages"], before["messages"]);
    assert!(!after.to_string().contains("half answer"));
    assert!(owner.terminate().success());
}

/// A pseudo-terminal: the child's stdin, stdout and stderr are its slave
/// side; the test reads and types on the master side.
struct Pty {
    master: std::fs::File,
    seen: Arc<Mutex<String>>,
}

#[allow(unsafe_code)]
fn spawn_on_pty(mut c: Command) -> (Child, Pty) {
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two descriptors into the given ints; the null
    // name, termios and winsize pointers are allowed.
    let rc = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (std::fs::File::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
    c.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let child = c.spawn().unwrap();
    drop(c); // the parent's copies of the slave side
    let seen = Arc::new(Mutex::new(String::new()));
    let (mut r, keep) = (master.try_clone().unwrap(), seen.clone());
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        // EIO once the child and its slave descriptors are gone.
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            keep.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (child, Pty { master, seen })
}

impl Pty {
    fn wait_for(&self, text: &str) {
        let start = Instant::now();
        while !self.seen.lock().unwrap().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "never saw {text:?} in:\n{}",
                self.seen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    fn text(&self) -> String {
        self.seen.lock().unwrap().clone()
    }
}

fn remove_then_say(source: &str) -> Vec<Reply> {
    let args = format!(r#"{{"source":"{source}"}}"#);
    vec![
        Wire::Ollama.tool_calls(&[("r", "remove_document", vec![&args])]),
        Wire::Ollama.text(&["I asked you to confirm the removal."]),
    ]
}

#[test]
fn a_removal_is_asked_on_the_terminal_and_never_done_without_an_answer() {
    let mut replies = remove_then_say("notes/bread.md");
    replies.extend(remove_then_say("notes/pasta.md"));
    replies.extend(remove_then_say("notes/bread.md"));
    replies.extend(remove_then_say("notes/bread.md"));
    let llm = FakeServer::start(replies);
    let (sb, _vault) = home(&llm);
    let all = vec!["notes/bread.md".to_string(), "notes/pasta.md".to_string()];
    assert_eq!(notes(&sb), all);

    // Direct (no owner): asked on this process's own terminal.
    let mut c = sb.jarvis();
    c.args(["ask", "remove my bread note"]);
    let (mut child, pty) = spawn_on_pty(c);
    pty.wait_for("[y/N]");
    assert!(pty.text().contains("notes/bread.md"), "{}", pty.text());
    (&pty.master).write_all(b"n\n").unwrap();
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(60)),
        Some(0),
        "{}",
        pty.text()
    );
    pty.wait_for("session ");
    assert!(pty.text().contains("Kept"), "{}", pty.text());
    assert!(!pty.text().contains("web app"), "{}", pty.text());
    assert_eq!(notes(&sb), all);

    let mut owner = start_owner(&sb, &["sync"]);

    // "y" on the terminal removes exactly the document named.
    let mut c = sb.jarvis();
    c.args(["ask", "remove my pasta note"]);
    let (mut child, pty) = spawn_on_pty(c);
    pty.wait_for("[y/N]");
    let asked = pty.text();
    assert!(
        asked.contains("Remove \"Pasta\"") && asked.contains("notes/pasta.md"),
        "the question names what would go: {asked}"
    );
    (&pty.master).write_all(b"y\n").unwrap();
    let code = wait_exit(&mut child, Duration::from_secs(60));
    pty.wait_for("session ");
    assert_eq!(code, Some(0), "{}", pty.text());
    assert!(pty.text().contains("Removed"), "{}", pty.text());
    assert_eq!(notes(&sb), vec!["notes/bread.md".to_string()]);

    // "n" keeps it.
    let mut c = sb.jarvis();
    c.args(["ask", "remove my bread note"]);
    let (mut child, pty) = spawn_on_pty(c);
    pty.wait_for("[y/N]");
    (&pty.master).write_all(b"n\n").unwrap();
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(60)),
        Some(0),
        "{}",
        pty.text()
    );
    pty.wait_for("session ");
    assert!(pty.text().contains("Kept"), "{}", pty.text());
    assert_eq!(notes(&sb), vec!["notes/bread.md".to_string()]);

    // No terminal: reported, not asked, nothing removed — and no promise of
    // a web app that a `sync` does not have.
    let r = ask(&sb, &["remove my bread note"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("[y/N]"), "{}", r.stderr);
    assert!(r.stderr.contains("not done"), "{}", r.stderr);
    assert!(!r.stderr.contains("answer it in the web app"), "{}", r.stderr);
    assert_eq!(notes(&sb), vec!["notes/bread.md".to_string()]);
    assert!(owner.terminate().success());
}

#[test]
fn through_serve_a_pending_removal_waits_in_the_web_app() {
    let llm = FakeServer::start(remove_then_say("notes/pasta.md"));
    let (sb, _vault) = home(&llm);
    let mut owner = start_owner(&sb, &["serve", "--port", "0", "--no-jobs"]);
    let url = owner.web_url();
    let r = ask(&sb, &["remove my pasta note", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let c = &v["confirmations"][0];
    assert_eq!(c["status"], "pending", "{v}");
    assert_eq!(c["answer_in"], url.as_str(), "{v}");
    assert!(c["description"].as_str().unwrap().contains("notes/pasta.md"), "{v}");
    // The web app shows it with the session.
    let addr = addr_of(&url);
    let host = addr.to_string();
    let id = v["session_id"].as_str().unwrap();
    let resp = crate::support::web::raw_request(
        addr,
        "GET",
        &format!("/history?session_id={id}"),
        &[("Host", &host)],
        None,
    );
    assert_eq!(resp.status, 200);
    let h: Value = serde_json::from_slice(&resp.body).unwrap();
    assert!(
        h["pending"][0]["description"]
            .as_str()
            .is_some_and(|d| d.contains("notes/pasta.md")),
        "{h}"
    );
    assert_eq!(notes(&sb).len(), 2, "nothing removed before the answer");
    assert!(owner.terminate().success());
}

/// A draft edit the model suggests is said to be reviewable in the web
/// app's editor only where it is — under `serve`, which keeps it pending
/// there — and is otherwise reported as not applied.
#[test]
fn a_suggested_draft_edit_is_said_reviewable_only_where_it_is() {
    use jarvis::drafts::{DraftSettings, DraftsHandle, Visibility};
    let llm = FakeServer::start(vec![Reply::status(500, "{}")]);
    let (sb, _vault) = home(&llm);
    let drafts = DraftsHandle::open(DraftSettings::with_root(sb.jarvis_home().join("drafts"))).unwrap();
    let draft = drafts
        .workspace
        .create_draft("cv", "cv.md", "# CV\n\nOld line.\n", Visibility::Public, None)
        .unwrap();
    drop(drafts);
    let args =
        serde_json::json!({"draft_id": draft.id, "filename": "cv.md", "content": "# CV\n\nNew line.\n"}).to_string();
    let propose = || {
        vec![
            Wire::Ollama.tool_calls(&[("e", "propose_draft_edit", vec![&args])]),
            Wire::Ollama.text(&["I suggested a change."]),
        ]
    };
    let llm = FakeServer::start([propose(), propose()].concat());
    let config = std::fs::read_to_string(sb.config_file()).unwrap();
    let config = config
        .lines()
        .map(|l| {
            if l.starts_with("ollama_host") {
                format!("ollama_host = \"{}\"", llm.url)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    sb.write_config(&format!("{config}\n"));
    let change = format!("1 change proposed to cv.md in draft {}", draft.id);

    // No web app: not applied, and no promise of a review.
    let r = ask(&sb, &["tighten my CV"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&change) && r.stderr.contains("not applied"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(
        !r.stderr.contains("review them in the web app's editor at"),
        "{}",
        r.stderr
    );

    // Under serve: pending in its editor, which the message points to.
    let mut owner = start_owner(&sb, &["serve", "--port", "0", "--no-jobs"]);
    let url = owner.web_url();
    let r = ask(&sb, &["tighten my CV"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&change)
            && r.stderr
                .contains(&format!("review them in the web app's editor at {url}")),
        "{}",
        r.stderr
    );
    let addr = addr_of(&url);
    let host = addr.to_string();
    let resp = crate::support::web::raw_request(addr, "GET", "/drafts", &[("Host", &host)], None);
    assert_eq!(resp.status, 200);
    let v: Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(v["pending"][0]["draft_id"], draft.id.as_str(), "{v}");
    assert!(owner.terminate().success());
}
