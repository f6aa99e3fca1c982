//! `GET /source` and `GET /source/page` over real HTTP: a note comes back
//! as safe HTML with its passage's lines and the heading Obsidian opens
//! at; a local PDF's page is drawn by the PDF worker; hostile keys and
//! chunk ids are refused before anything is read, a chunk of another
//! document is not served under this one's key, and no path outside the
//! vault or the library's own records is ever read or named.

use serde_json::{json, Value};

use crate::support::cite::web_with_vault;
use crate::support::web::WebServer;

/// A note with several sections, the third cited.
pub const RISOTTO: &str = "---\ncategory: recipe\n---\n# Risotto\n\nA slow rice dish from the north of Italy.\n\n## Rice\n\nUse carnaroli or arborio; never rinse it, the starch is the point.\n\n## Toasting\n\nToast the rice dry in the pan for two minutes until the grains turn glassy.\n\n## Stock\n\nAdd hot stock one ladle at a time and stir between ladles, about eighteen minutes in all.\n\n## Resting\n\nOff the heat, beat in cold butter and parmesan and let it rest two minutes.\n\n## Serving\n\nServe on warm plates; it waits for nobody.\n";

/// The highlighted sentence on page 2 of the fixture paper.
pub const HIGHLIGHT: &str = "We measured throughput on a deliberately modest machine with two processor cores.";

/// Add `vault/cooking/risotto.md` to the indexed vault.
pub fn add_risotto(s: &WebServer, vault_dir: &std::path::Path) {
    let vault = vault_dir.join("vault");
    std::fs::write(vault.join("cooking/risotto.md"), RISOTTO).unwrap();
    let opts = jarvis::ingest::vault::VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    jarvis::ingest::vault::refresh_vault(
        &s.app.kb().unwrap(),
        &vault,
        &opts,
        &|_, _| {},
        &jarvis::cancel::Cancel::new(),
    )
    .unwrap();
}

/// A local PDF in the library (the fixture paper, copied to `dir`) with a
/// highlight on page 2; returns its key (the PDF's path).
pub fn add_pdf(s: &WebServer, dir: &std::path::Path) -> String {
    let pdf = dir.join("throughput.pdf");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pdf/paper.pdf"),
        &pdf,
    )
    .unwrap();
    let key = pdf.display().to_string();
    let mut own = jarvis::store::Metadata::new();
    own.insert("doc_type".into(), json!("paper"));
    own.insert("visibility".into(), json!("public"));
    own.insert("source".into(), json!(key));
    own.insert("file_path".into(), json!(key));
    let mut caller = jarvis::store::Metadata::new();
    caller.insert("title".into(), json!("Converting PDFs on a modest machine"));
    caller.insert("page".into(), json!(2));
    caller.insert("annotation_kind".into(), json!("highlight"));
    // Where the highlight's two lines sit on page 2, as ingest keeps a
    // highlight's quad points (fractions of the page; from pdftotext -bbox).
    caller.insert(
        "rects".into(),
        json!("0.6784 0.0679 0.9048 0.0833;0.5084 0.0821 0.9048 0.0975"),
    );
    s.app
        .kb()
        .unwrap()
        .add_texts(HIGHLIGHT, &caller, &own, "", None, &jarvis::kb::Actor::Cli)
        .unwrap();
    key
}

fn chunk_of(s: &WebServer, key: &str, section_ends: &str) -> u64 {
    let kb = s.app.kb().unwrap();
    let page = kb.get_document_chunks(key, 1).unwrap();
    page.chunks
        .iter()
        .find(|c| c.meta_str("section").unwrap_or("").ends_with(section_ends))
        .unwrap_or_else(|| panic!("no chunk of {key} in {section_ends}"))
        .id
}

fn enc(s: &str) -> String {
    jarvis::web::routes::wire::url_encode(s)
}

#[test]
fn a_note_opens_at_its_heading_with_the_passage_marked() {
    let (s, vault) = web_with_vault("http://127.0.0.1:9");
    add_risotto(&s, vault.path());
    let chunk = chunk_of(&s, "cooking/risotto.md", "Stock");
    let r = s.get(&format!("/source?key={}&chunk={chunk}", enc("cooking/risotto.md")));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["view"], "note");
    assert_eq!(v["title"], "Risotto");
    assert_eq!(v["passage"]["chunk_id"], json!(chunk));
    assert_eq!(v["note"]["heading"], "Stock");
    // Line 15 of the file is "## Stock"; the passage is its section.
    assert_eq!(v["note"]["heading_line"], json!(15));
    assert_eq!(v["note"]["passage_lines"], json!([15, 17]));
    let html = v["note"]["html"].as_str().unwrap();
    assert!(html.contains(r#"<h2 data-line="15">Stock</h2>"#), "{html}");
    assert!(!html.contains("category: recipe"), "front matter is not shown: {html}");
    assert_eq!(
        v["href"],
        json!("obsidian://open?vault=vault&file=cooking%2Frisotto%23Stock"),
        "Obsidian opens at the heading"
    );
    // Without a chunk: the whole note, nothing marked.
    let whole = s.get(&format!("/source?key={}", enc("cooking/risotto.md"))).json();
    assert_eq!(whole["view"], "note");
    assert_eq!(whole["passage"], Value::Null);
    assert_eq!(whole["note"]["passage_lines"], Value::Null);
}

#[test]
fn a_pdf_page_is_drawn_from_the_librarys_own_file() {
    let (s, _vault) = web_with_vault("http://127.0.0.1:9");
    let dir = tempfile::tempdir().unwrap();
    let key = add_pdf(&s, dir.path());
    let v = s.get(&format!("/source?key={}", enc(&key))).json();
    assert_eq!(v["view"], "pdf", "{v}");
    let t0 = std::time::Instant::now();
    let p = s.get(&format!("/source/page?key={}&n=2&width=640", enc(&key)));
    eprintln!(
        "page 2 drawn in {:.0} ms (machine busy)",
        t0.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(p.status, 200, "{}", p.text());
    assert_eq!(p.header("content-type"), Some("image/png"));
    assert_eq!(p.header("x-pages"), Some("3"));
    assert_eq!(&p.body[..8], b"\x89PNG\r\n\x1a\n");
    let past = s.get(&format!("/source/page?key={}&n=9", enc(&key)));
    assert!(past.status >= 400, "a page past the end is refused");
    assert!(
        !past.text().contains(&dir.path().display().to_string()),
        "{}",
        past.text()
    );
    assert_eq!(s.get(&format!("/source/page?key={}&n=0", enc(&key))).status, 400);
}

#[test]
fn hostile_keys_and_chunks_are_refused_without_reading_a_file() {
    let (s, vault) = web_with_vault("http://127.0.0.1:9");
    add_risotto(&s, vault.path());
    let pasta_chunk = chunk_of(&s, "cooking/pasta.md", "Pasta");
    // A file outside the vault that a path trick would reach.
    let secret = vault.path().join("secret.md");
    std::fs::write(&secret, "# Secret\n\nnever shown").unwrap();
    for key in [
        "../secret.md",
        "cooking/../../secret.md",
        "/etc/passwd",
        &secret.display().to_string(),
        "file:///etc/passwd",
        "cooking/pasta.md\u{0}",
        "",
        " ",
        &"a".repeat(5000),
    ] {
        let r = s.get(&format!("/source?key={}", enc(key)));
        assert!(matches!(r.status, 400 | 404), "{key:?} → {} {}", r.status, r.text());
        assert!(!r.text().contains("never shown"), "{}", r.text());
        let p = s.get(&format!("/source/page?key={}&n=1", enc(key)));
        assert!(matches!(p.status, 400 | 404), "{key:?} → {}", p.status);
    }
    // A real note's key with another note's chunk: refused.
    let r = s.get(&format!(
        "/source?key={}&chunk={pasta_chunk}",
        enc("cooking/risotto.md")
    ));
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(!r.text().contains("Boil"), "{}", r.text());
    for chunk in ["-1", "abc", "1e9", "99999999999999999999999"] {
        let r = s.get(&format!("/source?key={}&chunk={chunk}", enc("cooking/risotto.md")));
        assert_eq!(r.status, 400, "{chunk}: {}", r.text());
    }
    // A note's file is not a PDF to draw.
    let p = s.get(&format!("/source/page?key={}&n=1", enc("cooking/risotto.md")));
    assert_eq!(p.status, 404, "{}", p.text());
    // A note moved out of the vault by a symlink is not read.
    #[cfg(unix)]
    {
        let vault_dir = vault.path().join("vault");
        std::fs::remove_file(vault_dir.join("cooking/risotto.md")).unwrap();
        std::os::unix::fs::symlink(&secret, vault_dir.join("cooking/risotto.md")).unwrap();
        let r = s.get(&format!("/source?key={}", enc("cooking/risotto.md")));
        assert!(!r.text().contains("never shown"), "{}", r.text());
        assert_eq!(r.json()["note"], Value::Null, "{}", r.text());
    }
    // The Host guard holds here too.
    let r = s.request(
        "GET",
        &format!("/source?key={}", enc("cooking/pasta.md")),
        &[("Host", "evil.example")],
        None,
    );
    assert_eq!(r.status, 421, "{}", r.text());
}
