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

/// A ligature that leaked into the text layer as its raw TeX code: a font
/// with no Unicode map for it, where PDFium passes the code through as a
/// control character ("Shape\x1cles"). T1 keeps its ligatures at 27..=31,
/// OT1 at 11..=15 (13, a carriage return to PDFium, is left alone). No
/// other producer puts control characters in running text.
pub(crate) fn tex_ligature(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{1B}' | '\u{B}' => "ff",
        '\u{1C}' | '\u{C}' => "fi",
        '\u{1D}' => "fl",
        '\u{1E}' | '\u{E}' => "ffi",
        '\u{1F}' | '\u{F}' => "ffl",
        _ => return None,
    })
}

/// TeX's math fonts, whose codes 11..=15 and 27..=31 are delimiters and
/// symbols, not ligatures.
pub(crate) fn math_font(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "cmex", "cmsy", "cmmi", "cmbsy", "msam", "msbm", "eufm", "eusm", "eurm", "lmex", "lmsy", "lmmi", "stmary",
        "wasy", "rsfs", "esint", "txex", "pxex", "txsy", "pxsy", "symbol", "math",
    ]
    .iter()
    .any(|k| n.contains(k))
}

/// [`tex_ligature`] over a page of plain text, which has no font names:
/// a control code is taken for a ligature only inside a lower-case word
/// ("Shape\x1cles", "\x1crst", "sta\x1b"), since TeX's big delimiters sit
/// at the same codes and stand next to capitals and single letters in
/// formulas ("\x0cDu", "\x0chDu", "\x0c u"); those are left out, as
/// before. The converter, which knows the fonts, mends more
/// (`page_glyphs`).
pub(crate) fn mend_ligatures(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        match tex_ligature(c) {
            Some(lig) => {
                // The lower-case letters on each side, up to the word's edge
                // (`None` when the run meets a capital or a digit: "hDu").
                // Going back, one capital may start the word ("Shape").
                let run = |it: &mut dyn Iterator<Item = &char>, back: bool| {
                    let mut n = 0;
                    for c in it {
                        if c.is_lowercase() {
                            n += 1;
                        } else if back && n > 0 && c.is_uppercase() {
                            n += 1;
                            break;
                        } else if c.is_alphanumeric() {
                            return None;
                        } else {
                            break;
                        }
                    }
                    Some(n)
                };
                let before = run(&mut chars[..i].iter().rev(), true);
                let after = run(&mut chars[i + 1..].iter(), false);
                let word = match (before, after) {
                    (Some(b), Some(a)) => (b > 0 && a > 0) || b + a >= 2,
                    _ => false,
                };
                if word {
                    out.push_str(lig);
                }
            }
            None => out.push(c),
        }
    }
    out
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
/// broken by the typesetter: the hyphen goes (before a capital it is a
/// compound's and stays, joined without a space). `keep` lists hyphenated
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
        let hyphen_end = matches!(last, Some(h) if is_hyphen(h)) && before.is_some_and(char::is_alphabetic);
        let lower = first.is_some_and(char::is_lowercase);
        if hyphen_end && (lower || first.is_some_and(char::is_uppercase)) {
            // The word across the break, with its hyphen and without,
            // trimmed as `hyphen_evidence` trims ("(pseudo-" / "column)";
            // "--no-" / "site-file" keeps its leading dashes).
            let prefix_start = out.rfind(' ').map(|i| i + 1).unwrap_or(0);
            let fragment = out[prefix_start..].trim_start_matches(|c: char| !c.is_alphanumeric() && !is_hyphen(c));
            let first_word = line.split(' ').next().unwrap_or("");
            let word = |head: &str| {
                format!("{head}{first_word}")
                    .trim_end_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            };
            // Before lower case the typesetter broke a word, unless the
            // compound is seen unbroken. Before a capital the hyphen is a
            // compound's ("Grosse-" / "Kunstleve"; TeX does not break a word
            // there), unless the word is seen whole: TeX does break words
            // in capitals ("DI-" / "MACS").
            let drop = if lower {
                !keep.contains(&word(fragment))
            } else {
                let head = fragment.trim_start_matches(is_hyphen);
                keep.contains(&word(head.strip_suffix(is_hyphen).unwrap_or(head)))
            };
            if drop {
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

/// What the document says about line-end hyphens (`join_lines`' `keep`):
/// hyphenated words that appear inside lines (not at a line end), evidence
/// that the hyphen is part of the word; and words with a capital after
/// their first letter ("DIMACS", "adjCoef"), evidence that "DI-" / "MACS"
/// at a line end is that word broken. All lower-cased.
pub(crate) fn hyphen_evidence<'a>(lines: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
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
            } else if !w.contains(is_hyphen)
                && w.chars().skip(1).any(char::is_uppercase)
                && w.chars().all(char::is_alphanumeric)
            {
                set.insert(w.to_lowercase());
            }
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ligatures_leaked_as_control_codes_are_mended_in_words_only() {
        assert_eq!(
            mend_ligatures("Shape\u{1c}les and modi\u{1c}cations"),
            "Shapefiles and modifications"
        );
        assert_eq!(mend_ligatures("\u{1c}rst e\u{1b}ect sta\u{1b}."), "first effect staff.");
        // Next to a capital or a lone letter it is a delimiter: left out.
        assert_eq!(mend_ligatures("\u{c}hDu \u{c}Du \u{c}u"), "hDu Du u");
        // Math delimiters at the same codes, between spaces and symbols.
        assert_eq!(
            mend_ligatures("Z D \u{c} \u{c}\u{2202}u \u{c} \u{c} 2"),
            "Z D  \u{2202}u   2"
        );
        assert!(math_font("ABCDEF+CMEX10") && math_font("LMMathExtension10") && !math_font("CMR10"));
    }

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
        assert_eq!(
            join_lines(["(Abrahams and Grosse-", "Kunstleve, 2003)"], &none),
            "(Abrahams and Grosse-Kunstleve, 2003)"
        );
        assert_eq!(join_lines(["a spaced dash -", "Then"], &none), "a spaced dash - Then");
        // A capitalised word broken by TeX, seen whole elsewhere.
        let seen = hyphen_evidence(["the DIMACS format"]);
        assert_eq!(join_lines(["in DI-", "MACS format"], &seen), "in DIMACS format");
        assert_eq!(join_lines(["HP-", "GL/2"], &seen), "HP-GL/2");
        assert_eq!(join_lines(["DI\u{2010}", "MACS"], &seen), "DIMACS");
        assert_eq!(join_lines(["ends.", "Next"], &none), "ends. Next");
        let keep = hyphen_evidence(["a two-column layout here, (pseudo-column) and --no-site-file"]);
        assert_eq!(join_lines(["a (pseudo-", "column)"], &keep), "a (pseudo-column)");
        assert_eq!(join_lines(["--no-", "site-file"], &keep), "--no-site-file");
        assert!(keep.contains("two-column"), "{keep:?}");
        assert_eq!(join_lines(["a two-", "column paper"], &keep), "a two-column paper");
    }
}
