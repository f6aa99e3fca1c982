//! LaTeX compilation and Markdown → PDF export, through the sandbox only.
//!
//! Compiling a `.tex` the model wrote from untrusted input is the sharpest
//! edge in jarvis. Every build:
//! - runs in a fresh temporary directory seeded with a copy of the draft's
//!   files (never `draft.json`, never `.versions/`, never a link) — never in
//!   place, so nothing the document writes reaches the draft or anything
//!   else; `HOME`, `TMPDIR` and TeX's cache directories point inside it;
//! - runs latexmk as `-norc -xelatex -no-shell-escape -interaction=nonstopmode
//!   -halt-on-error ./name.tex` (`-norc`: latexmkrc files are Perl; `./`
//!   keeps the name positional even though the containment policy already
//!   refuses a leading `-`; `-pdf`/`-lualatex` when `drafts.pdf_engine`
//!   says so), and pandoc with `--sandbox` and [`IMAGE_FILTER`]: an image
//!   survives only when it names a file of the draft by a plain relative
//!   path, because pandoc's PDF step reads (and fetches) any image path or
//!   URL outside its `--sandbox`;
//! - runs without network: every build child gets a network namespace of
//!   its own (`sandbox::ChildSpec::no_network`), so neither pandoc nor TeX
//!   can fetch anything, not even from this machine's loopback services.
//!   Where the kernel refuses namespaces the build still runs (the image
//!   filter and `openin_any` still hold) and the log says so;
//! - sets `openin_any=p`, `openout_any=p` (no reading or writing by
//!   absolute path or `..`), `shell_escape=f`, an empty `TEXMFHOME`, and the
//!   sandbox's environment allowlist (no API keys);
//! - has a hard timeout (`drafts.compile_timeout_seconds`) that kills the
//!   whole process group, so a `\loop` bomb dies.
//!
//! Before a build the keys the file cites are handed to the caller's
//! [`Bibliography`] and the `.bib` it returns is written beside the file
//! (see [`cite`]), so `\bibliography{…}` (latexmk runs BibTeX) and
//! pandoc's `--citeproc --bibliography` resolve.
//!
//! Owns: [`Toolchain`] (what is installed), [`compile_latex`],
//! [`export_pdf`]. Compiling a private draft is allowed: no model is in the
//! loop.
//! Must not: spawn except through `sandbox`, build in the draft folder, or
//! let a file name reach an argument vector unchecked.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::cite::{self, Bibliography};
use super::workspace::Workspace;
use super::DraftsError;
use crate::sandbox::{self, ChildSpec, Ending};

/// A build's temporary directory is `<tmp>/jarvis-build-XXXX/`.
pub const BUILD_DIR_PREFIX: &str = "jarvis-build-";
/// Keep at most this much of a failed build's log.
const LOG_TAIL_BYTES: usize = 64 * 1024;
/// Address-space cap for a build (TeX's own pools are far below it).
const BUILD_MEMORY: u64 = 2 << 30;

/// A pandoc Lua filter (run on pandoc's own parse, so nothing the Markdown
/// reader sees as an image escapes it, in the body or the metadata): an
/// image is kept only when its source is a plain relative path — no scheme,
/// no leading `/` or `~`, no `..` or `\`, no `%`-escapes (pandoc decodes
/// them), no query — naming a file the build copy holds; any other becomes
/// its description and a note. The copy holds only the draft's regular
/// files, so a kept image is the draft's own.
pub const IMAGE_FILTER: &str = r#"
local function plain_relative(src)
  if src == "" or src:find("[:%%\\?#]") then return false end
  local first = src:sub(1, 1)
  if first == "/" or first == "~" then return false end
  for part in src:gmatch("[^/]+") do
    if part == ".." then return false end
  end
  return true
end

local function in_draft(src)
  local f = io.open(src, "rb")
  if f == nil then return false end
  f:close()
  return true
end

function Image(el)
  if plain_relative(el.src) and in_draft(el.src) then return nil end
  local out = { pandoc.Str("[image left out: ") }
  for _, i in ipairs(el.caption) do table.insert(out, i) end
  table.insert(out, pandoc.Str(" — only images inside the draft are embedded]"))
  return pandoc.Emph(out)
end
"#;

/// latexmk's mode switch for `drafts.pdf_engine` (by its file name, so a
/// full path works): `-xelatex`, `-lualatex`, else `-pdf` (pdflatex), and
/// the engine program that mode runs.
fn latexmk_mode(pdf_engine: &str) -> (&'static str, &'static str) {
    let name = Path::new(pdf_engine)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(pdf_engine);
    match name {
        "xelatex" => ("-xelatex", "xelatex"),
        "lualatex" => ("-lualatex", "lualatex"),
        _ => ("-pdf", "pdflatex"),
    }
}

/// Which build tools are installed, for `GET /drafts` (buttons for a
/// missing toolchain are hidden, not disabled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    /// `drafts.latex_engine` and the TeX engine it runs are on `PATH`.
    pub latex: bool,
    /// pandoc and `drafts.pdf_engine` are on `PATH`.
    pub pandoc: bool,
}

/// Find `program` on `PATH` (or check it, when it is a path).
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

impl Toolchain {
    pub fn detect(ws: &Workspace) -> Self {
        let s = ws.settings();
        Toolchain {
            latex: find_program(&s.latex_engine).is_some() && find_program(latexmk_mode(&s.pdf_engine).1).is_some(),
            pandoc: find_program("pandoc").is_some() && find_program(&s.pdf_engine).is_some(),
        }
    }
}

/// How a build ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BuildResult {
    /// The PDF (the web layer answers 200 with it).
    Pdf {
        #[serde(skip)]
        pdf: Vec<u8>,
        elapsed_ms: u64,
    },
    /// The build failed or timed out (the web layer answers 422 with the log).
    Failed {
        ending: String,
        log: String,
        elapsed_ms: u64,
    },
}

/// Copy the draft's own files (regular files passing the containment
/// policy — not `draft.json`, `.versions/` or links) into `dest`.
fn seed(ws: &Workspace, draft_id: &str, dest: &Path) -> Result<(), DraftsError> {
    for name in ws.files(draft_id)? {
        let from = ws.resolve(draft_id, &name)?;
        match std::fs::symlink_metadata(&from) {
            Ok(m) if m.is_file() => {}
            _ => continue,
        }
        ws.disk().copy(&from, &dest.join(&name))?;
    }
    Ok(())
}

/// The fresh build directory: `work/` (the copy, the cwd), `home/`, `tmp/`,
/// and the image filter beside them (outside the copy, so no draft file
/// can stand in for it).
struct BuildDir {
    _root: tempfile::TempDir,
    work: PathBuf,
    filter: PathBuf,
    env: Vec<(String, String)>,
}

fn build_dir(ws: &Workspace, draft_id: &str) -> Result<BuildDir, DraftsError> {
    let root = ws.disk().temp_dir(BUILD_DIR_PREFIX)?;
    let work = root.path().join("work");
    let home = root.path().join("home");
    let tmp = root.path().join("tmp");
    for d in [&work, &home, &tmp] {
        ws.disk().create_dir(d).map_err(|e| DraftsError::io("create", d, e))?;
    }
    seed(ws, draft_id, &work)?;
    let filter = root.path().join("jarvis-images.lua");
    ws.disk()
        .create_new(&filter, IMAGE_FILTER.as_bytes())
        .map_err(|e| DraftsError::io("write", &filter, e))?;
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let env = vec![
        ("openin_any".to_string(), "p".to_string()),
        ("openout_any".into(), "p".into()),
        ("shell_escape".into(), "f".into()),
        ("TEXMFHOME".into(), String::new()),
        ("TEXMFVAR".into(), s(&home.join("texmf-var"))),
        ("TEXMFCONFIG".into(), s(&home.join("texmf-config"))),
        ("TEXMFOUTPUT".into(), s(&work)),
        ("HOME".into(), s(&home)),
        ("TMPDIR".into(), s(&tmp)),
    ];
    Ok(BuildDir {
        _root: root,
        work,
        filter,
        env,
    })
}

fn tail(text: &str) -> String {
    if text.len() <= LOG_TAIL_BYTES {
        return text.to_string();
    }
    let mut start = text.len() - LOG_TAIL_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[… earlier log cut …]\n{}", &text[start..])
}

fn run_build(
    tool: &str,
    program: &Path,
    args: &[&str],
    dir: &BuildDir,
    ws: &Workspace,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    (log_file, pdf_file): (&Path, &Path),
) -> Result<BuildResult, DraftsError> {
    let start = Instant::now();
    let spec = ChildSpec {
        args,
        env: &dir.env,
        cwd: Some(&dir.work),
        timeout: ws.settings().compile_timeout,
        memory_limit: Some(BUILD_MEMORY),
        output_limit: 1 << 20,
        stop,
        no_network: true,
        ..ChildSpec::default()
    };
    let out = match sandbox::run_child(program, &spec) {
        Err(e @ sandbox::SandboxError::NoIsolation { .. }) => {
            // Without namespaces the build still may not reach a file or
            // URL through an image (the filter) or TeX (openin_any); it is
            // the second wall that is missing, and the log says so.
            tracing::warn!(tool, error = %e, "building with network access");
            sandbox::run_child(
                program,
                &ChildSpec {
                    no_network: false,
                    ..spec
                },
            )
        }
        other => other,
    }
    .map_err(|source| DraftsError::Sandbox {
        tool: tool.into(),
        source,
    })?;
    let elapsed_ms = start.elapsed().as_millis() as u64;
    tracing::info!(tool, ending = %out.ending, elapsed_ms, "draft build ended");
    if out.ending == (Ending::Exited { code: 0 }) {
        if let Ok(pdf) = std::fs::read(pdf_file) {
            return Ok(BuildResult::Pdf { pdf, elapsed_ms });
        }
    }
    let file_log = std::fs::read(log_file)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut log = String::new();
    if !file_log.is_empty() {
        log.push_str(&file_log);
        log.push('\n');
    }
    log.push_str(&String::from_utf8_lossy(&out.stdout));
    log.push_str(&out.stderr);
    let ending = match &out.ending {
        Ending::TimedOut { .. } => format!(
            "{tool} was stopped after {} s (`drafts.compile_timeout_seconds`) — a loop in the document?",
            ws.settings().compile_timeout.as_secs()
        ),
        Ending::Exited { code: 0 } => format!("{tool} finished but wrote no PDF"),
        other => format!("{tool} failed ({other})"),
    };
    Ok(BuildResult::Failed {
        ending,
        log: tail(&log),
        elapsed_ms,
    })
}

fn stem_of(filename: &str, ext: &str) -> Option<String> {
    let lower = filename.to_lowercase();
    lower
        .ends_with(ext)
        .then(|| filename[..filename.len() - ext.len()].to_string())
}

/// Write the `.bib` of `keys` the library knows as `name` beside the draft
/// file, before the build copies the draft. A failure costs the
/// bibliography (the build's log then shows the undefined citations), never
/// the build; a `.bib` of the user's own under that name is kept.
fn write_bibliography(
    ws: &Workspace,
    draft_id: &str,
    filename: &str,
    name: &str,
    keys: &[String],
    bib: Bibliography<'_>,
) {
    if keys.is_empty() {
        return;
    }
    let bibtex = bib(keys);
    if bibtex.is_empty() {
        return;
    }
    match cite::write_bib(ws, draft_id, name, filename, &bibtex) {
        Ok(true) => tracing::debug!(draft = draft_id, file = name, keys = keys.len(), "bibliography written"),
        Ok(false) => tracing::info!(
            draft = draft_id,
            file = name,
            "the draft has its own bibliography under that name; left as it is"
        ),
        Err(e) => tracing::warn!(draft = draft_id, file = name, error = %e, "cannot write the bibliography"),
    }
}

/// Compile a `.tex` draft file with latexmk in a throwaway copy.
pub fn compile_latex(
    ws: &Workspace,
    draft_id: &str,
    filename: &str,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    bib: Option<Bibliography<'_>>,
) -> Result<BuildResult, DraftsError> {
    ws.resolve(draft_id, filename)?;
    let source = ws.read_bytes(draft_id, filename)?;
    let stem = stem_of(filename, ".tex").ok_or_else(|| DraftsError::CannotBuild {
        name: filename.into(),
        doing: "compiled",
        reason: "only .tex files are compiled with LaTeX".into(),
    })?;
    let engine = &ws.settings().latex_engine;
    let program = find_program(engine).ok_or_else(|| DraftsError::ToolMissing {
        tool: if engine.is_empty() {
            "LaTeX compilation".into()
        } else {
            engine.clone()
        },
        detail: if engine.is_empty() {
            "`drafts.latex_engine` is empty".into()
        } else {
            "not found on PATH".into()
        },
    })?;
    let (mode, tex) = latexmk_mode(&ws.settings().pdf_engine);
    if find_program(tex).is_none() {
        return Err(DraftsError::ToolMissing {
            tool: tex.into(),
            detail: "not found on PATH (`drafts.pdf_engine` picks it; `cargo xtask run` installs xelatex)".into(),
        });
    }
    if let Some(bib) = bib {
        let text = String::from_utf8_lossy(&source);
        let name = cite::tex_bib_name(&text, &stem);
        write_bibliography(ws, draft_id, filename, &name, &cite::tex_keys(&text), bib);
    }
    let dir = build_dir(ws, draft_id)?;
    let target = format!("./{filename}");
    let args = [
        "-norc",
        mode,
        "-no-shell-escape",
        "-interaction=nonstopmode",
        "-halt-on-error",
        target.as_str(),
    ];
    let log = dir.work.join(format!("{stem}.log"));
    let pdf = dir.work.join(format!("{stem}.pdf"));
    run_build("latexmk", &program, &args, &dir, ws, stop, (&log, &pdf))
}

/// Export a `.md` draft file to PDF with pandoc in a throwaway copy.
/// Raw TeX and raw attributes are turned off in the Markdown reader, so a
/// document cannot smuggle LaTeX commands past the maths syntax.
pub fn export_pdf(
    ws: &Workspace,
    draft_id: &str,
    filename: &str,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    bib: Option<Bibliography<'_>>,
) -> Result<BuildResult, DraftsError> {
    ws.resolve(draft_id, filename)?;
    let source = ws.read_bytes(draft_id, filename)?;
    let Some(stem) = stem_of(filename, ".md") else {
        return Err(DraftsError::CannotBuild {
            name: filename.into(),
            doing: "exported",
            reason: "only .md files are exported with pandoc (compile a .tex instead)".into(),
        });
    };
    let program = find_program("pandoc").ok_or_else(|| DraftsError::ToolMissing {
        tool: "pandoc".into(),
        detail: "not found on PATH".into(),
    })?;
    let s = ws.settings();
    if find_program(&s.pdf_engine).is_none() {
        return Err(DraftsError::ToolMissing {
            tool: s.pdf_engine.clone(),
            detail: "`drafts.pdf_engine` is not on PATH".into(),
        });
    }
    let margin = s.pdf_margin.trim();
    if margin.is_empty() || margin.len() > 16 || !margin.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
        return Err(DraftsError::CannotBuild {
            name: filename.into(),
            doing: "exported",
            reason: format!("`drafts.pdf_margin` {margin:?} is not a length such as 2cm"),
        });
    }
    let font = s.pdf_mainfont.trim();
    if font.len() > 64
        || !font
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'))
    {
        return Err(DraftsError::CannotBuild {
            name: filename.into(),
            doing: "exported",
            reason: format!("`drafts.pdf_mainfont` {font:?} is not a font family name such as DejaVu Serif"),
        });
    }
    // Citations resolve through citeproc against `<stem>.bib`: the one a
    // build writes from the library, or the user's own under that name.
    let keys = cite::md_keys(&String::from_utf8_lossy(&source));
    let bib_name = format!("{stem}.bib");
    if let Some(bib) = bib {
        write_bibliography(ws, draft_id, filename, &bib_name, &keys, bib);
    }
    let citeproc = !keys.is_empty()
        && ws
            .resolve(draft_id, &bib_name)
            .is_ok_and(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()));
    let dir = build_dir(ws, draft_id)?;
    let geometry = format!("geometry:margin={margin}");
    let engine = format!("--pdf-engine={}", s.pdf_engine);
    let filter = format!("--lua-filter={}", dir.filter.display());
    let mainfont = format!("mainfont={font}");
    let input = format!("./{filename}");
    let mut args = vec![
        "--sandbox",
        "-f",
        "markdown+tex_math_dollars-raw_tex-raw_attribute-raw_html",
        filter.as_str(),
        "-V",
        geometry.as_str(),
    ];
    // Only the Unicode engines load system fonts by name; pdflatex would
    // ignore it.
    if !font.is_empty() && latexmk_mode(&s.pdf_engine).0 != "-pdf" {
        args.extend(["-V", mainfont.as_str()]);
    }
    let bibliography = format!("--bibliography=./{bib_name}");
    if citeproc {
        args.extend(["--citeproc", bibliography.as_str()]);
    }
    args.extend([engine.as_str(), "-o", "./jarvis-export.pdf", input.as_str()]);
    let log = dir.work.join("jarvis-export.log");
    let pdf = dir.work.join("jarvis-export.pdf");
    run_build("pandoc", &program, &args, &dir, ws, stop, (&log, &pdf))
}
