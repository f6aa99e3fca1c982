//! YAML frontmatter → flat record metadata, treating the YAML as untrusted.
//!
//! Owns: finding and stripping the `---` block, reading it with a streaming
//! event parser under hard limits, and mapping keys onto the record schema
//! (`category`, `status`, `entity`, `event_date`, `tags` as `|a|b|`,
//! `aliases` as a list, every other scalar as `x_<key>`).
//! Must not: fail a note. Malformed YAML, nested values, oversized headers
//! and alias tricks become warnings; the note is still indexed from its
//! text.
//!
//! Why an event parser: a tree-building loader expands aliases by copying,
//! so a "billion laughs" header (`a: &a [x, x]`, `b: &b [*a, *a]`, …) can
//! exhaust memory. Here only top-level scalar values are kept, an alias
//! resolves only to an anchored *scalar*, and the number of events and the
//! block size are capped, so work and memory stay bounded by the input size.

use std::collections::BTreeMap;

use serde_json::Value;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// The frontmatter-mapping version. Bump it when the mapping changes;
/// `refresh_vault` re-indexes (or re-stamps) notes indexed under an older one.
/// 3: `aliases`/`alias` became a list under `aliases` (was `x_aliases`, a
/// comma-joined string nothing searched).
/// 4: the note's title heads every chunk's embedded text (see
/// `vault::EMBED_SCHEMA`).
/// 5: the note's folders head its title there (`Plugins › Canvas`).
pub const META_SCHEMA: i64 = 5;

/// Frontmatter larger than this is not parsed (the note is still indexed).
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// Parser events allowed per header: generous for real notes, small enough
/// that hostile input cannot make parsing expensive.
const MAX_EVENTS: usize = 20_000;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Whether the note has a frontmatter block at all (even an invalid one).
    pub has_frontmatter: bool,
    /// Record fields and `x_` fields; never any of Jarvis's own keys.
    pub fields: BTreeMap<String, Value>,
    /// The note without its frontmatter block.
    pub body: String,
    pub warnings: Vec<String>,
}

/// Split off and read the frontmatter of a note.
pub fn parse(text: &str) -> Parsed {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((block, body)) = split_block(text) else {
        return Parsed {
            body: text.to_string(),
            ..Parsed::default()
        };
    };
    let mut out = Parsed {
        has_frontmatter: true,
        body: body.to_string(),
        ..Parsed::default()
    };
    if block.len() > MAX_FRONTMATTER_BYTES {
        out.warnings.push(format!(
            "frontmatter is {} bytes (limit {MAX_FRONTMATTER_BYTES}); its fields are ignored",
            block.len()
        ));
        return out;
    }
    match read_top_level(block) {
        Ok((pairs, mut warnings)) => {
            out.warnings.append(&mut warnings);
            map_fields(pairs, &mut out);
        }
        Err(e) => out.warnings.push(format!(
            "frontmatter is not valid YAML ({e}); indexed without its fields"
        )),
    }
    out
}

/// `---\n…\n---` (or `...`) at the very start. Returns (yaml, body).
fn split_block(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed == "..." {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// A top-level value: a scalar (with its YAML style, to tell `"123"` from
/// `123`) or a list of scalars.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Scalar(String, bool),
    List(Vec<String>),
}

type Pairs = Vec<(String, Raw)>;

fn read_top_level(yaml: &str) -> Result<(Pairs, Vec<String>), String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut warnings = Vec::new();
    let mut pairs: Pairs = Vec::new();
    let mut anchors: BTreeMap<usize, String> = BTreeMap::new();
    let mut events = 0usize;
    let mut next = || -> Result<Event, String> {
        events += 1;
        if events > MAX_EVENTS {
            return Err(format!("more than {MAX_EVENTS} YAML events"));
        }
        parser.next_token().map(|(e, _)| e).map_err(|e| e.to_string())
    };
    // StreamStart, DocumentStart, then the root.
    loop {
        match next()? {
            Event::StreamStart | Event::DocumentStart => continue,
            Event::StreamEnd | Event::DocumentEnd => return Ok((pairs, warnings)),
            Event::MappingStart(..) => break,
            Event::Scalar(s, ..) if s.is_empty() => return Ok((pairs, warnings)),
            _ => return Err("the frontmatter is not a mapping of keys to values".into()),
        }
    }
    loop {
        let key = match next()? {
            Event::MappingEnd => break,
            Event::Scalar(k, ..) => k,
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                skip_nested(&mut next)?;
                skip_value(&mut next)?;
                warnings.push("a frontmatter key that is not a plain string was skipped".into());
                continue;
            }
            other => return Err(format!("unexpected {other:?} where a key belongs")),
        };
        match next()? {
            Event::Scalar(v, style, anchor, _) => {
                if anchor > 0 {
                    anchors.insert(anchor, v.clone());
                }
                pairs.push((key, Raw::Scalar(v, style == TScalarStyle::Plain)));
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(v) => pairs.push((key, Raw::Scalar(v.clone(), false))),
                None => warnings.push(format!("`{key}` refers to an alias of a structure; skipped")),
            },
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                let mut nested = false;
                loop {
                    match next()? {
                        Event::SequenceEnd => break,
                        Event::Scalar(v, ..) => items.push(v),
                        Event::Alias(id) => match anchors.get(&id) {
                            Some(v) => items.push(v.clone()),
                            None => nested = true,
                        },
                        Event::MappingStart(..) | Event::SequenceStart(..) => {
                            nested = true;
                            skip_nested(&mut next)?;
                        }
                        other => return Err(format!("unexpected {other:?} in a list")),
                    }
                }
                if nested {
                    warnings.push(format!(
                        "`{key}` holds nested values; skipped (frontmatter fields must be flat)"
                    ));
                } else {
                    pairs.push((key, Raw::List(items)));
                }
            }
            Event::MappingStart(..) => {
                skip_nested(&mut next)?;
                warnings.push(format!(
                    "`{key}` holds nested values; skipped (frontmatter fields must be flat)"
                ));
            }
            other => return Err(format!("unexpected {other:?} after key `{key}`")),
        }
    }
    Ok((pairs, warnings))
}

/// Consume events up to the end of the structure just opened.
fn skip_nested(next: &mut impl FnMut() -> Result<Event, String>) -> Result<(), String> {
    let mut depth = 1usize;
    while depth > 0 {
        match next()? {
            Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
            Event::MappingEnd | Event::SequenceEnd => depth -= 1,
            Event::StreamEnd => return Err("unterminated structure".into()),
            _ => {}
        }
    }
    Ok(())
}

fn skip_value(next: &mut impl FnMut() -> Result<Event, String>) -> Result<(), String> {
    match next()? {
        Event::MappingStart(..) | Event::SequenceStart(..) => skip_nested(next),
        _ => Ok(()),
    }
}

/// `Status Note` → `status_note`: keys become safe, predictable names.
fn normalise_key(k: &str) -> String {
    let mut s: String = k
        .trim()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    while s.contains("__") {
        s = s.replace("__", "_");
    }
    s.trim_matches('_').to_string()
}

fn map_fields(pairs: Pairs, out: &mut Parsed) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (key, raw) in pairs {
        let k = normalise_key(&key);
        if k.is_empty() {
            continue;
        }
        let target = match k.as_str() {
            "type" | "category" => "category".to_string(),
            "status" => "status".to_string(),
            "entity" | "org" | "company" => "entity".to_string(),
            "date" | "applied" => "event_date".to_string(),
            "tags" | "tag" => "tags".to_string(),
            "aliases" | "alias" => "aliases".to_string(),
            other => format!("x_{other}"),
        };
        *seen.entry(target.clone()).or_insert(0) += 1;
        if seen[&target] == 2 {
            out.warnings.push(format!(
                "`{key}` is given more than once (or through an alias key); the last one wins"
            ));
        }
        let value = match (target.as_str(), raw) {
            ("tags", Raw::List(items)) => tags_value(items.iter().map(String::as_str)),
            // `a, b c` splits on commas (inner spaces become `-`); without a
            // comma, Obsidian's `#a #b` / `a b` form splits on whitespace.
            ("tags", Raw::Scalar(s, _)) if s.contains(',') => tags_value(s.split(',')),
            ("tags", Raw::Scalar(s, _)) => tags_value(s.split_whitespace()),
            ("event_date", Raw::Scalar(s, _)) => Value::String(normalise_date(&s)),
            // Obsidian's `aliases` is a list; a plain string is one alias.
            ("aliases", Raw::List(items)) => aliases_value(items),
            ("aliases", Raw::Scalar(s, _)) => aliases_value(vec![s]),
            (_, Raw::Scalar(s, plain)) => scalar(&s, plain),
            (_, Raw::List(items)) => Value::String(items.join(", ")),
        };
        if value == Value::Null || value.as_str() == Some("") {
            continue;
        }
        out.fields.insert(target, value);
    }
}

/// Aliases as a JSON list of trimmed, non-empty, distinct strings (order
/// kept), or null if none.
fn aliases_value(items: Vec<String>) -> Value {
    let mut out: Vec<Value> = Vec::new();
    for a in items {
        let a = a.trim().to_string();
        if !a.is_empty() && !out.iter().any(|v| v.as_str() == Some(a.as_str())) {
            out.push(Value::String(a));
        }
    }
    if out.is_empty() {
        Value::Null
    } else {
        Value::Array(out)
    }
}

/// Tags from lists, comma strings or `#tag` forms → `|a|b|c|` (sorted,
/// deduplicated, without `#`, inner spaces kept as `-`), or null if none.
pub(crate) fn tags_value<'a>(items: impl Iterator<Item = &'a str>) -> Value {
    let mut tags: Vec<String> = items
        .map(|t| t.trim().trim_start_matches('#').trim().replace(' ', "-"))
        .filter(|t| !t.is_empty())
        .collect();
    tags.sort();
    tags.dedup();
    if tags.is_empty() {
        return Value::Null;
    }
    Value::String(format!("|{}|", tags.join("|")))
}

/// A plain scalar becomes a number or boolean when it reads as one; quoted
/// strings stay strings.
fn scalar(s: &str, plain: bool) -> Value {
    if plain {
        match s {
            "true" | "True" | "TRUE" => return Value::Bool(true),
            "false" | "False" | "FALSE" => return Value::Bool(false),
            "null" | "Null" | "NULL" | "~" => return Value::Null,
            _ => {}
        }
        if let Ok(i) = s.parse::<i64>() {
            return Value::from(i);
        }
        if let Ok(f) = s.parse::<f64>() {
            if f.is_finite() {
                return Value::from(f);
            }
        }
    }
    Value::String(s.to_string())
}

/// Dates in the forms people write → `YYYY-MM-DD`; anything else is kept
/// as written (a filter on it still works by exact match).
pub fn normalise_date(s: &str) -> String {
    let t = s.trim();
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let month_of = |w: &str| {
        let w = w.trim_end_matches('.').to_ascii_lowercase();
        months
            .iter()
            .position(|m| w.starts_with(m) && w.len() >= 3)
            .map(|i| i as u32 + 1)
    };
    let ymd = |y: i32, m: u32, d: u32| (1000..=9999).contains(&y) && (1..=12).contains(&m) && (1..=31).contains(&d);
    let fmt = |y: i32, m: u32, d: u32| format!("{y:04}-{m:02}-{d:02}");
    // 2024-01-05, 2024/01/05, 2024.01.05, optionally followed by a time.
    let date_part = t.split(['T', ' ']).next().unwrap_or(t);
    let nums: Vec<&str> = date_part.split(['-', '/', '.']).collect();
    if nums.len() == 3
        && nums
            .iter()
            .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    {
        let p: Vec<i64> = nums.iter().filter_map(|n| n.parse().ok()).collect();
        if p.len() == 3 {
            if nums[0].len() == 4 && ymd(p[0] as i32, p[1] as u32, p[2] as u32) {
                return fmt(p[0] as i32, p[1] as u32, p[2] as u32);
            }
            // 05.01.2024 / 05/01/2024: day first (the ISO-ish world reading).
            if nums[2].len() == 4 && ymd(p[2] as i32, p[1] as u32, p[0] as u32) {
                return fmt(p[2] as i32, p[1] as u32, p[0] as u32);
            }
        }
    }
    // "Jan 5, 2024", "January 5 2024", "5 January 2024".
    let words: Vec<&str> = t.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    if words.len() == 3 {
        let num = |w: &str| w.trim_end_matches(|c: char| c.is_alphabetic()).parse::<i64>().ok();
        if let (Some(m), Some(d), Some(y)) = (month_of(words[0]), num(words[1]), num(words[2])) {
            if ymd(y as i32, m, d as u32) {
                return fmt(y as i32, m, d as u32);
            }
        }
        if let (Some(d), Some(m), Some(y)) = (num(words[0]), month_of(words[1]), num(words[2])) {
            if ymd(y as i32, m, d as u32) {
                return fmt(y as i32, m, d as u32);
            }
        }
    }
    t.to_string()
}

/// `job_application · Acme Bio · rejected`: the embed header of every chunk
/// of a record, so a query about the record's kind, entity or outcome can
/// match text that never says those words.
pub fn record_header(fields: &BTreeMap<String, Value>) -> String {
    ["category", "entity", "status"]
        .iter()
        .filter_map(|k| fields.get(*k))
        .map(crate::kb::scalar_string)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests;
