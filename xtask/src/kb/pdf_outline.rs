//! Headings checked against the PDF's own outline, for `bench pdf
//! --quality`. A LaTeX document made with hyperref carries its sections as
//! bookmarks; for such a file the outline is a ground truth the author
//! made, so the converter's headings can be scored for what they are
//! rather than for how many lines they take:
//!
//! - precision: the share of the Markdown's headings that are an outline
//!   entry (the document title, an H1 first heading that is not in the
//!   outline, is not counted);
//! - recall: the share of outline entries that appear as a heading.
//!
//! Titles are compared after folding case, punctuation and section
//! numbering ("2.1", "A.", "IV", "Appendix B"), since an outline may or may
//! not carry the numbers; a heading and an entry also match when one is a
//! prefix of the other of at least 12 characters (a long title wrapped or
//! cut in one of them).

/// Outline entries a file needs to be scored (fewer is no structure).
pub const MIN_ENTRIES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutlineScore {
    pub headings: usize,
    pub true_headings: usize,
    pub entries: usize,
    pub found_entries: usize,
}

impl OutlineScore {
    pub fn precision(&self) -> f64 {
        ratio(self.true_headings, self.headings)
    }
    pub fn recall(&self) -> f64 {
        ratio(self.found_entries, self.entries)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// Score `md`'s headings against `outline` (entry titles); `None` when the
/// outline has fewer than [`MIN_ENTRIES`] usable entries.
pub fn score(md: &str, outline: &[String]) -> Option<OutlineScore> {
    let entries: Vec<String> = outline.iter().map(|t| norm(t)).filter(|t| !t.is_empty()).collect();
    if entries.len() < MIN_ENTRIES {
        return None;
    }
    let mut headings: Vec<(usize, String)> = md
        .lines()
        .filter_map(|l| {
            let level = l.chars().take_while(|c| *c == '#').count();
            (level > 0 && l[level..].starts_with(' ')).then(|| (level, norm(&l[level..])))
        })
        .filter(|(_, t)| !t.is_empty())
        .collect();
    if let Some((1, first)) = headings.first() {
        if !entries.iter().any(|e| same(e, first)) {
            headings.remove(0);
        }
    }
    let true_headings = headings
        .iter()
        .filter(|(_, h)| entries.iter().any(|e| same(e, h)))
        .count();
    let found_entries = entries
        .iter()
        .filter(|e| headings.iter().any(|(_, h)| same(e, h)))
        .count();
    Some(OutlineScore {
        headings: headings.len(),
        true_headings,
        entries: entries.len(),
        found_entries,
    })
}

/// Case, punctuation, Markdown escapes and leading numbering folded away.
fn norm(title: &str) -> String {
    let lower = title.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let numbering = |w: &str| {
        w.chars().all(|c| c.is_ascii_digit())
            || w.chars().count() == 1
            || (w.len() <= 4 && w.chars().all(|c| "ivxl".contains(c)))
            || matches!(w, "appendix" | "chapter" | "section" | "part")
    };
    let start = words.iter().position(|w| !numbering(w)).unwrap_or(words.len());
    words[start..].join(" ")
}

fn same(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.len() >= 12 && long.starts_with(short))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(titles: &[&str]) -> Vec<String> {
        titles.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn numbering_case_and_escapes_are_folded() {
        assert_eq!(norm("2.1 Title and Author Information"), "title and author information");
        assert_eq!(norm("APPENDIX A. MISCELLANEOUS FORMATTING"), "miscellaneous formatting");
        assert_eq!(norm("IV. Results\\."), "results");
        assert_eq!(norm("A Study of Otters"), "study of otters");
    }

    #[test]
    fn precision_and_recall_are_counted_by_hand() {
        let o = outline(&["Introduction", "Field data", "Night counts", "Results and discussion"]);
        let md = "# A Paper on Otters\n\nText.\n\n## 1 Introduction\n\n### 1.1 Field data\n\n\
                  ### We counted otters\n\n## 2 Results and discussion and more\n";
        // The title is not counted; "We counted otters" is not an entry;
        // the last heading matches its entry as a 12+ character prefix.
        let s = score(md, &o).unwrap();
        assert_eq!(
            s,
            OutlineScore {
                headings: 4,
                true_headings: 3,
                entries: 4,
                found_entries: 3
            }
        );
        assert!((s.precision() - 0.75).abs() < 1e-9);
        assert!((s.recall() - 0.75).abs() < 1e-9);
    }

    #[test]
    fn a_title_that_is_in_the_outline_counts_and_a_short_outline_is_not_scored() {
        let o = outline(&["Otters", "Method", "Results"]);
        let s = score("# Otters\n\n## Method\n", &o).unwrap();
        assert_eq!((s.headings, s.true_headings, s.found_entries), (2, 2, 2));
        assert_eq!(score("# Otters\n", &outline(&["Otters", "Method"])), None);
    }
}
