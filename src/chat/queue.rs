//! Messages queued while a turn runs, per session: added, edited, removed
//! and reordered by the human; the page starts the next one when a turn
//! ends (taking it by id, so two tabs cannot both run it); one marked
//! "send now" is handed to the running turn after its current tool round
//! ([`Queues::take_steered`]) and comes back to the front of the queue if
//! that turn is stopped. A stop holds the queue until the human resumes it.
//! Kept in memory and in `state/queues/<session>.json` (0600), so a reload
//! or a restart finds it.
//! Must not: run turns (the edge starts them) or decide what a turn sees
//! beyond the steered text it hands over.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::lock::lock;

/// Queued messages one session may hold.
pub const MAX_ITEMS: usize = 20;
/// Longest queued message (the same cap as a sent one).
pub const MAX_CHARS: usize = 100_000;

/// How the running turn is told about a message sent while it worked: a
/// line the model reads before the words, after the round's tool results.
pub const STEER_HEAD: &str = "[The user sent this while you were working; take it into account now:]";

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("that queued message is gone (sent, removed, or changed in another tab) — reload the queue")]
    NoItem,
    #[error("the queue holds at most {MAX_ITEMS} messages — send or remove some first")]
    Full,
    #[error("a queued message must be between 1 and {MAX_CHARS} characters")]
    BadText,
    #[error("could not save the queue: {0}")]
    Io(#[from] crate::paths::PathsError),
    #[error("could not encode the queue: {0}")]
    Encode(#[from] serde_json::Error),
}

impl QueueError {
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        match self {
            QueueError::NoItem => ErrorKind::NotFound,
            QueueError::Full => ErrorKind::Conflict,
            QueueError::BadText => ErrorKind::User,
            QueueError::Io(e) => e.kind(),
            QueueError::Encode(_) => ErrorKind::Internal,
        }
    }
}

/// One queued message. `steer`: "send now" was asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub steer: bool,
}

/// A session's queue as the page shows it. `held`: a stop paused it; the
/// next message waits for the human.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queue {
    pub items: Vec<Queued>,
    #[serde(default)]
    pub held: bool,
    /// Steered messages the running turn has taken but not yet saved.
    #[serde(skip)]
    taken: Vec<Queued>,
}

/// What the human does to a queue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum QueueOp {
    Add {
        text: String,
    },
    Edit {
        id: String,
        text: String,
    },
    Remove {
        id: String,
    },
    /// Move the item to position `to` (0 = next).
    Move {
        id: String,
        to: usize,
    },
    /// "Send now": to the front, handed to a running turn after its round.
    Steer {
        id: String,
    },
    Hold {
        held: bool,
    },
    Clear,
}

pub struct Queues {
    dir: PathBuf,
    all: Mutex<HashMap<String, Queue>>,
    next: std::sync::atomic::AtomicU64,
}

fn check_text(t: &str) -> Result<String, QueueError> {
    let t = t.trim();
    if t.is_empty() || t.chars().count() > MAX_CHARS {
        return Err(QueueError::BadText);
    }
    Ok(t.to_string())
}

impl Queues {
    /// Queues kept under `dir` (`state/queues`).
    pub fn new(dir: PathBuf) -> Queues {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        Queues {
            dir,
            all: Mutex::new(HashMap::new()),
            next: std::sync::atomic::AtomicU64::new(seed),
        }
    }

    fn path(&self, session: &str) -> PathBuf {
        self.dir.join(format!("{session}.json"))
    }

    /// The queue in memory, read from its file the first time.
    fn with<T>(&self, session: &str, f: impl FnOnce(&mut Queue) -> T) -> T {
        let mut all = lock(&self.all);
        let q = all
            .entry(session.to_string())
            .or_insert_with(|| match std::fs::read_to_string(self.path(session)) {
                Ok(t) => serde_json::from_str(&t).unwrap_or_else(|e| {
                    tracing::warn!(session, error = %e, "unreadable queue file; starting an empty queue");
                    Queue::default()
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Queue::default(),
                Err(e) => {
                    tracing::warn!(session, error = %e, "could not read the queue file; starting an empty queue");
                    Queue::default()
                }
            });
        f(q)
    }

    fn save(&self, session: &str, q: &Queue) -> Result<(), QueueError> {
        let path = self.path(session);
        if q.items.is_empty() && !q.held {
            return match std::fs::remove_file(&path) {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    Err(crate::paths::PathsError::Io { path, source }.into())
                }
                _ => Ok(()),
            };
        }
        crate::paths::ensure_dir(&self.dir, 0o700)?;
        let bytes = serde_json::to_vec_pretty(q)?;
        Ok(crate::paths::write_atomic(&path, &bytes, 0o600)?)
    }

    pub fn get(&self, session: &str) -> Queue {
        self.with(session, |q| q.clone())
    }

    /// Apply one of the human's changes; the queue after it.
    pub fn apply(&self, session: &str, op: QueueOp) -> Result<Queue, QueueError> {
        let id = format!("q{:x}", self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        self.with(session, |q| {
            let before = q.clone();
            let find = |q: &Queue, id: &str| q.items.iter().position(|i| i.id == id).ok_or(QueueError::NoItem);
            match op {
                QueueOp::Add { text } => {
                    if q.items.len() >= MAX_ITEMS {
                        return Err(QueueError::Full);
                    }
                    q.items.push(Queued {
                        id,
                        text: check_text(&text)?,
                        steer: false,
                    });
                }
                QueueOp::Edit { id, text } => {
                    let at = find(q, &id)?;
                    q.items[at].text = check_text(&text)?;
                }
                QueueOp::Remove { id } => {
                    let at = find(q, &id)?;
                    q.items.remove(at);
                }
                QueueOp::Move { id, to } => {
                    let at = find(q, &id)?;
                    let item = q.items.remove(at);
                    let to = to.min(q.items.len());
                    q.items.insert(to, item);
                }
                QueueOp::Steer { id } => {
                    let at = find(q, &id)?;
                    let mut item = q.items.remove(at);
                    item.steer = true;
                    // Behind other steered ones, ahead of the rest.
                    let to = q.items.iter().take_while(|i| i.steer).count();
                    q.items.insert(to, item);
                }
                QueueOp::Hold { held } => q.held = held,
                QueueOp::Clear => q.items.clear(),
            }
            if let Err(e) = self.save(session, q) {
                *q = before;
                return Err(e);
            }
            Ok(q.clone())
        })
    }

    /// Take item `id` to run it as the next turn (the queue un-held).
    pub fn take(&self, session: &str, id: &str) -> Result<Queued, QueueError> {
        self.with(session, |q| {
            let at = q.items.iter().position(|i| i.id == id).ok_or(QueueError::NoItem)?;
            let before = q.clone();
            let item = q.items.remove(at);
            q.held = false;
            if let Err(e) = self.save(session, q) {
                *q = before;
                return Err(e);
            }
            Ok(item)
        })
    }

    /// The running turn's hand-over: every "send now" message, in order,
    /// out of the queue and into the turn (kept aside until the turn is
    /// saved or stopped).
    pub fn take_steered(&self, session: &str) -> Vec<Queued> {
        self.with(session, |q| {
            let (steered, rest): (Vec<Queued>, Vec<Queued>) = q.items.drain(..).partition(|i| i.steer);
            q.items = rest;
            if steered.is_empty() {
                return steered;
            }
            q.taken.extend(steered.iter().cloned());
            if let Err(e) = self.save(session, q) {
                // Memory has them in `taken`; a stop still puts them back.
                tracing::warn!(session, error = %e, "could not save the queue after a hand-over");
            }
            steered
        })
    }

    /// The turn that took steered messages was saved: they are history now.
    pub fn settle(&self, session: &str) {
        self.with(session, |q| q.taken.clear());
    }

    /// The turn was stopped (rolled back): what it had taken goes back to
    /// the front, and the queue waits for the human.
    pub fn on_stop(&self, session: &str) {
        self.with(session, |q| {
            let mut back: Vec<Queued> = q.taken.drain(..).map(|i| Queued { steer: false, ..i }).collect();
            back.append(&mut q.items);
            q.items = back;
            q.held = !q.items.is_empty();
            if let Err(e) = self.save(session, q) {
                tracing::warn!(session, error = %e, "could not save the queue after a stop");
            }
        });
    }

    /// Forget a deleted session's queue.
    pub fn forget(&self, session: &str) {
        lock(&self.all).remove(session);
        match std::fs::remove_file(self.path(session)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(session, error = %e, "could not remove a deleted session's queue file")
            }
            _ => {}
        }
    }
}

/// What the model reads for messages handed over mid-turn.
pub fn steer_text(items: &[Queued]) -> String {
    let mut out = String::from(STEER_HEAD);
    for i in items {
        out.push_str("\n\n");
        out.push_str(&i.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(q: &Queues, t: &str) -> String {
        let after = q.apply("s1", QueueOp::Add { text: t.into() }).unwrap();
        after.items.last().unwrap().id.clone()
    }

    #[test]
    fn order_edits_and_steering_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queues::new(dir.path().join("queues"));
        let a = add(&q, "first");
        let b = add(&q, "second");
        let c = add(&q, "third");
        q.apply("s1", QueueOp::Move { id: c.clone(), to: 0 }).unwrap();
        q.apply(
            "s1",
            QueueOp::Edit {
                id: a.clone(),
                text: " first, edited ".into(),
            },
        )
        .unwrap();
        let texts = |q: &Queue| q.items.iter().map(|i| i.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&q.get("s1")), ["third", "first, edited", "second"]);
        q.apply("s1", QueueOp::Steer { id: b.clone() }).unwrap();
        assert_eq!(texts(&q.get("s1"))[0], "second");

        // Another process (a restart) reads the same queue back.
        let again = Queues::new(dir.path().join("queues"));
        assert_eq!(texts(&again.get("s1")), ["second", "third", "first, edited"]);
        assert!(again.get("s1").items[0].steer);

        // The hand-over takes the steered one; a stop puts it back in front and holds.
        let took = again.take_steered("s1");
        assert_eq!(took.len(), 1);
        assert_eq!(texts(&again.get("s1")), ["third", "first, edited"]);
        again.on_stop("s1");
        let after = again.get("s1");
        assert_eq!(texts(&after), ["second", "third", "first, edited"]);
        assert!(after.held && !after.items[0].steer);

        // Taking an item by id un-holds; a gone id is refused.
        let t = again.take("s1", &c).unwrap();
        assert_eq!(t.text, "third");
        assert!(!again.get("s1").held);
        assert!(matches!(again.take("s1", &c), Err(QueueError::NoItem)));
        assert!(matches!(
            again.apply("s1", QueueOp::Add { text: "  ".into() }),
            Err(QueueError::BadText)
        ));
    }

    #[test]
    fn a_saved_turn_keeps_what_it_took_and_an_empty_queue_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queues::new(dir.path().join("queues"));
        let a = add(&q, "now please");
        q.apply("s1", QueueOp::Steer { id: a }).unwrap();
        assert!(dir.path().join("queues/s1.json").exists());
        assert_eq!(q.take_steered("s1").len(), 1);
        q.settle("s1");
        q.on_stop("s1");
        assert!(q.get("s1").items.is_empty(), "a saved turn's messages never come back");
        assert!(!dir.path().join("queues/s1.json").exists());
        assert!(steer_text(&[Queued {
            id: "x".into(),
            text: "hi".into(),
            steer: true
        }])
        .ends_with("\n\nhi"));
    }
}
