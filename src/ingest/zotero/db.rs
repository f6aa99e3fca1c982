//! Zotero's own database, read from a copy — the only module that knows
//! SQLite (rusqlite).
//!
//! Owns: taking a consistent copy of `zotero.sqlite` (and its `-wal`, when
//! there is one) into a private temporary folder — taken again while the
//! files change under it, refused when they keep changing —, opening the
//! copy read-only (`query_only`, and `trusted_schema = OFF`, so a view or
//! trigger in a hostile file cannot call a function with side effects),
//! and reading the tables the import uses (`items`, `itemTypes`, `fields`,
//! `itemData`, `itemDataValues`, `creators`, `creatorTypes`,
//! `itemCreators`, `collections`, `collectionItems`, `tags`, `itemTags`,
//! `itemAttachments`, `itemNotes`, `itemAnnotations`, `deletedItems`,
//! `libraries`, `groups`; the column names are Zotero's own) into
//! [`RawItem`]s.
//! Must not: open the live file (Zotero holds it with an exclusive lock and
//! writes it in place), write anything anywhere but the temporary folder
//! (removed when reading ends), or read attachments (`attach.rs` resolves
//! their paths later).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, Row};

use super::attach::AttachmentAt;
use super::item::{Creator, RawAttachment, RawItem};
use super::{Skipped, ZoteroError};
use crate::ingest::paper::library::annotation;
use crate::pdf::{Annotation, AnnotationKind};

/// Copies taken before giving up on a database that keeps changing.
const COPY_ATTEMPTS: u32 = 4;

/// Tables without which a file is not a Zotero database.
const REQUIRED: &[&str] = &[
    "items",
    "itemTypes",
    "fields",
    "itemData",
    "itemDataValues",
    "libraries",
];

/// What the database holds, as raw items, and what is not imported (a
/// standalone note, an attachment that is not a PDF) with the reason.
pub(crate) fn read(db: &Path) -> Result<(Vec<RawItem>, Vec<Skipped>), ZoteroError> {
    let copy = take_copy(db)?;
    let sql = |e: rusqlite::Error| ZoteroError::Database {
        path: db.to_path_buf(),
        message: e.to_string(),
    };
    let conn = Connection::open_with_flags(
        &copy.db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    conn.execute_batch("PRAGMA trusted_schema = OFF; PRAGMA query_only = ON;")
        .map_err(sql)?;
    let tables: HashSet<String> = rows(
        &conn,
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')",
        |r| r.get(0),
    )
    .map_err(sql)?
    .into_iter()
    .collect();
    let missing: Vec<&str> = REQUIRED.iter().copied().filter(|t| !tables.contains(*t)).collect();
    if !missing.is_empty() {
        return Err(ZoteroError::NotZotero {
            path: db.to_path_buf(),
            missing: missing.join(", "),
        });
    }
    Reader { conn: &conn, tables }.items().map_err(sql)
    // `copy` (the temporary folder) is removed here.
}

/// The temporary copy; its folder goes when this drops.
struct Copied {
    _dir: tempfile::TempDir,
    db: PathBuf,
}

fn stamp(p: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = std::fs::metadata(p).ok()?;
    Some((m.len(), m.modified().ok()?))
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Copy the database and its write-ahead log; a copy during which either
/// changed (Zotero wrote) is taken again, a little later.
fn take_copy(db: &Path) -> Result<Copied, ZoteroError> {
    let wal = with_suffix(db, "-wal");
    for attempt in 0..COPY_ATTEMPTS {
        let before = (stamp(db), stamp(&wal));
        let dir = tempfile::Builder::new()
            .prefix("jarvis-zotero-")
            .tempdir()
            .map_err(|source| ZoteroError::Copy { source })?;
        let copy = dir.path().join("zotero.sqlite");
        std::fs::copy(db, &copy).map_err(|source| ZoteroError::Read {
            path: db.to_path_buf(),
            source,
        })?;
        let wal_copied = match before.1 {
            Some(_) => std::fs::copy(&wal, with_suffix(&copy, "-wal")).is_ok(),
            None => true,
        };
        if wal_copied && before == (stamp(db), stamp(&wal)) {
            return Ok(Copied { _dir: dir, db: copy });
        }
        std::thread::sleep(Duration::from_millis(250 * u64::from(attempt + 1)));
    }
    Err(ZoteroError::Busy { path: db.to_path_buf() })
}

fn rows<T>(conn: &Connection, sql: &str, f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>) -> rusqlite::Result<Vec<T>> {
    let mut stmt = conn.prepare(sql)?;
    let out = stmt.query_map([], f)?.collect();
    out
}

/// A cell as text: Zotero's values are text, but SQLite keeps numbers it
/// was given as numbers.
fn text(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match r.get_ref(i)? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(x) => Some(x.to_string()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    })
}

struct Reader<'a> {
    conn: &'a Connection,
    tables: HashSet<String>,
}

/// An attachment row: its item, parent, how it is linked, type and path.
struct AttachmentRow {
    item: i64,
    parent: Option<i64>,
    at: AttachmentAt,
    content_type: String,
}

impl Reader<'_> {
    fn has(&self, table: &str) -> bool {
        self.tables.contains(table)
    }

    fn items(&self) -> rusqlite::Result<(Vec<RawItem>, Vec<Skipped>)> {
        let trashed: HashSet<i64> = if self.has("deletedItems") {
            rows(self.conn, "SELECT itemID FROM deletedItems", |r| r.get(0))?
                .into_iter()
                .collect()
        } else {
            HashSet::new()
        };
        let group_col = if self.has("groups") {
            "(SELECT g.groupID FROM groups g WHERE g.libraryID = l.libraryID)"
        } else {
            "NULL"
        };
        let libraries: HashMap<i64, (String, Option<i64>)> = rows(
            self.conn,
            &format!("SELECT l.libraryID, l.type, {group_col} FROM libraries l"),
            |r| Ok((r.get::<_, i64>(0)?, (text(r, 1)?.unwrap_or_default(), r.get(2)?))),
        )?
        .into_iter()
        .collect();
        let mut fields = self.fields()?;
        let mut creators = self.creators()?;
        let mut collections = self.collections()?;
        let mut tags = self.tags()?;
        let mut notes = self.notes(&trashed)?;
        let mut annotations = self.annotations(&trashed)?;
        let attachments = self.attachments(&trashed)?;
        let mut by_parent: HashMap<i64, Vec<RawAttachment>> = HashMap::new();
        let mut standalone: HashMap<i64, RawAttachment> = HashMap::new();
        for a in attachments {
            let raw = RawAttachment {
                at: a.at,
                content_type: a.content_type,
                annotations: annotations.remove(&a.item).unwrap_or_default(),
            };
            match a.parent {
                Some(p) => by_parent.entry(p).or_default().push(raw),
                None => {
                    standalone.insert(a.item, raw);
                }
            }
        }

        let list = rows(
            self.conn,
            "SELECT i.itemID, i.libraryID, i.key, t.typeName FROM items i \
             JOIN itemTypes t ON t.itemTypeID = i.itemTypeID ORDER BY i.itemID",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    text(r, 2)?.unwrap_or_default(),
                    text(r, 3)?.unwrap_or_default(),
                ))
            },
        )?;
        let mut items = Vec::new();
        let mut skipped = Vec::new();
        for (id, library, key, item_type) in list {
            let (lib_type, group) = libraries.get(&library).cloned().unwrap_or_default();
            // Feeds are subscriptions, not the user's library.
            if lib_type == "feed" {
                continue;
            }
            let item_fields = fields.remove(&id).unwrap_or_default();
            let attachments = match item_type.as_str() {
                // Children of another item come with it.
                "annotation" => continue,
                "note" if trashed.contains(&id) => continue,
                "note" => {
                    // A note with a parent came with that parent (the
                    // notes query took it); only a standalone one is here.
                    if let Some(text) = notes.standalone.remove(&id) {
                        skipped.push(Skipped {
                            key: key.clone(),
                            title: text.lines().next().unwrap_or("").chars().take(80).collect(),
                            reason: "a standalone note, not attached to a paper".into(),
                        });
                    }
                    continue;
                }
                "attachment" => match standalone.remove(&id) {
                    Some(a) => vec![a],
                    None => continue,
                },
                _ => by_parent.remove(&id).unwrap_or_default(),
            };
            items.push(RawItem {
                source: source_of(&lib_type, group, library, &key),
                key: key.clone(),
                item_type,
                fields: item_fields,
                creators: creators.remove(&id).unwrap_or_default(),
                collections: collections.remove(&id).unwrap_or_default(),
                tags: tags.remove(&id).unwrap_or_default(),
                notes: notes.by_parent.remove(&id).unwrap_or_default(),
                attachments,
                trashed: trashed.contains(&id),
                zotero_key: Some(key),
                zotero_library: Some(library),
            });
        }
        Ok((items, skipped))
    }

    /// itemID → field name → value.
    fn fields(&self) -> rusqlite::Result<HashMap<i64, BTreeMap<String, String>>> {
        let mut out: HashMap<i64, BTreeMap<String, String>> = HashMap::new();
        for (id, name, value) in rows(
            self.conn,
            "SELECT d.itemID, f.fieldName, v.value FROM itemData d \
             JOIN fields f ON f.fieldID = d.fieldID JOIN itemDataValues v ON v.valueID = d.valueID",
            |r| Ok((r.get::<_, i64>(0)?, text(r, 1)?, text(r, 2)?)),
        )? {
            if let (Some(n), Some(v)) = (name, value) {
                out.entry(id).or_default().insert(n, v);
            }
        }
        Ok(out)
    }

    fn creators(&self) -> rusqlite::Result<HashMap<i64, Vec<Creator>>> {
        let mut out: HashMap<i64, Vec<Creator>> = HashMap::new();
        if !(self.has("creators") && self.has("itemCreators")) {
            return Ok(out);
        }
        let kind = if self.has("creatorTypes") {
            "(SELECT ct.creatorType FROM creatorTypes ct WHERE ct.creatorTypeID = ic.creatorTypeID)"
        } else {
            "''"
        };
        let sql = format!(
            "SELECT ic.itemID, c.firstName, c.lastName, {kind} FROM itemCreators ic \
             JOIN creators c ON c.creatorID = ic.creatorID ORDER BY ic.itemID, ic.orderIndex"
        );
        for (id, first, last, kind) in rows(self.conn, &sql, |r| {
            Ok((r.get::<_, i64>(0)?, text(r, 1)?, text(r, 2)?, text(r, 3)?))
        })? {
            out.entry(id).or_default().push(Creator {
                first: first.unwrap_or_default(),
                last: last.unwrap_or_default(),
                kind: kind.unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// itemID → its collections' paths (`Parent/Child`).
    fn collections(&self) -> rusqlite::Result<HashMap<i64, Vec<String>>> {
        let mut out: HashMap<i64, Vec<String>> = HashMap::new();
        if !(self.has("collections") && self.has("collectionItems")) {
            return Ok(out);
        }
        let gone: HashSet<i64> = if self.has("deletedCollections") {
            rows(self.conn, "SELECT collectionID FROM deletedCollections", |r| r.get(0))?
                .into_iter()
                .collect()
        } else {
            HashSet::new()
        };
        let all: HashMap<i64, (String, Option<i64>)> = rows(
            self.conn,
            "SELECT collectionID, collectionName, parentCollectionID FROM collections",
            |r| Ok((r.get::<_, i64>(0)?, (text(r, 1)?.unwrap_or_default(), r.get(2)?))),
        )?
        .into_iter()
        .collect();
        let path = |mut id: i64| -> Option<String> {
            let mut names = Vec::new();
            // A parent chain longer than this is a loop in a damaged file.
            for _ in 0..64 {
                if gone.contains(&id) {
                    return None;
                }
                let (name, parent) = all.get(&id)?;
                names.push(name.replace('/', "-"));
                match parent {
                    Some(p) => id = *p,
                    None => {
                        names.reverse();
                        return Some(names.join("/"));
                    }
                }
            }
            None
        };
        for (item, collection) in rows(
            self.conn,
            "SELECT itemID, collectionID FROM collectionItems ORDER BY itemID, collectionID",
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )? {
            if let Some(p) = path(collection) {
                out.entry(item).or_default().push(p);
            }
        }
        Ok(out)
    }

    /// itemID → its tags the user gave (Zotero's type 0; type 1 are the
    /// publisher's keywords Zotero added by itself).
    fn tags(&self) -> rusqlite::Result<HashMap<i64, Vec<String>>> {
        let mut out: HashMap<i64, Vec<String>> = HashMap::new();
        if !(self.has("tags") && self.has("itemTags")) {
            return Ok(out);
        }
        for (id, name) in rows(
            self.conn,
            "SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID WHERE it.type = 0",
            |r| Ok((r.get::<_, i64>(0)?, text(r, 1)?)),
        )? {
            if let Some(n) = name {
                out.entry(id).or_default().push(n);
            }
        }
        Ok(out)
    }

    fn notes(&self, trashed: &HashSet<i64>) -> rusqlite::Result<Notes> {
        let mut out = Notes::default();
        if !self.has("itemNotes") {
            return Ok(out);
        }
        // Attachments keep a note of their own in the same table: only
        // items of type `note` are notes.
        for (id, parent, html) in rows(
            self.conn,
            "SELECT n.itemID, n.parentItemID, n.note FROM itemNotes n \
             JOIN items i ON i.itemID = n.itemID JOIN itemTypes t ON t.itemTypeID = i.itemTypeID \
             WHERE t.typeName = 'note' ORDER BY n.itemID",
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?, text(r, 2)?)),
        )? {
            if trashed.contains(&id) {
                continue;
            }
            let text = super::note::html_to_text(&html.unwrap_or_default());
            if text.is_empty() {
                continue;
            }
            match parent {
                Some(p) => out.by_parent.entry(p).or_default().push(text),
                None => {
                    out.standalone.insert(id, text);
                }
            }
        }
        Ok(out)
    }

    /// Attachment itemID → its annotations, in reading order. Those Zotero
    /// imported from the PDF itself (`isExternal`) are left to the PDF's
    /// own reading.
    fn annotations(&self, trashed: &HashSet<i64>) -> rusqlite::Result<HashMap<i64, Vec<Annotation>>> {
        let mut out: HashMap<i64, Vec<Annotation>> = HashMap::new();
        if !self.has("itemAnnotations") {
            return Ok(out);
        }
        let rows = rows(
            self.conn,
            "SELECT itemID, parentItemID, type, text, comment, pageLabel, position, isExternal \
             FROM itemAnnotations ORDER BY parentItemID, sortIndex",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    text(r, 3)?.unwrap_or_default(),
                    text(r, 4)?.unwrap_or_default(),
                    text(r, 5)?,
                    text(r, 6)?,
                    r.get::<_, Option<i64>>(7)?.unwrap_or(0),
                ))
            },
        )?;
        for (id, parent, kind, words, comment, label, position, external) in rows {
            if trashed.contains(&id) || external != 0 {
                continue;
            }
            let page = page_of(position.as_deref(), label.as_deref());
            let (has_words, has_comment) = (!words.trim().is_empty(), !comment.trim().is_empty());
            let a = match kind {
                // Highlight, underline: marked words and the reader's comment.
                1 | 5 if has_words => annotation(AnnotationKind::Highlight, page, &words, &comment),
                // Note, text box: the reader's words.
                2 | 6 if has_words || has_comment => annotation(AnnotationKind::Comment, page, &words, &comment),
                // An image, an ink mark (or a highlight over no words): only
                // a comment on it is text.
                1 | 3 | 4 | 5 if has_comment => annotation(AnnotationKind::Comment, page, "", &comment),
                _ => continue,
            };
            out.entry(parent).or_default().push(a);
        }
        Ok(out)
    }

    fn attachments(&self, trashed: &HashSet<i64>) -> rusqlite::Result<Vec<AttachmentRow>> {
        if !self.has("itemAttachments") {
            return Ok(Vec::new());
        }
        let list = rows(
            self.conn,
            "SELECT a.itemID, a.parentItemID, a.linkMode, a.contentType, a.path, i.key \
             FROM itemAttachments a JOIN items i ON i.itemID = a.itemID ORDER BY a.itemID",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                    text(r, 3)?.unwrap_or_default(),
                    text(r, 4)?,
                    text(r, 5)?.unwrap_or_default(),
                ))
            },
        )?;
        Ok(list
            .into_iter()
            .filter(|row| !trashed.contains(&row.0))
            .map(|(item, parent, link_mode, content_type, path, key)| AttachmentRow {
                item,
                parent,
                at: attachment_at(link_mode.unwrap_or(0), path.as_deref(), &key),
                content_type,
            })
            .collect())
    }
}

#[derive(Default)]
struct Notes {
    by_parent: HashMap<i64, Vec<String>>,
    standalone: HashMap<i64, String>,
}

/// Zotero's link modes: 0 imported file, 1 imported web page, 2 linked
/// file, 3 linked URL, 4 embedded image.
fn attachment_at(link_mode: i64, path: Option<&str>, key: &str) -> AttachmentAt {
    let path = path.unwrap_or("");
    match link_mode {
        2 => match path.strip_prefix("attachments:") {
            Some(rel) => AttachmentAt::BaseRelative(rel.to_string()),
            None => AttachmentAt::Linked(path.to_string()),
        },
        3 => AttachmentAt::Web,
        _ => AttachmentAt::Stored {
            key: key.to_string(),
            name: path.strip_prefix("storage:").unwrap_or(path).to_string(),
        },
    }
}

/// The 1-based page: `position.pageIndex` (0-based) when present, else a
/// numeric page label, else 0 (unknown).
fn page_of(position: Option<&str>, label: Option<&str>) -> u32 {
    let from_position = position
        .and_then(|p| serde_json::from_str::<serde_json::Value>(p).ok())
        .and_then(|v| v.get("pageIndex").and_then(serde_json::Value::as_u64))
        .and_then(|i| u32::try_from(i + 1).ok());
    from_position
        .or_else(|| label.and_then(|l| l.trim().parse().ok()))
        .unwrap_or(0)
}

/// Zotero's own address for an item, so the stored source opens it there:
/// `zotero://select/library/items/KEY` in the user's library,
/// `zotero://select/groups/ID/items/KEY` in a group's.
fn source_of(library_type: &str, group: Option<i64>, library: i64, key: &str) -> String {
    match (library_type, group) {
        (_, Some(g)) => format!("zotero://select/groups/{g}/items/{key}"),
        ("user", None) => format!("zotero://select/library/items/{key}"),
        // A library the file does not describe: still one address per item.
        _ => format!("zotero://select/libraries/{library}/items/{key}"),
    }
}

#[cfg(test)]
mod tests;
