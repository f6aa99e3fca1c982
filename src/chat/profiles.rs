//! Profiles: how the assistant works in one session — a system prompt
//! addition, the tools it is offered, a model, a temperature, planning on
//! or off and a tool-round cap.
//!
//! Owns: the shipped profiles (embedded from `assets/profiles/`), the
//! user's own TOML files in `$JARVIS_HOME/profiles/` (read fresh every
//! turn; a file named like a shipped profile replaces it), their
//! validation, what a profile changes in a turn ([`TurnSetup`]), and the
//! `switch_profile` tool's schema and arguments.
//! Must not: write the profiles folder (the human's files), read the
//! configuration, or offer the model a tool its profile leaves out — the
//! list is cut here, before any request, and the dispatcher refuses a call
//! to anything outside it.

use std::path::Path;

use rust_embed::RustEmbed;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::llm::ToolSpec;
use crate::paths::JarvisHome;

use super::tools::TOOL_NAMES;

#[derive(RustEmbed)]
#[folder = "assets/profiles/"]
struct Shipped;

/// The folder of the user's own profiles, under `$JARVIS_HOME`.
pub const DIR: &str = "profiles";

/// The tool that changes a session's profile mid-conversation.
pub const SWITCH_TOOL: &str = "switch_profile";

/// The tool the "model's own knowledge" mode adds; the mode decides it,
/// not the profile.
const OWN_KNOWLEDGE: &str = "use_own_knowledge";

/// Longest tool-round cap a profile may set.
const MAX_ROUNDS: usize = 50;

/// One profile, as a session uses it and a page lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// The file's name without `.toml`; what a session stores.
    pub id: String,
    pub name: String,
    pub description: String,
    /// Added to the system prompt after Jarvis's own rules.
    pub system_prompt: String,
    /// The tools offered to the model; `None` offers all of them.
    pub tools: Option<Vec<String>>,
    /// `provider[:model]` a new session of this profile starts on.
    pub model: Option<String>,
    pub temperature: Option<f64>,
    /// One quick model call decides whether a request needs a plan first.
    pub planning: bool,
    /// Replaces `chat.max_tool_rounds` for this profile.
    pub max_tool_rounds: Option<usize>,
    /// Shipped with Jarvis (and not replaced by a file of the user's).
    pub builtin: bool,
}

/// The file format. Unknown keys are refused, so a typo (`planing`) is
/// reported instead of silently doing nothing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    system_prompt: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    planning: bool,
    #[serde(default)]
    max_tool_rounds: Option<usize>,
}

/// Whether `id` may name a profile: `[a-z0-9_-]{1,40}`.
pub fn valid_id(id: &str) -> bool {
    (1..=40).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Parse and check one profile file.
pub fn parse(id: &str, text: &str, builtin: bool) -> Result<Profile, String> {
    let f: ProfileFile = toml::from_str(text).map_err(|e| e.message().to_string())?;
    let name = f.name.trim().to_string();
    if name.is_empty() {
        return Err("`name` is empty".into());
    }
    if let Some(tools) = &f.tools {
        for t in tools {
            if !TOOL_NAMES.contains(&t.as_str()) {
                return Err(format!(
                    "unknown tool `{t}` in `tools` — the tools are: {}",
                    TOOL_NAMES.join(", ")
                ));
            }
        }
    }
    if let Some(t) = f.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(format!("`temperature` {t} is outside 0–2"));
        }
    }
    if let Some(n) = f.max_tool_rounds {
        if !(1..=MAX_ROUNDS).contains(&n) {
            return Err(format!("`max_tool_rounds` {n} is outside 1–{MAX_ROUNDS}"));
        }
    }
    let model = f.model.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
    Ok(Profile {
        id: id.to_string(),
        name,
        description: f.description.trim().to_string(),
        system_prompt: f.system_prompt.trim().to_string(),
        tools: f.tools,
        model,
        temperature: f.temperature,
        planning: f.planning,
        max_tool_rounds: f.max_tool_rounds,
        builtin,
    })
}

/// Every profile there is, and what was wrong with the files that could
/// not be read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Catalogue {
    pub profiles: Vec<Profile>,
    /// One line per file left out, naming it and the problem.
    pub problems: Vec<String>,
}

impl Catalogue {
    pub fn get(&self, id: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.id == id)
    }
}

/// The shipped profiles, then the user's (a same-named file replaces a
/// shipped one). Read on every call, so an edit applies to the next turn.
pub fn load(home: &JarvisHome) -> Catalogue {
    let mut cat = Catalogue::default();
    let mut shipped: Vec<String> = Shipped::iter().map(|n| n.into_owned()).collect();
    shipped.sort();
    for file in shipped {
        let Some(id) = file.strip_suffix(".toml") else { continue };
        let Some(data) = Shipped::get(&file) else { continue };
        match parse(id, &String::from_utf8_lossy(&data.data), true) {
            Ok(p) => cat.profiles.push(p),
            // A shipped file is checked by the tests; say so if one slips.
            Err(e) => cat.problems.push(format!("shipped profile {file}: {e}")),
        }
    }
    load_user(&home.root().join(DIR), &mut cat);
    cat
}

fn load_user(dir: &Path, cat: &mut Catalogue) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            cat.problems.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    for path in files {
        let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".toml"))
        else {
            continue;
        };
        if !valid_id(id) {
            cat.problems.push(format!(
                "{}: a profile's file name is 1–40 characters of a-z, 0-9, '-' and '_', then .toml",
                path.display()
            ));
            continue;
        }
        let parsed = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(id, &text, false));
        match parsed {
            Ok(p) => match cat.profiles.iter_mut().find(|q| q.id == p.id) {
                Some(q) => *q = p,
                None => cat.profiles.push(p),
            },
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "profile left out");
                cat.problems.push(format!("{}: {e}", path.display()));
            }
        }
    }
}

/// What the session's profile sets for the tool loop. Rebuilt when
/// `switch_profile` changes it mid-turn.
#[derive(Debug, Clone)]
pub struct TurnSetup {
    pub profile: Option<Profile>,
    pub tools: Vec<ToolSpec>,
    pub system: String,
    pub max_rounds: usize,
    pub temperature: Option<f64>,
}

impl TurnSetup {
    /// `all_tools` is every tool the mode allows; `base_system` the
    /// prompt before any profile addition; `default_rounds` the chat's
    /// own cap.
    pub fn new(
        profile: Option<Profile>,
        cat: &Catalogue,
        all_tools: &[ToolSpec],
        base_system: &str,
        default_rounds: usize,
    ) -> TurnSetup {
        let mut tools: Vec<ToolSpec> = all_tools
            .iter()
            .filter(|t| allows(profile.as_ref(), &t.name))
            .cloned()
            .collect();
        if cat.profiles.len() > 1 {
            tools.push(switch_spec(cat, profile.as_ref().map_or("", |p| p.id.as_str())));
        }
        let mut system = base_system.to_string();
        if let Some(p) = &profile {
            system.push_str(&format!("\n\nProfile for this conversation: {}.", p.name));
            if !p.system_prompt.is_empty() {
                system.push('\n');
                system.push_str(&p.system_prompt);
            }
        }
        TurnSetup {
            max_rounds: profile
                .as_ref()
                .and_then(|p| p.max_tool_rounds)
                .unwrap_or(default_rounds),
            temperature: profile.as_ref().and_then(|p| p.temperature),
            profile,
            tools,
            system,
        }
    }

    /// Whether the model may call `name` now.
    pub fn offers(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Whether the profile leaves out `name`, one of Jarvis's tools (an
    /// unknown name is the dispatcher's to answer; no profile withholds
    /// nothing).
    pub fn withholds(&self, name: &str) -> bool {
        self.profile.is_some() && TOOL_NAMES.contains(&name) && !self.offers(name)
    }

    pub fn planning(&self) -> bool {
        self.profile.as_ref().is_some_and(|p| p.planning)
    }
}

/// Whether `profile` lets the model use `name` (no profile: everything).
pub fn allows(profile: Option<&Profile>, name: &str) -> bool {
    name == OWN_KNOWLEDGE
        || match profile.and_then(|p| p.tools.as_ref()) {
            Some(list) => list.iter().any(|t| t == name),
            None => true,
        }
}

/// The `switch_profile` tool: the profiles other than `current`, each
/// with what it is for.
pub fn switch_spec(cat: &Catalogue, current: &str) -> ToolSpec {
    let others: Vec<&Profile> = cat.profiles.iter().filter(|p| p.id != current).collect();
    let ids: Vec<&str> = others.iter().map(|p| p.id.as_str()).collect();
    let listing: Vec<String> = others
        .iter()
        .map(|p| format!("`{}` ({}): {}", p.id, p.name, p.description))
        .collect();
    ToolSpec {
        name: SWITCH_TOOL.into(),
        description: format!(
            "Switch this conversation to another profile when the user's request clearly belongs to it; its tools and instructions apply from your next step. Profiles: {}",
            listing.join("; ")
        ),
        parameters: json!({"type": "object", "properties": {
            "profile": {"type": "string", "enum": ids, "description": "the profile's id"}
        }, "required": ["profile"]}),
    }
}

/// The profile a `switch_profile` call names, or what to tell the model.
pub fn switch_target<'c>(cat: &'c Catalogue, args: &Value) -> Result<&'c Profile, String> {
    let id = args.get("profile").and_then(Value::as_str).unwrap_or("").trim();
    cat.get(id).ok_or_else(|| {
        let ids: Vec<&str> = cat.profiles.iter().map(|p| p.id.as_str()).collect();
        format!("no profile `{id}` — the profiles are: {}", ids.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({}),
        }
    }

    #[test]
    fn the_shipped_profiles_parse_and_name_only_real_tools() {
        let t = tempfile::tempdir().unwrap();
        let cat = load(&JarvisHome::at(t.path()));
        assert!(cat.problems.is_empty(), "{:?}", cat.problems);
        let ids: Vec<&str> = cat.profiles.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["librarian", "research", "writing"]);
        assert!(cat.profiles.iter().all(|p| p.builtin && !p.system_prompt.is_empty()));
    }

    #[test]
    fn a_user_file_replaces_a_shipped_one_and_a_bad_one_is_reported() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join(DIR);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("research.toml"), "name = \"Mine\"\nplanning = false\n").unwrap();
        std::fs::write(dir.join("cook.toml"), "name = \"Cook\"\ntools = [\"search_kb\"]\n").unwrap();
        std::fs::write(dir.join("typo.toml"), "name = \"T\"\nplaning = true\n").unwrap();
        std::fs::write(dir.join("ghost.toml"), "name = \"G\"\ntools = [\"rm_rf\"]\n").unwrap();
        let cat = load(&JarvisHome::at(t.path()));
        let r = cat.get("research").unwrap();
        assert_eq!((r.name.as_str(), r.planning, r.builtin), ("Mine", false, false));
        assert!(cat.get("cook").is_some());
        assert_eq!(cat.problems.len(), 2, "{:?}", cat.problems);
        assert!(cat.problems.iter().any(|p| p.contains("planing")));
        assert!(cat.problems.iter().any(|p| p.contains("rm_rf")));
    }

    #[test]
    fn a_profile_cuts_the_tool_list_and_adds_its_prompt_and_cap() {
        let t = tempfile::tempdir().unwrap();
        let cat = load(&JarvisHome::at(t.path()));
        let all = [spec("search_kb"), spec("remove_document"), spec(OWN_KNOWLEDGE)];
        let writing = cat.get("writing").cloned();
        let s = TurnSetup::new(writing, &cat, &all, "BASE", 12);
        let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["search_kb", OWN_KNOWLEDGE, SWITCH_TOOL]);
        assert!(!s.offers("remove_document") && s.withholds("remove_document"));
        assert!(!s.withholds("no_such_tool"), "the dispatcher names an unknown tool");
        assert!(s
            .system
            .starts_with("BASE\n\nProfile for this conversation: Writing partner."));
        assert_eq!((s.max_rounds, s.temperature, s.planning()), (8, Some(0.7), false));
        let none = TurnSetup::new(None, &cat, &all, "BASE", 12);
        assert!(none.offers("remove_document") && none.system == "BASE" && none.max_rounds == 12);
        assert!(!none.withholds("index_vault"), "no profile, no cut");
        let switch = none.tools.last().unwrap();
        assert_eq!(
            switch.parameters["properties"]["profile"]["enum"],
            json!(["librarian", "research", "writing"])
        );
        assert_eq!(
            switch_target(&cat, &json!({"profile": "librarian"})).unwrap().name,
            "Librarian"
        );
        assert!(switch_target(&cat, &json!({"profile": "nope"}))
            .unwrap_err()
            .contains("librarian, research, writing"));
    }
}
