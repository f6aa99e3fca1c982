//! `jarvis models`: the switchable model catalogue. Reads config only.

use std::process::ExitCode;

use crate::app::llm::llm_settings;
use crate::config::Config;
use crate::llm::catalogue::{format_catalogue, list_catalogue};

pub fn run(json: bool, config: &Config) -> anyhow::Result<ExitCode> {
    let settings = llm_settings(config);
    let entries = list_catalogue(&settings, &settings.provider);
    if json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&entries)?))?;
    } else {
        super::emit(&format_catalogue(&entries))?;
    }
    Ok(ExitCode::SUCCESS)
}
