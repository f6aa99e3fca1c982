//! Reading the answers of the scholarly metadata services into one shape:
//! Crossref's `/works/{doi}` message, Unpaywall's DOI object and a bioRxiv
//! / medRxiv details record.
//!
//! Owns: the field mapping (title, authors with family names kept apart
//! for citation keys, year, venue, abstract, the PDF links each service
//! declares) and the safe reading of Crossref's abstracts, which are JATS
//! XML inside a JSON string: tags are dropped (never interpreted), block
//! ends become paragraph breaks, entities are decoded once, and the
//! leading "Abstract" heading is dropped. Everything here is untrusted
//! text and leaves as plain text.
//! Must not: fetch anything or decide which PDF to use.

use serde_json::Value;

use super::arxiv::{parse_arxiv_url, ArxivId};

/// One author. `family` is empty for a name that came as one string.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Person {
    #[serde(default)]
    pub given: String,
    #[serde(default)]
    pub family: String,
}

impl Person {
    /// "Given Family", as the knowledge base's `authors` line shows it.
    pub fn display(&self) -> String {
        match (self.given.is_empty(), self.family.is_empty()) {
            (true, _) => self.family.clone(),
            (false, true) => self.given.clone(),
            (false, false) => format!("{} {}", self.given, self.family),
        }
    }
}

/// What the services say about a work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkMeta {
    pub doi: String,
    pub title: String,
    pub authors: Vec<Person>,
    pub year: Option<i32>,
    /// Journal, proceedings or preprint server.
    pub venue: Option<String>,
    pub abstract_text: Option<String>,
    /// Crossref's type (`journal-article`, `posted-content`, …).
    pub kind: Option<String>,
    pub publisher: Option<String>,
    pub volume: Option<String>,
    pub issue: Option<String>,
    pub pages: Option<String>,
    /// Links the publisher declares as the PDF (tried in order).
    pub pdf_links: Vec<String>,
}

impl WorkMeta {
    pub fn authors_line(&self) -> String {
        self.authors.iter().map(Person::display).collect::<Vec<_>>().join(", ")
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn str_at<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Crossref keeps many single values in arrays (`title`, `container-title`).
fn first_str(v: &Value, k: &str) -> Option<String> {
    match v.get(k) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(strip_markup)
            .find(|s| !s.is_empty()),
        Some(Value::String(s)) => Some(strip_markup(s)).filter(|s| !s.is_empty()),
        _ => None,
    }
}

fn year_of(v: &Value) -> Option<i32> {
    for k in [
        "issued",
        "published",
        "published-print",
        "published-online",
        "posted",
        "created",
    ] {
        let y = v
            .get(k)
            .and_then(|d| d.get("date-parts"))
            .and_then(|p| p.get(0))
            .and_then(|p| p.get(0))
            .and_then(|y| y.as_i64().or_else(|| y.as_str().and_then(|s| s.parse().ok())));
        if let Some(y) = y.filter(|y| (1000..=3000).contains(y)) {
            return Some(y as i32);
        }
    }
    None
}

/// Crossref's `/works/{doi}` answer (the whole envelope or its `message`).
pub fn parse_crossref(v: &Value) -> Option<WorkMeta> {
    let m = v.get("message").unwrap_or(v);
    let doi = str_at(m, "DOI")?.to_lowercase();
    let authors = m
        .get("author")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    let given = str_at(p, "given").map(squash).unwrap_or_default();
                    let family = str_at(p, "family").map(squash).unwrap_or_default();
                    let name = str_at(p, "name").map(squash).unwrap_or_default();
                    match (given.is_empty() && family.is_empty(), name.is_empty()) {
                        (false, _) => Some(Person { given, family }),
                        // An organisation as author: one name, kept whole.
                        (true, false) => Some(Person {
                            given: String::new(),
                            family: name,
                        }),
                        (true, true) => None,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let pdf_links = m
        .get("link")
        .and_then(Value::as_array)
        .map(|links| {
            links
                .iter()
                .filter(|l| str_at(l, "content-type").is_some_and(|c| c.eq_ignore_ascii_case("application/pdf")))
                .filter_map(|l| str_at(l, "URL").map(str::to_string))
                .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
                .collect()
        })
        .unwrap_or_default();
    let mut title = first_str(m, "title").unwrap_or_default();
    if let Some(sub) = first_str(m, "subtitle") {
        if !title.is_empty() && !title.to_lowercase().contains(&sub.to_lowercase()) {
            title = format!("{title}: {sub}");
        }
    }
    Some(WorkMeta {
        doi,
        title,
        authors,
        year: year_of(m),
        venue: first_str(m, "container-title").or_else(|| {
            m.get("institution")
                .and_then(|i| i.get(0))
                .and_then(|i| str_at(i, "name"))
                .map(squash)
        }),
        abstract_text: str_at(m, "abstract").map(jats_to_text).filter(|a| !a.is_empty()),
        kind: str_at(m, "type").map(str::to_string),
        publisher: str_at(m, "publisher").map(squash),
        volume: str_at(m, "volume").map(squash),
        issue: str_at(m, "issue").map(squash),
        pages: str_at(m, "page").map(squash),
        pdf_links,
    })
}

/// What Unpaywall adds: open-access PDF links (best first) and, when one of
/// its copies is on arXiv, that id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OaRecord {
    pub is_oa: bool,
    pub pdf_urls: Vec<String>,
    pub arxiv: Option<ArxivId>,
    /// Metadata Unpaywall carries, used only when Crossref has none.
    pub meta: WorkMeta,
}

pub fn parse_unpaywall(v: &Value) -> OaRecord {
    let mut rec = OaRecord {
        is_oa: v.get("is_oa").and_then(Value::as_bool).unwrap_or(false),
        ..OaRecord::default()
    };
    let mut locations: Vec<&Value> = Vec::new();
    if let Some(best) = v.get("best_oa_location").filter(|b| b.is_object()) {
        locations.push(best);
    }
    if let Some(all) = v.get("oa_locations").and_then(Value::as_array) {
        locations.extend(all.iter());
    }
    for loc in locations {
        if let Some(u) = str_at(loc, "url_for_pdf") {
            if (u.starts_with("https://") || u.starts_with("http://")) && !rec.pdf_urls.iter().any(|p| p == u) {
                rec.pdf_urls.push(u.to_string());
            }
        }
        if rec.arxiv.is_none() {
            let pmh = str_at(loc, "pmh_id").and_then(|p| p.strip_prefix("oai:arXiv.org:"));
            rec.arxiv = pmh
                .and_then(|id| parse_arxiv_url(id).ok())
                .or_else(|| {
                    ["url", "url_for_pdf", "url_for_landing_page"]
                        .iter()
                        .filter_map(|k| str_at(loc, k))
                        .filter(|u| u.contains("arxiv.org/"))
                        .find_map(|u| parse_arxiv_url(u).ok())
                })
                .map(|mut id| {
                    id.version = None;
                    id
                });
        }
    }
    rec.meta = WorkMeta {
        doi: str_at(v, "doi").map(str::to_lowercase).unwrap_or_default(),
        title: str_at(v, "title").map(strip_markup).unwrap_or_default(),
        authors: v
            .get("z_authors")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| serde_json::from_value::<Person>(p.clone()).ok())
                    .filter(|p| !p.family.is_empty() || !p.given.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        year: v
            .get("year")
            .and_then(|y| y.as_i64().or_else(|| y.as_str().and_then(|s| s.parse().ok())))
            .map(|y| y as i32),
        venue: str_at(v, "journal_name").map(squash),
        publisher: str_at(v, "publisher").map(squash),
        ..WorkMeta::default()
    };
    rec
}

/// The newest version among a bioRxiv/medRxiv details answer's records
/// (`collection[]`, one row per version), with its version number.
pub fn parse_preprint(v: &Value, server_label: &str) -> Option<(WorkMeta, u32)> {
    let rows = v.get("collection")?.as_array()?;
    let version = |r: &Value| -> u32 {
        match r.get("version") {
            Some(Value::String(s)) => s.trim().parse().unwrap_or(1),
            Some(Value::Number(n)) => n.as_u64().unwrap_or(1) as u32,
            _ => 1,
        }
    };
    let row = rows.iter().max_by_key(|r| version(r))?;
    let doi = str_at(row, "doi")?.to_lowercase();
    // "Sen, S.; Smith, J. A." — family first, `;` between people.
    let authors = str_at(row, "authors")
        .map(|a| {
            a.split(';')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once(',') {
                    Some((family, given)) => Person {
                        given: squash(given),
                        family: squash(family),
                    },
                    None => Person {
                        given: String::new(),
                        family: squash(p),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    let year = str_at(row, "date")
        .and_then(|d| d.split('-').next())
        .and_then(|y| y.parse().ok())
        .filter(|y| (1990..=3000).contains(y));
    let label = match str_at(row, "server") {
        Some(s) if s.eq_ignore_ascii_case("medrxiv") => "medRxiv",
        Some(s) if s.eq_ignore_ascii_case("biorxiv") => "bioRxiv",
        _ => server_label,
    };
    Some((
        WorkMeta {
            doi,
            title: str_at(row, "title").map(strip_markup).unwrap_or_default(),
            authors,
            year,
            venue: Some(label.to_string()),
            abstract_text: str_at(row, "abstract").map(jats_to_text).filter(|a| !a.is_empty()),
            kind: Some("posted-content".into()),
            publisher: Some("Cold Spring Harbor Laboratory".into()),
            ..WorkMeta::default()
        },
        version(row),
    ))
}

/// Inline markup in a title (`<i>`, `<sub>`, `<jats:italic>`) dropped.
pub fn strip_markup(s: &str) -> String {
    squash(&jats_to_text(s))
}

/// JATS (or stray HTML) to plain text: tags dropped, paragraph-like ends
/// as blank lines, entities decoded once, a leading "Abstract" heading
/// dropped. Never interprets anything: the output is text.
pub fn jats_to_text(s: &str) -> String {
    const BLOCKS: &[&str] = &["p", "title", "sec", "list-item", "list", "br", "div", "abstract"];
    let mut out = String::with_capacity(s.len());
    let mut first_title: Option<usize> = None;
    for piece in Markup::new(s) {
        let (name, closing) = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Tag { name, closing } => (name, closing),
        };
        let local = name.rsplit(':').next().unwrap_or("");
        if BLOCKS.contains(&local) {
            out.push_str("\n\n");
            if local == "title" && !closing && first_title.is_none() {
                first_title = Some(out.len());
            }
        }
    }
    let text = decode_entities(&out);
    let paragraphs: Vec<String> = text.split("\n\n").map(squash).filter(|p| !p.is_empty()).collect();
    let skip =
        usize::from(first_title.is_some() && paragraphs.first().is_some_and(|p| p.eq_ignore_ascii_case("abstract")));
    paragraphs[skip..].join("\n\n")
}

/// One piece of HTML-ish markup, as [`Markup`] reads it.
pub(crate) enum Piece<'a> {
    Text(&'a str),
    /// A tag's lower-cased name (`jats:italic` keeps its prefix).
    Tag {
        name: String,
        closing: bool,
    },
}

/// The text and tags of HTML-ish markup (JATS abstracts, Zotero notes),
/// in order: comments skipped, an unclosed `<` read as text. Reads only —
/// nothing it yields is ever markup again.
pub(crate) struct Markup<'a> {
    rest: &'a str,
}

impl<'a> Markup<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Markup { rest: s }
    }

    /// Skip everything up to and including the end tag `</name…>` (to the
    /// end when there is none): for elements whose content is not text.
    pub(crate) fn skip_past_end(&mut self, name: &str) {
        let end = format!("</{name}");
        self.rest = find_ci(self.rest, &end)
            .and_then(|i| self.rest[i..].find('>').map(|g| &self.rest[i + g + 1..]))
            .unwrap_or("");
    }
}

impl<'a> Iterator for Markup<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let Some(lt) = self.rest.find('<') else {
                return Some(Piece::Text(std::mem::take(&mut self.rest)));
            };
            if lt > 0 {
                let (text, rest) = self.rest.split_at(lt);
                self.rest = rest;
                return Some(Piece::Text(text));
            }
            let after = &self.rest[1..];
            if let Some(comment) = after.strip_prefix("!--") {
                self.rest = comment.find("-->").map_or("", |e| &comment[e + 3..]);
                continue;
            }
            let Some(gt) = after.find('>') else {
                self.rest = after;
                return Some(Piece::Text("<"));
            };
            let tag = &after[..gt];
            self.rest = &after[gt + 1..];
            let name = tag
                .trim_start_matches('/')
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            return Some(Piece::Tag {
                name,
                closing: tag.starts_with('/'),
            });
        }
    }
}

/// Case-insensitive `find` of an ASCII needle.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// `&amp;`, `&#233;`, `&#xE9;`… decoded once; an unknown or control
/// character entity stays as written.
pub(crate) fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let end = after.find(';').filter(|e| *e <= 10);
        let decoded = end.and_then(|e| {
            let ent = &after[..e];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some(' '),
                _ if ent.starts_with("#x") || ent.starts_with("#X") => {
                    u32::from_str_radix(&ent[2..], 16).ok().and_then(char::from_u32)
                }
                _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) if !c.is_control() || c == '\n' => {
                out.push(c);
                rest = &after[e + 1..];
            }
            _ => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jats_abstracts_become_plain_paragraphs() {
        let a = "<jats:title>Abstract</jats:title><jats:p>Proteins are <jats:italic>essential</jats:italic> to life &amp; death.</jats:p>\n<jats:p>We show x&lt;y, &#x3B1; and &#946;.</jats:p>";
        assert_eq!(
            jats_to_text(a),
            "Proteins are essential to life & death.\n\nWe show x<y, α and β."
        );
        // Hostile input stays text: a script tag is dropped, its escaped
        // form decodes once to harmless characters, a lone `<` survives.
        assert_eq!(jats_to_text("<script>alert(1)</script>a < b"), "alert(1)a < b");
        assert_eq!(jats_to_text("&amp;lt;b&amp;gt;"), "&lt;b&gt;");
        assert_eq!(jats_to_text("&unknown; &#0; &#x1b;"), "&unknown; &#0; &#x1b;");
        assert_eq!(strip_markup("H<sub>2</sub>O in <i>vivo</i>"), "H2O in vivo");
    }

    #[test]
    fn a_crossref_work_is_read() {
        let v = json!({"status": "ok", "message-type": "work", "message": {
            "DOI": "10.1038/S41586-021-03819-2",
            "title": ["Highly accurate protein structure prediction with AlphaFold"],
            "author": [{"given": "John", "family": "Jumper", "sequence": "first", "affiliation": []},
                       {"name": "The AlphaFold Team", "sequence": "additional"}],
            "container-title": ["Nature"],
            "issued": {"date-parts": [[2021, 7, 15]]},
            "abstract": "<jats:p>Proteins are essential.</jats:p>",
            "type": "journal-article", "volume": "596", "issue": "7873", "page": "583-589",
            "link": [{"URL": "https://www.nature.com/articles/s41586-021-03819-2.pdf", "content-type": "application/pdf",
                      "content-version": "vor", "intended-application": "text-mining"},
                     {"URL": "https://www.nature.com/articles/s41586-021-03819-2", "content-type": "text/html",
                      "content-version": "vor", "intended-application": "text-mining"}]
        }});
        let w = parse_crossref(&v).unwrap();
        assert_eq!(w.doi, "10.1038/s41586-021-03819-2");
        assert_eq!(w.year, Some(2021));
        assert_eq!(w.venue.as_deref(), Some("Nature"));
        assert_eq!(w.authors_line(), "John Jumper, The AlphaFold Team");
        assert_eq!(w.authors[1].family, "The AlphaFold Team");
        assert_eq!(w.abstract_text.as_deref(), Some("Proteins are essential."));
        assert_eq!(
            w.pdf_links,
            vec!["https://www.nature.com/articles/s41586-021-03819-2.pdf"]
        );
        assert_eq!(w.pages.as_deref(), Some("583-589"));
        assert!(parse_crossref(&json!({"message": {}})).is_none());
    }

    #[test]
    fn unpaywall_gives_pdfs_best_first_and_an_arxiv_copy() {
        let v = json!({"doi": "10.1/x", "is_oa": true, "title": "T", "year": 2020, "journal_name": "J",
            "z_authors": [{"given": "Ada", "family": "Lovelace"}],
            "best_oa_location": {"url": "https://pub.org/x", "url_for_pdf": "https://pub.org/x.pdf", "host_type": "publisher"},
            "oa_locations": [
                {"url": "https://pub.org/x", "url_for_pdf": "https://pub.org/x.pdf", "host_type": "publisher"},
                {"url": "http://arxiv.org/abs/2101.00001v2", "url_for_pdf": "http://arxiv.org/pdf/2101.00001v2",
                 "pmh_id": "oai:arXiv.org:2101.00001", "host_type": "repository"}]});
        let r = parse_unpaywall(&v);
        assert!(r.is_oa);
        assert_eq!(
            r.pdf_urls,
            vec!["https://pub.org/x.pdf", "http://arxiv.org/pdf/2101.00001v2"]
        );
        assert_eq!(r.arxiv.map(|a| a.versioned()), Some("2101.00001".into()));
        assert_eq!(r.meta.authors_line(), "Ada Lovelace");
        let closed =
            parse_unpaywall(&json!({"doi": "10.1/y", "is_oa": false, "best_oa_location": null, "oa_locations": []}));
        assert!(closed.pdf_urls.is_empty() && !closed.is_oa);
    }

    #[test]
    fn a_preprint_takes_its_newest_version() {
        let v = json!({"messages": [{"status": "ok"}], "collection": [
            {"doi": "10.1101/2020.01.01.000001", "title": "Old", "authors": "Sen, S.; Smith, J. A.", "date": "2020-1-2", "version": "1", "server": "bioRxiv", "abstract": "a"},
            {"doi": "10.1101/2020.01.01.000001", "title": "New title", "authors": "Sen, S.; Smith, J. A.", "date": "2020-02-03", "version": "2", "server": "bioRxiv", "abstract": "The abstract."}]});
        let (w, version) = parse_preprint(&v, "bioRxiv").unwrap();
        assert_eq!(version, 2);
        assert_eq!(w.title, "New title");
        assert_eq!(w.year, Some(2020));
        assert_eq!(
            w.authors[1],
            Person {
                given: "J. A.".into(),
                family: "Smith".into()
            }
        );
        assert_eq!(w.venue.as_deref(), Some("bioRxiv"));
        assert!(parse_preprint(
            &json!({"messages": [{"status": "no posts found"}], "collection": []}),
            "bioRxiv"
        )
        .is_none());
    }
}
