//! Drafts built with the real latexmk and pandoc from Debian (installed by
//! `cargo xtask test`): normal documents compile; hostile ones — shell
//! escape, reading /etc/passwd, writing outside, an endless loop — fail
//! safely inside the timeout; nothing is written outside the build
//! directory and the draft folder is unchanged. An export embeds no image
//! from outside the draft and fetches nothing; UTF-8 names (Greek, Polish,
//! German) survive the default engine, xelatex.

use std::path::Path;
use std::time::Duration;

use jarvis::drafts::compile::{self, BuildResult, Toolchain};
use jarvis::drafts::{DraftSettings, Visibility, Workspace};

use crate::support::fs::tree;
use crate::support::pdf::{built_pdf, pdf_text, poppler};

fn ws(timeout: Duration) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = DraftSettings::with_root(dir.path().join("drafts"));
    s.compile_timeout = timeout;
    (dir, Workspace::open(s).expect("open"))
}

fn need_tools(ws: &Workspace) {
    let t = Toolchain::detect(ws);
    assert!(
        t.latex && t.pandoc,
        "latexmk/xelatex/pandoc missing ({t:?}) — `cargo xtask test` installs them"
    );
}

fn failed(r: BuildResult) -> (String, String, u64) {
    match r {
        BuildResult::Failed {
            ending,
            log,
            elapsed_ms,
        } => (ending, log, elapsed_ms),
        BuildResult::Pdf { .. } => panic!("a hostile document built"),
    }
}

const NORMAL_TEX: &str = "\\documentclass{article}\n\\usepackage{lmodern}\n\\begin{document}\nHello, \\emph{world}: $e^{i\\pi}+1=0$.\n\\input{chapter}\n\\end{document}\n";

#[test]
fn a_normal_tex_compiles_with_its_chapters() {
    let (_t, ws) = ws(Duration::from_secs(120));
    need_tools(&ws);
    let d = ws
        .create_draft("paper", "paper.tex", NORMAL_TEX, Visibility::Private, None)
        .expect("create");
    ws.add_draft_file(&d.id, "chapter.tex", "A chapter.\n").expect("add");
    let before = tree(ws.root());
    let (bytes, ms) = built_pdf(compile::compile_latex(&ws, &d.id, "paper.tex", None, None).expect("compile"));
    assert!(bytes.starts_with(b"%PDF"), "not a PDF");
    eprintln!("figure: latexmk compile of a one-page article took {ms} ms (machine shared, not quiet)");
    assert_eq!(tree(ws.root()), before, "the draft folder changed");
}

#[test]
fn markdown_exports_with_maths() {
    let (_t, ws) = ws(Duration::from_secs(120));
    need_tools(&ws);
    let md =
        "# Notes\n\nAccents: café, naïve, Zürich.\n\nInline $a^2 + b^2 = c^2$ and\n\n$$\\int_0^1 x\\,dx = \\frac12$$\n";
    let d = ws
        .create_draft("notes", "notes.md", md, Visibility::Public, None)
        .expect("create");
    let before = tree(ws.root());
    let (bytes, ms) = built_pdf(compile::export_pdf(&ws, &d.id, "notes.md", None, None).expect("export"));
    assert!(bytes.starts_with(b"%PDF"));
    eprintln!("figure: pandoc → xelatex export of a short note took {ms} ms (machine shared, not quiet)");
    assert_eq!(tree(ws.root()), before);
}

#[test]
fn hostile_tex_fails_safely() {
    let (t, ws) = ws(Duration::from_secs(8));
    need_tools(&ws);
    let marker = t.path().join("pwned");
    let outside = t.path().join("written-outside.tex");
    let doc = |body: &str| format!("\\documentclass{{article}}\n\\begin{{document}}\n{body}\n\\end{{document}}\n");
    let d = ws
        .create_draft(
            "evil",
            "shell.tex",
            &doc(&format!("\\immediate\\write18{{touch {}}}x", marker.display())),
            Visibility::Public,
            None,
        )
        .expect("create");
    ws.add_draft_file(&d.id, "passwd.tex", &doc("\\input{/etc/passwd}"))
        .expect("add");
    ws.add_draft_file(
        &d.id,
        "write.tex",
        &doc(&format!(
            "\\newwrite\\f\\immediate\\openout\\f={}\\immediate\\write\\f{{x}}\\immediate\\closeout\\f x",
            outside.display()
        )),
    )
    .expect("add");
    ws.add_draft_file(
        &d.id,
        "up.tex",
        &doc("\\newwrite\\f\\immediate\\openout\\f=../escaped.tex\\immediate\\write\\f{x}\\immediate\\closeout\\f x"),
    )
    .expect("add");
    ws.add_draft_file(&d.id, "meta.tex", &doc("\\input{draft.json}"))
        .expect("add");
    ws.add_draft_file(&d.id, "loop.tex", &doc("\\def\\x{\\x}\\x"))
        .expect("add");
    let before = tree(ws.root());

    // \write18: the shell never runs (the document itself may build).
    let _ = compile::compile_latex(&ws, &d.id, "shell.tex", None, None).expect("run");
    assert!(!marker.exists(), "\\write18 ran a command");

    // An existing absolute file is refused, not merely missing.
    assert!(Path::new("/etc/passwd").exists());
    let (_, log, _) = failed(compile::compile_latex(&ws, &d.id, "passwd.tex", None, None).expect("run"));
    assert!(!log.contains("root:x:0:0"), "passwd leaked into the log");
    assert!(log.contains("/etc/passwd"), "{log}");
    // kpathsea names the refusal (openin_any = p), not a missing file.
    assert!(
        log.contains("openin_any") || log.contains("Not reading"),
        "not a refusal:\n{log}"
    );

    // Writes by absolute path or .. are refused.
    let r = compile::compile_latex(&ws, &d.id, "write.tex", None, None).expect("run");
    assert!(!outside.exists(), "wrote outside by absolute path ({r:?})");
    let r = compile::compile_latex(&ws, &d.id, "up.tex", None, None).expect("run");
    assert!(
        !ws.root().join(&d.id).parent().expect("p").join("escaped.tex").exists(),
        "wrote via .. ({r:?})"
    );
    assert!(!ws.root().join("escaped.tex").exists());

    // draft.json is not in the build copy.
    failed(compile::compile_latex(&ws, &d.id, "meta.tex", None, None).expect("run"));

    // An endless loop is killed at the timeout.
    let (ending, _, ms) = failed(compile::compile_latex(&ws, &d.id, "loop.tex", None, None).expect("run"));
    assert!(ending.contains("stopped after"), "{ending}");
    assert!(ms < 30_000, "the loop ran {ms} ms");

    assert_eq!(tree(ws.root()), before, "the draft folder changed");
    let leftovers: Vec<_> = std::fs::read_dir(t.path())
        .expect("ls")
        .map(|e| e.expect("e").file_name())
        .collect();
    assert_eq!(
        leftovers,
        [std::ffi::OsString::from("drafts")],
        "something was written beside the drafts root"
    );
}

#[test]
fn raw_tex_in_markdown_is_not_run() {
    let (t, ws) = ws(Duration::from_secs(120));
    need_tools(&ws);
    let marker = t.path().join("pwned-md");
    let md = format!(
        "# x\n\n\\input{{/etc/passwd}}\n\n\\immediate\\write18{{touch {}}}\n\n```{{=latex}}\n\\input{{/etc/passwd}}\n```\n",
        marker.display()
    );
    let d = ws
        .create_draft("evil md", "evil.md", &md, Visibility::Public, None)
        .expect("create");
    let (bytes, _) = built_pdf(compile::export_pdf(&ws, &d.id, "evil.md", None, None).expect("export"));
    assert!(bytes.starts_with(b"%PDF"));
    assert!(!marker.exists());
}

#[test]
fn only_the_right_types_build() {
    let (_t, ws) = ws(Duration::from_secs(10));
    let d = ws
        .create_draft("x", "x.md", "x", Visibility::Public, None)
        .expect("create");
    assert!(compile::compile_latex(&ws, &d.id, "x.md", None, None).is_err());
    assert!(compile::compile_latex(&ws, &d.id, "-latex=pdflatex -shell-escape %O %S.tex", None, None).is_err());
    assert!(compile::export_pdf(&ws, &d.id, "../x.md", None, None).is_err());
}

/// The images in a PDF, as `pdfimages -list` rows (width, height).
fn pdf_images(pdf: &[u8]) -> Vec<(u32, u32)> {
    poppler("pdfimages", &["-list"], pdf, &[])
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.get(3)?.parse().ok()?, f.get(4)?.parse().ok()?))
        })
        .collect()
}

/// A loopback HTTP server that counts the connections it is offered and
/// answers each with a small PNG.
fn counting_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let png = png_bytes(5, 4);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                png.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&png);
        }
    });
    (port, hits)
}

fn png_bytes(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb([200, 30, 30]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).expect("png");
    out.into_inner()
}

#[test]
fn export_embeds_no_outside_image_and_fetches_nothing() {
    let (t, ws) = ws(Duration::from_secs(120));
    need_tools(&ws);
    let outside = t.path().join("outside-secret.png");
    std::fs::write(&outside, png_bytes(3, 2)).expect("png");
    let abs = outside.display().to_string();
    let (port, hits) = counting_server();
    let md = format!(
        "# Report\n\nAbsolute ![abs]({abs}).\n\nUp ![up](../../../../../../../../../../..{abs}).\n\n\
         File ![file](file://{abs}).\n\nEscaped ![esc]({}).\n\nWeb ![web](http://127.0.0.1:{port}/x.png).\n\n\
         Titled ![titled]({abs} \"t\"){{width=50%}}\n\n[ref image]: {abs}\n\n![by ref][ref image]\n",
        abs.replace('/', "%2F")
    );
    let meta = format!("---\ntitle: \"Shown ![meta]({abs})\"\n---\n\n");
    let d = ws
        .create_draft("images", "report.md", &format!("{meta}{md}"), Visibility::Public, None)
        .expect("create");
    let (bytes, _) = built_pdf(compile::export_pdf(&ws, &d.id, "report.md", None, None).expect("export"));
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the export fetched an image from a loopback server"
    );
    let images = pdf_images(&bytes);
    assert!(
        images.is_empty(),
        "images from outside the draft were embedded: {images:?}"
    );
    let text = pdf_text(&bytes);
    assert!(text.contains("image left out"), "{text}");
    assert!(text.contains("Absolute") && text.contains("by ref"), "{text}");
}

const NAMES: [&str; 3] = ["Schrödinger", "Αθήνα", "Łódź"];

#[test]
fn utf8_names_export_and_compile_with_the_default_engine() {
    let (_t, ws) = ws(Duration::from_secs(180));
    need_tools(&ws);
    assert_eq!(ws.settings().pdf_engine, "xelatex", "the default engine");
    let line = NAMES.join(", ");
    let d = ws
        .create_draft(
            "names",
            "names.md",
            &format!("# Authors\n\n{line}.\n"),
            Visibility::Public,
            None,
        )
        .expect("create");
    let (bytes, _) = built_pdf(compile::export_pdf(&ws, &d.id, "names.md", None, None).expect("export"));
    let text = pdf_text(&bytes);
    for name in NAMES {
        assert!(
            text.contains(name),
            "{name} missing from the exported PDF's text:\n{text}"
        );
    }
    ws.add_draft_file(
        &d.id,
        "names.tex",
        &format!(
            "\\documentclass{{article}}\n\\usepackage{{fontspec}}\n\\setmainfont{{DejaVu Serif}}\n\\begin{{document}}\n{line}.\n\\end{{document}}\n"
        ),
    )
    .expect("add");
    let (bytes, _) = built_pdf(compile::compile_latex(&ws, &d.id, "names.tex", None, None).expect("compile"));
    let text = pdf_text(&bytes);
    for name in NAMES {
        assert!(
            text.contains(name),
            "{name} missing from the compiled PDF's text:\n{text}"
        );
    }
}

#[test]
fn pdflatex_is_still_selectable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = DraftSettings::with_root(dir.path().join("drafts"));
    s.pdf_engine = "pdflatex".into();
    let ws = Workspace::open(s).expect("open");
    need_tools(&ws);
    let d = ws
        .create_draft("plain", "plain.tex", NORMAL_TEX, Visibility::Public, None)
        .expect("create");
    ws.add_draft_file(&d.id, "chapter.tex", "A chapter.\n").expect("add");
    ws.add_draft_file(&d.id, "plain.md", "# Plain\n\nCafé in Zürich.\n")
        .expect("add");
    let (bytes, _) = built_pdf(compile::compile_latex(&ws, &d.id, "plain.tex", None, None).expect("compile"));
    // pdflatex, not xelatex (xdvipdfmx), made it.
    let info = poppler("pdfinfo", &[], &bytes, &[]);
    assert!(info.contains("pdfTeX"), "not a pdflatex PDF:\n{info}");
    let (bytes, _) = built_pdf(compile::export_pdf(&ws, &d.id, "plain.md", None, None).expect("export"));
    assert!(pdf_text(&bytes).contains("Zürich"));
}
