//! Markdown-aware chunking: text in, chunks out.
//!
//! Owns the rules that decide where a document is cut before it is embedded
//! and indexed. It is pure: no I/O, no store, no embedder, no clock, so the
//! same input always yields the same chunks (the property tests below rely on
//! that, and so does re-ingest, which must not churn chunk ids).
//!
//! # How a document is cut
//! 1. **Sections.** The text is split before every ATX header line (`#` to
//!    `######` followed by a space or the end of the line, at most three
//!    spaces of indent). Lines inside fenced code blocks (```` ``` ```` or
//!    `~~~`) are never headers, so a shell comment in a code sample does not
//!    start a section. Setext headers (`===` underlines) are not recognised.
//!    Each section carries a breadcrumb of the headers above it, joined with
//!    [`SECTION_SEPARATOR`] (`H1 › H2 › H3`); text before the first header
//!    has the breadcrumb `""`.
//! 2. **Header lines stay in the stored text.** A section's text starts with
//!    its own header line. That keeps the promise "no text is lost": joining
//!    the chunks (minus overlaps) gives back every non-whitespace character of
//!    the document. A section that is nothing but its header line (a header
//!    directly followed by another header) is merged into the next section
//!    instead of becoming a useless one-line chunk.
//! 3. **Size.** A section longer than `chunk_size` *characters* (not bytes)
//!    is cut at the last paragraph break that fits, else the last line
//!    break, else the last sentence end, else the last word boundary, else
//!    hard at `chunk_size` (a giant word). The next piece starts up to
//!    `chunk_overlap` characters earlier, at a sentence start if one lies in
//!    that window, else at a word start, else with no overlap. Sections never
//!    overlap each other.
//! 4. **Whitespace.** Chunk texts are trimmed; whitespace-only sections are
//!    dropped. The one exception is the seed's rule that headerless text that
//!    fits stays one chunk *unchanged*: it is returned byte for byte.
//!
//! The breadcrumb and the caller's `embed_header` (e.g. `title — authors`, or
//! a record header) go into [`Chunk::embed_text`] only; [`Chunk::text`], the
//! stored text, never contains them. [`compose_embed_text`] rebuilds the
//! embedded text from stored pieces, which is what `kb reindex` needs.

use std::ops::Range;

use thiserror::Error;

/// Characters per chunk unless configured otherwise (`[rag] chunk_size`).
pub const DEFAULT_CHUNK_SIZE: usize = 1024;
/// Characters shared by neighbouring chunks unless configured otherwise
/// (`[rag] chunk_overlap`).
pub const DEFAULT_CHUNK_OVERLAP: usize = 128;
/// Joins header titles in a [`Chunk::section`] breadcrumb.
pub const SECTION_SEPARATOR: &str = " › ";

/// Why a chunker configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ChunkerError {
    /// `chunk_size` was zero, which would make every chunk empty.
    #[error("chunk_size must be at least 1 character; set [rag] chunk_size to a positive number (default {DEFAULT_CHUNK_SIZE})")]
    ZeroChunkSize,
    /// The overlap would let a chunk consist of nothing but the previous one.
    #[error("chunk_overlap ({overlap}) must be smaller than chunk_size ({size}); lower [rag] chunk_overlap (default {DEFAULT_CHUNK_OVERLAP})")]
    OverlapTooLarge {
        /// The configured overlap.
        overlap: usize,
        /// The configured chunk size.
        size: usize,
    },
}

impl ChunkerError {
    /// How an edge should report this failure.
    pub fn kind(&self) -> crate::error_kind::ErrorKind {
        use crate::error_kind::ErrorKind;
        ErrorKind::User
    }
}

/// Chunk size and overlap, both in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkerConfig {
    /// Maximum characters in one chunk's stored text.
    pub chunk_size: usize,
    /// Maximum characters a chunk repeats from the end of the previous one.
    pub chunk_overlap: usize,
}

impl Default for ChunkerConfig {
    fn default() -> Self {
        Self {
            chunk_size: DEFAULT_CHUNK_SIZE,
            chunk_overlap: DEFAULT_CHUNK_OVERLAP,
        }
    }
}

impl ChunkerConfig {
    /// Checks that the size is positive and the overlap smaller than the size.
    pub fn validate(&self) -> Result<(), ChunkerError> {
        if self.chunk_size == 0 {
            return Err(ChunkerError::ZeroChunkSize);
        }
        if self.chunk_overlap >= self.chunk_size {
            return Err(ChunkerError::OverlapTooLarge {
                overlap: self.chunk_overlap,
                size: self.chunk_size,
            });
        }
        Ok(())
    }
}

/// One piece of a document, ready to store and embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The stored text: an exact slice of the input (see [`Chunk::char_range`]).
    pub text: String,
    /// 0-based position of this chunk within its document.
    pub chunk_index: u32,
    /// Header breadcrumb such as `Intro › Setup`; `""` when no header applies.
    pub section: String,
    /// What gets embedded and BM25-indexed: header, breadcrumb, then text.
    pub embed_text: String,
    /// Where [`Chunk::text`] sits in the input, in characters (not bytes).
    /// Neighbouring ranges overlap by at most `chunk_overlap` characters.
    pub char_range: Range<usize>,
}

/// Builds the embedded text from its parts: `embed_header` and `section` each
/// on their own line when non-empty, then the stored text.
pub fn compose_embed_text(embed_header: &str, section: &str, text: &str) -> String {
    let header = embed_header.trim();
    let mut out = String::with_capacity(header.len() + section.len() + text.len() + 2);
    if !header.is_empty() {
        out.push_str(header);
        out.push('\n');
    }
    if !section.is_empty() {
        out.push_str(section);
        out.push('\n');
    }
    out.push_str(text);
    out
}

/// A validated chunking configuration; cheap to copy around.
#[derive(Debug, Clone, Copy, Default)]
pub struct Chunker {
    config: ChunkerConfig,
}

impl Chunker {
    /// Validates `config` and returns a chunker using it.
    pub fn new(config: ChunkerConfig) -> Result<Self, ChunkerError> {
        config.validate()?;
        Ok(Self { config })
    }

    /// The configuration in use.
    pub fn config(&self) -> ChunkerConfig {
        self.config
    }

    /// Splits `text` into chunks; `embed_header` is prepended to every
    /// chunk's embedded text (pass `""` for none). Whitespace-only input
    /// yields no chunks.
    pub fn chunk(&self, text: &str, embed_header: &str) -> Vec<Chunk> {
        let chars: Vec<char> = text.chars().collect();
        let (sections, saw_header) = split_sections(&chars);

        // The seed's pass-through rule: headerless text that fits is one
        // chunk, byte for byte (paper summaries rely on this).
        if !saw_header && chars.len() <= self.config.chunk_size {
            if chars.iter().all(|c| c.is_whitespace()) {
                return Vec::new();
            }
            return vec![Chunk {
                text: text.to_owned(),
                chunk_index: 0,
                section: String::new(),
                embed_text: compose_embed_text(embed_header, "", text),
                char_range: 0..chars.len(),
            }];
        }

        let mut chunks = Vec::new();
        for section in sections {
            for range in split_by_size(&chars, section.range, self.config) {
                let piece: String = chars[range.clone()].iter().collect();
                chunks.push(Chunk {
                    embed_text: compose_embed_text(embed_header, &section.breadcrumb, &piece),
                    text: piece,
                    chunk_index: u32::try_from(chunks.len()).unwrap_or(u32::MAX),
                    section: section.breadcrumb.clone(),
                    char_range: range,
                });
            }
        }
        chunks
    }
}

/// The text of the first level-1 ATX header (`# Title`) outside fenced
/// code blocks, by the same header rules the chunker cuts at; `None` when
/// there is none or it is empty. A `# comment` in a shell or YAML sample,
/// or a `# Heading 1` in a Markdown example inside a fence, is not the
/// document's title.
pub fn first_title(text: &str) -> Option<String> {
    let mut fence: Option<Fence> = None;
    for line in text.lines() {
        let line: Vec<char> = line.chars().collect();
        if let Some(open) = fence {
            if closes_fence(&line, open) {
                fence = None;
            }
        } else if let Some(open) = opening_fence(&line) {
            fence = Some(open);
        } else if let Some((1, title)) = atx_header(&line) {
            if !title.is_empty() {
                return Some(title);
            }
        }
    }
    None
}

/// A header-delimited part of the document, in character offsets.
#[derive(Debug)]
struct Section {
    range: Range<usize>,
    breadcrumb: String,
}

/// An open fenced code block: fence character and run length.
#[derive(Debug, Clone, Copy)]
struct Fence {
    ch: char,
    len: usize,
}

/// Returns the sections with content, and whether any header was seen.
fn split_sections(chars: &[char]) -> (Vec<Section>, bool) {
    let mut sections = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut fence: Option<Fence> = None;
    let mut saw_header = false;

    let mut current_start = 0;
    let mut current_crumb = String::new();
    let mut current_has_content = false;
    // Start of a run of header-only sections waiting to be merged forward.
    let mut pending_start: Option<usize> = None;

    let mut close =
        |start: usize, end: usize, crumb: &str, has_content: bool, is_header: bool, pending: &mut Option<usize>| {
            if has_content {
                let start = pending.take().unwrap_or(start);
                sections.push(Section {
                    range: start..end,
                    breadcrumb: crumb.to_owned(),
                });
            } else if is_header {
                pending.get_or_insert(start);
            }
            // A whitespace-only preamble is simply dropped: nothing is lost.
        };

    let mut line_start = 0;
    while line_start < chars.len() {
        let line_end = chars[line_start..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |p| line_start + p);
        look(line_end - line_start + 1);
        let line = &chars[line_start..line_end];
        let blank = line.iter().all(|c| c.is_whitespace());

        if let Some(open) = fence {
            if closes_fence(line, open) {
                fence = None;
            }
            current_has_content |= !blank;
        } else if let Some(open) = opening_fence(line) {
            fence = Some(open);
            current_has_content = true;
        } else if let Some((level, title)) = atx_header(line) {
            close(
                current_start,
                line_start,
                &current_crumb,
                current_has_content,
                saw_header,
                &mut pending_start,
            );
            saw_header = true;
            stack.retain(|(l, _)| *l < level);
            stack.push((level, title));
            current_crumb = breadcrumb(&stack);
            current_start = line_start;
            current_has_content = false;
        } else {
            current_has_content |= !blank;
        }
        line_start = line_end + 1;
    }
    // Trailing header-only sections have nothing to merge into: keep them.
    let has_content = current_has_content || saw_header;
    close(
        current_start,
        chars.len(),
        &current_crumb,
        has_content,
        saw_header,
        &mut pending_start,
    );
    (sections, saw_header)
}

fn breadcrumb(stack: &[(usize, String)]) -> String {
    let titles: Vec<&str> = stack
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    titles.join(SECTION_SEPARATOR)
}

/// Strips up to three leading spaces, as CommonMark allows before block markers.
fn strip_indent(line: &[char]) -> Option<&[char]> {
    let indent = line.iter().take_while(|&&c| c == ' ').count();
    (indent <= 3).then(|| &line[indent..])
}

/// Parses an ATX header line into (level, title).
fn atx_header(line: &[char]) -> Option<(usize, String)> {
    let rest = strip_indent(line)?;
    let level = rest.iter().take_while(|&&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if let Some(&c) = after.first() {
        if c != ' ' && c != '\t' && c != '\r' {
            return None; // `#hashtag` is text, not a header
        }
    }
    let title: String = after.iter().collect();
    let mut title = title.trim();
    // Optional closing sequence: `## Title ##`.
    let without_hashes = title.trim_end_matches('#');
    if without_hashes.is_empty() || without_hashes.ends_with([' ', '\t']) {
        title = without_hashes.trim_end();
    }
    Some((level, title.to_owned()))
}

fn opening_fence(line: &[char]) -> Option<Fence> {
    let rest = strip_indent(line)?;
    let ch = *rest.first()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let len = rest.iter().take_while(|&&c| c == ch).count();
    (len >= 3).then_some(Fence { ch, len })
}

fn closes_fence(line: &[char], open: Fence) -> bool {
    let Some(rest) = strip_indent(line) else {
        return false;
    };
    let len = rest.iter().take_while(|&&c| c == open.ch).count();
    len >= open.len && rest[len..].iter().all(|c| c.is_whitespace())
}

// Characters looked at while cutting, counted in tests only: the cutting
// rules below must stay linear in the input (a one-line note of megabytes
// is a real input), and a test proves it by counting work, not time.
#[cfg(test)]
thread_local! {
    static LOOKED_AT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline]
fn look(n: usize) {
    #[cfg(test)]
    LOOKED_AT.with(|c| c.set(c.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

/// Cuts one section into ranges of at most `chunk_size` characters, each
/// trimmed of surrounding whitespace and never empty.
fn split_by_size(chars: &[char], section: Range<usize>, config: ChunkerConfig) -> Vec<Range<usize>> {
    let size = config.chunk_size;
    let overlap = config.chunk_overlap;
    // A cut earlier than this would make a stub chunk, and cutting later than
    // the overlap guarantees the next chunk starts after this one did.
    let min_fill = (size / 4).max(overlap + 1);

    let end = trim_end(chars, section.start, section.end);
    let mut start = skip_whitespace(chars, section.start, end);
    let mut out = Vec::new();
    while start < end {
        if end - start <= size {
            out.push(start..end);
            break;
        }
        let cut = find_cut(chars, start, size, min_fill);
        out.push(start..trim_end(chars, start, cut));
        let next = find_overlap_start(chars, start, cut, overlap);
        start = skip_whitespace(chars, next, end);
    }
    out
}

fn skip_whitespace(chars: &[char], mut from: usize, end: usize) -> usize {
    while from < end && chars[from].is_whitespace() {
        look(1);
        from += 1;
    }
    from
}

fn trim_end(chars: &[char], start: usize, mut end: usize) -> usize {
    while end > start && chars[end - 1].is_whitespace() {
        look(1);
        end -= 1;
    }
    end
}

/// Position `p` means "cut between `p - 1` and `p`"; callers guarantee
/// `0 < p < chars.len()`.
fn is_line_break(chars: &[char], p: usize) -> bool {
    look(1);
    chars[p - 1] == '\n'
}

fn is_paragraph_break(chars: &[char], p: usize) -> bool {
    if !is_line_break(chars, p) {
        return false;
    }
    // The line that just ended must be blank.
    let mut q = p - 1;
    while q > 0 && chars[q - 1] != '\n' {
        look(1);
        if !chars[q - 1].is_whitespace() {
            return false;
        }
        q -= 1;
    }
    q > 0
}

fn is_word_start(chars: &[char], p: usize) -> bool {
    look(1);
    chars[p - 1].is_whitespace() && !chars[p].is_whitespace()
}

fn is_sentence_start(chars: &[char], p: usize) -> bool {
    if !is_word_start(chars, p) {
        return false;
    }
    let mut q = p - 1;
    while q > 0 && chars[q].is_whitespace() {
        look(1);
        q -= 1;
    }
    // Look through closing quotes and brackets: `He said "no." Then…`.
    while q > 0 && matches!(chars[q], '"' | '\'' | ')' | ']' | '”' | '’' | '»') {
        look(1);
        q -= 1;
    }
    matches!(chars[q], '.' | '!' | '?' | '…' | '。' | '！' | '？')
}

/// Picks where a chunk starting at `start` ends: the last paragraph break
/// that fits, else line break, sentence, word, else a hard cut.
fn find_cut(chars: &[char], start: usize, size: usize, min_fill: usize) -> usize {
    let hi = start + size; // exclusive end of the largest chunk; < chars.len()
    let lo = start + min_fill;
    let rules: [fn(&[char], usize) -> bool; 4] = [is_paragraph_break, is_line_break, is_sentence_start, is_word_start];
    for rule in rules {
        if let Some(p) = (lo..=hi).rev().find(|&p| rule(chars, p)) {
            return p;
        }
    }
    hi
}

/// Picks where the next chunk starts so that it repeats at most `overlap`
/// characters before `cut`: the earliest sentence start in that window, else
/// the earliest word start, else `cut` itself.
fn find_overlap_start(chars: &[char], start: usize, cut: usize, overlap: usize) -> usize {
    let lo = cut.saturating_sub(overlap).max(start + 1);
    let rules: [fn(&[char], usize) -> bool; 2] = [is_sentence_start, is_word_start];
    for rule in rules {
        if let Some(p) = (lo..cut).find(|&p| rule(chars, p)) {
            return p;
        }
    }
    cut
}

#[cfg(test)]
mod tests;
