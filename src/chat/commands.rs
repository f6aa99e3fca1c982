//! Custom commands: Markdown prompt templates the user runs as `/NAME
//! args`, in the web composer and in `jarvis ask`.
//!
//! Owns: the files in `$JARVIS_HOME/commands/NAME.md` (frontmatter
//! `description`, optional `model`, `profile` and `argument-hint`; the body
//! is the template), the three shipped examples (seeded into an absent
//! folder, so the user can change or delete them), the built-in names that
//! shadow a file of the same name, reading an invocation, filling
//! `$ARGUMENTS` and `$1`…`$9` (arguments no placeholder asked for are
//! appended), and creating, editing, duplicating and deleting the files.
//! Must not: run anything (a command is text for the model), or touch a
//! path outside the commands folder — a name is `[a-z0-9_-]{1,40}` before
//! any path is built from it.

use std::path::PathBuf;

use rust_embed::RustEmbed;
use serde::{Deserialize, Serialize};

use crate::paths::{ensure_dir, write_atomic, JarvisHome, PathsError};

#[derive(RustEmbed)]
#[folder = "assets/commands/"]
struct Shipped;

/// The folder of the user's commands, under `$JARVIS_HOME`.
pub const DIR: &str = "commands";

/// Commands the web app and the CLI handle themselves; a file of the same
/// name is shadowed (listed as such, never run).
pub const BUILTINS: &[(&str, &str)] = &[
    ("new", "Start a new chat"),
    (
        "model",
        "Switch this chat's model — /model provider:model, or the picker",
    ),
    ("commands", "Create, edit and delete your custom commands"),
    ("research", "Research a question in depth"),
];

/// Longest template accepted (a prompt, not a document).
const TEMPLATE_MAX: usize = 20_000;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    #[error("invalid command name {0:?} — 1–40 characters of a-z, 0-9, '-' and '_'")]
    BadName(String),
    #[error("/{0} is a built-in command — pick another name")]
    Builtin(String),
    #[error("no custom command /{0}")]
    NotFound(String),
    #[error("a command /{0} already exists — edit it, or pick another name")]
    Exists(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Paths(#[from] PathsError),
    #[error("cannot access {}: {}", path.display(), crate::error_kind::io_reason(source))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CommandError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            CommandError::BadName(_) | CommandError::Invalid(_) => ErrorKind::User,
            CommandError::Builtin(_) | CommandError::Exists(_) => ErrorKind::Conflict,
            CommandError::NotFound(_) => ErrorKind::NotFound,
            CommandError::Paths(e) => e.kind(),
            CommandError::Io { source, .. } => crate::error_kind::io_kind(source),
        }
    }
}

/// One command as a file holds it and a page edits it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Command {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `provider[:model]` the session switches to when the command runs.
    #[serde(default)]
    pub model: String,
    /// The profile the session takes when the command runs.
    #[serde(default)]
    pub profile: String,
    /// What to type after the name, shown in the slash menu; derived from
    /// the placeholders when the file gives none.
    #[serde(default)]
    pub hint: String,
    pub template: String,
    /// A built-in of the same name wins; the file never runs.
    #[serde(default)]
    pub shadowed: bool,
}

/// Whether `name` may name a command file.
pub fn valid_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

pub fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|(n, _)| *n == name)
}

fn dir(home: &JarvisHome) -> PathBuf {
    home.root().join(DIR)
}

/// The folder, seeded with the shipped examples the first time it is
/// needed (never again: a deleted example stays deleted).
fn ensure(home: &JarvisHome) -> Result<PathBuf, CommandError> {
    let d = dir(home);
    if d.is_dir() {
        return Ok(d);
    }
    home.ensure_root()?;
    ensure_dir(&d, 0o700)?;
    for name in Shipped::iter() {
        if let Some(f) = Shipped::get(&name) {
            write_atomic(&d.join(&*name), &f.data, 0o600)?;
        }
    }
    Ok(d)
}

/// `(frontmatter pairs, body)`. Frontmatter is optional: `---` lines
/// around `key: value` lines at the very top.
fn split_frontmatter(text: &str) -> (Vec<(String, String)>, String) {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = t.strip_prefix("---\n").or_else(|| t.strip_prefix("---\r\n")) else {
        return (Vec::new(), t.to_string());
    };
    let mut pairs = Vec::new();
    let mut lines = rest.split_inclusive('\n');
    let mut consumed = 0;
    for line in lines.by_ref() {
        consumed += line.len();
        let l = line.trim_end();
        if l == "---" {
            return (pairs, rest[consumed..].trim_start_matches(['\r', '\n']).to_string());
        }
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
            pairs.push((k.trim().to_ascii_lowercase(), v));
        }
    }
    // No closing line: the whole file is the template.
    (Vec::new(), t.to_string())
}

/// Read one command file's text.
pub fn parse(name: &str, text: &str) -> Command {
    let (pairs, body) = split_frontmatter(text);
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let template = body.trim().to_string();
    let mut hint = get("argument-hint");
    if hint.is_empty() {
        hint = derived_hint(&template);
    }
    Command {
        name: name.to_string(),
        description: get("description"),
        model: get("model"),
        profile: get("profile"),
        hint,
        template,
        shadowed: is_builtin(name),
    }
}

/// `$1 $2` for a template with positional placeholders, `…` for one with
/// `$ARGUMENTS`, nothing for one that takes none.
fn derived_hint(template: &str) -> String {
    let max = (1..=9).rev().find(|n| template.contains(&format!("${n}"))).unwrap_or(0);
    if max > 0 {
        (1..=max).map(|n| format!("${n}")).collect::<Vec<_>>().join(" ")
    } else if template.contains("$ARGUMENTS") {
        "…".into()
    } else {
        String::new()
    }
}

/// The file a command is written as.
pub fn render(c: &Command) -> String {
    let mut out = String::from("---\n");
    for (k, v) in [
        ("description", &c.description),
        ("model", &c.model),
        ("profile", &c.profile),
        ("argument-hint", &c.hint),
    ] {
        if !v.trim().is_empty() {
            out.push_str(&format!("{k}: {}\n", v.trim()));
        }
    }
    out.push_str("---\n");
    out.push_str(c.template.trim());
    out.push('\n');
    out
}

/// Every command file, by name (built-in names marked shadowed).
pub fn list(home: &JarvisHome) -> Result<Vec<Command>, CommandError> {
    let d = ensure(home)?;
    let io = |source| CommandError::Io {
        path: d.clone(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&d).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".md"))
        else {
            continue;
        };
        if !valid_name(name) {
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => out.push(parse(name, &text)),
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "command file unreadable; left out"),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The command `name`, if a file holds it.
pub fn get(home: &JarvisHome, name: &str) -> Result<Command, CommandError> {
    if !valid_name(name) {
        return Err(CommandError::BadName(name.into()));
    }
    let path = ensure(home)?.join(format!("{name}.md"));
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse(name, &text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CommandError::NotFound(name.into())),
        Err(source) => Err(CommandError::Io { path, source }),
    }
}

/// Write `c` as `c.name`; `previous` is the name it is being edited from
/// (a rename removes that file), `None` for a new command or a duplicate
/// (which must not replace an existing one).
pub fn save(home: &JarvisHome, c: &Command, previous: Option<&str>) -> Result<Command, CommandError> {
    if !valid_name(&c.name) {
        return Err(CommandError::BadName(c.name.clone()));
    }
    if is_builtin(&c.name) {
        return Err(CommandError::Builtin(c.name.clone()));
    }
    if c.template.trim().is_empty() {
        return Err(CommandError::Invalid(
            "the template is empty — write the prompt the command sends".into(),
        ));
    }
    if c.template.len() > TEMPLATE_MAX {
        return Err(CommandError::Invalid(format!(
            "the template is longer than {TEMPLATE_MAX} bytes"
        )));
    }
    for (field, v) in [
        ("description", &c.description),
        ("model", &c.model),
        ("profile", &c.profile),
        ("hint", &c.hint),
    ] {
        if v.contains(['\n', '\r']) {
            return Err(CommandError::Invalid(format!("the {field} must be one line")));
        }
    }
    let d = ensure(home)?;
    let path = d.join(format!("{}.md", c.name));
    let renaming = previous.filter(|p| *p != c.name);
    if (previous.is_none() || renaming.is_some()) && path.exists() {
        return Err(CommandError::Exists(c.name.clone()));
    }
    if let Some(p) = renaming {
        if !valid_name(p) {
            return Err(CommandError::BadName(p.into()));
        }
    }
    let text = render(c);
    write_atomic(&path, text.as_bytes(), 0o600)?;
    if let Some(p) = renaming {
        let old = d.join(format!("{p}.md"));
        if let Err(source) = std::fs::remove_file(&old) {
            if source.kind() != std::io::ErrorKind::NotFound {
                return Err(CommandError::Io { path: old, source });
            }
        }
    }
    Ok(parse(&c.name, &text))
}

pub fn delete(home: &JarvisHome, name: &str) -> Result<(), CommandError> {
    if !valid_name(name) {
        return Err(CommandError::BadName(name.into()));
    }
    let path = ensure(home)?.join(format!("{name}.md"));
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(CommandError::NotFound(name.into())),
        Err(source) => Err(CommandError::Io { path, source }),
    }
}

/// `/name rest` → `(name, rest)`; `None` when `text` is not a command
/// line (no leading `/`, or a name that could not be one, like `/usr/bin`).
pub fn invocation(text: &str) -> Option<(&str, &str)> {
    let t = text.trim_start().strip_prefix('/')?;
    let end = t.find(char::is_whitespace).unwrap_or(t.len());
    let (name, rest) = t.split_at(end);
    valid_name(name).then_some((name, rest.trim()))
}

/// Split arguments like a shell would, without its expansions: spaces
/// separate, double or single quotes keep a group together.
pub fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for ch in args.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => cur.push(ch),
            None if ch == '"' || ch == '\'' => {
                quote = Some(ch);
                any = true;
            }
            None if ch.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            None => cur.push(ch),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Fill `template` with `args`: `$ARGUMENTS` is all of them as typed,
/// `$1`…`$9` one each (missing ones are empty). Arguments no placeholder
/// asked for are appended after a blank line.
pub fn expand(template: &str, args: &str) -> String {
    let args = args.trim();
    let positional = split_args(args);
    let mut out = String::with_capacity(template.len() + args.len());
    let mut used_all = false;
    let mut used_max = 0usize;
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used_all = true;
            rest = tail;
        } else if let Some(d) = after.chars().next().and_then(|c| c.to_digit(10)).filter(|d| *d >= 1) {
            let n = d as usize;
            out.push_str(positional.get(n - 1).map_or("", String::as_str));
            used_max = used_max.max(n);
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used_all && positional.len() > used_max {
        let extra = if used_max == 0 {
            args.to_string()
        } else {
            positional[used_max..].join(" ")
        };
        if !extra.is_empty() {
            out = format!("{}\n\n{extra}", out.trim_end());
        }
    }
    out
}

/// A command line the turn runs: what the model is sent, and what the
/// command asks of the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub name: String,
    pub prompt: String,
    pub model: Option<String>,
    pub profile: Option<String>,
}

/// `text` as a custom command, when it is one: a `/name` line naming a
/// file that no built-in shadows. Anything else is an ordinary message.
pub fn resolve(home: &JarvisHome, text: &str) -> Result<Option<Invocation>, CommandError> {
    let Some((name, args)) = invocation(text) else {
        return Ok(None);
    };
    if is_builtin(name) {
        return Ok(None);
    }
    let c = match get(home, name) {
        Ok(c) => c,
        Err(CommandError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let some = |s: String| Some(s).filter(|s| !s.trim().is_empty());
    Ok(Some(Invocation {
        name: c.name,
        prompt: expand(&c.template, args),
        model: some(c.model),
        profile: some(c.profile),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_and_unasked_arguments_are_appended() {
        assert_eq!(expand("Summarise $1 for $2.", "foo bar"), "Summarise foo for bar.");
        assert_eq!(expand("Summarise $1.", "foo bar baz"), "Summarise foo.\n\nbar baz");
        assert_eq!(expand("About: $ARGUMENTS!", "a \"b c\""), "About: a \"b c\"!");
        assert_eq!(expand("Explain this.", "quantum dots"), "Explain this.\n\nquantum dots");
        assert_eq!(expand("Say $1 and $3.", "\"two words\""), "Say two words and .");
        assert_eq!(expand("Costs $5 and $x and $0.", ""), "Costs  and $x and $0.");
        assert_eq!(expand("Nothing.", ""), "Nothing.");
        assert_eq!(split_args(" a  'b c' \"\" d"), vec!["a", "b c", "", "d"]);
    }

    #[test]
    fn a_command_line_is_a_valid_name_after_a_slash() {
        assert_eq!(invocation("/summarize foo bar"), Some(("summarize", "foo bar")));
        assert_eq!(invocation("  /tl-dr"), Some(("tl-dr", "")));
        assert_eq!(invocation("/usr/bin is where?"), None);
        assert_eq!(invocation("no slash"), None);
    }

    #[test]
    fn files_round_trip_examples_are_seeded_and_builtins_shadow() {
        let t = tempfile::tempdir().unwrap();
        let home = JarvisHome::at(t.path());
        let seeded = list(&home).unwrap();
        assert_eq!(seeded.len(), 3, "the shipped examples: {seeded:?}");
        assert!(seeded
            .iter()
            .all(|c| !c.description.is_empty() && !c.template.is_empty()));
        let c = Command {
            name: "brief".into(),
            description: "A brief".into(),
            profile: "research".into(),
            template: "Brief me on $1.".into(),
            ..Command::default()
        };
        let saved = save(&home, &c, None).unwrap();
        assert_eq!((saved.hint.as_str(), saved.profile.as_str()), ("$1", "research"));
        assert!(matches!(save(&home, &c, None), Err(CommandError::Exists(_))));
        let renamed = Command {
            name: "brief2".into(),
            ..c.clone()
        };
        save(&home, &renamed, Some("brief")).unwrap();
        assert!(matches!(get(&home, "brief"), Err(CommandError::NotFound(_))));
        assert!(matches!(
            save(
                &home,
                &Command {
                    name: "new".into(),
                    ..c.clone()
                },
                None
            ),
            Err(CommandError::Builtin(_))
        ));
        assert!(matches!(
            save(
                &home,
                &Command {
                    name: "../x".into(),
                    ..c.clone()
                },
                None
            ),
            Err(CommandError::BadName(_))
        ));
        // A file named like a built-in, put there by hand, never runs.
        std::fs::write(t.path().join(DIR).join("new.md"), "Not run.").unwrap();
        assert!(list(&home).unwrap().iter().any(|c| c.name == "new" && c.shadowed));
        assert_eq!(resolve(&home, "/new").unwrap(), None);
        let inv = resolve(&home, "/brief2 tides").unwrap().unwrap();
        assert_eq!(
            (inv.prompt.as_str(), inv.profile.as_deref()),
            ("Brief me on tides.", Some("research"))
        );
        assert_eq!(resolve(&home, "/nothing here").unwrap(), None);
        delete(&home, "brief2").unwrap();
        // A deleted example stays deleted: the folder is seeded once.
        delete(&home, &seeded[0].name).unwrap();
        assert_eq!(list(&home).unwrap().iter().filter(|c| !c.shadowed).count(), 2);
    }
}
