use super::*;

fn passage(key: &str, chunk: Option<u64>) -> Citation {
    Citation {
        n: 0,
        key: key.into(),
        kind: "note".into(),
        title: key.trim_end_matches(".md").into(),
        source: "local".into(),
        path: Some(key.into()),
        section: "Setup".into(),
        page: None,
        annotation: None,
        text: format!("text of {key}"),
        chunk_id: chunk,
    }
}

fn three() -> Passages {
    let mut p = Passages::default();
    assert_eq!(p.number(passage("a.md", Some(10))), 1);
    assert_eq!(p.number(passage("b.md", Some(11))), 2);
    assert_eq!(p.number(passage("c.md", None)), 3);
    p
}

#[test]
fn the_same_chunk_keeps_its_number_and_a_whole_note_is_one_passage() {
    let mut p = three();
    assert_eq!(
        p.number(passage("a.md", Some(10))),
        1,
        "a second search finds the same chunk"
    );
    assert_eq!(p.number(passage("c.md", None)), 3, "the same note read twice");
    assert_eq!(
        p.number(passage("c.md", Some(12))),
        4,
        "a chunk of a note read whole is its own passage"
    );
    assert_eq!(p.all().len(), 4);
    assert_eq!(p.get(2).map(|c| c.key.as_str()), Some("b.md"));
    assert_eq!(p.get(0), None);
    assert_eq!(p.get(5), None);
    let mut long = passage("d.md", Some(99));
    long.text = "é".repeat(PASSAGE_CHARS + 10);
    let n = p.number(long);
    assert_eq!(
        p.get(n).unwrap().text.chars().count(),
        PASSAGE_CHARS + 1,
        "cut, with an ellipsis"
    );
}

#[test]
fn a_marker_naming_nothing_is_removed_and_counted() {
    let p = three();
    let c = check("Sync is set up in the settings [1]. It costs money [7].", &p);
    assert_eq!(c.text, "Sync is set up in the settings [1]. It costs money.");
    assert_eq!(c.unsupported, 1);
    assert_eq!(c.kept, 1);
    assert_eq!(c.citations.len(), 1);
    assert_eq!(c.citations[0].n, 1);
    assert_eq!(c.citations[0].key, "a.md");
    assert_eq!(c.citations[0].chunk_id, Some(10));
}

#[test]
fn lists_keep_their_valid_numbers_and_adjacent_markers_are_separate() {
    let p = three();
    let c = check("Both [1, 7, 2] and [3][9] and [12].", &p);
    assert_eq!(c.text, "Both [1, 2] and [3] and.");
    assert_eq!(c.unsupported, 3);
    assert_eq!(c.kept, 3);
    let ns: Vec<u32> = c.citations.iter().map(|c| c.n).collect();
    assert_eq!(ns, vec![1, 2, 3], "one citation per number, in order");
    let c = check("Twice [2] and again [2].", &p);
    assert_eq!(c.citations.len(), 1);
    assert_eq!(c.kept, 2);
}

#[test]
fn code_links_images_definitions_and_years_are_not_markers() {
    let p = Passages::default();
    let text = "Use `arr[7]` or\n\n```rust\nlet x = v[8];\n```\n\n~~~\n[9]\n~~~\n\nA [link](https://x) and [4](https://y), ![5](img.png), \\[6] and [2024].\n[8]: https://ref\n";
    let c = check(text, &p);
    assert_eq!(c.text, text, "nothing there is a citation");
    assert_eq!(c.unsupported, 0);
}

#[test]
fn a_marker_that_opens_a_line_leaves_no_blank() {
    let p = three();
    let c = check("[7] Sync keeps history.\n[5] More.", &p);
    assert_eq!(c.text, "Sync keeps history.\nMore.");
    assert_eq!(c.unsupported, 2);
}

#[test]
fn text_splits_around_markers_for_rendering() {
    assert_eq!(
        split_markers("see [1] and [2, 3]."),
        vec![
            Segment::Text("see "),
            Segment::Marker(vec![1]),
            Segment::Text(" and "),
            Segment::Marker(vec![2, 3]),
            Segment::Text("."),
        ]
    );
    assert_eq!(
        split_markers("[x] [0] [1234] [1,]"),
        vec![Segment::Text("[x] [0] [1234] [1,]")]
    );
    assert_eq!(split_markers("[1]"), vec![Segment::Marker(vec![1])]);
}

#[test]
fn grounding_decides_the_label() {
    let g = Grounding {
        retrievals: 1,
        passages: 0,
        citations: 0,
        own_knowledge: false,
    };
    assert!(g.not_from_library() && g.found_nothing());
    let g = Grounding { passages: 4, ..g };
    assert!(g.not_from_library(), "searched, cites nothing");
    assert!(!g.found_nothing(), "the search did return passages");
    let g = Grounding { citations: 1, ..g };
    assert!(!g.not_from_library() && !g.found_nothing());
    let g = Grounding::default();
    assert!(!g.not_from_library(), "no search, no label: small talk, drafts");
    let g = Grounding {
        own_knowledge: true,
        ..Grounding::default()
    };
    assert!(g.not_from_library());
}

#[test]
fn the_nothing_found_message_names_what_was_searched() {
    let m = nothing_found_message(&[
        "ferry timetable".into(),
        "ferry timetable".into(),
        "boat\nschedule".into(),
    ]);
    assert!(m.contains("“ferry timetable”, “boat schedule”"), "{m}");
    assert!(m.contains("library has nothing"), "{m}");
    assert!(nothing_found_message(&[]).contains("library has nothing"));
}

#[test]
fn uncited_claims_are_counted_and_lead_ins_code_and_headings_are_not() {
    let claim = "Pasta should boil for nine minutes in well salted water before it is drained and served";
    // Every claim cited: nothing to label.
    assert_eq!(
        uncited_paragraphs(&format!("Here is what your notes say:\n\n{claim} [1].")),
        0
    );
    // A second paragraph stating something with no marker.
    let text = format!(
        "{claim} [1].\n\nRisotto, on the other hand, wants a hot stock added one ladle at a time while you stir it."
    );
    assert_eq!(uncited_paragraphs(&text), 1);
    // Each list item is its own claim.
    let list = format!("- {claim} [1]\n- {claim}\n- short item\n");
    assert_eq!(uncited_paragraphs(&list), 1);
    // Headings, code, a table, a lead-in ending in ':' and a short sign-off
    // never count, however long.
    let quiet = format!(
        "## {claim}\n\n```\n{claim}\n```\n\n| {claim} |\n\nThe passages below explain at some length what your notes say about cooking pasta:\n\nHope that helps!"
    );
    assert_eq!(uncited_paragraphs(&quiet), 0);
    // finish() labels only an answer that does cite something.
    let mut passages = Passages::default();
    passages.number(passage("a.md", Some(1)));
    let ev = TurnEvidence {
        passages,
        retrievals: 1,
        ..TurnEvidence::default()
    };
    let f = finish(&text, &ev, true);
    assert_eq!((f.uncited_paragraphs, f.not_from_library), (1, false));
    let f = finish(claim, &ev, true);
    assert_eq!(
        (f.uncited_paragraphs, f.not_from_library),
        (0, true),
        "citing nothing is the other label"
    );
}
