//! `jarvis profiles` and `jarvis commands`: what `jarvis ask --profile ID`
//! and a `/name …` question can name, from the terminal (the web app shows
//! the same lists in its new-chat picker and its slash menu).
//!
//! Reads the chat's own catalogues (`chat::profiles`, `chat::commands`) and
//! renders them; decides nothing about them. Untrusted text from the files
//! (names, descriptions) goes through `kb::search::one_line`, as a note's
//! text does, so a file cannot drive the terminal.

use std::process::ExitCode;

use serde_json::json;

use crate::chat::commands::{self, BUILTINS};
use crate::chat::profiles;
use crate::paths::JarvisHome;

use super::kb::one_line;

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
                extras.push(format!("model {}", one_line(m)));
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
                one_line(&p.id),
                one_line(&p.name),
                one_line(&p.description),
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
        eprintln!("warning: {}", one_line(problem));
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
        let call = match one_line(&c.hint) {
            h if h.is_empty() => format!("/{}", one_line(&c.name)),
            h => format!("/{} {h}", one_line(&c.name)),
        };
        let mut extras = Vec::new();
        if !c.model.is_empty() {
            extras.push(format!("model {}", one_line(&c.model)));
        }
        if !c.profile.is_empty() {
            extras.push(format!("profile {}", one_line(&c.profile)));
        }
        if c.shadowed {
            extras.push("never runs: a built-in has its name".into());
        }
        let extras = if extras.is_empty() {
            String::new()
        } else {
            format!("  [{}]", extras.join("; "))
        };
        out.push_str(&format!("  {call}  {}{extras}\n", one_line(&c.description)));
    }
    super::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
