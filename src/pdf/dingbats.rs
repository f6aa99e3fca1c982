//! Text that PDFium reads as Zapf Dingbats although it is letters.
//!
//! dvips embeds TeX's bitmap fonts as Type 3 fonts and names each glyph
//! `a<code>` ("a101" for code 101, an "e"). The Adobe glyph list gives
//! those very names to Zapf Dingbats ("a101" is U+2761 ❡), and PDFium,
//! finding no ToUnicode map, follows the list: a whole paper comes out as
//! "❲❡❧❝♦♠❡ t♦ s♣❛tst❛t" ("Welcome to spatstat"); MuPDF does the same. The
//! letters are recoverable: the name carries the character code, and the
//! code means what TeX's font encoding says (OT1 for old TeX fonts, T1 for
//! the EC fonts).
//!
//! Owns: the reverse table, the decision that a page's dingbats are
//! misread letters, and mending a page's glyphs or plain text by it.
//! Must not: touch a genuine dingbat (a font whose name says Dingbats, or
//! a bullet here and there on a page of real text).

use super::layout::Glyph;

/// Zapf Dingbats' `aNN` glyph names from the Adobe glyph list, as
/// (code point, NN), sorted by code point. Generated from URW's
/// D050000L.afm (code → name) joined with Zapf Dingbats' built-in
/// encoding (code → code point); names above 255 are left out.
const MISREAD: &[(u32, u8)] = &[
    (0x2192, 161),
    (0x2194, 163),
    (0x2195, 164),
    (0x2460, 120),
    (0x2461, 121),
    (0x2462, 122),
    (0x2463, 123),
    (0x2464, 124),
    (0x2465, 125),
    (0x2466, 126),
    (0x2467, 127),
    (0x2468, 128),
    (0x2469, 129),
    (0x25A0, 73),
    (0x25B2, 76),
    (0x25BC, 77),
    (0x25C6, 78),
    (0x25CF, 71),
    (0x25D7, 81),
    (0x2605, 35),
    (0x260E, 4),
    (0x261B, 11),
    (0x261E, 12),
    (0x2660, 109),
    (0x2663, 112),
    (0x2665, 110),
    (0x2666, 111),
    (0x2701, 1),
    (0x2702, 2),
    (0x2703, 202),
    (0x2704, 3),
    (0x2706, 5),
    (0x2707, 119),
    (0x2708, 118),
    (0x2709, 117),
    (0x270C, 13),
    (0x270D, 14),
    (0x270E, 15),
    (0x270F, 16),
    (0x2710, 105),
    (0x2711, 17),
    (0x2712, 18),
    (0x2713, 19),
    (0x2714, 20),
    (0x2715, 21),
    (0x2716, 22),
    (0x2717, 23),
    (0x2718, 24),
    (0x2719, 25),
    (0x271A, 26),
    (0x271B, 27),
    (0x271C, 28),
    (0x271D, 6),
    (0x271E, 7),
    (0x271F, 8),
    (0x2720, 9),
    (0x2721, 10),
    (0x2722, 29),
    (0x2723, 30),
    (0x2724, 31),
    (0x2725, 32),
    (0x2726, 33),
    (0x2727, 34),
    (0x2729, 36),
    (0x272A, 37),
    (0x272B, 38),
    (0x272C, 39),
    (0x272D, 40),
    (0x272E, 41),
    (0x272F, 42),
    (0x2730, 43),
    (0x2731, 44),
    (0x2732, 45),
    (0x2733, 46),
    (0x2734, 47),
    (0x2735, 48),
    (0x2736, 49),
    (0x2737, 50),
    (0x2738, 51),
    (0x2739, 52),
    (0x273A, 53),
    (0x273B, 54),
    (0x273C, 55),
    (0x273D, 56),
    (0x273E, 57),
    (0x273F, 58),
    (0x2740, 59),
    (0x2741, 60),
    (0x2742, 61),
    (0x2743, 62),
    (0x2744, 63),
    (0x2745, 64),
    (0x2746, 65),
    (0x2747, 66),
    (0x2748, 67),
    (0x2749, 68),
    (0x274A, 69),
    (0x274B, 70),
    (0x274D, 72),
    (0x274F, 74),
    (0x2750, 203),
    (0x2751, 75),
    (0x2752, 204),
    (0x2756, 79),
    (0x2758, 82),
    (0x2759, 83),
    (0x275A, 84),
    (0x275B, 97),
    (0x275C, 98),
    (0x275D, 99),
    (0x275E, 100),
    (0x2761, 101),
    (0x2762, 102),
    (0x2763, 103),
    (0x2764, 104),
    (0x2765, 106),
    (0x2766, 107),
    (0x2767, 108),
    (0x2768, 89),
    (0x2769, 90),
    (0x276A, 93),
    (0x276B, 94),
    (0x276C, 91),
    (0x276D, 92),
    (0x276E, 205),
    (0x276F, 85),
    (0x2770, 206),
    (0x2771, 86),
    (0x2772, 87),
    (0x2773, 88),
    (0x2774, 95),
    (0x2775, 96),
    (0x2776, 130),
    (0x2777, 131),
    (0x2778, 132),
    (0x2779, 133),
    (0x277A, 134),
    (0x277B, 135),
    (0x277C, 136),
    (0x277D, 137),
    (0x277E, 138),
    (0x277F, 139),
    (0x2780, 140),
    (0x2781, 141),
    (0x2782, 142),
    (0x2783, 143),
    (0x2784, 144),
    (0x2785, 145),
    (0x2786, 146),
    (0x2787, 147),
    (0x2788, 148),
    (0x2789, 149),
    (0x278A, 150),
    (0x278B, 151),
    (0x278C, 152),
    (0x278D, 153),
    (0x278E, 154),
    (0x278F, 155),
    (0x2790, 156),
    (0x2791, 157),
    (0x2792, 158),
    (0x2793, 159),
    (0x2794, 160),
    (0x2798, 196),
    (0x2799, 165),
    (0x279A, 192),
    (0x279B, 166),
    (0x279C, 167),
    (0x279D, 168),
    (0x279E, 169),
    (0x279F, 170),
    (0x27A0, 171),
    (0x27A1, 172),
    (0x27A2, 173),
    (0x27A3, 162),
    (0x27A4, 174),
    (0x27A5, 175),
    (0x27A6, 176),
    (0x27A7, 177),
    (0x27A8, 178),
    (0x27A9, 179),
    (0x27AA, 193),
    (0x27AB, 180),
    (0x27AC, 199),
    (0x27AD, 181),
    (0x27AE, 200),
    (0x27AF, 182),
    (0x27B1, 201),
    (0x27B2, 183),
    (0x27B3, 184),
    (0x27B4, 197),
    (0x27B5, 185),
    (0x27B6, 194),
    (0x27B7, 198),
    (0x27B8, 186),
    (0x27B9, 195),
    (0x27BA, 187),
    (0x27BB, 188),
    (0x27BC, 189),
    (0x27BD, 190),
    (0x27BE, 191),
];

/// The character code a dvips glyph name carried, when PDFium turned that
/// name into this dingbat.
pub(crate) fn code_of(c: char) -> Option<u8> {
    let cp = c as u32;
    // Every entry lies in U+2192..U+27BE; most text is far below.
    if !(0x2192..=0x27BE).contains(&cp) {
        return None;
    }
    MISREAD
        .binary_search_by_key(&cp, |&(p, _)| p)
        .ok()
        .map(|i| MISREAD[i].1)
}

/// A font whose dingbats are meant (the base-14 Zapf Dingbats, its URW
/// clone, TeX's `pzd` fonts).
pub(crate) fn genuine_dingbat_font(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["dingbat", "zapf", "d050000l", "pzdr", "pzd"]
        .iter()
        .any(|k| n.contains(k))
}

/// TeX's two text encodings. They agree on letters and digits and differ
/// below 32 and at a few punctuation codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// Knuth's original (cmr and friends): ligatures at 11..=15.
    Ot1,
    /// The Cork encoding of the EC fonts: ligatures at 27..=31.
    T1,
}

/// Which encoding a page's misread codes are in: ligatures are frequent in
/// any prose, and each encoding has them at its own codes.
fn vote(codes: impl Iterator<Item = u8>) -> Encoding {
    let (mut ot1, mut t1) = (0usize, 0usize);
    for c in codes {
        match c {
            11..=15 => ot1 += 1,
            27..=31 | 21 | 22 => t1 += 1,
            128..=191 => t1 += 1,
            _ => {}
        }
    }
    if t1 > ot1 {
        Encoding::T1
    } else {
        Encoding::Ot1
    }
}

/// What a code becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decoded {
    Char(char),
    /// A ligature, spelled out (search sees "file", not "ﬁle").
    Text(&'static str),
    /// A spacing accent TeX sets over the next letter: no text of its own.
    Drop,
}

/// Decode one code in `enc`; `None` for a code that means nothing there
/// (the glyph is left as PDFium read it).
fn decode(code: u8, enc: Encoding) -> Option<Decoded> {
    use Decoded::{Char, Drop, Text};
    let lig = |i: u8| Text(["ff", "fi", "fl", "ffi", "ffl"][usize::from(i)]);
    Some(match (enc, code) {
        (Encoding::Ot1, 0..=10) => Char(['Γ', 'Δ', 'Θ', 'Λ', 'Ξ', 'Π', 'Σ', 'Υ', 'Φ', 'Ψ', 'Ω'][usize::from(code)]),
        (Encoding::Ot1, 11..=15) => lig(code - 11),
        (Encoding::Ot1, 16) => Char('ı'),
        (Encoding::Ot1, 17) => Char('ȷ'),
        (Encoding::Ot1, 18..=24) => Drop,
        (Encoding::Ot1, 25..=31) => Char(['ß', 'æ', 'œ', 'ø', 'Æ', 'Œ', 'Ø'][usize::from(code - 25)]),
        (Encoding::Ot1, 0x22) => Char('\u{201D}'),
        (Encoding::Ot1, 0x5C) => Char('\u{201C}'),
        (Encoding::Ot1, 0x7B) => Char('\u{2013}'),
        (Encoding::Ot1, 0x7C) => Char('\u{2014}'),
        (Encoding::Ot1, 0x7D..=0x7F) => Drop,
        (Encoding::Ot1, 128..) => return None,
        (Encoding::T1, 0..=12) => Drop,
        (Encoding::T1, 13) => Char('\u{201A}'),
        (Encoding::T1, 14) => Char('\u{2039}'),
        (Encoding::T1, 15) => Char('\u{203A}'),
        (Encoding::T1, 16) => Char('\u{201C}'),
        (Encoding::T1, 17) => Char('\u{201D}'),
        (Encoding::T1, 18) => Char('\u{201E}'),
        (Encoding::T1, 19) => Char('«'),
        (Encoding::T1, 20) => Char('»'),
        (Encoding::T1, 21) => Char('\u{2013}'),
        (Encoding::T1, 22) => Char('\u{2014}'),
        (Encoding::T1, 23) => Drop,
        (Encoding::T1, 24) => Char('0'),
        (Encoding::T1, 25) => Char('ı'),
        (Encoding::T1, 26) => Char('ȷ'),
        (Encoding::T1, 27..=31) => lig(code - 27),
        (Encoding::T1, 0x7F) => Char('-'),
        (Encoding::T1, 128..=191) => Char(T1_HIGH[usize::from(code - 128)]),
        (Encoding::T1, 0xD7) => Char('Œ'),
        (Encoding::T1, 0xDF) => Text("SS"),
        (Encoding::T1, 0xF7) => Char('œ'),
        (Encoding::T1, 0xFF) => Char('ß'),
        (Encoding::T1, 192..) => Char(char::from(code)),
        // Both: quotes where ASCII has ' and `.
        (_, 0x27) => Char('\u{2019}'),
        (_, 0x60) => Char('\u{2018}'),
        (_, 0x20) => Drop,
        (_, 0x21..=0x7E) => Char(char::from(code)),
    })
}

/// T1's codes 128..=191: the accented letters of Central European
/// languages, capitals then small, with § and £ at the ends.
const T1_HIGH: [char; 64] = [
    'Ă', 'Ą', 'Ć', 'Č', 'Ď', 'Ě', 'Ę', 'Ğ', 'Ĺ', 'Ľ', 'Ł', 'Ń', 'Ň', 'Ŋ', 'Ő', 'Ŕ', //
    'Ř', 'Ś', 'Š', 'Ş', 'Ť', 'Ţ', 'Ű', 'Ů', 'Ÿ', 'Ź', 'Ž', 'Ż', 'Ĳ', 'İ', 'đ', '§', //
    'ă', 'ą', 'ć', 'č', 'ď', 'ě', 'ę', 'ğ', 'ĺ', 'ľ', 'ł', 'ń', 'ň', 'ŋ', 'ő', 'ŕ', //
    'ř', 'ś', 'š', 'ş', 'ť', 'ţ', 'ű', 'ů', 'ÿ', 'ź', 'ž', 'ż', 'ĳ', '¡', '¿', '£', //
];

/// A page's dingbats are misread letters when there are a few of them and
/// they make up a good share of its text: a real dingbat is a bullet or a
/// check mark among ordinary letters, while a misread page has most of
/// its letters turned into dingbats (the letters whose names are not in
/// the list, such as "t" and "r", come through as themselves).
fn misread_page(dingbats: usize, letters: usize) -> bool {
    dingbats >= 3 && dingbats * 10 >= (dingbats + letters) * 3
}

/// Whether a page's dingbats, decoded in `enc`, read as text: at least
/// half of them sit in words, that is runs of three or more letters with
/// a vowel among them. `items` is the page in reading order, `None` for a
/// word space. Diagrams drawn with symbol fonts (Xy-pic's line pieces,
/// also set in dvips' bitmap fonts under `aNN` names) decode to lone
/// capitals, ligatures and punctuation between spaces and are left alone.
fn reads_as_text(items: impl Iterator<Item = Option<char>>, enc: Encoding) -> bool {
    #[derive(Default)]
    struct Run {
        glyphs: usize,
        dingbats: usize,
        vowel: bool,
    }
    let (mut in_words, mut total) = (0usize, 0usize);
    let mut run = Run::default();
    let mut flush = |run: &mut Run| {
        if run.glyphs >= 3 && run.vowel {
            in_words += run.dingbats;
        }
        *run = Run::default();
    };
    let vowel = |c: char| "aeiouyAEIOUYáéíóúàèìòùäëïöüâêîôû".contains(c);
    for item in items {
        let Some(c) = item else {
            flush(&mut run);
            continue;
        };
        let code = code_of(c);
        total += usize::from(code.is_some());
        let (letters, has_vowel) = match code.map(|k| decode(k, enc)) {
            None | Some(None) => (c.is_alphabetic(), vowel(c)),
            Some(Some(Decoded::Char(d))) => (d.is_alphabetic(), vowel(d)),
            Some(Some(Decoded::Text(t))) => (true, t.chars().any(vowel)),
            // An accent belongs to the letter after it.
            Some(Some(Decoded::Drop)) => continue,
        };
        if letters {
            run.glyphs += 1;
            run.dingbats += usize::from(code.is_some());
            run.vowel |= has_vowel;
        } else {
            flush(&mut run);
        }
    }
    flush(&mut run);
    total > 0 && in_words * 2 >= total
}

/// The encoding to decode a page's dingbats in, when they are misread
/// letters: enough of them ([`misread_page`]), and reading as words in the
/// voted encoding ([`reads_as_text`]). `codes` are the dingbats' codes,
/// `letters` the page's other letters and digits, `items` the page in
/// reading order (`None` for a word space).
fn page_encoding(codes: &[u8], letters: usize, items: impl Iterator<Item = Option<char>>) -> Option<Encoding> {
    if !misread_page(codes.len(), letters) {
        return None;
    }
    let enc = vote(codes.iter().copied());
    reads_as_text(items, enc).then_some(enc)
}

/// The decoding over a plain string (a page of PDFium's own text, which
/// has no font names): the string with its misread letters restored, or
/// `None` when it has none.
pub(crate) fn mend_text(s: &str) -> Option<String> {
    let codes: Vec<u8> = s.chars().filter_map(code_of).collect();
    // Some dingbats (circled digits) count as alphanumeric themselves.
    let letters = s
        .chars()
        .filter(|&c| c.is_alphanumeric() && code_of(c).is_none())
        .count();
    let enc = page_encoding(&codes, letters, s.chars().map(|c| (!c.is_whitespace()).then_some(c)))?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match code_of(c).and_then(|code| decode(code, enc)) {
            Some(Decoded::Char(d)) => out.push(d),
            Some(Decoded::Text(t)) => out.push_str(t),
            Some(Decoded::Drop) => {}
            None => out.push(c),
        }
    }
    Some(out)
}

/// The decoding over a page's glyphs: `misread` holds the candidates (by
/// index into `glyphs`, with their codes; genuine dingbat fonts already
/// left out), `letters` the page's other letters and digits. Mended last
/// first so the indices stay right.
pub(crate) fn mend_glyphs(glyphs: &mut Vec<Glyph>, misread: &[(usize, u8)], letters: usize) {
    let codes: Vec<u8> = misread.iter().map(|&(_, c)| c).collect();
    let items = glyphs
        .iter()
        .flat_map(|g| [None].into_iter().filter(|_| g.space_before).chain([Some(g.c)]));
    let Some(enc) = page_encoding(&codes, letters, items) else {
        return;
    };
    for &(i, code) in misread.iter().rev() {
        match decode(code, enc) {
            None => {}
            Some(Decoded::Char(c)) => glyphs[i].c = c,
            Some(Decoded::Drop) => {
                let g = glyphs.remove(i);
                // The space before an accent belongs to the letter after it.
                if let Some(next) = glyphs.get_mut(i) {
                    next.space_before |= g.space_before;
                }
            }
            Some(Decoded::Text(t)) => {
                let pieces: Vec<Glyph> = glyphs[i].spelled(t).collect();
                glyphs.splice(i..=i, pieces);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_one_to_one() {
        assert!(MISREAD.windows(2).all(|w| w[0].0 < w[1].0));
        let mut codes: Vec<u8> = MISREAD.iter().map(|&(_, c)| c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), MISREAD.len());
    }

    #[test]
    fn a_misread_page_reads_again() {
        // spatstat's getting-started vignette, as PDFium reads it.
        let page = "❲❡❧❝♦♠❡ t♦ s♣❛tst❛t✱ ❛ ♣❛❝❦❛❣❡ ✐♥ t❤❡ ❘ ❧❛♥❣✉❛❣❡ ❢♦r ❛♥❛❧②s✐♥❣ s♣❛t✐❛❧ ♣♦✐♥t ♣❛tt❡r♥s✳";
        assert_eq!(
            mend_text(page).as_deref(),
            Some("Welcome to spatstat, a package in the R language for analysing spatial point patterns.")
        );
        // lme4's PLSvGLS (EC fonts: T1 ligatures and dashes).
        let page = "❞❡✜♥❡ ❛ r❛♥❞♦♠ ❡✛❡❝t ❯♥✐✈❡rs✐t② ♦❢ ❲✐s❝♦♥s✐♥ ✕ ▼❛❞✐s♦♥ ❖❝t♦❜❡r ✸✶✱ ✷✵✷✷";
        assert_eq!(
            mend_text(page).as_deref(),
            Some("define a random effect University of Wisconsin – Madison October 31, 2022")
        );
    }

    #[test]
    fn old_tex_fonts_are_ot1() {
        // "ﬁrst" and "eﬀect" with OT1's ligature codes (12 fi, 11 ff).
        let fi = char::from_u32(MISREAD.iter().find(|&&(_, c)| c == 12).expect("a12").0).expect("cp");
        let ff = char::from_u32(MISREAD.iter().find(|&&(_, c)| c == 11).expect("a11").0).expect("cp");
        let e = char::from_u32(MISREAD.iter().find(|&&(_, c)| c == b'e').expect("a101").0).expect("cp");
        let page = format!("{fi}rst {e}{ff}{e}ct {fi}rst");
        assert_eq!(mend_text(&page).as_deref(), Some("first effect first"));
    }

    #[test]
    fn a_diagram_in_symbol_glyphs_is_not_text() {
        // Xy-pic's arrows in glpk's manual, as PDFium reads them.
        let page = "☞ ☞ ☞ ☞ ④ ❈ ④ ❈ ④ ❈ ⑤ ❇ ⑤ ❇ ⑤ ❇ ✶ ✶ ✶ ✶ ✍ ❅ ✍ ✍ ❅ ✰ ✰ ✰ ♠♠ ✰ ✐✐ ❇ ♠♠ ❇ ✌ ✡ ✡ ✾ ▲▲ ❯❯";
        assert_eq!(mend_text(page), None);
    }

    #[test]
    fn genuine_dingbats_stay() {
        // Check marks and bullets in a page of ordinary text.
        let page = "✓ Fast conversion of papers ✓ Whole paragraphs ✓ Real headings ❏ Magic";
        assert_eq!(mend_text(page), None);
        assert_eq!(mend_text("plain text with no dingbats at all"), None);
        assert!(genuine_dingbat_font("ABCDEF+ZapfDingbats"));
        assert!(genuine_dingbat_font("D050000L"));
        assert!(!genuine_dingbat_font(""));
        assert!(!genuine_dingbat_font("CMR10"));
    }
}
