//! Pins what `jarvis kb … --json` prints. The commands serialise the reports
//! of `kb`, `ingest` and `digest` as they are, without copying them into
//! shapes of their own; these tests hold each report's exact JSON (field
//! names, their order, how values are written), so a field renamed in a lower
//! layer fails here instead of silently changing what scripts read. Changing
//! an expected string below is changing the CLI's contract: say so in the
//! commit.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use crate::digest::import::ImportReport;
use crate::ingest::paper::AddReport;
use crate::ingest::vault::VaultReport;
use crate::kb::eval::{EvalReport, QueryOutcome};
use crate::kb::maintain::{Agreement, DiskUsage, ReindexReport};
use crate::kb::ops::DocumentSummary;
use crate::kb::trees::DensePath;
use crate::kb::tune::{Tried, TuneReport};
use crate::visibility::Visibility;

fn json(v: &impl Serialize) -> String {
    serde_json::to_string(v).unwrap()
}

/// `kb list --json`: an array of these.
#[test]
fn list_rows() {
    let row = DocumentSummary {
        key: "arxiv:2401.00001".into(),
        title: "A paper".into(),
        doc_type: "paper".into(),
        visibility: Visibility::Private,
        source: "arxiv:2401.00001".into(),
        file_path: Some("papers/a.pdf".into()),
        chunks: 3,
        date_added: "2024-01-02".into(),
        meta: BTreeMap::from([("year".to_string(), json!(2024))]),
    };
    assert_eq!(
        json(&row),
        r#"{"key":"arxiv:2401.00001","title":"A paper","doc_type":"paper","visibility":"private","source":"arxiv:2401.00001","file_path":"papers/a.pdf","chunks":3,"date_added":"2024-01-02","meta":{"year":2024}}"#
    );
}

/// `kb stats --json`: `disk_bytes` and `dense_search`.
#[test]
fn stats_parts() {
    let usage = DiskUsage {
        store_bytes: 1,
        bm25_bytes: 2,
        vector_bytes: 3,
        exact_bytes: 4,
    };
    assert_eq!(
        json(&usage),
        r#"{"store_bytes":1,"bm25_bytes":2,"vector_bytes":3,"exact_bytes":4}"#
    );
    assert_eq!(json(&DensePath::Exact), r#""exact""#);
    assert_eq!(json(&DensePath::ExactWhileTreesBuild), r#""exact_while_trees_build""#);
    assert_eq!(json(&DensePath::Trees), r#""trees""#);
}

/// `kb reindex --json`.
#[test]
fn reindex_report() {
    let report = ReindexReport {
        chunks: 10,
        headers_added: 2,
        model: "bge-small".into(),
        generation: 3,
    };
    assert_eq!(
        json(&report),
        r#"{"chunks":10,"headers_added":2,"model":"bge-small","generation":3}"#
    );
}

/// `kb doctor --json`: `agreement`.
#[test]
fn doctor_agreement() {
    let a = Agreement {
        store_seq: 1,
        bm25_seq: Some(2),
        vector_seq: None,
        trees: false,
        store_chunks: 3,
        bm25_docs: 4,
        vector_items: 5,
        missing_in_bm25: 6,
        missing_in_vectors: 7,
        orphans_in_bm25: 8,
        orphans_in_vectors: 9,
        exact_seq: Some(10),
        exact_items: 11,
        missing_in_exact: 12,
        orphans_in_exact: 13,
        stale_in_exact: 14,
    };
    assert_eq!(
        json(&a),
        concat!(
            r#"{"store_seq":1,"bm25_seq":2,"vector_seq":null,"trees":false,"store_chunks":3,"bm25_docs":4,"#,
            r#""vector_items":5,"missing_in_bm25":6,"missing_in_vectors":7,"orphans_in_bm25":8,"#,
            r#""orphans_in_vectors":9,"exact_seq":10,"exact_items":11,"missing_in_exact":12,"#,
            r#""orphans_in_exact":13,"stale_in_exact":14}"#
        )
    );
}

/// `kb index-vault --json`.
#[test]
fn vault_report() {
    let report = VaultReport {
        added: vec!["a.md".into()],
        updated: vec!["b.md".into()],
        deleted: vec!["c.md".into()],
        unchanged: 4,
        reclassified: vec!["d.md".into()],
        restamped: 5,
        skipped: vec![("e.md".into(), "empty".into())],
        warnings: vec![("f.md".into(), "bad frontmatter".into())],
    };
    assert_eq!(
        json(&report),
        concat!(
            r#"{"added":["a.md"],"updated":["b.md"],"deleted":["c.md"],"unchanged":4,"reclassified":["d.md"],"#,
            r#""restamped":5,"skipped":[["e.md","empty"]],"warnings":[["f.md","bad frontmatter"]]}"#
        )
    );
}

/// `kb add --json`: `visibility` is a word, and `unchanged` is not printed
/// (`skipped` says it).
#[test]
fn add_report() {
    let mut report = AddReport {
        source: "arxiv:2401.00001".into(),
        title: "A paper".into(),
        authors: "Ada".into(),
        doi: None,
        body_chunks: 1,
        annotation_chunks: 2,
        figure_chunks: 3,
        replaced: true,
        skipped: Some("unchanged".into()),
        unchanged: true,
        private: true,
        warnings: vec!["w".into()],
    };
    let expected = |visibility: &str| {
        format!(
            r#"{{"source":"arxiv:2401.00001","title":"A paper","authors":"Ada","doi":null,"body_chunks":1,"annotation_chunks":2,"figure_chunks":3,"replaced":true,"skipped":"unchanged","visibility":"{visibility}","warnings":["w"]}}"#
        )
    };
    assert_eq!(json(&report), expected("private"));
    report.private = false;
    assert_eq!(json(&report), expected("public"));
}

/// `kb add-digest --json`.
#[test]
fn digest_import_report() {
    let report = ImportReport {
        files: 1,
        added: vec!["A paper".into()],
        skipped: vec![("B paper".into(), "already in".into())],
    };
    assert_eq!(
        json(&report),
        r#"{"files":1,"added":["A paper"],"skipped":[["B paper","already in"]]}"#
    );
}

/// `kb eval --json`.
#[test]
fn eval_report() {
    let report = EvalReport {
        queries: 1,
        group_docs: false,
        hit1: 1.0,
        hit10: 1.0,
        mrr10: 0.5,
        ndcg10: None,
        recall100: Some(0.25),
        latency_p50_ms: 2.0,
        latency_p95_ms: 3.0,
        per_query: vec![QueryOutcome {
            id: "q1".into(),
            query: "attention".into(),
            relevant: vec!["arxiv:1".into()],
            rank: Some(2),
            top: vec!["arxiv:2".into(), "arxiv:1".into()],
            ndcg10: None,
            recall100: Some(1.0),
            latency_ms: 2.5,
        }],
    };
    assert_eq!(
        json(&report),
        concat!(
            r#"{"queries":1,"group_docs":false,"hit1":1.0,"hit10":1.0,"mrr10":0.5,"ndcg10":null,"recall100":0.25,"#,
            r#""latency_p50_ms":2.0,"latency_p95_ms":3.0,"per_query":[{"id":"q1","query":"attention","#,
            r#""relevant":["arxiv:1"],"rank":2,"top":["arxiv:2","arxiv:1"],"ndcg10":null,"recall100":1.0,"#,
            r#""latency_ms":2.5}]}"#
        )
    );
}

/// `kb eval --tune --json`: `tune`.
#[test]
fn tune_report() {
    let tried = Tried {
        fusion: "rrf",
        dense_weight: 50,
        score: 0.5,
        hit1: 0.25,
        mrr10: 0.5,
        ndcg10: None,
    };
    let report = TuneReport {
        queries: 4,
        metric: "mrr@10",
        tried: vec![tried.clone()],
        current: tried.clone(),
        best: tried,
    };
    let one = r#"{"fusion":"rrf","dense_weight":50,"score":0.5,"hit1":0.25,"mrr10":0.5,"ndcg10":null}"#;
    assert_eq!(
        json(&report),
        format!(r#"{{"queries":4,"metric":"mrr@10","tried":[{one}],"current":{one},"best":{one}}}"#)
    );
}

/// `kb import-zotero --json`.
#[test]
fn zotero_import_report() {
    use crate::ingest::zotero::{Format, ImportReport as Zotero, Imported, ItemWarning, Skipped};
    let imported = Imported {
        key: "PAPERKEY".into(),
        title: "A paper".into(),
        source: "zotero://select/library/items/PAPERKEY".into(),
        body_chunks: 4,
        annotation_chunks: 2,
        with_pdf: true,
        private: false,
    };
    let skipped = Skipped {
        key: "BOOKKEY1".into(),
        title: "A book".into(),
        reason: "it is in Zotero's trash".into(),
    };
    let report = Zotero {
        library: "/home/u/Zotero/zotero.sqlite".into(),
        format: Format::ZoteroSqlite,
        items: 3,
        imported: vec![imported.clone()],
        replaced: vec![Imported {
            private: true,
            ..imported
        }],
        unchanged: 0,
        skipped: vec![skipped.clone()],
        failed: vec![],
        warnings: vec![ItemWarning {
            key: "PAPERKEY".into(),
            warning: "w".into(),
        }],
        stopped: false,
        gone: vec![crate::ingest::zotero::Gone {
            key: "OLDKEY01".into(),
            title: "Deleted in Zotero".into(),
            source: "zotero://select/library/items/OLDKEY01".into(),
        }],
    };
    let item = |visibility: &str| {
        format!(
            r#"{{"key":"PAPERKEY","title":"A paper","source":"zotero://select/library/items/PAPERKEY","body_chunks":4,"annotation_chunks":2,"with_pdf":true,"visibility":"{visibility}"}}"#
        )
    };
    assert_eq!(
        json(&report),
        format!(
            concat!(
                r#"{{"library":"/home/u/Zotero/zotero.sqlite","format":"zotero-sqlite","items":3,"#,
                r#""imported":[{}],"replaced":[{}],"unchanged":0,"#,
                r#""skipped":[{{"key":"BOOKKEY1","title":"A book","reason":"it is in Zotero's trash"}}],"failed":[],"#,
                r#""warnings":[{{"key":"PAPERKEY","warning":"w"}}],"stopped":false,"#,
                r#""gone":[{{"key":"OLDKEY01","title":"Deleted in Zotero","source":"zotero://select/library/items/OLDKEY01"}}]}}"#
            ),
            item("public"),
            item("private")
        )
    );
    assert_eq!(json(&Format::Bibtex), r#""bibtex""#);
    assert_eq!(json(&Format::CslJson), r#""csl-json""#);
}

/// `kb stats --json`: `history`, the event log's size.
#[test]
fn stats_history() {
    let size = crate::kb::LogSize {
        events: 12,
        event_bytes: 4096,
        kept_events: 2,
        kept_chunks: 7,
        kept_bytes: 20_000,
    };
    assert_eq!(
        json(&size),
        r#"{"events":12,"event_bytes":4096,"kept_events":2,"kept_chunks":7,"kept_bytes":20000}"#
    );
}

/// `jarvis log --json` (an array of these rows) and `jarvis undo --json`
/// (`of` is the event undone): the event schema.
#[test]
fn log_rows_and_undo() {
    use crate::kb::{Actor, DocState, Event, EventKind, Kept, Prior};
    let state = |n: u64, d: &str| DocState {
        chunks: n,
        digest: d.into(),
        content_hash: Some("h1".into()),
    };
    let removal = Event {
        id: 7,
        at: "2024-06-01T10:00:00Z".into(),
        seq: 41,
        actor: Actor::Agent {
            session: "s-1".into(),
            token: Some("t-9".into()),
        },
        kind: EventKind::Removed,
        key: "arxiv:2401.00001".into(),
        title: "A paper".into(),
        doc_type: "paper".into(),
        private: false,
        before: Some(state(3, "00ff")),
        after: None,
        undo_of: None,
        fields: Default::default(),
        prior: Vec::new(),
        kept: Kept::Copies {
            chunks: 3,
            bytes: 5000,
            gen: 0,
        },
        record: None,
    };
    let row = crate::kb::undo::TimelineRow {
        event: removal.clone(),
        undoable: true,
        why_not: None,
    };
    assert_eq!(
        json(&row),
        r#"{"id":7,"at":"2024-06-01T10:00:00Z","seq":41,"actor":{"by":"agent","session":"s-1","token":"t-9"},"kind":"removed","key":"arxiv:2401.00001","title":"A paper","doc_type":"paper","private":false,"before":{"chunks":3,"digest":"00ff","content_hash":"h1"},"after":null,"kept":{"state":"copies","chunks":3,"bytes":5000,"gen":0},"undoable":true}"#
    );
    let edit = Event {
        id: 9,
        actor: Actor::Cli,
        kind: EventKind::MetadataSet,
        before: Some(state(3, "00ff")),
        after: Some(state(3, "0100")),
        undo_of: Some(8),
        fields: BTreeMap::from([("title".to_string(), json!("Right"))]),
        prior: vec![Prior {
            ids: vec![1, 2, 3],
            fields: BTreeMap::from([("title".to_string(), json!("Wrong"))]),
        }],
        kept: Kept::Nothing,
        ..removal
    };
    assert_eq!(
        json(&edit),
        r#"{"id":9,"at":"2024-06-01T10:00:00Z","seq":41,"actor":{"by":"cli"},"kind":"metadata_set","key":"arxiv:2401.00001","title":"A paper","doc_type":"paper","private":false,"before":{"chunks":3,"digest":"00ff","content_hash":"h1"},"after":{"chunks":3,"digest":"0100","content_hash":"h1"},"undo_of":8,"fields":{"title":"Right"},"prior":[{"ids":[1,2,3],"fields":{"title":"Wrong"}}],"kept":{"state":"nothing"}}"#
    );
    let done = crate::kb::undo::Undone {
        of: edit,
        event: Some(10),
        summary: "put back".into(),
    };
    assert!(json(&done).starts_with(r#"{"of":{"id":9,"#));
    assert!(json(&done).ends_with(r#""event":10,"summary":"put back"}"#));
}

/// `kb audit --json`.
#[test]
fn audit_report() {
    let a = crate::kb::AuditReport {
        events: 5,
        matched: 2,
        missing: vec![crate::kb::Mismatch {
            key: "arxiv:x".into(),
            log: Some(crate::kb::DocState {
                chunks: 1,
                digest: "ab".into(),
                content_hash: None,
            }),
            store: None,
            event: Some(3),
        }],
        first_differing_event: Some(3),
        ..Default::default()
    };
    assert_eq!(
        json(&a),
        r#"{"events":5,"matched":2,"missing":[{"key":"arxiv:x","log":{"chunks":1,"digest":"ab"},"store":null,"event":3}],"extra":[],"differing":[],"state_drift":0,"first_differing_event":3}"#
    );
}
