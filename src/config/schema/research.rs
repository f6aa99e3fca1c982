//! The `[research]` rows of the settings table: the limits of a research
//! report (`jarvis research`, the web app's Research switch). The reasons
//! for each default are on the constants in `chat::research`.

use super::{Default, Field, Kind};

pub const FIELDS: &[Field] = &[
    field!(
        "research",
        "sub_questions",
        None,
        Kind::Int { min: 1, max: 12 },
        Default::Int(4),
        "most sub-questions a research question is split into (one sub-agent each)"
    ),
    field!(
        "research",
        "concurrency",
        None,
        Kind::Int { min: 1, max: 8 },
        Default::Int(2),
        "sub-agents running at once; a local server answers one request at a time unless told otherwise"
    ),
    field!(
        "research",
        "rounds",
        None,
        Kind::Int { min: 1, max: 20 },
        Default::Int(4),
        "tool rounds one sub-agent may take before it must answer"
    ),
    field!(
        "research",
        "max_tokens",
        None,
        Kind::Int {
            min: 1000,
            max: 100_000_000
        },
        Default::Int(250_000),
        "tokens (in and out) one research may use; past it no further sub-agent starts"
    ),
    field!(
        "research",
        "max_cost_cents",
        None,
        Kind::Int { min: 0, max: 100_000 },
        Default::Int(50),
        "spend (US cents) one research may reach on a priced model; past it no further sub-agent starts"
    ),
    field!(
        "research",
        "timeout_secs",
        None,
        Kind::Int { min: 30, max: 86_400 },
        Default::Int(1800),
        "wall-clock budget of one research: the plan, every sub-agent and the report"
    ),
];
