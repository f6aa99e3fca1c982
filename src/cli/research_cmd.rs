//! `jarvis research "…"`'s progress lines. The command itself is `jarvis
//! ask`'s (`ask_cmd::run_as`): the same session, stop and output rules,
//! with the turn run as a research report.
//! Must not: decide anything about the run — it only prints the events.

use crate::chat::research::{AgentState, ResearchEvent};

use super::term::Term;

/// One progress event on stderr.
pub fn progress(t: &dyn Term, e: &ResearchEvent) {
    match e {
        ResearchEvent::Plan { questions } => {
            let mut s = format!("plan: {} sub-question{}\n", questions.len(), plural(questions.len()));
            for (i, q) in questions.iter().enumerate() {
                s.push_str(&format!("  {}. {q}\n", i + 1));
            }
            t.err(&s);
        }
        ResearchEvent::Agent { index, state } => {
            let n = index + 1;
            match state {
                AgentState::Queued => {}
                AgentState::Running => t.err(&format!("[{n}] searching…\n")),
                AgentState::Done { passages, cited } => t.err(&format!(
                    "[{n}] done: cites {cited} of {passages} passage{}\n",
                    plural(*passages)
                )),
                AgentState::Empty => t.err(&format!("[{n}] found nothing to cite\n")),
                AgentState::Private => t.err(&format!(
                    "[{n}] only private notes match, and this model is a cloud one: skipped\n"
                )),
                AgentState::Budget => t.err(&format!(
                    "[{n}] not run: the research's token or spend budget is reached\n"
                )),
                AgentState::Failed { message } => t.err(&format!("[{n}] failed: {message}\n")),
            }
        }
        ResearchEvent::Tool { index, name, summary } => t.err(&format!("[{}] → {name}({summary})\n", index + 1)),
        ResearchEvent::Writing => t.err("writing the report…\n"),
        ResearchEvent::Report {
            draft_id,
            filename,
            suggested,
            ..
        } => t.err(&if *suggested {
            format!("\nreport: draft {draft_id} ({filename}), a suggested change to review in the web app's editor\n")
        } else {
            format!("\nreport: draft {draft_id} ({filename})\n")
        }),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
