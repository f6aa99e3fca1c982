//! The fuzz targets' bodies: one function per parser that reads untrusted
//! input, each feeding the bytes through the same public entry point the
//! product uses and then checking what must hold of the result (beyond "no
//! panic"): a chunk is an exact slice of its note, rendered Markdown holds no
//! executable element or script URL, a decoded frame or request survives a
//! round trip.
//!
//! `targets/NAME.rs` only calls `jarvis_fuzz::NAME`; `cargo xtask fuzz` builds
//! them with libFuzzer's instrumentation and runs them (xtask/src/fuzz.rs).
//! Must not: touch the disk, the network or a process — every target is
//! pure, so a hang or a large allocation is the parser's own.

use std::io::BufReader;

use jarvis::app::owner::protocol::{read_frame, ClientFrame, OwnerFrame};
use jarvis::drafts::render::{render, RenderOptions};
use jarvis::llm::sse::{ndjson_line, SseParser};
use jarvis::llm::wire::{anthropic, ollama, openai};
use serde_json::Value;

mod html;

/// Inputs are text for every parser but the frame and request decoders;
/// invalid UTF-8 is what a lossy read of a file would give.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A note's frontmatter → the record's fields and its search header.
pub fn frontmatter(data: &[u8]) {
    let text = text(data);
    let parsed = jarvis::ingest::frontmatter::parse(&text);
    let without_bom = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if parsed.has_frontmatter {
        assert!(without_bom.ends_with(&parsed.body), "the body is the note's tail");
    } else {
        assert_eq!(parsed.body, without_bom, "a note without frontmatter is all body");
        assert!(parsed.fields.is_empty());
    }
    let _ = jarvis::ingest::frontmatter::record_header(&parsed.fields);
    for (_, v) in &parsed.fields {
        let _ = format!("{v:?}");
    }
}

/// The Markdown chunker: every chunk is the slice of the input it claims to
/// be, in order, no longer than the chunk size.
pub fn chunker(data: &[u8]) {
    use jarvis::kb::chunker::{Chunker, ChunkerConfig};
    let text = text(data);
    // Small sizes reach the splitting paths with small inputs.
    let config = ChunkerConfig {
        chunk_size: 200,
        chunk_overlap: 40,
    };
    let Ok(chunker) = Chunker::new(config) else {
        panic!("the fuzz chunker's config is valid");
    };
    let chars: Vec<char> = text.chars().collect();
    let chunks = chunker.chunk(&text, "title: fuzz");
    let mut last_start = 0;
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.chunk_index as usize, i);
        let r = c.char_range.clone();
        assert!(
            r.start <= r.end && r.end <= chars.len(),
            "range {r:?} of {}",
            chars.len()
        );
        assert!(r.start >= last_start, "chunks go forward");
        last_start = r.start;
        let slice: String = chars[r.clone()].iter().collect();
        assert_eq!(slice, c.text, "chunk {i} is an exact slice of the note");
        assert!(c.text.chars().count() <= config.chunk_size, "chunk {i} is too long");
        assert!(c.embed_text.contains(&c.text));
    }
    // Linear output: overlap can repeat at most `chunk_overlap` characters
    // per chunk, so the total stays within a small factor of the input.
    let total: usize = chunks.iter().map(|c| c.text.chars().count()).sum();
    assert!(total <= chars.len() + chunks.len() * config.chunk_overlap);
}

static CHECKER: std::sync::Once = std::sync::Once::new();

/// The chat's renderer (model replies and note text shown in a chat).
pub fn markdown_chat(data: &[u8]) {
    CHECKER.call_once(html::self_check);
    let out = render(&text(data), &RenderOptions::CHAT);
    html::assert_inert(&out, false);
}

/// The drafts preview's renderer (relative images are allowed there).
pub fn markdown_preview(data: &[u8]) {
    CHECKER.call_once(html::self_check);
    let out = render(&text(data), &RenderOptions::PREVIEW);
    html::assert_inert(&out, true);
}

/// The owner socket's frame decoder, both directions: whatever a peer
/// sends, reading ends in frames, an error or the end — and a frame read
/// is written back the same.
pub fn owner_frame(data: &[u8]) {
    let mut r = BufReader::new(data);
    for _ in 0..64 {
        match read_frame::<ClientFrame>(&mut r) {
            Ok(Some(f)) => {
                let again = serde_json::to_string(&f).expect("a decoded frame encodes");
                let back: ClientFrame = serde_json::from_str(&again).expect("an encoded frame decodes");
                assert_eq!(format!("{f:?}"), format!("{back:?}"));
            }
            Ok(None) => break,
            Err(_) => break,
        }
    }
    let mut r = BufReader::new(data);
    for _ in 0..64 {
        match read_frame::<OwnerFrame>(&mut r) {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
}

/// Anthropic's Messages stream: SSE lines → events → the assembled message
/// → the neutral transcript → the wire again.
pub fn sse_anthropic(data: &[u8]) {
    let text = text(data);
    let mut sse = SseParser::default();
    let mut stream = anthropic::AnthropicStream::default();
    let mut deltas = 0usize;
    let mut feed = |ev: jarvis::llm::sse::SseEvent, stream: &mut anthropic::AnthropicStream| -> bool {
        let Ok(v) = serde_json::from_str::<Value>(&ev.data) else {
            return true;
        };
        stream.feed_with(&ev.event, &v, &mut |_| deltas += 1).is_ok()
    };
    for line in lines(&text) {
        if let Some(ev) = sse.push_line(line) {
            if !feed(ev, &mut stream) {
                return;
            }
        }
    }
    if let Some(ev) = sse.finish() {
        if !feed(ev, &mut stream) {
            return;
        }
    }
    let _ = stream.step_usage();
    let neutral = anthropic::from_anthropic(&[stream.message()], "claude-fuzz");
    let _ = anthropic::to_anthropic(&neutral, "claude-fuzz");
}

/// An OpenAI-compatible chat-completions stream.
pub fn sse_openai(data: &[u8]) {
    let text = text(data);
    let mut sse = SseParser::default();
    let mut stream = openai::OpenAiStream::default();
    let mut events = Vec::new();
    for line in lines(&text) {
        events.extend(sse.push_line(line));
    }
    events.extend(sse.finish());
    for ev in events {
        if ev.data.trim() == "[DONE]" {
            break;
        }
        let Ok(v) = serde_json::from_str::<Value>(&ev.data) else {
            continue;
        };
        if stream.feed_with(&v, &mut |_| {}).is_err() {
            return;
        }
    }
    let _ = stream.step_usage();
    let neutral = openai::from_openai(&[stream.message()], "fuzz", "m");
    let _ = openai::to_openai(&neutral, Some("system"), "fuzz", "m");
}

/// Ollama's newline-delimited JSON stream.
pub fn ndjson_ollama(data: &[u8]) {
    let text = text(data);
    let mut stream = ollama::OllamaStream::default();
    for line in lines(&text) {
        let Some(line) = ndjson_line(line) else { continue };
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if stream.feed_with(&v, &mut |_| {}).is_err() {
            return;
        }
    }
    let _ = stream.step_usage();
    let neutral = ollama::from_ollama(&[stream.message()], "m");
    let _ = ollama::to_ollama(&neutral, Some("system"), "m");
}

/// The digest's tolerant reader of a model's scores.
pub fn digest_score(data: &[u8]) {
    if let Ok(items) = jarvis::digest::score::parse_reply(&text(data)) {
        assert!(!items.is_empty(), "Ok means at least one item");
    }
}

/// arXiv's Atom feeds: the digest's page reader and the paper path's
/// single-entry reader.
pub fn arxiv_atom(data: &[u8]) {
    let text = text(data);
    if let Ok(page) = jarvis::digest::arxiv::parse_page(&text) {
        let _ = page.entries.len();
    }
    let _ = jarvis::ingest::arxiv::parse_feed(&text);
}

/// bioRxiv's details API: every record of a page → a digest candidate,
/// whose link must be a DOI URL safe to show.
pub fn biorxiv_json(data: &[u8]) {
    let text = text(data);
    let _ = jarvis::digest::biorxiv::lenient_date(&text);
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let records = v
        .get("collection")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rec in records.iter().chain(std::iter::once(&v)) {
        if let Some(c) = jarvis::digest::biorxiv::to_candidate(rec, "fuzz") {
            let doi = c.link.strip_prefix("https://doi.org/").expect("a DOI link");
            assert!(jarvis::digest::biorxiv::valid_doi(doi), "{doi:?}");
        }
    }
}

/// The PDF worker's request, as read from its stdin.
pub fn pdf_request(data: &[u8]) {
    if let Ok(req) = jarvis::app::pdf_isolated::decode_request(data) {
        let bytes = req.encode().expect("a decoded request encodes");
        let back = jarvis::app::pdf_isolated::decode_request(&bytes).expect("an encoded request decodes");
        assert_eq!(format!("{req:?}"), format!("{back:?}"));
    }
}
