use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{TimeZone, Utc};

use super::runner::{Cause, Ran};
use super::*;

/// Fake application side: counts calls, fails or panics on request.
#[derive(Default)]
struct Fake {
    vault_calls: AtomicUsize,
    /// The path sets the scoped refresh was called with.
    scoped_calls: Mutex<Vec<Vec<std::path::PathBuf>>>,
    /// The scoped refresh declines (a symlink on the way): sweep instead.
    scoped_declines: AtomicBool,
    vault_panics: AtomicBool,
    vault_sleep_ms: AtomicUsize,
    ingested: Mutex<Vec<String>>,
    digest_runs: Arc<AtomicUsize>,
    digest_sleep_ms: u64,
    has_digest: bool,
    local: bool,
    probe_fails: bool,
    probes: AtomicUsize,
}

struct FakeDigest {
    runs: Arc<AtomicUsize>,
    sleep: Duration,
}

impl DigestBody for FakeDigest {
    fn run(&self, _cancel: &Cancel) -> Result<DigestOutcome, DepError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.sleep);
        Ok(DigestOutcome {
            summary: "3 papers".into(),
        })
    }
}

impl JobDeps for Fake {
    fn refresh_vault(&self, _cancel: &Cancel) -> Result<VaultCounts, DepError> {
        self.vault_calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(self.vault_sleep_ms.load(Ordering::SeqCst) as u64));
        if self.vault_panics.load(Ordering::SeqCst) {
            panic!("boom in the vault");
        }
        Ok(VaultCounts {
            added: 1,
            ..VaultCounts::default()
        })
    }
    fn refresh_vault_paths(
        &self,
        paths: &[std::path::PathBuf],
        _cancel: &Cancel,
    ) -> Result<Option<VaultCounts>, DepError> {
        self.scoped_calls.lock().unwrap().push(paths.to_vec());
        std::thread::sleep(Duration::from_millis(self.vault_sleep_ms.load(Ordering::SeqCst) as u64));
        if self.scoped_declines.load(Ordering::SeqCst) {
            return Ok(None);
        }
        Ok(Some(VaultCounts {
            updated: paths.len(),
            ..VaultCounts::default()
        }))
    }
    fn ingest_pdf(&self, path: &Path, _cancel: &Cancel) -> Result<InboxPaper, DepError> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("bad") {
            return Err(DepError::new(ErrorKind::User, format!("{name}: not a PDF")));
        }
        self.ingested.lock().unwrap().push(name.clone());
        Ok(InboxPaper {
            title: name,
            ..InboxPaper::default()
        })
    }
    fn prune_drafts(&self, _days: u32) -> Result<Vec<String>, DepError> {
        Ok(vec!["old-draft".into()])
    }
    fn provider(&self) -> ProviderInfo {
        ProviderInfo {
            spec: "ollama:test".into(),
            local: self.local,
        }
    }
    fn probe_local_provider(&self) -> Result<(), DepError> {
        self.probes.fetch_add(1, Ordering::SeqCst);
        if self.probe_fails {
            Err(DepError::new(
                ErrorKind::Unavailable,
                "the ollama server at http://127.0.0.1:9 is not reachable",
            ))
        } else {
            Ok(())
        }
    }
    fn digest(&self) -> Option<Arc<dyn DigestBody>> {
        self.has_digest.then(|| {
            Arc::new(FakeDigest {
                runs: Arc::clone(&self.digest_runs),
                sleep: Duration::from_millis(self.digest_sleep_ms),
            }) as Arc<dyn DigestBody>
        })
    }
}

fn settings(dir: &Path) -> JobSettings {
    let mut s = JobSettings::new(dir.join("state/sync_status.json"));
    s.watch = false;
    s.stable_wait = Duration::from_millis(100);
    s
}

fn ids(plan: &[JobSpec]) -> Vec<&'static str> {
    plan.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn every_job_registers_only_under_its_condition() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path());
    assert_eq!(ids(&plan(&s)), ["vault_refresh", "draft_gc", "history_gc"]);
    s.pdf_watch_dir = Some(dir.path().into());
    s.drafts_retention_days = 0;
    assert_eq!(ids(&plan(&s)), ["vault_refresh", "pdf_scan", "history_gc"]);
    s.digest = Some(DigestSchedule {
        day: "wed".into(),
        hour: 7,
    });
    let p = plan(&s);
    assert_eq!(
        ids(&p),
        ["vault_refresh", "pdf_scan", "digest", "digest_catchup", "history_gc"]
    );
    assert_eq!(
        p[2].trigger,
        Trigger::Cron {
            expr: "0 0 7 * * WED".into(),
            utc: true
        }
    );
    // The seed's "once at start" jobs.
    for spec in &p {
        let at_start = matches!(spec.trigger, Trigger::Every { at_start: true, .. });
        assert_eq!(
            at_start,
            matches!(spec.id, JobId::VaultRefresh | JobId::PdfScan | JobId::DigestCatchup),
            "{spec:?}"
        );
    }
    assert!(unregistered_reason(JobId::DraftGc, &s)
        .unwrap()
        .contains("retention_days"));
    s.digest = None;
    assert_eq!(
        unregistered_reason(JobId::Digest, &s).as_deref(),
        Some("disabled ([digest] enabled = false)")
    );
}

#[test]
fn the_catch_up_runs_when_a_slot_passed_and_waits_without_a_baseline() {
    let expr = "0 0 5 * * MON";
    // A Monday-to-Monday power-off: the slot in between is overdue.
    let last = chrono::Local
        .with_ymd_and_hms(2026, 1, 5, 6, 0, 0)
        .unwrap()
        .with_timezone(&Utc);
    let now = chrono::Local
        .with_ymd_and_hms(2026, 1, 13, 9, 0, 0)
        .unwrap()
        .with_timezone(&Utc);
    match digest::overdue(expr, Some(last), now) {
        digest::Overdue::Yes { missed } => {
            assert_eq!(
                missed,
                chrono::Local
                    .with_ymd_and_hms(2026, 1, 12, 5, 0, 0)
                    .unwrap()
                    .with_timezone(&Utc)
            )
        }
        other => panic!("{other:?}"),
    }
    let soon = chrono::Local
        .with_ymd_and_hms(2026, 1, 8, 9, 0, 0)
        .unwrap()
        .with_timezone(&Utc);
    assert!(matches!(
        digest::overdue(expr, Some(last), soon),
        digest::Overdue::No { .. }
    ));
    assert_eq!(digest::overdue(expr, None, now), digest::Overdue::NoBaseline);
    let slot = last;
    assert!(!digest::late_beyond_grace(
        slot,
        slot + chrono::Duration::minutes(59),
        Duration::from_secs(3600)
    ));
    assert!(digest::late_beyond_grace(
        slot,
        slot + chrono::Duration::minutes(61),
        Duration::from_secs(3600)
    ));
}

fn digest_ctx(dir: &Path, fake: Fake) -> (JobCtx, Arc<Fake>) {
    let mut s = settings(dir);
    s.digest = Some(DigestSchedule {
        day: "mon".into(),
        hour: 5,
    });
    let fake = Arc::new(fake);
    (JobCtx::new(s, Arc::clone(&fake) as Arc<dyn JobDeps>), fake)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_after_a_power_off_runs_exactly_once_and_never_on_first_start() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, fake) = digest_ctx(
        dir.path(),
        Fake {
            has_digest: true,
            ..Fake::default()
        },
    );
    let runner = Runner::new(ctx.clone(), Cancel::new());
    // First start: no baseline → waits.
    let r = runner.run(JobId::DigestCatchup, Cause::Start, false).await;
    assert!(matches!(&r, Ran::Finished(Ok(rep)) if rep.skipped), "{r:?}");
    assert_eq!(fake.digest_runs.load(Ordering::SeqCst), 0);
    // A success 9 days ago, as a previous process wrote it to the file.
    let nine_days = Utc::now() - chrono::Duration::days(9);
    ctx.status
        .update_job(JobId::Digest, |j| j.last_success = Some(nine_days));
    let reread = JobCtx::new((*ctx.settings).clone(), Arc::clone(&fake) as Arc<dyn JobDeps>);
    assert_eq!(
        reread.status.job(JobId::Digest).last_success,
        Some(nine_days),
        "read back from the file"
    );
    let runner = Runner::new(reread.clone(), Cancel::new());
    let r = runner.run(JobId::DigestCatchup, Cause::Start, false).await;
    assert!(matches!(&r, Ran::Finished(Ok(rep)) if !rep.skipped), "{r:?}");
    assert_eq!(fake.digest_runs.load(Ordering::SeqCst), 1);
    assert!(reread.status.job(JobId::Digest).last_success.unwrap() > nine_days);
    // The next catch-up tick finds nothing missed.
    let r = runner.run(JobId::DigestCatchup, Cause::Schedule, false).await;
    assert!(matches!(&r, Ran::Finished(Ok(rep)) if rep.skipped), "{r:?}");
    assert_eq!(fake.digest_runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cron_digest_and_the_catch_up_never_run_two_digests_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, fake) = digest_ctx(
        dir.path(),
        Fake {
            has_digest: true,
            digest_sleep_ms: 600,
            ..Fake::default()
        },
    );
    ctx.status.update_job(JobId::Digest, |j| {
        j.last_success = Some(Utc::now() - chrono::Duration::days(9))
    });
    let runner = Runner::new(ctx.clone(), Cancel::new());
    let (a, b) = tokio::join!(
        runner.run(JobId::Digest, Cause::Schedule, false),
        runner.run(JobId::DigestCatchup, Cause::Start, false)
    );
    assert_eq!(fake.digest_runs.load(Ordering::SeqCst), 1, "{a:?} {b:?}");
    let skipped = [&a, &b]
        .iter()
        .filter(|r| matches!(r, Ran::Finished(Ok(rep)) if rep.skipped))
        .count();
    assert_eq!(skipped, 1, "{a:?} {b:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_provider_that_is_down_fails_the_digest_fast_with_a_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, fake) = digest_ctx(
        dir.path(),
        Fake {
            has_digest: true,
            local: true,
            probe_fails: true,
            ..Fake::default()
        },
    );
    let runner = Runner::new(ctx.clone(), Cancel::new());
    let r = runner.run(JobId::Digest, Cause::Schedule, false).await;
    let Ran::Finished(Err(e)) = r else { panic!("{r:?}") };
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("ollama serve"), "{e}");
    assert_eq!(fake.probes.load(Ordering::SeqCst), 1);
    assert_eq!(fake.digest_runs.load(Ordering::SeqCst), 0);
    let st = ctx.status.job(JobId::Digest);
    assert_eq!(st.last_outcome.as_deref(), Some("error"));
    assert!(st.last_success.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_job_is_recorded_and_the_schedule_keeps_running_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = dir.path().join("inbox");
    std::fs::create_dir(&inbox).unwrap();
    std::fs::write(inbox.join("a.pdf"), b"%PDF-1.4 a").unwrap();
    let mut s = settings(dir.path());
    s.vault_every = Duration::from_secs(3600);
    s.pdf_watch_dir = Some(inbox.clone());
    s.pdf_every = Duration::from_secs(1);
    s.stable_wait = Duration::ZERO;
    let fake = Arc::new(Fake::default());
    fake.vault_panics.store(true, Ordering::SeqCst);
    let ctx = JobCtx::new(s, Arc::clone(&fake) as Arc<dyn JobDeps>);
    let runner = Runner::new(ctx.clone(), Cancel::new());
    let schedule = scheduler::start(Arc::clone(&runner), plan(&ctx.settings))
        .await
        .unwrap();
    // Both at-start runs happen; the vault one panics.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let v = ctx.status.job(JobId::VaultRefresh);
        let scans = fake.ingested.lock().unwrap().len();
        if v.last_outcome.as_deref() == Some("panicked") && scans >= 3 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{v:?}, {scans} scans");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let v = ctx.status.job(JobId::VaultRefresh);
    assert!(v.last_error.unwrap().message.contains("boom in the vault"));
    assert!(!v.running);
    let p = ctx.status.job(JobId::PdfScan);
    assert_eq!(p.last_outcome.as_deref(), Some("ok"));
    assert!(p.next_run.is_some());
    // The file on disk says the same (written atomically, valid JSON).
    let doc = status::read(ctx.status.path()).unwrap().unwrap();
    assert_eq!(doc.jobs["vault_refresh"].last_outcome.as_deref(), Some("panicked"));
    assert!(doc.jobs["draft_gc"].registered);
    assert!(doc.jobs["history_gc"].registered);
    assert!(!doc.jobs["digest"].registered);
    // A manual run after the panic works (the slot was released).
    fake.vault_panics.store(false, Ordering::SeqCst);
    let r = schedule.run_now(JobId::VaultRefresh).await;
    assert!(matches!(&r, Ran::Finished(Ok(_))), "{r:?}");
    schedule.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_while_running_is_skipped_or_folded_into_one_follow_up() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::default());
    fake.vault_sleep_ms.store(1500, Ordering::SeqCst);
    let ctx = JobCtx::new(settings(dir.path()), Arc::clone(&fake) as Arc<dyn JobDeps>);
    let runner = Runner::new(ctx, Cancel::new());
    let r1 = Arc::clone(&runner);
    let first = tokio::spawn(async move { r1.run(JobId::VaultRefresh, Cause::Schedule, false).await });
    // Wait until the first run's body has started (it took the pending
    // changes then): on a loaded machine a fixed sleep may end before the
    // spawned body runs, and the first sweep would take the paths below.
    let started = std::time::Instant::now();
    while fake.vault_calls.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the first run never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(matches!(
        runner.run(JobId::VaultRefresh, Cause::Schedule, false).await,
        Ran::AlreadyRunning
    ));
    for i in 0..5 {
        runner
            .ctx()
            .vault_changes
            .add([std::path::PathBuf::from(format!("/v/n{i}.md"))]);
        assert!(matches!(
            runner.run(JobId::VaultRefresh, Cause::Watcher, true).await,
            Ran::Queued
        ));
    }
    first.await.unwrap();
    assert_eq!(fake.vault_calls.load(Ordering::SeqCst), 1, "one sweep");
    let scoped = fake.scoped_calls.lock().unwrap().clone();
    assert_eq!(scoped.len(), 1, "five queued triggers → one follow-up run: {scoped:?}");
    assert_eq!(scoped[0].len(), 5, "covering every path they reported");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watcher_refreshes_its_paths_and_the_schedule_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::default());
    let ctx = JobCtx::new(settings(dir.path()), Arc::clone(&fake) as Arc<dyn JobDeps>);
    let runner = Runner::new(ctx, Cancel::new());
    let changes = Arc::clone(&runner.ctx().vault_changes);
    let p = |s: &str| std::path::PathBuf::from(s);

    // The watcher's paths: only they are refreshed, no sweep.
    changes.add([p("/v/a.md"), p("/v/b.md")]);
    let r = runner.run(JobId::VaultRefresh, Cause::Watcher, true).await;
    let Ran::Finished(Ok(rep)) = r else { panic!("{r:?}") };
    assert!(rep.summary.starts_with("2 changed path(s): "), "{}", rep.summary);
    assert_eq!(fake.vault_calls.load(Ordering::SeqCst), 0);
    assert!(changes.is_empty(), "taken by the run");

    // Nothing left (an earlier run covered it): a skip, not a sweep.
    let r = runner.run(JobId::VaultRefresh, Cause::Watcher, true).await;
    assert!(matches!(r, Ran::Finished(Ok(JobReport { skipped: true, .. }))), "{r:?}");
    assert_eq!(fake.vault_calls.load(Ordering::SeqCst), 0);

    // A scheduled run sweeps and covers what was pending.
    changes.add([p("/v/c.md")]);
    runner.run(JobId::VaultRefresh, Cause::Schedule, false).await;
    assert_eq!(fake.vault_calls.load(Ordering::SeqCst), 1);
    assert!(changes.is_empty(), "the sweep covered the pending path");
    assert_eq!(fake.scoped_calls.lock().unwrap().len(), 1);

    // An overflow / rescan: the watcher's run sweeps.
    changes.add([p("/v/d.md")]);
    changes.need_sweep();
    runner.run(JobId::VaultRefresh, Cause::Watcher, true).await;
    assert_eq!(fake.vault_calls.load(Ordering::SeqCst), 2);
    assert_eq!(fake.scoped_calls.lock().unwrap().len(), 1, "no scoped run");

    // Paths the application will not refresh alone: it sweeps at once.
    fake.scoped_declines.store(true, Ordering::SeqCst);
    changes.add([p("/v/link.md")]);
    runner.run(JobId::VaultRefresh, Cause::Watcher, true).await;
    assert_eq!(fake.scoped_calls.lock().unwrap().len(), 2);
    assert_eq!(fake.vault_calls.load(Ordering::SeqCst), 3, "declined → swept");

    // A failed run keeps its paths for the next one.
    fake.scoped_declines.store(false, Ordering::SeqCst);
    fake.vault_panics.store(true, Ordering::SeqCst);
    changes.add([p("/v/e.md")]);
    changes.need_sweep();
    let r = runner.run(JobId::VaultRefresh, Cause::Watcher, true).await;
    assert!(matches!(r, Ran::Finished(Err(JobError::Panicked(_)))), "{r:?}");
    assert_eq!(changes.len(), 1, "still pending after the failure");
}

#[test]
fn the_inbox_skips_lock_files_placeholders_and_partial_downloads() {
    for ok in ["paper.pdf", "Paper Final.PDF", "a.b.pdf"] {
        assert!(pdf_scan::is_candidate(ok), "{ok}");
    }
    for skip in [
        ".hidden.pdf",
        "~$paper.pdf",
        ".paper.pdf.icloud",
        "paper.pdf.icloud",
        "paper.pdf.crdownload",
        "paper.pdf.part",
        "notes.txt",
        "paper.pdf.download",
    ] {
        assert!(!pdf_scan::is_candidate(skip), "{skip}");
    }
}

#[test]
fn a_file_still_being_written_is_left_and_one_failing_pdf_does_not_stop_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = dir.path();
    for n in ["a.pdf", "bad.pdf", "c.pdf", "growing.pdf", ".x.pdf", "~$y.pdf"] {
        std::fs::write(inbox.join(n), b"%PDF-1.4").unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (p, stop) = (inbox.join("growing.pdf"), Arc::clone(&stop));
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            while !stop.load(Ordering::SeqCst) {
                f.write_all(b"more bytes ").unwrap();
                f.flush().unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let fake = Fake::default();
    let report = pdf_scan::scan(&fake, inbox, Duration::from_millis(300), &Cancel::new()).unwrap();
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(report.changing, ["growing.pdf"]);
    assert_eq!(report.added, ["a.pdf", "c.pdf"]);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].0, "bad.pdf");
    assert_eq!(*fake.ingested.lock().unwrap(), ["a.pdf", "c.pdf"]);
    // The next cycle picks the finished file up.
    let report = pdf_scan::scan(&fake, inbox, Duration::from_millis(100), &Cancel::new()).unwrap();
    assert!(report.added.contains(&"growing.pdf".to_string()), "{report:?}");
}

#[test]
fn a_missing_inbox_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = pdf_scan::scan(
        &Fake::default(),
        &dir.path().join("nope"),
        Duration::ZERO,
        &Cancel::new(),
    )
    .unwrap_err();
    assert!(e.message.contains("sync.pdf_watch_dir"), "{e}");
}

#[test]
fn the_status_file_round_trips_and_a_pid_is_checked_for_life() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/sync_status.json");
    let s = status::StatusStore::new(path.clone());
    s.update(|d| {
        d.owner = Some(status::OwnerInfo {
            pid: std::process::id(),
            role: "sync".into(),
            since: Utc::now(),
        })
    });
    s.update_job(JobId::DraftGc, |j| j.last_summary = Some("x".into()));
    let back = status::read(&path).unwrap().unwrap();
    assert_eq!(back, s.snapshot());
    assert!(status::pid_alive(std::process::id()));
    assert!(!status::pid_alive(0));
    assert!(!status::pid_alive(u32::MAX));
    // No temp files left beside it.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().flatten().collect();
    assert_eq!(names.len(), 1);
    std::fs::write(&path, b"{not json").unwrap();
    assert!(status::read(&path).unwrap_err().contains("not a valid status file"));
}
