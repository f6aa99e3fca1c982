//! `jarvis kb index-vault` and record filters on `kb search` / `kb list`,
//! through the real binary.

use crate::support::{run, Sandbox};

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

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
