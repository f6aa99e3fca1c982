//! The router: one file per resource. Others (chat, drafts, mcp) add a file
//! here and one line to [`router`].

pub mod assist;
pub mod chat;
pub mod cite;
pub mod digest;
pub mod documents;
pub mod drafts;
pub mod drafts_pages;
pub mod health;
pub mod mcp;
pub mod mcp_servers;
pub mod memory;
pub mod models;
pub mod pins;
pub mod prompts;
pub mod queue;
pub mod sessions;
pub mod settings;
pub mod setup;
pub mod source;
pub mod timeline;
pub mod wire;

use std::sync::Arc;

use axum::routing::get;
use axum::Router;

use super::assets;
use super::error::ApiError;
use super::state::WebState;

pub fn router(state: Arc<WebState>) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/static/{*path}", get(assets::file))
        .merge(health::routes())
        .merge(settings::routes())
        .merge(setup::routes())
        .merge(documents::routes())
        .merge(timeline::routes())
        .merge(digest::routes())
        .merge(memory::routes())
        .merge(cite::routes())
        .merge(source::routes())
        .merge(drafts::routes())
        .merge(drafts_pages::routes())
        .merge(sessions::routes())
        .merge(chat::routes())
        .merge(assist::routes())
        .merge(queue::routes())
        .merge(pins::routes())
        .merge(models::routes())
        .merge(prompts::routes())
        .merge(mcp_servers::routes())
        .merge(mcp::routes(&state))
        .fallback(not_found)
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}
