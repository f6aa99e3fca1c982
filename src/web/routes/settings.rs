//! `GET/POST /settings` (the response style) and `GET /config/summary` (the
//! resolved configuration for display, API keys reduced to set / not set).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json_};

use crate::app::records::Recorded;
use crate::config::schema::{Kind, Value};
use crate::config::{Config, Origin};
use crate::kb::Actor;
use crate::web::error::{ApiError, ApiResult, Body};
use crate::web::state::WebState;

pub fn routes() -> Router<Arc<WebState>> {
    Router::new()
        .route("/settings", get(get_settings).post(post_settings))
        .route("/config/summary", get(summary))
}

#[derive(Serialize, Deserialize)]
pub struct Settings {
    pub response_style: String,
    /// A save's event in the history (or why it is missing).
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub history: Option<Recorded>,
}

/// The longest response style accepted (it goes into every system prompt).
const STYLE_MAX: usize = 2000;

async fn get_settings(State(state): State<Arc<WebState>>) -> Json<Settings> {
    Json(Settings {
        response_style: state.app.response_style(),
        history: None,
    })
}

async fn post_settings(State(state): State<Arc<WebState>>, Body(s): Body<Settings>) -> ApiResult<Json<Settings>> {
    let style = s.response_style.trim().to_string();
    if style.chars().count() > STYLE_MAX {
        return Err(ApiError::bad_request(format!(
            "the response style is {} characters; keep it under {STYLE_MAX}",
            style.chars().count()
        )));
    }
    if style.contains(['\n', '\r']) {
        return Err(ApiError::bad_request(
            "the response style is one line; remove the line breaks",
        ));
    }
    let app = state.app.clone();
    let saved = style.clone();
    let history = tokio::task::spawn_blocking(move || -> Result<Recorded, ApiError> {
        Ok(app.setting_set("chat.response_style", &saved, &Actor::Web)?)
    })
    .await
    .map_err(|e| ApiError::internal(format!("saving the response style failed: {e}")))??;
    Ok(Json(Settings {
        response_style: style,
        history: Some(history),
    }))
}

fn display_value(kind: Kind, v: &Value) -> Json_ {
    match (kind, v) {
        (Kind::Secret, Value::Str(s)) => json!(if s.is_empty() { "not set" } else { "set" }),
        (Kind::Secret, _) => json!("not set"),
        (_, Value::Unset) => Json_::Null,
        _ => serde_json::to_value(v).unwrap_or(Json_::Null),
    }
}

fn origin_text(o: &Origin) -> String {
    match o {
        Origin::Default => "default".into(),
        Origin::File(k) => format!("config.toml ({k})"),
        Origin::Env(var) => format!("environment ({var})"),
    }
}

/// The configuration grouped by section, values resolved (file and
/// environment applied), secrets never shown.
pub fn summarise(cfg: &Config) -> Json_ {
    let mut sections: BTreeMap<&str, Vec<Json_>> = BTreeMap::new();
    for (f, v, origin) in cfg.entries() {
        sections.entry(f.section).or_default().push(json!({
            "key": f.key,
            "value": display_value(f.kind, v),
            "origin": origin_text(origin),
            "help": f.help,
        }));
    }
    let order: Vec<Json_> = crate::config::schema::SECTIONS
        .iter()
        .filter_map(|s| sections.remove(s).map(|rows| json!({ "section": s, "settings": rows })))
        .collect();
    let servers: Vec<Json_> = cfg
        .servers
        .iter()
        .map(|s| {
            json!({
                "name": s.name, "base_url": s.base_url, "model": s.model, "local": s.local,
                "api_key": if s.api_key.is_some() { "set" } else { "not set" },
            })
        })
        .collect();
    json!({ "file": cfg.file.display().to_string(), "sections": order, "servers": servers })
}

async fn summary(State(state): State<Arc<WebState>>) -> ApiResult<Json<Json_>> {
    // Read fresh: an edited file shows without a restart.
    let app = state.app.clone();
    let cfg = tokio::task::spawn_blocking(move || app.reload_config().map(|_| app.config()))
        .await
        .map_err(|e| ApiError::internal(format!("reading the configuration failed: {e}")))??;
    Ok(Json(summarise(&cfg)))
}
