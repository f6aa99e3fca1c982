//! `memory_extract`: every few minutes, the chat sessions idle for
//! `memory.idle_minutes` that no pass has read are read once each by a
//! model that proposes facts about the user for review. Not registered
//! when `memory.idle_minutes` is 0.
//! Must not: read sessions, call a model or write facts itself — the body
//! is the application's ([`super::JobDeps::extract_memories`]) — or accept
//! anything: the pass only proposes.

use super::{blocking, JobCtx, JobError, JobReport};
use crate::cancel::Cancel;

pub async fn run(ctx: &JobCtx, cancel: Cancel) -> Result<JobReport, JobError> {
    cancel.check().map_err(|_| JobError::Cancelled)?;
    let deps = ctx.deps.clone();
    let done = blocking(move || deps.extract_memories(&cancel)).await?;
    Ok(if done.sessions == 0 && done.private_skipped == 0 {
        JobReport::skipped("no chat session idle and unread")
    } else {
        let mut line = format!(
            "read {} idle session{}, proposed {} fact{} for review",
            done.sessions,
            if done.sessions == 1 { "" } else { "s" },
            done.proposed,
            if done.proposed == 1 { "" } else { "s" }
        );
        if done.private_skipped > 0 {
            line.push_str(&format!(
                "; {} private session{} left alone (the extraction model is a cloud one)",
                done.private_skipped,
                if done.private_skipped == 1 { "" } else { "s" }
            ));
        }
        JobReport::done(line)
    })
}
