//! Drafts built with the real latexmk and pandoc from Debian (installed by
//! `cargo xtask test`): normal documents compile; hostile ones — shell
//! escape, reading /etc/passwd, writing outside, an endless loop — fail
//! safely inside the timeout; nothing is written outside the build
//! directory and the draft folder is unchanged.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jarvis::drafts::compile::{self, BuildResult, Toolchain};
use jarvis::drafts::{DraftSettings, Visibility, Workspace};

fn ws(timeout: Duration) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = DraftSettings::with_root(dir.path().join("drafts"));
    s.compile_timeout = timeout;
    (dir, Workspace::open(s).expect("open"))
}

fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let e = e.expect("entry");
            if e.file_type().expect("type").is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

fn need_tools(ws: &Workspace) {
    let t = Toolchain::detect(ws);
    assert!(
        t.latex && t.pandoc,
        "latexmk/pdflatex/pandoc missing ({t:?}) — `cargo xtask test` installs them"
    );
}

fn pdf(r: BuildResult) -> (Vec<u8>, u64) {
    match r {
        BuildResult::Pdf { pdf, elapsed_ms } => (pdf, elapsed_ms),
        BuildResult::Failed { ending, log, .. } => panic!("build failed: {ending}\n{log}"),
    }
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
    let (bytes, ms) = pdf(compile::compile_latex(&ws, &d.id, "paper.tex", None).expect("compile"));
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
    let (bytes, ms) = pdf(compile::export_pdf(&ws, &d.id, "notes.md", None).expect("export"));
    assert!(bytes.starts_with(b"%PDF"));
    eprintln!("figure: pandoc → pdflatex export of a short note took {ms} ms (machine shared, not quiet)");
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
    let _ = compile::compile_latex(&ws, &d.id, "shell.tex", None).expect("run");
    assert!(!marker.exists(), "\\write18 ran a command");

    // An existing absolute file is refused, not merely missing.
    assert!(Path::new("/etc/passwd").exists());
    let (_, log, _) = failed(compile::compile_latex(&ws, &d.id, "passwd.tex", None).expect("run"));
    assert!(!log.contains("root:x:0:0"), "passwd leaked into the log");
    assert!(log.contains("/etc/passwd"), "{log}");
    // kpathsea names the refusal (openin_any = p), not a missing file.
    assert!(
        log.contains("openin_any") || log.contains("Not reading"),
        "not a refusal:\n{log}"
    );

    // Writes by absolute path or .. are refused.
    let r = compile::compile_latex(&ws, &d.id, "write.tex", None).expect("run");
    assert!(!outside.exists(), "wrote outside by absolute path ({r:?})");
    let r = compile::compile_latex(&ws, &d.id, "up.tex", None).expect("run");
    assert!(
        !ws.root().join(&d.id).parent().expect("p").join("escaped.tex").exists(),
        "wrote via .. ({r:?})"
    );
    assert!(!ws.root().join("escaped.tex").exists());

    // draft.json is not in the build copy.
    failed(compile::compile_latex(&ws, &d.id, "meta.tex", None).expect("run"));

    // An endless loop is killed at the timeout.
    let (ending, _, ms) = failed(compile::compile_latex(&ws, &d.id, "loop.tex", None).expect("run"));
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
    let (bytes, _) = pdf(compile::export_pdf(&ws, &d.id, "evil.md", None).expect("export"));
    assert!(bytes.starts_with(b"%PDF"));
    assert!(!marker.exists());
}

#[test]
fn only_the_right_types_build() {
    let (_t, ws) = ws(Duration::from_secs(10));
    let d = ws
        .create_draft("x", "x.md", "x", Visibility::Public, None)
        .expect("create");
    assert!(compile::compile_latex(&ws, &d.id, "x.md", None).is_err());
    assert!(compile::compile_latex(&ws, &d.id, "-latex=pdflatex -shell-escape %O %S.tex", None).is_err());
    assert!(compile::export_pdf(&ws, &d.id, "../x.md", None).is_err());
}
