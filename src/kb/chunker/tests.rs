//! Tests for the chunker: worked examples first, then properties.

use proptest::prelude::*;

use super::*;

fn chunker(size: usize, overlap: usize) -> Chunker {
    match Chunker::new(ChunkerConfig {
        chunk_size: size,
        chunk_overlap: overlap,
    }) {
        Ok(c) => c,
        Err(e) => panic!("test config rejected: {e}"),
    }
}

fn sections(chunks: &[Chunk]) -> Vec<&str> {
    chunks.iter().map(|c| c.section.as_str()).collect()
}

#[test]
fn config_defaults_and_validation() {
    let d = ChunkerConfig::default();
    assert_eq!((d.chunk_size, d.chunk_overlap), (1024, 128));
    assert!(d.validate().is_ok());
    let zero = ChunkerConfig {
        chunk_size: 0,
        chunk_overlap: 0,
    };
    assert_eq!(zero.validate(), Err(ChunkerError::ZeroChunkSize));
    let big = ChunkerConfig {
        chunk_size: 10,
        chunk_overlap: 10,
    };
    assert!(matches!(
        Chunker::new(big),
        Err(ChunkerError::OverlapTooLarge { overlap: 10, size: 10 })
    ));
    let msg = ChunkerError::OverlapTooLarge { overlap: 10, size: 10 }.to_string();
    assert!(msg.contains("chunk_overlap"), "{msg}");
}

#[test]
fn headerless_text_that_fits_is_one_unchanged_chunk() {
    let text = "  A paper summary.\n\nSecond paragraph with trailing space.  \n";
    let chunks = Chunker::default().chunk(text, "Title — Author");
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, text);
    assert_eq!(chunks[0].section, "");
    assert_eq!(chunks[0].chunk_index, 0);
    assert_eq!(chunks[0].embed_text, format!("Title — Author\n{text}"));
}

#[test]
fn whitespace_only_input_yields_no_chunks() {
    assert!(Chunker::default().chunk("", "h").is_empty());
    assert!(Chunker::default().chunk(" \n\t\n", "h").is_empty());
    assert!(Chunker::default().chunk("\n\n# \n\n", "").len() <= 1);
}

#[test]
fn size_is_counted_in_characters_not_bytes() {
    let text = "é".repeat(1024); // 2048 bytes
    let chunks = Chunker::default().chunk(&text, "");
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, text);
}

#[test]
fn headers_build_breadcrumbs_and_stay_in_stored_text() {
    let text = "intro line\n# A\ntext a\n## B\ntext b\n### C ###\ntext c\n# D\ntext d\n";
    let chunks = Chunker::default().chunk(text, "hdr");
    assert_eq!(sections(&chunks), ["", "A", "A › B", "A › B › C", "D"]);
    assert_eq!(chunks[0].text, "intro line");
    assert_eq!(chunks[1].text, "# A\ntext a");
    assert_eq!(chunks[3].text, "### C ###\ntext c");
    assert_eq!(chunks[2].embed_text, "hdr\nA › B\n## B\ntext b");
    assert_eq!(chunks[0].embed_text, "hdr\nintro line");
    let idx: Vec<u32> = chunks.iter().map(|c| c.chunk_index).collect();
    assert_eq!(idx, [0, 1, 2, 3, 4]);
}

#[test]
fn a_shallower_header_pops_deeper_ones() {
    let text = "# A\na\n### C\nc\n## B\nb\n";
    let chunks = Chunker::default().chunk(text, "");
    assert_eq!(sections(&chunks), ["A", "A › C", "A › B"]);
}

#[test]
fn hashes_inside_code_fences_are_not_headers() {
    let text = "# Setup\n```sh\n# install it\nmake\n```\n~~~~\n## also not\n~~~\nstill fenced\n~~~~\nafter\n";
    let chunks = Chunker::default().chunk(text, "");
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].section, "Setup");
    assert_eq!(chunks[0].text, text.trim_end());
}

#[test]
fn the_title_is_the_first_level_one_header_outside_code_fences() {
    // A YAML comment, a shell comment and a Markdown example in fences come
    // first; none of them is the title (the help vault's `Bases syntax` was
    // titled `Simple filter:` from such a comment).
    let text = "Intro.\n```yaml\n# Simple filter:\n```\n~~~~md\n# This is a heading 1\n~~~\n# still fenced\n~~~~\n## Sub\n# Real title #\n# Second\n";
    assert_eq!(first_title(text).as_deref(), Some("Real title"));
    assert_eq!(first_title("   # Indented three\n").as_deref(), Some("Indented three"));
    for none in [
        "",
        "#hashtag\n",
        "#\n",
        "## Only a sub\n",
        "```\n# in an unclosed fence\n",
    ] {
        assert_eq!(first_title(none), None, "{none:?}");
    }
}

#[test]
fn things_that_look_like_headers_but_are_not() {
    for text in ["#hashtag text", "####### seven", "    # four-space indent", "a # b"] {
        let chunks = Chunker::default().chunk(text, "");
        assert_eq!(chunks.len(), 1, "{text}");
        assert_eq!(chunks[0].section, "", "{text}");
        assert_eq!(chunks[0].text, text);
    }
}

#[test]
fn header_only_sections_merge_into_the_next_section() {
    let chunks = Chunker::default().chunk("# A\n\n## B\nbody\n", "");
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "# A\n\n## B\nbody");
    assert_eq!(chunks[0].section, "A › B");
    // A trailing header with nothing after it still keeps its text.
    let chunks = Chunker::default().chunk("# A\nbody\n# End\n", "");
    assert_eq!(sections(&chunks), ["A", "End"]);
    assert_eq!(chunks[1].text, "# End");
}

#[test]
fn long_sections_cut_at_paragraphs_first() {
    let para = |c: char| {
        format!(
            "{}.",
            std::iter::repeat_n(format!("{c}{c}{c}"), 20)
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    // Four paragraphs of 80 characters each.
    let text = ["a", "b", "c", "d"]
        .iter()
        .map(|s| para(s.chars().next().unwrap_or('x')))
        .collect::<Vec<_>>()
        .join("\n\n");
    let chunks = chunker(200, 20).chunk(&text, "");
    assert!(chunks.len() >= 2);
    // The first cut falls on a paragraph break, so chunk 0 ends a paragraph.
    assert!(chunks[0].text.ends_with("bbb."), "{:?}", chunks[0].text);
    for c in &chunks {
        assert!(c.text.chars().count() <= 200);
    }
}

#[test]
fn sentences_before_words_and_overlap_starts_at_a_sentence() {
    let text = "One two three. Four five six. Seven eight nine. Ten eleven twelve.";
    let chunks = chunker(40, 20).chunk(text, "");
    assert_eq!(chunks[0].text, "One two three. Four five six.");
    // The overlap repeats the last sentence that fits in 20 characters.
    assert!(chunks[1].text.starts_with("Four five six."), "{:?}", chunks[1].text);
}

#[test]
fn a_giant_word_is_cut_hard() {
    let text = "x".repeat(2500);
    let chunks = chunker(1024, 128).chunk(&text, "");
    assert_eq!(chunks.len(), 3);
    assert!(chunks.iter().all(|c| c.text.chars().count() <= 1024));
    let total: usize = chunks.iter().map(|c| c.text.len()).sum();
    assert_eq!(total, 2500); // no word boundary, so no overlap either
}

#[test]
fn compose_embed_text_skips_empty_parts() {
    assert_eq!(compose_embed_text("", "", "t"), "t");
    assert_eq!(compose_embed_text("  ", "S", "t"), "S\nt");
    assert_eq!(compose_embed_text("H", "", "t"), "H\nt");
}

// ---------------------------------------------------------------- properties

fn config_strategy() -> impl Strategy<Value = ChunkerConfig> {
    (8usize..300).prop_flat_map(|size| {
        (Just(size), 0..size).prop_map(|(chunk_size, chunk_overlap)| ChunkerConfig {
            chunk_size,
            chunk_overlap,
        })
    })
}

/// Markdown-ish text: words, sentence ends, line and paragraph breaks,
/// headers, fences, multi-byte characters and the odd giant word.
fn text_strategy() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        8 => "[a-zA-Z]{1,10}",
        6 => Just(" ".to_owned()),
        2 => Just(". ".to_owned()),
        1 => Just("! ".to_owned()),
        2 => Just("\n".to_owned()),
        2 => Just("\n\n".to_owned()),
        1 => Just("\n# ".to_owned()),
        1 => Just("\n## ".to_owned()),
        1 => Just("\n### ".to_owned()),
        1 => Just("\n```\n".to_owned()),
        1 => Just("#".to_owned()),
        1 => Just("\t ".to_owned()),
        1 => "[é漢字🙂ß]{1,4}",
        1 => "[a-z]{40,400}",
    ];
    prop::collection::vec(token, 0..300).prop_map(|v| v.concat())
}

fn non_ws(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Checks every structural promise of [`Chunker::chunk`] on one input.
fn check_invariants(text: &str, config: ChunkerConfig, header: &str) -> Result<(), TestCaseError> {
    let chunker = Chunker::new(config).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let chunks = chunker.chunk(text, header);
    let chars: Vec<char> = text.chars().collect();

    let mut rebuilt = String::new();
    for (i, c) in chunks.iter().enumerate() {
        prop_assert_eq!(c.chunk_index as usize, i);
        let slice: String = chars[c.char_range.clone()].iter().collect();
        prop_assert_eq!(&c.text, &slice, "text is an exact slice of the input");
        prop_assert!(!c.text.trim().is_empty(), "no blank chunks");
        prop_assert!(c.text.chars().count() <= config.chunk_size, "size bounded");
        prop_assert_eq!(&c.embed_text, &compose_embed_text(header, &c.section, &c.text));
        let mut skip = 0;
        if i > 0 {
            let prev = &chunks[i - 1].char_range;
            prop_assert!(c.char_range.start > prev.start, "chunks move forward");
            skip = prev.end.saturating_sub(c.char_range.start);
            prop_assert!(
                skip <= config.chunk_overlap,
                "overlap {skip} > {}",
                config.chunk_overlap
            );
        }
        rebuilt.extend(c.text.chars().skip(skip));
    }
    prop_assert_eq!(non_ws(&rebuilt), non_ws(text), "no text lost");
    prop_assert_eq!(chunker.chunk(text, header), chunks, "deterministic");
    Ok(())
}

/// A generated document: sections of (level, title, body) with known
/// breadcrumbs. Bodies are never blank and never contain header lines.
fn doc_strategy() -> impl Strategy<Value = (String, Vec<(Range<usize>, String)>)> {
    let body = prop::collection::vec(
        prop_oneof![
            6 => "[a-z]{1,9}",
            4 => Just(" ".to_owned()),
            2 => Just(". ".to_owned()),
            1 => Just("\n".to_owned()),
            1 => Just("\n\n".to_owned()),
            1 => Just("\n```\n# not a header\n```\n".to_owned()),
        ],
        1..120,
    )
    .prop_map(|v| format!("x {}\n", v.concat()));
    let section = (0usize..=3, "[A-Z][a-z]{0,6}", body);
    prop::collection::vec(section, 1..8).prop_map(|sections| {
        let mut text = String::new();
        let mut spans = Vec::new();
        let mut stack: Vec<(usize, String)> = Vec::new();
        for (level, title, body) in sections {
            let start = text.chars().count();
            if level > 0 {
                stack.retain(|(l, _)| *l < level);
                stack.push((level, title.clone()));
                text.push_str(&format!("{} {title}\n", "#".repeat(level)));
            }
            text.push_str(&body);
            let crumb = stack
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(SECTION_SEPARATOR);
            spans.push((start..text.chars().count(), crumb));
        }
        (text, spans)
    })
}

/// Characters the cutting rules looked at while chunking `text`.
fn work(text: &str) -> u64 {
    LOOKED_AT.with(|c| c.set(0));
    let chunks = chunker(1024, 128).chunk(text, "");
    assert!(!chunks.is_empty());
    LOOKED_AT.with(|c| c.get())
}

/// One-line notes of every awkward shape (no breaks at all, words, runs of
/// spaces, quotes, sentence ends, blank-ish lines): four times the text is
/// at most about four times the work, and the work per character is small
/// — so a note of megabytes chunks in time linear in its size.
#[test]
fn chunking_work_is_linear_in_the_input() {
    type Shape = (&'static str, fn(usize) -> String);
    let shapes: [Shape; 7] = [
        ("one giant word", |n| "x".repeat(n)),
        ("words", |n| "lorem ".repeat(n / 6)),
        ("sentences", |n| "It is. ".repeat(n / 7)),
        ("space runs", |n| format!("a{}", " ".repeat(200)).repeat(n / 201)),
        ("quotes", |n| "\"\"\"\"\"\"\"\"\"'') x. ".repeat(n / 16)),
        ("blank lines of spaces", |n| {
            format!("{}\nword ", " ".repeat(300)).repeat(n / 306)
        }),
        ("one header", |n| format!("# Title\n{}", "ab cd. ".repeat(n / 7))),
    ];
    for (name, make) in shapes {
        let small = work(&make(100_000));
        let large = work(&make(400_000));
        eprintln!("figure: chunking {name}: 100k chars → {small} looked at, 400k → {large}");
        assert!(
            large <= small * 9 / 2,
            "{name}: 4× the text cost {:.2}× the work ({small} → {large})",
            large as f64 / small as f64
        );
        assert!(large <= 400_000 * 8, "{name}: {large} characters looked at for 400,000");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn prop_invariants_hold(text in text_strategy(), config in config_strategy(), header in "[a-z ]{0,12}") {
        check_invariants(&text, config, &header)?;
    }

    #[test]
    fn prop_invariants_hold_at_default_size(text in text_strategy()) {
        check_invariants(&text, ChunkerConfig::default(), "Title — Authors")?;
    }

    #[test]
    fn prop_breadcrumbs_match_the_governing_header((text, spans) in doc_strategy(), config in config_strategy()) {
        check_invariants(&text, config, "")?;
        let chunks = Chunker::new(config).map_err(|e| TestCaseError::fail(e.to_string()))?.chunk(&text, "");
        for c in &chunks {
            // The breadcrumb in force at the chunk's last character.
            let last = c.char_range.end - 1;
            let expected = spans.iter().find(|(r, _)| r.contains(&last)).map(|(_, s)| s.as_str());
            prop_assert_eq!(Some(c.section.as_str()), expected);
        }
    }

    #[test]
    fn prop_headerless_text_that_fits_is_unchanged(text in "[a-z .\n]{1,200}", size in 200usize..400) {
        prop_assume!(!text.trim().is_empty());
        let chunks = chunker(size, 10).chunk(&text, "h");
        prop_assert_eq!(chunks.len(), 1);
        prop_assert_eq!(&chunks[0].text, &text);
    }

    #[test]
    fn prop_rechunking_a_chunk_gives_it_back(text in "[a-z .!\n]{0,3000}", config in config_strategy()) {
        let chunker = Chunker::new(config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for c in chunker.chunk(&text, "") {
            let again = chunker.chunk(&c.text, "");
            prop_assert_eq!(again.len(), 1);
            prop_assert_eq!(&again[0].text, &c.text);
        }
    }
}
