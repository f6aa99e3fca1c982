//! Document structure from evidence: the title, the front matter under it
//! (authors, affiliations), the abstract, and section headings.
//!
//! A heading needs all of: a style clearly above the dominant body style
//! (larger, or bold where the body is not), a short line with letters, space
//! above it (or the top of a column), no sentence running into it or out of
//! it, and a style that is rare in the document (a paragraph set in a big
//! font is not a run of headings). Section numbering ("2.1", "IV.", "A.2")
//! is strong evidence and also gives the level.

use super::flow::{ends_sentence, starts_lower, Ln};

/// What the structure pass decided about one line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mark {
    None,
    Title,
    /// Author, affiliation or e-mail lines under the title.
    Front,
    /// An entry of a table of contents (a line ending in its page number
    /// on a page full of such lines): a list item, never a heading.
    Toc,
    /// The abstract's label; `rest` is text that follows it on the line
    /// ("Abstract—We show…").
    Abstract {
        rest: String,
    },
    /// A section heading: style key, numbering depth, and whether it
    /// continues the heading on the line above (a wrapped heading).
    Heading {
        style: (i32, bool),
        depth: Option<usize>,
        cont: bool,
    },
}

/// Numbering depth of a heading's first word: "3" and "III." → 1,
/// "2.1" → 2, "A.1.2" → 3. The next word must start a title (upper case),
/// unless the number has three parts or more: "1.2.2 glp set graph name"
/// (a manual's entry named after its routine) is numbered as surely as
/// "1.2.2 Setting names", while "2 the rest" or "2.5 times" is prose.
pub(crate) fn numbering(text: &str) -> Option<usize> {
    let mut it = text.split(' ');
    let first = it.next()?;
    let next = it.next()?;
    let titled = next
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || !c.is_alphabetic());
    if !titled && first.trim_end_matches('.').split('.').count() < 3 {
        return None;
    }
    let lower = first.to_ascii_lowercase();
    if ["chapter", "section", "appendix", "part"].contains(&lower.as_str()) {
        return Some(1);
    }
    let core = first.trim_end_matches('.');
    if core.is_empty() {
        return None;
    }
    let roman = core.len() <= 5 && core.chars().all(|c| matches!(c, 'I' | 'V' | 'X' | 'L'));
    if roman && first.ends_with('.') {
        return Some(1);
    }
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let ok = parts.iter().enumerate().all(|(i, p)| {
        let digits = !p.is_empty() && p.len() <= 2 && p.chars().all(|c| c.is_ascii_digit());
        let letter = i == 0 && p.len() == 1 && p.chars().all(|c| c.is_ascii_uppercase());
        digits || letter
    });
    // A lone capital ("A Survey…") is a word, not a number.
    let lone_letter = parts.len() == 1 && core.chars().all(|c| c.is_ascii_uppercase()) && !first.ends_with('.');
    (ok && !lone_letter).then_some(parts.len())
}

/// A numbered line's text after its number.
fn body_after_number(t: &str) -> &str {
    t.split_once(' ').map(|(_, r)| r).unwrap_or(t)
}

/// Every letter upper case, and at least four of them.
fn all_capitals(t: &str) -> bool {
    let mut n = 0;
    for c in t.chars().filter(|c| c.is_alphabetic()) {
        if !c.is_uppercase() {
            return false;
        }
        n += 1;
    }
    n >= 4
}

fn letters(s: &str) -> usize {
    s.chars().filter(|c| c.is_alphabetic()).count()
}

/// Decide every line's mark.
pub(crate) fn mark(
    lns: &[Ln<'_>],
    heights: &[f32],
    body: f32,
    body_bold: bool,
    shares: &std::collections::HashMap<(i32, bool), f32>,
) -> Vec<Mark> {
    let mut marks = vec![Mark::None; lns.len()];
    let after_front = front_matter(lns, heights, body, &mut marks);
    contents_entries(lns, &mut marks);

    // Runs of same-style lines that sit close together: more than a few
    // such lines is a paragraph in that style, not a heading.
    let mut run = vec![1usize; lns.len()];
    let mut i = 0;
    while i < lns.len() {
        let mut j = i + 1;
        while j < lns.len() && lns[j].same_style(&lns[j - 1]) && lns[j].gap_above.is_some_and(|g| g < 0.5 * body) {
            j += 1;
        }
        run[i..j].iter_mut().for_each(|r| *r = j - i);
        i = j;
    }

    for i in after_front..lns.len() {
        if marks[i] != Mark::None {
            continue;
        }
        let l = &lns[i];
        let t = l.text.trim();
        if letters(t) < 2 || l.line.words.len() > 14 || t.chars().count() > 110 {
            continue;
        }
        if t.ends_with([',', ';', '-']) || is_caption(t) || is_date(t) {
            continue;
        }
        // A contents entry the contents pass did not catch (its page
        // number pushed to the column's edge or behind dot leaders).
        if ends_in_page_number(t) && number_stands_apart(l) {
            continue;
        }
        let depth = numbering(t);
        if depth.is_none() && !heading_words(t) {
            continue;
        }
        let ratio = l.size / body.max(1.0);
        // Numbering lets a smaller step count (\large over 11 pt body).
        let bigger = ratio >= 1.12 || (ratio >= 1.06 && depth.is_some());
        // Bold sans capitals measure smaller than the body's serif: with
        // its own number a bold line may be a little smaller.
        let bolder = l.bold && !body_bold && (ratio >= 0.95 || (depth.is_some() && ratio >= 0.85));
        // Numbered capitals at body size, with clear space above (or at
        // the top of a column), are a heading too ("1. INTRODUCTION" in small caps, as AASTeX and
        // many journals set them): the number, the capitals and the space
        // together are the evidence that size or weight would be.
        let capitals = depth.is_some()
            && ratio >= 0.85
            && l.line.words.len() <= 10
            && all_capitals(body_after_number(t))
            && l.gap_above.is_none_or(|g| g >= body);
        if !(bigger || bolder || capitals) {
            continue;
        }
        // Unnumbered bold at body size is weak evidence: keep it short and
        // never a sentence ("Proof." / "Note that …").
        if !bigger && depth.is_none() && (l.line.words.len() > 8 || t.ends_with('.')) {
            continue;
        }
        if t.ends_with('.') && depth.is_none() && t.split(' ').count() > 4 {
            continue;
        }
        // A line ending in a colon introduces what follows it ("Affiliation:",
        // "we can extend the class for space-time:"): a label or a sentence.
        if t.ends_with(':') && depth.is_none() {
            continue;
        }
        // (A numbered line's case was judged with its number.)
        if depth.is_none() && starts_lower(t) {
            continue;
        }
        if run[i] > 3 && depth.is_none() {
            continue;
        }
        // Three lines in one style at line spacing whose first fills the
        // column: a short paragraph set bold (an abstract), not a heading
        // that wraps (a heading's lines break well before the edge).
        if run[i] == 3 && depth.is_none() && l.full_width() && lns.get(i + 1).is_some_and(|n| n.same_style(l)) {
            continue;
        }
        if depth.is_none() && shares.get(&l.style()).copied().unwrap_or(0.0) > 0.08 {
            continue;
        }
        // Words pushed apart into columns: a table's header or a row
        // label, not a title (the gap after a section number may be a quad).
        if spread_like_a_row(l, depth.is_some()) {
            continue;
        }
        // Bold at body size with only line spacing above and below does not
        // stand apart: a label inside a table or a list, not a section. At
        // the top of a column the space above is unknown; the line below
        // decides (a table's first row label).
        if !bigger
            && depth.is_none()
            && l.gap_above.is_none_or(|g| g < 0.6 * body)
            && l.gap_below.is_some_and(|g| g < 0.6 * body)
        {
            continue;
        }
        // Space above, unless it starts a column/page or continues the
        // heading on the line above.
        // A line with its own number starts a new heading.
        let prev_heading = i > 0
            && depth.is_none()
            && matches!(marks[i - 1], Mark::Heading { .. })
            && lns[i - 1].same_style(l)
            && l.gap_above.is_some_and(|g| g < l.size);
        if !prev_heading {
            if let Some(g) = l.gap_above {
                let p = &lns[i - 1];
                if g < 0.3 * body && !(p.size < l.size * 0.9 || ends_sentence(&p.text)) {
                    continue;
                }
                // A sentence in the same style runs into this line.
                if g < 0.5 * body && p.same_style(l) && !ends_sentence(&p.text) {
                    continue;
                }
            }
        }
        // A sentence runs out of it: the first line of a paragraph set
        // larger or bold (a lead-in), not a heading.
        if let (Some(g), Some(n)) = (l.gap_below, lns.get(i + 1)) {
            if g < 0.3 * body && starts_lower(&n.text) && !ends_sentence(t) && !n.same_style(l) {
                continue;
            }
        }
        marks[i] = Mark::Heading {
            style: l.style(),
            depth: if prev_heading { None } else { depth },
            cont: prev_heading,
        };
    }
    labels_are_not_headings(lns, heights, &mut marks);
    marks
}

/// Some gap between the line's words is wider than two em: the words
/// stand in columns, as the table finder's cells. With `numbered`, a
/// number standing alone before the title (a quad after it) does not count.
fn spread_like_a_row(l: &Ln<'_>, numbered: bool) -> bool {
    let cells = l.line.cells(2.0 * l.size.max(1.0));
    let number_alone =
        numbered && cells.first().map(|c| c.text.as_str()) == l.line.words.first().map(|w| w.text.as_str());
    cells.len() > 1 + usize::from(number_alone)
}

/// A line that is only a date ("20 April 1999", "April 20, 1999", "Dec.
/// 2026"): the date under a title, set large, is front matter, and its day
/// is not a section number.
fn is_date(t: &str) -> bool {
    const MONTHS: &[&str] = &[
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ];
    let words: Vec<String> = t
        .split(' ')
        .map(|w| w.trim_matches([',', '.']).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    let month = words.iter().filter(|w| MONTHS.contains(&w.as_str())).count();
    let year = words
        .iter()
        .filter(|w| w.len() == 4 && w.chars().all(|c| c.is_ascii_digit()))
        .count();
    let day = |w: &String| (1..=2).contains(&w.len()) && w.chars().all(|c| c.is_ascii_digit());
    words.len() <= 4 && month == 1 && year == 1 && words.iter().filter(|w| day(w)).count() + 2 >= words.len()
}

/// What an unnumbered heading's words must look like: at least one word
/// of three letters or more (a line of math — "Ey Z 0 tε Lx,yx(s)ϕ(x) ds",
/// set large by its integral sign — or a row of panel letters "A B" has
/// none); not a theorem-like run-in label ("Theorem 1 (Main)", "Lemma
/// 3.2"), whose text follows as a paragraph; not a keywords line; not an
/// author or affiliation line (an e-mail address, a university or
/// department, names with footnote marks between commas).
fn heading_words(t: &str) -> bool {
    // A comment or a prompt in a code listing, set bold by the listing's
    // highlighter ("// Return result", "# [1] FALSE", "> fit <- lm(y ~ x)").
    if t.starts_with(['/', '#', '%', ';', '>', '$', '-', '*', '{', '}', '<', '[']) {
        return false;
    }
    let words: Vec<&str> = t.split(' ').collect();
    // A run of three letters ("data/version.csv" has one; "Lx,yx(s)ϕ(x)"
    // has none), or one word of letters ("Do", a manual's command name).
    let wordy = t
        .split(|c: char| !c.is_alphabetic())
        .any(|run| run.chars().count() >= 3);
    let one_word = words.len() == 1 && letters(t) >= 2 && t.chars().all(char::is_alphanumeric);
    if !(wordy || one_word) {
        return false;
    }
    const RUN_IN: &[&str] = &[
        "theorem",
        "lemma",
        "proposition",
        "corollary",
        "definition",
        "proof",
        "remark",
        "example",
        "claim",
        "conjecture",
        "assumption",
        "observation",
        "fact",
        "problem",
        "exercise",
        "property",
        "hypothesis",
        "notation",
        "algorithm",
    ];
    let first = words[0].trim_end_matches(['.', ':']).to_lowercase();
    if RUN_IN.contains(&first.as_str()) {
        let next = words.get(1).copied().unwrap_or("");
        let labelled = next.starts_with('(')
            || next.chars().next().is_some_and(|c| c.is_ascii_digit())
            || numbering(&format!("{next} X")).is_some();
        if labelled || words[0].ends_with(['.', ':']) {
            return false;
        }
    }
    let lower = t.to_lowercase();
    // "Keywords: a, b, c" (a bare "KEYWORDS" over them is a heading).
    let keywords = ["keywords", "key words", "index terms"].iter().any(|k| {
        lower.starts_with(k)
            && !lower[k.len()..]
                .trim_start_matches([':', '.', ' ', '-', '\u{2014}'])
                .is_empty()
    });
    if keywords {
        return false;
    }
    let affiliation = words.iter().any(|w| {
        let w = w.trim_matches(|c: char| matches!(c, ',' | ';' | '(' | ')'));
        w.contains('@')
            || [
                "University",
                "Univ.",
                "Universit\u{e9}",
                "Institute",
                "Department",
                "Dept.",
                "Laboratory",
                "Laboratories",
                "College",
            ]
            .contains(&w)
    });
    let marked_names = t.matches(',').count() >= 2 && t.contains(['∗', '†', '‡', '*']);
    !(affiliation || marked_names)
}

/// A line as a figure's text runs: a few words (a panel title, a box's
/// label, an axis title) or only numbers (axis ticks); not a caption.
fn figure_text(l: &Ln<'_>) -> bool {
    let t = l.text.trim();
    let numbers = t.split(' ').all(|w| {
        w.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '\u{2212}'))
    });
    (l.line.words.len() <= 4 || numbers) && !is_figure_caption(t)
}

/// A plot's axis ticks: four numbers or more in one steady step ("0.0 0.5
/// 1.0 1.5", "0 200 400 600").
fn axis_ticks(t: &str) -> bool {
    let values: Vec<f64> = t
        .split(' ')
        .map_while(|w| w.replace('\u{2212}', "-").parse().ok())
        .collect();
    if values.len() < 4 || values.len() != t.split(' ').count() {
        return false;
    }
    let step = values[1] - values[0];
    step != 0.0
        && values
            .windows(2)
            .all(|p| ((p[1] - p[0]) - step).abs() <= 1e-6 * step.abs().max(1.0))
}

/// Headings that the rest of the page shows to be labels: the same
/// unnumbered text set as a heading three or more times within a few
/// inches of one page (the panel titles of a figure; a chapter's
/// "Introduction" repeats across a book, a manual's "Synopsis" once per
/// entry), and a heading followed by a figure's caption with only the
/// figure's own text between (a label inside the figure; a table's caption
/// goes above the table, so it may follow a section heading).
fn labels_are_not_headings(lns: &[Ln<'_>], heights: &[f32], marks: &mut [Mark]) {
    let key = |l: &Ln<'_>| -> (usize, String) {
        let text = l
            .text
            .chars()
            .filter(|c| c.is_alphabetic())
            .flat_map(char::to_lowercase)
            .collect();
        (l.page, text)
    };
    let mut tops: std::collections::HashMap<(usize, String), Vec<f32>> = std::collections::HashMap::new();
    for (i, m) in marks.iter().enumerate() {
        if let Mark::Heading {
            depth: None,
            cont: false,
            ..
        } = m
        {
            tops.entry(key(&lns[i])).or_default().push(lns[i].line.top);
        }
    }
    for i in 0..lns.len() {
        let Mark::Heading {
            depth: None,
            cont: false,
            ..
        } = marks[i]
        else {
            continue;
        };
        let height = heights.get(lns[i].page).copied().unwrap_or(792.0);
        let repeated = tops.get(&key(&lns[i])).is_some_and(|t| {
            let span = t.iter().fold(f32::MIN, |a, &b| a.max(b)) - t.iter().fold(f32::MAX, |a, &b| a.min(b));
            t.len() >= 3 && span < 0.4 * height
        });
        // The caption may follow the label after more of the figure's own
        // text: axis ticks, other panel titles, a few words in boxes
        // ("Mean Bootstrap" / "20.0 20.5 21.0" / "Samples" / "Fig. 2.").
        // A plot without a caption shows itself by its axis ticks.
        let mut j = i + 1;
        let mut ticks = false;
        while j < lns.len() && j - i <= 8 && lns[j].page == lns[i].page && figure_text(&lns[j]) {
            ticks |= axis_ticks(lns[j].text.trim());
            j += 1;
        }
        let captioned = ticks
            || lns
                .get(j)
                .is_some_and(|n| n.page == lns[i].page && is_figure_caption(n.text.trim()));
        if repeated || captioned {
            marks[i] = Mark::None;
            // A wrapped continuation goes with it.
            let mut j = i + 1;
            while j < lns.len() && matches!(marks[j], Mark::Heading { cont: true, .. }) {
                marks[j] = Mark::None;
                j += 1;
            }
        }
    }
}

/// The last word is a bare page number ("… Introduction 2", "… . . 17").
fn ends_in_page_number(text: &str) -> bool {
    let mut words = text.split(' ').rev();
    let last = words.next().unwrap_or("");
    let before = words.next();
    !last.is_empty()
        && last.len() <= 4
        && last.chars().all(|c| c.is_ascii_digit())
        && before.is_some()
        && letters(text) >= 2
}

/// A figure or table caption ("Table 1: …", "Fig. 3.", "Algorithm 2"):
/// set in a heading's style by many classes, but a label, not a section.
fn is_caption(text: &str) -> bool {
    let mut words = text.split(' ');
    let first = words.next().unwrap_or("").to_lowercase();
    let Some(num) = words.next() else {
        return false;
    };
    let labels = [
        "figure",
        "fig.",
        "fig",
        "table",
        "tab.",
        "algorithm",
        "listing",
        "scheme",
        "chart",
        "plate",
        "exhibit",
    ];
    let num = num.trim_end_matches([':', '.', ')']);
    let numbered = num.chars().any(|c| c.is_ascii_digit()) || num.chars().all(|c| matches!(c, 'I' | 'V' | 'X'));
    labels.contains(&first.as_str())
        && !num.is_empty()
        && numbered
        && num
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()) && p.len() <= 3)
}

/// A figure's caption: "Figure 1: …", "FIG. 2. …" — the number followed
/// by its punctuation, unlike a sentence about the figure ("Figure 2
/// shows …", "Table 1 summarizes …").
fn is_figure_caption(text: &str) -> bool {
    let mut words = text.split(' ');
    let first = words.next().unwrap_or("").to_lowercase();
    let num = words.next().unwrap_or("");
    ["figure", "fig.", "fig", "plate", "chart", "scheme"].contains(&first.as_str())
        && num.ends_with([':', '.'])
        && is_caption(text)
}

/// A line that names a table of contents.
fn is_contents_label(text: &str) -> bool {
    let t = text.trim().trim_end_matches(':').to_lowercase();
    [
        "contents",
        "table of contents",
        "inhalt",
        "inhaltsverzeichnis",
        "table des matières",
        "sommaire",
        "índice",
        "indice",
    ]
    .contains(&t.as_str())
}

/// Table-of-contents entries: on a page that has a "Contents" line, or
/// follows such a page, where at least four lines, and at least a third of
/// its lines, end in a bare page number, those lines are contents entries.
/// A heading that happens to end in a number ("versions 4 and 5") sits on
/// a page of prose, and a reference list ending lines in years has no
/// "Contents" label: both stay as they are. On a labelled page of prose,
/// the entries straight after the label are contents entries too.
fn contents_entries(lns: &[Ln<'_>], marks: &mut [Mark]) {
    let mut start = 0;
    let mut in_contents = false;
    while start < lns.len() {
        let page = lns[start].page;
        let end = start + lns[start..].iter().take_while(|l| l.page == page).count();
        let entries: Vec<usize> = (start..end)
            .filter(|&i| ends_in_page_number(&lns[i].text) && number_stands_apart(&lns[i]))
            .collect();
        let label = (start..end).find(|&i| is_contents_label(&lns[i].text));
        let labelled = in_contents || label.is_some();
        in_contents = labelled && entries.len() >= 4 && entries.len() * 3 >= end - start;
        let entries = match label {
            Some(a) if !in_contents => entries_after(lns, a, end),
            _ if in_contents => entries,
            _ => Vec::new(),
        };
        for i in entries {
            if marks[i] == Mark::None {
                marks[i] = Mark::Toc;
            }
        }
        start = end;
    }
}

/// An entry's page number stands apart from its text: pushed to the edge
/// of the column, or after dot leaders. A line of prose that happens to end
/// in a number ("… Claim 11") has a word space before it.
fn number_stands_apart(l: &Ln<'_>) -> bool {
    let [.., before, number] = &l.line.words[..] else {
        return false;
    };
    let leaders = before.text.chars().all(|c| matches!(c, '.' | '·' | '…'));
    leaders || number.x0 - before.x1 > 1.5 * number.size.max(1.0)
}

/// A short contents list on a page of prose (the contents in one column of
/// a first page, the abstract in the other): the entries that follow the
/// label in reading order, an entry wrapped over two lines included, as
/// long as there are at least four of them.
fn entries_after(lns: &[Ln<'_>], label: usize, end: usize) -> Vec<usize> {
    let mut run = Vec::new();
    let mut misses = 0;
    for (i, l) in lns.iter().enumerate().take(end).skip(label + 1) {
        if ends_in_page_number(&l.text) && number_stands_apart(l) {
            run.push(i);
            misses = 0;
        } else {
            misses += 1;
            if misses > 1 {
                break;
            }
        }
    }
    if run.len() >= 4 {
        run
    } else {
        Vec::new()
    }
}

/// Title (the largest line near the top of the first page), the author
/// and affiliation lines under it, and the abstract's label. Returns the
/// index where the body starts being searched for headings.
fn front_matter(lns: &[Ln<'_>], heights: &[f32], body: f32, marks: &mut [Mark]) -> usize {
    let first_page: Vec<usize> = (0..lns.len()).filter(|&i| lns[i].page == 0).collect();
    let height = heights.first().copied().unwrap_or(792.0);
    let top: Vec<usize> = first_page
        .iter()
        .copied()
        .filter(|&i| lns[i].line.top < height * 0.5 && letters(&lns[i].text) >= 3)
        // A contents page opening the document has no title on it.
        .filter(|&i| !is_contents_label(&lns[i].text))
        .collect();
    let Some(&t0) = top
        .iter()
        .max_by(|&&a, &&b| lns[a].size.total_cmp(&lns[b].size).then(b.cmp(&a)))
    else {
        return 0;
    };
    let abstract_at = abstract_label(lns);
    if lns[t0].size < body * 1.25 || lns[t0].line.words.len() > 25 {
        if let Some((a, rest)) = abstract_at {
            marks[a] = Mark::Abstract { rest };
        }
        return 0;
    }
    // The title may wrap over a few lines of the same size.
    let mut start = t0;
    while start > 0
        && lns[start - 1].page == 0
        && (lns[start - 1].size - lns[t0].size).abs() <= 0.6
        && title_gap(lns, start).is_some_and(|g| g < lns[t0].size)
        && t0 - start < 3
    {
        start -= 1;
    }
    let mut end = t0 + 1;
    while end < lns.len()
        && lns[end].page == 0
        && (lns[end].size - lns[t0].size).abs() <= 0.6
        && title_gap(lns, end).is_some_and(|g| g < lns[t0].size)
        && end - start < 4
    {
        end += 1;
    }
    marks[start..end].iter_mut().for_each(|m| *m = Mark::Title);
    // Front matter: what follows the title on the first page until the
    // abstract, a numbered heading, or a line of prose — at body size, or
    // in any size when it and the line under it read as sentences (an
    // unlabelled abstract set small and bold in a box, as the pinp
    // template does; one centred line of a title page is not a paragraph).
    let stop = abstract_at.as_ref().map(|(a, _)| *a).unwrap_or(usize::MAX);
    let long = |k: usize| {
        lns.get(k)
            .is_some_and(|l| l.page == 0 && l.line.words.len() >= 8 && l.full_width())
    };
    let sentences = |k: usize| long(k) && reads_as_prose(&lns[k].text);
    let mut i = end;
    while i < lns.len() && i < stop && lns[i].page == 0 && i - end < 15 {
        let l = &lns[i];
        let small_paragraph = sentences(i) && sentences(i + 1) && (lns[i + 1].size - l.size).abs() <= 0.3;
        let prose = long(i) && abstract_at.is_none() && ((l.size - body).abs() <= 0.6 || small_paragraph);
        if prose || numbering(&l.text).is_some() && l.size >= body {
            break;
        }
        marks[i] = Mark::Front;
        i += 1;
    }
    if let Some((a, rest)) = abstract_at {
        marks[a] = Mark::Abstract { rest };
    }
    i
}

/// The space between line `i` and the line before it on its page: the
/// flow's gap, or, where the two sit in different columns (a title's long
/// first line spans the gutter, its short second line does not), the
/// distance between their boxes.
fn title_gap(lns: &[Ln<'_>], i: usize) -> Option<f32> {
    lns[i].gap_above.or_else(|| {
        let (a, b) = (lns.get(i.checked_sub(1)?)?, &lns[i]);
        (a.page == b.page && b.line.top >= a.line.top).then_some(b.line.top - a.line.bottom)
    })
}

/// Most of the line's words start in lower case: sentences, not names or
/// affiliations (whose words are capitalised but for "of", "and", "for").
fn reads_as_prose(t: &str) -> bool {
    let words: Vec<&str> = t.split(' ').filter(|w| w.chars().any(char::is_alphabetic)).collect();
    let lower = words.iter().filter(|w| starts_lower(w)).count();
    words.len() >= 8 && lower * 2 > words.len()
}

/// The abstract's label on the first two pages: a line that is or starts
/// with "Abstract".
fn abstract_label(lns: &[Ln<'_>]) -> Option<(usize, String)> {
    lns.iter()
        .enumerate()
        .take_while(|(_, l)| l.page < 2)
        .find_map(|(i, l)| {
            let t = l.text.trim();
            let head: String = t.chars().take(8).collect();
            if !head.eq_ignore_ascii_case("abstract") {
                return None;
            }
            let rest = &t[head.len()..];
            if rest.chars().next().is_some_and(char::is_alphabetic) {
                return None;
            }
            let rest = rest.trim_start_matches(|c: char| {
                c.is_whitespace() || matches!(c, '.' | ':' | '-' | '\u{2014}' | '\u{2013}')
            });
            Some((i, rest.to_string()))
        })
}

#[cfg(test)]
mod tests;
