//! `jarvis profiles` and `jarvis commands`: what `jarvis ask --profile ID`
//! and a `/name …` question can name, from the terminal (the web app shows
//! the same lists in its new-chat picker and its slash menu).
//!
//! Reads the chat's own catalogues (`chat::profiles`, `chat::commands`) and
//! renders them; decides nothing about them. Untrusted text from the files
//! (names, descriptions) is printed with control characters replaced, so a
//! file cannot drive the terminal.

use std::process::ExitCode;

use serde_json::json;

use crate::chat::commands::{self, BUILTINS};
use crate::chat::profiles;
use crate::paths::JarvisHome;

/// One line of a file's text for the terminal: control characters shown as
/// spaces, runs of space collapsed.
fn plain(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn run_profiles(json: bool, home: &JarvisHome) -> anyhow::Result<ExitCode> {
    let cat = profiles::load(home);
    if json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&cat)?))?;
    } else {
        let mut out = String::new();
        if cat.profiles.is_empty() {
            out.push_str("no profiles\n");
        }
        let width = cat.profiles.iter().map(|p| p.id.chars().count()).max().unwrap_or(0);
        for p in &cat.profiles {
            let mut extras = Vec::new();
            if let Some(m) = &p.model {
                extras.push(format!("model {}", plain(m)));
            }
            // The names are in `--json`; a count keeps the line readable.
            if let Some(tools) = &p.tools {
                extras.push(format!("{} tools", tools.len()));
            }
            if p.planning {
                extras.push("plans first".into());
            }
            extras.push(if p.builtin { "shipped" } else { "yours" }.into());
            out.push_str(&format!(
                "{:<width$}  {} — {}  [{}]\n",
                plain(&p.id),
                plain(&p.name),
                plain(&p.description),
                extras.join("; ")
            ));
        }
        super::emit(&out)?;
        eprintln!(
            "use one with `jarvis ask --profile ID \"…\"`; yours live in {}",
            home.root().join(profiles::DIR).display()
        );
    }
    for problem in &cat.problems {
        eprintln!("warning: {}", plain(problem));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_commands(json: bool, home: &JarvisHome) -> anyhow::Result<ExitCode> {
    let custom = commands::list(home)?;
    if json {
        let builtins: Vec<_> = BUILTINS
            .iter()
            .map(|(name, what)| json!({ "name": name, "description": what }))
            .collect();
        let doc = json!({ "builtin": builtins, "custom": custom });
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::from("In the web app's composer:\n");
    for (name, what) in BUILTINS {
        out.push_str(&format!("  /{name}  {what}\n"));
    }
    out.push_str("Yours (also in `jarvis ask \"/name …\"`):\n");
    if custom.is_empty() {
        out.push_str("  none yet — create one with /commands in the web app\n");
    }
    for c in &custom {
        let call = match plain(&c.hint) {
            h if h.is_empty() => format!("/{}", plain(&c.name)),
            h => format!("/{} {h}", plain(&c.name)),
        };
        let mut extras = Vec::new();
        if !c.model.is_empty() {
            extras.push(format!("model {}", plain(&c.model)));
        }
        if !c.profile.is_empty() {
            extras.push(format!("profile {}", plain(&c.profile)));
        }
        if c.shadowed {
            extras.push("never runs: a built-in has its name".into());
        }
        let extras = if extras.is_empty() {
            String::new()
        } else {
            format!("  [{}]", extras.join("; "))
        };
        out.push_str(&format!("  {call}  {}{extras}\n", plain(&c.description)));
    }
    super::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
