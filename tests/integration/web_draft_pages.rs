//! The compiled PDF's pages as pictures over real HTTP: a real `latexmk`
//! build is held under the id `/compile` answers with, its pages are drawn
//! to PNG by the real PDF worker (PDFium in a child), within the caps; a
//! stale build, a page past the end, and hostile ids and names are refused
//! before anything is drawn.

use serde_json::json;

use crate::support::web::WebServer;

const TEX: &str = "\\documentclass{article}\n\\begin{document}\nFirst page.\n\\newpage\nSecond page.\n\\newpage\nThird page.\n\\end{document}\n";

fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |i: usize| u32::from_be_bytes([png[i], png[i + 1], png[i + 2], png[i + 3]]);
    (be(16), be(20))
}

#[test]
fn a_compiled_draft_is_shown_as_pictures_of_its_pages() {
    let s = WebServer::start();
    assert_eq!(
        s.get("/drafts").json()["latex"],
        json!(true),
        "latexmk is installed by cargo xtask test"
    );
    let r = s.post(
        "/drafts/new",
        &json!({ "filename": "paper.tex", "title": "Paper", "text": TEX }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()["draft_id"].as_str().unwrap().to_string();
    let folder = s.sandbox.jarvis_home().join("drafts").join(&id);
    let before: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();

    let c = s.post("/compile", &json!({ "draft_id": id, "filename": "paper.tex" }));
    assert_eq!(c.status, 200, "{}", c.text());
    assert!(
        c.body.starts_with(b"%PDF-"),
        "the PDF itself still comes back (Download PDF)"
    );
    let build = c.header("x-build-id").expect("x-build-id").to_string();
    assert_eq!(build.len(), 16);

    let t0 = std::time::Instant::now();
    let info = s.get(&format!("/drafts/{id}/pages?name=paper.tex&build={build}&width=800"));
    assert_eq!(info.status, 200, "{}", info.text());
    let info = info.json();
    eprintln!(
        "first page drawn (worker start + PDFium) in {:.0} ms (machine busy)",
        t0.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(info["pages"], json!(3), "{info}");
    assert_eq!(info["drawable"], json!(3));
    assert_eq!(info["width"], json!(800));
    // A4 or letter portrait: taller than wide.
    let h = info["height"].as_u64().unwrap();
    assert!((1000..=1200).contains(&h), "{info}");

    let t0 = std::time::Instant::now();
    let p2 = s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}&n=2&width=750"));
    eprintln!(
        "page 2 drawn in {:.0} ms (machine busy)",
        t0.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(p2.status, 200, "{}", p2.text());
    assert_eq!(p2.header("content-type"), Some("image/png"));
    assert_eq!(png_size(&p2.body).0, 800, "widths are drawn in 100 px steps");
    // The picture is the page: mostly white, with some dark text on it.
    let t0 = std::time::Instant::now();
    let again = s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}&n=2&width=800"));
    assert_eq!(again.body, p2.body, "a page drawn once is kept");
    eprintln!("page 2 again (kept) in {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
    let wide = s.get(&format!(
        "/drafts/{id}/page?name=paper.tex&build={build}&n=1&width=99999"
    ));
    assert_eq!(png_size(&wide.body).0, 2400, "the width is capped");
    let narrow = s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}&n=1&width=1"));
    assert_eq!(png_size(&narrow.body).0, 200, "and floored");

    // Refusals.
    let past = s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}&n=4"));
    assert_eq!(past.status, 404, "{}", past.text());
    assert!(past.text().contains("has 3"), "{}", past.text());
    assert_eq!(
        s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}&n=0"))
            .status,
        400
    );
    assert_eq!(
        s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}")).status,
        400
    );
    let stale = s.get(&format!("/drafts/{id}/page?name=paper.tex&build=0123456789abcdef&n=1"));
    assert_eq!(stale.status, 404);
    assert!(stale.text().contains("compile it again"), "{}", stale.text());
    for (bad_id, bad_name) in [
        ("..", "paper.tex"),
        ("UPPER", "paper.tex"),
        (id.as_str(), "../paper.tex"),
        (id.as_str(), "..%2Fpaper.tex"),
        (id.as_str(), "-latex%3Dpdflatex"),
        (id.as_str(), "draft.json"),
    ] {
        let r = s.get(&format!("/drafts/{bad_id}/page?name={bad_name}&build={build}&n=1"));
        assert!(
            r.status == 400 || r.status == 404,
            "{bad_id} {bad_name}: {} {}",
            r.status,
            r.text()
        );
        assert_ne!(r.header("content-type"), Some("image/png"));
    }
    // Another file of the same draft has no build.
    let other = s.post(
        "/drafts/new",
        &json!({ "draft_id": id, "filename": "notes.md", "text": "# x\n" }),
    );
    assert_eq!(other.status, 200, "{}", other.text());
    assert_eq!(
        s.get(&format!("/drafts/{id}/page?name=notes.md&build={build}&n=1"))
            .status,
        404
    );

    // Rebuilding holds the new build; the old id stops drawing.
    let edited = TEX.replace("Third page.", "Third page, edited.");
    let f = s.get(&format!("/drafts/{id}/file?name=paper.tex")).json();
    let sv = s.post(
        "/drafts/save",
        &json!({ "draft_id": id, "filename": "paper.tex", "text": edited, "expect_hash": f["hash"] }),
    );
    assert_eq!(sv.status, 200, "{}", sv.text());
    let c2 = s.post("/compile", &json!({ "draft_id": id, "filename": "paper.tex" }));
    let build2 = c2.header("x-build-id").unwrap().to_string();
    assert_ne!(build2, build);
    assert_eq!(
        s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build}&n=1"))
            .status,
        404
    );
    assert_eq!(
        s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build2}&n=3"))
            .status,
        200
    );

    // The draft folder holds no build output.
    let mut after: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    after.retain(|n| n != "notes.md" && n != ".versions");
    let (mut a, mut b) = (after, before);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // A deleted draft's builds go with it.
    assert_eq!(s.delete(&format!("/drafts/{id}")).status, 200);
    assert_eq!(
        s.get(&format!("/drafts/{id}/page?name=paper.tex&build={build2}&n=1"))
            .status,
        404
    );
}
