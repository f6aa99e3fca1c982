//! The digest learns from votes: over a real knowledge base and the
//! bundled embedding model, ten votes move the library gate's order in the
//! direction of the votes, and the scoring prompt carries recent titles.

use jarvis::cancel::Cancel;
use jarvis::digest::feedback::{self, RunEntry, Vote};
use jarvis::digest::{gate, Candidate, Origin};
use time::macros::datetime;

use crate::support::chat::fixture;

/// A library about protein structure.
const LIBRARY: &[(&str, &str)] = &[
    (
        "research/folding.md",
        "# Protein folding\n\nNotes on protein structure prediction: AlphaFold, residue contact maps, folding energy landscapes and equivariant networks for protein structure.",
    ),
    (
        "research/design.md",
        "# Protein design\n\nDe novo protein design with diffusion models over backbone structure; sequence design for a target fold.",
    ),
];

fn cand(n: usize, title: &str) -> Candidate {
    Candidate {
        key: format!("arxiv:2412.{n:05}"),
        link: format!("https://arxiv.org/abs/2412.{n:05}"),
        title: title.into(),
        authors: vec!["Ada Example".into()],
        abstract_text: format!("We study {}.", title.to_lowercase()),
        date: "2026-12-05".into(),
        origin: Origin::Arxiv {
            id: format!("2412.{n:05}"),
            primary_category: None,
            pdf_url: None,
        },
        via: "arXiv q-bio".into(),
    }
}

fn entry(n: usize, title: &str) -> RunEntry {
    let c = cand(n, title);
    RunEntry {
        key: c.key,
        link: c.link,
        title: c.title,
        authors: "Ada Example".into(),
        abstract_text: c.abstract_text,
        score: 6,
        track: "other".into(),
        summary: String::new(),
        why: String::new(),
        tier: "skim".into(),
    }
}

/// This week: four papers on the library's topic (design-flavoured and
/// folding-flavoured) and four on protein biophysics in food science.
fn week() -> Vec<Candidate> {
    [
        "Diffusion models for de novo protein backbone design",
        "Sequence design for a target protein fold with inverse folding",
        "Equivariant networks for protein structure prediction",
        "Residue contact maps for protein folding landscapes",
        "Protein denaturation during coffee roasting",
        "Milk protein foams for espresso drinks",
        "Gluten protein networks in sourdough bread",
        "Egg white protein gels under sous-vide cooking",
    ]
    .iter()
    .enumerate()
    .map(|(i, t)| cand(100 + i, t))
    .collect()
}

#[test]
fn ten_votes_move_the_gate_towards_what_was_liked() {
    let fx = fixture(LIBRARY);
    let state = fx.sb.jarvis_home().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let none = feedback::Taste::default();
    // max = all of them: the gate then still ranks (the kept list is in
    // gate order) — make it rank by asking for one fewer than the week.
    let rank = |taste: &feedback::Taste| gate::rank(&fx.kb, week(), 7, false, taste, &Cancel::new()).unwrap();
    let before = rank(&none);

    // Ten votes: the user keeps adding and liking food-science protein
    // papers and turns down protein design.
    let now = datetime!(2026-12-05 10:00 UTC);
    let votes = [
        (1, "Maillard reaction proteins in roasted coffee beans", Vote::Added),
        (2, "Whey protein structure in cheese making", Vote::Up),
        (3, "Protein gelation in tofu coagulation", Vote::Up),
        (4, "Casein micelles and milk foam stability", Vote::Added),
        (5, "Wheat gluten proteins and dough rheology", Vote::Up),
        (6, "Egg protein coagulation temperatures in cooking", Vote::Up),
        (7, "Generative protein backbone design with diffusion", Vote::Down),
        (8, "Inverse folding for protein sequence design", Vote::Down),
        (9, "De novo binder design with deep learning", Vote::Down),
        (10, "Protein design benchmarks for generative models", Vote::Down),
    ];
    for (i, (n, title, vote)) in votes.iter().enumerate() {
        let at = now + time::Duration::minutes(i as i64);
        feedback::record_vote(&state, &entry(*n, title), *vote, at).unwrap();
    }
    let v = feedback::votes(&state).unwrap();
    assert_eq!(v.len(), 10);
    let taste = gate::taste(&fx.kb, &v).unwrap();
    assert!(!taste.is_empty());
    let after = rank(&taste);

    // The whole order: kept first (gate order), then what was set aside.
    let full = |g: &gate::Gated| -> Vec<String> {
        g.kept
            .iter()
            .map(|c| c.title.clone())
            .chain(g.dropped.iter().map(|(c, _)| c.title.clone()))
            .collect()
    };
    let (b, a) = (full(&before), full(&after));
    println!("gate order before the votes: {b:#?}");
    println!("gate order after ten votes:  {a:#?}");
    let pos = |list: &[String], t: &str| {
        list.iter()
            .position(|x| x.contains(t))
            .expect("every candidate is ranked")
    };
    let mean = |l: &[String], ts: &[&str]| ts.iter().map(|t| pos(l, t) as f64).sum::<f64>() / ts.len() as f64;
    let food = ["coffee", "espresso", "sourdough", "sous-vide"];
    let design = ["backbone design", "inverse folding"];
    assert!(
        mean(&a, &food) < mean(&b, &food),
        "food papers climb on average: {b:?} → {a:?}"
    );
    assert!(
        mean(&a, &design) > mean(&b, &design),
        "design papers fall on average: {b:?} → {a:?}"
    );
    // What is set aside is no longer a food paper.
    let aside = &after.dropped[0].0.title;
    assert!(!food.iter().any(|t| aside.contains(t)), "{aside}");

    // The scoring prompt sees the newest titles of each side.
    let p = feedback::prompt_examples(&v);
    assert!(p.contains("Protein design benchmarks for generative models"), "{p}");
    assert!(p.contains("Egg protein coagulation temperatures in cooking"), "{p}");
    // Five of the six liked (the newest), all four disliked.
    assert_eq!(p.matches("\n- ").count(), feedback::PROMPT_EXAMPLES + 4, "{p}");
    assert!(!p.contains("Maillard reaction"), "the oldest like is left out: {p}");
}
