//! The Library routes against a real knowledge base: listing with search,
//! metadata edits (papers only, 404 for an unknown source) and removal
//! (database entries only: the PDF on disk survives).

use serde_json::json;

use jarvis::kb::ops::Paper;

use crate::support::web::WebServer;

#[test]
fn papers_are_listed_searched_edited_and_removed_without_touching_files() {
    let s = WebServer::start();
    let pdf = s.sandbox.home().join("attention.pdf");
    std::fs::create_dir_all(pdf.parent().unwrap()).unwrap();
    std::fs::write(&pdf, b"%PDF-1.4 stand-in").unwrap();
    let kb = s.app.kb().unwrap();
    for (title, source) in [
        ("Attention Is All You Need", pdf.display().to_string()),
        (
            "BERT: Pre-training of Deep Bidirectional Transformers",
            "https://arxiv.org/abs/1810.04805".to_string(),
        ),
    ] {
        let paper = Paper {
            title: title.into(),
            authors: "Someone et al.".into(),
            source,
            ..Paper::default()
        };
        kb.add_paper(
            &paper,
            &format!("{title}. A summary of the paper."),
            &jarvis::kb::Actor::Cli,
        )
        .unwrap();
    }
    let all = s.get("/documents?kind=papers").json();
    assert_eq!(all["documents"].as_array().unwrap().len(), 2, "{all}");
    let hit = s.get("/documents?kind=papers&q=bert").json();
    let docs = hit["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 1, "{hit}");
    assert_eq!(docs[0]["authors"], "Someone et al.");
    assert_eq!(s.get("/documents?kind=notes").json()["documents"], json!([]));
    assert_eq!(s.get("/documents?kind=spaceships").status, 400);
    // Inline edit: metadata only.
    let r = s.post(
        "/documents/meta",
        &json!({ "source": "https://arxiv.org/abs/1810.04805", "title": "BERT", "doi": "10.18653/v1/N19-1423" }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["document"]["title"], "BERT");
    assert_eq!(r.json()["document"]["doi"], "10.18653/v1/N19-1423");
    assert_eq!(
        r.json()["document"]["authors"],
        "Someone et al.",
        "untouched fields stay"
    );
    assert_eq!(
        s.post("/documents/meta", &json!({ "source": "nope", "title": "x" }))
            .status,
        404
    );
    assert_eq!(
        s.post(
            "/documents/meta",
            &json!({ "source": "https://arxiv.org/abs/1810.04805", "title": " " })
        )
        .status,
        400
    );
    // Removal: the entry goes, the file stays, the invariant is stated.
    let r = s.post("/documents/remove", &json!({ "source": pdf.display().to_string() }));
    assert_eq!(r.status, 200, "{}", r.text());
    let msg = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("Database entry only — files on disk are never touched by jarvis"),
        "{msg}"
    );
    assert!(pdf.exists(), "the PDF on disk is never touched");
    assert_eq!(
        s.get("/documents?kind=papers").json()["documents"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.post("/documents/remove", &json!({ "source": pdf.display().to_string() }))
            .status,
        404
    );
}
