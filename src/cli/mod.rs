//! The command line: clap types and one file per subcommand group.
//!
//! Owns: parsing arguments, turning results into human or `--json` output on
//! stdout, user-facing messages on stderr, and exit codes. The only module
//! (with `web`) that knows clap or wire JSON.
//! Must not: hold logic a test would want to call without a process; that
//! lives in the library modules below.

mod ask_cmd;
mod assist_cmd;
mod config_cmd;
mod delegate;
mod digest_cmd;
mod history_cmd;
mod kb;
mod mcp_cmd;
mod memory_cmd;
mod models_cmd;
mod owner_cmd;
mod research_cmd;
mod runtime_cmd;
mod signals;
mod sync_cmd;
mod term;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::config::{process_env, Config};
use crate::paths::JarvisHome;

const ABOUT: &str = "Jarvis — a personal knowledge base and research assistant: your notes, PDFs, papers and past chats in one local, private index.";

const LONG_ABOUT: &str = "Jarvis — a personal knowledge base and research assistant: your notes, PDFs, papers and past chats in one local, private index, and an assistant that answers from it.

Everything lives in one binary and one data directory ($JARVIS_HOME, default ~/.jarvis). Private notes never reach a cloud model, and Jarvis sends no telemetry.";

#[derive(Debug, Parser)]
#[command(name = "jarvis", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// Also print logs to stderr.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show, locate or change settings.
    #[command(subcommand)]
    Config(config_cmd::ConfigCmd),
    /// Search and maintain the knowledge base.
    #[command(subcommand)]
    Kb(kb::KbCmd),
    /// Undo a change to the knowledge base: the event's document goes back to what it was (a removed paper's chunks and vectors are restored, nothing is re-embedded). The undo is itself logged.
    Undo(history_cmd::UndoArgs),
    /// Every change to the knowledge base, newest first, grouped by day: what, to which document, by whom (you, the agent after your confirmation, a job), and whether it can be undone.
    Log(history_cmd::LogArgs),
    /// Ask the chat agent one question (the same turn the web app runs); the answer goes to stdout, tool lines to stderr.
    Ask(ask_cmd::AskArgs),
    /// Research a question: it is split into sub-questions that sub-agents answer from your library in parallel, and one report with citations is written into a new draft (a suggested change to review in the web app's editor when `jarvis serve` runs, else the draft's file). Progress goes to stderr, the report to stdout.
    Research(ask_cmd::AskArgs),
    /// What the assistant remembers about you: list, review its proposals, forget a fact, export to and import from one Markdown file.
    #[command(subcommand)]
    Memory(memory_cmd::MemoryCmd),
    /// List the chat profiles (`jarvis ask --profile ID`): shipped ones and yours, with each one's model and tools.
    Profiles {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// List the slash commands: the web composer's built-ins and your own (`jarvis ask "/name …"` runs yours).
    Commands {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// List the switchable LLMs from config, each marked local or cloud.
    Models {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Convert a PDF (a file, or an arXiv id or URL) to Markdown.
    ConvertPdf {
        /// A PDF's path, or an arXiv id or URL (e.g. 2301.01234,
        /// https://arxiv.org/abs/2301.01234).
        input: String,
        /// Write the Markdown here instead of stdout.
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
    },
    /// Run the web app on 127.0.0.1 and own the knowledge base.
    ///
    /// `jarvis serve` keeps the knowledge base open, serves the web app on
    /// 127.0.0.1 (`web.port`, or --port), and runs every `jarvis kb …`
    /// command started elsewhere (they reach it over a private Unix socket
    /// at $JARVIS_HOME/state/owner.sock). Only one `serve` or `sync` runs per
    /// JARVIS_HOME; Ctrl-C or SIGTERM stops it cleanly.
    Serve {
        /// Listen on this port instead of `web.port` (0 picks a free one).
        #[arg(long)]
        port: Option<u16>,
        /// Do not run the scheduled jobs (leave them to a `jarvis sync` elsewhere, or to none).
        #[arg(long)]
        no_jobs: bool,
    },
    /// Serve the knowledge base to an MCP client (coding assistants, desktop chat apps) on stdin/stdout.
    ///
    /// An MCP client launches `jarvis mcp` itself (see the README for the
    /// `mcpServers` snippet). Its tools are read-only: search, get_document,
    /// list_documents, kb_stats. Calls go through a running `jarvis serve` /
    /// `jarvis sync` when there is one, else this process opens the knowledge
    /// base while calls come in. Only public documents are shared unless
    /// `[mcp] include_private = true`; which of the two applies is printed
    /// on stderr at start. `jarvis serve` offers the same tools over HTTP at
    /// /mcp on its loopback port.
    Mcp,
    /// Run the background service: the scheduled jobs, the vault watcher, and every `jarvis kb …` command.
    ///
    /// `jarvis sync` keeps the knowledge base open and runs the recurring
    /// work: a vault refresh at start, every `sync.vault_refresh_minutes`
    /// and within seconds of a saved note (a file watcher); the PDF inbox
    /// (`sync.pdf_watch_dir`); the drafts retention sweep; and, when
    /// `[digest] enabled = true`, the weekly digest and its catch-up. `jarvis
    /// kb …` commands started elsewhere run in it (over a private Unix
    /// socket at $JARVIS_HOME/state/owner.sock). `jarvis kb sync-status`
    /// shows how each job did; logs go to $JARVIS_HOME/logs/sync.log. Only
    /// one `serve` or `sync` runs per JARVIS_HOME; Ctrl-C or SIGTERM stops
    /// it cleanly. `--print-systemd-unit` prints a unit to run it as a
    /// service.
    Sync(sync_cmd::SyncArgs),
    /// Run the weekly paper digest once: fetch, gate, score, write and index.
    ///
    /// Off unless `[digest] enabled = true` (`--force` runs it anyway).
    /// Goes through a running `jarvis serve`/`sync` when one owns the
    /// knowledge base.
    RunDigest(digest_cmd::RunDigestArgs),
    /// The recent digests' papers, and your votes on them (they teach the
    /// next digests what you like).
    #[command(subcommand)]
    Digest(digest_cmd::DigestCmd),
    /// Check the native runtime (ONNX Runtime, PDFium, embedding model).
    #[command(subcommand)]
    Runtime(runtime_cmd::RuntimeCmd),
    /// Print a shell completion script.
    Completions {
        /// bash, zsh or fish.
        shell: CompletionShell,
    },
    /// Internal: read one PDF with PDFium for the parent process (request
    /// JSON on stdin, reply JSON on stdout). Runs under time and memory
    /// limits so a hostile PDF costs one file, not the caller.
    #[command(name = "__pdf-worker", hide = true)]
    PdfWorker,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// Write command output to stdout. A closed pipe (`jarvis … | head`) is not
/// an error worth a panic: the reader has what it wanted.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Entry point used by `main.rs`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Completions { shell } = cli.command {
        let mut cmd = Cli::command();
        let shell = match shell {
            CompletionShell::Bash => clap_complete::Shell::Bash,
            CompletionShell::Zsh => clap_complete::Shell::Zsh,
            CompletionShell::Fish => clap_complete::Shell::Fish,
        };
        clap_complete::generate(shell, &mut cmd, "jarvis", &mut std::io::stdout());
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::PdfWorker = cli.command {
        // Before config and logging: the parent already resolved everything
        // the worker needs, and the worker must not touch $JARVIS_HOME. Its
        // logs go to stderr, which the parent copies into jarvis.log.
        crate::logging::init_worker();
        return pdf_worker();
    }
    let home = JarvisHome::from_env()?;
    if let Command::Config(config_cmd::ConfigCmd::Path) = cli.command {
        emit(&format!("{}\n", home.config_file().display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    // `jarvis sync` (the service and its run-job) logs to its own file, so
    // `logs/sync.log` alone tells what the schedule did.
    let log_name = match &cli.command {
        Command::Sync(_) => "sync.log",
        _ => "jarvis.log",
    };
    if let Err(e) = crate::logging::init_named(&home, cli.verbose, log_name) {
        eprintln!("warning: logging to a file is unavailable: {e}");
    }
    let config = Config::load(&home, &process_env)?;
    for w in &config.warnings {
        tracing::warn!("{w}");
        eprintln!("{w}");
    }
    match cli.command {
        Command::Config(c) => config_cmd::run(c, &home, config),
        Command::Runtime(c) => runtime_cmd::run(c, &config),
        Command::Kb(c) => Ok(ExitCode::from(delegate::run_kb(c, config)?)),
        Command::RunDigest(a) => Ok(ExitCode::from(delegate::run_digest(a, config)?)),
        Command::Digest(c) => Ok(ExitCode::from(delegate::run_digest_cmd(c, config)?)),
        Command::Serve { port, no_jobs } => Ok(ExitCode::from(owner_cmd::run(
            owner_cmd::Role::Serve { port, jobs: !no_jobs },
            config,
        )?)),
        Command::Sync(a) if a.is_owner() => Ok(ExitCode::from(owner_cmd::run(owner_cmd::Role::Sync, config)?)),
        Command::Sync(sync_cmd::SyncArgs {
            cmd: Some(sync_cmd::SyncCmd::RunJob { id }),
            ..
        }) => Ok(ExitCode::from(delegate::run_job(id, config)?)),
        Command::Sync(a) => Ok(ExitCode::from(sync_cmd::run(a, &config)?)),
        Command::Mcp => Ok(ExitCode::from(mcp_cmd::run(config)?)),
        Command::Ask(a) => Ok(ExitCode::from(delegate::run_ask(a, config)?)),
        Command::Research(a) => Ok(ExitCode::from(delegate::run_research(a, config)?)),
        Command::Undo(a) => Ok(ExitCode::from(delegate::run_history(
            history_cmd::HistoryCmd::Undo(a),
            config,
        )?)),
        Command::Log(a) => Ok(ExitCode::from(delegate::run_history(
            history_cmd::HistoryCmd::Log(a),
            config,
        )?)),
        Command::Memory(c) => Ok(ExitCode::from(delegate::run_memory(c, config)?)),
        Command::Models { json } => models_cmd::run(json, &config),
        Command::Profiles { json } => assist_cmd::run_profiles(json, &home),
        Command::Commands { json } => assist_cmd::run_commands(json, &home),
        Command::ConvertPdf { input, output } => convert_pdf(&input, output.as_deref(), &config),
        Command::Completions { .. } | Command::PdfWorker => Ok(ExitCode::SUCCESS),
    }
}

/// Print a failed command's error the one way (`error: …` on stderr, the
/// whole cause chain) and pick its exit code from its kind: 130 for a stop
/// (as a shell reports Ctrl-C), 1 otherwise.
pub(crate) fn report_error(e: &anyhow::Error, t: &dyn term::Term) -> u8 {
    tracing::error!("{e:#}");
    let kind = error_kind(e);
    if kind == crate::error_kind::ErrorKind::Cancelled {
        t.err(&format!("stopped: {e:#}\n"));
        return 130;
    }
    t.err(&format!("error: {e:#}\n"));
    1
}

/// The kind of the first error in the chain that has one.
fn error_kind(e: &anyhow::Error) -> crate::error_kind::ErrorKind {
    use crate::error_kind::ErrorKind;
    for c in e.chain() {
        if let Some(k) = c
            .downcast_ref::<crate::app::ingest::WriteError>()
            .map(|e| e.kind())
            .or_else(|| c.downcast_ref::<crate::app::ops::OpError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::app::AppError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::app::digest::DigestOpError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::app::owner::OwnerError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::kb::KbError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::ingest::paper::AddError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::config::ConfigError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::mcp::McpError>().map(|e| e.kind()))
            .or_else(|| c.downcast_ref::<crate::jobs::JobError>().map(|e| e.kind()))
        {
            return k;
        }
    }
    ErrorKind::Internal
}

fn convert_pdf(input: &str, output: Option<&std::path::Path>, config: &Config) -> anyhow::Result<ExitCode> {
    let converted = crate::app::convert_pdf::convert_pdf(config, input)?;
    match output {
        Some(path) => {
            std::fs::write(path, &converted.markdown)
                .map_err(|e| anyhow::anyhow!("cannot write the Markdown to {}: {e}", path.display()))?;
            eprintln!(
                "wrote {} ({} page{}) from {input}",
                path.display(),
                converted.page_count,
                if converted.page_count == 1 { "" } else { "s" }
            );
        }
        None => emit(&converted.markdown)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn pdf_worker() -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let (reply, code) = crate::app::pdf_isolated::serve_worker(&input);
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(&reply)?;
    out.flush()?;
    Ok(ExitCode::from(code))
}
