//! `jarvis --help`, `config show|path|set`, `completions`, run as a process.

use std::os::unix::fs::PermissionsExt;

use crate::support::net::dead_url;
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
    // The edit is the command line's event in the history, with the value
    // it replaced, and `jarvis undo` puts that back.
    let mut c = sb.jarvis();
    c.args(["log", "--kind", "setting_edited", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let e = &rows[0];
    assert_eq!(e["key"], "setting:digest.hour", "{rows}");
    assert_eq!(e["actor"]["by"], "cli");
    assert_eq!(e["record"]["inverse"], "5");
    assert_eq!(e["record"]["after"], "6");
    assert_eq!(e["undoable"], true, "{e}");
    let mut c = sb.jarvis();
    c.args(["undo", &e["id"].to_string()]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(sb.config_file()).unwrap();
    assert_eq!(text, "# mine\n[digest]\nhour = 5 # early\n");
}

#[test]
fn undoing_a_change_from_the_default_removes_the_key_again() {
    let sb = Sandbox::new();
    sb.write_config("# mine\n");
    // One setting with a default value, one whose default is unset (no
    // value can spell it, so it could not be undone by writing a value).
    for (key, value) in [("digest.hour", "6"), ("sync.pdf_watch_dir", "/srv/papers")] {
        let mut c = sb.jarvis();
        c.args(["config", "set", key, value]);
        let r = run(c);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let text = std::fs::read_to_string(sb.config_file()).unwrap();
    assert!(text.contains("hour = 6") && text.contains("pdf_watch_dir"), "{text}");
    let mut c = sb.jarvis();
    c.args(["log", "--kind", "setting_edited", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for e in rows {
        assert_eq!(e["record"]["inverse_is_default"], true, "{e}");
        assert!(e["record"]["detail"].as_str().unwrap().contains("(the default)"), "{e}");
        assert_eq!(e["undoable"], true, "{e}");
        let mut c = sb.jarvis();
        c.args(["undo", &e["id"].to_string()]);
        let r = run(c);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("back to its default"), "{}", r.stdout);
    }
    // The file is as it was, so a later default would reach this user.
    assert_eq!(std::fs::read_to_string(sb.config_file()).unwrap(), "# mine\n");
    let mut c = sb.jarvis();
    c.args(["config", "show", "--json"]);
    let r = run(c);
    let shown: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(shown["sections"]["digest"]["hour"]["origin"], "default", "{shown}");
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

/// `[servers.NAME]` is reachable from the command line: set key by key,
/// shown by `config show` (its key never printed), listed by `jarvis
/// models`; mistakes are refused with the fix and change nothing.
#[test]
fn servers_are_set_shown_and_listed_from_the_command_line() {
    let sb = Sandbox::new();
    let set = |key: &str, value: &str| {
        let mut c = sb.jarvis();
        c.args(["config", "set", key, value]);
        run(c)
    };
    // Before any server: `config show` says how to add one.
    let mut c = sb.jarvis();
    c.args(["config", "show"]);
    let r = run(c);
    assert!(
        r.stdout.contains("[servers]") && r.stdout.contains("config set servers.NAME.base_url"),
        "{}",
        r.stdout
    );
    // A key before the server exists, a bad name, a bad key, a bad URL.
    let r = set("servers.llama.model", "gemma");
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("servers.llama.base_url"), "{}", r.stderr);
    let r = set("servers.ollama.base_url", "http://127.0.0.1:8080/v1");
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("server name"), "{}", r.stderr);
    let r = set("servers.llama.base_ur", "http://127.0.0.1:8080/v1");
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("did you mean `servers.llama.base_url`"),
        "{}",
        r.stderr
    );
    let r = set("servers.llama.base_url", "ftp://127.0.0.1/");
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("http://"), "{}", r.stderr);
    assert!(!sb.jarvis_home().join("config.toml").exists(), "nothing written");

    for (k, v) in [
        ("servers.llama.base_url", "http://127.0.0.1:8080/v1"),
        ("servers.llama.model", "gemma-3-12b"),
        ("servers.llama.local", "true"),
        ("servers.llama.api_key", "sk-llama-secret-123"),
    ] {
        let r = set(k, v);
        assert_eq!(r.code, 0, "{k}: {}", r.stderr);
        assert!(!r.stderr.contains("sk-llama-secret"), "{}", r.stderr);
    }
    let text = std::fs::read_to_string(sb.jarvis_home().join("config.toml")).unwrap();
    assert!(text.contains("[servers.llama]"), "{text}");
    assert!(!text.contains("[servers]\n"), "no empty parent table: {text}");
    // The server is a provider now: the default can name it.
    assert_eq!(set("chat.provider", "llama").code, 0);

    let mut c = sb.jarvis();
    c.args(["config", "show"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("llama = http://127.0.0.1:8080/v1 (model gemma-3-12b, marked local, key set)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("sk-llama-secret"), "{}", r.stdout);
    let mut c = sb.jarvis();
    c.args(["config", "show", "--json"]);
    let r = run(c);
    assert!(!r.stdout.contains("sk-llama-secret"), "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["servers"][0]["name"], "llama", "{v}");

    let mut c = sb.jarvis();
    c.args(["models", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let e = v
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["spec"] == "llama:gemma-3-12b")
        .unwrap_or_else(|| panic!("the server is listed: {v}"));
    assert_eq!(e["local"], true);
    assert_eq!(e["current"], true);
    assert_eq!(e["credentials"], true);
}

/// The models a local Ollama reports in `/api/tags` are offered by `jarvis
/// models`, and a configured one it lacks is marked not installed.
#[test]
fn models_lists_what_the_local_ollama_has_installed() {
    let sb = Sandbox::new();
    let ollama =
        crate::support::fakes::llm::FakeServer::start(vec![crate::support::fakes::llm::Reply::status(500, "{}")]);
    ollama.set_installed(&["gemma3:270m", "qwen3:8b"]);
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama:qwen3:8b\"\nollama_host = \"{}\"\n[models]\nollama = [\"llama3:8b\"]\n",
        ollama.url
    ));
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
            .unwrap_or_else(|| panic!("no {spec}: {v}"))
    };
    assert_eq!(find("ollama:gemma3:270m")["installed"], true);
    assert_eq!(find("ollama:gemma3:270m")["local"], true);
    assert_eq!(find("ollama:qwen3:8b")["installed"], true);
    assert_eq!(find("ollama:qwen3:8b")["current"], true);
    assert_eq!(find("ollama:llama3:8b")["installed"], false);
    assert!(ollama.requests().is_empty(), "only the model list was asked for");
    let mut c = sb.jarvis();
    c.arg("models");
    let r = run(c);
    assert!(r.stdout.contains("not installed"), "{}", r.stdout);

    // Ollama not running: the list from config, and a note saying why.
    drop(ollama);
    sb.write_config(&format!("[chat]\nollama_host = \"{}\"\n", dead_url()));
    let mut c = sb.jarvis();
    c.arg("models");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("ollama:qwen3-vl:30b"), "{}", r.stdout);
    assert!(
        r.stderr.contains("installed Ollama models are not listed"),
        "{}",
        r.stderr
    );
}
