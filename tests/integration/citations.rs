//! Citations out: `jarvis kb bibtex` against the real binary, and a draft
//! that cites library papers compiled with the real latexmk + BibTeX and
//! exported with pandoc's citeproc — the BibTeX Jarvis writes is read back
//! by the real tools, and a paper whose metadata is hostile TeX comes out
//! of the PDF as text.

use serde_json::{json, Value};

use jarvis::drafts::Visibility;
use jarvis::kb::Kb;
use jarvis::store::Metadata;

use crate::support::pdf::{built_pdf, pdf_text};
use crate::support::runtime::{config, open_kb as open};
use crate::support::Sandbox;

/// The title a hostile PDF could carry: it closes the field's brace and
/// tries to read a file.
const HOSTILE_TITLE: &str = "Oops} \\input{/etc/passwd} and 100% of $x_1$";

fn paper(kb: &Kb, source: &str, fields: Value) {
    let mut own = Metadata::new();
    own.insert("doc_type".into(), json!("paper"));
    own.insert("visibility".into(), json!("public"));
    own.insert("source".into(), json!(source));
    let caller: Metadata = fields.as_object().unwrap().clone().into_iter().collect();
    kb.add_texts("A paper's summary.", &caller, &own, "", None, &jarvis::kb::Actor::Cli)
        .expect("add paper");
}

/// Three papers (a journal article with structured authors, an arXiv
/// preprint, one with hostile metadata) and a second Jumper 2021 paper
/// that needs a suffix.
fn seed(sb: &Sandbox) {
    let kb = open(sb);
    paper(
        &kb,
        "https://doi.org/10.1038/s41586-021-03819-2",
        json!({"title": "Highly accurate protein structure prediction with AlphaFold",
               "authors": "John Jumper, Richard Evans",
               "author_list": [{"given": "John", "family": "Jumper"}, {"given": "Richard", "family": "Evans"}],
               "year": 2021, "venue": "Nature", "doi": "10.1038/s41586-021-03819-2",
               "publication_type": "journal-article", "volume": "596", "pages": "583-589"}),
    );
    paper(
        &kb,
        "https://arxiv.org/abs/1706.03762",
        json!({"title": "Attention Is All You Need", "authors": "Ashish Vaswani, Noam Shazeer",
               "arxiv_id": "1706.03762", "year": 2017, "venue": "arXiv"}),
    );
    paper(
        &kb,
        "file:///papers/evil.pdf",
        json!({"title": HOSTILE_TITLE, "authors": "Mallory \\def\\x{} Evil", "year": 2024,
               "venue": "J. of {Hacks}\n@misc{pwned,"}),
    );
    paper(
        &kb,
        "https://doi.org/10.1/second",
        json!({"title": "Highly parallel folding", "authors": "Jane Jumper", "year": 2021}),
    );
}

#[test]
fn kb_bibtex_lists_stable_keys_and_writes_bibtex() {
    let sb = Sandbox::new();
    seed(&sb);
    let r = sb.kb(&["bibtex", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows: Vec<Value> = serde_json::from_str(&r.stdout).expect("json");
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "evil2024oops",
            "jumper2021highly",
            "jumper2021highlya",
            "vaswani2017attention"
        ],
        "{}",
        r.stdout
    );
    assert_eq!(rows[1]["authors"], "Jumper and Evans");

    let r = sb.kb(&["bibtex"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("@article{jumper2021highly,\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("  author = {Jumper, John and Evans, Richard},\n"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("eprint = {1706.03762}"), "{}", r.stdout);
    assert!(!r.stdout.contains("\\input"), "{}", r.stdout);
    assert!(!r.stdout.contains("\n@misc{pwned"), "{}", r.stdout);

    // A query narrows; -o writes a file relative to the caller's folder.
    let r = sb.kb(&["bibtex", "alphafold", "-o", "refs.bib"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("wrote 1 entry to"), "{}", r.stderr);
    let file = std::fs::read_to_string(sb.dir.path().join("refs.bib")).unwrap();
    assert!(file.starts_with("@article{jumper2021highly,"), "{file}");
    assert_eq!(file.matches('@').count(), 1);

    let r = sb.kb(&["bibtex", "--kind", "notes"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("only papers have citation keys"), "{}", r.stderr);
    let r = sb.kb(&["bibtex", "nothing-like-this"]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("no paper matches"), "{}", r.stderr);

    // The keys do not move when a paper with the same base arrives.
    let kbh = open(&sb);
    paper(
        &kbh,
        "https://doi.org/10.1/third",
        json!({"title": "Highly strung", "authors": "Ann Jumper", "year": 2021}),
    );
    drop(kbh);
    let rows: Vec<Value> = serde_json::from_str(&sb.kb(&["bibtex", "--json", "jumper"]).stdout).unwrap();
    let pairs: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("jumper2021highly", "https://doi.org/10.1038/s41586-021-03819-2"),
            ("jumper2021highlya", "https://doi.org/10.1/second"),
            ("jumper2021highlyb", "https://doi.org/10.1/third"),
        ]
    );
}

#[test]
fn a_draft_citing_library_papers_compiles_with_its_bibliography() {
    let sb = Sandbox::new();
    seed(&sb);
    let app = jarvis::app::App::from_config(config(&sb), |_| None);
    let d = app.drafts().unwrap();
    let ws = &d.workspace;
    let tex = "\\documentclass{article}\n\\begin{document}\nFolding \\cite{jumper2021highly} and attention \\cite{vaswani2017attention, evil2024oops}; not ours \\cite{unknown1999x}.\n\\bibliographystyle{plain}\n\\bibliography{refs}\n\\end{document}\n";
    let meta = ws
        .create_draft("paper", "paper.tex", tex, Visibility::Private, None)
        .unwrap();
    let (pdf, _) = built_pdf(app.compile_draft(&meta.id, "paper.tex", None).expect("compile"));
    let text = pdf_text(&pdf);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // BibTeX read the .bib: the references are typeset, numbered, with the
    // protected capitals kept by plain's sentence case.
    assert!(flat.contains("References"), "{flat}");
    assert!(
        flat.contains("Highly accurate protein structure prediction with AlphaFold"),
        "{flat}"
    );
    assert!(flat.contains("Attention is all you need"), "{flat}");
    assert!(flat.contains("John Jumper and Richard Evans"), "{flat}");
    assert!(flat.contains("Folding [2]") || flat.contains("Folding [1]"), "{flat}");
    // The hostile title is printed, not run.
    assert!(
        flat.contains("\\input{/etc/passwd}"),
        "the command came out as text: {flat}"
    );
    assert!(!flat.contains("root:x:0:0"), "{flat}");
    // The .bib sits beside the draft: the cited library papers only.
    let bib = ws.read_file(&meta.id, "refs.bib").unwrap().text;
    assert!(bib.starts_with(jarvis::drafts::cite::GENERATED_MARK), "{bib}");
    assert_eq!(bib.matches("\n@").count(), 3, "{bib}");
    assert!(
        !bib.contains("unknown1999x") && !bib.contains("jumper2021highlya"),
        "{bib}"
    );

    // A .bib of the user's own under that name is never replaced.
    ws.save_draft_file(&meta.id, "refs.bib", "@misc{jumper2021highly, title = {Mine}}\n", None)
        .unwrap();
    let (pdf, _) = built_pdf(app.compile_draft(&meta.id, "paper.tex", None).expect("compile"));
    assert!(pdf_text(&pdf).contains("Mine"));
    assert!(ws
        .read_file(&meta.id, "refs.bib")
        .unwrap()
        .text
        .starts_with("@misc{jumper2021highly, title = {Mine}}"));

    // Markdown: pandoc's citeproc against <stem>.bib.
    ws.add_draft_file(
        &meta.id,
        "notes.md",
        "# Notes\n\nFolding works [@jumper2021highly, p. 3].\n\n# References\n",
    )
    .unwrap();
    let (pdf, _) = built_pdf(app.export_draft(&meta.id, "notes.md", None).expect("export"));
    let flat = pdf_text(&pdf).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("(Jumper and Evans 2021, 3)"), "{flat}");
    assert!(
        flat.contains("Highly Accurate Protein Structure Prediction with AlphaFold"),
        "{flat}"
    );
    assert!(ws.read_file(&meta.id, "notes.bib").is_ok());
}
