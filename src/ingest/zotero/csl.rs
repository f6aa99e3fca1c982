//! A CSL-JSON export (Zotero's "CSL JSON", Better BibTeX's, pandoc's): an
//! array of items, each read on its own — one that does not fit the shape
//! is skipped with serde's reason, the others still come in.
//!
//! Owns: the item shape (`id`, `type`, `title`, `author`/`editor` names,
//! `issued`, `container-title`, `DOI`, `URL`, `abstract`, `keyword`,
//! `note`), its mapping to Zotero's fields, and Zotero's item key when the
//! `id` is Zotero's item address (`…/items/ABCD2345`).
//! Must not: read any file but the one it is given; CSL-JSON carries no
//! attachments, so its items come in as metadata and abstract.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::item::{Creator, RawItem};
use super::Skipped;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CslItem {
    id: Value,
    #[serde(rename = "type")]
    kind: String,
    title: String,
    author: Vec<CslName>,
    editor: Vec<CslName>,
    issued: Value,
    #[serde(rename = "container-title")]
    container_title: Value,
    #[serde(rename = "DOI")]
    doi: String,
    #[serde(rename = "URL")]
    url: String,
    #[serde(rename = "abstract")]
    abstract_text: String,
    keyword: String,
    note: String,
    publisher: String,
    volume: Value,
    issue: Value,
    page: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CslName {
    family: String,
    given: String,
    literal: String,
}

/// A string, a number, or the first string of a list, as text.
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(a) => a.first().and_then(text_of),
        _ => None,
    }
    .filter(|s| !s.trim().is_empty())
}

/// The year of `issued`: `{"date-parts": [[2021, 7]]}` (numbers or
/// strings), `{"raw": "2021-07"}`, `{"literal": "…"}`, or a plain string.
fn year_text(issued: &Value) -> Option<String> {
    let parts = issued.get("date-parts").and_then(|p| p.get(0)).and_then(|p| p.get(0));
    parts
        .and_then(text_of)
        .or_else(|| issued.get("raw").and_then(text_of))
        .or_else(|| issued.get("literal").and_then(text_of))
        .or_else(|| text_of(issued))
}

/// CSL's types as Zotero's item types.
fn item_type(kind: &str) -> String {
    match kind {
        "article-journal" => "journalArticle",
        "paper-conference" => "conferencePaper",
        "chapter" => "bookSection",
        "article" => "preprint",
        "webpage" | "post-weblog" => "webpage",
        other => other,
    }
    .to_string()
}

/// The items of a CSL-JSON file and those that were not read; an error
/// when the file is not JSON or not a list of items at all.
pub(crate) fn read(src: &str, file: &Path) -> Result<(Vec<RawItem>, Vec<Skipped>), String> {
    let top: Value = serde_json::from_str(src).map_err(|e| format!("not JSON: {e}"))?;
    let list = match top {
        Value::Array(a) => a,
        // One item on its own, or `{"items": […]}`.
        Value::Object(mut o) => match o.remove("items") {
            Some(Value::Array(a)) => a,
            _ => vec![Value::Object(o)],
        },
        _ => return Err("not a list of CSL items".into()),
    };
    let mut items = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = HashSet::new();
    for (n, v) in list.into_iter().enumerate() {
        let label = v
            .get("id")
            .and_then(text_of)
            .unwrap_or_else(|| format!("item {}", n + 1));
        let item: CslItem = match serde_json::from_value(v) {
            Ok(i) => i,
            Err(e) => {
                skipped.push(Skipped {
                    key: label,
                    title: String::new(),
                    reason: format!("not a CSL item: {e}"),
                });
                continue;
            }
        };
        if !seen.insert(label.clone()) {
            skipped.push(Skipped {
                key: label,
                title: item.title,
                reason: "the id appears twice in the file; the first item was used".into(),
            });
            continue;
        }
        items.push(to_raw(item, &label, file));
    }
    Ok((items, skipped))
}

fn to_raw(c: CslItem, id: &str, file: &Path) -> RawItem {
    let mut fields = BTreeMap::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.trim().is_empty()) {
            fields.insert(k.to_string(), v.trim().to_string());
        }
    };
    put("title", Some(c.title));
    put("date", year_text(&c.issued));
    put("publicationTitle", text_of(&c.container_title));
    put("DOI", Some(c.doi));
    put("url", Some(c.url));
    put("abstractNote", Some(c.abstract_text));
    put("publisher", Some(c.publisher));
    put("volume", text_of(&c.volume));
    put("issue", text_of(&c.issue));
    put("pages", text_of(&c.page));
    // Zotero writes an item's Extra field (`arXiv: …`, `DOI: …`) to `note`.
    put("extra", Some(c.note));
    let creators = c
        .author
        .iter()
        .map(|n| (n, "author"))
        .chain(c.editor.iter().map(|n| (n, "editor")))
        .map(|(n, kind)| Creator {
            first: n.given.clone(),
            last: if n.family.is_empty() {
                n.literal.clone()
            } else {
                n.family.clone()
            },
            kind: kind.into(),
        })
        .collect();
    // Zotero's own export names each item by its address.
    let zotero_key = id
        .rsplit_once("/items/")
        .map(|(_, k)| k)
        .filter(|k| k.len() == 8 && k.chars().all(|c| c.is_ascii_alphanumeric()));
    RawItem {
        key: id.to_string(),
        source: format!("csl-json:{}#{id}", file.display()),
        item_type: item_type(&c.kind),
        fields,
        creators,
        tags: c
            .keyword
            .split([',', ';'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from)
            .collect(),
        zotero_key: zotero_key.map(String::from),
        ..RawItem::default()
    }
}
