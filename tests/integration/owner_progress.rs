//! Long work through the owner shows progress: a `kb index-vault` delegated
//! to a running `jarvis sync` prints progress lines on a stderr that is not
//! a terminal, as they happen and as a direct run prints them.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use crate::support::fs::write;
use crate::support::owner::start_owner;
use crate::support::{run, Sandbox};

fn vault_home() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    sb.write_config(&format!(
        "[vault]\npath = \"{}\"\n[sync]\nwatch = false\n",
        vault.display()
    ));
    (sb, vault)
}

fn write_notes(vault: &Path, notes: usize) {
    for i in 0..notes {
        write(
            vault,
            &format!("n/{i:03}.md"),
            &format!("# Note {i}\n\nNote {i} is about owners, sockets and progress.\n"),
        );
    }
}

#[test]
fn a_delegated_index_vault_prints_progress_lines_before_it_finishes() {
    let (sb, vault) = vault_home();
    // The owner starts on an empty vault (its start-up refresh has nothing
    // to do); the notes arrive afterwards, for the delegated command.
    let mut owner = start_owner(&sb, &["sync"]);
    let start = std::time::Instant::now();
    loop {
        let mut c = sb.jarvis();
        c.args(["kb", "sync-status", "--json"]).stdin(Stdio::null());
        let r = run(c);
        let st: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
        let done = st["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == "vault_refresh"))
            .is_some_and(|j| j["last_success"].is_string() && j["running"] == false);
        if done {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "the start-up refresh never finished: {st}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    write_notes(&vault, 60);
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = Vec::new();
    let mut first_while_running = None;
    for line in stderr.lines() {
        let line = line.unwrap();
        if line.starts_with("indexing: ") && first_while_running.is_none() {
            first_while_running = Some(child.try_wait().unwrap().is_none());
        }
        lines.push(line);
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{lines:?}");
    assert_eq!(
        first_while_running,
        Some(true),
        "progress came while the command ran: {lines:?}"
    );
    for expected in [
        "indexing: 0/60 notes (0%)",
        "indexing: 30/60 notes (50%)",
        "indexing: 60/60 notes (100%)",
    ] {
        assert!(lines.iter().any(|l| l == expected), "{expected} in {lines:?}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("60 added"));
    assert!(owner.terminate().success());

    // A direct run prints the same lines.
    let (direct, dvault) = vault_home();
    write_notes(&dvault, 60);
    let mut c = direct.jarvis();
    c.args(["kb", "index-vault"]).stdin(Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for l in lines
        .iter()
        .filter(|l| l.starts_with("indexing: ") && l.ends_with("0%)"))
    {
        assert!(r.stderr.lines().any(|d| d == l), "direct lacks {l}: {}", r.stderr);
    }
}

/// Two vault refreshes in one owner take turns: the second (a delegated
/// `kb index-vault` beside the start-up refresh, say) waits for the first
/// and finds its work done instead of embedding every note again; while
/// one runs, the App tells how far it is (the web app's status).
#[test]
fn two_vault_refreshes_take_turns_and_the_second_finds_the_work_done() {
    use std::sync::mpsc;
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write_notes(&vault, 5);
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));
    let app = crate::support::web::open_app(jarvis::paths::JarvisHome::at(sb.jarvis_home()));
    assert_eq!(app.vault_progress(), None);
    let (entered, inside) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let released = std::sync::Mutex::new(released);
    let first = {
        let app = app.clone();
        std::thread::spawn(move || {
            let hold = |done: usize, _total: usize| {
                if done == 0 {
                    let _ = entered.send(());
                    let _ = released.lock().unwrap().recv();
                }
            };
            app.refresh_vault(
                None,
                false,
                &jarvis::kb::Actor::Cli,
                &hold,
                &jarvis::cancel::Cancel::new(),
            )
            .map(|(_, r)| r)
        })
    };
    inside.recv().unwrap();
    assert_eq!(
        app.vault_progress(),
        Some(jarvis::app::VaultProgress { done: 0, total: 5 }),
        "a running refresh is visible"
    );
    let second = {
        let app = app.clone();
        std::thread::spawn(move || {
            app.refresh_vault(
                None,
                false,
                &jarvis::kb::Actor::Cli,
                &|_, _| {},
                &jarvis::cancel::Cancel::new(),
            )
            .map(|(_, r)| r)
        })
    };
    // Let the second one reach its turn (or, without turns, run ahead).
    std::thread::sleep(std::time::Duration::from_millis(300));
    release.send(()).unwrap();
    let a = first.join().unwrap().unwrap();
    let b = second.join().unwrap().unwrap();
    assert_eq!(a.added.len(), 5, "{a:?}");
    assert_eq!(
        (b.added.len(), b.unchanged),
        (0, 5),
        "the second found the work done: {b:?}"
    );
    assert_eq!(app.vault_progress(), None, "cleared when done");
}
