//! `jarvis --help`, `config show|path|set`, `completions`, run as a process.

use std::os::unix::fs::PermissionsExt;

use crate::support::{run, Sandbox};

#[test]
fn help_says_what_jarvis_is_and_lists_only_working_commands() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.arg("--help");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("knowledge") && r.stdout.contains("private"),
        "{}",
        r.stdout
    );
    for cmd in ["config", "runtime", "completions"] {
        assert!(r.stdout.contains(cmd), "{cmd} missing:\n{}", r.stdout);
    }
}

#[test]
fn config_show_json_reports_value_and_origin() {
    let sb = Sandbox::new();
    sb.write_config("[rag]\nchunk_size = 2048\n[digest]\nhour = 7\n");
    let mut c = sb.jarvis();
    c.args(["config", "show", "--json"])
        .env("CHAT_PROVIDER", "anthropic")
        .env("ANTHROPIC_API_KEY", "sk-ant-super-secret-value");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let s = &v["sections"];
    assert_eq!(s["rag"]["chunk_size"]["value"], 2048);
    assert_eq!(s["rag"]["chunk_size"]["origin"], "file");
    assert_eq!(s["rag"]["chunk_overlap"]["origin"], "default");
    assert_eq!(s["digest"]["hour"]["value"], 7);
    assert_eq!(s["chat"]["provider"]["value"], "anthropic");
    assert_eq!(s["chat"]["provider"]["origin"], "env");
    assert_eq!(s["chat"]["provider"]["origin_detail"], "CHAT_PROVIDER");
    assert_eq!(s["chat"]["anthropic_api_key"]["value"]["set"], true);
    assert_eq!(s["openrouter"]["api_key"]["value"]["set"], false);
    assert!(!r.stdout.contains("sk-ant-super-secret-value"));
    let jh = sb.jarvis_home();
    assert_eq!(s["rag"]["dir"]["value"], jh.join("rag").to_str().unwrap());

    // The human format groups by section and never prints the key either.
    let mut c = sb.jarvis();
    c.args(["config", "show"])
        .env("ANTHROPIC_API_KEY", "sk-ant-super-secret-value");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("[rag]") && r.stdout.contains("chunk_size"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("anthropic_api_key      = (set)  # env ANTHROPIC_API_KEY"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("sk-ant-super-secret-value"));
}

#[test]
fn config_path_and_set_round_trip_keeping_comments() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.args(["config", "path"]);
    let r = run(c);
    assert_eq!(r.stdout.trim(), sb.config_file().to_str().unwrap());

    sb.write_config("# mine\n[digest]\nhour = 5 # early\n");
    let mut c = sb.jarvis();
    c.args(["config", "set", "digest.hour", "6"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(sb.config_file()).unwrap();
    assert_eq!(text, "# mine\n[digest]\nhour = 6 # early\n");
    let mode = std::fs::metadata(sb.config_file()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn bad_input_fails_with_a_precise_message_and_changes_nothing() {
    let sb = Sandbox::new();
    sb.write_config("[digest]\nhour = 5\n");
    let mut c = sb.jarvis();
    c.args(["config", "set", "digest.hour", "25"]);
    let r = run(c);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("`digest.hour`") && r.stderr.contains("25") && r.stderr.contains("0 to 23"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.config_file()).unwrap(),
        "[digest]\nhour = 5\n"
    );

    sb.write_config("[digest]\nhour = 25\n");
    let mut c = sb.jarvis();
    c.args(["config", "show"]);
    let r = run(c);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("invalid value for `digest.hour`"), "{}", r.stderr);

    sb.write_config("[rag]\nhybrid = true\nchunk_size = = 3\n");
    let mut c = sb.jarvis();
    c.args(["config", "show"]);
    let r = run(c);
    assert_eq!(r.code, 1);
    let want = format!("{}:3:", sb.config_file().display());
    assert!(r.stderr.contains(&want), "{}", r.stderr);
}

#[test]
fn warnings_go_to_stderr_and_the_log_file() {
    let sb = Sandbox::new();
    sb.write_config("[rag]\nhybird = false\n");
    std::fs::set_permissions(sb.config_file(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut c = sb.jarvis();
    c.args(["config", "show", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("WARNING:") && r.stderr.contains("readable by other users"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("did you mean `hybrid`?"), "{}", r.stderr);
    // stdout stays clean JSON for scripts.
    serde_json::from_str::<serde_json::Value>(&r.stdout).expect("json");
    let log = std::fs::read_to_string(sb.jarvis_home().join("logs/jarvis.log")).unwrap();
    assert!(log.contains("did you mean `hybrid`?"), "{log}");
    // Never chmodded behind the user's back.
    let mode = std::fs::metadata(sb.config_file()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn completions_for_each_shell() {
    let sb = Sandbox::new();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef jarvis"),
        ("fish", "complete -c jarvis"),
    ] {
        let mut c = sb.jarvis();
        c.args(["completions", shell]);
        let r = run(c);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert!(
            r.stdout.contains(marker),
            "{shell}: {}",
            &r.stdout[..r.stdout.len().min(300)]
        );
        assert!(r.stdout.contains("runtime"), "{shell}");
    }
}

#[test]
fn models_lists_the_catalogue_marked_local_or_cloud_without_network() {
    let sb = Sandbox::new();
    sb.write_config(
        "[chat]\nprovider = \"ollama:qwen3:8b\"\n[models]\nollama = [\"qwen3:8b\"]\nanthropic = [\"claude-x\"]\n\
         [servers.lms]\nbase_url = \"http://127.0.0.1:1234/v1\"\nmodel = \"local-m\"\nlocal = true\n",
    );
    let mut c = sb.jarvis();
    c.args(["models", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let find = |spec: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|e| e["spec"] == spec)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(find("ollama:qwen3:8b")["local"], true);
    assert_eq!(find("ollama:qwen3:8b")["current"], true);
    assert_eq!(find("anthropic:claude-x")["local"], false);
    assert_eq!(find("anthropic:claude-x")["credentials"], false);
    assert_eq!(find("lms:local-m")["local"], true);
}

#[test]
fn models_lists_every_server_and_the_spec_in_effect_and_a_remote_ollama_as_cloud() {
    let sb = Sandbox::new();
    sb.write_config(
        "[chat]\nprovider = \"llamacpp:gemma\"\nollama_host = \"http://gpu.lan:11434\"\n\
         [servers.llamacpp]\nbase_url = \"http://127.0.0.1:8080/v1\"\nlocal = true\n",
    );
    let mut c = sb.jarvis();
    c.arg("models");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    let line = |spec: &str| {
        lines
            .iter()
            .find(|l| l[2..].split_whitespace().next() == Some(spec))
            .copied()
            .unwrap_or_else(|| panic!("no {spec} in:\n{}", r.stdout))
    };
    assert!(
        line("llamacpp:gemma").starts_with("* "),
        "the spec in effect is marked: {}",
        r.stdout
    );
    assert!(line("llamacpp:gemma").contains("local (127.0.0.1)"));
    assert!(line("llamacpp").contains("(no default model)"), "{}", r.stdout);
    assert!(
        line("ollama:qwen3-vl:30b").contains("cloud (gpu.lan)"),
        "a remote Ollama is not local: {}",
        r.stdout
    );
    assert_eq!(lines.iter().filter(|l| l.starts_with('*')).count(), 1, "{}", r.stdout);

    // Declared local, the same remote host counts as local.
    sb.write_config("[chat]\nprovider = \"ollama\"\nollama_host = \"http://gpu.lan:11434\"\nollama_local = true\n");
    let mut c = sb.jarvis();
    c.args(["models", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["spec"], "ollama:qwen3-vl:30b");
    assert_eq!(v[0]["local"], true);
    assert_eq!(v[0]["current"], true);
    assert_eq!(v[0]["host"], "gpu.lan");
}
