//! A full disk, for real (issue 34, point 3).
//!
//! The parent test re-executes this test binary as a child in a mount
//! namespace of its own (`unshare(CLONE_NEWNS)` as root, else inside a new
//! user namespace), where the child mounts a small tmpfs (`size=`) as its
//! JARVIS_HOME — so the kernel itself says "No space left on device", at
//! whatever write first runs out, and the mount vanishes with the child.
//! The child runs the web app in-process on that home (the vault, the
//! model and the test's HOME stay on the ordinary disk) and fills the
//! filesystem to a few chosen amounts of free space during:
//! - an index of the vault (a refresh that adds and changes notes),
//! - a chat turn's saves (the question, and the reply after it),
//! - a draft save (its snapshot, the file, `draft.json`),
//! - a session rename.
//!
//! Each must fail with an error that says the disk is full, names the path
//! and the fix; once the space is back nothing half-written is visible
//! (the store and its indexes agree, every note is indexed at its old or
//! its new hash, the session and draft files hold what they held, no
//! temporary file is left); and the same operation then succeeds on the
//! same running app.
//!
//! Where no namespace can be had (not root, unprivileged user namespaces
//! off), the test says it did not run and why, rather than pretend.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use jarvis::cancel::Cancel;
use serde_json::json;

use crate::support::fakes::wires::Wire;
use crate::support::runtime::bundled_model;
use crate::support::web::WebServer;
use crate::support::Sandbox;

const CHILD_ENV: &str = "JARVIS_DISK_FULL_CHILD";
/// The child's JARVIS_HOME filesystem.
const FS_BYTES: u64 = 48 << 20;
const PASSED: &str = "disk_full: every check passed";
const NOT_RUN: &str = "disk_full: NOT RUN";

#[test]
fn a_full_disk_fails_clearly_keeps_nothing_half_written_and_the_next_write_succeeds() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args([
        "disk_full::full_disk_child",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, "1")
    .stdin(Stdio::null());
    own_mount_namespace(&mut cmd);
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            println!("{NOT_RUN} — no mount namespace for a size-limited filesystem here ({e}); run the suite as root or allow unprivileged user namespaces");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    if let Some(line) = stdout.lines().find(|l| l.starts_with(NOT_RUN)) {
        println!("{line}");
        return;
    }
    assert!(
        out.status.success() && stdout.contains(PASSED),
        "the disk-full child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// Between fork and exec: a mount namespace of the child's own (directly
/// as root, else in a new user namespace mapping only our ids), with every
/// mount private so nothing it mounts reaches this one.
#[allow(unsafe_code)]
fn own_mount_namespace(cmd: &mut Command) {
    // SAFETY: geteuid/getegid have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let uid_map = format!("0 {uid} 1\n").into_bytes();
    let gid_map = format!("0 {gid} 1\n").into_bytes();
    fn write(path: &[u8], bytes: &[u8]) -> bool {
        // SAFETY: NUL-terminated path literal; open/write/close only.
        unsafe {
            let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return false;
            }
            let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            libc::close(fd);
            n == bytes.len() as isize
        }
    }
    // SAFETY: only async-signal-safe system calls (unshare, open, write,
    // close, mount) on buffers made before the fork; no allocation.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if !(write(b"/proc/self/setgroups\0", b"deny")
                    && write(b"/proc/self/uid_map\0", &uid_map)
                    && write(b"/proc/self/gid_map\0", &gid_map))
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            let root = b"/\0";
            if libc::mount(
                std::ptr::null(),
                root.as_ptr().cast(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Mount a tmpfs of `bytes` at `dir` (in the child's own namespace).
#[allow(unsafe_code)]
fn mount_small_fs(dir: &Path, bytes: u64) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let target = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    let opts = std::ffi::CString::new(format!("size={bytes},mode=0700"))?;
    // SAFETY: every pointer is a NUL-terminated string that outlives the call.
    let rc = unsafe {
        libc::mount(
            c"jarvis-full".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            opts.as_ptr().cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn started() -> std::time::Instant {
    static AT: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *AT.get_or_init(std::time::Instant::now)
}

/// The filesystem under test, and a filler file that takes its space.
struct Disk {
    root: PathBuf,
    filler: PathBuf,
}

impl Disk {
    #[allow(unsafe_code)]
    fn free(&self) -> u64 {
        use std::os::unix::ffi::OsStrExt;
        let p = std::ffi::CString::new(self.root.as_os_str().as_bytes()).expect("path");
        // SAFETY: statvfs writes into the struct we own.
        unsafe {
            let mut s: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(p.as_ptr(), &mut s), 0, "statvfs");
            s.f_bavail as u64 * s.f_frsize as u64
        }
    }

    /// Take all the free space but `leave` bytes (rounded to pages).
    fn fill_leaving(&self, leave: u64) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.filler)
            .expect("filler");
        let block = vec![0x5au8; 1 << 20];
        let mut step = block.len();
        while step >= 4096 {
            match f.write(&block[..step]) {
                Ok(0) => step /= 2,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => step /= 2,
                Err(e) => panic!("fill: {e}"),
            }
        }
        let len = f.metadata().expect("filler size").len();
        f.set_len(len.saturating_sub(leave)).expect("give back space");
        drop(f);
        println!(
            "disk_full: filled, {} bytes free ({:.1} s)",
            self.free(),
            started().elapsed().as_secs_f64()
        );
    }

    fn release(&self) {
        std::fs::remove_file(&self.filler).expect("remove filler");
    }

    /// Every file under the home whose name marks a temporary file.
    fn leftovers(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for e in entries.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(&p, out);
                } else if name.starts_with(".jarvis-tmp-") || name.starts_with(".tmp") || name.ends_with(".tmp") {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out);
        out
    }
}

/// A directory holding the bundled model and tokenizer, on the ordinary
/// disk (`runtime.model_dir`), so the small filesystem holds only data.
fn model_dir() -> PathBuf {
    let (model, tokenizer) = bundled_model();
    let dir = tempfile::Builder::new()
        .prefix("disk-full-model")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("model dir")
        .keep();
    std::os::unix::fs::symlink(model, dir.join("model.onnx")).expect("link model");
    std::os::unix::fs::symlink(tokenizer, dir.join("tokenizer.json")).expect("link tokenizer");
    dir
}

/// A note long enough to make several chunks.
fn note(topic: &str, n: usize, version: usize, parts: usize) -> String {
    let words = [
        "glacier", "harvest", "orbit", "ledger", "canyon", "pigment", "tundra", "quartz", "saffron", "beacon",
    ];
    let mut text = format!("# {topic} {n}\n\nVersion {version} of a note about {topic}.\n\n");
    for p in 0..parts {
        text.push_str(&format!("## Part {p}\n\n"));
        for s in 0..8 {
            text.push_str(&format!(
                "The {} of {topic} number {n} meets the {} in paragraph {p}, sentence {s}, version {version}. ",
                words[(n + s) % words.len()],
                words[(p + s + version) % words.len()]
            ));
        }
        text.push_str("\n\n");
    }
    text
}

fn says_disk_full(message: &str, path_part: &str) {
    let m = message.to_lowercase();
    assert!(
        m.contains("disk") && m.contains("full"),
        "not a disk-full message: {message}"
    );
    assert!(
        message.contains(path_part),
        "the message should name {path_part}: {message}"
    );
    assert!(m.contains("free"), "the message should say how to fix it: {message}");
}

/// Every note under `vault`, vault-relative, with its content hash.
fn vault_hashes(vault: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dir in ["", "topics"] {
        for e in std::fs::read_dir(vault.join(dir)).expect("vault").flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") {
                let rel = p.strip_prefix(vault).expect("in vault").display().to_string();
                out.push((
                    rel,
                    jarvis::kb::change::content_hash(&std::fs::read(&p).expect("read note")),
                ));
            }
        }
    }
    out.sort();
    out
}

/// Every note is indexed at one of the hashes its file had (`allowed`),
/// whole, and the indexes hold nothing the store does not; or — when `all`
/// (after a refresh that succeeded) — every note at its current hash and
/// store and indexes in full agreement. Between the two, an index may lag
/// a change that reached only the store: the next write catches it up.
fn check_index(s: &WebServer, vault: &Path, allowed: &[Vec<(String, String)>], all: bool) {
    let kb = s.app.kb().expect("kb");
    let a = kb.agreement().expect("agreement");
    if all {
        assert!(a.ok(), "store and indexes disagree after a refresh: {a:?}");
    } else {
        // An index at the store's seq agrees with it exactly; one behind it
        // may still hold a replaced version's chunks (a search checks every
        // hit against the store) or lack the new ones.
        let bm25 = a.bm25_seq.unwrap_or(0);
        let exact = a.exact_seq.unwrap_or(0);
        assert!(
            bm25 <= a.store_seq && exact <= a.store_seq,
            "an index is ahead of the store: {a:?}"
        );
        if bm25 == a.store_seq {
            assert_eq!((a.orphans_in_bm25, a.missing_in_bm25), (0, 0), "{a:?}");
        }
        if exact == a.store_seq {
            assert_eq!(
                (a.orphans_in_exact, a.missing_in_exact, a.stale_in_exact),
                (0, 0, 0),
                "{a:?}"
            );
        }
    }
    let files: std::collections::BTreeMap<String, Option<String>> = kb
        .store()
        .files()
        .expect("file map")
        .into_iter()
        .map(|(p, e)| (p, e.content_hash))
        .collect();
    let now = vault_hashes(vault);
    for (rel, hash) in &now {
        match files.get(rel) {
            None if !all => {}
            None => panic!("{rel} is not indexed after the refresh that followed the full disk"),
            Some(h) if all => assert_eq!(h.as_deref(), Some(hash.as_str()), "{rel} indexed at a stale hash"),
            Some(h) => assert!(
                allowed
                    .iter()
                    .any(|set| set.iter().any(|(r, x)| r == rel && Some(x.as_str()) == h.as_deref())),
                "{rel} is indexed at a hash its file never had: {h:?}"
            ),
        }
    }
    // Each indexed note is whole: every chunk of it carries the same hash.
    for (rel, hash) in &files {
        let ids = kb
            .store()
            .ids_by(jarvis::store::LookupField::FilePath, rel)
            .expect("chunks of a note");
        assert!(!ids.is_empty(), "{rel} is in the file map without chunks");
        for id in ids {
            let c = kb.store().get(id).expect("get").expect("a listed chunk exists");
            assert_eq!(
                c.meta_str("content_hash"),
                hash.as_deref(),
                "{rel} is half-indexed: chunks of two versions"
            );
        }
    }
}

fn no_leftovers(disk: &Disk, what: &str) {
    let left = disk.leftovers();
    assert!(left.is_empty(), "{what} left temporary files behind: {left:?}");
}

#[test]
fn full_disk_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    started();
    let sb = Sandbox::new();
    let home = sb.jarvis_home();
    std::fs::create_dir_all(&home).expect("home");
    if let Err(e) = mount_small_fs(&home, FS_BYTES) {
        println!("{NOT_RUN} — cannot mount a tmpfs in the test's own namespace ({e})");
        return;
    }
    let disk = Disk {
        root: home.clone(),
        filler: home.join("filler"),
    };
    let vault = sb.home().join("vault");
    std::fs::create_dir_all(vault.join("topics")).expect("vault");
    for n in 0..6 {
        std::fs::write(vault.join(format!("topics/t{n}.md")), note("rivers", n, 0, 3)).expect("note");
    }
    // A long answer, so the reply's save needs more room than the question's.
    // (Words that never repeat: the runaway watch ends a looping answer.)
    let answer: String = (0..1200).map(|i| format!("The answer{i} ")).collect();
    let llm = crate::support::fakes::llm::FakeServer::start(vec![Wire::Ollama.text(&[&answer])]);
    let config = format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n[vault]\npath = \"{}\"\n[runtime]\nmodel_dir = \"{}\"\n",
        llm.url,
        vault.display(),
        model_dir().display()
    );
    let s = WebServer::start_in(sb, &config);
    let refresh = || {
        s.app
            .refresh_vault(None, false, &jarvis::kb::Actor::Cli, &|_, _| {}, &Cancel::new())
    };
    refresh().expect("the first index, with room to spare");
    check_index(&s, &vault, &[], true);
    println!("disk_full: first index done, {} bytes free", disk.free());

    // 1. An index. A large refresh (its commit takes the store's bulk
    // path) on a disk with little room left, then small ones on a disk
    // with 0, 8, 16, … KiB free until one fits: the disk runs out at every
    // step of the write in turn — the store's journal, its tables, the
    // BM25 segment, the exact index's data and metadata.
    let mut failures: std::collections::BTreeMap<String, usize> = Default::default();
    let attempt =
        |leave: u64, failures: &mut std::collections::BTreeMap<String, usize>, before: &[(String, String)]| {
            let after = vault_hashes(&vault);
            disk.fill_leaving(leave);
            let result = refresh();
            disk.release();
            let failed = match result {
                Ok(_) => false,
                Err(e) => {
                    let msg = jarvis::error_kind::chain(&e);
                    says_disk_full(&msg, &home.join("rag").display().to_string());
                    let at = msg.split(" is full").next().unwrap_or("").to_string();
                    *failures.entry(at).or_default() += 1;
                    true
                }
            };
            check_index(&s, &vault, &[before.to_vec(), after], false);
            no_leftovers(&disk, "a failed index");
            failed
        };
    let before = vault_hashes(&vault);
    for n in 0..8 {
        std::fs::write(vault.join(format!("topics/big{n}.md")), note("mountains", n, 0, 10)).expect("note");
    }
    for leave in [0u64, 64 << 10] {
        assert!(
            attempt(leave, &mut failures, &before),
            "an 80-chunk index fits in {leave} bytes?"
        );
    }
    refresh().expect("the refresh after the space returned");
    check_index(&s, &vault, &[], true);
    for round in 1..=2 {
        let before = vault_hashes(&vault);
        for n in 0..2 {
            std::fs::write(vault.join(format!("topics/t{n}.md")), note("rivers", n, round, 3)).expect("note");
            std::fs::write(
                vault.join(format!("topics/r{round}n{n}.md")),
                note("lakes", n, round, 3),
            )
            .expect("note");
        }
        let mut leave = 0;
        while attempt(leave, &mut failures, &before) {
            leave += 8 << 10;
            assert!(
                leave < 4 << 20,
                "round {round}: a small refresh still fails with 4 MiB free"
            );
        }
        println!("disk_full: round {round}: the refresh fit in {leave} bytes");
        check_index(&s, &vault, &[], true);
    }
    println!("disk_full: index failures by what ran out: {failures:?}");

    // 2. A chat turn: first its question's save, then its reply's.
    let id = s.new_session();
    let first = s.chat(&id, "first question").rest();
    assert_eq!(
        first.last().map(|a| a.data["type"].clone()),
        Some(json!("reply")),
        "{first:?}"
    );
    let session_file = home.join("sessions").join(format!("{id}.json"));
    let saved = std::fs::read(&session_file).expect("session file");
    // Room for the question's save (the file as it is plus a little), not
    // for the long answer's.
    let room = saved.len() as u64 + (12 << 10);
    for (leave, what) in [(0u64, "question"), (room, "reply")] {
        disk.fill_leaving(leave);
        let events: Vec<_> = s.chat(&id, "a question on a full disk").rest();
        disk.release();
        let last = events.last().map(|a| a.data.clone()).expect("events");
        assert_eq!(last["type"], "error", "the {what} save on a full disk: {events:?}");
        let msg = last["message"].as_str().expect("message");
        println!("disk_full: chat turn, {what} save: {msg}");
        says_disk_full(msg, &home.join("sessions").display().to_string());
        no_leftovers(&disk, "a failed turn");
        let now = std::fs::read(&session_file).expect("session file");
        let parsed: serde_json::Value = serde_json::from_slice(&now).expect("the session file is whole JSON");
        if what == "question" {
            assert_eq!(now, saved, "a failed question save leaves the session file as it was");
        } else {
            // The question was saved before the model was asked (as a
            // crash would leave it); the reply that could not be saved is
            // not there, nor in the running app.
            let display = parsed["display"].as_array().expect("display");
            assert_eq!(display.len(), 3, "{parsed}");
            assert_eq!(display[2]["text"], "a question on a full disk");
        }
        let h = s.get(&format!("/history?session_id={id}")).json();
        let shown = h["entries"].as_array().expect("entries").len();
        let on_disk = parsed["display"].as_array().expect("display").len();
        assert_eq!(shown, on_disk, "the running app shows what the file holds: {h}");
    }
    let next = s.chat(&id, "after the space returned").rest();
    assert_eq!(
        next.last().map(|a| a.data["type"].clone()),
        Some(json!("reply")),
        "{next:?}"
    );
    let parsed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&session_file).expect("session")).expect("json");
    let texts: Vec<&str> = parsed["display"]
        .as_array()
        .expect("display")
        .iter()
        .map(|d| d["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert_eq!(texts[2], "a question on a full disk");
    assert_eq!(texts[3], "after the space returned");
    assert!(texts[4].starts_with("The answer"), "{texts:?}");

    // 3. A draft save: its snapshot, the file, draft.json.
    let r = s.post(
        "/drafts/new",
        &json!({ "filename": "notes.md", "title": "Notes", "text": "# Notes\n\nfirst\n" }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let draft = r.json()["draft_id"].as_str().expect("id").to_string();
    let file = |s: &WebServer| s.get(&format!("/drafts/{draft}/file?name=notes.md")).json();
    let loaded = file(&s);
    let big = "A much longer draft line.\n".repeat(2000);
    for leave in [0u64, 8 << 10, 40 << 10] {
        disk.fill_leaving(leave);
        let r = s.post(
            "/drafts/save",
            &json!({ "draft_id": draft, "filename": "notes.md", "text": big, "expect_hash": loaded["hash"] }),
        );
        disk.release();
        assert_eq!(
            r.status,
            503,
            "a draft save on a full disk ({leave} free): {}",
            r.text()
        );
        let msg = r.json()["error"].as_str().expect("error").to_string();
        println!("disk_full: draft save with {leave} bytes free: {msg}");
        says_disk_full(&msg, &home.join("drafts").join(&draft).display().to_string());
        no_leftovers(&disk, "a failed draft save");
        let now = file(&s);
        assert_eq!(now["text"], loaded["text"], "the draft is unchanged");
        assert_eq!(
            now["versions"], loaded["versions"],
            "no snapshot, whole or half, was kept"
        );
    }
    let r = s.post(
        "/drafts/save",
        &json!({ "draft_id": draft, "filename": "notes.md", "text": big, "expect_hash": loaded["hash"] }),
    );
    assert_eq!(r.status, 200, "the save after the space returned: {}", r.text());
    let now = file(&s);
    assert_eq!(now["text"], big.as_str());
    assert_eq!(now["versions"].as_array().map(Vec::len), Some(1), "{now}");

    // 4. A session rename.
    disk.fill_leaving(0);
    let r = s.post(
        &format!("/sessions/{id}/rename"),
        &json!({ "title": "Renamed on a full disk" }),
    );
    disk.release();
    assert_eq!(r.status, 503, "a rename on a full disk: {}", r.text());
    let msg = r.json()["error"].as_str().expect("error").to_string();
    println!("disk_full: session rename: {msg}");
    says_disk_full(&msg, &home.join("sessions").display().to_string());
    no_leftovers(&disk, "a failed rename");
    let title = |s: &WebServer| {
        let list = s.get("/sessions").json();
        list["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .find(|m| m["id"] == id.as_str())
            .map(|m| m["title"].clone())
            .expect("listed")
    };
    let old_title = title(&s);
    assert_ne!(old_title, "Renamed on a full disk");
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&session_file).expect("session")).expect("json");
    assert_eq!(on_disk["title"], old_title);
    let r = s.post(&format!("/sessions/{id}/rename"), &json!({ "title": "Renamed later" }));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(title(&s), "Renamed later");
    // The next turn keeps the new title (the failed rename left nothing
    // in memory to write back).
    let again = s.chat(&id, "one more").rest();
    assert_eq!(again.last().map(|a| a.data["type"].clone()), Some(json!("reply")));
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&session_file).expect("session")).expect("json");
    assert_eq!(on_disk["title"], "Renamed later");

    check_index(&s, &vault, &[], true);
    s.stop();
    println!("{PASSED}");
}
