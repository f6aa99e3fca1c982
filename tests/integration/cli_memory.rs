//! Memory at the command line, through the real binary: the idle-session
//! extraction reads a finished `jarvis ask` session once, on the stand-in
//! model, and only proposes; `jarvis memory review` accepts, `export`
//! writes the Markdown file, `forget` is an event `jarvis log` shows and
//! `jarvis undo` reverts, and `import` of the same file changes nothing.

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::Wire;
use crate::support::{Run, Sandbox};

fn jarvis(sb: &Sandbox, args: &[&str], input: Option<&str>) -> Run {
    let mut c = sb.jarvis();
    c.args(args)
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

fn json(r: &Run) -> Value {
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

#[test]
fn idle_extraction_proposes_once_and_the_cli_reviews_exports_forgets_and_undoes() {
    let llm = FakeServer::start(vec![
        Wire::Ollama.text(&["Good luck with the grant."]),
        Wire::Ollama.text(&[
            "```json\n[{\"category\":\"project\",\"key\":\"grant\",\"text\":\"Writes an ERC grant due in May.\"}]\n```",
        ]),
    ]);
    let sb = Sandbox::new();
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n[memory]\nidle_minutes = 30\n[sync]\nwatch = false\n",
        llm.url
    ));
    let r = jarvis(&sb, &["ask", "I am writing an ERC grant, due in May."], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(llm.requests().len(), 1);
    // Not idle yet: nothing is read.
    let r = jarvis(&sb, &["sync", "run-job", "memory_extract"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(llm.requests().len(), 1, "a fresh session is left alone");
    // An hour later (the session's last change moved back).
    for f in std::fs::read_dir(sb.jarvis_home().join("sessions")).unwrap() {
        let p = f.unwrap().path();
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v["updated"] = Value::from("2020-01-01T00:00:00Z");
        std::fs::write(&p, v.to_string()).unwrap();
    }

    let r = jarvis(&sb, &["sync", "run-job", "memory_extract"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(said.contains("read 1 idle session, proposed 1 fact"), "{said}");
    assert_eq!(llm.requests().len(), 2, "one extraction call");
    let prompt = llm.requests()[1].body.to_string();
    assert!(
        prompt.contains("ERC grant") && prompt.contains("JSON array"),
        "{prompt}"
    );
    // Once per session: a second pass asks no model.
    let r = jarvis(&sb, &["sync", "run-job", "memory_extract"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(llm.requests().len(), 2, "the session is not read twice");

    let facts = json(&jarvis(&sb, &["memory", "list", "--json"], None));
    let f = &facts[0];
    assert_eq!(f["status"], "pending", "the extraction only proposes");
    assert_eq!(f["source"]["origin"], "extraction");
    assert!(f["source"]["session"].as_str().is_some_and(|s| !s.is_empty()));
    let id = f["id"].as_u64().unwrap();

    let r = jarvis(&sb, &["memory", "review"], Some("a\n"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("1 accepted, 0 rejected"), "{}", r.stdout);

    let file = sb.dir.path().join("memory.md");
    let r = jarvis(&sb, &["memory", "export", "--output", file.to_str().unwrap()], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(
        md.contains("## project\n\n- **grant**: Writes an ERC grant due in May. <!-- id="),
        "{md}"
    );

    let r = jarvis(&sb, &["memory", "forget", &id.to_string()], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(json(&jarvis(&sb, &["memory", "list", "--json", "--accepted"], None))
        .as_array()
        .unwrap()
        .is_empty());
    let log = json(&jarvis(&sb, &["log", "--json"], None));
    assert_eq!(log[0]["kind"], "memory_forgotten");
    assert_eq!(
        log[0]["title"], "project: grant",
        "the log names the fact, not its text"
    );
    assert!(!log.to_string().contains("ERC grant due"), "{log}");
    let r = jarvis(&sb, &["undo"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let back = json(&jarvis(&sb, &["memory", "list", "--json", "--accepted"], None));
    assert_eq!(back[0]["text"], "Writes an ERC grant due in May.");

    let r = json(&jarvis(
        &sb,
        &["memory", "import", file.to_str().unwrap(), "--json"],
        None,
    ));
    assert_eq!(
        (r["added"].as_u64(), r["unchanged"].as_u64()),
        (Some(0), Some(1)),
        "{r}"
    );
    let audit = jarvis(&sb, &["kb", "audit"], None);
    assert_eq!(audit.code, 0, "{}\n{}", audit.stdout, audit.stderr);
}
