//! `jarvis config set`: validated, comment-preserving, atomic write-back.
//!
//! The file is edited with toml_edit so every other key, comment and blank
//! line survives; the new file replaces the old one by rename and is left
//! 0600 because it can hold API keys. Server entries (`[servers.NAME]`) are
//! set key by key: `servers.NAME.base_url`, `.model`, `.api_key`, `.local`.

use std::path::Path;

use toml_edit::{DocumentMut, Item, Table};

use super::schema::{self, Kind, Value, FIELDS};
use super::{parse_list, parse_str, Config, ConfigError, Env, Origin};
use crate::paths::{write_atomic, JarvisHome};

/// Set one dotted key (`section.key`, or `models.<provider>`) in the home's
/// config file, after validating it alone and the whole resulting config.
/// Returns the new resolved config.
pub fn set_value(home: &JarvisHome, dotted: &str, raw: &str, env: Env<'_>) -> Result<Config, ConfigError> {
    let file = home.config_file();
    let old = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ConfigError::Read { path: file, source }),
    };
    let new = edit_text(&file, &old, dotted, raw, env)?;
    // Validate the whole file as it would be loaded, so cross-field rules
    // (overlap < size, provider names) hold before anything is written.
    Config::from_parts(home, &file, Some(&new), env)?;
    home.ensure_root()?;
    write_atomic(&file, new.as_bytes(), 0o600)?;
    Config::load(home, env)
}

/// Remove one dotted key from the home's config file, so the setting
/// takes its default again (undo of a change from the default). A section
/// left with no key and no comment goes too. A server's keys have no
/// default and are refused as unknown. Returns the new resolved config.
pub fn unset_value(home: &JarvisHome, dotted: &str, env: Env<'_>) -> Result<Config, ConfigError> {
    let file = home.config_file();
    let old = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Config::load(home, env),
        Err(source) => return Err(ConfigError::Read { path: file, source }),
    };
    let new = unset_text(&file, &old, dotted)?;
    if new == old {
        return Config::load(home, env);
    }
    Config::from_parts(home, &file, Some(&new), env)?;
    write_atomic(&file, new.as_bytes(), 0o600)?;
    Config::load(home, env)
}

/// The text of the config file without `dotted`.
pub fn unset_text(file: &Path, old: &str, dotted: &str) -> Result<String, ConfigError> {
    // A server's keys are not in the schema: refused here as unknown.
    let (section, key, _) = resolve_key(dotted)?;
    let mut doc = parse_doc(file, old)?;
    let root = doc.as_table_mut();
    let emptied = match root.get_mut(section).and_then(Item::as_table_like_mut) {
        Some(table) => {
            table.remove(key);
            table.is_empty()
        }
        None => false,
    };
    let bare = |t: &Table| {
        t.decor()
            .prefix()
            .and_then(|p| p.as_str())
            .is_none_or(|p| p.trim().is_empty())
    };
    if emptied && root.get(section).and_then(Item::as_table).is_some_and(bare) {
        root.remove(section);
    }
    Ok(doc.to_string())
}

/// The config file's text as an editable document, or where it is not TOML.
fn parse_doc(file: &Path, old: &str) -> Result<DocumentMut, ConfigError> {
    old.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = e.span().map(|s| super::line_col(old, s.start)).unwrap_or((1, 1));
        ConfigError::Syntax {
            file: file.to_path_buf(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })
}

/// The text of the config file after setting `dotted` to `raw`.
pub fn edit_text(file: &Path, old: &str, dotted: &str, raw: &str, env: Env<'_>) -> Result<String, ConfigError> {
    let user_home = env("HOME").map(std::path::PathBuf::from);
    let parse = |old: &str| parse_doc(file, old);
    if let Some(rest) = dotted.strip_prefix("servers.") {
        let mut doc = parse(old)?;
        set_server_key(&mut doc, rest, raw)?;
        return Ok(doc.to_string());
    }
    let (section, key, field) = resolve_key(dotted)?;
    let origin = Origin::File(dotted.to_string());
    let mut doc = parse(old)?;

    let new_value: toml_edit::Value = if field.kind == Kind::ModelTable {
        // models.<provider> = list of model names.
        let list: Vec<String> = parse_list(raw);
        list.iter().map(String::as_str).collect::<toml_edit::Array>().into()
    } else {
        let checked = parse_str(field, raw, &origin, user_home.as_deref())?;
        match (field.kind, checked) {
            // Keep paths as the user typed them (`~/vault`), not expanded.
            (Kind::Path | Kind::OptPath, _) => raw.into(),
            (_, Value::Bool(b)) => b.into(),
            (_, Value::Int(i)) => i.into(),
            (_, Value::Str(s)) => s.into(),
            (_, Value::List(_)) => parse_list(raw)
                .iter()
                .map(String::as_str)
                .collect::<toml_edit::Array>()
                .into(),
            (_, Value::Pairs(p)) => {
                let mut arr = toml_edit::Array::new();
                for (n, k) in p {
                    let mut pair = toml_edit::Array::new();
                    pair.push(n);
                    pair.push(k);
                    arr.push(pair);
                }
                arr.into()
            }
            (_, Value::Models(_)) | (_, Value::Unset) => "".into(),
        }
    };

    let table = section_table(&mut doc, section);
    match table.get_mut(key) {
        Some(Item::Value(existing)) => {
            // Keep the comment that trails the old value on its line.
            let decor = existing.decor().clone();
            let mut v = new_value;
            *v.decor_mut() = decor;
            *existing = v;
        }
        _ => {
            table.insert(key, Item::Value(new_value));
        }
    }
    Ok(doc.to_string())
}

/// The keys a `[servers.NAME]` entry takes.
pub const SERVER_KEYS: [&str; 4] = ["base_url", "model", "api_key", "local"];

/// Provider names a server may not take (they would shadow a built-in).
const BUILT_IN_PROVIDERS: [&str; 3] = ["ollama", "anthropic", "openrouter"];

/// Whether `name` may name a server: 1–32 of `a-z 0-9 _ -`, starting with a
/// letter or digit, and not a built-in provider. It becomes the provider
/// half of a model spec (`NAME:model`), so no `:` or spaces.
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && !BUILT_IN_PROVIDERS.contains(&name)
}

/// `servers.NAME.KEY = raw` into `doc`. The whole file is validated by the
/// caller afterwards (a base URL's scheme, the provider names).
fn set_server_key(doc: &mut DocumentMut, rest: &str, raw: &str) -> Result<(), ConfigError> {
    let dotted = format!("servers.{rest}");
    let Some((name, key)) = rest.split_once('.') else {
        return Err(ConfigError::UnknownKey {
            key: dotted,
            hint: format!(
                " — a server is set key by key: `servers.{rest}.base_url` (then `.model`, `.api_key`, `.local`)"
            ),
        });
    };
    if !valid_server_name(name) {
        return Err(ConfigError::Invalid {
            key: dotted,
            value: format!("{name:?}"),
            allowed: format!(
                "a server name of 1–32 characters a-z, 0-9, '_' or '-' that is not {}",
                BUILT_IN_PROVIDERS.join(", ")
            ),
            origin: "command line".into(),
        });
    }
    if !SERVER_KEYS.contains(&key) {
        let hint = schema::suggest(key, SERVER_KEYS)
            .map(|s| format!(" — did you mean `servers.{name}.{s}`?"))
            .unwrap_or_else(|| format!(" — a server takes {}", SERVER_KEYS.join(", ")));
        return Err(ConfigError::UnknownKey { key: dotted, hint });
    }
    let invalid = |allowed: &str| ConfigError::Invalid {
        key: dotted.clone(),
        value: format!("{raw:?}"),
        allowed: allowed.to_string(),
        origin: "command line".into(),
    };
    let value: toml_edit::Value = match key {
        "base_url" => {
            let url = raw.trim();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(
                    "an http:// or https:// URL such as \"http://127.0.0.1:8080/v1\"",
                ));
            }
            url.into()
        }
        "local" => match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => true.into(),
            "false" | "0" | "no" | "off" => false.into(),
            _ => return Err(invalid("true or false")),
        },
        _ => raw.trim().into(),
    };
    let root = doc.as_table_mut();
    if !matches!(root.get("servers"), Some(Item::Table(_))) {
        if root.get("servers").is_some_and(|i| !i.is_none()) {
            return Err(ConfigError::Invalid {
                key: "servers".into(),
                value: root.get("servers").map(|i| i.to_string()).unwrap_or_default(),
                allowed: "tables like [servers.llama] — fix the file by hand".into(),
                origin: "file".into(),
            });
        }
        let mut t = Table::new();
        // `[servers.NAME]` headers only, no empty `[servers]` above them.
        t.set_implicit(true);
        root.insert("servers", Item::Table(t));
    }
    let Some(Item::Table(servers)) = root.get_mut("servers") else {
        unreachable_table()
    };
    if !servers.contains_key(name) {
        if key != "base_url" {
            return Err(ConfigError::Invalid {
                key: dotted.clone(),
                value: format!("{raw:?}"),
                allowed: format!(
                    "a server that exists — add it first with `jarvis config set servers.{name}.base_url http://127.0.0.1:8080/v1`"
                ),
                origin: "command line".into(),
            });
        }
        servers.insert(name, Item::Table(Table::new()));
    }
    let Some(server) = servers.get_mut(name).and_then(Item::as_table_like_mut) else {
        return Err(ConfigError::Invalid {
            key: format!("servers.{name}"),
            value: servers.get(name).map(|i| i.to_string()).unwrap_or_default(),
            allowed: "a table with base_url, and optionally api_key, model, local — fix the file by hand".into(),
            origin: "file".into(),
        });
    };
    match server.get_mut(key) {
        Some(Item::Value(existing)) => {
            let decor = existing.decor().clone();
            let mut v = value;
            *v.decor_mut() = decor;
            *existing = v;
        }
        _ => {
            server.insert(key, Item::Value(value));
        }
    }
    Ok(())
}

fn resolve_key(dotted: &str) -> Result<(&str, &str, &'static schema::Field), ConfigError> {
    if let Some(provider) = dotted.strip_prefix("models.") {
        if !provider.is_empty() && !provider.contains('.') {
            if let Some(f) = schema::find("models", "catalogue") {
                return Ok(("models", provider, f));
            }
        }
    }
    if let Some(f) = schema::find_dotted(dotted).filter(|f| f.kind != Kind::ModelTable) {
        return Ok((f.section, f.key, f));
    }
    let all: Vec<String> = FIELDS.iter().map(|f| f.dotted()).collect();
    let hint = schema::suggest(dotted, all.iter().map(String::as_str))
        .map(|s| format!(" — did you mean `{s}`?"))
        .unwrap_or_default();
    Err(ConfigError::UnknownKey {
        key: dotted.to_string(),
        hint,
    })
}

fn section_table<'a>(doc: &'a mut DocumentMut, section: &str) -> &'a mut Table {
    let root = doc.as_table_mut();
    if !root.contains_key(section) {
        root.insert(section, Item::Table(Table::new()));
    }
    match root.get_mut(section) {
        Some(Item::Table(t)) => t,
        // An inline table or a value in place of the section: replace it with
        // a real table; validation already accepted the new value.
        Some(other) => {
            *other = Item::Table(Table::new());
            match other {
                Item::Table(t) => t,
                _ => unreachable_table(),
            }
        }
        None => unreachable_table(),
    }
}

// Only reachable if toml_edit stopped returning what was just inserted.
#[allow(clippy::panic)]
fn unreachable_table() -> ! {
    panic!("toml_edit lost a table that was just inserted")
}
