//! `cargo xtask eval vault`: `kb eval` on the Obsidian help vault's two
//! known-item sets (wikilink anchors, frontmatter aliases), at chunk and
//! document level, through the product's own `Kb::evaluate`.
//!
//! The vault is read from `../shared/data/obsidian-help/` (never copied into
//! the repository: it has no stated licence) and indexed with the product's
//! `refresh_vault` into `target/xtask-kb/vault/`, incrementally: a rerun
//! only re-embeds what changed (`--rebuild` starts from scratch).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use jarvis::index::bm25::FieldBoosts;
use jarvis::ingest::vault::{refresh_vault, VaultOptions};
use jarvis::kb::eval::{parse_known_items, EvalOptions, EvalReport};
use jarvis::kb::{Kb, KbSettings};

use crate::common;

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let data = common::flag(args, "--data")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::shared_data(root, "obsidian-help"));
    let vault = data.join("vault");
    if !vault.is_dir() {
        bail!("no help vault at {} (pass --data DIR)", vault.display());
    }
    let cfg = common::config(root)?;
    let embedder = common::load_embedder(&cfg)?;
    // `--cache NAME` keeps variants of the embedded text side by side.
    let cache = common::work_dir(root).join(common::flag(args, "--cache").unwrap_or("vault-eval"));
    if args.contains(&"--rebuild") && cache.exists() {
        std::fs::remove_dir_all(&cache).context("clear the cached KB")?;
    }
    let settings = settings_from_args(args)?;
    println!(
        "field boosts {:?}, exact-name weight {}, exact-heading weight {}, document aggregation {:?}, RRF k {}",
        settings.field_boosts,
        settings.exact_name_weight,
        settings.exact_heading_weight,
        settings.doc_aggregation,
        settings.rrf_k
    );
    common::retree(&cache.join("rag"), embedder.dims())?;
    let kb = Kb::open(&cache.join("rag"), embedder, None, settings)?;
    let t = Instant::now();
    let opts = VaultOptions {
        private_dirs: Vec::new(),
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    let report = refresh_vault(&kb, &vault, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new())?;
    println!(
        "help vault {}: {} added, {} updated, {} unchanged in {:.1} s ({} chunks)",
        vault.display(),
        report.added.len(),
        report.updated.len(),
        report.unchanged,
        t.elapsed().as_secs_f64(),
        kb.store().count()?
    );
    let only_dense = args.contains(&"--dense-only");
    println!(
        "\n{:<10} {:<6} {:>6} {:>7} {:>7} {:>8} {:>8}",
        "set", "level", "hit@1", "hit@10", "MRR@10", "p50 ms", "p95 ms"
    );
    let mut misses = Vec::new();
    let sets: Vec<&str> = common::flag(args, "--sets").map_or(vec!["anchors", "aliases"], |s| s.split(',').collect());
    for name in sets {
        let file = data.join(format!("{name}.jsonl"));
        let set =
            parse_known_items(&std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?)?;
        for group_docs in [false, true] {
            let opts = EvalOptions {
                group_docs,
                dense_only: only_dense,
                ..EvalOptions::default()
            };
            let r: EvalReport = kb.evaluate(&set, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new())?;
            println!(
                "{name:<10} {:<6} {:>6.3} {:>7.3} {:>7.3} {:>8.1} {:>8.1}",
                if group_docs { "docs" } else { "chunks" },
                r.hit1,
                r.hit10,
                r.mrr10,
                r.latency_p50_ms,
                r.latency_p95_ms
            );
            if group_docs {
                for q in r.per_query.iter().filter(|q| q.rank != Some(1)) {
                    misses.push(format!(
                        "  [{name}] {:?} → {} at {} (top: {})",
                        q.query,
                        q.relevant.join(", "),
                        q.rank.map_or("-".to_string(), |r| r.to_string()),
                        q.top.first().map_or("nothing", String::as_str)
                    ));
                }
            }
        }
    }
    if args.contains(&"--misses") {
        println!("\nnot at rank 1 (document level):");
        for m in misses {
            println!("{m}");
        }
    }
    Ok(())
}

/// The tuning knobs both evaluations take: `--boosts
/// body,title,aliases,headings,authors[,headline]`, `--exact W`, `--rrf-k K`, `--heading W`,
/// `--agg max|decay:W`; anything not given keeps the product's default.
pub(crate) fn settings_from_args(args: &[&str]) -> Result<KbSettings> {
    let mut settings = KbSettings::default();
    if let Some(b) = common::flag(args, "--boosts") {
        let v: Vec<f32> = b
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .context("--boosts")?;
        let (body, title, aliases, headings, authors, headline) = match *v.as_slice() {
            [a, b, c, d, e] => (a, b, c, d, e, FieldBoosts::default().headline),
            [a, b, c, d, e, f] => (a, b, c, d, e, f),
            _ => bail!("--boosts takes five or six numbers: body,title,aliases,headings,authors[,headline]"),
        };
        settings.field_boosts = FieldBoosts {
            body,
            title,
            headline,
            aliases,
            headings,
            authors,
        };
    }
    if let Some(w) = common::flag(args, "--exact") {
        settings.exact_name_weight = w.parse().context("--exact W")?;
    }
    if let Some(k) = common::flag(args, "--rrf-k") {
        settings.rrf_k = k.parse().context("--rrf-k K")?;
    }
    if let Some(w) = common::flag(args, "--heading") {
        settings.exact_heading_weight = w.parse().context("--heading W")?;
    }
    // `--fusion rrf:P` or `--fusion weighted:P` (P = the dense share in percent).
    if let Some(f) = common::flag(args, "--fusion") {
        let (name, p) = f.split_once(':').unwrap_or((f, "50"));
        if !matches!(name, "rrf" | "weighted") {
            bail!("--fusion takes rrf:P or weighted:P (P = dense share in percent)");
        }
        settings.fusion = jarvis::kb::search::Fusion::from_settings(name, p.parse().context("--fusion NAME:P")?);
    }
    // `--agg max` or `--agg decay:W` (document-level aggregation).
    if let Some(a) = common::flag(args, "--agg") {
        settings.doc_aggregation = match a.split_once(':') {
            None if a == "max" => jarvis::kb::search::DocAggregation::Max,
            Some(("decay", w)) => jarvis::kb::search::DocAggregation::Decay(w.parse().context("--agg decay:W")?),
            _ => bail!("--agg takes max or decay:W"),
        };
    }
    Ok(settings)
}
