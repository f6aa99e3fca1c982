//! The planning phase: before the tool loop of a session whose profile has
//! planning on, one quick model call decides whether the request needs a
//! plan, and writes it if so.
//!
//! Owns: the planning request (the question and the tools on offer, no
//! tools attached, a small output cap), reading its answer (`DIRECT`, or
//! no numbered steps, means no plan), and how the plan is put before the
//! model (a block of the turn's system prompt).
//! Must not: fail a turn — a planning call that errs is logged and the
//! turn goes on without a plan (a stop still stops); or keep the plan in
//! the transcript (it is this turn's, shown to the human as its own card).

use crate::cancel::Cancel;
use crate::llm::{CallError, ChatProvider, Message, ToolSpec};

/// Output cap of the planning call: a plan is a handful of short lines.
const PLAN_MAX_TOKENS: u32 = 400;

/// Most steps kept from a plan.
const MAX_STEPS: usize = 8;

/// The instruction the planning call sends with the question.
pub fn planning_prompt(question: &str, tools: &[ToolSpec]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "You are about to answer a request using these tools: {}.\n\
         Decide first whether it needs a plan. If it is simple (a greeting, one lookup, one fact, a short follow-up), reply with the single word DIRECT and nothing else.\n\
         Otherwise reply with a numbered plan of 2 to {MAX_STEPS} short steps (one line each, naming the tool a step uses), and nothing else.\n\n\
         Request:\n{question}",
        names.join(", ")
    )
}

/// The numbered steps of an answer, or `None` for `DIRECT` or an answer
/// with no numbered steps (a model that answered the question instead).
pub fn parse_plan(answer: &str) -> Option<String> {
    let a = answer.trim();
    if a.is_empty()
        || a.trim_start_matches(['*', '_', '`', ' '])
            .to_ascii_uppercase()
            .starts_with("DIRECT")
    {
        return None;
    }
    let steps: Vec<String> = a
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            let digits = l.chars().take_while(char::is_ascii_digit).count();
            let rest = &l[digits..];
            (digits > 0 && (rest.starts_with('.') || rest.starts_with(')'))).then(|| rest[1..].trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .take(MAX_STEPS)
        .collect();
    if steps.is_empty() {
        return None;
    }
    Some(
        steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}", i + 1))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Ask `provider` whether `question` needs a plan. `Ok(None)` is "answer
/// directly"; a failed call is logged and also `Ok(None)`; only a stop is
/// an error.
pub fn make_plan(
    provider: &dyn ChatProvider,
    question: &str,
    tools: &[ToolSpec],
    cancel: &Cancel,
) -> Result<Option<String>, crate::cancel::Cancelled> {
    let messages = [Message::user(planning_prompt(question, tools))];
    match provider.complete(&messages, PLAN_MAX_TOKENS, None, Some(cancel)) {
        Ok(answer) => Ok(parse_plan(&answer)),
        Err(CallError::Cancelled(c)) => Err(c),
        Err(CallError::Llm(e)) => {
            tracing::warn!(error = %e, "the planning call failed; answering without a plan");
            Ok(None)
        }
    }
}

/// The block the turn's system prompt carries when there is a plan.
pub fn plan_block(plan: &str) -> String {
    format!(
        "\n\nPlan for this request (you made it before starting; follow it, and change course when what the tools return calls for it):\n{plan}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_and_prose_mean_no_plan_and_steps_are_renumbered() {
        assert_eq!(parse_plan("DIRECT"), None);
        assert_eq!(parse_plan("  **DIRECT**\n"), None);
        assert_eq!(parse_plan("Pasta boils in nine minutes."), None);
        assert_eq!(
            parse_plan("Here is my plan:\n1. search_kb for budget notes\n2) read the newest with get_document\n\n5. compare and answer"),
            Some("1. search_kb for budget notes\n2. read the newest with get_document\n3. compare and answer".into())
        );
        let long: String = (1..=20).map(|i| format!("{i}. step\n")).collect();
        assert_eq!(parse_plan(&long).unwrap().lines().count(), MAX_STEPS);
    }
}
