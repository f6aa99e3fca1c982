//! A fact's record and its event land together, the log keys and titles
//! facts without their text, and a kept copy restores a fact byte for byte.

use super::*;
use crate::store::events::Actor;

fn fact(text: &str, status: FactStatus) -> Fact {
    Fact {
        id: 0,
        category: "work".into(),
        key: "lab".into(),
        text: text.into(),
        status,
        source: Provenance {
            origin: "user".into(),
            at: "2026-01-01T00:00:00Z".into(),
            ..Provenance::default()
        },
        updated: "2026-01-01T00:00:00Z".into(),
    }
}

fn events(s: &Store) -> Vec<Event> {
    let mut out = Vec::new();
    s.scan_events(0, |e| {
        out.push(e);
        true
    })
    .unwrap();
    out
}

#[test]
fn facts_and_their_events_are_written_together() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let cause = Cause::new(Actor::Cli, true);
    let (pending, e) = s
        .put_fact(fact("Runs the imaging lab.", FactStatus::Pending), &cause)
        .unwrap();
    assert_eq!((pending.id, e), (1, None), "a proposal is no change to the user's data");
    let mut accepted = pending.clone();
    accepted.status = FactStatus::Accepted;
    let (_, e) = s.put_fact(accepted.clone(), &cause).unwrap();
    let ev = events(&s);
    assert_eq!(ev.len(), 1);
    assert_eq!(Some(ev[0].id), e);
    assert_eq!(
        (ev[0].kind, ev[0].key.as_str(), ev[0].title.as_str()),
        (EventKind::MemoryAccepted, "memory:1", "work: lab")
    );
    assert_eq!(ev[0].after, s.fact_state(1).unwrap());
    assert!(ev[0].private, "a source not known to be public is private");

    let raw = serde_json::to_vec(&accepted).unwrap();
    let forgot = s.delete_fact(1, &cause).unwrap().unwrap();
    assert!(s.fact(1).unwrap().is_none());
    let kept = s.kept_chunks(forgot).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].record, raw, "the record as stored, for undo");
    assert_eq!(events(&s)[1].kind, EventKind::MemoryForgotten);
    assert!(s.audit_log().unwrap().ok(), "{:?}", s.audit_log().unwrap());

    s.restore_fact(1, Some(kept[0].record.clone()), &cause).unwrap();
    assert_eq!(s.fact(1).unwrap(), Some(accepted));
    assert!(s.audit_log().unwrap().ok());
    assert!(
        s.restore_fact(2, Some(raw), &cause).is_err(),
        "a kept record restores only its own fact"
    );
    // New facts never reuse an id.
    let (next, _) = s.put_fact(fact("Second.", FactStatus::Pending), &cause).unwrap();
    assert_eq!(next.id, 2);
    // Rejection of a pending fact: gone, no event.
    assert_eq!(s.delete_fact(2, &cause).unwrap(), None);
    assert_eq!(events(&s).len(), 3);
    assert_eq!(s.log_size().unwrap().events, 3);
}

#[test]
fn keep_days_zero_keeps_no_copy() {
    let t = tempfile::tempdir().unwrap();
    let s = Store::open(t.path()).unwrap();
    let off = Cause::new(Actor::Cli, false);
    s.put_fact(fact("Uses R.", FactStatus::Accepted), &off).unwrap();
    let e = s.delete_fact(1, &off).unwrap().unwrap();
    assert!(s.kept_chunks(e).unwrap().is_empty());
    assert_eq!(s.event(e).unwrap().unwrap().kept, Kept::Off);
}
