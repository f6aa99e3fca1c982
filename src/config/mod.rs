//! Configuration: defaults → `$JARVIS_HOME/config.toml` → environment.
//!
//! Owns: the settings table ([`schema`]), resolving each value and recording
//! where it came from, validation with precise messages, and the
//! comment-preserving write-back ([`write`]).
//! Must not: read anything but the config file and the given environment, or
//! print. Warnings are returned for the caller to show and log.

mod field;
mod kind;
pub mod mcp_servers;
pub mod schema;
mod schema_find;
mod value;
pub mod write;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use schema::{Default as Def, Field, Kind, Value, FIELDS, LEGACY, SECTIONS};
use toml_edit::{Item, Table};

use crate::paths::{expand_tilde, JarvisHome};

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Origin {
    Default,
    /// The config file (the dotted key it was read from, which differs for
    /// legacy keys).
    File(String),
    /// The environment variable's name.
    Env(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => write!(f, "default"),
            Origin::File(k) => write!(f, "file ({k})"),
            Origin::Env(v) => write!(f, "env {v}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// config.toml is not valid TOML.
    #[error("{file}:{line}:{column}: invalid TOML: {message} — fix the file or move it aside")]
    Syntax {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A value is of the wrong type or out of range.
    #[error("invalid value for `{key}` ({origin}): {value} — expected {allowed}")]
    Invalid {
        key: String,
        value: String,
        allowed: String,
        origin: String,
    },
    /// A dotted key given on the command line does not exist.
    #[error("unknown setting `{key}`{hint} — `jarvis config show` lists every setting")]
    UnknownKey { key: String, hint: String },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Write(#[from] crate::paths::PathsError),
}

impl ConfigError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            ConfigError::Syntax { .. } | ConfigError::Invalid { .. } | ConfigError::UnknownKey { .. } => {
                ErrorKind::User
            }
            ConfigError::Read { source, .. } => crate::error_kind::io_kind(source),
            ConfigError::Write(e) => e.kind(),
        }
    }
}

/// One OpenAI-compatible server from `[servers.<name>]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServerConfig {
    pub name: String,
    pub base_url: String,
    #[serde(skip)]
    pub api_key: Option<String>,
    pub model: Option<String>,
    /// Marked local by the user. Only counts as local for privacy when the
    /// base URL's host is also a loopback address (checked by the LLM layer).
    pub local: bool,
}

/// The resolved configuration. Typed accessors read from `values`.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: JarvisHome,
    /// Path of the config file, whether or not it exists.
    pub file: PathBuf,
    values: BTreeMap<String, (Value, Origin)>,
    pub servers: Vec<ServerConfig>,
    /// `[mcp_servers.NAME]`: other MCP servers the chat may use.
    pub mcp_servers: Vec<mcp_servers::McpServerConfig>,
    /// Non-fatal problems (unknown keys, legacy keys, a readable file) for
    /// the caller to print and log.
    pub warnings: Vec<String>,
}

/// The environment as a lookup function, so tests never mutate the process
/// environment.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The non-empty values `env` gives the environment variables settings are
/// read from, in table order (a delegating client sends these).
pub fn env_overrides(env: Env<'_>) -> Vec<(String, String)> {
    FIELDS
        .iter()
        .filter_map(|f| f.env)
        .filter_map(|name| env(name).filter(|v| !v.is_empty()).map(|v| (name.to_string(), v)))
        .collect()
}

/// The setting variables whose value differs between `client` (as from
/// [`env_overrides`]) and `env`, by name only: values may be secrets.
pub fn env_differences(client: &[(String, String)], env: Env<'_>) -> Vec<&'static str> {
    FIELDS
        .iter()
        .filter_map(|f| f.env)
        .filter(|name| {
            let theirs = client.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
            let ours = env(name).filter(|v| !v.is_empty());
            theirs != ours.as_deref()
        })
        .collect()
}

impl Config {
    /// Load `home/config.toml` (missing is fine) and the environment.
    pub fn load(home: &JarvisHome, env: Env<'_>) -> Result<Config, ConfigError> {
        let file = home.config_file();
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(ConfigError::Read { path: file, source }),
        };
        let mut cfg = Self::from_parts(home, &file, text.as_deref(), env)?;
        if text.is_some() {
            if let Some(w) = readable_warning(&file) {
                cfg.warnings.insert(0, w);
            }
        }
        Ok(cfg)
    }

    /// Resolve from an optional file text; the file path is for messages only.
    pub fn from_parts(home: &JarvisHome, file: &Path, text: Option<&str>, env: Env<'_>) -> Result<Config, ConfigError> {
        let user_home = env("HOME").map(PathBuf::from).or_else(dirs::home_dir);
        let doc = match text {
            Some(t) => Some(parse_doc(file, t)?),
            None => None,
        };
        let mut warnings = Vec::new();
        let mut values = BTreeMap::new();
        let root = doc.as_ref().map(|d| d.as_table());
        if let (Some(root), Some(text)) = (root, text) {
            check_unknown(root, file, text, &mut warnings);
        }
        for f in FIELDS {
            let mut resolved = (default_value(f, home, user_home.as_deref()), Origin::Default);
            if let Some(item) = root.and_then(|r| file_item(r, f)) {
                let origin = Origin::File(f.dotted());
                resolved = (parse_item(f, item, &origin, user_home.as_deref())?, origin);
            } else if let Some((ls, lk, _)) = LEGACY.iter().find(|(_, _, c)| *c == f.dotted()) {
                if let Some(item) = root.and_then(|r| r.get(ls)).and_then(|s| s.get(lk)) {
                    let origin = Origin::File(format!("{ls}.{lk}"));
                    resolved = (parse_item(f, item, &origin, user_home.as_deref())?, origin);
                    warnings.push(format!(
                        "{}: `[{ls}] {lk}` is a legacy location — move it to `[{}] {}`",
                        file.display(),
                        f.section,
                        f.key
                    ));
                }
            }
            if let Some(var) = f.env {
                if let Some(raw) = env(var).filter(|v| !v.is_empty()) {
                    let origin = Origin::Env(var.to_string());
                    resolved = (parse_str(f, &raw, &origin, user_home.as_deref())?, origin);
                }
            }
            values.insert(f.dotted(), resolved);
        }
        let servers = match root.and_then(|r| r.get("servers")) {
            Some(item) => parse_servers(item)?,
            None => Vec::new(),
        };
        let mcp_servers = match root.and_then(|r| r.get("mcp_servers")) {
            Some(item) => {
                let (servers, skipped) = mcp_servers::parse(item);
                warnings.extend(skipped);
                servers
            }
            None => Vec::new(),
        };
        let cfg = Config {
            home: home.clone(),
            file: file.to_path_buf(),
            values,
            servers,
            mcp_servers,
            warnings,
        };
        cfg.check_cross_field()?;
        Ok(cfg)
    }

    /// Rules that involve more than one value.
    fn check_cross_field(&self) -> Result<(), ConfigError> {
        let (size, overlap) = (self.int("rag.chunk_size"), self.int("rag.chunk_overlap"));
        if overlap >= size {
            return Err(ConfigError::Invalid {
                key: "rag.chunk_overlap".into(),
                value: overlap.to_string(),
                allowed: format!("a number smaller than rag.chunk_size ({size})"),
                origin: self.origin("rag.chunk_overlap").to_string(),
            });
        }
        let spec = self.str("chat.provider");
        let provider = spec.split_once(':').map_or(spec.as_str(), |(p, _)| p);
        let known = ["ollama", "anthropic", "openrouter"];
        if !known.contains(&provider) && !self.servers.iter().any(|s| s.name == provider) {
            let names: Vec<&str> = known
                .iter()
                .copied()
                .chain(self.servers.iter().map(|s| s.name.as_str()))
                .collect();
            return Err(ConfigError::Invalid {
                key: "chat.provider".into(),
                value: format!("{spec:?}"),
                allowed: format!("a provider among {} (optionally `:model`)", names.join(", ")),
                origin: self.origin("chat.provider").to_string(),
            });
        }
        Ok(())
    }

    /// Every value with its origin, in table order.
    pub fn entries(&self) -> impl Iterator<Item = (&'static Field, &Value, &Origin)> {
        FIELDS
            .iter()
            .filter_map(|f| self.values.get(&f.dotted()).map(|(v, o)| (f, v, o)))
    }

    pub fn value(&self, dotted: &str) -> &Value {
        self.values.get(dotted).map(|(v, _)| v).unwrap_or(&Value::Unset)
    }

    pub fn origin(&self, dotted: &str) -> &Origin {
        self.values.get(dotted).map(|(_, o)| o).unwrap_or(&Origin::Default)
    }

    // Typed accessors. The table guarantees the kind, so a mismatch can only
    // be a programming error in this file; they fall back to neutral values
    // rather than panic.
    pub fn bool(&self, k: &str) -> bool {
        matches!(self.value(k), Value::Bool(true))
    }
    pub fn int(&self, k: &str) -> i64 {
        match self.value(k) {
            Value::Int(i) => *i,
            _ => 0,
        }
    }
    pub fn str(&self, k: &str) -> String {
        match self.value(k) {
            Value::Str(s) => s.clone(),
            _ => String::new(),
        }
    }
    pub fn opt_str(&self, k: &str) -> Option<String> {
        match self.value(k) {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }
    pub fn path(&self, k: &str) -> Option<PathBuf> {
        match self.value(k) {
            Value::Str(s) if !s.is_empty() => Some(PathBuf::from(s)),
            _ => None,
        }
    }
    pub fn list(&self, k: &str) -> Vec<String> {
        match self.value(k) {
            Value::List(l) => l.clone(),
            _ => Vec::new(),
        }
    }
    pub fn pairs(&self, k: &str) -> Vec<(String, i64)> {
        match self.value(k) {
            Value::Pairs(p) => p.clone(),
            _ => Vec::new(),
        }
    }
    pub fn models(&self) -> BTreeMap<String, Vec<String>> {
        match self.value("models.catalogue") {
            Value::Models(m) => m.clone(),
            _ => BTreeMap::new(),
        }
    }
    /// A secret, or None when unset or empty.
    pub fn secret(&self, k: &str) -> Option<String> {
        self.opt_str(k).filter(|s| !s.is_empty())
    }

    pub fn rag_dir(&self) -> PathBuf {
        self.path("rag.dir")
            .unwrap_or_else(|| self.home.path(crate::paths::Dir::Rag))
    }
}

fn parse_doc(file: &Path, text: &str) -> Result<toml_edit::Document<String>, ConfigError> {
    toml_edit::Document::parse(text.to_string()).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        ConfigError::Syntax {
            file: file.to_path_buf(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn file_item<'a>(root: &'a Table, f: &Field) -> Option<&'a Item> {
    let section = root.get(f.section)?;
    if f.kind == Kind::ModelTable {
        return Some(section);
    }
    section.get(f.key)
}

fn check_unknown(root: &Table, file: &Path, text: &str, warnings: &mut Vec<String>) {
    let at = |span: Option<std::ops::Range<usize>>| {
        let (l, c) = span.map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        format!("{}:{l}:{c}", file.display())
    };
    for (name, item) in root.iter() {
        if name == "servers" || name == "mcp_servers" {
            continue;
        }
        if !SECTIONS.contains(&name) {
            let span = root.key(name).and_then(|k| k.span());
            let hint = schema::suggest(name, SECTIONS.iter().copied().chain(["servers", "mcp_servers"]))
                .map(|s| format!(" — did you mean `[{s}]`?"))
                .unwrap_or_default();
            warnings.push(format!("{}: unknown section `[{name}]` is ignored{hint}", at(span)));
            continue;
        }
        if name == "models" {
            continue;
        }
        let Some(table) = item.as_table_like() else { continue };
        for (key, _) in table.iter() {
            let known = schema::find(name, key).is_some() || LEGACY.iter().any(|(s, k, _)| *s == name && *k == key);
            if !known {
                let span = table.key(key).and_then(|k| k.span());
                let hint = schema::suggest(key, schema::keys_of(name))
                    .map(|s| format!(" — did you mean `{s}`?"))
                    .unwrap_or_default();
                warnings.push(format!("{}: unknown key `{name}.{key}` is ignored{hint}", at(span)));
            }
        }
    }
}

fn default_value(f: &Field, home: &JarvisHome, user_home: Option<&Path>) -> Value {
    match f.default {
        Def::Bool(b) => Value::Bool(b),
        Def::Int(i) => Value::Int(i),
        Def::Str(s) => Value::Str(s.to_string()),
        Def::InHome(rel) => Value::Str(home.root().join(rel).to_string_lossy().into_owned()),
        Def::InUserHome(rel) => Value::Str(match user_home {
            Some(h) => h.join(rel).to_string_lossy().into_owned(),
            None => format!("~/{rel}"),
        }),
        Def::Unset => Value::Unset,
        Def::List(l) => Value::List(l.iter().map(|s| s.to_string()).collect()),
        Def::Pairs(p) => Value::Pairs(p.iter().map(|(n, k)| (n.to_string(), *k)).collect()),
        Def::EmptyModels => Value::Models(BTreeMap::new()),
    }
}

fn invalid(f: &Field, shown: String, origin: &Origin) -> ConfigError {
    ConfigError::Invalid {
        key: f.dotted(),
        value: shown,
        allowed: f.kind.allowed(),
        origin: origin.to_string(),
    }
}

/// Convert a TOML item to a checked value.
pub(crate) fn parse_item(
    f: &Field,
    item: &Item,
    origin: &Origin,
    user_home: Option<&Path>,
) -> Result<Value, ConfigError> {
    let shown = || item.to_string().trim().to_string();
    let bad = || invalid(f, shown(), origin);
    let v = item.as_value();
    match f.kind {
        Kind::Bool => v.and_then(|v| v.as_bool()).map(Value::Bool).ok_or_else(bad),
        Kind::Int { .. } => {
            let i = v.and_then(|v| v.as_integer()).ok_or_else(bad)?;
            check_value(f, Value::Int(i), origin)
        }
        Kind::StrList => {
            let arr = v.and_then(|v| v.as_array()).ok_or_else(bad)?;
            let items: Option<Vec<String>> = arr.iter().map(|x| x.as_str().map(str::to_string)).collect();
            Ok(Value::List(items.ok_or_else(bad)?))
        }
        Kind::PairList => {
            let arr = v.and_then(|v| v.as_array()).ok_or_else(bad)?;
            let mut out = Vec::new();
            for x in arr.iter() {
                let pair = x.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
                let name = pair.get(0).and_then(|n| n.as_str()).ok_or_else(bad)?;
                let lim = pair
                    .get(1)
                    .and_then(|n| n.as_integer())
                    .filter(|n| *n > 0)
                    .ok_or_else(bad)?;
                out.push((name.to_string(), lim));
            }
            Ok(Value::Pairs(out))
        }
        Kind::ModelTable => {
            let table = item.as_table_like().ok_or_else(bad)?;
            let mut out = BTreeMap::new();
            for (provider, models) in table.iter() {
                let arr = models
                    .as_value()
                    .and_then(|v| v.as_array())
                    .ok_or_else(|| ConfigError::Invalid {
                        key: format!("models.{provider}"),
                        value: models.to_string().trim().to_string(),
                        allowed: "a list of model names, e.g. [\"qwen3:8b\"]".into(),
                        origin: origin.to_string(),
                    })?;
                let list: Vec<String> = arr.iter().filter_map(|m| m.as_str().map(str::to_string)).collect();
                out.insert(provider.to_string(), list);
            }
            Ok(Value::Models(out))
        }
        _ => {
            let s = v.and_then(|v| v.as_str()).ok_or_else(bad)?;
            parse_str(f, s, origin, user_home)
        }
    }
}

/// Convert a string (env var or `config set` argument) to a checked value.
pub(crate) fn parse_str(f: &Field, raw: &str, origin: &Origin, user_home: Option<&Path>) -> Result<Value, ConfigError> {
    let bad = || invalid(f, format!("{raw:?}"), origin);
    let v = match f.kind {
        Kind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Value::Bool(true),
            "false" | "0" | "no" | "off" => Value::Bool(false),
            _ => return Err(bad()),
        },
        Kind::Int { .. } => Value::Int(raw.trim().parse().map_err(|_| bad())?),
        Kind::Path => Value::Str(expand_tilde(Path::new(raw), user_home).to_string_lossy().into_owned()),
        Kind::OptPath if raw.is_empty() => Value::Unset,
        Kind::OptPath => Value::Str(expand_tilde(Path::new(raw), user_home).to_string_lossy().into_owned()),
        Kind::StrList => Value::List(parse_list(raw)),
        Kind::PairList | Kind::ModelTable => {
            // Structured values from a string: accept TOML syntax.
            let doc: toml_edit::DocumentMut = format!("v = {raw}").parse().map_err(|_| bad())?;
            let item = doc.get("v").ok_or_else(bad)?;
            return parse_item(f, item, origin, user_home);
        }
        _ => Value::Str(raw.to_string()),
    };
    check_value(f, v, origin)
}

fn check_value(f: &Field, v: Value, origin: &Origin) -> Result<Value, ConfigError> {
    let ok = match (&f.kind, &v) {
        (Kind::Int { min, max }, Value::Int(i)) => (*min..=*max).contains(i),
        (Kind::Choice(c), Value::Str(s)) => c.contains(&s.as_str()),
        (Kind::NonEmpty, Value::Str(s)) => !s.trim().is_empty(),
        (Kind::Path, Value::Str(s)) => !s.is_empty(),
        (Kind::ProviderSpec, Value::Str(s)) => {
            let (p, m) = s.split_once(':').map_or((s.as_str(), None), |(p, m)| (p, Some(m)));
            !p.is_empty() && m.is_none_or(|m| !m.is_empty())
        }
        _ => true,
    };
    if ok {
        Ok(v)
    } else {
        let shown = match &v {
            Value::Int(i) => i.to_string(),
            other => other.to_string(),
        };
        Err(invalid(f, shown, origin))
    }
}

fn parse_servers(item: &Item) -> Result<Vec<ServerConfig>, ConfigError> {
    let bad = |key: String, value: String, allowed: &str| ConfigError::Invalid {
        key,
        value,
        allowed: allowed.to_string(),
        origin: "file".into(),
    };
    let table = item
        .as_table_like()
        .ok_or_else(|| bad("servers".into(), item.to_string(), "tables like [servers.lmstudio]"))?;
    let mut out = Vec::new();
    for (name, server) in table.iter() {
        let t = server.as_table_like().ok_or_else(|| {
            bad(
                format!("servers.{name}"),
                server.to_string(),
                "a table with base_url, and optionally api_key, model, local",
            )
        })?;
        let get_str = |k: &str| t.get(k).and_then(|i| i.as_str()).map(str::to_string);
        let base_url = get_str("base_url")
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .ok_or_else(|| {
                bad(
                    format!("servers.{name}.base_url"),
                    t.get("base_url")
                        .map(|i| i.to_string())
                        .unwrap_or_else(|| "(missing)".into()),
                    "an http:// or https:// URL such as \"http://127.0.0.1:1234/v1\"",
                )
            })?;
        let local = match t.get("local") {
            None => false,
            Some(i) => i
                .as_bool()
                .ok_or_else(|| bad(format!("servers.{name}.local"), i.to_string(), "true or false"))?,
        };
        out.push(ServerConfig {
            name: name.to_string(),
            base_url,
            api_key: get_str("api_key").filter(|k| !k.is_empty()),
            model: get_str("model").filter(|m| !m.is_empty()),
            local,
        });
    }
    Ok(out)
}

/// `a, b` or `["a", "b"]`.
pub(crate) fn parse_list(raw: &str) -> Vec<String> {
    let t = raw.trim();
    if t.starts_with('[') {
        if let Ok(doc) = format!("v = {t}").parse::<toml_edit::DocumentMut>() {
            if let Some(arr) = doc.get("v").and_then(|v| v.as_array()) {
                return arr.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
            }
        }
    }
    t.split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The loud warning for a config file other accounts can read.
pub fn readable_warning(file: &Path) -> Option<String> {
    let mode = std::fs::metadata(file).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "WARNING: {} is readable by other users (mode {mode:04o}) and may hold API keys — run `chmod 600 {}`",
            file.display(),
            file.display()
        )
    })
}

#[cfg(test)]
mod tests;
