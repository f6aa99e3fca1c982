//! `jarvis profiles` and `jarvis commands`, run as a process: the shipped
//! and the user's entries, `--json`, a broken file named on stderr, and a
//! hostile description that must not reach the terminal as control codes
//! (the escape character goes; the harmless rest of its sequence stays).

use crate::support::{run, Sandbox};

fn write(sb: &Sandbox, rel: &str, text: &str) {
    let path = sb.jarvis_home().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn profiles_lists_shipped_and_own_with_json_and_names_a_broken_file() {
    let sb = Sandbox::new();
    write(
        &sb,
        "profiles/tutor.toml",
        "name = \"Tutor\"\ndescription = \"Explains \\u001b[2Jslowly\"\nmodel = \"ollama:qwen3\"\ntools = [\"search_kb\", \"get_document\"]\n",
    );
    write(&sb, "profiles/broken.toml", "name = \"Broken\"\nplaning = true\n");
    let mut c = sb.jarvis();
    c.arg("profiles");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let tutor = r.stdout.lines().find(|l| l.starts_with("tutor")).expect("tutor listed");
    assert!(
        tutor.contains("Tutor — Explains [2Jslowly")
            && tutor.contains("model ollama:qwen3")
            && tutor.contains("2 tools")
            && tutor.contains("yours"),
        "{tutor}"
    );
    assert!(
        !r.stdout.contains('\u{1b}'),
        "a control code reached the terminal: {:?}",
        r.stdout
    );
    let research = r
        .stdout
        .lines()
        .find(|l| l.starts_with("research"))
        .expect("shipped research listed");
    assert!(research.contains("shipped"), "{research}");
    assert!(!r.stdout.contains("Broken"), "{}", r.stdout);
    assert!(
        r.stderr.contains("broken.toml") && r.stderr.contains("planing"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("jarvis ask --profile"), "{}", r.stderr);

    let mut c = sb.jarvis();
    c.args(["profiles", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let ids: Vec<&str> = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"tutor") && ids.contains(&"research"), "{ids:?}");
    let tutor = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "tutor")
        .unwrap();
    assert_eq!(tutor["tools"], serde_json::json!(["search_kb", "get_document"]));
    assert_eq!(tutor["builtin"], false);
    assert!(v["problems"][0].as_str().unwrap().contains("broken.toml"), "{v}");
}

#[test]
fn commands_lists_the_builtins_and_the_users_own_with_their_hints() {
    let sb = Sandbox::new();
    write(
        &sb,
        "commands/digest-me.md",
        "---\ndescription: What changed this week\nargument-hint: topic\nmodel: ollama:qwen3\n---\nTell me what changed about $1.\n",
    );
    let mut c = sb.jarvis();
    c.arg("commands");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("  /new  Start a new chat"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("  /digest-me topic  What changed this week  [model ollama:qwen3]"),
        "{}",
        r.stdout
    );

    let mut c = sb.jarvis();
    c.args(["commands", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert!(
        v["builtin"].as_array().unwrap().iter().any(|b| b["name"] == "research"),
        "{v}"
    );
    let mine = v["custom"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "digest-me")
        .expect("listed");
    assert_eq!(mine["hint"], "topic");
    assert_eq!(mine["model"], "ollama:qwen3");
}
