//! Citations bound to passages: every passage a retrieval tool returns in a
//! turn gets a number for that turn ([`Passages`]); the model cites with
//! `[n]`; after the turn [`check`] keeps each marker that names a passage
//! returned in this turn and removes (and counts) every one that names
//! nothing. [`Grounding`] is the cheap abstention check on top: a reply
//! that cites nothing after the library was searched is "not from your
//! library".
//!
//! Owns: the marker grammar (`[3]`, `[1, 4]`, `[1][4]`; one to three
//! digits, so a year in brackets is prose), which text is code and never
//! holds a marker, and the shape of a citation as sessions, replies and
//! wires carry it. Must not: look anything up — the tools number what they
//! returned, this module only checks the model's text against that.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// Longest passage text a citation keeps (a chunk is ≤ 1024 characters by
/// construction; a whole note read with read_file is cut here).
pub const PASSAGE_CHARS: usize = 2_000;

/// One numbered passage of a turn: what `[n]` points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The marker number, valid for the turn that returned the passage.
    pub n: u32,
    /// The document key: a note's vault-relative path, otherwise its source.
    pub key: String,
    /// `note`, `paper`, `digest` or `chat`.
    pub kind: String,
    #[serde(default)]
    pub title: String,
    /// The stored source: `local` for vault notes, a URL or PDF path for a
    /// paper, `session:<id>` for a chat, `file://…` for a digest.
    #[serde(default)]
    pub source: String,
    /// The file the document came from: a note's vault-relative path, a
    /// local PDF's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The section heading breadcrumb (`Setup > Install`), when the
    /// passage has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub section: String,
    /// The PDF page (annotations, figures), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<i64>,
    /// `highlight`, `comment` or `figure` for an annotation chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation: Option<String>,
    /// The passage as the model was shown it (cut at [`PASSAGE_CHARS`]).
    #[serde(default)]
    pub text: String,
    /// The stored chunk; `None` for a whole note read from the vault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<u64>,
}

/// The passages of one turn, numbered from 1 in the order the tools
/// returned them. The same chunk returned twice keeps its first number, so
/// a model that searched twice cites one passage one way.
#[derive(Debug, Clone, Default)]
pub struct Passages {
    list: Vec<Citation>,
    by_identity: HashMap<String, u32>,
}

impl Passages {
    /// Number `c` (its `n` is ignored) and return the number it has.
    pub fn number(&mut self, mut c: Citation) -> u32 {
        let identity = match c.chunk_id {
            Some(id) => format!("chunk:{id}"),
            None => format!("doc:{}", c.key),
        };
        if let Some(n) = self.by_identity.get(&identity) {
            return *n;
        }
        let n = self.list.len() as u32 + 1;
        c.n = n;
        c.text = cut(&c.text, PASSAGE_CHARS);
        self.list.push(c);
        self.by_identity.insert(identity, n);
        n
    }

    pub fn get(&self, n: u32) -> Option<&Citation> {
        n.checked_sub(1).and_then(|i| self.list.get(i as usize))
    }

    pub fn all(&self) -> &[Citation] {
        &self.list
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn into_vec(self) -> Vec<Citation> {
        self.list
    }
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The outcome of checking a reply's markers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checked {
    /// The reply with every marker that named nothing removed.
    pub text: String,
    /// The passages the kept markers name, one per number, by number.
    pub citations: Vec<Citation>,
    /// Marker numbers that named no passage of this turn (each occurrence).
    pub unsupported: usize,
    /// Marker numbers kept (each occurrence).
    pub kept: usize,
}

/// Check `text`'s markers against this turn's passages: a marker keeps the
/// numbers that name a passage and loses the others; a marker left with
/// none is removed with the blank before it.
pub fn check(text: &str, passages: &Passages) -> Checked {
    let mut out = String::with_capacity(text.len());
    let mut cited: BTreeMap<u32, Citation> = BTreeMap::new();
    let (mut unsupported, mut kept) = (0, 0);
    let mut last = 0;
    for m in find_markers(text) {
        let good: Vec<u32> = m
            .numbers
            .iter()
            .copied()
            .filter(|n| passages.get(*n).is_some())
            .collect();
        unsupported += m.numbers.len() - good.len();
        kept += good.len();
        for n in &good {
            if let Some(c) = passages.get(*n) {
                cited.entry(*n).or_insert_with(|| c.clone());
            }
        }
        if good.len() == m.numbers.len() {
            continue;
        }
        let before = &text[last..m.start];
        if good.is_empty() {
            // Drop the blank that led to the marker too: "text [7]." → "text."
            out.push_str(before.trim_end_matches([' ', '\t']));
        } else {
            out.push_str(before);
            let list: Vec<String> = good.iter().map(u32::to_string).collect();
            out.push_str(&format!("[{}]", list.join(", ")));
        }
        last = m.end;
        if good.is_empty() && (out.is_empty() || out.ends_with('\n')) {
            // A marker that opened a line: no blank left dangling after it.
            while text[last..].starts_with([' ', '\t']) {
                last += 1;
            }
        }
    }
    out.push_str(&text[last..]);
    Checked {
        text: out,
        citations: cited.into_values().collect(),
        unsupported,
        kept,
    }
}

/// Give `text`'s markers (outside code) new numbers: each number becomes
/// what `map` says, a number it maps to nothing is dropped, and a marker
/// left with none is removed with the blank before it. For text written
/// against one numbering (a research sub-agent's turn) that is read
/// against another (the report's).
pub fn renumber(text: &str, map: impl Fn(u32) -> Option<u32>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in find_markers(text) {
        let mut mapped: Vec<u32> = Vec::new();
        for n in m.numbers.iter().filter_map(|n| map(*n)) {
            if !mapped.contains(&n) {
                mapped.push(n);
            }
        }
        let before = &text[last..m.start];
        if mapped.is_empty() {
            out.push_str(before.trim_end_matches([' ', '\t']));
        } else {
            out.push_str(before);
            let list: Vec<String> = mapped.iter().map(u32::to_string).collect();
            out.push_str(&format!("[{}]", list.join(", ")));
        }
        last = m.end;
    }
    out.push_str(&text[last..]);
    out
}

/// A piece of text split around markers (for rendering markers as links).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Marker(Vec<u32>),
}

/// Split plain text (already outside code: a renderer's text run) into
/// text and markers.
pub fn split_markers(text: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut last = 0;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            if let Some((end, numbers)) = marker_at(b, i) {
                if i > last {
                    out.push(Segment::Text(&text[last..i]));
                }
                out.push(Segment::Marker(numbers));
                last = end;
                i = end;
                continue;
            }
        }
        i += 1;
    }
    if last < text.len() {
        out.push(Segment::Text(&text[last..]));
    }
    out
}

/// A marker in Markdown source, by byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marker {
    start: usize,
    end: usize,
    numbers: Vec<u32>,
}

/// `[n]` or `[n, m, …]` at `i` (which holds `[`): where it ends and its
/// numbers. One to three digits each, at least 1.
fn marker_at(b: &[u8], i: usize) -> Option<(usize, Vec<u32>)> {
    let mut j = i + 1;
    let mut numbers = Vec::new();
    loop {
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let digits = j - start;
        if digits == 0 || digits > 3 {
            return None;
        }
        let n: u32 = std::str::from_utf8(&b[start..j]).ok()?.parse().ok()?;
        if n == 0 {
            return None;
        }
        numbers.push(n);
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        match b.get(j) {
            Some(b']') => return Some((j + 1, numbers)),
            Some(b',') => j += 1,
            _ => return None,
        }
    }
}

/// Every marker outside code in Markdown `text`: fenced blocks and
/// backtick spans are skipped, as are an image's or a link's text
/// (`![1](…)`, `[1](…)`) and a reference definition (`[1]: …`).
fn find_markers(text: &str) -> Vec<Marker> {
    let mut out = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let tb = trimmed.as_bytes();
        let run = |c: u8| tb.iter().take_while(|&&x| x == c).count();
        if indent <= 3 {
            if let Some((c, n)) = fence {
                if run(c) >= n && trimmed[run(c)..].trim().is_empty() {
                    fence = None;
                }
                continue;
            }
            for c in [b'`', b'~'] {
                if run(c) >= 3 {
                    fence = Some((c, run(c)));
                }
            }
            if fence.is_some() {
                continue;
            }
        } else if fence.is_some() {
            continue;
        }
        scan_line(line.as_bytes(), start, indent, &mut out);
    }
    out
}

fn scan_line(b: &[u8], base: usize, indent: usize, out: &mut Vec<Marker>) {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => {
                let n = b[i..].iter().take_while(|&&x| x == b'`').count();
                // The span closes at the next run of exactly n backticks on
                // this line; an unclosed run is literal text.
                let mut j = i + n;
                let mut close = None;
                while j < b.len() {
                    if b[j] == b'`' {
                        let m = b[j..].iter().take_while(|&&x| x == b'`').count();
                        if m == n {
                            close = Some(j + m);
                            break;
                        }
                        j += m;
                    } else {
                        j += 1;
                    }
                }
                i = close.unwrap_or(i + n);
            }
            b'[' => match marker_at(b, i) {
                Some((end, numbers)) => {
                    let image = i > 0 && b[i - 1] == b'!';
                    let link = b.get(end) == Some(&b'(');
                    let definition = i == indent && b.get(end) == Some(&b':');
                    if !(image || link || definition) {
                        out.push(Marker {
                            start: base + i,
                            end: base + end,
                            numbers,
                        });
                    }
                    i = end;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
}

/// Whether the reply rests on the library, from what the turn did: the
/// cheap half of abstention (the prompt is the other half).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grounding {
    /// Retrieval calls (search_kb, search_chat_history, get_document,
    /// read_file) that returned, successfully, this turn.
    pub retrievals: usize,
    /// Passages those calls returned.
    pub passages: usize,
    /// Valid citations in the reply.
    pub citations: usize,
    /// The model called use_own_knowledge.
    pub own_knowledge: bool,
}

impl Grounding {
    /// The reply is not from the library: the model said it answers from
    /// its own knowledge and cites nothing, or the library was searched
    /// and the reply cites nothing it returned.
    pub fn not_from_library(&self) -> bool {
        self.citations == 0 && (self.own_knowledge || self.retrievals > 0)
    }

    /// The library was searched and returned nothing at all, and the reply
    /// cites nothing: with own knowledge not allowed, the only honest
    /// answer is that the library has nothing on it.
    pub fn found_nothing(&self) -> bool {
        self.citations == 0 && self.retrievals > 0 && self.passages == 0
    }
}

/// Words a paragraph needs before it counts as a claim: a sentence that
/// states something. A lead-in ("Here is what your notes say:"), a
/// heading or a one-line sign-off is shorter and cites nothing by nature.
pub const CLAIM_WORDS: usize = 12;

/// Paragraphs of `text` that state something and cite nothing: prose
/// outside code (each list item on its own; headings, table rows and a
/// line ending in `:` skipped) of at least [`CLAIM_WORDS`] words with no
/// marker. An answer that cites the library and still has such a
/// paragraph is "partly not from your library": that paragraph rests on
/// no passage the turn returned — the model's own knowledge, or a claim
/// it did not tie to its source.
pub fn uncited_paragraphs(text: &str) -> usize {
    let mut units: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut fence = false;
    let flush = |current: &mut String, units: &mut Vec<String>| {
        if !current.trim().is_empty() {
            units.push(std::mem::take(current));
        }
        current.clear();
    };
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            flush(&mut current, &mut units);
            continue;
        }
        if fence {
            continue;
        }
        let item = t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") || {
            let d = t.chars().take_while(char::is_ascii_digit).count();
            d > 0 && (t[d..].starts_with(". ") || t[d..].starts_with(") "))
        };
        if t.is_empty() || t.starts_with('#') || t.starts_with('|') || item {
            flush(&mut current, &mut units);
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with('|') {
            continue;
        }
        current.push_str(t);
        current.push('\n');
    }
    flush(&mut current, &mut units);
    units
        .iter()
        .filter(|u| {
            let u = u.trim();
            !u.ends_with(':') && u.split_whitespace().count() >= CLAIM_WORDS && find_markers(u).is_empty()
        })
        .count()
}

/// What the tools did in one turn, for checking its reply.
#[derive(Debug, Clone, Default)]
pub struct TurnEvidence {
    pub passages: Passages,
    /// Retrieval calls that returned.
    pub retrievals: usize,
    /// What the searches looked for.
    pub searched: Vec<String>,
    /// The model called use_own_knowledge.
    pub own_knowledge: bool,
}

/// A reply after its check: what is saved and shown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finished {
    pub text: String,
    pub citations: Vec<Citation>,
    pub unsupported: usize,
    /// Marker numbers kept (each occurrence).
    pub kept: usize,
    pub not_from_library: bool,
    /// Claims that cite nothing in an answer that cites the library
    /// ([`uncited_paragraphs`]); 0 when it cites nothing at all (that is
    /// `not_from_library`).
    pub uncited_paragraphs: usize,
    /// `text` is the fixed "nothing found" message, not the model's words.
    pub replaced: bool,
}

/// Check a reply against the turn's passages and label it: markers that
/// name nothing go; a reply citing nothing after a search is "not from
/// your library"; in a DB-only session whose searches found nothing at
/// all, the reply becomes the fixed message saying what was searched and
/// that the library has nothing on it (the model had nothing to answer
/// from but its own knowledge, which the session does not allow).
pub fn finish(text: &str, evidence: &TurnEvidence, kb_only: bool) -> Finished {
    let checked = check(text, &evidence.passages);
    let g = Grounding {
        retrievals: evidence.retrievals,
        passages: evidence.passages.all().len(),
        citations: checked.citations.len(),
        own_knowledge: evidence.own_knowledge,
    };
    let replaced = kb_only && g.found_nothing();
    let uncited = if checked.citations.is_empty() {
        0
    } else {
        uncited_paragraphs(&checked.text)
    };
    Finished {
        uncited_paragraphs: uncited,
        text: if replaced {
            nothing_found_message(&evidence.searched)
        } else {
            checked.text
        },
        citations: checked.citations,
        unsupported: checked.unsupported,
        kept: checked.kept,
        not_from_library: g.not_from_library(),
        replaced,
    }
}

/// What an evaluation (or a terminal) needs of a turn and no wire
/// carries: every passage the tools returned (not only the cited ones),
/// the markers kept, the model steps, the searches, and whether the text
/// is the fixed "nothing found" message rather than what streamed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    pub passages: Vec<Citation>,
    pub kept_markers: usize,
    pub rounds: usize,
    pub searched: Vec<String>,
    pub replaced: bool,
}

/// What a turn in a DB-only session says when its searches found nothing
/// and the reply cited nothing: what was searched, and that the library
/// has nothing on it (never an answer from the model's own knowledge).
pub fn nothing_found_message(searched: &[String]) -> String {
    let mut shown: Vec<String> = Vec::new();
    for q in searched {
        let q = cut(q.trim(), 80).replace(['\n', '\r'], " ");
        if !q.is_empty() && !shown.contains(&q) && shown.len() < 5 {
            shown.push(q);
        }
    }
    if shown.is_empty() {
        return "Your library has nothing on this: the search found no matching notes or papers, and this session answers from your library only.".into();
    }
    let list: Vec<String> = shown.iter().map(|q| format!("“{q}”")).collect();
    format!(
        "Your library has nothing on this: I searched for {} and found no matching notes or papers. This session answers from your library only — turn off \"DB only\" to let me answer from the model's own knowledge.",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests;
