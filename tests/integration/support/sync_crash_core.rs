//! The `jarvis sync` crash campaign (issue 34, point 2), shared by
//! `cargo xtask crash sync` (many kills, the release binary) and the
//! integration test `sync_crash` (a few kills, the debug binary): the
//! xtask includes this file by path.
//!
//! Each cycle starts the real `jarvis sync` on a generated vault and, while
//! it works, changes the vault (new notes, atomic saves, plain overwrites,
//! moves into `private/`, deletions), drops PDFs into its inbox and asks
//! questions through its socket (`jarvis ask`, a stand-in Ollama on
//! loopback answering), then `kill -9`s it at a seeded random moment —
//! during start-up, a sweep, a scoped refresh, an inbox ingest, a chat
//! turn, or idle (which, is read from the status file just before and
//! reported as the kill point). Then, with nothing changing any more:
//! the status file and every session file must read back; `jarvis sync`
//! restarted must finish its start-up refresh and inbox scan, and
//! `kb doctor --json` through it must be healthy; and, the owner stopped,
//! the library itself checks that store, BM25 and the exact index agree,
//! that every note on disk is indexed at its current hash with the
//! visibility its folder gives it (no chunk of a `private/` note public),
//! that nothing gone from disk is still indexed, and that every PDF in the
//! inbox is in the knowledge base.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What to run.
pub struct Plan {
    /// The `jarvis` binary.
    pub bin: PathBuf,
    /// A scratch directory (the home, the vault and the inbox go in it).
    pub dir: PathBuf,
    pub kills: usize,
    pub seed: u64,
    /// Notes in the vault before the first start.
    pub notes: usize,
    /// A killed run lives a random time up to this.
    pub max_run: Duration,
    /// How long a restarted owner may take to finish its start-up refresh.
    pub ready_within: Duration,
}

/// What a campaign did.
#[derive(Debug, Default)]
pub struct Report {
    pub kills: usize,
    /// What the owner was doing when it was killed → how many times.
    pub points: BTreeMap<String, usize>,
    /// Changes made while it ran, by kind.
    pub ops: BTreeMap<&'static str, usize>,
    /// `jarvis ask` turns started while it ran.
    pub asks: usize,
    /// Restart → start-up refresh and inbox scan finished, per cycle (ms).
    pub ready_ms: Vec<f64>,
    /// Temporary files a kill left behind (never read as data).
    pub leftovers: usize,
    /// Notes, PDFs and sessions at the end.
    pub notes: usize,
    pub pdfs: usize,
    pub sessions: usize,
}

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Runs the campaign; `say` gets a line per cycle.
pub fn run(plan: &Plan, say: &dyn Fn(&str)) -> Res<Report> {
    let home = plan.dir.join("home");
    let vault = plan.dir.join("vault");
    let inbox = plan.dir.join("inbox");
    for d in [
        home.clone(),
        plan.dir.join("user"),
        vault.join("notes"),
        vault.join("private"),
        inbox.clone(),
    ] {
        std::fs::create_dir_all(&d).map_err(err("create the scratch directories"))?;
    }
    for i in 0..plan.notes {
        let dir = if i % 5 == 0 { "private" } else { "notes" };
        std::fs::write(
            vault.join(format!("{dir}/seed{i}.md")),
            note_text(&format!("seed{i}"), 0),
        )
        .map_err(err("write a note"))?;
    }
    let llm = StandIn::start()?;
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[chat]\nprovider = \"ollama:standin\"\nollama_host = \"{}\"\n[vault]\npath = \"{}\"\n[sync]\npdf_watch_dir = \"{}\"\n",
            llm.url,
            vault.display(),
            inbox.display()
        ),
    )
    .map_err(err("write config.toml"))?;

    let mut report = Report::default();
    let mut rng = StdRng::seed_from_u64(plan.seed);
    let counter = Arc::new(AtomicUsize::new(0));
    for cycle in 0..plan.kills {
        // The run that is killed.
        let mut owner = spawn_sync(plan, &home, &format!("run{cycle}"))?;
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let asking = Arc::new(AtomicBool::new(false));
        let ops: Arc<Mutex<BTreeMap<&'static str, usize>>> = Arc::default();
        let mutator = {
            let (stop, ops, counter) = (stop.clone(), ops.clone(), counter.clone());
            let (vault, inbox) = (vault.clone(), inbox.clone());
            let seed = rng.random::<u64>();
            std::thread::spawn(move || mutate(&vault, &inbox, seed, &stop, &ops, &counter))
        };
        let asker = {
            let (stop, asking) = (stop.clone(), asking.clone());
            let (bin, home, user) = (plan.bin.clone(), home.clone(), plan.dir.join("user"));
            let seed = rng.random::<u64>();
            std::thread::spawn(move || ask_loop(&bin, &home, &user, seed, &stop, &asking))
        };
        // Now and then within the first half second: start-up itself.
        let life = if rng.random_bool(0.15) {
            Duration::from_millis(rng.random_range(0..500))
        } else {
            Duration::from_millis(rng.random_range(500..plan.max_run.as_millis().max(501) as u64))
        };
        std::thread::sleep(life.saturating_sub(started.elapsed()));
        if let Some(status) = owner.try_wait().map_err(err("poll jarvis sync"))? {
            return Err(format!(
                "cycle {cycle}: jarvis sync ended by itself ({status}):\n{}",
                log_tail(plan, &format!("run{cycle}"))
            ));
        }
        let point = kill_point(&home, owner.id(), asking.load(Ordering::SeqCst));
        owner.kill().map_err(err("kill -9 jarvis sync"))?;
        owner.wait().map_err(err("reap jarvis sync"))?;
        stop.store(true, Ordering::SeqCst);
        mutator.join().map_err(|_| "the mutator panicked".to_string())??;
        report.asks += asker.join().map_err(|_| "the asker panicked".to_string())??;
        for (k, n) in ops.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            *report.ops.entry(k).or_default() += n;
        }
        *report.points.entry(point.clone()).or_default() += 1;
        report.kills += 1;

        // Nothing changes from here on. What the kill left must read back.
        readable(&home)?;
        // The restart, its start-up refresh and inbox scan, and the doctor.
        let t = Instant::now();
        let mut owner = spawn_sync(plan, &home, &format!("check{cycle}"))?;
        wait_ready(plan, &home, &mut owner, &format!("check{cycle}"))?;
        let ready = t.elapsed();
        report.ready_ms.push(ready.as_secs_f64() * 1000.0);
        let doctor = jarvis(plan, &home)
            .args(["kb", "doctor", "--json"])
            .output()
            .map_err(err("run kb doctor"))?;
        let d: serde_json::Value = serde_json::from_slice(&doctor.stdout).map_err(|e| {
            format!(
                "kb doctor printed no JSON ({e}): {}{}",
                String::from_utf8_lossy(&doctor.stdout),
                String::from_utf8_lossy(&doctor.stderr)
            )
        })?;
        if d["ok"] != true || !d["access"].as_str().unwrap_or("").starts_with("via jarvis sync") {
            return Err(format!("cycle {cycle}: kb doctor after the restart: {d}"));
        }
        stop_owner(&mut owner)?;
        let counts = check_library(&home, &vault, &inbox)?;
        report.leftovers = count_leftovers(&home);
        (report.notes, report.pdfs, report.sessions) = counts;
        say(&format!(
            "cycle {cycle}: killed after {:.1} s during {point}; restart → ready in {:.1} s; {} notes, {} PDFs, {} sessions — all checks passed",
            life.as_secs_f64(),
            ready.as_secs_f64(),
            counts.0,
            counts.1,
            counts.2
        ));
    }
    Ok(report)
}

fn jarvis(plan: &Plan, home: &Path) -> Command {
    let mut c = Command::new(&plan.bin);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", plan.dir.join("user"))
        .env("JARVIS_HOME", home)
        .stdin(Stdio::null());
    c
}

fn spawn_sync(plan: &Plan, home: &Path, name: &str) -> Res<Child> {
    let log = std::fs::File::create(plan.dir.join(format!("{name}.stderr"))).map_err(err("create a log"))?;
    jarvis(plan, home)
        .arg("sync")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(err("start jarvis sync"))
}

fn log_tail(plan: &Plan, name: &str) -> String {
    let text = std::fs::read_to_string(plan.dir.join(format!("{name}.stderr"))).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn status(home: &Path) -> Res<Option<jarvis::jobs::status::StatusDoc>> {
    jarvis::jobs::status::read(&home.join("state/sync_status.json"))
}

/// What the owner was doing, from the status file it keeps.
fn kill_point(home: &Path, pid: u32, asking: bool) -> String {
    let mut what = Vec::new();
    match status(home) {
        Ok(Some(doc)) if doc.owner.as_ref().is_some_and(|o| o.pid == pid) => {
            let since = doc.owner.as_ref().map(|o| o.since);
            let job = |id: &str| doc.jobs.get(id).cloned().unwrap_or_default();
            let vault = job("vault_refresh");
            if vault.running {
                if vault.last_success.is_some_and(|t| Some(t) >= since) {
                    what.push("a scoped vault refresh (watcher)");
                } else {
                    what.push("the start-up vault sweep");
                }
            }
            if job("pdf_scan").running {
                what.push("an inbox scan (PDF worker, paper commit)");
            }
            if what.is_empty() {
                what.push("idle between refreshes (watcher gathering events)");
            }
        }
        _ => what.push("start-up (store open and catch-up, before the schedule)"),
    }
    if asking {
        what.push("a chat turn through the socket");
    }
    what.join(" + ")
}

/// The status file and every session file parse.
fn readable(home: &Path) -> Res<()> {
    status(home)?;
    let store = jarvis::chat::SessionStore::new(home.join("sessions"));
    for e in std::fs::read_dir(home.join("sessions")).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".json") {
            store
                .load(id)
                .map_err(|e| format!("session {id} does not read back after a kill: {e}"))?;
        }
    }
    Ok(())
}

fn count_leftovers(home: &Path) -> usize {
    fn walk(dir: &Path, n: &mut usize) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if name != "rag" && name != "runtime" {
                    walk(&e.path(), n);
                }
            } else if name.starts_with(".jarvis-tmp-") || name.starts_with(".tmp") {
                *n += 1;
            }
        }
    }
    let mut n = 0;
    walk(home, &mut n);
    n
}

/// Wait until the restarted owner's start-up vault refresh and inbox scan
/// both ran to the end after it started.
fn wait_ready(plan: &Plan, home: &Path, owner: &mut Child, name: &str) -> Res<()> {
    let t = Instant::now();
    loop {
        if let Some(s) = owner.try_wait().map_err(err("poll jarvis sync"))? {
            return Err(format!(
                "the restarted jarvis sync ended ({s}):\n{}",
                log_tail(plan, name)
            ));
        }
        if let Ok(Some(doc)) = status(home) {
            if let Some(o) = doc.owner.as_ref().filter(|o| o.pid == owner.id()) {
                let done = |id: &str| {
                    doc.jobs
                        .get(id)
                        .is_some_and(|j| !j.running && j.last_run.is_some_and(|r| r >= o.since))
                };
                if done("vault_refresh") && done("pdf_scan") {
                    for id in ["vault_refresh", "pdf_scan"] {
                        let j = &doc.jobs[id];
                        if j.last_outcome.as_deref() != Some("ok") {
                            return Err(format!(
                                "the start-up {id} after the restart did not succeed: {:?} {:?} {:?}",
                                j.last_outcome, j.last_summary, j.last_error
                            ));
                        }
                    }
                    return Ok(());
                }
            }
        }
        if t.elapsed() > plan.ready_within {
            return Err(format!(
                "the restarted jarvis sync did not finish its start-up refresh within {:?}:\n{}",
                plan.ready_within,
                log_tail(plan, name)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM (a clean stop, as `systemctl stop` does) and wait.
fn stop_owner(owner: &mut Child) -> Res<()> {
    let sent = Command::new("kill")
        .args(["-TERM", &owner.id().to_string()])
        .status()
        .map_err(err("run kill"))?;
    if !sent.success() {
        return Err(format!("kill -TERM jarvis sync: {sent}"));
    }
    let t = Instant::now();
    loop {
        if let Some(s) = owner.try_wait().map_err(err("poll jarvis sync"))? {
            return if s.success() {
                Ok(())
            } else {
                Err(format!("jarvis sync stopped with {s}"))
            };
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = owner.kill();
            return Err("jarvis sync did not stop within 60 s of SIGTERM".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every `.md` under the vault as jarvis walks it (dot entries skipped),
/// vault-relative.
fn notes_on_disk(vault: &Path) -> Vec<(String, PathBuf)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(root, &p, out);
            } else if name.ends_with(".md") {
                let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                out.push((rel, p));
            }
        }
    }
    let mut out = Vec::new();
    walk(vault, vault, &mut out);
    out.sort();
    out
}

/// The library's own checks on the stopped owner's home. Returns (notes,
/// PDFs, sessions).
fn check_library(home: &Path, vault: &Path, inbox: &Path) -> Res<(usize, usize, usize)> {
    let user = home.parent().map(|d| d.join("user")).unwrap_or_default();
    let jh = home.display().to_string();
    let app = jarvis::app::App::open(jarvis::paths::JarvisHome::at(home), move |k| match k {
        "HOME" => Some(user.display().to_string()),
        "JARVIS_HOME" => Some(jh.clone()),
        _ => None,
    })
    .map_err(err("open the home"))?;
    let kb = app.kb().map_err(err("open the knowledge base"))?;
    let a = kb.agreement().map_err(err("agreement"))?;
    if !a.ok() {
        return Err(format!("store and indexes disagree: {a:?}"));
    }
    let files: BTreeMap<String, jarvis::store::FileEntry> =
        kb.store().files().map_err(err("file map"))?.into_iter().collect();
    let on_disk = notes_on_disk(vault);
    for (rel, path) in &on_disk {
        let bytes = std::fs::read(path).map_err(err("read a note"))?;
        let want = jarvis::kb::change::content_hash(&bytes);
        let private = rel.starts_with("private/");
        match files.get(rel) {
            None => return Err(format!("{rel} is on disk but not indexed")),
            Some(e) if e.content_hash.as_deref() != Some(want.as_str()) => {
                return Err(format!("{rel} is indexed at an old version ({:?})", e.content_hash))
            }
            Some(e) if e.visibility.as_deref() != Some(if private { "private" } else { "public" }) => {
                return Err(format!("{rel} is indexed {:?}", e.visibility))
            }
            Some(_) => {}
        }
    }
    let present: std::collections::BTreeSet<&str> = on_disk.iter().map(|(r, _)| r.as_str()).collect();
    for (rel, e) in &files {
        if e.doc_type.as_deref() == Some("note") && !present.contains(rel.as_str()) {
            return Err(format!("{rel} is gone from disk but still indexed"));
        }
    }
    // Chunk by chunk: nothing under private/ is public; the inbox's PDFs
    // are all there.
    let mut tokens = std::collections::BTreeSet::new();
    for rec in kb.store().iter_chunks() {
        let rec = rec.map_err(err("read a chunk"))?;
        if let Some(p) = rec.meta_str("file_path") {
            if p.starts_with("private/") && rec.meta_str("visibility") != Some("private") {
                return Err(format!("a chunk of {p} is {:?}", rec.meta_str("visibility")));
            }
        }
        if rec.meta_str("doc_type") == Some("paper") {
            for w in rec.text.split(|c: char| !c.is_ascii_alphanumeric()) {
                if w.starts_with("inboxpaper") {
                    tokens.insert(w.to_string());
                }
            }
        }
    }
    let mut pdfs = 0;
    for e in std::fs::read_dir(inbox).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".pdf").filter(|_| !name.starts_with('.')) {
            pdfs += 1;
            if !tokens.contains(stem) {
                return Err(format!("{name} is in the inbox but not in the knowledge base"));
            }
        }
    }
    // (Not `app.chat()`: building the agent indexes unindexed exchanges,
    // which would load the embedding model and write.)
    let sessions = jarvis::chat::SessionStore::new(home.join("sessions"))
        .list()
        .map_err(err("sessions"))?
        .len();
    drop(kb);
    drop(app);
    Ok((on_disk.len(), pdfs, sessions))
}

fn note_text(token: &str, version: usize) -> String {
    format!(
        "# Note {token}\n\nVersion {version} of {token}: the river meets the canyon at dawn.\n\n## Details\n\nA ledger of {token} in version {version}, with quartz and saffron.\n"
    )
}

/// A one-page PDF whose text carries `token`.
fn pdf(token: &str) -> Vec<u8> {
    let text = format!(
        "BT /F1 18 Tf 72 720 Td ({token}: a study of crash safety) Tj ET\nBT /F1 11 Tf 72 690 Td (Abstract. This paper {token} shows that a killed service loses nothing.) Tj ET\nBT /F1 11 Tf 72 670 Td (Every note on disk is indexed again within one refresh of the restart.) Tj ET\n"
    );
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{text}endstream", text.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// Change the vault and the inbox until `stop`.
fn mutate(
    vault: &Path,
    inbox: &Path,
    seed: u64,
    stop: &AtomicBool,
    ops: &Mutex<BTreeMap<&'static str, usize>>,
    counter: &AtomicUsize,
) -> Res<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    let count = |k: &'static str| *ops.lock().unwrap_or_else(|p| p.into_inner()).entry(k).or_default() += 1;
    while !stop.load(Ordering::SeqCst) {
        let notes = notes_on_disk(vault);
        let public: Vec<&(String, PathBuf)> = notes.iter().filter(|(r, _)| r.starts_with("notes/")).collect();
        let n = counter.fetch_add(1, Ordering::SeqCst);
        match rng.random_range(0..100) {
            0..=29 => {
                std::fs::write(vault.join(format!("notes/new{n}.md")), note_text(&format!("new{n}"), 0))
                    .map_err(err("write a new note"))?;
                count("new note");
            }
            30..=54 if !notes.is_empty() => {
                // An editor's atomic save: a dotted temp file, then rename.
                let (rel, path) = &notes[rng.random_range(0..notes.len())];
                let tmp = path.with_file_name(format!(".{}.tmp", rel.replace('/', "_")));
                std::fs::write(&tmp, note_text(&format!("saved{n}"), n)).map_err(err("write a temp file"))?;
                std::fs::rename(&tmp, path).map_err(err("rename over a note"))?;
                count("atomic save");
            }
            55..=64 if !notes.is_empty() => {
                let (_, path) = &notes[rng.random_range(0..notes.len())];
                std::fs::write(path, note_text(&format!("overwritten{n}"), n)).map_err(err("overwrite a note"))?;
                count("overwrite in place");
            }
            65..=79 if !public.is_empty() => {
                let (rel, path) = public[rng.random_range(0..public.len())];
                let name = rel.trim_start_matches("notes/");
                std::fs::rename(path, vault.join("private").join(format!("moved{n}-{name}")))
                    .map_err(err("move a note into private/"))?;
                count("move into private/");
            }
            80..=89 if notes.len() > 5 => {
                let (_, path) = &notes[rng.random_range(0..notes.len())];
                std::fs::remove_file(path).map_err(err("delete a note"))?;
                count("delete");
            }
            90..=99 => {
                let tmp = inbox.join(format!(".inboxpaper{n}.pdf.part"));
                std::fs::write(&tmp, pdf(&format!("inboxpaper{n}"))).map_err(err("write a PDF"))?;
                std::fs::rename(&tmp, inbox.join(format!("inboxpaper{n}.pdf"))).map_err(err("drop a PDF"))?;
                count("PDF into the inbox");
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(20..300)));
    }
    Ok(())
}

/// `jarvis ask` now and then until `stop`; returns how many were started.
fn ask_loop(bin: &Path, home: &Path, user: &Path, seed: u64, stop: &AtomicBool, asking: &AtomicBool) -> Res<usize> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut asked = 0;
    let mut session: Option<String> = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(rng.random_range(200..1500)));
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let mut c = Command::new(bin);
        c.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", user)
            .env("JARVIS_HOME", home)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .args(["ask", &format!("question {asked}: what does the ledger say?"), "--json"]);
        if let Some(s) = session.as_ref().filter(|_| rng.random_bool(0.5)) {
            c.args(["--session", s]);
        }
        asking.store(true, Ordering::SeqCst);
        let out = c.output().map_err(err("run jarvis ask"))?;
        asking.store(false, Ordering::SeqCst);
        asked += 1;
        // A turn cut off by the kill fails; that is expected.
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) {
            if let Some(id) = v["session_id"].as_str() {
                session = Some(id.to_string());
            }
        }
    }
    Ok(asked)
}

/// A stand-in Ollama on loopback: every chat request gets a short answer,
/// and a request about a PDF (its text names `inboxpaperN`) gets that
/// paper's metadata as JSON.
struct StandIn {
    url: String,
}

impl StandIn {
    fn start() -> Res<StandIn> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(err("bind the stand-in model"))?;
        let url = format!("http://{}", listener.local_addr().map_err(err("address"))?);
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(s) = s else { break };
                std::thread::spawn(move || {
                    let _ = answer(s);
                });
            }
        });
        Ok(StandIn { url })
    }
}

fn answer(mut s: std::net::TcpStream) -> std::io::Result<()> {
    let mut r = BufReader::new(s.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h)?;
        let h = h.trim_end().to_ascii_lowercase();
        if h.is_empty() {
            break;
        }
        if let Some(v) = h.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    let body = String::from_utf8_lossy(&body);
    if path.starts_with("/api/tags") {
        let b = r#"{"models":[{"name":"standin","model":"standin","size":1}]}"#;
        return write!(
            s,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
            b.len()
        );
    }
    let paper = body
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.starts_with("inboxpaper"))
        .map(str::to_string);
    let content = match paper {
        Some(p) => format!("{{\"title\": \"Crash study {p}\", \"authors\": [\"Ann Crash\"]}}"),
        None => "The ledger says the river meets the canyon at dawn.".to_string(),
    };
    let lines = [
        serde_json::json!({"model":"standin","message":{"role":"assistant","content":content},"done":false}),
        serde_json::json!({"model":"standin","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":10,"eval_count":10}),
    ];
    let payload: String = lines.iter().map(|l| format!("{l}\n")).collect();
    write!(
        s,
        "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{payload}",
        payload.len()
    )?;
    s.flush()
}
