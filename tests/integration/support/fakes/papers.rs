//! What the services `kb add` asks about a DOI or a web address answer —
//! Crossref, Unpaywall, bioRxiv's details API — in the shapes their public
//! documentation shows, for a [`Stand`](super::stand::Stand) to serve.

use serde_json::{json, Value};

/// Crossref's `/works/{doi}` envelope for a journal article (the fields
/// Jarvis reads, in Crossref's own names and nesting).
pub fn crossref_work(doi: &str, title: &str, abstract_jats: Option<&str>, pdf_link: Option<&str>) -> Value {
    let mut m = json!({
        "indexed": {"date-parts": [[2024, 1, 5]], "date-time": "2024-01-05T10:00:00Z", "timestamp": 1704448800000u64},
        "reference-count": 42,
        "publisher": "Example Society",
        "issue": "7",
        "DOI": doi,
        "type": "journal-article",
        "created": {"date-parts": [[2021, 7, 10]]},
        "page": "583-589",
        "source": "Crossref",
        "title": [title],
        "prefix": doi.split('/').next().unwrap_or(""),
        "volume": "596",
        "author": [
            {"given": "Ada", "family": "Example", "sequence": "first", "affiliation": []},
            {"given": "Brian", "family": "Sample", "sequence": "additional", "affiliation": []}
        ],
        "member": "297",
        "container-title": ["Journal of Examples"],
        "issued": {"date-parts": [[2021, 7, 15]]},
        "URL": format!("https://doi.org/{doi}"),
        "link": []
    });
    if let Some(a) = abstract_jats {
        m["abstract"] = json!(a);
    }
    if let Some(l) = pdf_link {
        m["link"] = json!([
            {"URL": l, "content-type": "application/pdf", "content-version": "vor", "intended-application": "text-mining"},
            {"URL": format!("{l}.html"), "content-type": "text/html", "content-version": "vor", "intended-application": "similarity-checking"}
        ]);
    }
    json!({"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": m})
}

/// Unpaywall's DOI object with one open copy at `pdf` (or none).
pub fn unpaywall(doi: &str, pdf: Option<&str>) -> Value {
    let loc = pdf.map(|u| {
        json!({"url": u, "url_for_pdf": u, "url_for_landing_page": format!("https://doi.org/{doi}"),
               "host_type": "repository", "version": "acceptedVersion", "license": "cc-by",
               "evidence": "oa repository (via OAI-PMH doi match)", "is_best": true,
               "pmh_id": null, "endpoint_id": "e1", "repository_institution": "Example University", "updated": "2024-01-01T00:00:00"})
    });
    json!({
        "doi": doi, "doi_url": format!("https://doi.org/{doi}"), "title": "(Unpaywall's copy of the title)",
        "genre": "journal-article", "is_paratext": false, "published_date": "2021-07-15", "year": 2021,
        "journal_name": "Journal of Examples", "journal_issns": "0028-0836", "journal_is_oa": false,
        "journal_is_in_doaj": false, "publisher": "Example Society",
        "is_oa": pdf.is_some(), "oa_status": if pdf.is_some() { "green" } else { "closed" },
        "has_repository_copy": pdf.is_some(),
        "best_oa_location": loc.clone(),
        "first_oa_location": loc.clone(),
        "oa_locations": loc.map(|l| vec![l]).unwrap_or_default(),
        "oa_locations_embargoed": [],
        "updated": "2024-01-01T00:00:00", "data_standard": 2,
        "z_authors": [{"given": "Ada", "family": "Example", "sequence": "first"}]
    })
}

/// bioRxiv's `/details/biorxiv/{doi}/na/json` answer: one row per version.
pub fn biorxiv_details(doi: &str, title: &str, versions: u32) -> Value {
    let rows: Vec<Value> = (1..=versions)
        .map(|v| {
            json!({"doi": doi, "title": title, "authors": "Sen, S.; Smith, J. A.",
                   "author_corresponding": "Jane Smith", "author_corresponding_institution": "Example Institute",
                   "date": format!("2020-1-{}", v + 1), "version": v.to_string(), "type": "new results",
                   "license": "cc_by", "category": "bioinformatics",
                   "jatsxml": format!("https://www.biorxiv.org/content/early/2020/01/0{v}/x.source.xml"),
                   "abstract": "Reading order matters for extracted text.", "published": "NA", "server": "bioRxiv"})
        })
        .collect();
    json!({"messages": [{"status": "ok"}], "collection": rows})
}

/// The details API's answer for a DOI it does not have.
pub fn biorxiv_none() -> Value {
    json!({"messages": [{"status": "no posts found"}], "collection": []})
}
