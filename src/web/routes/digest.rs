//! The Digest view: `GET /digest` (recent digests' papers with the user's
//! votes), `POST /digest/vote` (👍 / 👎 / take back) and `POST /digest/add`
//! (add a suggested paper to the library, counted as the strongest 👍).
//!
//! Human-only, like the Library and the Timeline: no chat tool calls these
//! routes. Parses, calls `App` (`digest_feedback_view`, `digest_vote`,
//! `digest_add`) and renders; what a vote does to the next digest is
//! `digest::feedback`'s.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::app::digest::DigestOpError;
use crate::digest::feedback::Vote;
use crate::kb::Actor;
use crate::web::error::{ApiError, ApiResult, Body};
use crate::web::state::WebState;

crate::web_error_from!(DigestOpError);

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/digest", get(list))
        .route("/digest/vote", post(vote))
        .route("/digest/add", post(add))
}

/// Digests shown at most (the newest).
const RUNS: usize = 12;

#[derive(Serialize)]
pub struct Paper {
    pub key: String,
    pub link: String,
    pub title: String,
    pub authors: String,
    #[serde(rename = "abstract")]
    pub abstract_text: String,
    pub score: i64,
    pub track: String,
    pub summary: String,
    pub why: String,
    pub tier: String,
    /// `up`, `down`, `added` or none.
    pub vote: Option<&'static str>,
}

#[derive(Serialize)]
pub struct DigestRun {
    pub date: String,
    pub papers: Vec<Paper>,
}

#[derive(Serialize)]
pub struct DigestList {
    pub runs: Vec<DigestRun>,
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> ApiResult<T> + Send + 'static) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the operation failed: {e}")))?
}

async fn list(State(state): State<Arc<WebState>>) -> ApiResult<Json<DigestList>> {
    let app = Arc::clone(&state.app);
    let (runs, votes) = blocking(move || Ok(app.digest_feedback_view()?)).await?;
    let runs = runs
        .into_iter()
        .take(RUNS)
        .map(|r| DigestRun {
            date: r.date,
            papers: r
                .entries
                .into_iter()
                .map(|e| Paper {
                    vote: votes.get(&e.key).map(|f| f.vote.as_str()),
                    key: e.key,
                    link: e.link,
                    title: e.title,
                    authors: e.authors,
                    abstract_text: e.abstract_text,
                    score: e.score,
                    track: e.track,
                    summary: e.summary,
                    why: e.why,
                    tier: e.tier,
                })
                .collect(),
        })
        .collect();
    Ok(Json(DigestList { runs }))
}

#[derive(Deserialize)]
pub struct VoteBody {
    /// The paper's digest key (`arxiv:…`, `doi:…`).
    pub key: String,
    /// `up`, `down` or `clear`.
    pub vote: String,
}

#[derive(Serialize)]
pub struct Done {
    pub key: String,
    pub vote: Option<&'static str>,
    pub message: String,
}

async fn vote(State(state): State<Arc<WebState>>, Body(b): Body<VoteBody>) -> ApiResult<Json<Done>> {
    let v = match b.vote.as_str() {
        "up" => Some(Vote::Up),
        "down" => Some(Vote::Down),
        "clear" => None,
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown vote `{other}` — use up, down or clear (adding goes through /digest/add)"
            )))
        }
    };
    let app = Arc::clone(&state.app);
    let entry = blocking(move || Ok(app.digest_vote(&b.key, v)?)).await?;
    let message = match v {
        Some(Vote::Up) => "Noted: more like this".to_string(),
        Some(_) => "Noted: fewer like this".to_string(),
        None => "Vote taken back".to_string(),
    };
    Ok(Json(Done {
        key: entry.key,
        vote: v.map(Vote::as_str),
        message,
    }))
}

#[derive(Deserialize)]
pub struct AddBody {
    pub key: String,
}

async fn add(State(state): State<Arc<WebState>>, Body(b): Body<AddBody>) -> ApiResult<Json<Done>> {
    let app = Arc::clone(&state.app);
    let cancel = crate::cancel::Cancel::new();
    let (entry, report) = blocking(move || {
        // A duplicate by another route is not added twice; the vote still counts.
        Ok(app.digest_add(&b.key, &Actor::Web, &|_| false, &cancel)?)
    })
    .await?;
    let message = match report.skipped {
        Some(why) => format!("Already in your library ({why})"),
        None => format!("Added “{}” to your library", report.title),
    };
    Ok(Json(Done {
        key: entry.key,
        vote: Some(Vote::Added.as_str()),
        message,
    }))
}
