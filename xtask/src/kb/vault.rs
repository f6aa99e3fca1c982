//! `cargo xtask bench vault`: a generated vault of notes with frontmatter;
//! the first index (embedding-bound), a no-op refresh, and a refresh after
//! changing one note. Figures only.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use jarvis::ingest::vault::{refresh_vault, VaultOptions};
use jarvis::kb::{Kb, KbSettings};

use crate::common::{config, disk_usage, flag, load_embedder, mib, peak_rss, work_dir};

const STATUSES: [&str; 4] = ["drafting", "applied", "rejected", "accepted"];
const WORDS: [&str; 16] = [
    "protein",
    "folding",
    "cytometry",
    "retrieval",
    "kernel",
    "gradient",
    "vault",
    "meeting",
    "river",
    "budget",
    "sequence",
    "antibody",
    "cluster",
    "latency",
    "sample",
    "review",
];

fn note(i: usize) -> String {
    let w = |k: usize| WORDS[(i * 7 + k * 3) % WORDS.len()];
    let body: Vec<String> = (0..40).map(|k| w(k).to_string()).collect();
    format!(
        "---\ntype: {}\nstatus: {}\ncompany: Org {}\ntags: [{}, {}]\ndate: 2024-0{}-1{}\n---\n# Note {i}\n\n{}.\n",
        if i.is_multiple_of(3) {
            "job_application"
        } else {
            "meeting"
        },
        STATUSES[i % 4],
        i % 50,
        w(1),
        w(2),
        1 + i % 9,
        i % 10,
        body.join(" ")
    )
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let n: usize = flag(args, "--notes")
        .map(str::parse)
        .transpose()
        .context("--notes N")?
        .unwrap_or(10_000);
    let cfg = config(root)?;
    let dir = work_dir(root).join("bench-vault");
    let _ = std::fs::remove_dir_all(&dir);
    let vault = dir.join("vault");
    for i in 0..n {
        let sub = if i % 10 == 0 { "private" } else { "notes" };
        let p = vault.join(sub).join(format!("{:03}", i % 100)).join(format!("n{i}.md"));
        std::fs::create_dir_all(p.parent().context("parent")?)?;
        std::fs::write(&p, note(i))?;
    }
    let kb = Kb::open(&dir.join("rag"), load_embedder(&cfg)?, None, KbSettings::default())?;
    let opts = VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    println!(
        "vault bench: {n} generated notes with frontmatter (10% private), model {}",
        kb.model_id()
    );

    let t = Instant::now();
    let r = refresh_vault(&kb, &vault, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new())?;
    let secs = t.elapsed().as_secs_f64();
    let chunks = kb.count()?;
    println!(
        "first index: {} notes, {chunks} chunks in {secs:.1} s = {:.1} notes/s, {:.1} chunks/s (embedding-bound)",
        r.added.len(),
        r.added.len() as f64 / secs,
        chunks as f64 / secs
    );

    let t = Instant::now();
    let r = refresh_vault(&kb, &vault, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new())?;
    println!(
        "no-op refresh: {:.3} s ({} unchanged, {} added, {} updated)  goal ≤ 0.5 s",
        t.elapsed().as_secs_f64(),
        r.unchanged,
        r.added.len(),
        r.updated.len()
    );

    std::thread::sleep(std::time::Duration::from_millis(1100));
    let changed = vault.join("notes/001/n1.md");
    std::fs::write(&changed, format!("{}\nOne more line about antibodies.\n", note(1)))?;
    let t = Instant::now();
    let r = refresh_vault(&kb, &vault, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new())?;
    println!(
        "refresh after changing one note: {:.3} s ({} updated)  goal ≤ 1 s",
        t.elapsed().as_secs_f64(),
        r.updated.len()
    );
    println!(
        "on disk: {:.1} MiB; peak RSS {:.0} MiB",
        mib(disk_usage(&dir.join("rag"))),
        mib(peak_rss().unwrap_or(0))
    );
    Ok(())
}
