//! The embedded UI (`assets/web/`), served with correct MIME types.
//!
//! Owns: `GET /` (index.html) and `GET /static/{*path}`. Files come from the
//! binary (rust-embed), never from disk at run time, so a path can only name
//! something that was embedded: traversal has nothing to reach.
//! Must not: serve anything generated from user data.

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "assets/web/"]
struct Ui;

/// The MIME type for an embedded file, by extension. Unknown types are
/// served as opaque bytes (and `nosniff` keeps the browser from guessing).
pub fn mime_of(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Every embedded file and its size (the page-weight benchmark).
pub fn files() -> Vec<(String, usize)> {
    Ui::iter()
        .filter_map(|n| Ui::get(&n).map(|f| (n.into_owned(), f.data.len())))
        .collect()
}

fn serve_file(path: &str, req_headers: &HeaderMap) -> Response {
    let Some(file) = Ui::get(path) else {
        return (StatusCode::NOT_FOUND, "no such file").into_response();
    };
    let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..12]));
    if req_headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    let mut resp = file.data.into_owned().into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime_of(path)));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

pub async fn index(headers: HeaderMap) -> Response {
    serve_file("index.html", &headers)
}

pub async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve_file(&path, &headers)
}
