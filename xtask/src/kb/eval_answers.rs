//! `cargo xtask eval answers`: the answer eval (`jarvis::chat::eval`) on
//! the Obsidian help vault — a question file run through the real agent,
//! one fresh session per question, scored on retrieval recall, citation
//! precision, the unsupported-marker rate, abstention on the questions the
//! library cannot answer, rounds and latency.
//!
//! The model is the deterministic stand-in (`--model stand-in`, the
//! default: it proves the scorer and measures the agent's own plumbing) or
//! any configured model (`--model ollama:qwen3:8b`, read from the user's
//! own config, keys and hosts included — that measures the product). The
//! vault is read from `../shared/data/obsidian-help/` (never copied into
//! the repository) and indexed with the product's `refresh_vault` into
//! `target/xtask-kb/answers-eval/`, incrementally (`--rebuild` starts over).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use jarvis::chat::eval::{parse_questions, run as run_questions, score, Outcome, Question, Report, RunOptions};
use jarvis::chat::tools::{ToolDeps, VaultSettings};
use jarvis::chat::{CachedProviders, ChatAgent, ChatDeps, ChatSettings, ProviderSource, SessionStore};
use jarvis::config::Config;
use jarvis::ingest::vault::{refresh_vault, VaultOptions};
use jarvis::kb::{Kb, KbSettings};
use jarvis::paths::JarvisHome;

use crate::answer_standin::{StandInSource, STAND_IN_SPEC};
use crate::common;

/// How often the stand-in makes a citation up by default: often enough
/// that a run shows the agent removing and counting it.
const DEFAULT_INVENT_EVERY: usize = 7;

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let questions_file = common::flag(args, "--questions")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("xtask/data/answers-obsidian-help.toml"));
    let text =
        std::fs::read_to_string(&questions_file).with_context(|| format!("read {}", questions_file.display()))?;
    let mut questions = parse_questions(&text).with_context(|| questions_file.display().to_string())?;
    if let Some(only) = common::flag(args, "--only") {
        let ids: Vec<&str> = only.split(',').collect();
        questions.retain(|q| ids.contains(&q.id.as_str()));
    }
    let data = common::flag(args, "--data")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::shared_data(root, "obsidian-help"));
    let vault = data.join("vault");
    if !vault.is_dir() {
        bail!("no help vault at {} (pass --data DIR)", vault.display());
    }
    check_gold(&questions, &vault)?;

    let kb = Arc::new(open_indexed(root, &vault, args.contains(&"--rebuild"))?);
    let model = common::flag(args, "--model").unwrap_or("stand-in");
    let kb_only = !args.contains(&"--own-knowledge");
    let (providers, spec, settings): (Arc<dyn ProviderSource>, String, ChatSettings) = if model == "stand-in" {
        let every = common::flag(args, "--invent")
            .map_or(Ok(DEFAULT_INVENT_EVERY), str::parse)
            .context("--invent N")?;
        (
            Arc::new(StandInSource::new(every)),
            STAND_IN_SPEC.to_string(),
            ChatSettings::default(),
        )
    } else {
        // The user's own configuration: the model's host, keys and the
        // chat limits they run with.
        let home = JarvisHome::from_env().context("find JARVIS_HOME")?;
        let env = |k: &str| std::env::var(k).ok();
        let cfg = Config::load(&home, &env).context("load the configuration")?;
        (
            Arc::new(CachedProviders::new(jarvis::app::llm::llm_settings(&cfg))),
            model.to_string(),
            jarvis::app::chat::chat_settings(&cfg),
        )
    };
    let work = common::work_dir(root).join("answers-eval");
    let sessions = work.join("sessions");
    let _ = std::fs::remove_dir_all(&sessions);
    let agent = ChatAgent::new(ChatDeps {
        tools: ToolDeps {
            kb: kb.clone(),
            vault: VaultSettings {
                root: Some(vault.clone()),
                private_dirs: Vec::new(),
            },
            papers: None,
            mcp: None,
            drafts: None,
        },
        providers,
        home: JarvisHome::at(work.join("home")),
        sessions: SessionStore::new(&sessions),
        settings,
    });
    let opts = RunOptions {
        spec: spec.clone(),
        kb_only,
    };
    let nil = questions.iter().filter(|q| q.not_in_library).count();
    println!(
        "eval answers — {} questions ({} answerable, {nil} not in the library) from {}\nmodel {spec}{} · {} · load {}\n",
        questions.len(),
        questions.len() - nil,
        questions_file.display(),
        if model == "stand-in" {
            " (the deterministic stand-in)"
        } else {
            ""
        },
        if kb_only { "DB only" } else { "own knowledge allowed" },
        common::load_average()
    );
    let t = Instant::now();
    let total = questions.len();
    let outcomes = run_questions(&agent, &questions, &opts, &|i, o| {
        progress_line(i, total, &questions, o)
    })?;
    let report = score(&questions, &outcomes);
    print_report(&report, t.elapsed().as_secs_f64());
    if let Some(out) = common::flag(args, "--out") {
        std::fs::write(out, serde_json::to_vec_pretty(&report)?).with_context(|| format!("write {out}"))?;
        println!("report written to {out}");
    }
    Ok(())
}

/// Every gold document exists in the vault: a typo fails the run up front
/// rather than scoring as a retrieval miss.
fn check_gold(questions: &[Question], vault: &Path) -> Result<()> {
    let missing: Vec<String> = questions
        .iter()
        .flat_map(|q| q.gold.iter().map(move |g| (q, g)))
        .filter(|(_, g)| !vault.join(g).is_file())
        .map(|(q, g)| format!("{}: {g}", q.id))
        .collect();
    if !missing.is_empty() {
        bail!(
            "gold documents missing from {}:\n  {}",
            vault.display(),
            missing.join("\n  ")
        );
    }
    Ok(())
}

fn open_indexed(root: &Path, vault: &Path, rebuild: bool) -> Result<Kb> {
    let cfg = common::config(root)?;
    let embedder = common::load_embedder(&cfg)?;
    let cache = common::work_dir(root).join("answers-eval").join("rag");
    if rebuild && cache.exists() {
        std::fs::remove_dir_all(&cache).context("clear the cached KB")?;
    }
    common::retree(&cache, embedder.dims())?;
    let kb = Kb::open(&cache, embedder, None, KbSettings::default())?;
    let t = Instant::now();
    let opts = VaultOptions {
        private_dirs: Vec::new(),
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    let r = refresh_vault(&kb, vault, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new())?;
    println!(
        "help vault {}: {} added, {} updated, {} unchanged in {:.1} s ({} chunks)",
        vault.display(),
        r.added.len(),
        r.updated.len(),
        r.unchanged,
        t.elapsed().as_secs_f64(),
        kb.store().count()?
    );
    Ok(kb)
}

fn progress_line(i: usize, total: usize, questions: &[Question], o: &Outcome) {
    let q = questions.iter().find(|q| q.id == o.id);
    let gold = |k: &String| q.is_some_and(|q| q.gold.contains(k));
    let verdict = match (q.is_some_and(|q| q.not_in_library), &o.error) {
        (_, Some(e)) => format!("FAILED: {}", e.lines().next().unwrap_or("")),
        (true, None) if o.cited.is_empty() => "abstained (right)".into(),
        (true, None) => format!("cited {} (should abstain)", o.cited.len()),
        (false, None) if o.cited.is_empty() => "cited nothing".into(),
        (false, None) => format!(
            "cited {}/{} gold",
            o.cited.iter().filter(|k| gold(k)).count(),
            o.cited.len()
        ),
    };
    println!(
        "[{:>2}/{total}] {:<28} fetched gold {:<3} {:<28} made up {:<2} rounds {:<2} {:>8.0} ms",
        i + 1,
        o.id,
        if o.fetched.iter().any(gold) { "yes" } else { "no" },
        verdict,
        o.unsupported,
        o.rounds,
        o.latency_ms
    );
}

fn print_report(r: &Report, secs: f64) {
    let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.3}"));
    let answered = r
        .per_question
        .iter()
        .filter(|p| !p.not_in_library && p.cited > 0)
        .count();
    let abstained = r
        .per_question
        .iter()
        .filter(|p| p.not_in_library && p.abstained)
        .count();
    let fetched = r
        .per_question
        .iter()
        .filter(|p| !p.not_in_library && p.fetched_gold)
        .count();
    let (cited, cited_gold) = r
        .per_question
        .iter()
        .filter(|p| !p.not_in_library)
        .fold((0, 0), |(a, b), p| (a + p.cited, b + p.cited_gold));
    let (made_up, kept) = r
        .per_question
        .iter()
        .fold((0, 0), |(a, b), p| (a + p.unsupported, b + p.kept_markers));
    println!(
        "\n  retrieval recall     {}  ({fetched}/{} fetched a gold note)",
        f(r.retrieval_recall),
        r.answerable
    );
    println!(
        "  citation precision   {}  ({cited_gold}/{cited} cited passages from a gold note)",
        f(r.citation_precision)
    );
    println!(
        "  unsupported markers  {}  ({made_up} made up of {} written)",
        f(r.unsupported_rate),
        made_up + kept
    );
    println!(
        "  abstention accuracy  {}  ({abstained}/{} not-in-the-library questions cite nothing)",
        f(r.abstention_accuracy),
        r.not_in_library
    );
    println!(
        "  answered             {}  ({answered}/{} answerable questions cite something)",
        f(r.answered_rate),
        r.answerable
    );
    println!("  rounds               mean {:.2}, max {}", r.rounds_mean, r.rounds_max);
    println!(
        "  latency              p50 {:.0} ms, p95 {:.0} ms",
        r.latency_p50_ms, r.latency_p95_ms
    );
    println!("  failed turns         {}", r.failed);
    println!("  ({secs:.1} s in all)");
}
