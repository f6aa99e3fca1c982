//! Does a page's text read as words? A measured score, pure.
//!
//! A text layer can decode to junk without any error: a font whose
//! Unicode map is missing or wrong gives punctuation soup ("- \- - - -"),
//! symbols, or letters that are not the printed ones. This module looks at
//! the text alone and counts, over its whitespace-separated tokens (numbers
//! left out — a table of figures is not junk):
//!
//! - **words**: tokens that are a plausible letter run once their edge
//!   punctuation is stripped — letters only (inner `-`, `'`, `.` allowed),
//!   at most 30 letters, a sane case pattern (lower, Title, UPPER, or at most
//!   two inner capitals: "LaTeX", "McDonald"), no letter three times in a
//!   row, and in Latin script a vowel (words of up to three letters and
//!   acronyms excepted: "cf", "pp", "SVM"). Scripts without spaces (CJK)
//!   count as words;
//! - **soup**: tokens with no letter or digit at all;
//! - **common**: tokens that are among the commonest function words of
//!   English, German, French, Spanish, Italian, Portuguese and Dutch — real
//!   prose is a third of them; letters mapped to the wrong letters are
//!   plausible runs but almost never "the", "and", "der", "les".
//!
//! Besides the tokens, the glyph rule of old: a page of 200 characters or
//! more (unmapped glyphs counted) of which under 30 % are letters or
//! digits is junk.
//!
//! [`Readability::verdict`] turns these into [`Verdict`]. The thresholds
//! were set from the figures of `cargo xtask bench pdf --readability`:
//! every page of the quality sets (real manuals, templates and papers)
//! against the same pages turned into junk the ways fonts break (see
//! `docs/design/pdf.md`, "Scans that read").
//! Must not: look at anything but the text (no fonts, no geometry).

/// What the counts say about a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Too few tokens with letters to judge (a figure page, a title page,
    /// a blank one).
    TooShort,
    /// Reads as words.
    Reads,
    /// May not read: code, tables, or letters that are not the printed
    /// ones. Worth comparing with OCR; never left out on this alone.
    Suspect,
    /// Junk beyond doubt: symbols where letters should be, or letter runs
    /// that form no words.
    Junk,
}

/// Fewest tokens with letters for a verdict from the tokens.
pub const MIN_TOKENS: usize = 30;
/// Under this share of words among the tokens with letters, a page is
/// [`Verdict::Junk`] (real pages: 1st percentile 0.57).
pub const JUNK_WORD_SHARE: f64 = 0.25;
/// Under this share, [`Verdict::Suspect`] (real pages: 5th percentile
/// 0.78; four letters of the alphabet broken: median 0.69).
pub const SUSPECT_WORD_SHARE: f64 = 0.75;
/// A Latin-script page of at least [`COMMON_MIN_TOKENS`] tokens with
/// letters, under this share of common words, is [`Verdict::Suspect`]
/// (real pages: 5th percentile 0.115; letters permuted: 95th 0.049;
/// four letters broken: median 0.071). With the word share, 5.3 % of
/// real pages are suspect (each costs one OCR run) and 91–99.6 % of the
/// broken kinds.
pub const SUSPECT_COMMON_SHARE: f64 = 0.08;
pub const COMMON_MIN_TOKENS: usize = 80;
/// The glyph rule: at least this many characters…
pub const GARBLED_MIN_CHARS: usize = 200;
/// …under this share of them letters or digits is [`Verdict::Junk`].
pub const GARBLED_ALNUM_SHARE: f64 = 0.3;

/// The counts over one text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Readability {
    /// Tokens judged (everything but numbers).
    pub tokens: usize,
    /// Tokens with a letter in them: words and the rest.
    pub lettered: usize,
    pub words: usize,
    pub soup: usize,
    pub common: usize,
    /// Tokens whose letters are all Latin script.
    pub latin: usize,
    /// Visible characters, and how many are letters or digits.
    pub chars: usize,
    pub alnum: usize,
    /// Characters the text layer had no Unicode for (the caller counts
    /// them: they never reach the text).
    pub unmapped: usize,
}

impl Readability {
    /// Share of the tokens with letters that are words.
    pub fn word_share(&self) -> f64 {
        self.words as f64 / self.lettered.max(1) as f64
    }
    pub fn soup_share(&self) -> f64 {
        self.soup as f64 / self.tokens.max(1) as f64
    }
    /// Share of the tokens with letters that are common function words.
    pub fn common_share(&self) -> f64 {
        self.common as f64 / self.lettered.max(1) as f64
    }

    /// One number for comparing two readings of the same page: the share
    /// of words, less what a Latin page without function words loses.
    pub fn value(&self) -> f64 {
        let mut v = self.word_share();
        if self.judges_common() {
            v *= (self.common_share() / SUSPECT_COMMON_SHARE).min(1.0);
        }
        v
    }

    fn judges_common(&self) -> bool {
        self.lettered >= COMMON_MIN_TOKENS && self.latin * 10 >= self.words.max(1) * 8
    }

    /// Symbols where letters should be: many characters, few of them
    /// letters or digits, unmapped ones counted as neither.
    pub fn garbled(&self) -> bool {
        let total = self.chars + self.unmapped;
        total >= GARBLED_MIN_CHARS && (self.alnum as f64) < GARBLED_ALNUM_SHARE * total as f64
    }

    pub fn verdict(&self) -> Verdict {
        if self.garbled() {
            return Verdict::Junk;
        }
        if self.lettered < MIN_TOKENS {
            return Verdict::TooShort;
        }
        let share = self.word_share();
        if share < JUNK_WORD_SHARE {
            return Verdict::Junk;
        }
        if share < SUSPECT_WORD_SHARE || self.judges_common() && self.common_share() < SUSPECT_COMMON_SHARE {
            return Verdict::Suspect;
        }
        Verdict::Reads
    }
}

/// Count the tokens and characters of `text`.
pub fn measure(text: &str) -> Readability {
    let mut r = Readability::default();
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        r.chars += 1;
        r.alnum += usize::from(c.is_alphanumeric());
    }
    for token in text.split_whitespace() {
        match classify(token) {
            Token::Number => continue,
            Token::Soup => r.soup += 1,
            Token::Other => r.lettered += 1,
            Token::Word { latin, common } => {
                r.lettered += 1;
                r.words += 1;
                r.latin += usize::from(latin);
                r.common += usize::from(common);
            }
        }
        r.tokens += 1;
    }
    r
}

enum Token {
    Number,
    Soup,
    Other,
    Word { latin: bool, common: bool },
}

fn classify(token: &str) -> Token {
    if !token.chars().any(char::is_alphanumeric) {
        return Token::Soup;
    }
    let core = token.trim_matches(|c: char| !c.is_alphanumeric());
    let letters = core.chars().filter(|c| c.is_alphabetic()).count();
    // A number, or a number with a letter in it (6.293e-05, 12a).
    if letters == 0 || core.chars().filter(char::is_ascii_digit).count() > letters {
        return Token::Number;
    }
    if core.chars().any(cjk) {
        return Token::Word {
            latin: false,
            common: false,
        };
    }
    let inner_ok = |c: char| c.is_alphabetic() || matches!(c, '-' | '\'' | '’' | '.');
    if !core.chars().all(inner_ok) {
        return Token::Other;
    }
    let letters: Vec<char> = core.chars().filter(|c| c.is_alphabetic()).collect();
    let n = letters.len();
    if n > 30 || tripled(&letters) || !case_ok(&letters) {
        return Token::Other;
    }
    let latin = letters.iter().all(|&c| latin_letter(c));
    if latin && n > 3 && !letters.iter().any(|&c| vowel(c)) && !letters.iter().all(|c| c.is_uppercase()) {
        return Token::Other;
    }
    let lower = core.to_lowercase();
    Token::Word {
        latin,
        common: COMMON.binary_search(&lower.as_str()).is_ok(),
    }
}

/// The same letter three times running ("lll"): no word in the languages
/// we judge does that, and broken maps that send many codes to one letter
/// do it all the time.
fn tripled(letters: &[char]) -> bool {
    letters.windows(3).any(|w| w[0] == w[1] && w[1] == w[2])
}

/// lower, Title, UPPER, or at most two capitals inside ("LaTeX",
/// "McDonald", "iPhone"); more is a map gone wrong ("aBcDeF").
fn case_ok(letters: &[char]) -> bool {
    let inner_caps = letters
        .windows(2)
        .filter(|w| w[0].is_lowercase() && w[1].is_uppercase())
        .count();
    let all_upper = letters.iter().all(|c| !c.is_lowercase());
    all_upper || inner_caps <= 2
}

fn latin_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || ('\u{C0}'..='\u{24F}').contains(&c) && c != '\u{D7}' && c != '\u{F7}'
}

fn vowel(c: char) -> bool {
    let base = match c.to_lowercase().next().unwrap_or(c) {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'æ' => 'a',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'œ' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ý' | 'ÿ' => 'y',
        other => other,
    };
    matches!(base, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

fn cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}' // kana
        | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' // Han
        | '\u{AC00}'..='\u{D7AF}') // Hangul
}

/// The commonest function words of the languages Tesseract users most
/// often read (en, de, fr, es, it, pt, nl), lower case, sorted for
/// binary search.
const COMMON: &[&str] = &[
    "a", "al", "als", "an", "and", "are", "as", "at", "au", "auf", "aus", "be", "been", "but", "by", "can", "che",
    "com", "con", "da", "dal", "dans", "das", "dat", "de", "dei", "del", "della", "dem", "den", "der", "des", "di",
    "die", "do", "dos", "du", "e", "een", "ein", "eine", "einer", "el", "em", "en", "es", "est", "et", "for", "from",
    "für", "had", "has", "have", "het", "his", "i", "if", "il", "im", "in", "into", "is", "ist", "it", "its", "la",
    "las", "le", "les", "lo", "los", "mit", "na", "nach", "nicht", "no", "not", "não", "of", "on", "one", "op", "or",
    "os", "ou", "our", "par", "para", "pas", "per", "por", "pour", "que", "qui", "se", "sich", "sie", "sind", "so",
    "sur", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "um", "un", "una",
    "und", "une", "van", "von", "was", "we", "were", "what", "when", "which", "while", "who", "will", "with", "y",
    "you", "zu", "zum", "zur",
];

#[cfg(test)]
mod tests {
    use super::*;

    const PROSE: &str = "The converter reads the text layer of each page and checks that it reads as words. \
        A page whose font maps its glyphs to symbols gives punctuation instead, and such a page is read \
        again from its picture. Numbers such as 3.14, 2001 and (12) are left out of the count, and so are \
        the hyphens of two-column layouts, e.g. in LaTeX or McDonald's tables; this is what a reader sees.";

    #[test]
    fn the_common_words_are_sorted_for_binary_search() {
        assert!(COMMON.windows(2).all(|w| w[0] < w[1]), "{COMMON:?}");
    }

    #[test]
    fn prose_reads_and_soup_is_junk() {
        let r = measure(PROSE);
        assert_eq!(r.verdict(), Verdict::Reads, "{r:?}");
        assert!(r.word_share() > 0.95 && r.common_share() > 0.2, "{r:?}");
        let soup = "- \\- - - -- . \\ - ; - - \\- ' - ".repeat(20);
        assert_eq!(measure(&soup).verdict(), Verdict::Junk);
        assert_eq!(measure("- - -").verdict(), Verdict::TooShort);
    }

    #[test]
    fn letters_mapped_to_other_letters_are_junk() {
        // Every letter shifted by one: plausible-looking runs, but no
        // function word and few vowels where they belong.
        let shifted: String = PROSE
            .repeat(2)
            .chars()
            .map(|c| match c {
                'a'..='y' | 'A'..='Y' => char::from(c as u8 + 1),
                'z' => 'a',
                other => other,
            })
            .collect();
        let r = measure(&shifted);
        assert_ne!(r.verdict(), Verdict::Reads, "{r:?}");
        assert!(r.value() < measure(&PROSE.repeat(2)).value() / 2.0, "{r:?}");
    }

    #[test]
    fn tokens_are_classified_by_their_shape() {
        let words = |s: &str| measure(s).words;
        assert_eq!(
            words("(see Fig. 3), don't two-column e.g. LaTeX McDonald SVM cf pp"),
            10
        );
        assert_eq!(words("xqzvt aBcDeF helllo f(x) x_1 a=b"), 0);
        assert_eq!(measure("12 3.5 (2001) 4-5").tokens, 0);
        // Greek and Cyrillic need no Latin vowel; Chinese has no spaces.
        assert_eq!(words("λόγος слово 中文文本没有空格"), 3);
        assert_eq!(measure("der Hund und die Katze").common, 3);
    }
}
