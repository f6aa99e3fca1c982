//! A PDF a test built: the draft build's result unwrapped, and poppler's
//! tools reading its text, its images, its info.

/// Run a poppler tool (`args`, then the PDF written to a temp file, then
/// `tail`) and return its stdout.
pub fn poppler(tool: &str, args: &[&str], pdf: &[u8], tail: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("out.pdf");
    std::fs::write(&file, pdf).expect("write pdf");
    let out = std::process::Command::new(tool)
        .args(args)
        .arg(&file)
        .args(tail)
        .output()
        .unwrap_or_else(|e| panic!("{tool} missing ({e}) — `cargo xtask test` installs poppler-utils"));
    assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A PDF's text, as pdftotext reads it.
pub fn pdf_text(pdf: &[u8]) -> String {
    poppler("pdftotext", &["-enc", "UTF-8"], pdf, &["-"])
}

/// The PDF a draft build made and how long it took, or the test fails
/// with the build's ending and log.
pub fn built_pdf(r: jarvis::drafts::compile::BuildResult) -> (Vec<u8>, u64) {
    match r {
        jarvis::drafts::compile::BuildResult::Pdf { pdf, elapsed_ms } => (pdf, elapsed_ms),
        jarvis::drafts::compile::BuildResult::Failed { ending, log, .. } => panic!("build failed: {ending}\n{log}"),
    }
}
