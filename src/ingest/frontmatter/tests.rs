use super::*;
use serde_json::json;

#[test]
fn maps_well_known_keys_and_namespaces_the_rest() {
    let p = parse(
        "---\ntype: job_application\nOrg: Acme Bio\nstatus: rejected\napplied: 2024/03/05\ntags: [remote, \"#ml\"]\nsalary: 100000\nremote ok: true\nvisibility: public\ndoc_type: paper\n---\n# Body\ntext\n",
    );
    assert!(p.has_frontmatter);
    assert_eq!(p.body, "# Body\ntext\n");
    assert_eq!(p.fields["category"], json!("job_application"));
    assert_eq!(p.fields["entity"], json!("Acme Bio"));
    assert_eq!(p.fields["status"], json!("rejected"));
    assert_eq!(p.fields["event_date"], json!("2024-03-05"));
    assert_eq!(p.fields["tags"], json!("|ml|remote|"));
    assert_eq!(p.fields["x_salary"], json!(100000));
    assert_eq!(p.fields["x_remote_ok"], json!(true));
    // Jarvis's own keys cannot be set from a note: they are namespaced.
    assert_eq!(p.fields["x_visibility"], json!("public"));
    assert_eq!(p.fields["x_doc_type"], json!("paper"));
    assert!(!p.fields.contains_key("visibility") && !p.fields.contains_key("doc_type"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert_eq!(record_header(&p.fields), "job_application · Acme Bio · rejected");
}

#[test]
fn tags_in_every_form() {
    let t = |yaml: &str| parse(&format!("---\n{yaml}\n---\n")).fields.get("tags").cloned();
    // Unquoted, ` #` starts a YAML comment; quoted, `#tag` is Obsidian's form.
    assert_eq!(t("tags: remote, ml , #deep learning"), Some(json!("|ml|remote|")));
    assert_eq!(
        t("tags: \"remote, ml , #deep learning\""),
        Some(json!("|deep-learning|ml|remote|"))
    );
    assert_eq!(
        t("tags:\n  - remote-first\n  - \"machine learning\"\n  - '#x'"),
        Some(json!("|machine-learning|remote-first|x|"))
    );
    assert_eq!(t("tags: \"#a #b\""), Some(json!("|a|b|")));
    assert_eq!(t("tags: []"), None);
}

#[test]
fn dates_in_several_formats() {
    for (raw, want) in [
        ("2024-01-05", "2024-01-05"),
        ("2024/1/5", "2024-01-05"),
        ("05.01.2024", "2024-01-05"),
        ("Jan 5, 2024", "2024-01-05"),
        ("January 5 2024", "2024-01-05"),
        ("5 January 2024", "2024-01-05"),
        ("2024-01-05T10:00:00Z", "2024-01-05"),
        ("sometime in spring", "sometime in spring"),
        ("2024-13-40", "2024-13-40"),
    ] {
        assert_eq!(normalise_date(raw), want, "{raw}");
    }
}

#[test]
fn malformed_yaml_warns_and_keeps_the_body() {
    let p = parse("---\ntitle: [unclosed\nstatus: x: y\n---\nbody survives\n");
    assert!(p.has_frontmatter);
    assert_eq!(p.body, "body survives\n");
    assert!(p.fields.is_empty());
    assert!(p.warnings[0].contains("not valid YAML"), "{:?}", p.warnings);
}

#[test]
fn nested_values_are_skipped_with_a_warning() {
    let p = parse("---\nstatus: open\nmeta:\n  a: 1\n  b: [1, 2]\nlist_of_maps:\n  - x: 1\n---\n");
    assert_eq!(p.fields.len(), 1);
    assert_eq!(p.fields["status"], json!("open"));
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
}

#[test]
fn duplicate_keys_last_one_wins_with_a_warning() {
    let p = parse("---\nstatus: open\nstatus: closed\n---\n");
    assert_eq!(p.fields["status"], json!("closed"));
    assert!(
        p.warnings.iter().any(|w| w.contains("more than once")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn billion_laughs_is_bounded() {
    let mut yaml =
        String::from("---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
    let mut prev = "a";
    for n in names {
        yaml.push_str(&format!(
            "{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = n;
    }
    yaml.push_str("status: fine\n---\nbody\n");
    let t = std::time::Instant::now();
    let p = parse(&yaml);
    // Finishes at once (no expansion) and keeps what is safe to keep.
    assert!(t.elapsed().as_secs() < 5);
    assert_eq!(p.fields.get("status"), Some(&json!("fine")));
    assert_eq!(p.body, "body\n");
    // Scalar aliases still work.
    let p = parse("---\norg: &o Acme\ncompany: *o\n---\n");
    assert_eq!(p.fields["entity"], json!("Acme"));
}

#[test]
fn oversized_frontmatter_is_ignored_not_fatal() {
    let big = format!("---\nx: \"{}\"\n---\nbody\n", "a".repeat(MAX_FRONTMATTER_BYTES + 10));
    let p = parse(&big);
    assert!(p.fields.is_empty());
    assert_eq!(p.body, "body\n");
    assert!(p.warnings[0].contains("limit"));
}

#[test]
fn no_frontmatter_or_an_unclosed_block_is_plain_text() {
    assert!(!parse("# Title\ntext").has_frontmatter);
    let p = parse("---\nnot closed\n");
    assert!(!p.has_frontmatter);
    assert_eq!(p.body, "---\nnot closed\n");
    let p = parse("\u{feff}---\r\nstatus: x\r\n---\r\nbody");
    assert_eq!(p.fields["status"], json!("x"));
    assert_eq!(p.body, "body");
}

#[test]
fn aliases_become_a_list_from_a_list_or_a_string() {
    let p = parse("---\naliases:\n  - Advanced Markdown\n  - ' adv md '\n  - Advanced Markdown\n---\nx\n");
    assert_eq!(p.fields["aliases"], json!(["Advanced Markdown", "adv md"]));
    assert!(!p.fields.contains_key("x_aliases"));
    let p = parse("---\nalias: One, with a comma\n---\nx\n");
    assert_eq!(p.fields["aliases"], json!(["One, with a comma"]));
    let p = parse("---\naliases: []\n---\nx\n");
    assert!(!p.fields.contains_key("aliases"));
}
