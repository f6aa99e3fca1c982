use time::macros::datetime;

use super::score::{batches, parse_reply, BatchLimits};
use super::*;

fn cand(key: &str, title: &str) -> Candidate {
    Candidate {
        key: key.into(),
        link: format!("https://arxiv.org/abs/{}", key.trim_start_matches("arxiv:")),
        title: title.into(),
        authors: vec!["Ada Example".into()],
        abstract_text: "An abstract.".into(),
        date: "2026-11-30".into(),
        origin: Origin::Arxiv {
            id: key.trim_start_matches("arxiv:").into(),
            primary_category: Some("cs.LG".into()),
            pdf_url: None,
        },
        via: "arXiv cs.LG".into(),
    }
}

#[test]
fn sloppy_replies_parse() {
    // Fences with a language tag and chatter around them.
    let r = "Sure! Here you go:\n```json\n[{\"id\": 1, \"score\": 9, \"track\": \"a\", \"summary\": \"s\", \"why\": \"w\"}]\n```\nHope that helps.";
    let items = parse_reply(r).unwrap();
    assert_eq!((items[0].id, items[0].score), (1, 9));
    // A bare object, a string id, a float score (rounded), a string score.
    let r = "{\"id\": \"[2]\", \"score\": 7.6, \"summary\": \"x\", \"why\": \"y\"}";
    assert_eq!(parse_reply(r).unwrap()[0].score, 8);
    let r = "[{\"id\": \"P3\", \"score\": \"9/10\"}, {\"id\": 4, \"score\": \"8.4\"}]";
    let items = parse_reply(r).unwrap();
    assert_eq!((items[0].id, items[0].score, items[1].score), (3, 9, 8));
    // JSON lines and a wrapper object.
    let r = "{\"id\":1,\"score\":3}\n{\"id\":2,\"score\":11}\n";
    let items = parse_reply(r).unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].score, 10, "clamped to 10");
    let r = "{\"papers\": [{\"id\": 5, \"score\": 6}]}";
    assert_eq!(parse_reply(r).unwrap()[0].id, 5);
    // A truncated list still yields the complete objects before the cut.
    let r = "[{\"id\": 1, \"score\": 9}, {\"id\": 2, \"sc";
    assert_eq!(parse_reply(r).unwrap().len(), 1);
    // Nothing usable.
    assert!(parse_reply("I cannot score these papers.").is_err());
    assert!(parse_reply("{\"note\": \"no\"}").is_err());
}

#[test]
fn batches_fit_the_context_and_the_cap() {
    let papers: Vec<Candidate> = (0..25).map(|i| cand(&format!("arxiv:2401.{i:05}"), "T")).collect();
    let b = batches("prompt", &papers, &BatchLimits::new(10, 100_000));
    assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![10, 10, 5]);
    // A small context splits further.
    let mut long = cand("arxiv:2401.99999", "T");
    long.abstract_text = "word ".repeat(1500);
    let many = vec![long.clone(), long.clone(), long];
    let b = batches("prompt", &many, &BatchLimits::new(10, 4096));
    assert_eq!(
        b.len(),
        3,
        "each ~1900-token abstract needs its own batch in a 4k context"
    );
}

#[test]
fn arxiv_feed_ids_links_and_errors() {
    let feed = r#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">
<opensearch:totalResults>2</opensearch:totalResults>
<entry><id>http://arxiv.org/abs/2411.01234v2</id><published>2026-11-30T10:00:00Z</published><title>A  paper</title>
<summary>Abs.</summary><author><name>A One</name></author><author><name>B Two</name></author>
<link href="http://arxiv.org/abs/2411.01234v2" rel="alternate" type="text/html"/>
<link href="http://arxiv.org/pdf/2411.01234v2" rel="alternate" type="application/pdf"/>
<arxiv:primary_category term="cs.LG"/></entry>
<entry><id>http://arxiv.org/abs/hep-ex/0307015v1</id><published>2026-11-29T10:00:00Z</published><title>Legacy</title><summary>Old.</summary>
<link title="pdf" href="http://arxiv.org/pdf/hep-ex/0307015v1" rel="related"/></entry></feed>"#;
    let page = arxiv::parse_page(feed).unwrap();
    assert_eq!(page.total, Some(2));
    let a = arxiv::to_candidate(&page.entries[0], "arXiv cs.LG").unwrap();
    assert_eq!(a.key, "arxiv:2411.01234");
    assert_eq!(a.link, "https://arxiv.org/abs/2411.01234");
    assert_eq!(a.title, "A paper");
    assert_eq!(a.authors, vec!["A One", "B Two"]);
    assert_eq!(
        a.origin,
        Origin::Arxiv {
            id: "2411.01234".into(),
            primary_category: Some("cs.LG".into()),
            pdf_url: Some("http://arxiv.org/pdf/2411.01234v2".into())
        }
    );
    let b = arxiv::to_candidate(&page.entries[1], "x").unwrap();
    assert_eq!(b.key, "arxiv:hep-ex/0307015");
    let err = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/api/errors#incorrect_id_format_for_1234</id><title>Error</title><summary>incorrect id format for 1234</summary></entry></feed>"#;
    assert!(arxiv::parse_page(err).unwrap_err().contains("incorrect id format"));
    assert!(!arxiv::valid_category("cs.LG&x=1"));
}

#[test]
fn biorxiv_records() {
    assert_eq!(biorxiv::lenient_date("2026-6-30").as_deref(), Some("2026-06-30"));
    assert_eq!(biorxiv::lenient_date("2026-11-03").as_deref(), Some("2026-11-03"));
    assert_eq!(biorxiv::lenient_date("soon"), None);
    let v1 = serde_json::json!({"doi":"10.1101/2026.06.30.1","title":"T","authors":"Sen, S.; Roe, R.","date":"2026-6-30","version":"1","category":"bioinformatics","abstract":"A"});
    let c = biorxiv::to_candidate(&v1, "bioRxiv bioinformatics").unwrap();
    assert_eq!(c.authors, vec!["Sen, S.", "Roe, R."]);
    assert_eq!(c.date, "2026-06-30");
    assert_eq!(c.link, "https://doi.org/10.1101/2026.06.30.1");
    let mut v2 = v1.clone();
    v2["version"] = "2".into();
    assert!(biorxiv::to_candidate(&v2, "x").is_none(), "a revision is not new");
    let mut bad = v1;
    bad["doi"] = "10.1101/x) [evil](http://e".into();
    assert!(biorxiv::to_candidate(&bad, "x").is_none());
}

#[test]
fn dedup_by_id_and_title() {
    let (u, d) = state::dedup(vec![
        cand("arxiv:2401.00001", "Same Paper"),
        cand("arxiv:2401.00001", "Same paper (v2 title)"),
        cand("doi:10.1101/x", "same paper!"),
        cand("arxiv:2401.00002", "Other"),
    ]);
    assert_eq!((u.len(), d), (2, 2));
}

#[test]
fn window_starts_at_the_last_success() {
    let now = datetime!(2026-12-07 05:00 UTC);
    let (s, _) = state::window(None, now, 7);
    assert_eq!(state::day(s), "2026-11-30");
    // Missed a week: the window reaches back to the last success.
    let (s, _) = state::window(Some(datetime!(2026-11-23 05:00 UTC)), now, 7);
    assert_eq!(state::day(s), "2026-11-21");
    let (s, _) = state::window(Some(datetime!(2025-01-01 05:00 UTC)), now, 7);
    assert_eq!(state::day(s), "2026-11-07", "capped");
}

#[test]
fn seen_set_persists_and_prunes() {
    let dir = tempfile::tempdir().unwrap();
    let now = datetime!(2026-12-07 05:00 UTC);
    let mut s = state::SeenSet::load(dir.path()).unwrap();
    s.insert(&cand("arxiv:2401.00001", "One"), now - time::Duration::days(100));
    s.insert(&cand("arxiv:2401.00002", "Two"), now);
    s.set_last_success(now);
    s.save(now).unwrap();
    let s = state::SeenSet::load(dir.path()).unwrap();
    assert!(s.contains(&cand("arxiv:2401.00002", "x")));
    assert!(s.contains(&cand("arxiv:9999.00000", "two")), "by title too");
    assert!(!s.contains(&cand("arxiv:2401.00001", "y")), "pruned after 90 days");
    assert_eq!(s.last_success(), Some(now));
    std::fs::write(state::SeenSet::path(dir.path()), "{broken").unwrap();
    assert!(state::SeenSet::load(dir.path()).is_err());
}

#[test]
fn catch_up_after_a_missed_slot() {
    use time::Weekday::Monday;
    let now = datetime!(2026-12-09 12:00 UTC); // a Wednesday
    assert_eq!(schedule::last_slot(Monday, 5, now), datetime!(2026-12-07 05:00 UTC));
    // Off across Monday's slot: overdue; after the run, not any more.
    let before = Some(datetime!(2026-11-30 05:10 UTC));
    assert!(schedule::is_overdue(Monday, 5, before, now));
    assert!(!schedule::is_overdue(
        Monday,
        5,
        Some(now),
        now + time::Duration::hours(6)
    ));
    // No baseline: wait for the slot.
    assert!(!schedule::is_overdue(Monday, 5, None, now));
    // Exactly at the slot counts as the slot.
    let at = datetime!(2026-12-07 05:00 UTC);
    assert_eq!(schedule::last_slot(Monday, 5, at), at);
}

#[test]
fn tiers_and_markdown_round_trip() {
    let mk = |k: &str, t: &str, score| score::Scored {
        candidate: cand(k, t),
        score,
        track: "methods".into(),
        summary: format!("Summary of {t}."),
        why: "Because.".into(),
    };
    let tiers = render::Tiers::split(
        vec![
            mk("arxiv:2401.00001", "Low", 5),
            mk("arxiv:2401.00002", "Top [x](javascript:evil) <b>", 10),
            mk("arxiv:2401.00003", "Mid", 8),
        ],
        10,
    );
    assert_eq!(
        (tiers.must_read.len(), tiers.worth_reading.len(), tiers.skim.len()),
        (1, 1, 1)
    );
    let md = render::render(&render::DigestView {
        date: "2026-12-07",
        now: datetime!(2026-12-07 05:03 UTC),
        tiers: &tiers,
        skipped: &[],
        sources: &[],
        model: "ollama:m",
        usage: &TokenUse::default(),
        gated_out: 0,
        web_url: Some("http://127.0.0.1:8080"),
    });
    assert!(
        md.starts_with("# Paper Digest — 2026-12-07\n\nGenerated 05:03 UTC"),
        "{md}"
    );
    assert!(!md.contains("](javascript") && !md.contains("<b>"), "{md}");
    let entries = import::parse_digest(&md);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].title, "Top [x](javascript:evil) <b>");
    assert_eq!(entries[0].link, "https://arxiv.org/abs/2401.00002");
    assert_eq!(entries[0].score, Some(10));
    assert_eq!(entries[1].summary, "Summary of Mid.");
    // Each paper links to its card in the Digest view, the key encoded.
    assert!(
        md.contains("[Rate or add in Jarvis](http://127.0.0.1:8080/#digest=arxiv%3A2401.00002)"),
        "{md}"
    );
}
