//! `kb doctor`'s diagnosis and `kb reindex`'s model preparation: what the
//! CLI asks of the knowledge base's health, as plain values it renders.
//!
//! The search probe runs in a child process of this same binary
//! ([`App::probe_in_child`], `jarvis kb __probe`): a crash inside a native
//! library (ONNX Runtime, LMDB under arroy, tantivy, fjall) then ends the
//! child, and the parent reports the exit status or signal as the
//! diagnosis instead of dying with it. The child needs the one-owner lock,
//! so the probe runs *before* this process opens the store, which it does
//! only when the probe did not crash. Inside a running owner the store is
//! already open (and locked), so the probe searches in-process.
//! Owns both ends of the probe's one-line JSON report ([`App::probe_line`]).
//! Must not: format lines or print — that is the CLI.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::kb::maintain::Agreement;
use crate::sandbox::{ChildOutcome, Ending};

use super::ops::OpError;
use super::App;

/// How long the probe child may take (loading the model is most of it).
const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// The probe's exit code for "ran, and the knowledge base reported an
/// error" (distinct from clap's 2 and from a crash).
pub const PROBE_FAILED: u8 = 3;

/// Where doctor's probe searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeWhere {
    /// In a child process (this process holds no lock yet).
    Child,
    /// In this process, a running owner that holds the knowledge base.
    Owner,
}

/// What the probe reported, or how it failed.
#[derive(Debug, Clone)]
pub enum ProbeVerdict {
    /// It searched: `hits` hits in `search_ms`.
    Ok { hits: u64, search_ms: u64 },
    /// It ran and the knowledge base reported this error (or it printed no
    /// report).
    Failed(String),
    /// It crashed, hung or ended unexpectedly; the last lines of its stderr.
    Crashed { stderr_tail: Vec<String> },
}

/// The probe run: where, the child's ending, and the JSON report it printed.
#[derive(Debug, Clone)]
pub struct Probe {
    pub place: ProbeWhere,
    pub pid: u32,
    pub ending: Ending,
    pub elapsed_ms: u64,
    /// The report line as the probe printed it (`None`: it printed none).
    pub report: Option<serde_json::Value>,
    pub verdict: ProbeVerdict,
}

/// What opening the store here found.
#[derive(Debug, Clone)]
pub struct StoreCheck {
    pub documents: usize,
    pub chunks: usize,
    pub embed_model: String,
}

/// The agreement check: skipped when the vectors are unusable (another
/// model built them), else the three indexes against the store.
#[derive(Debug, Clone)]
pub enum AgreementCheck {
    Skipped,
    Checked(Agreement),
}

/// `kb doctor`'s whole diagnosis; healthy when `problems` is empty.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub rag_dir: PathBuf,
    pub probe: Probe,
    /// `None` when the probe crashed (opening here could crash too);
    /// `Err` with the reason when opening failed.
    pub store: Option<Result<StoreCheck, String>>,
    pub agreement: Option<AgreementCheck>,
    /// The event log replayed against the store (when the store opened).
    pub audit: Option<crate::store::AuditReport>,
    pub legacy_private_papers: Vec<String>,
    /// Each names the problem and the fix, reported once.
    pub problems: Vec<String>,
}

impl Diagnosis {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl App {
    /// The probe's one JSON line (the child side of doctor's probe): open,
    /// count, search; `Err` carries the line for a failure, to be printed
    /// and answered with [`PROBE_FAILED`].
    pub fn probe_line(&self) -> Result<String, String> {
        match self.probe_search() {
            Ok(r) => Ok(
                json!({ "ok": true, "chunks": r.chunks, "documents": r.documents, "hits": r.hits,
                                "search_ms": r.search_ms })
                .to_string(),
            ),
            Err(e) => Err(json!({ "ok": false, "error": crate::error_kind::chain(&e) }).to_string()),
        }
    }

    /// Diagnose the knowledge base: the probe (in a child unless `place`
    /// is [`ProbeWhere::Owner`]), then — only when it did not crash — open
    /// here, count, and compare the store with its indexes. Blocking.
    pub fn doctor(&self, place: ProbeWhere) -> Result<Diagnosis, OpError> {
        let probe = self.run_probe(place)?;
        let mut d = Diagnosis {
            rag_dir: self.config().rag_dir(),
            probe,
            store: None,
            agreement: None,
            audit: None,
            legacy_private_papers: Vec::new(),
            problems: Vec::new(),
        };
        let probe_error = match &d.probe.verdict {
            ProbeVerdict::Crashed { .. } => {
                let problem = crash_problem(&d.probe.ending, &d.rag_dir);
                d.problems.push(problem);
                return Ok(d);
            }
            ProbeVerdict::Failed(e) => Some(e.clone()),
            ProbeVerdict::Ok { .. } => None,
        };
        match self.kb() {
            Err(e) => {
                let msg = e.to_string();
                d.problems.push(msg.clone());
                d.store = Some(Err(msg));
            }
            Ok(kb) => {
                d.store = Some(Ok(StoreCheck {
                    chunks: kb.count()?,
                    documents: kb.count_unique_documents()?,
                    embed_model: kb.model_id(),
                }));
                match kb.check_model() {
                    Err(e) => {
                        d.agreement = Some(AgreementCheck::Skipped);
                        d.problems.push(e.to_string());
                    }
                    Ok(()) => {
                        let a = kb.agreement()?;
                        if !a.ok() {
                            d.problems.push(format!(
                                "the indexes disagree with the store (missing in BM25 {}, in vectors {}, in the exact index {}; orphans in BM25 {}, in vectors {}, in the exact index {}; stale in the exact index {}) — run `jarvis kb reindex` to rebuild them from the store",
                                a.missing_in_bm25,
                                a.missing_in_vectors,
                                a.missing_in_exact,
                                a.orphans_in_bm25,
                                a.orphans_in_vectors,
                                a.orphans_in_exact,
                                a.stale_in_exact
                            ));
                        }
                        d.agreement = Some(AgreementCheck::Checked(a));
                    }
                }
                let audit = kb.audit()?;
                if !audit.ok() {
                    d.problems.push(super::history::audit_problem(&audit));
                }
                d.audit = Some(audit);
                d.legacy_private_papers = kb.legacy_private_papers()?;
            }
        }
        // Reported once: a lock or model error the probe met shows up in
        // this process's own open or model check too.
        if let Some(e) = probe_error {
            if !d
                .problems
                .iter()
                .any(|p| p.contains(e.as_str()) || e.contains(p.as_str()))
            {
                d.problems.push(e);
            }
        }
        Ok(d)
    }

    fn run_probe(&self, place: ProbeWhere) -> Result<Probe, OpError> {
        let outcome = match place {
            ProbeWhere::Child => self.probe_in_child(PROBE_TIMEOUT)?,
            ProbeWhere::Owner => {
                let start = Instant::now();
                let (line, code) = match self.probe_line() {
                    Ok(l) => (l, 0),
                    Err(l) => (l, i32::from(PROBE_FAILED)),
                };
                ChildOutcome {
                    pid: std::process::id(),
                    ending: Ending::Exited { code },
                    stdout: format!("{line}\n"),
                    stderr: String::new(),
                    elapsed_ms: start.elapsed().as_millis() as u64,
                }
            }
        };
        let report: Option<serde_json::Value> = outcome.stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok());
        let crashed =
            !matches!(outcome.ending, Ending::Exited { code } if code == 0 || code == i32::from(PROBE_FAILED));
        let verdict = if crashed {
            let lines: Vec<&str> = outcome.stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(5)..]
                .iter()
                .map(|l| l.to_string())
                .collect();
            ProbeVerdict::Crashed { stderr_tail: tail }
        } else {
            match report.as_ref() {
                Some(r) if r["ok"] == true => ProbeVerdict::Ok {
                    hits: r["hits"].as_u64().unwrap_or(0),
                    search_ms: r["search_ms"].as_u64().unwrap_or(0),
                },
                Some(r) => ProbeVerdict::Failed(r["error"].as_str().unwrap_or("unknown error").to_string()),
                None => ProbeVerdict::Failed(format!("the probe child printed no report ({})", outcome.ending)),
            }
        };
        Ok(Probe {
            place,
            pid: outcome.pid,
            ending: outcome.ending,
            elapsed_ms: outcome.elapsed_ms,
            report,
            verdict,
        })
    }

    /// Make sure the configured embedding model's files are here before a
    /// reindex: a registry model named in `rag.embed_model` is fetched and
    /// verified (`progress(file, done, total)` reports bytes), so switching
    /// models is a config change plus `kb reindex`. Returns what was
    /// fetched, if anything. Blocking.
    pub fn prepare_model(
        &self,
        progress: &dyn Fn(&str, u64, Option<u64>),
    ) -> Result<Option<crate::embed::registry::Downloaded>, OpError> {
        super::kb::ensure_model(&self.config(), progress).map_err(|e| OpError::Model(Box::new(e)))
    }
}

/// The problem a crashed probe names, with the fix.
fn crash_problem(ending: &Ending, rag_dir: &std::path::Path) -> String {
    match ending {
        Ending::Signalled { .. } => format!(
            "the search probe crashed ({ending}) inside a native library — the index files are likely damaged: run `jarvis kb reindex` to rebuild the indexes from the stored text (the store itself is not changed), then `jarvis kb doctor` again; if opening the store itself crashes, move {} aside and re-add your documents",
            rag_dir.display()
        ),
        Ending::TimedOut { .. } => format!(
            "the search probe hung ({ending}) — check `jarvis runtime check`, then try `jarvis kb reindex`"
        ),
        Ending::Exited { .. } | Ending::Stopped { .. } => format!(
            "the search probe failed unexpectedly ({ending}) — see the output above and the log in $JARVIS_HOME/logs"
        ),
    }
}
