//! `GET /library/cite?q=…&n=…`: the editor's citation completion — the
//! library's keyed papers whose key, title, authors, year or venue hold
//! every word typed after `\cite{` or `[@`.
//!
//! Parses, calls `App::cite_suggestions`, renders plain JSON rows (the page
//! inserts them as text, never as markup). Must not: decide what matches or
//! how keys are made (that is `kb::cite`).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::web::error::{ApiResult, Query};
use crate::web::routes::sessions::blocking;
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new().route("/library/cite", get(suggest))
}

#[derive(Deserialize)]
struct CiteQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    n: Option<usize>,
}

/// One suggestion: what the list shows and the key it inserts.
#[derive(Serialize)]
struct Suggestion {
    key: String,
    title: String,
    authors: String,
    year: Option<i32>,
    venue: Option<String>,
}

#[derive(Serialize)]
struct Suggestions {
    entries: Vec<Suggestion>,
}

/// How many rows the list shows unless asked for fewer.
const DEFAULT_ROWS: usize = 12;

async fn suggest(State(state): State<Arc<WebState>>, Query(q): Query<CiteQuery>) -> ApiResult<Json<Suggestions>> {
    let app = Arc::clone(&state.app);
    let needle: String = q.q.chars().take(200).collect();
    let n = q.n.unwrap_or(DEFAULT_ROWS);
    let entries = blocking(move || Ok(app.cite_suggestions(&needle, n)?)).await?;
    Ok(Json(Suggestions {
        entries: entries
            .into_iter()
            .map(|e| Suggestion {
                authors: e.authors_short(),
                key: e.key,
                title: e.title,
                year: e.year,
                venue: e.venue,
            })
            .collect(),
    }))
}
