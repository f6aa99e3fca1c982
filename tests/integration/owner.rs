//! The owner process (`jarvis sync` / `jarvis serve`) and `kb` delegation
//! over its Unix socket, through the real binary: every `kb` subcommand
//! gives the same result delegated as direct on an identical copy; a dead
//! owner's socket is detected and removed; a second owner is refused; one-
//! shot commands wait for each other; Ctrl-C leaves whole files only (and
//! one press ends a question); config edits and settings exported in the
//! client's shell are picked up or reported, never silently ignored.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::fs::{pdf_fixture, write};
use crate::support::owner::{signal, socket, start_owner};
use crate::support::{run, Sandbox};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else if src.file_name().is_some_and(|n| n != "owner.sock") {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// Drop what legitimately differs between two copies run at different
/// moments by different processes in different homes: timestamps, pids,
/// timings, byte sizes, the home path.
fn normalise(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in [
                    "date_added",
                    "disk_bytes",
                    "pid",
                    "elapsed_ms",
                    "search_ms",
                    "access",
                    "probe",
                    "rag_dir",
                ] {
                    m.remove(k);
                }
                // Weighted fusion keeps the dense leg's cosines, which the
                // owner's optimised model session and a one-shot run's
                // unoptimised one compute a few ulps apart; ranks and ids
                // must still agree exactly.
                if let Some(s) = m
                    .get_mut("score")
                    .and_then(|s| s.as_f64())
                    .map(|s| (s * 1e4).round() / 1e4)
                {
                    m.insert("score".into(), serde_json::json!(s));
                }
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

fn seeded_pair() -> (Sandbox, Sandbox, PathBuf) {
    let a = Sandbox::new();
    let b = Sandbox::new();
    let vault = a.dir.path().join("vault");
    write(
        &vault,
        "notes/attention.md",
        "---\ntags: [ml]\n---\nAttention lets a model weigh every token against every other token.\n",
    );
    write(
        &vault,
        "notes/gardening.md",
        "Tomatoes need sun, water and patience; prune the side shoots.\n",
    );
    write(
        &vault,
        "private/diary.md",
        "A private diary entry about the interview.\n",
    );
    // No file watcher: this compares delegated with direct runs command by
    // command, and the watcher would re-index the vault between them.
    let config = format!("[vault]\npath = \"{}\"\n[sync]\nwatch = false\n", vault.display());
    a.write_config(&config);
    assert_eq!(a.kb(&["index-vault"]).code, 0);
    let pdf = pdf_fixture("paper.pdf");
    let r = a.kb(&[
        "add",
        pdf.to_str().unwrap(),
        "--full-text",
        "--title",
        "A Paper",
        "--authors",
        "Ann Author",
        "--doi",
        "10.1/p",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The PDF worker's own log lines reach the parent's jarvis.log.
    let log = std::fs::read_to_string(a.jarvis_home().join("logs/jarvis.log")).unwrap();
    assert!(
        log.contains("jarvis::pdf_worker") && log.contains("PDF worker reading"),
        "{log}"
    );
    copy_dir(&a.jarvis_home(), &b.jarvis_home());
    (a, b, vault)
}

#[test]
fn sync_runs_every_kb_command_as_direct_mode_does_and_a_dead_owner_falls_back() {
    let (a, b, vault) = seeded_pair();
    let mut owner = start_owner(&a, &["sync"]);
    let pdf = pdf_fixture("paper.pdf").canonicalize().unwrap();
    let pdf = pdf.to_str().unwrap().to_string();
    let second = pdf_fixture("paper_annotated.pdf");
    let second = second.to_str().unwrap().to_string();

    // Same JSON (and exit code) from the owner as from a direct run on the copy.
    let same_json = |args: &[&str]| {
        let (x, y) = (a.kb(args), b.kb(args));
        assert_eq!(x.code, y.code, "{args:?}: delegated {}\ndirect {}", x.stderr, y.stderr);
        assert_eq!(normalise(x.json("delegated")), normalise(y.json("direct")), "{args:?}");
    };
    let same_text = |args: &[&str]| {
        let (x, y) = (a.kb(args), b.kb(args));
        assert_eq!(
            (x.code, &x.stdout, &x.stderr),
            (y.code, &y.stdout, &y.stderr),
            "{args:?}"
        );
    };
    same_json(&["search", "attention tokens", "--json"]);
    same_text(&["search", "attention tokens"]);
    same_json(&["search", "diary", "--visibility", "private", "--json"]);
    same_json(&["list", "--json"]);
    same_text(&["list", "--kind", "papers"]);
    same_json(&["stats", "--json"]);
    same_json(&["schema", "--json"]);
    same_json(&["schema", "doc_type", "--json"]);
    same_text(&["schema", "stauts"]);
    same_text(&["set-meta", &pdf, "--title", "A Better Title"]);
    same_text(&["set-meta", "notes/gardening.md", "--title", "x"]);
    same_json(&[
        "add",
        &second,
        "--full-text",
        "--title",
        "Second",
        "--authors",
        "B",
        "--doi",
        "10.1/s",
        "--json",
    ]);
    write(
        &vault,
        "notes/gardening.md",
        "Tomatoes need sun; basil likes the same bed.\n",
    );
    write(&vault, "notes/new.md", "A new note about owners and sockets.\n");
    same_json(&["index-vault", "--json"]);
    same_text(&["remove", "notes/new.md", "--yes"]);
    same_text(&["remove", "no-such-document", "--yes"]);
    same_json(&["reindex", "--json"]);
    same_json(&["doctor", "--json"]);
    same_json(&["list", "--json"]);

    // Doctor says which way it went.
    let d = a.kb(&["doctor", "--json"]).json("doctor");
    assert_eq!(d["access"], format!("via jarvis sync, pid {}", owner.id()), "{d}");
    assert_eq!(b.kb(&["doctor", "--json"]).json("doctor")["access"], "direct");
    let t = a.kb(&["doctor"]);
    assert!(
        t.stdout
            .contains(&format!("access     via jarvis sync, pid {}", owner.id())),
        "{}",
        t.stdout
    );

    // SIGKILL leaves the socket behind; the next command finds it stale,
    // removes it and goes direct.
    signal(owner.id(), "-KILL");
    owner.wait().unwrap();
    assert!(socket(&a).exists(), "a killed owner leaves its socket");
    let d = a.kb(&["doctor", "--json"]).json("doctor after kill");
    assert_eq!(d["access"], "direct");
    assert_eq!(d["ok"], true, "{d}");
    assert!(!socket(&a).exists(), "the stale socket was removed");
}

#[test]
fn a_second_owner_is_refused_naming_the_first_and_sigterm_stops_cleanly() {
    let sb = Sandbox::new();
    let mut first = start_owner(&sb, &["sync"]);
    let meta = std::fs::metadata(socket(&sb)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "socket 0600");
    let dir = std::fs::metadata(sb.jarvis_home().join("state")).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700, "state/ 0700");
    for second in [&["serve", "--port", "0"][..], &["sync"]] {
        let mut c = sb.jarvis();
        c.args(second);
        let r = run(c);
        assert_ne!(r.code, 0, "{second:?}");
        assert!(
            r.stderr.contains(&format!("pid {}", first.id())) && r.stderr.contains("sync"),
            "{second:?}: {}",
            r.stderr
        );
    }
    let status = first.terminate();
    assert!(status.success(), "{status}");
    assert!(!socket(&sb).exists(), "a clean stop removes the socket");
    // And the store is free again for direct use.
    assert_eq!(sb.kb(&["stats", "--json"]).code, 0);
}

/// The accept loop waits on the socket's readiness and the shutdown switch
/// together, so a stop never depends on reaching the socket by its path.
#[test]
fn sigterm_stops_an_idle_owner_whose_socket_file_was_removed() {
    let sb = Sandbox::new();
    let mut owner = start_owner(&sb, &["sync"]);
    std::fs::remove_file(socket(&sb)).unwrap();
    let status = owner.terminate();
    assert!(status.success(), "{status}: {}", owner.stderr());
}

#[test]
fn four_one_shot_searches_started_together_all_succeed() {
    let (a, _b, _vault) = seeded_pair();
    let children: Vec<Child> = (0..4)
        .map(|i| {
            let mut c = a.jarvis();
            c.args([
                "kb",
                "search",
                if i % 2 == 0 { "attention" } else { "tomatoes" },
                "--json",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(!v["results"].as_array().unwrap().is_empty(), "{v}");
    }
}

/// The pids whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state, ppid, …
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        if rest.split_whitespace().nth(1).and_then(|s| s.parse::<u32>().ok()) == Some(pid) {
            out.push(p);
        }
    }
    out
}

fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie has exited; only its parent's wait is missing.
        Ok(s) => s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
    }
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn ctrl_c_in_kb_add_kills_the_pdf_worker_and_leaves_nothing() {
    let sb = Sandbox::new();
    let tmp = sb.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut c = sb.jarvis();
    c.env("TMPDIR", &tmp)
        // The worker hangs the way PDFium on a hostile file would.
        .env("JARVIS_FAILPOINT", "pdf_worker_hang")
        .args([
            "kb",
            "add",
            pdf_fixture("paper.pdf").to_str().unwrap(),
            "--full-text",
            "--title",
            "T",
            "--authors",
            "A",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    let worker = loop {
        if let Some(&w) = children_of(child.id()).first() {
            break w;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "kb add ended before its PDF worker started"
        );
        assert!(start.elapsed() < Duration::from_secs(120), "no PDF worker appeared");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let start = Instant::now();
    while !gone(worker) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the PDF worker {worker} outlived kb add"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
    let v = sb.kb(&["stats", "--json"]).json("stats");
    assert_eq!(v["chunks"], 0, "an interrupted add leaves nothing: {v}");
}

#[test]
fn ctrl_c_in_index_vault_exits_130_with_whole_notes_only() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    // Notes of several chunks each, so a partial note would show.
    let body: String = (0..40)
        .map(|i| format!("Paragraph {i} about owners, sockets and signals in a long running process.\n\n"))
        .collect();
    for i in 0..400 {
        write(&vault, &format!("n/{i:03}.md"), &format!("# Note {i}\n\n{body}"));
    }
    sb.write_config(&format!(
        "[vault]\npath = \"{}\"\n[rag]\nchunk_size = 400\nchunk_overlap = 0\n",
        vault.display()
    ));
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    // Interrupt once some notes are in (the store grows on disk).
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(500));
        if dir_size(&sb.jarvis_home().join("rag")) > 2_000_000 {
            break;
        }
    }
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let docs = sb.kb(&["list", "--json", "--limit", "1000"]).json("list");
    let docs = docs.as_array().unwrap();
    assert!(
        docs.len() < 400,
        "the stop came too late to test anything ({} notes in)",
        docs.len()
    );
    let expected = docs.first().map(|d| d["chunks"].clone());
    for d in docs {
        assert!(d["chunks"].as_u64().unwrap() > 1);
        assert_eq!(Some(d["chunks"].clone()), expected, "a partial note: {d}");
    }
    let d = sb.kb(&["doctor", "--json"]).json("doctor");
    assert_eq!(d["ok"], true, "{d}");
}

fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else { return 0 };
    rd.flatten()
        .map(|e| {
            if e.path().is_dir() {
                dir_size(&e.path())
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}

/// The owner lives for days; the user edits `prompts/paper_summary.md` in
/// the meantime. The next summary uses the edit: the prompt file is the one
/// source of the wording (there is no built-in copy in the LLM layer any
/// more) and it is read per add, never held by a long-lived provider.
#[test]
fn an_edited_summary_prompt_applies_to_the_next_add_without_a_restart() {
    use crate::support::fakes::llm::FakeServer;
    use crate::support::fakes::wires::Wire;
    let sb = Sandbox::new();
    // Each add makes two calls: metadata inference (which degrades to the
    // given title on a non-JSON answer) and the summary.
    let server = FakeServer::start(vec![
        Wire::Ollama.text(&["not json"]),
        Wire::Ollama.text(&["A first summary of the paper."]),
        Wire::Ollama.text(&["not json"]),
        Wire::Ollama.text(&["A second summary, in house style."]),
    ]);
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n",
        server.url
    ));
    let mut owner = start_owner(&sb, &["sync"]);
    let add = |file: &str, title: &str| {
        let r = sb.kb(&[
            "add",
            pdf_fixture(file).to_str().unwrap(),
            "--title",
            title,
            "--authors",
            "Ada Example",
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    };
    // The summary requests, as the fake received them.
    let summaries = || -> Vec<String> {
        server
            .requests()
            .iter()
            .map(|r| r.body.to_string())
            .filter(|b| !b.contains("Extract its title and its authors"))
            .collect()
    };
    add("paper.pdf", "First Paper");
    let sent = summaries();
    assert_eq!(sent.len(), 1, "one summary call: {sent:?}");
    assert!(
        sent[0].contains("dense, factual summary") && sent[0].contains("titled \\\"First Paper\\\""),
        "the shipped prompt, title filled in: {}",
        sent[0]
    );

    std::fs::write(
        sb.jarvis_home().join("prompts/paper_summary.md"),
        "HOUSE STYLE: three bullet points about \"{title}\".\n",
    )
    .unwrap();
    add("paper_annotated.pdf", "Second Paper");
    let sent = summaries();
    assert_eq!(sent.len(), 2, "one more summary call: {sent:?}");
    assert!(
        sent[1].contains("HOUSE STYLE: three bullet points about \\\"Second Paper\\\"."),
        "{}",
        sent[1]
    );
    assert!(
        !sent[1].contains("dense, factual summary"),
        "the old wording is gone: {}",
        sent[1]
    );

    assert!(owner.terminate().success());
}

/// `rag.embed_model` edited while an owner runs: the owner notices the edit
/// (it re-reads config.toml before each delegated command) and refuses to
/// re-embed with the model it opened — which would silently keep the old
/// one — naming both models and the way out. The index is untouched.
#[test]
fn config_edits_and_shell_settings_under_a_running_owner_are_never_silent() {
    let sb = Sandbox::new();
    let mut owner = start_owner(&sb, &["sync"]);
    let plain = sb.kb(&["stats", "--json"]);
    assert!(!plain.stderr.contains("note:"), "{}", plain.stderr);
    let before = plain.json("stats");
    // A setting exported in the client's shell is not silently dropped:
    // the owner says it runs with its own.
    let mut c = sb.jarvis();
    c.env("VAULT_PATH", "/somewhere/else")
        .args(["kb", "stats", "--json"])
        .stdin(Stdio::null());
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("note: VAULT_PATH differs between this shell and jarvis sync"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("/somewhere/else"),
        "names only, never values: {}",
        r.stderr
    );
    sb.write_config("[rag]\nembed_model = \"BAAI/bge-small-en-v1.5\"\n");
    let r = sb.kb(&["reindex"]);
    assert_ne!(r.code, 0, "a reindex with the old model must not run: {}", r.stdout);
    assert!(
        r.stderr.contains("BAAI/bge-small-en-v1.5")
            && r.stderr.contains("now names")
            && r.stderr.contains("stop `jarvis serve` / `jarvis sync`"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("downloading"),
        "nothing fetched before refusing: {}",
        r.stderr
    );
    assert_eq!(sb.kb(&["stats", "--json"]).json("stats"), before);
    assert!(owner.terminate().success());
}

/// Runs `kb remove` with a stdin that stays open and never answers, waits
/// for the question, sends one SIGINT and returns the exit code and stderr.
fn interrupt_the_removal_question(sb: &Sandbox, note: &str) -> (Option<i32>, String) {
    use std::io::Read;
    let mut c = sb.jarvis();
    c.args(["kb", "remove", note])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let _keep_open = child.stdin.take();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
        }
    });
    let start = Instant::now();
    let mut text = String::new();
    while !text.contains("Remove? [y/N]") {
        assert!(start.elapsed() < Duration::from_secs(60), "never asked: {text}");
        if let Ok(t) = rx.recv_timeout(Duration::from_millis(100)) {
            text = t;
        }
    }
    signal(child.id(), "-INT");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "one Ctrl-C at the question did not stop `kb remove`"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    while let Ok(t) = rx.recv_timeout(Duration::from_millis(200)) {
        text = t;
    }
    (status.code(), text)
}

/// One Ctrl-C at a question ends the command as stopped (130), direct and
/// delegated alike, and nothing is removed — the stdin read no longer holds
/// the command open until a second press.
#[test]
fn one_ctrl_c_at_a_question_stops_the_command() {
    let (sb, _copy, _vault) = seeded_pair();
    let before = sb.kb(&["stats", "--json"]).json("stats");
    let (code, err) = interrupt_the_removal_question(&sb, "notes/gardening.md");
    assert_eq!(code, Some(130), "direct: {err}");
    assert!(err.contains("stopped"), "direct: {err}");
    assert_eq!(sb.kb(&["stats", "--json"]).json("stats"), before);

    let mut owner = start_owner(&sb, &["sync"]);
    let (code, err) = interrupt_the_removal_question(&sb, "notes/gardening.md");
    assert_eq!(code, Some(130), "delegated: {err}");
    assert_eq!(sb.kb(&["stats", "--json"]).json("stats"), before);
    assert!(owner.terminate().success());
}

/// An owner gives the embedding model's memory back once nobody has used
/// it for `runtime.model_keep_alive_secs`, and the next delegated search
/// loads it again and answers as before.
#[test]
fn an_idle_owner_unloads_the_model_and_the_next_search_reloads_it() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write(&vault, "otters.md", "# Otters\n\nRiver otters eat fish and crayfish.\n");
    sb.write_config(&format!(
        "[vault]\npath = \"{}\"\n[sync]\nwatch = false\n[runtime]\nmodel_keep_alive_secs = 1\n",
        vault.display()
    ));
    assert_eq!(sb.kb(&["index-vault"]).code, 0);
    let mut owner = start_owner(&sb, &["sync"]);
    let search = || {
        let r = sb.kb(&["search", "what do otters eat", "--json"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.json("search")
    };
    let first = search();
    assert!(first.to_string().contains("otters.md"), "{first}");
    let log = || std::fs::read_to_string(sb.jarvis_home().join("logs/sync.log")).unwrap_or_default();
    let unloaded = "embedding model unloaded while idle";
    let start = Instant::now();
    while !log().contains(unloaded) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the idle model was never unloaded: {}",
            log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(search(), first, "the reloaded model answers alike");
    // A delegated search runs in the owner, which loads for throughput
    // both times (a direct `kb search` would load for a quick start).
    let loads: Vec<String> = log()
        .lines()
        .filter(|l| l.contains("embedding model loaded"))
        .map(|l| {
            l.split("profile=")
                .nth(1)
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(loads, ["throughput", "throughput"], "{}", log());
    assert!(owner.terminate().success());
}
