//! The LaTeX in a BibTeX value as plain text: accents (`\'e`, `{\"o}`,
//! `\c{c}`, `\v s`) as the letters they make, escaped specials (`\&`,
//! `\%`, `\_`…), the special letters (`\ss`, `\o`, `\ae`…), dashes,
//! `~` as a space; other commands dropped with their arguments' text
//! kept (`\emph{x}` → `x`), braces and math dollars dropped.
//!
//! Must not: interpret anything (the output is text).

/// Accent mark → (base, accented) pairs for the common Latin letters; an
/// accent on any other letter becomes the letter and a combining mark.
const ACCENTS: &[(char, char, &str)] = &[
    ('\'', '\u{301}', "aáeéiíoóuúyýAÁEÉIÍOÓUÚYÝcćnńsśzźCĆNŃSŚZŹ"),
    ('`', '\u{300}', "aàeèiìoòuùAÀEÈIÌOÒUÙ"),
    ('^', '\u{302}', "aâeêiîoôuûAÂEÊIÎOÔUÛ"),
    ('"', '\u{308}', "aäeëiïoöuüyÿAÄEËIÏOÖUÜ"),
    ('~', '\u{303}', "aãnñoõAÃNÑOÕ"),
    ('=', '\u{304}', "aāeēiīoōuūAĀEĒIĪOŌUŪ"),
    ('.', '\u{307}', "zżeėZŻEĖ"),
    ('c', '\u{327}', "cçsşCÇSŞ"),
    ('v', '\u{30c}', "cčsšzžrřeěnňCČSŠZŽRŘEĚNŇ"),
    ('u', '\u{306}', "gğaăGĞAĂ"),
    ('H', '\u{30b}', "oőuűOŐUŰ"),
    ('r', '\u{30a}', "aåuůAÅUŮ"),
    ('k', '\u{328}', "aąeęAĄEĘ"),
];

/// Commands that are letters of their own.
const LETTERS: &[(&str, &str)] = &[
    ("ss", "ß"),
    ("o", "ø"),
    ("O", "Ø"),
    ("ae", "æ"),
    ("AE", "Æ"),
    ("oe", "œ"),
    ("OE", "Œ"),
    ("aa", "å"),
    ("AA", "Å"),
    ("l", "ł"),
    ("L", "Ł"),
    ("i", "i"),
    ("j", "j"),
    ("textendash", "–"),
    ("textemdash", "—"),
    ("textquoteright", "’"),
    ("textquoteleft", "‘"),
    ("LaTeX", "LaTeX"),
    ("TeX", "TeX"),
    // Greek letters, common in titles ($\alpha$-synuclein).
    ("alpha", "α"),
    ("beta", "β"),
    ("gamma", "γ"),
    ("delta", "δ"),
    ("epsilon", "ε"),
    ("zeta", "ζ"),
    ("eta", "η"),
    ("theta", "θ"),
    ("iota", "ι"),
    ("kappa", "κ"),
    ("lambda", "λ"),
    ("mu", "μ"),
    ("nu", "ν"),
    ("xi", "ξ"),
    ("pi", "π"),
    ("rho", "ρ"),
    ("sigma", "σ"),
    ("tau", "τ"),
    ("phi", "φ"),
    ("chi", "χ"),
    ("psi", "ψ"),
    ("omega", "ω"),
    ("Gamma", "Γ"),
    ("Delta", "Δ"),
    ("Theta", "Θ"),
    ("Lambda", "Λ"),
    ("Pi", "Π"),
    ("Sigma", "Σ"),
    ("Phi", "Φ"),
    ("Psi", "Ψ"),
    ("Omega", "Ω"),
];

fn accented(mark: char, base: char) -> String {
    let Some((_, combining, pairs)) = ACCENTS.iter().find(|(m, _, _)| *m == mark) else {
        return base.to_string();
    };
    let chars: Vec<char> = pairs.chars().collect();
    match chars.chunks(2).find(|p| p[0] == base) {
        Some(p) => p[1].to_string(),
        None => format!("{base}{combining}"),
    }
}

/// LaTeX to text, whitespace squashed.
pub(crate) fn to_text(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '{' | '}' | '$' => i += 1,
            '~' => {
                out.push(' ');
                i += 1;
            }
            '-' if c.get(i + 1) == Some(&'-') && c.get(i + 2) == Some(&'-') => {
                out.push('—');
                i += 3;
            }
            '-' if c.get(i + 1) == Some(&'-') => {
                out.push('–');
                i += 2;
            }
            '\\' => i = command(&c, i + 1, &mut out),
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// After a backslash at `i - 1`: write what the command means, return
/// where the text goes on.
fn command(c: &[char], mut i: usize, out: &mut String) -> usize {
    let Some(&first) = c.get(i) else { return i };
    // A symbol accent: \'e, \"{o}, \^{\i}.
    if matches!(first, '\'' | '`' | '^' | '"' | '~' | '=' | '.') {
        return accent(c, i + 1, first, out);
    }
    if !first.is_ascii_alphabetic() {
        // \& \% \$ \# \_ \{ \} — the character itself; \\ a line break.
        out.push(if first == '\\' { ' ' } else { first });
        return i + 1;
    }
    let start = i;
    while c.get(i).is_some_and(char::is_ascii_alphabetic) {
        i += 1;
    }
    let name: String = c[start..i].iter().collect();
    // A letter accent: \c{c}, \v s — only a one-letter command.
    if name.len() == 1 && ACCENTS.iter().any(|(m, _, _)| m.to_string() == name) {
        let mark = name.chars().next().unwrap_or(' ');
        return accent(c, i, mark, out);
    }
    // LaTeX eats the blank after a command's name.
    while c.get(i).is_some_and(|ch| *ch == ' ') {
        i += 1;
    }
    if let Some((_, letter)) = LETTERS.iter().find(|(n, _)| *n == name) {
        out.push_str(letter);
    }
    // Any other command: its name goes; the text of its argument stays.
    i
}

/// The accent `mark` on the letter that follows at `i` (`{x}`, `{\i}`, ` x`
/// or `x`).
fn accent(c: &[char], mut i: usize, mark: char, out: &mut String) -> usize {
    while c.get(i).is_some_and(|ch| *ch == ' ') {
        i += 1;
    }
    let braced = c.get(i) == Some(&'{');
    if braced {
        i += 1;
    }
    // `\i` and `\j` are dotless letters made to carry an accent (and,
    // being commands, eat the blank after them).
    if c.get(i) == Some(&'\\') && matches!(c.get(i + 1), Some('i' | 'j')) {
        out.push_str(&accented(mark, c[i + 1]));
        i += 2;
        while !braced && c.get(i).is_some_and(|ch| *ch == ' ') {
            i += 1;
        }
    } else if let Some(&base) = c.get(i).filter(|b| b.is_alphabetic()) {
        out.push_str(&accented(mark, base));
        i += 1;
    }
    if braced && c.get(i) == Some(&'}') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::to_text;

    #[test]
    fn accents_specials_and_commands_become_text() {
        assert_eq!(to_text(r#"Schr{\"o}dinger's {Cat} \& Co."#), "Schrödinger's Cat & Co.");
        assert_eq!(
            to_text(r"G\'{e}rard and Fran\c{c}ois \v{S}ediv\'y"),
            "Gérard and François Šedivý"
        );
        assert_eq!(to_text(r#"Stra\ss e, \emph{very} na\"\i ve"#), "Straße, very naïve");
        assert_eq!(to_text(r"pages 1--10 --- 50\% of $\alpha$"), "pages 1–10 — 50% of α");
        assert_eq!(to_text(r"\'{q} stays"), "q\u{301} stays");
    }
}
