//! Browser-facing hardening, applied to every request before any route.
//!
//! Owns: the Host allowlist (DNS rebinding → 421; more than one `Host` →
//! 400, as RFC 9112 §3.2 requires), the cross-site check on state-changing
//! methods (a page on another site cannot POST here), the deadline for
//! reading a request's body ([`read_body_by_deadline`]), and the security
//! headers every response carries.
//! Must not: authenticate anyone. The app is single-user on loopback; these
//! checks make sure the only browser page that can drive it is its own.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::state::WebState;

/// `default-src 'self'` with no inline script or style and no framing.
/// `img-src data:` allows the inline SVG icons of the stylesheet. Frames
/// load only this origin (the Markdown preview's `srcdoc`); a compiled PDF
/// is shown as pictures of its pages, never framed.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-src 'self'; \
frame-ancestors 'none'";

/// The Host values a browser sends when it really talks to us on `port`.
pub fn allowed_hosts(port: u16) -> Vec<String> {
    vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// The origins the UI itself has.
fn allowed_origin(origin: &str, hosts: &[String]) -> bool {
    origin
        .strip_prefix("http://")
        .is_some_and(|h| hosts.iter().any(|a| a.eq_ignore_ascii_case(h)))
}

fn is_state_changing(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Why a request is refused, if it is: checked in this order.
pub fn check(method: &Method, headers: &HeaderMap, hosts: &[String]) -> Result<(), ApiError> {
    // Two Host lines are a malformed request (RFC 9112 §3.2: "MUST respond
    // with 400"): a proxy and this server could each read a different one.
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "host",
            "the request has more than one Host header — send exactly one (a request that names two hosts is refused)",
        ));
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !hosts.iter().any(|a| a.eq_ignore_ascii_case(host)) {
        return Err(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "host",
            format!(
                "this server answers only to {} — open it by that address (a request naming another host is refused against DNS rebinding)",
                hosts.first().map(String::as_str).unwrap_or("127.0.0.1")
            ),
        ));
    }
    if is_state_changing(method) {
        // Browsers send Origin on every cross-origin and every non-GET fetch,
        // and Sec-Fetch-Site on every request; a script without either (curl,
        // a test) is not a browser page and cannot be forged by one.
        if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
            if site != "same-origin" {
                return Err(cross_site(format!("Sec-Fetch-Site: {site}")));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let o = origin.to_str().unwrap_or("");
            if !allowed_origin(o, hosts) {
                return Err(cross_site(format!("Origin: {o}")));
            }
        }
    }
    Ok(())
}

fn cross_site(what: String) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "cross_site",
        format!("refused a state-changing request from another site ({what}); only the Jarvis page itself may change things"),
    )
}

/// Host allowlist + same-origin check.
pub async fn guard(State(state): State<Arc<WebState>>, req: Request, next: Next) -> Response {
    match check(req.method(), req.headers(), &state.allowed_hosts) {
        Ok(()) => next.run(req).await,
        Err(e) => {
            tracing::warn!(method = %req.method(), path = %req.uri().path(), reason = %e.message, "request refused");
            e.into_response()
        }
    }
}

/// How long a request's whole body may take to arrive once its headers
/// have: the largest body ([`super::BODY_LIMIT`]) crosses loopback in
/// milliseconds, so a body still missing after this is a client that
/// stalled (or a slow-loris), and its connection is closed rather than held.
pub const BODY_DEADLINE: Duration = Duration::from_secs(10);

/// Read the request's body in full within [`BODY_DEADLINE`] (the routes
/// take JSON bodies of at most [`super::BODY_LIMIT`], so nothing streams),
/// then run the route on the buffered body. A body that does not arrive in
/// time gets 408 and `Connection: close`; one over the limit 413.
pub async fn read_body_by_deadline(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, usize::MAX)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(e)) => {
            let too_long = std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |e| e.source())
                .any(|e| e.is::<http_body_util::LengthLimitError>());
            if too_long {
                return ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    format!("the request body is over {} bytes — send less", super::BODY_LIMIT),
                )
                .into_response();
            }
            close(ApiError::bad_request(format!(
                "the request body could not be read: {e}"
            )))
        }
        Err(_) => {
            tracing::warn!(method = %parts.method, path = %parts.uri.path(), "request body stalled; connection closed");
            close(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                format!(
                    "the request body did not arrive within {} s of its headers — send it whole",
                    BODY_DEADLINE.as_secs()
                ),
            ))
        }
    }
}

/// An error response after which the connection is closed (the rest of
/// the body, if it ever comes, is not read).
fn close(e: ApiError) -> Response {
    let mut resp = e.into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Security headers on every response, including errors and refusals.
pub async fn headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    let set = |h: &mut HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(h, "content-security-policy", CSP);
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "no-referrer");
    set(h, "x-frame-options", "DENY");
    set(h, "cross-origin-opener-policy", "same-origin");
    set(h, "cross-origin-resource-policy", "same-origin");
    set(h, "permissions-policy", "camera=(), microphone=(), geolocation=()");
    if !h.contains_key(header::CACHE_CONTROL) {
        set(h, "cache-control", "no-store");
    }
    resp
}
