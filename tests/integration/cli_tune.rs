//! `jarvis kb eval FILE --tune [--apply]` through the real binary: every
//! fusion is tried on the set, the best is the best of what was tried, and
//! once applied a plain `kb eval` scores exactly what tuning promised.

use crate::support::{run, Sandbox};

/// Six notes on unrelated topics, and questions that share no word with
/// their answer (only meaning): BM25 alone can only match them on words like
/// "the" in the wrong note, the dense leg finds them, so the BM25 end of the
/// grid scores worse than the dense end — deterministically, with the one
/// bundled model.
const NOTES: &[(&str, &str, Option<&str>)] = &[
    (
        "Bread.md",
        "Sourdough needs a lively starter and a slow proof.",
        Some("how dough rises with wild yeast fermentation"),
    ),
    (
        "Volcanoes.md",
        "Basalt lava flows from shield volcanoes.",
        Some("mountains that erupt with molten rock"),
    ),
    (
        "Tides.md",
        "The moon pulls the oceans into two bulges.",
        Some("why sea level rises and falls twice daily"),
    ),
    (
        "Bees.md",
        "A hive keeps its brood warm through winter.",
        Some("honey insects surviving cold weather"),
    ),
    ("Chess.md", "Control the centre before you attack the king.", None),
    ("Rivers.md", "Meanders widen where the current slows.", None),
];

fn config_set(sb: &Sandbox, key: &str, value: &str) {
    let mut c = sb.jarvis();
    c.args(["config", "set", key, value]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn tuning_finds_the_best_fusion_and_applying_it_reproduces_its_score() {
    let sb = Sandbox::new();
    let vault = sb.dir.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    let mut golden = String::new();
    for (file, text, question) in NOTES {
        let title = file.trim_end_matches(".md");
        std::fs::write(vault.join(file), format!("# {title}\n\n{text}\n")).unwrap();
        if let Some(q) = question {
            golden.push_str(&format!("{{\"query\": \"{q}\", \"answer\": \"{file}\"}}\n"));
        }
    }
    let golden_path = sb.dir.path().join("golden.jsonl");
    std::fs::write(&golden_path, golden).unwrap();
    let golden = golden_path.to_str().unwrap();
    sb.write_config(&format!("[vault]\npath = \"{}\"\n", vault.display()));
    sb.kb(&["index-vault", "--json"]).json("index-vault");
    // Start from the BM25 end: the dense leg weighs nothing.
    config_set(&sb, "rag.dense_weight", "0");

    let v = sb.kb(&["eval", golden, "--tune", "--json"]).json("eval --tune");
    let tune = &v["tune"];
    assert_eq!(v["applied"], false, "{v}");
    assert_eq!(tune["metric"], "mrr@10");
    let tried = tune["tried"].as_array().unwrap();
    assert_eq!(tried.len(), 22, "{v}");
    let max = tried
        .iter()
        .map(|t| t["score"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    let best = tune["best"]["score"].as_f64().unwrap();
    assert_eq!(best, max, "{v}");
    assert_eq!(
        (
            tune["current"]["fusion"].as_str(),
            tune["current"]["dense_weight"].as_u64()
        ),
        (Some("weighted"), Some(0)),
        "{v}"
    );
    let current = tune["current"]["score"].as_f64().unwrap();
    assert!(current < best, "the BM25 end should lose here: {v}");
    assert!(tune["best"]["dense_weight"].as_u64().unwrap() > 0, "{v}");

    // Applied: the configuration holds the best, and a plain evaluation
    // scores what tuning said it would.
    let v = sb
        .kb(&["eval", golden, "--tune", "--apply", "--json"])
        .json("eval --tune --apply");
    assert_eq!(v["applied"], true, "{v}");
    let chosen = &v["tune"]["best"];
    let config = std::fs::read_to_string(sb.jarvis_home().join("config.toml")).unwrap();
    assert!(
        config.contains(&format!("fusion = \"{}\"", chosen["fusion"].as_str().unwrap()))
            && config.contains(&format!("dense_weight = {}", chosen["dense_weight"])),
        "{config}"
    );
    let plain = sb.kb(&["eval", golden, "--json"]).json("eval");
    assert_eq!(
        plain["mrr10"].as_f64().unwrap(),
        chosen["score"].as_f64().unwrap(),
        "{plain}"
    );

    // Again: nothing left to improve, nothing written; the human form says so.
    let mut c = sb.jarvis();
    c.args(["kb", "eval", golden, "--tune", "--apply"]);
    let r = run(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("← best") && r.stdout.contains("already the best"),
        "{}",
        r.stdout
    );

    // --tune weighs the two legs: it cannot run dense-only.
    let mut c = sb.jarvis();
    c.args(["kb", "eval", golden, "--tune", "--dense-only"]);
    assert_ne!(run(c).code, 0);
}
