//! The weekly digest against fake arXiv, bioRxiv and model servers on
//! loopback speaking the real formats, over a real knowledge base (fjall,
//! tantivy, arroy, the bundled embedding model) and real PDF conversion.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jarvis::cancel::Cancel;
use jarvis::digest::biorxiv::BiorxivSettings;
use jarvis::digest::score::{score_all, BatchLimits};
use jarvis::digest::{
    arxiv, biorxiv, schedule, state, Candidate, DigestDeps, DigestOptions, DigestSettings, Origin, SourceStatus,
};
use jarvis::index::Filter;
use jarvis::ingest::arxiv::{ArxivClient, ArxivSettings};
use jarvis::ingest::paper::{AddSettings, InProcessPdf};
use jarvis::llm::{make_provider, ChatProvider};
use time::macros::datetime;
use time::OffsetDateTime;

use crate::support::chat::fixture;
use crate::support::fakes::digest::*;
use crate::support::fakes::stand::{Answer, Stand};
use crate::support::fakes::wires::settings_for;
use crate::support::fs::pdf_fixture_bytes;
use crate::support::runtime::shared_pdfium;

fn client(url: &str, delay_ms: u64) -> ArxivClient {
    ArxivClient::new(ArxivSettings {
        api_base: url.into(),
        pdf_base: url.into(),
        courtesy_delay: Duration::from_millis(delay_ms),
        max_attempts: 3,
        backoff: Duration::from_millis(20),
        timeout: Duration::from_secs(10),
    })
}

fn quick_biorxiv(url: &str) -> BiorxivSettings {
    BiorxivSettings {
        api_base: url.into(),
        max_attempts: 3,
        backoff: Duration::from_millis(20),
        timeout: Duration::from_secs(10),
    }
}

const NOW: OffsetDateTime = datetime!(2026-12-07 05:00 UTC);

#[test]
fn arxiv_listing_survives_empty_feeds_429s_versions_legacy_ids_and_new_pdf_links() {
    let feed = atom(
        &[
            entry(
                "2412.00002v2",
                "Second version of a paper",
                "A.",
                "2026-12-05T10:00:00Z",
            ),
            entry("hep-ex/0307015v1", "A legacy-id paper", "B.", "2026-12-04T10:00:00Z"),
            entry("2412.00001v1", "Older than the window", "C.", "2026-11-20T10:00:00Z"),
        ],
        3,
    );
    let cs_ai = atom(
        &[Entry {
            titled_pdf_link: true,
            category: "cs.AI".into(),
            ..entry(
                "2412.00002v1",
                "Second version of a paper",
                "A.",
                "2026-12-05T10:00:00Z",
            )
        }],
        1,
    );
    let fake = Stand::one_at_a_time(move |r, n| match n {
        // The known transient failures first: an empty 200 feed, then a
        // 429 with no Retry-After.
        0 => Answer::atom(atom(&[], 0)),
        1 => Answer::status(429, "Rate exceeded."),
        _ if r.path.contains("cat:cs.AI") => Answer::atom(cs_ai.clone()),
        _ if r.path.contains("cat:bad.CAT") => Answer::atom(atom_error("unknown category")),
        _ => Answer::atom(feed.clone()),
    });
    let c = client(&fake.url, 10);
    let since = datetime!(2026-11-30 00:00 UTC);
    let (lg, out) = arxiv::fetch_category(&c, "cs.LG", 50, since, &Cancel::new());
    assert_eq!(out.status, SourceStatus::Ok, "{out:?}");
    assert_eq!(fake.seen().len(), 3, "empty feed and 429 were retried");
    let keys: Vec<&str> = lg.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        vec!["arxiv:2412.00002", "arxiv:hep-ex/0307015"],
        "older entries stop the walk"
    );
    match &lg[0].origin {
        Origin::Arxiv {
            pdf_url,
            primary_category,
            ..
        } => {
            assert_eq!(
                pdf_url.as_deref(),
                Some("https://arxiv.org/pdf/2412.00002v2"),
                "no title=pdf needed"
            );
            assert_eq!(primary_category.as_deref(), Some("cs.LG"));
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(lg[1].link, "https://arxiv.org/abs/hep-ex/0307015");
    let (ai, _) = arxiv::fetch_category(&c, "cs.AI", 50, since, &Cancel::new());
    // v1 in one category and v2 in another are one paper.
    let (unique, dups) = state::dedup(lg.into_iter().chain(ai).collect());
    assert_eq!((unique.len(), dups), (2, 1));
    // The error feed is a failure with arXiv's message, not a paper.
    let (none, out) = arxiv::fetch_category(&c, "bad.CAT", 50, since, &Cancel::new());
    assert!(none.is_empty());
    assert!(
        matches!(&out.status, SourceStatus::Failed(m) if m.contains("unknown category")),
        "{out:?}"
    );
}

#[test]
fn arxiv_courtesy_interval_holds_across_two_categories() {
    let feed = atom(&[entry("2412.00003v1", "P", "A.", "2026-12-05T10:00:00Z")], 1);
    let fake = Stand::one_at_a_time(move |_, _| Answer::atom(feed.clone()));
    let c = client(&fake.url, 3000);
    let since = datetime!(2026-11-30 00:00 UTC);
    let _ = arxiv::fetch_category(&c, "cs.LG", 10, since, &Cancel::new());
    // A second client (as a paper add would make) shares the same gap.
    let other = client(&fake.url, 3000);
    let _ = arxiv::fetch_category(&other, "cs.CL", 10, since, &Cancel::new());
    let reqs = fake.seen();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at.duration_since(reqs[0].at);
    assert!(gap >= Duration::from_millis(2990), "requests only {gap:?} apart");
}

#[test]
fn biorxiv_stops_at_the_short_page_and_reads_loose_dates() {
    let pages = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = pages.clone();
    let fake = Stand::one_at_a_time(move |r, _| {
        seen.lock().unwrap().push(r.path.clone());
        let cursor: usize = r.path.split('/').nth(5).and_then(|c| c.parse().ok()).unwrap_or(0);
        // `total` claims 250; only 150 exist.
        // 99 new papers and one revision on the first page, 50 on the second.
        let n = if cursor == 0 {
            99
        } else if cursor == 100 {
            50
        } else {
            0
        };
        let recs = (0..n)
            .map(|i| {
                let k = if cursor == 0 { i } else { cursor + i - 1 };
                let title = if k % 10 == 0 {
                    format!("Proteomics atlas {k}")
                } else {
                    format!("Other {k}")
                };
                biorxiv_record(
                    &format!("10.1101/2026.12.01.{k:06}"),
                    &title,
                    "Abstract.",
                    "2026-12-1",
                    "1",
                )
            })
            .chain((n > 0 && cursor == 0).then(|| {
                // A revision of paper 0: the same DOI, version 2.
                biorxiv_record(
                    "10.1101/2026.12.01.000000",
                    "Proteomics atlas 0",
                    "A.",
                    "2026-12-3",
                    "2",
                )
            }))
            .collect();
        Answer::json(biorxiv_page(recs, cursor, 250))
    });
    let window = (datetime!(2026-11-30 00:00 UTC), NOW);
    let (papers, outcomes) = biorxiv::fetch(
        &quick_biorxiv(&fake.url),
        &[("bioinformatics".into(), 500)],
        &[("proteomics".into(), 50)],
        window,
        &Cancel::new(),
    );
    let paths = pages.lock().unwrap().clone();
    assert_eq!(
        paths.len(),
        4,
        "two pages per walk, never the third the total promised: {paths:?}"
    );
    assert!(paths[0].starts_with("/details/biorxiv/2026-11-30/2026-12-07/0/json?category=bioinformatics"));
    assert_eq!(outcomes[0].fetched, 149, "the revision row is not a new paper");
    assert_eq!(outcomes[1].fetched, 15, "keyword matches");
    assert!(papers.iter().all(|p| p.date == "2026-12-01"), "unpadded dates read");
    let (unique, _) = state::dedup(papers);
    assert_eq!(unique.len(), 149);
}

fn cand(n: usize, title: &str) -> Candidate {
    Candidate {
        key: format!("arxiv:2412.{n:05}"),
        link: format!("https://arxiv.org/abs/2412.{n:05}"),
        title: title.into(),
        authors: vec!["Ada Example".into()],
        abstract_text: format!("Abstract of {title}."),
        date: "2026-12-05".into(),
        origin: Origin::Arxiv {
            id: format!("2412.{n:05}"),
            primary_category: None,
            pdf_url: None,
        },
        via: "arXiv cs.LG".into(),
    }
}

#[test]
fn scoring_takes_sloppy_json_catches_missing_papers_and_survives_a_bad_batch() {
    let fake = Stand::one_at_a_time(|r, _| {
        let papers = papers_in(&r.body);
        let titles: Vec<&str> = papers.iter().map(|(_, t)| t.as_str()).collect();
        if titles.iter().any(|t| t.contains("garbled")) {
            return openrouter_reply("I'm sorry, I can't produce JSON for these papers today.");
        }
        if titles == ["Second"] {
            // The follow-up for the paper the first reply left out: a
            // bare object, a string id and a string score.
            return openrouter_reply(r#"{"id": "[1]", "score": "7", "track": "t", "summary": "s2", "why": "w2"}"#);
        }
        // Fences, chatter, a float score, and paper 2 left out.
        openrouter_reply(
            "Here are the scores:\n```json\n[{\"id\": 1, \"score\": 8.6, \"track\": \"methods\", \"summary\": \"s1\", \"why\": \"w1\"}]\n```\nLet me know!",
        )
    });
    let provider = make_provider("openrouter", &settings_for(&fake.url)).unwrap();
    let papers = vec![
        cand(1, "First"),
        cand(2, "Second"),
        cand(3, "A garbled one"),
        cand(4, "Its batch partner"),
    ];
    let s = score_all(
        provider.as_ref(),
        "Score papers.",
        &papers,
        &BatchLimits::new(2, 100_000),
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    let got: Vec<(&str, i64)> = s.scored.iter().map(|x| (x.candidate.title.as_str(), x.score)).collect();
    assert_eq!(got, vec![("First", 9), ("Second", 7)]);
    assert_eq!(s.skipped.len(), 2, "every paper has a score or a reason");
    assert!(s
        .skipped
        .iter()
        .all(|(_, why)| why.starts_with("skipped: ") && why.contains("no scores")));
    assert_eq!(s.failed_batches.len(), 1, "{:?}", s.failed_batches);
    // 1 + 1 follow-up + 2 tries of the bad batch.
    assert_eq!(fake.seen().len(), 4);
    assert_eq!(
        (s.usage.requests, s.usage.input_tokens, s.usage.output_tokens),
        (4, 4000, 800)
    );
    assert!((s.usage.cost_usd.unwrap() - 0.0084).abs() < 1e-9);
}

/// A vault about protein structure: the user's own library for the gate.
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

fn pdf_tools() -> InProcessPdf {
    InProcessPdf {
        engine: jarvis::pdf::PdfEngine::load(std::path::Path::new(shared_pdfium())).unwrap(),
    }
}

/// Papers of the week: five about the library's topic, three far from it.
fn week() -> Vec<Entry> {
    [
        (
            "2412.10001v1",
            "Equivariant transformers for protein structure prediction (s9)",
        ),
        (
            "2412.10002v2",
            "Protein folding landscapes from language models (s9 nopdf)",
        ),
        (
            "2412.10003v1",
            "Predicting residue contact maps for protein folding (s8)",
        ),
        (
            "2412.10004v1",
            "Diffusion models for de novo protein backbone design (s6)",
        ),
        ("2412.10005v1", "Sequence design for a target protein fold (s5)"),
        ("2412.20001v1", "Metre and rhyme in medieval French poetry"),
        ("2412.20002v1", "Roasting curves and acidity in specialty coffee"),
        ("2412.20003v1", "Tax incidence of municipal parking fees"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (id, t))| {
        entry(
            id,
            t,
            &format!("We study {t}."),
            &format!("2026-12-0{}T10:00:00Z", 6 - i % 3),
        )
    })
    .collect::<Vec<_>>()
    .tap_sort()
}

trait TapSort {
    fn tap_sort(self) -> Self;
}

impl TapSort for Vec<Entry> {
    /// Newest first, as arXiv's `sortBy=submittedDate&sortOrder=descending`.
    fn tap_sort(mut self) -> Self {
        self.sort_by(|a, b| b.published.cmp(&a.published));
        self
    }
}

fn score_of(title: &str) -> f64 {
    for (tag, s) in [("(s9", 9.2), ("(s8", 8.4), ("(s6", 6.0), ("(s5", 5.0)] {
        if title.contains(tag) {
            return s;
        }
    }
    3.0
}

#[test]
fn a_full_run_gates_scores_writes_indexes_remembers_and_catches_up_once() {
    let fx = fixture(LIBRARY);
    let week = week();
    let by_id: Vec<Entry> = week.clone();
    let arxiv_fake = Stand::one_at_a_time(move |r, _| {
        if let Some(rest) = r.path.strip_prefix("/pdf/") {
            return match by_id
                .iter()
                .find(|e| e.id.starts_with(rest) || rest.starts_with(&e.id[..10]))
            {
                Some(e) if !e.title.contains("nopdf") => Answer::pdf(pdf_fixture_bytes("paper.pdf")),
                _ => Answer::status(404, "not found"),
            };
        }
        if let Some(q) = r.path.split("id_list=").nth(1) {
            let id = q.split('&').next().unwrap_or("");
            let one: Vec<Entry> = by_id.iter().filter(|e| e.id.starts_with(id)).cloned().collect();
            return Answer::atom(atom(&one, one.len()));
        }
        Answer::atom(atom(&by_id, by_id.len()))
    });
    let seen_titles = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen_titles.clone();
    let bodies = Arc::new(Mutex::new(Vec::<String>::new()));
    let body_log = bodies.clone();
    let llm = Stand::one_at_a_time(move |r, _| {
        body_log.lock().unwrap().push(r.body.clone());
        let papers = papers_in(&r.body);
        let mut items = Vec::new();
        for (n, t) in &papers {
            log.lock().unwrap().push(t.clone());
            items.push(format!(
                "{{\"id\": {n}, \"score\": {}, \"track\": \"structure\", \"summary\": \"A summary of {}.\", \"why\": \"Close to your folding notes.\"}}",
                score_of(t),
                t.replace('"', "")
            ));
        }
        openrouter_reply(&format!("Sure.\n```json\n[{}]\n```", items.join(",\n")))
    });
    // bioRxiv has one paper on the topic; its PDF may not be fetched.
    let bio = Stand::one_at_a_time(|_, _| {
        Answer::json(biorxiv_page(
            vec![biorxiv_record(
                "10.1101/2026.12.06.555001",
                "Protein contact prediction from coevolution (s9 biorxiv)",
                "We study protein residue contacts for structure prediction.",
                "2026-12-6",
                "1",
            )],
            0,
            1,
        ))
    });
    let provider = make_provider("openrouter", &settings_for(&llm.url)).unwrap();
    let arxiv_client = client(&arxiv_fake.url, 10);
    let pdf = pdf_tools();
    let add = AddSettings {
        figure_captions: false,
        figure_max_per_doc: 0,
        figure_min_pixels: 0,
        metadata_prompt: String::new(),
        summary_prompt: jarvis::prompts::default_of(jarvis::prompts::PAPER_SUMMARY).unwrap_or_default(),
        provider_is_cloud: true,
        llm_retry_backoff: Duration::from_millis(10),
        vault_root: None,
        private_dirs: Vec::new(),
    };
    let out_dir = fx.sb.dir.path().join("digests");
    let state_dir = fx.sb.jarvis_home().join("state");
    std::fs::create_dir_all(&state_dir).unwrap();
    // The last success was two weeks ago: Monday's slot was missed.
    // A vote on an earlier digest: the scoring prompt shows its title.
    let liked = jarvis::digest::feedback::RunEntry {
        key: "arxiv:2411.09999".into(),
        link: "https://arxiv.org/abs/2411.09999".into(),
        title: "Contact maps from coevolution, revisited".into(),
        authors: "A. Author".into(),
        abstract_text: "Residue contacts.".into(),
        score: 8,
        track: "structure".into(),
        summary: String::new(),
        why: String::new(),
        tier: "worth_reading".into(),
    };
    jarvis::digest::feedback::record_vote(&state_dir, &liked, jarvis::digest::feedback::Vote::Up, NOW).unwrap();
    let mut seen = state::SeenSet::load(&state_dir).unwrap();
    seen.set_last_success(datetime!(2026-11-23 05:05 UTC));
    seen.save(NOW).unwrap();
    assert!(schedule::is_overdue(
        time::Weekday::Monday,
        5,
        state::last_success(&state_dir),
        NOW
    ));
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let said = lines.clone();
    let progress = move |l: &str| said.lock().unwrap().push(l.to_string());
    let deps = DigestDeps {
        kb: &fx.kb,
        provider: provider.as_ref(),
        provider_is_cloud: true,
        arxiv: &arxiv_client,
        pdf: &pdf,
        add_settings: &add,
        settings: DigestSettings {
            enabled: true,
            output_dir: out_dir.clone(),
            max_results: 10,
            arxiv_categories: vec![("cs.LG".into(), 100)],
            biorxiv_categories: vec![("bioinformatics".into(), 100)],
            biorxiv_keywords: vec![],
            first_run_days: 7,
            max_candidates: 6,
            batch_size: 10,
            context_tokens: 100_000,
            biorxiv: quick_biorxiv(&bio.url),
            web_url: Some("http://127.0.0.1:8080".into()),
        },
        prompt: jarvis::prompts::default_of(jarvis::prompts::DIGEST_SCORE).unwrap(),
        state_dir: state_dir.clone(),
        progress: &progress,
    };
    let opts = DigestOptions {
        dry_run: false,
        force: false,
        now: NOW,
    };
    let report = jarvis::digest::run(&deps, opts.clone(), Cancel::new()).unwrap();
    let lines = lines.lock().unwrap().clone();
    let sent = bodies.lock().unwrap().clone();
    assert!(
        !sent.is_empty()
            && sent.iter().all(|b| b.contains("Liked or added to their library")
                && b.contains("Contact maps from coevolution, revisited")),
        "every scoring request carries the user's vote as an example"
    );
    // The run's papers are remembered for the Digest view and for votes.
    let runs = jarvis::digest::feedback::runs(&state_dir).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].entries.len(), report.scored, "{runs:#?}");
    assert!(jarvis::digest::feedback::find_entry(&state_dir, "2412.10001")
        .unwrap()
        .is_some());
    assert_eq!(
        report.window_start, "2026-11-21",
        "the window reaches back to the last success"
    );
    // The gate: only the six protein papers reached the model.
    assert_eq!((report.candidates, report.gated_out), (9, 3), "{report:#?}");
    let sent = seen_titles.lock().unwrap().clone();
    assert_eq!(sent.len(), 6, "{sent:?}");
    assert!(sent.iter().all(|t| t.to_lowercase().contains("protein")), "{sent:?}");
    assert!(
        lines.iter().any(|l| l.contains("6 sent to the model, 3 gated out")),
        "{lines:?}"
    );
    // Tiers and outcomes.
    assert_eq!((report.must_read, report.worth_reading, report.skim), (3, 1, 2));
    assert_eq!(report.indexed_full_text, 1, "{report:#?}");
    assert_eq!(
        report.indexed_summary_fallback, 2,
        "a failed download and a bioRxiv paper"
    );
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("biorxiv") && w.contains("bioRxiv does not allow")),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.indexed_summaries, 1);
    assert!(
        report.warnings.iter().any(|w| w.contains("nopdf")
            && w.contains("summary from the scoring run")
            && w.contains("HTTP 404")
            && !w.contains("check your connection")),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.usage.cost_usd, Some(0.0021));
    // The digest file.
    let path = report.digest_file.clone().unwrap();
    assert_eq!(path.file_name().unwrap(), "digest-2026-12-07.md");
    let md = std::fs::read_to_string(&path).unwrap();
    eprintln!(
        "--- digest head ---\n{}",
        md.lines().take(24).collect::<Vec<_>>().join("\n")
    );
    assert!(md.starts_with("# Paper Digest — 2026-12-07\n\nGenerated 05:00 UTC"));
    let must = md.find("## Must-Read").unwrap();
    let worth = md.find("## Worth Reading").unwrap();
    let skim = md.find("## Skim").unwrap();
    let contact = md.find("residue contact maps").unwrap();
    assert!(must < worth && worth < contact && contact < skim, "{md}");
    assert!(
        md.contains("https://arxiv.org/abs/2412.10002"),
        "canonical links, no version"
    );
    assert!(md.contains("Scored by openrouter:acme/model-1"));
    // Indexed: the digest itself, one full text, three summary entries.
    let docs = fx.kb.list_documents(&Filter::default(), 100).unwrap();
    let digest: Vec<_> = docs.iter().filter(|d| d.doc_type == "digest").collect();
    assert_eq!(digest.len(), 1);
    assert_eq!(digest[0].title, "Paper Digest — 2026-12-07");
    assert!(digest[0].source.starts_with("file://"));
    let papers: Vec<_> = docs.iter().filter(|d| d.doc_type == "paper").collect();
    assert_eq!(
        papers.len(),
        4,
        "{:?}",
        papers.iter().map(|p| &p.title).collect::<Vec<_>>()
    );
    let full = papers.iter().find(|p| p.title.contains("Equivariant")).unwrap();
    assert_eq!(
        full.meta.get("storage_mode").and_then(|v| v.as_str()),
        Some("full_text")
    );
    assert!(full.chunks > 1);
    let fallback = papers.iter().find(|p| p.title.contains("nopdf")).unwrap();
    assert_eq!(
        fallback.meta.get("storage_mode").and_then(|v| v.as_str()),
        Some("summary")
    );
    assert_eq!(fallback.meta.get("score").and_then(|v| v.as_i64()), Some(9));

    // Catch-up: the stamp moved, so the missed slot runs exactly once.
    assert!(!schedule::is_overdue(
        time::Weekday::Monday,
        5,
        state::last_success(&state_dir),
        NOW
    ));
    assert!(!schedule::is_overdue(
        time::Weekday::Monday,
        5,
        state::last_success(&state_dir),
        NOW + time::Duration::hours(6)
    ));

    // Next day, same feed: everything was suggested before; nothing is
    // sent to the model again, and it is reported, not an error.
    let again = DigestOptions {
        now: NOW + time::Duration::days(1),
        ..opts
    };
    let r2 = jarvis::digest::run(&deps, again, Cancel::new()).unwrap();
    assert_eq!(r2.candidates, 0, "{r2:#?}");
    // The window now starts two days before the last run: six of the
    // eight arXiv papers are in it again, and the bioRxiv one.
    assert_eq!(r2.already_seen + r2.already_in_kb, 7, "{r2:#?}");
    assert!(r2.quiet && r2.warnings[0].contains("suggested before"), "{r2:#?}");
    assert_eq!(seen_titles.lock().unwrap().len(), 6, "no paper scored twice");
    assert!(r2.digest_file.is_none());
}

#[test]
fn a_quiet_weekend_is_reported_as_quiet() {
    let fx = fixture(LIBRARY);
    // Friday's papers only; the window is Saturday to Monday morning.
    let feed = atom(
        &[entry("2412.30001v1", "Friday paper", "A.", "2026-12-04T18:00:00Z")],
        1,
    );
    let arxiv_fake = Stand::one_at_a_time(move |_, _| Answer::atom(feed.clone()));
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let llm = Stand::one_at_a_time(move |_, _| {
        c2.fetch_add(1, Ordering::SeqCst);
        openrouter_reply("[]")
    });
    let provider: Box<dyn ChatProvider> = make_provider("openrouter", &settings_for(&llm.url)).unwrap();
    let arxiv_client = client(&arxiv_fake.url, 10);
    let pdf = pdf_tools();
    let add = AddSettings {
        figure_captions: false,
        figure_max_per_doc: 0,
        figure_min_pixels: 0,
        metadata_prompt: String::new(),
        summary_prompt: jarvis::prompts::default_of(jarvis::prompts::PAPER_SUMMARY).unwrap_or_default(),
        provider_is_cloud: true,
        llm_retry_backoff: Duration::from_millis(10),
        vault_root: None,
        private_dirs: Vec::new(),
    };
    let state_dir = fx.sb.jarvis_home().join("state");
    let deps = DigestDeps {
        kb: &fx.kb,
        provider: provider.as_ref(),
        provider_is_cloud: true,
        arxiv: &arxiv_client,
        pdf: &pdf,
        add_settings: &add,
        settings: DigestSettings {
            enabled: true,
            output_dir: fx.sb.dir.path().join("digests"),
            max_results: 10,
            arxiv_categories: vec![("cs.LG".into(), 100)],
            biorxiv_categories: vec![],
            biorxiv_keywords: vec![],
            first_run_days: 2,
            max_candidates: 100,
            batch_size: 10,
            context_tokens: 100_000,
            biorxiv: quick_biorxiv("http://127.0.0.1:9"),
            web_url: None,
        },
        prompt: "Score.".into(),
        state_dir: state_dir.clone(),
        progress: &|_| {},
    };
    let opts = DigestOptions {
        dry_run: false,
        force: false,
        now: datetime!(2026-12-07 00:30 UTC),
    };
    let r = jarvis::digest::run(&deps, opts, Cancel::new()).unwrap();
    assert!(r.quiet, "{r:#?}");
    assert!(
        matches!(&r.sources[0].status, SourceStatus::Quiet(_)),
        "{:?}",
        r.sources
    );
    assert!(r.warnings[0].contains("quiet spell, not a fault"), "{:?}", r.warnings);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(
        state::last_success(&state_dir).is_some(),
        "a quiet run is a successful run"
    );
}
