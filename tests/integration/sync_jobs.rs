//! `jarvis sync` as a service, through the real binary: the vault watcher
//! (create, atomic-rename save, move into `private/`, delete, a 1,000-note
//! burst) seen through `kb search` delegated to the running sync; the PDF
//! inbox against a fake Ollama counting its requests; `kb sync-status`
//! with a killed owner; refusing to start on a missing inbox; the systemd
//! unit.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::fs::{pdf_fixture, write};
use crate::support::owner::{signal, start_sync_settled, sync_status};
use crate::support::{Owned, Sandbox};

/// Generous: the real latency is the benchmark's business; this only has
/// to hold on a loaded CI machine.
const VISIBLE_WITHIN: Duration = Duration::from_secs(10);

/// The note paths and visibilities `kb search` returns for `q`.
fn hits(sb: &Sandbox, q: &str) -> Vec<(String, String)> {
    let v = sb.kb(&["search", q, "--json", "-n", "20"]).json("search");
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| {
            Some((
                h["file_path"].as_str()?.to_string(),
                h["visibility"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

/// Wait until `ok(hits for q)`; returns how long it took.
fn until(sb: &Sandbox, q: &str, bound: Duration, ok: impl Fn(&[(String, String)]) -> bool) -> Duration {
    let start = Instant::now();
    loop {
        let h = hits(sb, q);
        if ok(&h) {
            return start.elapsed();
        }
        assert!(start.elapsed() < bound, "not visible within {bound:?} for {q:?}: {h:?}");
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// The last vault_refresh summary once it is a watcher's scoped run
/// ("N changed path(s): …"), waiting for the status to be written.
fn scoped_summary(sb: &Sandbox) -> String {
    let start = Instant::now();
    loop {
        let st = sync_status(sb);
        let job = st["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == "vault_refresh"))
            .cloned()
            .unwrap_or(Value::Null);
        let summary = job["last_summary"].as_str().unwrap_or("").to_string();
        if summary.contains("changed path(s): ") && job["running"] == false {
            return summary;
        }
        assert!(
            start.elapsed() < VISIBLE_WITHIN,
            "the watcher's refresh was not scoped to the changed paths: {job}"
        );
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn has(h: &[(String, String)], path: &str) -> bool {
    h.iter().any(|(p, _)| p == path)
}

#[test]
fn vault_changes_reach_search_through_the_running_sync_and_a_burst_is_one_refresh() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write(
        &vault,
        "notes/seed.md",
        "# Seed\nA note that is there from the start.\n",
    );
    write(&vault, ".obsidian/workspace.json", "{}");
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));
    let mut owner = start_sync_settled(&sb);

    // Create.
    write(
        &vault,
        "notes/quokka.md",
        "# Quokka\nThe zanzibar quokka lives on a small island.\n",
    );
    let t = until(&sb, "zanzibar quokka", VISIBLE_WITHIN, |h| has(h, "notes/quokka.md"));
    eprintln!("create visible after {t:?}");
    // The watcher's run refreshed the changed path only, not the vault.
    let summary = scoped_summary(&sb);
    assert!(summary.contains("1 added"), "{summary}");

    // Modify the way Obsidian saves: write a temp file, rename it over.
    write(
        &vault,
        "notes/.quokka.md.tmp",
        "# Quokka\nThe marmoset lighthouse replaced the island.\n",
    );
    std::fs::rename(vault.join("notes/.quokka.md.tmp"), vault.join("notes/quokka.md")).unwrap();
    until(&sb, "marmoset lighthouse", VISIBLE_WITHIN, |h| {
        has(h, "notes/quokka.md")
    });
    let list = sb.kb(&["list", "--kind", "notes", "--json"]).json("list");
    let paths: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["file_path"].as_str())
        .collect();
    assert_eq!(
        paths.iter().filter(|p| p.contains("quokka")).collect::<Vec<_>>(),
        [&"notes/quokka.md"],
        "one entry per note after an atomic save, none for the temp file: {paths:?}"
    );

    // Move into private/: re-classified at once.
    std::fs::create_dir_all(vault.join("private")).unwrap();
    std::fs::rename(vault.join("notes/quokka.md"), vault.join("private/quokka.md")).unwrap();
    until(&sb, "marmoset lighthouse", VISIBLE_WITHIN, |h| {
        h.iter().any(|(p, v)| p == "private/quokka.md" && v == "private") && !has(h, "notes/quokka.md")
    });

    // Delete.
    std::fs::remove_file(vault.join("private/quokka.md")).unwrap();
    until(&sb, "marmoset lighthouse", VISIBLE_WITHIN, |h| {
        !has(h, "private/quokka.md")
    });

    // .obsidian/ churn triggers nothing.
    let before = sync_status(&sb)["watcher"]["batches"].as_u64().unwrap();
    for i in 0..20 {
        write(&vault, ".obsidian/workspace.json", &format!("{{\"n\": {i}}}"));
    }
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        sync_status(&sb)["watcher"]["batches"].as_u64().unwrap(),
        before,
        "dot-folder churn is ignored"
    );

    // A burst of 1,000 notes: one batched refresh (two at most, should the
    // writes straddle a debounce window on a slow machine), not 1,000.
    for i in 0..1000 {
        write(
            &vault,
            &format!("burst/n{i:04}.md"),
            &format!("Burst note number {i} about capybara{i}.\n"),
        );
    }
    until(&sb, "capybara999", Duration::from_secs(300), |h| {
        has(h, "burst/n0999.md")
    });
    let summary = scoped_summary(&sb);
    assert!(summary.contains("added"), "{summary}");
    let after = sync_status(&sb);
    let batches = after["watcher"]["batches"].as_u64().unwrap() - before;
    assert!(
        (1..=2).contains(&batches),
        "a 1,000-note burst took {batches} refreshes: {after}"
    );
    let list = sb
        .kb(&["list", "--kind", "notes", "--limit", "5000", "--json"])
        .json("list");
    let burst = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file_path"].as_str().is_some_and(|p| p.starts_with("burst/")))
        .count();
    assert_eq!(burst, 1000);
    owner.kill9();
}

#[test]
fn sync_status_reports_a_killed_owner_as_not_running_and_the_disabled_digest() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write(&vault, "a.md", "# A\nalpha\n");
    sb.write_config(&format!(
        "[vault]\npath = \"{}\"\n[drafts]\nretention_days = 0\n",
        vault.display()
    ));
    let mut owner = start_sync_settled(&sb);
    let st = sync_status(&sb);
    assert_eq!(st["owner"]["pid"], owner.id());
    assert_eq!(st["owner"]["alive"], true);
    assert_eq!(st["digest_enabled"], false);
    let job = |id: &str| {
        st["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(job("vault_refresh")["registered"], true);
    assert!(job("vault_refresh")["next_run"].is_string());
    assert_eq!(job("draft_gc")["registered"], false, "retention 0 → not registered");
    assert_eq!(job("pdf_scan")["registered"], false);
    // Text form: one line per job, the digest line as the seed words it.
    let text = sb.kb(&["sync-status"]);
    assert!(
        text.stdout
            .contains(&format!("jarvis sync running (pid {}", owner.id())),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("digest: disabled ([digest] enabled = false)"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("job vault_refresh"),
        "the log tail: {}",
        text.stdout
    );
    // run-job goes through the owner and is recorded.
    let r = sb.run(&["sync", "run-job", "vault_refresh"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("job vault_refresh: 0 added"), "{}", r.stdout);
    let r = sb.run(&["sync", "run-job", "draft_gc"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("retention_days"), "{}", r.stderr);

    owner.kill9();
    let st = sync_status(&sb);
    assert_eq!(st["owner"]["alive"], false, "{st}");
    let text = sb.kb(&["sync-status"]);
    assert!(text.stdout.contains("owner: not running"), "{}", text.stdout);
    // The file itself is whole JSON (atomic writes).
    let raw = std::fs::read_to_string(sb.jarvis_home().join("state/sync_status.json")).unwrap();
    serde_json::from_str::<Value>(&raw).unwrap();
}

#[test]
fn the_inbox_adds_once_skips_unchanged_at_no_model_cost_replaces_changed_and_keeps_deleted() {
    let sb = Sandbox::new();
    let inbox = sb.dir.path().join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::copy(pdf_fixture("paper.pdf"), inbox.join("paper.pdf")).unwrap();
    std::fs::write(inbox.join("broken.pdf"), b"%PDF-1.4\nthis is not really a pdf\n").unwrap();
    std::fs::write(inbox.join("~$paper.pdf"), b"lock file").unwrap();
    std::fs::write(inbox.join("draft.pdf.crdownload"), b"partial").unwrap();
    let llm = FakeServer::start(vec![
        Wire::Ollama.text(&["{\"title\": \"Inbox Paper\", \"authors\": [\"Ann Inbox\"]}"])
    ]);
    sb.write_config(&format!(
        "[chat]\nollama_host = \"{}\"\n[sync]\npdf_watch_dir = \"{}\"\n",
        llm.url,
        inbox.display()
    ));
    // First scan: one paper added, the broken one a logged failure.
    let r = sb.run(&["sync", "run-job", "pdf_scan"]);
    assert_ne!(r.code, 0, "a failed PDF makes the run report it: {}", r.stdout);
    assert!(r.stderr.contains("broken.pdf"), "{}", r.stderr);
    assert!(r.stderr.contains("1 added"), "{}", r.stderr);
    let asked = llm.requests().len();
    assert!(asked >= 1, "metadata inference ran");
    let log = std::fs::read_to_string(sb.jarvis_home().join("logs/sync.log")).unwrap();
    assert!(log.contains("inbox: added \"Inbox Paper\" — Ann Inbox"), "{log}");
    assert!(log.contains("from paper.pdf"), "{log}");
    let list = sb.kb(&["list", "--kind", "papers", "--json"]).json("list");
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    // Unchanged → skipped, no model request.
    std::fs::remove_file(inbox.join("broken.pdf")).unwrap();
    let r = sb.run(&["sync", "run-job", "pdf_scan"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("1 unchanged"), "{}", r.stdout);
    assert_eq!(llm.requests().len(), asked, "an unchanged PDF costs no model call");

    // Re-saved with a new highlight → replaced, the highlight searchable.
    std::fs::copy(pdf_fixture("paper_annotated.pdf"), inbox.join("paper.pdf")).unwrap();
    let r = sb.run(&["sync", "run-job", "pdf_scan"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("1 replaced"), "{}", r.stdout);
    let s = sb.kb(&["search", "Core claim of the paper", "--json"]).json("search");
    assert!(
        s["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["text"].as_str().unwrap_or("").contains("Core claim")),
        "{s}"
    );
    let list = sb.kb(&["list", "--kind", "papers", "--json"]).json("list");
    assert_eq!(list.as_array().unwrap().len(), 1, "replaced, not duplicated: {list}");

    // Deleting the inbox file keeps its entry.
    std::fs::remove_file(inbox.join("paper.pdf")).unwrap();
    let r = sb.run(&["sync", "run-job", "pdf_scan"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let list = sb.kb(&["list", "--kind", "papers", "--json"]).json("list");
    assert_eq!(list.as_array().unwrap().len(), 1, "an inbox, not a mirror: {list}");
}

#[test]
fn sync_refuses_a_missing_inbox_and_prints_a_systemd_unit() {
    let sb = Sandbox::new();
    let missing = sb.dir.path().join("no-such-inbox");
    sb.write_config(&format!("[sync]\npdf_watch_dir = \"{}\"\n", missing.display()));
    let r = sb.run(&["sync"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("pdf_watch_dir") && r.stderr.contains("does not exist"),
        "{}",
        r.stderr
    );
    let log = std::fs::read_to_string(sb.jarvis_home().join("logs/sync.log")).unwrap();
    assert!(
        log.contains("pdf_watch_dir"),
        "the reason is in logs/sync.log too: {log}"
    );
    assert!(!missing.exists(), "a typo'd inbox is never created");

    let r = sb.run(&["sync", "--print-systemd-unit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let exe = Path::new(env!("CARGO_BIN_EXE_jarvis")).canonicalize().unwrap();
    assert!(
        r.stdout.contains(&format!("ExecStart=\"{}\" sync", exe.display())),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("Type=notify") && r.stdout.contains("Restart=on-failure"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("JARVIS_HOME="), "{}", r.stdout);
}

/// No systemd runs in the test VM (PID 1 is not systemd, and
/// `systemd-run --user` has no bus), so the notify protocol is checked
/// against a socket of our own standing in for `$NOTIFY_SOCKET`: the
/// datagrams `jarvis sync` sends are the ones systemd would read.
#[test]
fn sync_tells_a_notify_socket_ready_feeds_the_watchdog_and_says_stopping() {
    use std::os::unix::net::UnixDatagram;
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write(&vault, "a.md", "# A\nalpha\n");
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));
    let path = sb.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut c = sb.jarvis();
    // A 2 s watchdog: systemd's contract is a ping at least every 2 s, and
    // jarvis pings at half of it.
    c.arg("sync")
        .env("NOTIFY_SOCKET", &path)
        .env("WATCHDOG_USEC", "2000000");
    let mut owner = Owned::spawn(c);
    let recv_until = |want: &str, within: Duration| -> Vec<String> {
        let start = Instant::now();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while start.elapsed() < within {
            if let Ok(n) = sock.recv(&mut buf) {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                let done = msg.lines().any(|l| l == want);
                seen.push(msg);
                if done {
                    return seen;
                }
            }
        }
        panic!("no {want} within {within:?}; got {seen:?}");
    };
    let first = recv_until("READY=1", Duration::from_secs(120));
    assert_eq!(first.len(), 1, "READY is the first message: {first:?}");
    // READY means ready: the socket answers and the jobs are registered.
    let st = sync_status(&sb);
    assert_eq!(st["owner"]["alive"], true, "{st}");
    assert_eq!(st["owner"]["pid"], owner.id(), "{st}");
    // The watchdog is fed: two pings, each within 3 s (one a second).
    recv_until("WATCHDOG=1", Duration::from_secs(3));
    recv_until("WATCHDOG=1", Duration::from_secs(3));
    signal(owner.id(), "-TERM");
    recv_until("STOPPING=1", Duration::from_secs(30));
    let status = owner.wait().unwrap();
    assert!(status.success(), "{status}: {}", owner.stderr());
}
