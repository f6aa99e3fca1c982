//! The four read-only tools, as plain functions over an [`App`]: their
//! names, descriptions and JSON schemas (written for a model, not a
//! programmer), and [`call`], which runs one and returns its JSON result.
//!
//! Privacy is decided once, by the [`Scope`]: under [`Scope::PublicOnly`]
//! every search and listing runs with `visibility = public` in its
//! [`Filter`] — the same filter a cloud chat turn uses, applied inside the
//! index (no post-filtering) — so a private chunk is never scored, listed or
//! counted, and `get_document` refuses a private document by name, saying
//! which setting lifts that. Nothing here writes.

use serde_json::{json, Map, Value};

use crate::app::App;
use crate::doc_type::DocType;
use crate::index::{Filter, Visibility};
use crate::kb::search::{doc_key, SearchRequest};
use crate::kb::ChunkRecord;

/// Default and largest `n` of a search.
const DEFAULT_N: u64 = 8;
const MAX_N: u64 = 50;
/// Default and largest `limit` of a listing.
const DEFAULT_LIMIT: u64 = 50;
const MAX_LIMIT: u64 = 500;

/// Which documents an MCP client may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Public documents only (the default: a client is treated as cloud).
    PublicOnly,
    /// Everything, private notes included (`[mcp] include_private = true`).
    IncludePrivate,
}

impl Scope {
    pub fn from_include_private(include_private: bool) -> Self {
        if include_private {
            Scope::IncludePrivate
        } else {
            Scope::PublicOnly
        }
    }

    /// The visibility every filter of this scope carries.
    fn visibility(self) -> Option<Visibility> {
        match self {
            Scope::PublicOnly => Some(Visibility::Public),
            Scope::IncludePrivate => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Scope::PublicOnly => "public documents only",
            Scope::IncludePrivate => "all documents, private notes included",
        }
    }
}

/// A tool call that did not produce a result: the message is for the
/// calling model (and its user), naming what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolError {
    pub message: String,
}

impl ToolError {
    fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One tool as advertised to clients.
#[derive(Debug, Clone)]
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The input JSON Schema (an object schema).
    pub input_schema: Value,
}

fn record_filter_properties() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "category".into(),
        json!({"type": "string", "description": "Only notes whose frontmatter `type:`/`category:` is exactly this (e.g. \"company\", \"meeting\")."}),
    );
    m.insert(
        "status".into(),
        json!({"type": "string", "description": "Only notes whose frontmatter `status:` is exactly this (e.g. \"applied\", \"rejected\")."}),
    );
    m.insert(
        "entity".into(),
        json!({"type": "string", "description": "Only notes about this entity (frontmatter `entity:`, an organisation or person), exact match."}),
    );
    m.insert(
        "tags".into(),
        json!({"type": "array", "items": {"type": "string"}, "description": "Only documents carrying ALL of these tags (exact, without '#')."}),
    );
    m.insert(
        "fields".into(),
        json!({"type": "object", "additionalProperties": {"type": "string"}, "description": "Other frontmatter fields that must equal the given values, e.g. {\"company\": \"Acme\"}."}),
    );
    m
}

fn kinds_property() -> Value {
    json!({
        "type": "array",
        "items": {"type": "string", "enum": ["notes", "papers", "chats", "all"]},
        "description": "Which documents: \"notes\" (the user's Markdown vault notes and records), \"papers\" (papers and paper digests), \"chats\" (earlier assistant conversations), \"all\". Default: notes and papers."
    })
}

/// The tool list, in the order clients show it.
pub fn definitions() -> Vec<ToolDef> {
    let mut search_props = Map::new();
    search_props.insert(
        "query".into(),
        json!({"type": "string", "description": "What to look for, in natural language or keywords. Hybrid search: meaning (embeddings) and exact words (BM25) both count; a document's exact title also matches."}),
    );
    search_props.insert("kinds".into(), kinds_property());
    search_props.extend(record_filter_properties());
    search_props.insert(
        "n".into(),
        json!({"type": "integer", "minimum": 1, "maximum": MAX_N, "description": format!("How many results (default {DEFAULT_N}).")}),
    );
    search_props.insert(
        "group_by_document".into(),
        json!({"type": "boolean", "description": "true: one result per document (its best passage, plus how many more passages matched). false (default): the best passages, several may come from one document."}),
    );

    let mut list_props = Map::new();
    list_props.insert("kinds".into(), kinds_property());
    list_props.extend(record_filter_properties());
    list_props.insert(
        "limit".into(),
        json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("How many documents at most (default {DEFAULT_LIMIT}), newest first.")}),
    );

    vec![
        ToolDef {
            name: "search",
            title: "Search the knowledge base",
            description: "Search the user's personal knowledge base (Markdown notes, papers, digests, past chats) and return the best matching passages, numbered `n` from 1 in each call as Jarvis's own chat numbers them: when a sentence of your answer rests on a passage, end it with [n] and list each cited `n` with its `title` and `cite`. Each result has `cite` — the note's vault path or the paper's source URL — to cite it and to pass to get_document for the full text. Use filters to narrow by record fields from note frontmatter.",
            input_schema: object_schema(search_props, &["query"]),
        },
        ToolDef {
            name: "get_document",
            title: "Read one document",
            description: "Read one document of the knowledge base in full, 15 passages per page, in reading order, each numbered `n` by its place in the document (cite one as [n] with the document's `cite`). Name it by `cite` from a search or list_documents result: a note's vault path (e.g. \"Projects/Plan.md\") or a paper's source (e.g. \"https://arxiv.org/abs/2301.01234\"). Returns `next_page` while there is more.",
            input_schema: object_schema(
                Map::from_iter([
                    (
                        "source".to_string(),
                        json!({"type": "string", "description": "The document: a note's vault path or a paper's source — the `cite` value of a search or list_documents result."}),
                    ),
                    (
                        "page".to_string(),
                        json!({"type": "integer", "minimum": 1, "description": "Which page of passages (1-based, default 1)."}),
                    ),
                ]),
                &["source"],
            ),
        },
        ToolDef {
            name: "list_documents",
            title: "List documents",
            description: "List documents in the knowledge base, newest first, optionally narrowed by kind and record filters (e.g. all notes with category \"company\" and status \"applied\"). Each row has `cite` for get_document.",
            input_schema: object_schema(list_props, &[]),
        },
        ToolDef {
            name: "kb_stats",
            title: "Knowledge base statistics",
            description: "Counts of what the knowledge base holds that this client can see: documents and passages by kind, record categories and statuses. Useful to learn which filters exist before searching.",
            input_schema: object_schema(Map::new(), &[]),
        },
    ]
}

fn object_schema(props: Map<String, Value>, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

/// Run one tool. Blocking (it searches and reads the store): call it off
/// the async runtime.
pub fn call(app: &App, scope: Scope, name: &str, args: &Map<String, Value>) -> Result<Value, ToolError> {
    let def = definitions().into_iter().find(|d| d.name == name).ok_or_else(|| {
        ToolError::new(format!(
            "no tool named `{name}` — the tools are search, get_document, list_documents and kb_stats"
        ))
    })?;
    let known: Vec<&str> = def.input_schema["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if let Some(k) = args.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(ToolError::new(format!(
            "{name} has no argument `{k}` — it takes: {}",
            if known.is_empty() {
                "no arguments".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    let a = Args(args);
    match name {
        "search" => search(app, scope, &a),
        "get_document" => get_document(app, scope, &a),
        "list_documents" => list_documents(app, scope, &a),
        _ => kb_stats(app, scope),
    }
}

struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn opt_str(&self, k: &str) -> Result<Option<String>, ToolError> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(ToolError::new(format!("`{k}` must be a string"))),
        }
    }

    fn req_str(&self, k: &str) -> Result<String, ToolError> {
        self.opt_str(k)?
            .ok_or_else(|| ToolError::new(format!("`{k}` is required (a non-empty string)")))
    }

    fn opt_u64(&self, k: &str, min: u64, max: u64) -> Result<Option<u64>, ToolError> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(ToolError::new(format!(
                    "`{k}` must be a whole number from {min} to {max}"
                ))),
            },
        }
    }

    fn opt_bool(&self, k: &str) -> Result<Option<bool>, ToolError> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(ToolError::new(format!("`{k}` must be true or false"))),
        }
    }

    fn str_list(&self, k: &str) -> Result<Vec<String>, ToolError> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(Vec::new()),
            // A model often sends one value where a list is asked for.
            Some(Value::String(s)) => Ok(vec![s.trim().trim_start_matches('#').to_string()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(|s| s.trim().trim_start_matches('#').to_string())
                        .ok_or_else(|| ToolError::new(format!("`{k}` must be a list of strings")))
                })
                .collect(),
            Some(_) => Err(ToolError::new(format!("`{k}` must be a list of strings"))),
        }
    }

    fn fields(&self) -> Result<Vec<(String, String)>, ToolError> {
        match self.0.get("fields") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    let k = k.trim();
                    if k.is_empty() || k == "x_" {
                        return Err(ToolError::new("`fields` has an empty key"));
                    }
                    let v = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => return Err(ToolError::new(format!("`fields.{k}` must be a string"))),
                    };
                    // Stored with the `x_` prefix; accept it either way.
                    let key = if k.starts_with("x_") {
                        k.to_string()
                    } else {
                        format!("x_{k}")
                    };
                    Ok((key, v))
                })
                .collect(),
            Some(_) => Err(ToolError::new("`fields` must be an object of field → value")),
        }
    }

    fn doc_types(&self) -> Result<Vec<String>, ToolError> {
        use crate::doc_type::DocKind;
        DocKind::filter_types(&self.str_list("kinds")?, &[DocKind::Notes, DocKind::Papers])
            .map_err(|e| ToolError::new(e.to_string()))
    }

    /// The filter of a search or listing, with the scope's visibility.
    fn filter(&self, scope: Scope) -> Result<Filter, ToolError> {
        Ok(Filter {
            visibility: scope.visibility(),
            doc_types: self.doc_types()?,
            category: self.opt_str("category")?,
            status: self.opt_str("status")?,
            entity: self.opt_str("entity")?,
            tags: self.str_list("tags")?,
            fields: self.fields()?,
            ..Filter::default()
        })
    }
}

fn failed(e: impl std::fmt::Display) -> ToolError {
    ToolError::new(e.to_string())
}

/// The citation fields of a chunk: `cite` (the document key), the note path
/// or the paper source, and the identifying metadata.
fn describe(rec: &ChunkRecord, out: &mut Map<String, Value>) {
    let m = |k: &str| rec.meta_str(k).filter(|v| !v.is_empty());
    let doc_type = m("doc_type").unwrap_or("document");
    out.insert("cite".into(), json!(doc_key(rec)));
    out.insert("doc_type".into(), json!(doc_type));
    out.insert("title".into(), json!(m("title").unwrap_or("(untitled)")));
    if DocType::Note.is(doc_type) {
        if let Some(p) = m("file_path") {
            out.insert("path".into(), json!(p));
        }
    } else if let Some(s) = m("source") {
        out.insert("source".into(), json!(s));
    }
    for k in ["authors", "category", "status", "entity", "event_date", "date_added"] {
        if let Some(v) = m(k) {
            out.insert(k.into(), json!(v));
        }
    }
    if let Some(t) = m("tags") {
        let tags = crate::kb::split_tags(t);
        if !tags.is_empty() {
            out.insert("tags".into(), json!(tags));
        }
    }
    out.insert("visibility".into(), json!(rec.visibility().as_str()));
}

fn passage(rec: &ChunkRecord, out: &mut Map<String, Value>) {
    if let Some(s) = rec.meta_str("section").filter(|s| !s.is_empty()) {
        out.insert("section".into(), json!(s));
    }
    if let Some(k) = rec.meta_str("annotation_kind") {
        out.insert("annotation_kind".into(), json!(k));
    }
    if let Some(p) = rec.meta_i64("page") {
        out.insert("page".into(), json!(p));
    }
    out.insert("text".into(), json!(rec.text));
}

fn search(app: &App, scope: Scope, a: &Args<'_>) -> Result<Value, ToolError> {
    let query = a.req_str("query")?;
    let n = a.opt_u64("n", 1, MAX_N)?.unwrap_or(DEFAULT_N) as usize;
    let grouped = a.opt_bool("group_by_document")?.unwrap_or(false);
    let mut req = SearchRequest::new(query.clone(), n);
    req.filter = a.filter(scope)?;
    let mut results = Vec::new();
    if grouped {
        for (i, d) in app.search_documents(&req).map_err(failed)?.into_iter().enumerate() {
            let mut r = Map::new();
            r.insert("n".into(), json!(i + 1));
            r.insert("rank".into(), json!(i + 1));
            describe(&d.best.record, &mut r);
            passage(&d.best.record, &mut r);
            r.insert("more_passages".into(), json!(d.more));
            r.insert("score".into(), json!(d.score));
            results.push(Value::Object(r));
        }
    } else {
        for (i, h) in app.search(&req).map_err(failed)?.into_iter().enumerate() {
            let mut r = Map::new();
            r.insert("n".into(), json!(i + 1));
            r.insert("rank".into(), json!(i + 1));
            describe(&h.record, &mut r);
            passage(&h.record, &mut r);
            r.insert("score".into(), json!(h.score));
            results.push(Value::Object(r));
        }
    }
    Ok(json!({
        "query": query,
        "scope": scope.describe(),
        "grouped_by_document": grouped,
        "results": results,
    }))
}

fn get_document(app: &App, scope: Scope, a: &Args<'_>) -> Result<Value, ToolError> {
    let key = a.req_str("source")?;
    let page = a.opt_u64("page", 1, u64::from(u32::MAX))?.unwrap_or(1) as usize;
    let (doc, chunks, private) = app.read_document(&key, page).map_err(|e| {
        use crate::error_kind::ErrorKind;
        match e.kind() {
            // The store's own wording counts every document, private ones
            // included (a shared source names how many share it): say only
            // what this client may know.
            ErrorKind::User | ErrorKind::NotFound => ToolError::new(format!(
                "no single document has the source or path {key:?} — pass the `cite` value of a search or list_documents result"
            )),
            _ => ToolError::new(format!("cannot open {key:?}: {e}")),
        }
    })?;
    if private && scope == Scope::PublicOnly {
        return Err(ToolError::new(format!(
            "{key:?} is a private document, and this MCP server shares public documents only. \
             To let MCP clients read private notes, the user can set `include_private = true` under `[mcp]` \
             in Jarvis's config.toml (`jarvis config set mcp.include_private true`) and restart the MCP server."
        )));
    }
    let mut out = Map::new();
    match chunks
        .chunks
        .iter()
        .find(|c| c.meta_str("annotation_kind").is_none())
        .or(chunks.chunks.first())
    {
        Some(first) => describe(first, &mut out),
        None => {
            out.insert("cite".into(), json!(doc.key));
            out.insert("title".into(), json!(doc.title));
            out.insert("doc_type".into(), json!(doc.doc_type));
        }
    }
    out.remove("date_added");
    // Numbered by position in the document, so a passage keeps its number
    // whichever page of it a client reads.
    let first = chunks.page.saturating_sub(1) * crate::kb::ops::PAGE_SIZE;
    let passages: Vec<Value> = chunks
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut p = Map::new();
            p.insert("n".into(), json!(first + i + 1));
            passage(c, &mut p);
            Value::Object(p)
        })
        .collect();
    out.insert("page".into(), json!(chunks.page));
    out.insert("pages".into(), json!(chunks.pages));
    out.insert("total_passages".into(), json!(chunks.total_chunks));
    out.insert(
        "next_page".into(),
        if chunks.page < chunks.pages {
            json!(chunks.page + 1)
        } else {
            Value::Null
        },
    );
    out.insert("passages".into(), Value::Array(passages));
    Ok(Value::Object(out))
}

fn list_documents(app: &App, scope: Scope, a: &Args<'_>) -> Result<Value, ToolError> {
    let limit = a.opt_u64("limit", 1, MAX_LIMIT)?.unwrap_or(DEFAULT_LIMIT) as usize;
    let filter = a.filter(scope)?;
    let docs = app.list(&filter, usize::MAX).map_err(failed)?;
    let total = docs.len();
    let rows: Vec<Value> = docs
        .into_iter()
        .take(limit)
        .map(|d| {
            let mut r = Map::new();
            r.insert("cite".into(), json!(d.key));
            r.insert("doc_type".into(), json!(d.doc_type));
            r.insert(
                "title".into(),
                json!(if d.title.is_empty() {
                    "(untitled)"
                } else {
                    d.title.as_str()
                }),
            );
            if DocType::Note.is(&d.doc_type) {
                if let Some(p) = &d.file_path {
                    r.insert("path".into(), json!(p));
                }
            } else if !d.source.is_empty() {
                r.insert("source".into(), json!(d.source));
            }
            for k in ["authors", "category", "status", "entity"] {
                if let Some(v) = d.meta.get(k).map(crate::kb::scalar_string).filter(|v| !v.is_empty()) {
                    r.insert(k.into(), json!(v));
                }
            }
            if let Some(t) = d.meta.get("tags").map(crate::kb::scalar_string) {
                let tags = crate::kb::split_tags(&t);
                if !tags.is_empty() {
                    r.insert("tags".into(), json!(tags));
                }
            }
            r.insert("passages".into(), json!(d.chunks));
            r.insert("date_added".into(), json!(d.date_added));
            r.insert("visibility".into(), json!(d.visibility.as_str()));
            Value::Object(r)
        })
        .collect();
    Ok(json!({
        "scope": scope.describe(),
        "total": total,
        "shown": rows.len(),
        "documents": rows,
    }))
}

fn kb_stats(app: &App, scope: Scope) -> Result<Value, ToolError> {
    let filter = Filter {
        visibility: scope.visibility(),
        ..Filter::default()
    };
    let docs = app.list(&filter, usize::MAX).map_err(failed)?;
    let mut by_type: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let mut categories: std::collections::BTreeMap<String, usize> = Default::default();
    let mut statuses: std::collections::BTreeMap<String, usize> = Default::default();
    let mut passages = 0;
    for d in &docs {
        let e = by_type.entry(d.doc_type.clone()).or_default();
        e.0 += 1;
        e.1 += d.chunks;
        passages += d.chunks;
        if let Some(c) = d.meta.get("category") {
            *categories.entry(crate::kb::scalar_string(c)).or_default() += 1;
        }
        if let Some(s) = d.meta.get("status") {
            *statuses.entry(crate::kb::scalar_string(s)).or_default() += 1;
        }
    }
    let by_type: Map<String, Value> = by_type
        .into_iter()
        .map(|(k, (docs, chunks))| (k, json!({"documents": docs, "passages": chunks})))
        .collect();
    Ok(json!({
        "scope": scope.describe(),
        "documents": docs.len(),
        "passages": passages,
        "by_kind": by_type,
        "categories": categories,
        "statuses": statuses,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_with_described_properties() {
        for d in definitions() {
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
            assert_eq!(d.input_schema["additionalProperties"], false, "{}", d.name);
            for (k, p) in d.input_schema["properties"].as_object().unwrap() {
                assert!(
                    p["description"].as_str().is_some_and(|s| s.len() > 10),
                    "{}.{k}",
                    d.name
                );
            }
        }
        let names: Vec<_> = definitions().iter().map(|d| d.name).collect();
        assert_eq!(names, ["search", "get_document", "list_documents", "kb_stats"]);
    }

    #[test]
    fn the_default_scope_filters_by_construction() {
        let m = Map::new();
        let f = Args(&m).filter(Scope::PublicOnly).unwrap();
        assert_eq!(f.visibility, Some(Visibility::Public));
        assert_eq!(f.doc_types, ["note", "paper", "digest"]);
        assert_eq!(Args(&m).filter(Scope::IncludePrivate).unwrap().visibility, None);
    }

    #[test]
    fn bad_arguments_are_explained() {
        let m: Map<String, Value> = serde_json::from_str(r#"{"kinds": ["movies"]}"#).unwrap();
        assert!(Args(&m)
            .doc_types()
            .unwrap_err()
            .message
            .contains("notes, papers, chats or all"));
        let m: Map<String, Value> = serde_json::from_str(r##"{"fields": {"company": "Acme"}, "tags": "#a"}"##).unwrap();
        let a = Args(&m);
        assert_eq!(a.fields().unwrap(), [("x_company".to_string(), "Acme".to_string())]);
        assert_eq!(a.str_list("tags").unwrap(), ["a"]);
        let m: Map<String, Value> = serde_json::from_str(r#"{"n": 0}"#).unwrap();
        assert!(Args(&m).opt_u64("n", 1, MAX_N).is_err());
    }
}
