//! The schema's own consistency.

use super::*;

#[test]
fn every_field_is_in_a_known_section_and_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for f in FIELDS {
        assert!(SECTIONS.contains(&f.section), "{}", f.dotted());
        assert!(seen.insert(f.dotted()), "duplicate {}", f.dotted());
    }
}

#[test]
fn suggestions() {
    assert_eq!(suggest("chunk_sise", keys_of("rag")), Some("chunk_size"));
    assert_eq!(suggest("hybird", keys_of("rag")), Some("hybrid"));
    assert_eq!(suggest("zzzzzzzzzzzz", keys_of("rag")), None);
}
