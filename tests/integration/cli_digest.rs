//! `jarvis run-digest` and `jarvis kb add-digest` through the real binary.

use crate::support::fakes::digest::*;
use crate::support::fakes::stand::{Answer, Stand};
use crate::support::{run, Sandbox};

#[test]
fn run_digest_when_off_says_how_to_turn_it_on() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.arg("run-digest");
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("jarvis config set digest.enabled true"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
}

#[test]
fn run_digest_with_nothing_configured_says_what_to_set() {
    let sb = Sandbox::new();
    let mut c = sb.jarvis();
    c.args(["run-digest", "--force"]);
    let r = run(c);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("digest.arxiv_categories") && r.stderr.contains("digest_score.md"),
        "{}",
        r.stderr
    );
    // The shipped defaults carry nobody's topics.
    let mut c = sb.jarvis();
    c.args(["config", "show"]);
    let r = run(c);
    assert!(
        !r.stdout.contains("cytometry") && !r.stdout.contains("single-cell"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_dry_run_fetches_and_scores_but_writes_nothing() {
    let sb = Sandbox::new();
    let feed = atom(
        &[
            entry(
                "2412.40001v1",
                "Sparse attention for long documents",
                "We study attention.",
                "2026-12-06T10:00:00Z",
            ),
            entry(
                "2412.40002v1",
                "A benchmark for table reasoning",
                "We study tables.",
                "2026-12-05T10:00:00Z",
            ),
        ],
        2,
    );
    // A listing far in the past would be quiet; these dates are recent
    // enough only if the run's clock is near them, so serve them as "now".
    let today = time::OffsetDateTime::now_utc();
    let stamp = |d: i64| {
        (today - time::Duration::days(d))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let feed = feed
        .replace("2026-12-06T10:00:00Z", &stamp(1))
        .replace("2026-12-05T10:00:00Z", &stamp(2));
    let arxiv = Stand::one_at_a_time(move |_, _| Answer::atom(feed.clone()));
    let llm = Stand::one_at_a_time(|r, _| {
        let items: Vec<String> = papers_in(&r.body)
            .iter()
            .map(|(n, _)| {
                format!("{{\"id\": {n}, \"score\": 8, \"track\": \"t\", \"summary\": \"s\", \"why\": \"w\"}}")
            })
            .collect();
        ollama_reply(&format!("[{}]", items.join(",")))
    });
    let out_dir = sb.dir.path().join("digests");
    sb.write_config(&format!(
        "[chat]\nprovider = \"ollama\"\nollama_host = \"{}\"\n[papers]\narxiv_api_url = \"{}\"\narxiv_pdf_url = \"{}\"\ncourtesy_delay_ms = 0\nretry_backoff_ms = 10\n[digest]\nenabled = true\narxiv_categories = [[\"cs.LG\", 50]]\noutput_dir = \"{}\"\n",
        llm.url,
        arxiv.url,
        arxiv.url,
        out_dir.display()
    ));
    let mut c = sb.jarvis();
    c.args(["run-digest", "--dry-run"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("2 fetched") && r.stdout.contains("2 scored"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("Worth Reading 2"), "{}", r.stdout);
    assert!(r.stdout.contains("dry run: nothing written or indexed"), "{}", r.stdout);
    assert!(
        r.stdout.contains("900 tokens in, 150 out over 1 request"),
        "{}",
        r.stdout
    );
    assert!(!out_dir.exists(), "no digest file");
    assert!(
        !sb.jarvis_home().join("state/digest_seen.json").exists(),
        "nothing remembered"
    );
    assert_eq!(llm.seen().len(), 1);
}

const DIGEST: &str = "# Paper Digest — 2026-12-07

Generated 05:00 UTC · 3 papers scored

## Must-Read (score ≥ 9)

### [Equivariant networks for protein structure \\(v2\\)](https://arxiv.org/abs/2412.10001)

**Authors:** Ada Example, Grace Sample · **Score:** 9/10 · **Track:** structure · arXiv cs.LG

**Why:** Close to your folding notes.

**Summary:** A new equivariant architecture for predicting protein structure.

## Worth Reading (score 8)

### [Contact maps from sequence](https://doi.org/10.1101/2026.12.01.000123)

**Authors:** Sen, S., Roe, R. · **Score:** 8/10 · **Track:** — · bioRxiv bioinformatics

**Why:** Related to contact prediction.

**Summary:** Predicts residue contacts from sequence alone.

## Skim (score < 8)

- [Other](https://arxiv.org/abs/2412.10009) — A · 5/10 — far off
";

#[test]
fn add_digest_imports_the_top_tiers_once() {
    let sb = Sandbox::new();
    let file = sb.dir.path().join("digest-2026-12-07.md");
    std::fs::write(&file, DIGEST).unwrap();
    // A missing file adds nothing, even with a good one before it.
    let mut c = sb.jarvis();
    c.args(["kb", "add-digest", file.to_str().unwrap(), "/nonexistent/digest.md"]);
    let r = run(c);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/digest.md"), "{}", r.stderr);
    let mut c = sb.jarvis();
    c.args(["kb", "add-digest", file.to_str().unwrap()]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with("2 papers added from 1 digest file, 0 skipped"),
        "{}",
        r.stdout
    );
    let mut c = sb.jarvis();
    c.args(["kb", "list", "--json"]);
    let r = run(c);
    assert!(
        r.stdout.contains("Equivariant networks for protein structure (v2)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("https://doi.org/10.1101/2026.12.01.000123"),
        "{}",
        r.stdout
    );
    let mut c = sb.jarvis();
    c.args(["kb", "add-digest", file.to_str().unwrap()]);
    let r = run(c);
    assert!(
        r.stdout.starts_with("0 papers added from 1 digest file, 2 skipped"),
        "{}",
        r.stdout
    );
}

#[test]
fn digest_feedback_at_the_terminal_records_lists_and_refuses_the_unknown() {
    use jarvis::digest::feedback;
    let sb = Sandbox::new();
    let state = sb.jarvis_home().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let e = |n: u32, title: &str| feedback::RunEntry {
        key: format!("arxiv:2412.{n:05}"),
        link: format!("https://arxiv.org/abs/2412.{n:05}"),
        title: title.into(),
        authors: "A. Author".into(),
        abstract_text: "An abstract.".into(),
        score: 8,
        track: "methods".into(),
        summary: "A summary.".into(),
        why: "Why.".into(),
        tier: "worth_reading".into(),
    };
    // A remembered run, as a digest leaves it.
    let runs = serde_json::json!({ "runs": [{
        "date": "2026-12-07", "file": "digest-2026-12-07.md",
        "entries": [e(50001, "Sparse attention for long documents"), e(50002, "A benchmark for table reasoning")],
    }]});
    std::fs::write(state.join("digest_runs.json"), runs.to_string()).unwrap();

    let mut c = sb.jarvis();
    c.args(["digest", "feedback", "2412.50001v2", "up"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("Sparse attention for long documents — noted: up"),
        "{}",
        r.stdout
    );
    let mut c = sb.jarvis();
    c.args([
        "digest",
        "feedback",
        "https://arxiv.org/abs/2412.50002",
        "down",
        "--json",
    ]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["key"], "arxiv:2412.50002");

    let votes = feedback::votes(&state).unwrap();
    assert_eq!(votes["arxiv:2412.50001"].vote, feedback::Vote::Up);
    assert_eq!(votes["arxiv:2412.50002"].vote, feedback::Vote::Down);

    let mut c = sb.jarvis();
    c.args(["digest", "list", "--json"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["runs"][0]["papers"][0]["vote"], "up");
    assert_eq!(v["runs"][0]["papers"][1]["vote"], "down");

    let mut c = sb.jarvis();
    c.args(["digest", "feedback", "2412.50001", "clear"]);
    assert_eq!(run(c).code, 0);
    assert!(!feedback::votes(&state).unwrap().contains_key("arxiv:2412.50001"));

    // Unknown paper and unknown vote: clear errors, nothing recorded.
    let mut c = sb.jarvis();
    c.args(["digest", "feedback", "2401.99999", "up"]);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("no paper \"2401.99999\" in the recent digests"),
        "{}",
        r.stderr
    );
    let mut c = sb.jarvis();
    c.args(["digest", "feedback", "2412.50002", "meh"]);
    let r = run(c);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("up, down or add"), "{}", r.stderr);
    assert_eq!(feedback::votes(&state).unwrap().len(), 1);
}
