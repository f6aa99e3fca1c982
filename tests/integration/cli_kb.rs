//! `jarvis kb …` against the real binary. Documents are seeded through the
//! library (ways to add them from the CLI arrive with later issues), with
//! the in-process `Kb` dropped before the binary runs: one owner at a time.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use jarvis::kb::ops::Paper;
use jarvis::kb::Kb;
use jarvis::store::Metadata;
use serde_json::Value;

use crate::support::{run, Run, Sandbox};

const INVARIANT: &str = "Database entry only — files on disk are never touched by jarvis: ";
const ATTENTION: &str = "https://arxiv.org/abs/1706.03762";

fn open(sb: &Sandbox) -> Kb {
    crate::support::runtime::open_kb(sb)
}

fn meta(pairs: &[(&str, &str)]) -> Metadata {
    pairs.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect()
}

fn note(kb: &Kb, path: &str, visibility: &str, text: &str, caller: &[(&str, &str)]) {
    let own = meta(&[
        ("doc_type", "note"),
        ("visibility", visibility),
        ("source", "local"),
        ("file_path", path),
    ]);
    kb.add_texts(text, &meta(caller), &own, "", None, &jarvis::kb::Actor::Cli)
        .expect("add note");
}

/// Two papers, two public notes (one a record, one with a typo'd key) and
/// one private note that is the best possible match for "quantum".
fn seed(sb: &Sandbox) {
    let kb = open(sb);
    let paper = |title: &str, authors: &str, source: &str, summary: &str| {
        let p = Paper {
            title: title.into(),
            authors: authors.into(),
            source: source.into(),
            ..Paper::default()
        };
        kb.add_paper(&p, summary, &jarvis::kb::Actor::Cli).expect("add paper");
    };
    paper(
        "Attention Is All You Need",
        "Vaswani, Shazeer",
        ATTENTION,
        "# Introduction\n\nThe Transformer is a sequence transduction model based entirely on attention, dispensing with recurrence and convolutions.",
    );
    paper(
        "Highly accurate protein structure prediction with AlphaFold",
        "Jumper",
        "https://doi.org/10.1038/s41586-021-03819-2",
        "AlphaFold predicts the three-dimensional structure of proteins from their amino acid sequence.",
    );
    note(
        &kb,
        "jobs/acme.md",
        "public",
        "Applied to Acme Bio for a machine learning engineer role. The interview loop covered system design.",
        &[
            ("title", "Acme Bio application"),
            ("category", "job_application"),
            ("status", "rejected"),
            ("entity", "Acme Bio"),
            ("tags", "|jobs|remote|"),
            ("x_company", "Acme"),
        ],
    );
    note(
        &kb,
        "jobs/globex.md",
        "public",
        "Applied to Globex for a research engineer role working on attention models.",
        &[
            ("title", "Globex application"),
            ("category", "job_application"),
            ("stauts", "rejected"),
            ("tags", "|jobs|remote-first|"),
        ],
    );
    note(
        &kb,
        "private/diary.md",
        "private",
        "Quantum entanglement quantum computing quantum diary: my private thoughts on quantum mechanics.",
        &[("title", "Private diary")],
    );
}

fn kb_json(sb: &Sandbox, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let r = sb.kb(&all);
    assert_eq!(r.code, 0, "kb {args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("kb {args:?}: {e}\n{}", r.stdout))
}

fn with_stdin(sb: &Sandbox, args: &[&str], input: Option<&str>) -> Run {
    let mut c = sb.jarvis();
    c.arg("kb")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    if let Some(text) = input {
        stdin.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn results(v: &Value) -> Vec<Value> {
    v["results"].as_array().expect("results").clone()
}

fn field<'a>(hits: &'a [Value], key: &str) -> Vec<&'a str> {
    hits.iter().map(|h| h[key].as_str().unwrap_or("")).collect()
}

#[test]
fn search_list_stats_and_schema() {
    let sb = Sandbox::new();
    seed(&sb);

    // Text output: rank, title, section, source, score, snippet.
    let r = sb.kb(&["search", "transformer attention recurrence"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(" 1. Attention Is All You Need › Introduction\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("    {ATTENTION} · paper · score ")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("The Transformer is a sequence"), "{}", r.stdout);
    let full = sb.kb(&["search", "transformer attention", "-n", "1", "--full"]);
    assert!(
        full.stdout
            .contains("│ The Transformer is a sequence transduction model"),
        "{}",
        full.stdout
    );

    // JSON shape.
    let v = kb_json(&sb, &["search", "transformer attention recurrence", "-n", "3"]);
    assert_eq!(v["query"], "transformer attention recurrence");
    let hits = results(&v);
    assert!(!hits.is_empty() && hits.len() <= 3);
    let top = &hits[0];
    assert_eq!(top["rank"], 1);
    assert_eq!(top["title"], "Attention Is All You Need");
    assert_eq!(top["source"], ATTENTION);
    assert_eq!(top["doc_type"], "paper");
    assert!(top["score"].as_f64().is_some() && top["chunk_id"].as_u64().is_some());
    for k in ["section", "snippet", "text", "visibility"] {
        assert!(top[k].is_string(), "{k}: {top}");
    }

    // Filters narrow.
    let all = results(&kb_json(&sb, &["search", "applied engineer role", "-n", "10"]));
    assert!(field(&all, "doc_type").contains(&"paper"), "{all:?}");
    let papers = results(&kb_json(&sb, &["search", "applied engineer role", "--kind", "papers"]));
    assert!(!papers.is_empty() && field(&papers, "doc_type").iter().all(|t| *t == "paper"));
    for args in [
        &["--field", "company=Acme"][..],
        &["--field", "x_company=Acme"],
        &["--status", "rejected"],
        &["--entity", "Acme Bio"],
        &["--tag", "remote"],
        &["--category", "job_application", "--tag", "remote"],
    ] {
        let mut a = vec!["search", "applied engineer role", "-n", "10"];
        a.extend_from_slice(args);
        let hits = results(&kb_json(&sb, &a));
        assert_eq!(field(&hits, "file_path"), ["jobs/acme.md"], "{args:?}");
    }
    let notes = results(&kb_json(
        &sb,
        &["search", "applied engineer role", "--kind", "notes", "-n", "10"],
    ));
    assert_eq!(notes.len(), 3, "{notes:?}");
    let none = results(&kb_json(&sb, &["search", "applied", "--kind", "chats"]));
    assert!(none.is_empty());

    // Privacy: the private note is the best match, yet a public search never sees it.
    for extra in [&[][..], &["--dense-only"], &["--no-rerank"]] {
        let mut a = vec!["search", "quantum entanglement diary", "-n", "10"];
        a.extend_from_slice(extra);
        let unrestricted = results(&kb_json(&sb, &a));
        assert_eq!(unrestricted[0]["file_path"], "private/diary.md", "{extra:?}");
        a.extend_from_slice(&["--visibility", "public"]);
        let public = results(&kb_json(&sb, &a));
        assert!(!public.is_empty());
        assert!(
            field(&public, "visibility").iter().all(|v| *v == "public"),
            "{public:?}"
        );
        assert!(!field(&public, "file_path").contains(&"private/diary.md"));
    }
    let private = results(&kb_json(
        &sb,
        &["search", "attention", "--visibility", "private", "-n", "10"],
    ));
    assert_eq!(field(&private, "file_path"), ["private/diary.md"]);

    // Bad input is a clear usage error.
    let r = sb.kb(&["search", "x", "--field", "novalue"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("expected KEY=VALUE"), "{}", r.stderr);

    // list
    let r = sb.kb(&["list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Attention Is All You Need"), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("key: {ATTENTION}")), "{}", r.stdout);
    assert!(r.stdout.contains("key: jobs/acme.md"), "{}", r.stdout);
    let docs = kb_json(&sb, &["list"]);
    assert_eq!(docs.as_array().unwrap().len(), 5);
    let notes = kb_json(&sb, &["list", "--kind", "notes", "--status", "rejected"]);
    let keys: Vec<_> = notes.as_array().unwrap().iter().map(|d| d["key"].clone()).collect();
    assert_eq!(keys, ["jobs/acme.md"]);
    assert_eq!(kb_json(&sb, &["list", "-n", "2"]).as_array().unwrap().len(), 2);

    // stats
    let s = kb_json(&sb, &["stats"]);
    assert_eq!(s["documents"], 5);
    assert!(s["chunks"].as_u64().unwrap() >= 5);
    assert_eq!(s["by_doc_type"]["paper"]["documents"], 2);
    assert_eq!(s["by_doc_type"]["note"]["documents"], 3);
    assert_eq!(s["categories"]["job_application"], 2);
    assert_eq!(s["statuses"]["rejected"], 1);
    assert_eq!(s["embed_model"]["configured"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(s["embed_model"]["mismatch"], false);
    assert!(s["disk_bytes"]["bm25_bytes"].as_u64().unwrap() > 0);
    assert_eq!(s["legacy_private_papers"], serde_json::json!([]));
    let r = sb.kb(&["stats"]);
    assert!(r.stdout.contains("documents  5\n"), "{}", r.stdout);
    assert!(r.stdout.contains("job_application"), "{}", r.stdout);
    assert!(!r.stderr.contains("private paper"), "{}", r.stderr);

    // schema: the typo is visible, values are listed, an unknown key says so.
    let keys = kb_json(&sb, &["schema"]);
    assert_eq!(keys["stauts"], 1);
    assert!(keys["status"].as_u64().is_some() && keys["doc_type"].as_u64().is_some());
    let r = sb.kb(&["schema"]);
    assert!(r.stdout.lines().any(|l| l.starts_with("stauts ")), "{}", r.stdout);
    let v = kb_json(&sb, &["schema", "doc_type"]);
    assert_eq!(v["key"], "doc_type");
    assert!(v["values"]["paper"].as_u64().unwrap() >= 2);
    let tags = kb_json(&sb, &["schema", "tags"]);
    assert_eq!(tags["values"]["remote"], 1);
    assert_eq!(tags["values"]["remote-first"], 1);
    let r = sb.kb(&["schema", "statu"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("did you mean `status`"), "{}", r.stderr);
}

#[test]
fn legacy_private_papers_are_warned_about() {
    let sb = Sandbox::new();
    {
        let kb = open(&sb);
        let own = meta(&[
            ("doc_type", "paper"),
            ("visibility", "private"),
            ("source", "https://old"),
        ]);
        kb.add_texts(
            "An old private paper.",
            &meta(&[("title", "Old")]),
            &own,
            "",
            None,
            &jarvis::kb::Actor::Cli,
        )
        .unwrap();
    }
    let r = sb.kb(&["stats"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("1 private paper") && r.stderr.contains("https://old"),
        "{}",
        r.stderr
    );
    let d = sb.kb(&["doctor"]);
    assert!(d.stderr.contains("1 private paper"), "{}", d.stderr);
}

#[test]
fn set_meta_and_remove() {
    let sb = Sandbox::new();
    seed(&sb);
    let before = kb_json(&sb, &["stats"])["chunks"].as_u64().unwrap();

    // set-meta: metadata only, visible in list and search.
    let r = sb.kb(&[
        "set-meta",
        ATTENTION,
        "--title",
        "Attention (corrected)",
        "--doi",
        "10.5555/3295222",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("updated title, doi of"), "{}", r.stderr);
    let docs = kb_json(&sb, &["list", "--kind", "papers"]);
    let doc = docs
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["key"] == ATTENTION)
        .unwrap()
        .clone();
    assert_eq!(doc["title"], "Attention (corrected)");
    assert_eq!(doc["meta"]["doi"], "10.5555/3295222");
    assert_eq!(doc["meta"]["authors"], "Vaswani, Shazeer");
    let r = sb.kb(&["set-meta", ATTENTION]);
    assert_eq!(r.code, 2, "at least one field is required");
    let r = sb.kb(&["set-meta", "https://nowhere", "--title", "x"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("jarvis kb list"), "{}", r.stderr);
    // Notes share source "local": set-meta must never retitle them all.
    for key in ["local", "jobs/acme.md"] {
        let r = sb.kb(&["set-meta", key, "--title", "x"]);
        assert_eq!(r.code, 1, "{key}");
    }
    let titles: Vec<Value> = kb_json(&sb, &["list", "--kind", "notes"])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["title"].clone())
        .collect();
    assert!(!titles.contains(&"x".into()), "{titles:?}");

    // remove, answering "n": the preview and the invariant, nothing removed.
    let r = with_stdin(&sb, &["remove", ATTENTION], Some("n\n"));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.contains("Title:      Attention (corrected)"), "{}", r.stdout);
    assert!(r.stdout.contains("Type:       paper (public)"), "{}", r.stdout);
    assert!(r.stdout.contains("Local file: no local file"), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("{INVARIANT}{ATTENTION}\n")), "{}", r.stdout);
    assert!(
        r.stderr.contains("Remove? [y/N]") && r.stderr.contains("nothing was removed"),
        "{}",
        r.stderr
    );
    // End of input cancels too.
    let r = with_stdin(&sb, &["remove", ATTENTION], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(kb_json(&sb, &["stats"])["chunks"].as_u64().unwrap(), before);

    // "yes" on stdin removes; a note goes by its file path, named in full.
    let vault = sb.home().join("vault");
    let r = with_stdin(&sb, &["remove", "jobs/acme.md"], Some("yes\n"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let full = vault.join("jobs/acme.md").display().to_string();
    assert!(r.stdout.contains(&format!("Local file: {full}\n")), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("{INVARIANT}{full}\n")), "{}", r.stdout);
    assert!(r.stderr.contains("removed 1 chunk of jobs/acme.md"), "{}", r.stderr);

    // --yes skips the prompt.
    let r = sb.kb(&["remove", ATTENTION, "--yes"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("Remove?"), "{}", r.stderr);
    assert!(r.stdout.contains(INVARIANT), "{}", r.stdout);
    let keys: Vec<Value> = kb_json(&sb, &["list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["key"].clone())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(!keys.contains(&ATTENTION.into()) && !keys.contains(&"jobs/acme.md".into()));
    let hits = results(&kb_json(&sb, &["search", "transformer attention recurrence"]));
    assert!(!field(&hits, "source").contains(&ATTENTION));

    // Unknown or ambiguous keys are clear errors; nothing goes.
    let r = sb.kb(&["remove", "https://nowhere", "--yes"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("jarvis kb list"), "{}", r.stderr);
    let r = sb.kb(&["remove", "local", "--yes"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("shared by 2 documents"), "{}", r.stderr);
    assert_eq!(kb_json(&sb, &["list"]).as_array().unwrap().len(), 3);
}

#[test]
fn reindex_and_the_embedding_model_guard() {
    let sb = Sandbox::new();
    seed(&sb);
    let r = sb.kb(&["reindex"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("re-embedded") && r.stdout.contains("all-MiniLM-L6-v2"),
        "{}",
        r.stdout
    );
    // Off a terminal the bar is plain progress lines: no carriage
    // returns or escape codes, and it ends at the whole count.
    assert!(
        !r.stderr.contains('\r') && !r.stderr.contains('\x1b'),
        "a terminal bar off a terminal: {:?}",
        r.stderr
    );
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("re-embedding: ") && l.contains("(100%)")),
        "{}",
        r.stderr
    );
    let top =
        |sb: &Sandbox| results(&kb_json(sb, &["search", "transformer attention recurrence"]))[0]["source"].clone();
    assert_eq!(top(&sb), ATTENTION);

    // The index now claims another model: every search refuses, naming the fix.
    open(&sb).store().set_meta_string("embed_model", "other/model").unwrap();
    let r = sb.kb(&["search", "transformer"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("other/model") && r.stderr.contains("jarvis kb reindex"),
        "{}",
        r.stderr
    );
    let s = sb.kb(&["stats"]);
    assert!(s.stdout.contains("run `jarvis kb reindex`"), "{}", s.stdout);
    let d = sb.kb(&["doctor"]);
    assert_eq!(d.code, 1);
    assert!(d.stderr.contains("jarvis kb reindex"), "{}", d.stderr);

    let v = kb_json(&sb, &["reindex"]);
    assert_eq!(v["model"], "sentence-transformers/all-MiniLM-L6-v2");
    assert!(v["chunks"].as_u64().unwrap() >= 5);
    assert_eq!(top(&sb), ATTENTION);
    assert_eq!(sb.kb(&["doctor"]).code, 0);
}

#[test]
fn doctor_and_the_one_owner_lock() {
    let sb = Sandbox::new();
    seed(&sb);
    let r = sb.kb(&["doctor"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("access     direct"), "{}", r.stdout);
    assert!(
        r.stdout.contains("probe      ok — a search in a child process"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("store      ok — 5 documents"), "{}", r.stdout);
    assert!(r.stdout.contains("agreement  ok"), "{}", r.stdout);
    let v = kb_json(&sb, &["doctor"]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["access"], "direct");
    assert_eq!(v["probe"]["ending"]["kind"], "exited");
    assert!(v["probe"]["report"]["hits"].as_u64().unwrap() > 0);
    // A small library: the exact int8 copy holds every vector, and no arroy
    // trees exist (they only start above rag.exact_scan_max).
    assert_eq!(v["agreement"]["store_chunks"], v["agreement"]["exact_items"]);
    assert_eq!(v["agreement"]["stale_in_exact"], 0);
    assert_eq!(v["agreement"]["trees"], false);
    assert_eq!(v["agreement"]["vector_items"], 0);

    // While this test process owns the knowledge base, every other process
    // is told who holds it.
    let held = open(&sb);
    let pid = format!("pid {}", std::process::id());
    // A one-shot holder is waited for (rag.lock_wait_seconds), then named.
    let kb = |sb: &Sandbox, args: &[&str]| {
        let mut c = sb.jarvis();
        c.env("JARVIS_LOCK_WAIT_SECONDS", "1").arg("kb").args(args);
        run(c)
    };
    let d = kb(&sb, &["doctor"]);
    assert_eq!(d.code, 1);
    assert!(
        d.stderr.contains(&pid) && d.stderr.contains("in use by"),
        "{}",
        d.stderr
    );
    assert_eq!(d.stderr.matches("in use by").count(), 1, "reported once: {}", d.stderr);
    for args in [
        &["search", "attention"][..],
        &["list"],
        &["remove", ATTENTION, "--yes"],
        &["reindex"],
    ] {
        let r = kb(&sb, args);
        assert_eq!(r.code, 1, "{args:?}");
        assert!(
            r.stderr.starts_with("error: cannot open the knowledge base at "),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains(&pid), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    drop(held);
    assert_eq!(kb(&sb, &["list", "--json"]).code, 0);
}

#[test]
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs failpoints: cargo xtask test (or cargo test --features failpoints)"
)]
fn doctor_diagnoses_a_crashing_probe() {
    let sb = Sandbox::new();
    seed(&sb);
    // The failpoint aborts the probe child the way a native crash would;
    // doctor itself must survive and report it.
    let mut c = sb.jarvis();
    c.env("JARVIS_FAILPOINT", "kb_probe").args(["kb", "doctor"]);
    let r = run(c);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("killed by signal 6 (SIGABRT"), "{}", r.stdout);
    assert!(
        r.stderr.contains("crashed") && r.stderr.contains("jarvis kb reindex"),
        "{}",
        r.stderr
    );
}

/// Failpoints (abort, hang, exhaust memory on request) exist only in test
/// builds: a binary built without the `failpoints` feature does not even
/// read `JARVIS_FAILPOINT` (`cargo xtask dist-check` checks the release
/// binary the same way).
#[cfg(not(feature = "failpoints"))]
#[test]
fn a_build_without_the_feature_carries_no_failpoints() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_jarvis")).unwrap();
    assert!(!bin.windows(16).any(|w| w == b"JARVIS_FAILPOINT"));
}

/// The session profile of every embedding-model load this process tree
/// logged after byte `from` of the log, in order (`profile=…` of the
/// "embedding model loaded" line each load writes at info level).
fn model_loads(log: &Path, from: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.get(from..)
        .unwrap_or("")
        .lines()
        .filter(|l| l.contains("embedding model loaded"))
        .map(|l| {
            l.split("profile=")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or("(none)")
                .to_string()
        })
        .collect()
}

/// A one-shot `kb search` (and doctor's probe child, which runs one search)
/// loads the model unoptimised — quick to load, slower per vector — and
/// every command that embeds in bulk or many queries keeps the optimised
/// throughput session. Read from the log line each model load writes, so
/// nothing here is timed; the owner side is in `owner.rs`.
#[test]
fn one_shot_search_loads_the_model_for_a_quick_start_bulk_commands_do_not() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    std::fs::create_dir_all(vault.join("animals")).unwrap();
    std::fs::write(
        vault.join("animals/otters.md"),
        "# Otters\n\nRiver otters eat fish and crayfish.\n",
    )
    .unwrap();
    std::fs::write(vault.join("tomatoes.md"), "Tomatoes need sun, water and patience.\n").unwrap();
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));
    let golden = sb.dir.path().join("golden.jsonl");
    std::fs::write(&golden, "{\"query\": \"otters\", \"answer\": \"animals/otters.md\"}\n").unwrap();
    let log = sb.jarvis_home().join("logs/jarvis.log");
    let step = |args: &[&str], expected: &[&str]| -> String {
        let from = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);
        let r = sb.kb(args);
        assert_eq!(r.code, 0, "kb {args:?}: {}", r.stderr);
        assert_eq!(model_loads(&log, from), expected, "model loads of kb {args:?}");
        r.stdout
    };
    step(&["index-vault"], &["throughput"]);
    let out = step(&["search", "what do otters eat", "--json"], &["quick_start"]);
    assert!(out.contains("animals/otters.md"), "{out}");
    let doctor = step(&["doctor", "--json"], &["quick_start"]);
    let doctor: Value = serde_json::from_str(&doctor).expect("doctor --json");
    assert_eq!(doctor["ok"], true, "{doctor}");
    step(&["eval", golden.to_str().unwrap()], &["throughput"]);
    std::fs::write(
        vault.join("tomatoes.md"),
        "Tomatoes need sun; basil likes the same bed.\n",
    )
    .unwrap();
    step(&["index-vault"], &["throughput"]);
    step(&["reindex"], &["throughput"]);
    // Commands that embed nothing load no model at all.
    step(&["stats"], &[]);
    step(&["list"], &[]);
}

/// `jarvis kb remove`, `jarvis log`, `jarvis undo`, `jarvis kb audit`: the
/// removed paper comes back, its chunks and vectors as they were, without a
/// single request to the model or paper services (stand-ins for all of them
/// see nothing); the undo is an event of its own, and a second undo of the
/// same removal is refused with the reason.
#[test]
fn remove_log_undo_and_audit() {
    use crate::support::fakes::stand::{Answer, Stand};
    let sb = Sandbox::new();
    let stand = Stand::start(|_, _| Answer::status(500, "a stand-in: no request expected"));
    let u = &stand.url;
    sb.write_config(&format!(
        "[chat]\nollama_host = \"{u}\"\n[papers]\narxiv_api_url = \"{u}\"\narxiv_pdf_url = \"{u}\"\ncrossref_url = \"{u}\"\nunpaywall_url = \"{u}\"\n"
    ));
    seed(&sb);
    let ids = |sb: &Sandbox| {
        let kb = open(sb);
        let mut ids = kb.store().doc_ids(ATTENTION).expect("ids");
        ids.sort_unstable();
        ids.iter()
            .map(|&i| (i, kb.store().vector(i).expect("vector")))
            .collect::<Vec<_>>()
    };
    let before = ids(&sb);
    assert!(!before.is_empty());
    let r = sb.kb(&["remove", ATTENTION, "--yes"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    let mut c = sb.jarvis();
    c.args(["log", "--json", "--actor", "user"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: Value = serde_json::from_str(&r.stdout).expect("log json");
    let removal = &rows[0];
    assert_eq!(removal["kind"], "removed", "{rows}");
    assert_eq!(removal["key"], ATTENTION);
    assert_eq!(removal["actor"]["by"], "cli");
    assert_eq!(removal["kept"]["state"], "copies");
    assert_eq!(removal["undoable"], true);
    let id = removal["id"].as_u64().expect("id");

    let mut c = sb.jarvis();
    c.arg("undo");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with(&format!("undid event {id} (removed \"Attention Is All You Need\"")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("nothing re-embedded"), "{}", r.stdout);
    assert_eq!(ids(&sb), before, "the same chunks with the same vectors");
    let hits = results(&kb_json(&sb, &["search", "transformer attention recurrence"]));
    assert_eq!(field(&hits, "source")[0], ATTENTION);

    let mut c = sb.jarvis();
    c.args(["undo", &id.to_string()]);
    let r = run(c);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(&format!("cannot undo event {id}")) && r.stderr.contains("added again"),
        "{}",
        r.stderr
    );

    let mut c = sb.jarvis();
    c.args(["log", "--kind", "undo"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains(&format!("undo of #{id}: added \"Attention Is All You Need\"")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("by you (command line)"), "{}", r.stdout);

    let audit = kb_json(&sb, &["audit"]);
    assert_eq!(audit["missing"], serde_json::json!([]), "{audit}");
    assert_eq!(audit["differing"], serde_json::json!([]), "{audit}");
    let stats = kb_json(&sb, &["stats"]);
    assert!(stats["history"]["events"].as_u64().unwrap() >= 7, "{stats}");
    assert_eq!(stats["history"]["kept_events"], 1, "the removal's copies are kept");
    assert!(
        stand.seen().is_empty(),
        "no model or network request: {:?}",
        stand.seen().len()
    );
}
