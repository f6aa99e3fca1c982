//! `jarvis config show | path | set`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use crate::app::App;
use crate::cli::term::Term;
use crate::config::schema::{Kind, Value, SECTIONS};
use crate::config::Config;
use crate::kb::Actor;
use crate::paths::JarvisHome;

#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// The resolved configuration, grouped by section, with where each value came from.
    Show {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print the path of config.toml.
    Path,
    /// Validate and write one setting, keeping every other line of config.toml.
    Set {
        /// `section.key`, e.g. `digest.hour` or `models.ollama`; a server as
        /// `servers.NAME.base_url` (then `.model`, `.api_key`, `.local`).
        key: String,
        /// The new value; lists as `a, b` or `["a", "b"]`.
        value: String,
    },
}

pub fn run(cmd: ConfigCmd, home: &JarvisHome, config: Config) -> anyhow::Result<ExitCode> {
    match cmd {
        ConfigCmd::Show { json } => {
            if json {
                super::emit(&format!("{}\n", serde_json::to_string_pretty(&show_json(&config))?))?;
            } else {
                super::emit(&show_text(&config))?;
            }
        }
        ConfigCmd::Path => super::emit(&format!("{}\n", home.config_file().display()))?,
        ConfigCmd::Set { key, value } => {
            // Through the owner when one runs: the edit is an event in the
            // history its store holds.
            return Ok(ExitCode::from(super::delegate::run_config_set(key, value, config)?));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn display(kind: Kind, v: &Value) -> String {
    match (kind, v) {
        (Kind::Secret, Value::Str(s)) if !s.is_empty() => "(set)".into(),
        (Kind::Secret, _) => "(not set)".into(),
        _ => v.to_string(),
    }
}

pub fn show_text(config: &Config) -> String {
    let mut out = format!("# {}\n", config.file.display());
    for section in SECTIONS {
        let rows: Vec<_> = config.entries().filter(|(f, _, _)| f.section == *section).collect();
        out.push_str(&format!("\n[{section}]\n"));
        let width = rows.iter().map(|(f, _, _)| f.key.len()).max().unwrap_or(0);
        for (f, v, origin) in rows {
            if f.kind == Kind::ModelTable {
                let Value::Models(m) = v else { continue };
                if m.is_empty() {
                    out.push_str(&format!(
                        "  (no models listed; each provider's default still appears)  # {origin}\n"
                    ));
                }
                for (provider, models) in m {
                    out.push_str(&format!("  {provider:<width$} = {models:?}  # {origin}\n"));
                }
                continue;
            }
            out.push_str(&format!("  {:<width$} = {}  # {origin}\n", f.key, display(f.kind, v)));
        }
    }
    out.push_str("\n[servers]\n");
    if config.servers.is_empty() {
        out.push_str(
            "  (none) — an OpenAI-compatible server (llama.cpp, LM Studio, vLLM): `jarvis config set servers.NAME.base_url http://127.0.0.1:8080/v1`, then `.model`, `.api_key`, `.local true`\n",
        );
    }
    for s in &config.servers {
        out.push_str(&format!(
            "  {} = {} (model {}, {}, key {})  # file\n",
            s.name,
            s.base_url,
            s.model.as_deref().unwrap_or("unset"),
            if s.local { "marked local" } else { "cloud" },
            if s.api_key.is_some() { "set" } else { "not set" }
        ));
    }
    out
}

pub fn show_json(config: &Config) -> serde_json::Value {
    let mut sections: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> = BTreeMap::new();
    for (f, v, origin) in config.entries() {
        let value = match (f.kind, v) {
            (Kind::Secret, Value::Str(s)) => json!({ "set": !s.is_empty() }),
            (_, Value::Unset) => serde_json::Value::Null,
            _ => serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
        };
        let (origin_kind, detail) = match origin {
            crate::config::Origin::Default => ("default", None),
            crate::config::Origin::File(k) => ("file", Some(k.clone())),
            crate::config::Origin::Env(var) => ("env", Some(var.clone())),
        };
        let mut entry = json!({ "value": value, "origin": origin_kind });
        if let Some(d) = detail {
            entry["origin_detail"] = json!(d);
        }
        sections.entry(f.section).or_default().insert(f.key.to_string(), entry);
    }
    let servers: Vec<_> = config
        .servers
        .iter()
        .map(|s| {
            json!({ "name": s.name, "base_url": s.base_url, "model": s.model, "local": s.local,
                    "api_key": { "set": s.api_key.is_some() } })
        })
        .collect();
    json!({ "file": config.file, "sections": sections, "servers": servers, "warnings": config.warnings })
}

/// `jarvis config set KEY VALUE` against `app` (here or in the owner): the
/// write, then what it set and where, then the history's warning if its
/// event could not be recorded.
pub fn set(app: &App, key: &str, value: &str, t: &dyn Term) -> anyhow::Result<u8> {
    let recorded = app.setting_set(key, value, &Actor::Cli)?;
    let new = app.config();
    let file = app.home().config_file();
    if let Some(rest) = key.strip_prefix("servers.") {
        let shown = if rest.ends_with(".api_key") {
            if value.trim().is_empty() { "(not set)" } else { "(set)" }.to_string()
        } else {
            value.trim().to_string()
        };
        t.err(&format!("set {key} = {shown} in {}\n", file.display()));
        if let Some(s) = rest
            .split_once('.')
            .and_then(|(n, _)| new.servers.iter().find(|s| s.name == n))
        {
            t.err(&format!(
                "models on it are `{}:MODEL`{} — `jarvis models` lists it\n",
                s.name,
                s.model
                    .as_deref()
                    .map(|m| format!(" (default {m})"))
                    .unwrap_or_default()
            ));
        }
    } else {
        let shown = new
            .entries()
            .find(|(f, _, _)| f.dotted() == key)
            .map(|(f, v, o)| (display(f.kind, v), o.clone()));
        match shown {
            Some((v, origin)) => {
                t.err(&format!("set {key} = {v} in {}\n", file.display()));
                if !matches!(origin, crate::config::Origin::File(_)) {
                    t.err(&format!("note: {key} is currently overridden by {origin}\n"));
                }
            }
            None => t.err(&format!("set {key} in {}\n", file.display())),
        }
    }
    if let Some(w) = recorded.history_warning {
        t.err(&format!("warning: {w}\n"));
    }
    Ok(0)
}
