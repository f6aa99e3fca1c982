//! Character-level clean-up shared by conversion and annotations:
//! ligatures, odd whitespace, invisible characters and line-end hyphens.

use std::collections::HashSet;

/// What a raw PDF character becomes in the output.
pub(crate) enum Norm {
    /// Drop it (zero-width characters, controls).
    Skip,
    /// A word separator.
    Space,
    /// One or more visible characters.
    Text(&'static str),
    /// Keep as is.
    Keep(char),
}

/// Normalise one character. Ligatures are expanded because search and
/// embeddings see "ﬁle" and "file" as different words; exotic spaces become
/// plain spaces; zero-width characters vanish.
pub(crate) fn normalise(c: char) -> Norm {
    match c {
        '\u{FB00}' => Norm::Text("ff"),
        '\u{FB01}' => Norm::Text("fi"),
        '\u{FB02}' => Norm::Text("fl"),
        '\u{FB03}' => Norm::Text("ffi"),
        '\u{FB04}' => Norm::Text("ffl"),
        '\u{FB05}' | '\u{FB06}' => Norm::Text("st"),
        // PDFium reports a line-end hyphen it recognised as U+0002; soft
        // hyphens only show where a line broke. Both mean "hyphen here".
        '\u{2}' | '\u{AD}' => Norm::Text("-"),
        '\u{A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\t' => Norm::Space,
        '\r' | '\n' | ' ' => Norm::Space,
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' => Norm::Skip,
        c if c.is_control() => Norm::Skip,
        // Private-use code points are unmapped glyphs: nothing readable.
        '\u{E000}'..='\u{F8FF}' => Norm::Skip,
        c => Norm::Keep(c),
    }
}

/// Normalise a whole string (annotation contents, typed notes).
pub(crate) fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.chars() {
        match normalise(c) {
            Norm::Skip => {}
            Norm::Space => pending_space = !out.is_empty(),
            Norm::Text(t) => {
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                // A soft hyphen inside a typed note is invisible, not a dash.
                if c != '\u{AD}' {
                    out.push_str(t);
                }
            }
            Norm::Keep(k) => {
                if pending_space {
                    out.push(' ');
                    pending_space = false;
                }
                out.push(k);
            }
        }
    }
    out
}

fn is_hyphen(c: char) -> bool {
    matches!(c, '-' | '\u{2010}' | '\u{2011}')
}

/// Join line texts into one flowing paragraph. A line ending in a hyphen
/// after a letter, followed by a line starting in lower case, is a word
/// broken by the typesetter: the hyphen goes. `keep` lists hyphenated
/// compounds seen unbroken elsewhere in the document ("two-column"), whose
/// hyphen stays.
pub(crate) fn join_lines<'a>(lines: impl IntoIterator<Item = &'a str>, keep: &HashSet<String>) -> String {
    let mut out = String::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push_str(line);
            continue;
        }
        let mut tail = out.chars().rev();
        let last = tail.next();
        let before = tail.next();
        let first = line.chars().next();
        let broken = matches!(last, Some(h) if is_hyphen(h))
            && before.is_some_and(char::is_alphabetic)
            && first.is_some_and(char::is_lowercase);
        if broken {
            let prefix_start = out.rfind(' ').map(|i| i + 1).unwrap_or(0);
            let first_word = line.split(' ').next().unwrap_or("");
            let compound = format!("{}{}", &out[prefix_start..], first_word);
            let compound = compound.trim_end_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
            if !keep.contains(&compound) {
                out.pop();
            }
            out.push_str(line);
        } else {
            out.push(' ');
            out.push_str(line);
        }
    }
    out
}

/// Hyphenated words that appear inside lines (not at a line end): evidence
/// that the hyphen is part of the word.
pub(crate) fn hyphenated_words<'a>(lines: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let mut set = HashSet::new();
    for line in lines {
        let words: Vec<&str> = line.split(' ').collect();
        let n = words.len();
        for (i, w) in words.into_iter().enumerate() {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric() && !is_hyphen(c));
            let inner = w.len() > 2
                && w.chars()
                    .skip(1)
                    .take(w.chars().count().saturating_sub(2))
                    .any(is_hyphen);
            if inner && (i + 1 < n || !w.ends_with(is_hyphen)) {
                set.insert(w.trim_end_matches(|c: char| !c.is_alphanumeric()).to_lowercase());
            }
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ligatures_and_spaces_are_normalised() {
        assert_eq!(
            clean("e\u{FB03}cient \u{FB02}ow\u{A0}of\u{200B} o\u{FB00}ice"),
            "efficient flow of office"
        );
        assert_eq!(clean("soft\u{AD}hyphen"), "softhyphen");
    }

    #[test]
    fn line_end_hyphens_are_joined_unless_the_compound_is_known() {
        let none = HashSet::new();
        assert_eq!(join_lines(["the re-", "trieval step"], &none), "the retrieval step");
        assert_eq!(join_lines(["see Section-", "Two"], &none), "see Section- Two");
        assert_eq!(join_lines(["ends.", "Next"], &none), "ends. Next");
        let keep = hyphenated_words(["a two-column layout here"]);
        assert!(keep.contains("two-column"), "{keep:?}");
        assert_eq!(join_lines(["a two-", "column paper"], &keep), "a two-column paper");
    }
}
