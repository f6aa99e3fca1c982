//! `jarvis kb index-vault` and record filters on `kb search` / `kb list`,
//! through the real binary.

use crate::support::fs::write;
use crate::support::{run, Sandbox};

#[test]
fn index_vault_then_filter_records() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    write(&vault, "jobs/acme.md", "---\ntype: job_application\ncompany: Acme Bio\nstatus: rejected\ntags: [remote, biotech]\nsalary: 100k\n---\nSent the CV on Monday.\n");
    write(&vault, "jobs/globex.md", "---\ntype: job_application\ncompany: Globex\nstatus: drafting\ntags: remote-first\n---\nPolishing the cover letter.\n");
    write(
        &vault,
        "private/diary.md",
        "A private diary entry about the interview.\n",
    );
    write(&vault, "empty.md", "");
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));

    let mut c = sb.jarvis();
    c.args(["kb", "index-vault", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["added"].as_array().unwrap().len(), 3, "{v}");
    assert!(v["skipped"].to_string().contains("empty.md"), "{v}");

    // A no-op refresh says so.
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("0 added, 0 updated, 0 deleted, 3 unchanged"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("skipped empty.md: empty note"), "{}", r.stdout);

    // Records filter by tag exactly (remote ≠ remote-first) and by field.
    let mut c = sb.jarvis();
    c.args(["kb", "search", "cover letter and CV", "--tag", "remote", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let paths: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["file_path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["jobs/acme.md"]);
    let mut c = sb.jarvis();
    c.args([
        "kb",
        "list",
        "--status",
        "rejected",
        "--field",
        "salary=100k",
        "--entity",
        "Acme Bio",
        "--json",
    ]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("jobs/acme.md") && !r.stdout.contains("globex"),
        "{}",
        r.stdout
    );

    // kb schema shows the record keys.
    let mut c = sb.jarvis();
    c.args(["kb", "schema", "status"]);
    let r = run(c);
    assert!(
        r.stdout.contains("rejected") && r.stdout.contains("drafting"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_missing_vault_is_a_clear_error_and_force_says_it_did_not_run() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault", "--vault", "/definitely/not/here", "--force"]);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("/definitely/not/here") && r.stderr.contains("does not exist"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("clean rebuild"), "{}", r.stderr);
}

/// `kb search --group docs` collapses a note's passages into one result
/// named by `file_path`, and `kb eval` scores a hand-checked golden set
/// exactly (table and `--json`), at chunk and document level.
#[test]
fn search_group_docs_and_kb_eval_through_the_binary() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    // One long note about lighthouses (many passages), two short ones.
    let long: String = (0..12)
        .map(|i| format!("## Keeper log {i}\n\nThe lighthouse lamp was trimmed at dusk and the lighthouse keeper wrote entry {i}.\n\n"))
        .collect();
    write(&vault, "coast/Lighthouse keeping.md", &long);
    write(
        &vault,
        "kitchen/Sourdough starter.md",
        "---\naliases: [levain]\n---\nFeed the sourdough starter with flour and water every day.\n",
    );
    write(
        &vault,
        "garden/Tomato blight.md",
        "Tomato leaves with brown spots: copper spray and pruning.\n",
    );
    sb.write_config(&format!(
        "[vault]\npath = \"{}\"\n[rag]\nchunk_size = 200\nchunk_overlap = 0\n",
        vault.display()
    ));
    let mut c = sb.jarvis();
    c.args(["kb", "index-vault"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);

    let mut c = sb.jarvis();
    c.args([
        "kb",
        "search",
        "lighthouse keeper",
        "--group",
        "docs",
        "-n",
        "3",
        "--json",
    ]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["group"], "docs", "{v}");
    let results = v["results"].as_array().unwrap();
    let paths: Vec<&str> = results.iter().map(|h| h["file_path"].as_str().unwrap()).collect();
    assert_eq!(paths[0], "coast/Lighthouse keeping.md", "{v}");
    // One row per document: no path twice, and the long note's other
    // passages are counted, not listed.
    let mut dedup = paths.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), paths.len(), "{v}");
    assert!(results[0]["more_passages"].as_u64().unwrap() >= 5, "{v}");
    assert!(results[0]["section"].as_str().unwrap().starts_with("Keeper log"), "{v}");
    // The human form says "+N more passages".
    let mut c = sb.jarvis();
    c.args(["kb", "search", "lighthouse keeper", "--group", "docs", "-n", "3"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("more passages"), "{}", r.stdout);

    // A golden set: two queries whose answers are certain at rank 1 (an
    // alias, a title) and one whose answer is not in the knowledge base at
    // all (so never found): hit@1 = hit@10 = MRR@10 = 2/3 exactly.
    let golden = sb.dir.path().join("golden.jsonl");
    std::fs::write(
        &golden,
        concat!(
            "{\"query\": \"levain\", \"answer\": \"kitchen/Sourdough starter.md\"}\n",
            "{\"query\": \"Tomato blight\", \"answer\": \"garden/Tomato blight.md\"}\n",
            "{\"query\": \"lighthouse\", \"answer\": \"nowhere/Not indexed.md\"}\n",
        ),
    )
    .unwrap();
    for group in ["chunks", "docs"] {
        let mut c = sb.jarvis();
        c.args(["kb", "eval"]).arg(&golden).args(["--group", group, "--json"]);
        let r = run(c);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["queries"], 3, "{v}");
        assert_eq!(v["group_docs"], group == "docs", "{v}");
        for m in ["hit1", "hit10", "mrr10"] {
            let x = v[m].as_f64().unwrap();
            assert!((x - 2.0 / 3.0).abs() < 1e-9, "{group} {m} = {x}: {v}");
        }
        let per = v["per_query"].as_array().unwrap();
        assert_eq!(per[0]["rank"], 1, "{v}");
        assert_eq!(per[1]["rank"], 1, "{v}");
        assert!(per[2]["rank"].is_null(), "{v}");
        assert!(v["latency_p95_ms"].as_f64().unwrap() >= v["latency_p50_ms"].as_f64().unwrap());
    }
    let mut c = sb.jarvis();
    c.args(["kb", "eval"]).arg(&golden).args(["--group", "docs"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("3 queries, document-level"), "{}", r.stdout);
    assert!(
        r.stdout.contains("hit@1 0.667  hit@10 0.667  MRR@10 0.667"),
        "{}",
        r.stdout
    );

    // A malformed golden file is a clear error naming the line.
    std::fs::write(&golden, "{\"query\": \"levain\"}\n").unwrap();
    let mut c = sb.jarvis();
    c.args(["kb", "eval"]).arg(&golden);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("line 1"), "{}", r.stderr);
}
