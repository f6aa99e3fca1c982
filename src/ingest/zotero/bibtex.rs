//! A BibTeX export (Zotero's, Better BibTeX's, JabRef's or hand-written)
//! read tolerantly: one broken entry is skipped with its line and reason,
//! and every other entry still comes in.
//!
//! Why our own small parser rather than a crate: the well-kept one
//! (`biblatex`) fails the whole file on the first syntax error, where an
//! import must keep the other four hundred entries; and what is needed is
//! small — entries, `@string` macros and `#` joins, brace-balanced values,
//! the common LaTeX accents, Zotero's `file` field.
//!
//! Owns: the parse (`@type{key, field = {…} | "…" | 1999 | macro # …}`,
//! `@comment`, `@preamble`, `@string`), the recovery (a value whose braces
//! do not balance ends at the next line that starts an entry, and the
//! entry is reported broken), LaTeX to text, names, and the mapping to
//! Zotero's fields.
//! Must not: read any file but the one it is given (attachments are
//! resolved by `attach.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use super::attach::AttachmentAt;
use super::item::{Creator, RawAttachment, RawItem};
use super::Skipped;

/// One parsed entry: type and fields lower-cased, values raw (LaTeX kept).
#[derive(Debug, Clone)]
pub(crate) struct BibEntry {
    pub kind: String,
    pub key: String,
    pub fields: Vec<(String, String)>,
}

/// The items of a BibTeX file and the entries that were not read.
pub(crate) fn read(src: &str, file: &Path) -> (Vec<RawItem>, Vec<Skipped>) {
    let (entries, mut skipped) = parse(src);
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    for e in entries {
        if !seen.insert(e.key.clone()) {
            skipped.push(Skipped {
                key: e.key.clone(),
                title: String::new(),
                reason: "the citation key appears twice in the file; the first entry was used".into(),
            });
            continue;
        }
        items.push(to_raw(e, file));
    }
    (items, skipped)
}

/// Entries, and what could not be read with its line.
pub(crate) fn parse(src: &str) -> (Vec<BibEntry>, Vec<Skipped>) {
    let mut p = Parser {
        s: src.as_bytes(),
        src,
        i: 0,
        macros: HashMap::new(),
    };
    let mut entries = Vec::new();
    let mut broken = Vec::new();
    while let Some(at) = p.s[p.i..].iter().position(|&b| b == b'@').map(|o| p.i + o) {
        p.i = at + 1;
        let kind = p.ident().to_ascii_lowercase();
        p.ws();
        let close = match p.peek() {
            Some(b'{') => b'}',
            Some(b'(') => b')',
            // A stray `@` (an e-mail address in a comment): not an entry.
            _ => continue,
        };
        if kind.is_empty() {
            continue;
        }
        p.i += 1;
        let outcome = match kind.as_str() {
            "comment" | "preamble" => p.skip_group(close).map(|()| None),
            "string" => p.string_macro(close).map(|()| None),
            _ => p.entry(kind, close).map(Some),
        };
        match outcome {
            Ok(Some(e)) => entries.push(e),
            Ok(None) => {}
            Err((key, reason)) => {
                broken.push(Skipped {
                    key: key.unwrap_or_else(|| format!("line {}", p.line(at))),
                    title: String::new(),
                    reason: format!("line {}: {reason}; the entry was not read", p.line(at)),
                });
                // Go on at the next line that starts with `@`.
                p.i = next_entry_line(p.s, at + 1).unwrap_or(p.s.len());
            }
        }
    }
    (entries, broken)
}

/// The start of the next line whose first non-blank is `@` + a letter.
fn next_entry_line(s: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(nl) = s[i..].iter().position(|&b| b == b'\n').map(|o| i + o) {
        if starts_entry(s, nl) {
            return Some(nl + 1);
        }
        i = nl + 1;
    }
    None
}

/// After the newline at `nl`: blanks, `@`, letters, `{` or `(`.
fn starts_entry(s: &[u8], nl: usize) -> bool {
    let mut j = nl + 1;
    while s.get(j).is_some_and(|b| *b == b' ' || *b == b'\t' || *b == b'\r') {
        j += 1;
    }
    if s.get(j) != Some(&b'@') {
        return false;
    }
    j += 1;
    let letters = j;
    while s.get(j).is_some_and(u8::is_ascii_alphabetic) {
        j += 1;
    }
    j > letters && matches!(s.get(j), Some(b'{' | b'('))
}

type Failure = (Option<String>, String);

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    macros: HashMap<String, String>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn line(&self, at: usize) -> usize {
        self.s[..at.min(self.s.len())].iter().filter(|&&b| b == b'\n').count() + 1
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn ident(&mut self) -> &str {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b':' | b'.' | b'+' | b'/'))
        {
            self.i += 1;
        }
        &self.src[start..self.i]
    }

    /// `@comment{…}` / `@preamble{…}`: skipped whole.
    fn skip_group(&mut self, close: u8) -> Result<(), Failure> {
        if close == b'}' {
            self.braced("").map(|_| ())
        } else {
            match self.s[self.i..].iter().position(|&b| b == b')') {
                Some(o) => {
                    self.i += o + 1;
                    Ok(())
                }
                None => Err((None, "the group never closes".into())),
            }
        }
    }

    /// `@string{name = value}`.
    fn string_macro(&mut self, close: u8) -> Result<(), Failure> {
        self.ws();
        let name = self.ident().to_ascii_lowercase();
        self.ws();
        if name.is_empty() || self.peek() != Some(b'=') {
            return Err((None, "an @string without `name = value`".into()));
        }
        self.i += 1;
        let value = self.value(&name)?;
        self.ws();
        if self.peek() != Some(close) {
            return Err((None, format!("the @string {name} does not close after its value")));
        }
        self.i += 1;
        self.macros.insert(name, value);
        Ok(())
    }

    fn entry(&mut self, kind: String, close: u8) -> Result<BibEntry, Failure> {
        self.ws();
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b != b',' && b != close && !b.is_ascii_whitespace())
        {
            self.i += 1;
        }
        let key = self.src[start..self.i].to_string();
        let named = Some(key.clone()).filter(|k| !k.is_empty());
        if named.is_none() {
            return Err((None, format!("a @{kind} entry without a citation key")));
        }
        let mut fields = Vec::new();
        loop {
            while self.peek().is_some_and(|b| b.is_ascii_whitespace() || b == b',') {
                self.i += 1;
            }
            match self.peek() {
                None => return Err((named, "the entry never closes (a brace is missing)".into())),
                Some(b) if b == close => {
                    self.i += 1;
                    return Ok(BibEntry { kind, key, fields });
                }
                Some(b'@') => {
                    return Err((
                        named,
                        "the entry never closes before the next one starts (a brace is missing)".into(),
                    ));
                }
                Some(_) => {}
            }
            let name = self.ident().to_ascii_lowercase();
            if name.is_empty() {
                let c = self.src[self.i..].chars().next().unwrap_or(' ');
                return Err((named, format!("unexpected {c:?} where a field name should be")));
            }
            self.ws();
            if self.peek() != Some(b'=') {
                return Err((named, format!("the field {name} has no `=`")));
            }
            self.i += 1;
            let value = self.value(&name).map_err(|(_, why)| (named.clone(), why))?;
            fields.push((name, value));
        }
    }

    /// A value: parts joined by `#`.
    fn value(&mut self, field: &str) -> Result<String, Failure> {
        let mut out = String::new();
        loop {
            self.ws();
            match self.peek() {
                Some(b'{') => {
                    self.i += 1;
                    out.push_str(&self.braced(field)?);
                }
                Some(b'"') => {
                    self.i += 1;
                    out.push_str(&self.quoted(field)?);
                }
                Some(b) if b.is_ascii_digit() => {
                    let start = self.i;
                    while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                        self.i += 1;
                    }
                    out.push_str(&self.src[start..self.i]);
                }
                Some(b) if b.is_ascii_alphabetic() => {
                    let name = self.ident().to_ascii_lowercase();
                    out.push_str(&self.macro_value(&name));
                }
                _ => return Err((None, format!("the field {field} has no value"))),
            }
            self.ws();
            if self.peek() == Some(b'#') {
                self.i += 1;
            } else {
                return Ok(out);
            }
        }
    }

    fn macro_value(&self, name: &str) -> String {
        const MONTHS: [&str; 12] = [
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ];
        if let Some(v) = self.macros.get(name) {
            return v.clone();
        }
        match MONTHS.iter().position(|m| *m == name) {
            Some(n) => (n + 1).to_string(),
            None => name.to_string(),
        }
    }

    /// After an opening brace: the text up to its matching brace (inner
    /// braces kept). A line starting a new entry inside it means the brace
    /// was never closed.
    fn braced(&mut self, field: &str) -> Result<String, Failure> {
        let start = self.i;
        let mut depth = 1usize;
        while let Some(b) = self.peek() {
            match b {
                b'\\' => self.i += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        let v = self.src[start..self.i].to_string();
                        self.i += 1;
                        return Ok(v);
                    }
                }
                b'\n' if starts_entry(self.s, self.i) => break,
                _ => {}
            }
            self.i += 1;
        }
        Err((None, unbalanced(field)))
    }

    /// After an opening quote: the text up to the closing quote outside
    /// any braces.
    fn quoted(&mut self, field: &str) -> Result<String, Failure> {
        let start = self.i;
        let mut depth = 0usize;
        while let Some(b) = self.peek() {
            match b {
                b'\\' => self.i += 1,
                b'{' => depth += 1,
                b'}' if depth == 0 => return Err((None, unbalanced(field))),
                b'}' => depth -= 1,
                b'"' if depth == 0 => {
                    let v = self.src[start..self.i].to_string();
                    self.i += 1;
                    return Ok(v);
                }
                b'\n' if starts_entry(self.s, self.i) => break,
                _ => {}
            }
            self.i += 1;
        }
        Err((None, unbalanced(field)))
    }
}

fn unbalanced(field: &str) -> String {
    if field.is_empty() {
        "unbalanced braces".into()
    } else {
        format!("unbalanced braces in the field {field}")
    }
}

/// BibTeX's entry types as Zotero's item types.
fn item_type(kind: &str) -> String {
    match kind {
        "article" => "journalArticle",
        "inproceedings" | "conference" => "conferencePaper",
        "book" => "book",
        "incollection" | "inbook" => "bookSection",
        "phdthesis" | "mastersthesis" | "thesis" => "thesis",
        "techreport" | "report" => "report",
        "online" | "electronic" | "www" => "webpage",
        "unpublished" => "manuscript",
        "misc" => "document",
        other => other,
    }
    .to_string()
}

fn to_raw(e: BibEntry, file: &Path) -> RawItem {
    let mut raw = RawItem {
        source: format!("bibtex:{}#{}", file.display(), e.key),
        key: e.key.clone(),
        item_type: item_type(&e.kind),
        ..RawItem::default()
    };
    let mut fields = BTreeMap::new();
    let mut year = None;
    let mut eprint = None;
    let mut archive = String::new();
    for (name, value) in &e.fields {
        let text = || super::latex::to_text(value);
        let zotero = match name.as_str() {
            "title" => "title",
            "journal" | "journaltitle" => "publicationTitle",
            "booktitle" if raw.item_type == "conferencePaper" => "proceedingsTitle",
            "booktitle" => "bookTitle",
            "doi" => "DOI",
            "abstract" => "abstractNote",
            "url" => "url",
            "publisher" => "publisher",
            "volume" => "volume",
            "number" => "issue",
            "pages" => "pages",
            "school" => "university",
            "institution" => "institution",
            "date" => "date",
            "year" => {
                year = Some(text());
                continue;
            }
            "author" | "editor" => {
                raw.creators.extend(names(value, name));
                continue;
            }
            "keywords" => {
                raw.tags.extend(
                    text()
                        .split([',', ';'])
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(String::from),
                );
                continue;
            }
            "annote" => {
                raw.notes.push(text());
                continue;
            }
            "file" => {
                raw.attachments.extend(files(value));
                continue;
            }
            "eprint" => {
                eprint = Some(text());
                continue;
            }
            "archiveprefix" | "eprinttype" => {
                archive = text();
                continue;
            }
            _ => continue,
        };
        // A URL or DOI keeps its characters; only braces are dropped.
        let v = if matches!(zotero, "url" | "DOI") {
            value.replace(['{', '}'], "").trim().to_string()
        } else {
            text()
        };
        fields.insert(zotero.to_string(), v);
    }
    if let Some(y) = year {
        fields.entry("date".to_string()).or_insert(y);
    }
    if let Some(id) = eprint.filter(|_| archive.eq_ignore_ascii_case("arxiv")) {
        fields.insert("extra".into(), format!("arXiv: {id}"));
    }
    raw.fields = fields;
    raw
}

/// `author = {Last, First and First Last and {Corporate Name} and others}`.
fn names(value: &str, kind: &str) -> Vec<Creator> {
    // One space between words, so `and` on a new line still separates.
    let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
    split_depth0(&value, " and ")
        .into_iter()
        .map(str::trim)
        .filter(|n| !n.is_empty() && !n.eq_ignore_ascii_case("others"))
        .map(|n| {
            let parts: Vec<&str> = split_depth0(n, ",").into_iter().map(str::trim).collect();
            let (first, last) = match parts.as_slice() {
                [last, jr, first] => (first.to_string(), format!("{last}, {jr}")),
                [last, first] => (first.to_string(), last.to_string()),
                _ => first_last(n),
            };
            Creator {
                first: super::latex::to_text(&first),
                last: super::latex::to_text(&last),
                kind: kind.to_string(),
            }
        })
        .collect()
}

/// `First von Last`: the last word is the family name, with the lower-case
/// words before it (`van`, `de la`); a name that is one braced group
/// (`{World Health Organization}`) is a family name alone.
fn first_last(n: &str) -> (String, String) {
    let words: Vec<&str> = split_depth0(n, " ").into_iter().filter(|w| !w.is_empty()).collect();
    if words.len() < 2 {
        return (String::new(), n.to_string());
    }
    let mut split = words.len() - 1;
    while split > 1 && words[split - 1].starts_with(char::is_lowercase) {
        split -= 1;
    }
    (words[..split].join(" "), words[split..].join(" "))
}

/// `s` split at `sep` (ASCII, matched case-insensitively) outside braces.
fn split_depth0<'a>(s: &'a str, sep: &str) -> Vec<&'a str> {
    let b = s.as_bytes();
    let sep = sep.as_bytes();
    let (mut out, mut depth, mut start, mut i) = (Vec::new(), 0usize, 0, 0);
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            _ if depth == 0 && b[i..].len() >= sep.len() && b[i..i + sep.len()].eq_ignore_ascii_case(sep) => {
                out.push(&s[start..i]);
                i += sep.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&s[start..]);
    out
}

/// Zotero's `file` field: `description:path:mime` entries joined by `;`,
/// with `\:` `\;` `\\` escaped; JabRef writes `:path:PDF`; others write
/// just the path.
fn files(value: &str) -> Vec<RawAttachment> {
    let mut out = Vec::new();
    for entry in split_unescaped(value, ';') {
        let parts: Vec<String> = split_unescaped(&entry, ':').iter().map(|p| unescape(p)).collect();
        let (path, mime) = match parts.as_slice() {
            [path] => (path.clone(), String::new()),
            [_, path] => (path.clone(), String::new()),
            [_, path, mime, ..] => (path.clone(), mime.clone()),
            _ => continue,
        };
        let path = path.trim().to_string();
        if path.is_empty() {
            continue;
        }
        let content_type = if mime.eq_ignore_ascii_case("pdf") {
            "application/pdf".to_string()
        } else {
            mime.trim().to_string()
        };
        out.push(RawAttachment {
            at: AttachmentAt::Export(path),
            content_type,
            annotations: Vec::new(),
        });
    }
    out
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.last_mut().into_iter().for_each(|l| l.push('\\'));
                if let Some(n) = chars.next() {
                    out.last_mut().into_iter().for_each(|l| l.push(n));
                }
            }
            c if c == sep => out.push(String::new()),
            c => out.last_mut().into_iter().for_each(|l| l.push(c)),
        }
    }
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else if c != '{' && c != '}' {
            out.push(c);
        }
    }
    out
}
