//! The kill campaign's op stream (see `kb_crash.rs`): the deterministic
//! operations a child runs, the documents each writes, and the model of
//! what every document must look like after them.

use jarvis::kb::Document;
use jarvis::store::Metadata;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const KEYS: usize = 8;
const PLAN_LEN: usize = 100_000;

/// One step of the deterministic op stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Add (or replace by source) document `key` as version = op index,
    /// with `chunks` chunks.
    Put { key: usize, chunks: usize },
    /// Supersede by source with nothing (`commit` of an empty batch).
    Delete { key: usize },
    /// One commit of several documents (distinct keys), each replacing its
    /// source: `chunks[j]` chunks for `keys[j]`, 0 = replaced by nothing.
    PutMany { keys: [usize; 3], chunks: [usize; 3] },
    /// `delete_by_metadata("source", …)`.
    DeleteByMeta { key: usize },
    /// `Kb::undo` of the document's last event: a paper goes back to its
    /// state before that event (kept chunks restored, or an add removed);
    /// a note's is refused (its file is the truth).
    Undo { key: usize },
}

impl Op {
    pub fn keys(self) -> Vec<usize> {
        match self {
            Op::Put { key, .. } | Op::Delete { key } | Op::DeleteByMeta { key } | Op::Undo { key } => vec![key],
            Op::PutMany { keys, .. } => keys.to_vec(),
        }
    }

    /// The chunk count this op gives `key`, if it writes `key` at all.
    pub fn chunks_for(self, key: usize) -> Option<usize> {
        match self {
            Op::Put { key: k, chunks } if k == key => Some(chunks),
            Op::PutMany { keys, chunks } => keys.iter().position(|&k| k == key).map(|j| chunks[j]),
            _ => None,
        }
    }
}

/// What a document should look like: absent, or (version, chunk count).
pub type DocState = Option<(usize, usize)>;

/// Odd keys are papers (undo restores their kept chunks), even ones notes.
pub fn is_paper(key: usize) -> bool {
    key % 2 == 1
}

/// The key the store and the event log know document `key` by.
pub fn doc_key(key: usize) -> String {
    if is_paper(key) {
        source(key)
    } else {
        file_path(key)
    }
}

pub fn plan(seed: u64) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..PLAN_LEN)
        .map(|_| {
            let key = rng.random_range(0..KEYS);
            match rng.random_range(0..10) {
                0..=4 => Op::Put {
                    key,
                    chunks: rng.random_range(1..=4),
                },
                5 | 6 => {
                    let a = key;
                    let b = (a + rng.random_range(1..KEYS)) % KEYS;
                    let mut c = (a + rng.random_range(1..KEYS)) % KEYS;
                    while c == b {
                        c = (c + 1) % KEYS;
                        if c == a {
                            c = (c + 1) % KEYS;
                        }
                    }
                    Op::PutMany {
                        keys: [a, b, c],
                        // Mostly writes; now and then one member is emptied.
                        chunks: [0, 1, 2].map(|_| [0, 1, 2, 3, 4, 2][rng.random_range(0..6)]),
                    }
                }
                7 => Op::Delete { key },
                8 => Op::Undo { key },
                _ => Op::DeleteByMeta { key },
            }
        })
        .collect()
}

/// Apply `op` to the model: each document's state and its state before
/// its last event (`prev`, what an undo goes back to).
pub fn apply(model: &mut [DocState], prev: &mut [DocState], i: usize, op: Op) {
    for key in op.keys() {
        let now = match op {
            Op::Undo { .. } if is_paper(key) => prev[key],
            // A note's file is the truth: its events are never undone here.
            Op::Undo { .. } => model[key],
            _ => match op.chunks_for(key) {
                Some(0) | None => None,
                Some(chunks) => Some((i, chunks)),
            },
        };
        // Only a change is an event (removing an absent document is not).
        if now != model[key] {
            prev[key] = model[key];
            model[key] = now;
        }
    }
}

pub fn source(key: usize) -> String {
    format!("crash://doc{key}")
}
/// Each document is a note file too, so the per-file map is checked.
pub fn file_path(key: usize) -> String {
    format!("crash/doc{key}.md")
}
/// Tokens end in a digit so the English stemmer leaves them alone.
pub fn doc_token(key: usize) -> String {
    format!("dockey{key}")
}
pub fn version_token(v: usize) -> String {
    format!("versionq{v}")
}

const FILLER: &[&str] = &[
    "protein",
    "graph",
    "neural",
    "sequence",
    "sample",
    "retrieval",
    "lattice",
    "river",
    "copper",
    "melody",
    "glacier",
    "harvest",
    "orbit",
    "ledger",
    "canyon",
    "pigment",
    "tundra",
    "quartz",
    "saffron",
    "beacon",
];

pub fn documents(i: usize, key: usize, chunks: usize) -> Vec<Document> {
    let mut rng = StdRng::seed_from_u64(i as u64 ^ 0x9e37_79b9);
    (0..chunks)
        .map(|c| {
            let filler: Vec<&str> = (0..12).map(|_| FILLER[rng.random_range(0..FILLER.len())]).collect();
            let text = format!(
                "{} {} chunkq{i}x{c} {}",
                doc_token(key),
                version_token(i),
                filler.join(" ")
            );
            let mut meta = Metadata::new();
            meta.insert("source".into(), source(key).into());
            meta.insert("doc_type".into(), if is_paper(key) { "paper" } else { "note" }.into());
            meta.insert("visibility".into(), "public".into());
            meta.insert("x_version".into(), (i as u64).into());
            meta.insert("file_path".into(), file_path(key).into());
            // The per-file map copies this: it must name the version the
            // chunks are, whatever a crash interrupted.
            meta.insert("content_hash".into(), version_token(i).into());
            meta.insert("chunk_index".into(), (c as u64).into());
            Document {
                embed_text: text.clone(),
                text,
                meta,
            }
        })
        .collect()
}
