use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::schema::{Value, FIELDS, SECTIONS};
use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k: &str| map.get(k).cloned()
}

fn load(text: Option<&str>, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let home = JarvisHome::at("/jh");
    let e = env_of(&[&[("HOME", "/u")], env].concat());
    Config::from_parts(&home, Path::new("/jh/config.toml"), text, &e)
}

#[test]
fn defaults_live_under_jarvis_home() {
    let c = load(None, &[]).unwrap();
    assert_eq!(c.str("rag.dir"), "/jh/rag");
    assert_eq!(c.str("drafts.dir"), "/jh/drafts");
    assert_eq!(c.str("digest.output_dir"), "/jh/digest");
    assert_eq!(c.str("rag.embed_model"), "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(c.int("rag.chunk_size"), 1024);
    assert_eq!(c.int("rag.chunk_overlap"), 128);
    assert!(c.bool("rag.hybrid"));
    assert_eq!(c.str("chat.provider"), "ollama");
    assert_eq!(c.list("vault.private_dirs"), vec!["private"]);
    assert_eq!(c.value("sync.pdf_watch_dir"), &Value::Unset);
    assert!(c.warnings.is_empty());
    for (f, _, o) in c.entries() {
        assert_eq!(o, &Origin::Default, "{}", f.dotted());
    }
}

/// For every section: a default, a file value and (where the setting has
/// one) an env var each win in turn.
#[test]
fn precedence_default_then_file_then_env_in_every_section() {
    // One representative setting per section, with a file value and an env
    // override where the seed defines one.
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        Option<(&'a str, &'a str)>,
        Value,
        Option<Value>,
    );
    let cases: &[Case] = &[
        (
            "chat",
            "provider",
            "\"anthropic\"",
            Some(("CHAT_PROVIDER", "openrouter:x/y")),
            Value::Str("anthropic".into()),
            Some(Value::Str("openrouter:x/y".into())),
        ),
        (
            "openrouter",
            "model",
            "\"a/b\"",
            Some(("OPENROUTER_MODEL", "c/d")),
            Value::Str("a/b".into()),
            Some(Value::Str("c/d".into())),
        ),
        ("rag", "chunk_size", "2048", None, Value::Int(2048), None),
        ("research", "concurrency", "3", None, Value::Int(3), None),
        (
            "vault",
            "path",
            "\"~/notes\"",
            Some(("VAULT_PATH", "/elsewhere")),
            Value::Str("/u/notes".into()),
            Some(Value::Str("/elsewhere".into())),
        ),
        (
            "sync",
            "pdf_watch_dir",
            "\"~/inbox\"",
            Some(("PDF_WATCH_DIR", "/in")),
            Value::Str("/u/inbox".into()),
            Some(Value::Str("/in".into())),
        ),
        ("digest", "hour", "7", None, Value::Int(7), None),
        (
            "papers",
            "arxiv_api_url",
            "\"http://127.0.0.1:9\"",
            None,
            Value::Str("http://127.0.0.1:9".into()),
            None,
        ),
        ("pdf", "ocr", "false", None, Value::Bool(false), None),
        ("drafts", "retention_days", "0", None, Value::Int(0), None),
        ("history", "keep_days", "0", None, Value::Int(0), None),
        ("memory", "auto_accept", "true", None, Value::Bool(true), None),
        (
            "web",
            "port",
            "9000",
            Some(("JARVIS_PORT", "9100")),
            Value::Int(9000),
            Some(Value::Int(9100)),
        ),
        ("mcp", "include_private", "true", None, Value::Bool(true), None),
        (
            "runtime",
            "onnxruntime",
            "\"/opt/ort.so\"",
            Some(("JARVIS_ORT_LIB", "/x/ort.so")),
            Value::Str("/opt/ort.so".into()),
            Some(Value::Str("/x/ort.so".into())),
        ),
    ];
    let mut covered: Vec<&str> = Vec::new();
    for (section, key, file_val, env, want_file, want_env) in cases {
        covered.push(section);
        let dotted = format!("{section}.{key}");
        let text = format!("[{section}]\n{key} = {file_val}\n");
        let c = load(Some(&text), &[]).unwrap();
        assert_eq!(c.value(&dotted), want_file, "{dotted} from file");
        assert_eq!(c.origin(&dotted), &Origin::File(dotted.clone()));
        if let (Some((var, val)), Some(want)) = (env, want_env) {
            let c = load(Some(&text), &[(var, val)]).unwrap();
            assert_eq!(c.value(&dotted), want, "{dotted} from env");
            assert_eq!(c.origin(&dotted), &Origin::Env(var.to_string()));
        }
    }
    // [models] has its own shape.
    let c = load(Some("[models]\nollama = [\"qwen3:8b\", \"llama3\"]\n"), &[]).unwrap();
    assert_eq!(
        c.models().get("ollama").unwrap(),
        &vec!["qwen3:8b".to_string(), "llama3".to_string()]
    );
    covered.push("models");
    for s in SECTIONS {
        assert!(covered.contains(s), "section {s} has no precedence case");
    }
}

#[test]
fn every_env_var_of_the_seed_is_wired() {
    let vars: Vec<&str> = FIELDS.iter().filter_map(|f| f.env).collect();
    for v in [
        "CHAT_PROVIDER",
        "OPENROUTER_MODEL",
        "ANTHROPIC_MODEL",
        "OLLAMA_MODEL",
        "VAULT_PATH",
        "PDF_WATCH_DIR",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
    ] {
        assert!(vars.contains(&v), "{v}");
    }
}

#[test]
fn syntax_error_names_file_line_and_column() {
    let err = load(Some("[rag]\nchunk_size = 512\nhybrid = tru e\n"), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::Syntax { line: 3, .. }), "{msg}");
    assert!(msg.starts_with("/jh/config.toml:3:"), "{msg}");
}

#[test]
fn bad_values_name_key_value_and_what_is_allowed() {
    let cases = [
        ("[digest]\nhour = 25\n", "digest.hour", "25", "0 to 23"),
        ("[rag]\nhybrid = \"yes\"\n", "rag.hybrid", "\"yes\"", "true or false"),
        ("[digest]\nday = \"funday\"\n", "digest.day", "funday", "mon, tue"),
        (
            "[openrouter]\ndata_collection = \"maybe\"\n",
            "openrouter.data_collection",
            "maybe",
            "deny, allow",
        ),
        (
            "[rag]\nchunk_size = 512\nchunk_overlap = 600\n",
            "rag.chunk_overlap",
            "600",
            "smaller than rag.chunk_size",
        ),
        (
            "[chat]\nprovider = \"gpt\"\n",
            "chat.provider",
            "gpt",
            "ollama, anthropic, openrouter",
        ),
        (
            "[vault]\nprivate_dirs = \"private\"\n",
            "vault.private_dirs",
            "private",
            "list of strings",
        ),
        (
            "[digest]\narxiv_categories = [[\"cs.LG\"]]\n",
            "digest.arxiv_categories",
            "cs.LG",
            "[name, limit]",
        ),
        (
            "[sync]\npdf_watch_minutes = 0\n",
            "sync.pdf_watch_minutes",
            "0",
            "1 to 10080",
        ),
    ];
    for (text, key, value, allowed) in cases {
        let err = load(Some(text), &[]).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::Invalid { .. }), "{msg}");
        assert!(msg.contains(&format!("`{key}`")), "{msg}");
        assert!(msg.contains(value), "{msg}");
        assert!(msg.contains(allowed), "{msg}");
    }
    let err = load(None, &[("CHAT_PROVIDER", "ollama:")]).unwrap_err().to_string();
    assert!(err.contains("env CHAT_PROVIDER"), "{err}");
}

#[test]
fn unknown_keys_warn_with_a_suggestion_and_do_not_fail() {
    let c = load(Some("[rag]\nchunk_sise = 512\n[digset]\nenabled = true\n"), &[]).unwrap();
    let all = c.warnings.join("\n");
    assert!(
        all.contains("/jh/config.toml:2:1: unknown key `rag.chunk_sise`"),
        "{all}"
    );
    assert!(all.contains("did you mean `chunk_size`?"), "{all}");
    assert!(all.contains("unknown section `[digset]`"), "{all}");
    assert!(all.contains("did you mean `[digest]`?"), "{all}");
    assert_eq!(c.int("rag.chunk_size"), 1024);
}

#[test]
fn legacy_digest_anthropic_model_works_with_one_warning() {
    let c = load(Some("[digest]\nanthropic_model = \"claude-old\"\n"), &[]).unwrap();
    assert_eq!(c.str("chat.anthropic_model"), "claude-old");
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0].contains("move it to `[chat] anthropic_model`"),
        "{:?}",
        c.warnings
    );
    // [chat] beats [digest]; env beats both.
    let both = "[chat]\nanthropic_model = \"claude-new\"\n[digest]\nanthropic_model = \"claude-old\"\n";
    assert_eq!(load(Some(both), &[]).unwrap().str("chat.anthropic_model"), "claude-new");
    let c = load(Some(both), &[("ANTHROPIC_MODEL", "claude-env")]).unwrap();
    assert_eq!(c.str("chat.anthropic_model"), "claude-env");
}

#[test]
fn servers_extend_the_provider_names() {
    let text = "[chat]\nprovider = \"lmstudio:qwen\"\n[servers.lmstudio]\nbase_url = \"http://127.0.0.1:1234/v1\"\nlocal = true\n";
    let c = load(Some(text), &[]).unwrap();
    assert_eq!(c.servers.len(), 1);
    assert!(c.servers[0].local);
    let err = load(Some("[servers.x]\nbase_url = \"ftp://h\"\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("servers.x.base_url"), "{err}");
}

#[test]
fn secrets_resolve_but_are_never_in_display() {
    let c = load(None, &[("ANTHROPIC_API_KEY", "sk-ant-very-secret")]).unwrap();
    assert_eq!(
        c.secret("chat.anthropic_api_key").as_deref(),
        Some("sk-ant-very-secret")
    );
    assert_eq!(c.secret("openrouter.api_key"), None);
}

#[test]
fn set_value_keeps_comments_and_writes_0600() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    let original = "# my settings\n[rag]\n# bigger chunks for papers\nchunk_size = 2048 # tuned\nhybrid = true\n\n[chat]\nprovider = \"ollama\"   # local first\n";
    fs::write(home.config_file(), original).unwrap();
    fs::set_permissions(home.config_file(), fs::Permissions::from_mode(0o644)).unwrap();
    let env = env_of(&[("HOME", "/u")]);
    let c = write::set_value(&home, "rag.chunk_size", "1500", &env).unwrap();
    assert_eq!(c.int("rag.chunk_size"), 1500);
    let text = fs::read_to_string(home.config_file()).unwrap();
    assert_eq!(text, original.replace("2048", "1500"));
    let mode = fs::metadata(home.config_file()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // New key in a new section, a list, and a models entry.
    write::set_value(&home, "digest.enabled", "true", &env).unwrap();
    write::set_value(&home, "vault.private_dirs", "private, journal", &env).unwrap();
    let c = write::set_value(&home, "models.ollama", "[\"qwen3:8b\"]", &env).unwrap();
    assert!(c.bool("digest.enabled"));
    assert_eq!(c.list("vault.private_dirs"), vec!["private", "journal"]);
    assert_eq!(c.models()["ollama"], vec!["qwen3:8b"]);
    let text = fs::read_to_string(home.config_file()).unwrap();
    assert!(
        text.starts_with("# my settings\n[rag]\n# bigger chunks for papers\n"),
        "{text}"
    );
    assert!(text.contains("provider = \"ollama\"   # local first"), "{text}");
}

#[test]
fn set_value_refuses_bad_input_and_leaves_the_file_alone() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    let original = "[digest]\nhour = 5\n";
    fs::write(home.config_file(), original).unwrap();
    let env = env_of(&[]);
    let err = write::set_value(&home, "digest.hour", "25", &env)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`digest.hour`") && err.contains("25") && err.contains("0 to 23"),
        "{err}"
    );
    let err = write::set_value(&home, "rag.chunk_overlap", "4000", &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("smaller than rag.chunk_size"), "{err}");
    let err = write::set_value(&home, "rag.chunk_sise", "4", &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean `rag.chunk_size`?"), "{err}");
    assert_eq!(fs::read_to_string(home.config_file()).unwrap(), original);
}

#[test]
fn unset_value_removes_the_key_keeps_the_rest_and_drops_a_bare_section() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    let env = env_of(&[("HOME", "/u")]);
    let original = "# my settings\n[rag]\n# bigger chunks\nchunk_size = 2048 # tuned\nhybrid = false\n";
    fs::write(home.config_file(), original).unwrap();
    // A key set in a section of its own, then taken back: the file is as
    // it was, and the setting has its default again.
    write::set_value(&home, "digest.hour", "6", &env).unwrap();
    assert!(fs::read_to_string(home.config_file()).unwrap().contains("[digest]"));
    let c = write::unset_value(&home, "digest.hour", &env).unwrap();
    assert_eq!(fs::read_to_string(home.config_file()).unwrap(), original);
    assert!(matches!(c.origin("digest.hour"), Origin::Default));
    // A key beside others: its line goes with the comment right above it
    // (which spoke of it); the file's and the section's stay.
    let c = write::unset_value(&home, "rag.chunk_size", &env).unwrap();
    assert_eq!(
        fs::read_to_string(home.config_file()).unwrap(),
        "# my settings\n[rag]\nhybrid = false\n"
    );
    assert!(matches!(c.origin("rag.chunk_size"), Origin::Default));
    // A section whose header carries a comment stays, though empty.
    let commented = "# kept for later\n[digest]\nhour = 7\n";
    fs::write(home.config_file(), commented).unwrap();
    write::unset_value(&home, "digest.hour", &env).unwrap();
    assert_eq!(
        fs::read_to_string(home.config_file()).unwrap(),
        "# kept for later\n[digest]\n"
    );
    // Absent already: nothing changes; an unknown key is refused.
    write::unset_value(&home, "digest.hour", &env).unwrap();
    assert_eq!(
        fs::read_to_string(home.config_file()).unwrap(),
        "# kept for later\n[digest]\n"
    );
    let err = write::unset_value(&home, "digest.houre", &env).unwrap_err().to_string();
    assert!(err.contains("did you mean `digest.hour`?"), "{err}");
    let err = write::unset_value(&home, "servers.lab.model", &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown setting"), "{err}");
}

#[test]
fn set_value_creates_a_missing_file_0600() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path().join("fresh"));
    let env = env_of(&[]);
    write::set_value(&home, "chat.anthropic_api_key", "sk-ant-abcdefgh", &env).unwrap();
    let mode = fs::metadata(home.config_file()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let c = Config::load(&home, &env).unwrap();
    assert_eq!(c.secret("chat.anthropic_api_key").as_deref(), Some("sk-ant-abcdefgh"));
}

#[test]
fn readable_config_gets_a_loud_warning_and_is_not_chmodded() {
    let t = tempfile::tempdir().unwrap();
    let home = JarvisHome::at(t.path());
    fs::write(home.config_file(), "[rag]\nhybrid = true\n").unwrap();
    fs::set_permissions(home.config_file(), fs::Permissions::from_mode(0o644)).unwrap();
    let c = Config::load(&home, &env_of(&[])).unwrap();
    assert!(c.warnings[0].starts_with("WARNING:"), "{:?}", c.warnings);
    assert!(c.warnings[0].contains("chmod 600"), "{:?}", c.warnings);
    let mode = fs::metadata(home.config_file()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "loading must never chmod the user's file");
    fs::set_permissions(home.config_file(), fs::Permissions::from_mode(0o600)).unwrap();
    assert!(Config::load(&home, &env_of(&[])).unwrap().warnings.is_empty());
}

#[test]
fn env_differences_name_variables_not_values_in_both_directions() {
    let shell = env_of(&[
        ("VAULT_PATH", "/shell/vault"),
        ("ANTHROPIC_API_KEY", "sk-same"),
        ("OLLAMA_HOST", ""),
    ]);
    let sent = env_overrides(&shell);
    assert!(sent.iter().any(|(n, v)| n == "VAULT_PATH" && v == "/shell/vault"));
    assert!(
        !sent.iter().any(|(n, _)| n == "OLLAMA_HOST"),
        "empty means unset: {sent:?}"
    );
    // Same values: nothing to say.
    assert!(env_differences(&sent, &shell).is_empty());
    // The owner has another vault and a model the shell does not set.
    let owner = env_of(&[
        ("VAULT_PATH", "/owner/vault"),
        ("ANTHROPIC_API_KEY", "sk-same"),
        ("CHAT_PROVIDER", "ollama"),
    ]);
    assert_eq!(env_differences(&sent, &owner), vec!["CHAT_PROVIDER", "VAULT_PATH"]);
    // Names only: a secret's value is never part of the report.
    let owner = env_of(&[("VAULT_PATH", "/shell/vault"), ("ANTHROPIC_API_KEY", "sk-other")]);
    let d = env_differences(&sent, &owner);
    assert_eq!(d, vec!["ANTHROPIC_API_KEY"]);
}
