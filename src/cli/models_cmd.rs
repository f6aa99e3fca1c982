//! `jarvis models`: the switchable model catalogue — from config, plus the
//! models the configured Ollama server has installed (one short request).

use std::process::ExitCode;

use crate::app::llm::{llm_settings, model_catalogue};
use crate::config::Config;
use crate::llm::catalogue::format_catalogue;

pub fn run(json: bool, config: &Config) -> anyhow::Result<ExitCode> {
    let settings = llm_settings(config);
    let (entries, note) = model_catalogue(config, &settings.provider);
    if json {
        super::emit(&format!("{}\n", serde_json::to_string_pretty(&entries)?))?;
    } else {
        super::emit(&format_catalogue(&entries))?;
        if let Some(why) = note {
            eprintln!("note: installed Ollama models are not listed: {why}");
        }
        if config.servers.is_empty() {
            eprintln!(
                "add an OpenAI-compatible server (llama.cpp, LM Studio, vLLM) with `jarvis config set servers.NAME.base_url URL`"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
