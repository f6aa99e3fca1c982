//! The answer eval end to end on the stand-in model (what `cargo xtask eval
//! answers` runs in CI): four questions over the chat fixture's vault,
//! every figure worked out by hand from what the stand-in does.

use std::sync::Arc;

use jarvis::chat::eval::{parse_questions, run, score, RunOptions};
use jarvis::chat::tools::{ToolDeps, VaultSettings};
use jarvis::chat::{ChatAgent, ChatDeps, ChatSettings, SessionStore};
use jarvis::paths::JarvisHome;

use crate::support::answer_standin::{StandInSource, STAND_IN_SPEC};
use crate::support::chat::{fixture, NOTES};

const QUESTIONS: &str = r#"
[[question]]
id = "pasta"
question = "How many minutes should pasta boil in salted water?"
gold = ["cooking/pasta.md"]

[[question]]
id = "budget"
question = "When is the quarterly budget review?"
gold = ["work/budget.md"]

# Nothing in the vault shares two words with it: the stand-in abstains.
[[question]]
id = "passport"
question = "How do I renew a Norwegian passport?"
not_in_library = true

# Shares "budget", "pasta" and "dinners" with the pasta note: the stand-in
# cites it although the vault does not answer the question.
[[question]]
id = "lawyer-dinners"
question = "What budget did the lawyer set for pasta dinners?"
not_in_library = true
"#;

#[test]
fn the_answer_eval_scores_the_stand_in_as_worked_out_by_hand() {
    let fx = fixture(NOTES);
    let agent = ChatAgent::new(ChatDeps {
        tools: ToolDeps {
            kb: fx.kb.clone(),
            vault: VaultSettings {
                root: Some(fx.vault.clone()),
                private_dirs: vec!["private".into()],
            },
            papers: None,
            mcp: None,
            drafts: None,
        },
        // Every second answer that cites also makes a marker up.
        providers: Arc::new(StandInSource::new(2)),
        home: JarvisHome::at(fx.sb.jarvis_home()),
        sessions: SessionStore::new(fx.sb.jarvis_home().join("sessions")),
        settings: ChatSettings::default(),
    });
    let questions = parse_questions(QUESTIONS).unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let outcomes = run(
        &agent,
        &questions,
        &RunOptions {
            spec: STAND_IN_SPEC.into(),
            kb_only: true,
        },
        &|i, o| seen.lock().unwrap().push((i, o.id.clone())),
    )
    .unwrap();
    assert_eq!(seen.into_inner().unwrap().len(), 4, "progress hears every question");
    let by = |id: &str| outcomes.iter().find(|o| o.id == id).unwrap();
    assert_eq!(by("pasta").cited, vec!["cooking/pasta.md".to_string()]);
    assert_eq!(by("budget").cited, vec!["work/budget.md".to_string()]);
    assert_eq!(by("budget").unsupported, 1, "the second citing answer made one up");
    assert!(by("passport").cited.is_empty());
    assert_eq!(by("lawyer-dinners").cited, vec!["cooking/pasta.md".to_string()]);
    assert!(by("pasta").fetched.contains(&"cooking/pasta.md".to_string()));
    assert!(
        outcomes.iter().all(|o| o.error.is_none() && o.rounds == 2),
        "{outcomes:?}"
    );

    let r = score(&questions, &outcomes);
    assert_eq!((r.answerable, r.not_in_library, r.failed), (2, 2, 0));
    assert_eq!(r.retrieval_recall, Some(1.0), "both searches fetched the gold note");
    assert_eq!(r.citation_precision, Some(1.0), "both answers cite their gold note");
    assert_eq!(r.unsupported_rate, Some(0.25), "1 made up of 4 markers");
    assert_eq!(
        r.abstention_accuracy,
        Some(0.5),
        "passport abstained, lawyer-dinners did not"
    );
    assert_eq!(r.answered_rate, Some(1.0));
    assert_eq!((r.rounds_mean, r.rounds_max), (2.0, 2));
    // Each question's session is gone again: nothing leaks between them.
    assert!(agent.list().unwrap().is_empty());
    assert!(fx.kb.ids_where("doc_type", "chat").unwrap_or_default().is_empty());
}
