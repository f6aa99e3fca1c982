//! Facts through their whole life on a real store: proposal, review,
//! events in the log, undo, privacy in the summary and search, the
//! Markdown round trip, and the extraction's reading of an answer.

use super::*;
use crate::embed::registry::{lookup, DEFAULT_MODEL_ID};
use crate::kb::undo::LogQuery;
use crate::kb::{EventKind, KbSettings};

/// A knowledge base that never loads a model: memory never embeds.
fn open_kb(dir: &std::path::Path) -> Kb {
    let spec = lookup(DEFAULT_MODEL_ID).unwrap().clone();
    let loader: crate::kb::EmbedderLoader = Box::new(|| Err("memory must not embed".into()));
    Kb::open_lazy(dir, spec, loader, None, KbSettings::default()).unwrap()
}

fn from(session: &str, private: bool) -> Provenance {
    Provenance {
        origin: "remember".into(),
        session: Some(session.into()),
        message: Some(2),
        at: crate::kb::stage::now_iso(),
        private,
    }
}

fn agent() -> Actor {
    Actor::Agent {
        session: "s-1".into(),
        token: None,
    }
}

fn kinds(kb: &Kb) -> Vec<(EventKind, Option<u64>)> {
    kb.timeline(&LogQuery::default())
        .unwrap()
        .into_iter()
        .map(|r| (r.event.kind, r.event.undo_of))
        .collect()
}

fn kinds_first_id(kb: &Kb) -> u64 {
    kb.timeline(&LogQuery::default()).unwrap()[0].event.id
}

#[test]
fn a_proposal_waits_and_only_an_accepted_fact_is_summarised_and_logged() {
    let t = tempfile::tempdir().unwrap();
    let kb = open_kb(t.path());
    let m = Memory::new(&kb, &MemorySettings::default());
    let f = m
        .propose(
            &FactDraft::new("Preference", "editor", "Uses  Neovim\nwith LazyVim."),
            from("s-1", false),
            &agent(),
        )
        .unwrap();
    assert_eq!(f.status, FactStatus::Pending);
    assert_eq!(
        (f.category.as_str(), f.text.as_str()),
        ("preference", "Uses Neovim with LazyVim.")
    );
    assert!(summary(&m, false).unwrap().is_none(), "a pending fact is never shown");
    assert!(kinds(&kb).is_empty(), "a proposal is no change to the user's data");
    // The same statement again is the same proposal.
    let again = m
        .propose(
            &FactDraft::new("preference", "", "uses neovim with lazyvim."),
            from("s-2", false),
            &agent(),
        )
        .unwrap();
    assert_eq!(again.id, f.id);

    let edited = FactDraft::new("preference", "editor", "Uses Neovim (LazyVim) for everything.");
    let a = m.accept(f.id, Some(&edited), &Actor::Web).unwrap();
    assert!(a.accepted());
    let s = summary(&m, false).unwrap().unwrap();
    assert!(s.text.starts_with(SUMMARY_HEADING), "{}", s.text);
    assert!(s.text.contains("Uses Neovim (LazyVim) for everything."), "{}", s.text);
    assert_eq!(s.facts, vec![f.id]);
    let rows = kb.timeline(&LogQuery::default()).unwrap();
    assert_eq!(rows[0].event.kind, EventKind::MemoryAccepted);
    assert_eq!(rows[0].event.actor, Actor::Web);
    assert_eq!(
        rows[0].event.title, "preference: editor",
        "the log names the fact, never its text"
    );
    assert!(kb.audit().unwrap().ok(), "{:?}", kb.audit().unwrap());

    // A rejected proposal is gone without a trace in the log.
    let r = m
        .propose(
            &FactDraft::new("person", "boss", "Reports to Dana."),
            from("s-1", false),
            &agent(),
        )
        .unwrap();
    m.reject(r.id).unwrap();
    assert!(m.list().unwrap().iter().all(|x| x.id != r.id));
    assert_eq!(kinds(&kb).len(), 1);
    assert!(m.reject(f.id).is_err(), "an accepted fact is forgotten, not rejected");
}

#[test]
fn forgetting_is_an_event_undo_brings_the_fact_back_and_the_audit_agrees() {
    let t = tempfile::tempdir().unwrap();
    let kb = open_kb(t.path());
    let m = Memory::new(
        &kb,
        &MemorySettings {
            auto_accept: true,
            ..MemorySettings::default()
        },
    );
    let f = m
        .propose(
            &FactDraft::new("project", "thesis", "Writes a thesis on protein folding."),
            from("s-1", false),
            &agent(),
        )
        .unwrap();
    assert!(f.accepted(), "auto_accept skips the wait");
    let e = m
        .edit(
            f.id,
            &FactDraft::new("project", "thesis", "Writes a thesis on RNA folding."),
            &Actor::Cli,
        )
        .unwrap();
    assert_eq!(e.text, "Writes a thesis on RNA folding.");
    m.forget(f.id, &Actor::Cli).unwrap();
    assert!(summary(&m, false).unwrap().is_none());
    assert!(
        search(&m, "thesis", false, 5).unwrap().is_empty(),
        "forgotten is gone from search"
    );
    assert_eq!(
        kinds(&kb),
        vec![
            (EventKind::MemoryForgotten, None),
            (EventKind::MemoryEdited, None),
            (EventKind::MemoryAccepted, None)
        ]
    );
    assert!(kb.audit().unwrap().ok());

    let done = kb.undo(None, &Actor::Cli).unwrap();
    assert_eq!(done.of.kind, EventKind::MemoryForgotten);
    let back = m.get(f.id).unwrap();
    assert_eq!(back, e, "the forgotten fact is back byte for byte");
    assert!(summary(&m, false).unwrap().unwrap().text.contains("RNA folding"));
    assert_eq!(kinds(&kb)[0], (EventKind::MemoryAccepted, Some(done.of.id)));
    assert!(kb.audit().unwrap().ok(), "{:?}", kb.audit().unwrap());

    // The edit cannot be undone past the later undo's event; the undo can.
    let edit_event = kb.timeline(&LogQuery::default()).unwrap()[2].event.id;
    assert!(kb.undo(Some(edit_event), &Actor::Cli).is_err());

    // A fact changed behind the log's back is found, naming its last event.
    let mut tampered = back.clone();
    tampered.text = "changed behind the log".into();
    {
        let _armed = crate::failpoint::arm_for_thread("log_skipped");
        kb.store().put_fact(tampered, &kb.cause(&Actor::Jarvis)).unwrap();
    }
    let audit = kb.audit().unwrap();
    assert_eq!(audit.differing.len(), 1, "{audit:?}");
    assert_eq!(audit.differing[0].key, crate::store::fact_key(f.id));
    assert_eq!(audit.first_differing_event, Some(kinds_first_id(&kb)));
}

#[test]
fn private_facts_stay_out_of_what_a_cloud_model_sees() {
    let t = tempfile::tempdir().unwrap();
    let kb = open_kb(t.path());
    let m = Memory::new(
        &kb,
        &MemorySettings {
            auto_accept: true,
            ..MemorySettings::default()
        },
    );
    m.propose(
        &FactDraft::new("work", "lab", "Works in the Hargreaves lab."),
        from("p", true),
        &agent(),
    )
    .unwrap();
    m.propose(
        &FactDraft::new("work", "field", "Studies lab automation."),
        from("q", false),
        &agent(),
    )
    .unwrap();
    let local = summary(&m, false).unwrap().unwrap();
    assert_eq!(local.facts.len(), 2);
    let cloud = summary(&m, true).unwrap().unwrap();
    assert_eq!(cloud.facts.len(), 1);
    assert!(!cloud.text.contains("Hargreaves"));
    assert!(search(&m, "lab", true, 10).unwrap().iter().all(|f| !f.private()));
    assert_eq!(search(&m, "lab", false, 10).unwrap().len(), 2);
    // The private fact's event is left out of a cloud model's view of the log.
    let public = kb
        .timeline(&LogQuery {
            public_only: true,
            ..LogQuery::default()
        })
        .unwrap();
    assert_eq!(public.len(), 1);
}

#[test]
fn the_summary_keeps_to_its_budget_newest_first() {
    let t = tempfile::tempdir().unwrap();
    let kb = open_kb(t.path());
    let m = Memory::new(
        &kb,
        &MemorySettings {
            auto_accept: true,
            summary_tokens: 90,
        },
    );
    for i in 0..6 {
        m.propose(
            &FactDraft::new(
                "project",
                &format!("p{i}"),
                &format!("Project number {i} is about topic {i}."),
            ),
            from("s", false),
            &agent(),
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let s = summary(&m, false).unwrap().unwrap();
    assert!(s.text.chars().count().div_ceil(4) <= 90 + 20, "{}", s.text);
    assert!(s.left_out > 0 && !s.facts.is_empty(), "{s:?}");
    assert!(s.text.contains("topic 5"), "the newest fact comes first: {}", s.text);
    assert!(s.text.contains("memory_search finds them"));
}

#[test]
fn markdown_export_and_import_round_trip() {
    let t = tempfile::tempdir().unwrap();
    let kb = open_kb(t.path());
    let m = Memory::new(
        &kb,
        &MemorySettings {
            auto_accept: true,
            ..MemorySettings::default()
        },
    );
    m.propose(
        &FactDraft::new("preference", "answers", "Prefers short answers."),
        from("s-1", false),
        &agent(),
    )
    .unwrap();
    m.propose(
        &FactDraft::new("person", "advisor", "Advisor is Prof. Ito."),
        from("s-2", true),
        &agent(),
    )
    .unwrap();
    let md = markdown::export(&m).unwrap();
    assert!(md.starts_with(markdown::TITLE));
    assert!(md.contains("## person\n\n- **advisor**: Advisor is Prof. Ito. <!-- id=2 private=true origin=remember session=s-2 message=2"), "{md}");

    let t2 = tempfile::tempdir().unwrap();
    let kb2 = open_kb(t2.path());
    let m2 = Memory::new(&kb2, &MemorySettings::default());
    let edited = format!("{md}\n## tools\n\n- Uses Zotero for references.\n");
    let r = markdown::import(&m2, &edited, &Actor::Cli).unwrap();
    assert_eq!((r.added, r.changed, r.unchanged), (3, 0, 0), "{r:?}");
    let facts = m2.list().unwrap();
    assert!(facts.iter().all(|f| f.accepted()), "an import is the user's own word");
    let ito = facts.iter().find(|f| f.key == "advisor").unwrap();
    assert!(ito.private(), "provenance travels with the fact");
    let zotero = facts.iter().find(|f| f.category == "tools").unwrap();
    assert!(zotero.private(), "no provenance reads as private");
    assert_eq!(zotero.key, "Uses Zotero for references.");
    // Importing the same file again changes nothing; an edited text is an edit.
    let again = markdown::import(&m2, &edited, &Actor::Cli).unwrap();
    assert_eq!((again.added, again.changed, again.unchanged), (0, 0, 3));
    let changed = edited.replace("Prefers short answers.", "Prefers short answers with sources.");
    let r = markdown::import(&m2, &changed, &Actor::Cli).unwrap();
    assert_eq!(r.changed, 1);
    assert!(kb2.audit().unwrap().ok());
}

#[test]
fn the_extraction_answer_is_read_tolerantly() {
    let a = "Here you go:\n```json\n[{\"category\":\"project\",\"key\":\"grant\",\"text\":\"Writes an ERC grant due in May.\"},{\"category\":\"x\",\"key\":\"y\",\"text\":\"\"}]\n```";
    let got = extract::parse(a);
    assert_eq!(
        got,
        vec![FactDraft::new("project", "grant", "Writes an ERC grant due in May.")]
    );
    assert!(extract::parse("[]").is_empty());
    assert!(extract::parse("nothing to remember").is_empty());
    assert!(extract::parse("[not json").is_empty());
}

#[test]
fn drafts_are_cleaned_and_bad_ones_named() {
    assert!(FactDraft::new("", "", "  ").clean().is_err());
    let long = "x".repeat(MAX_TEXT + 1);
    let e = FactDraft::new("a", "b", &long).clean().unwrap_err().to_string();
    assert!(e.contains("at most"), "{e}");
    assert!(FactDraft::new("a", "b", "ends a comment -->").clean().is_err());
    let d = FactDraft::new("", "", "Lives in Lisbon since 2020.").clean().unwrap();
    assert_eq!(
        (d.category.as_str(), d.key.as_str()),
        ("other", "Lives in Lisbon since")
    );
}
