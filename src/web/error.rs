//! The one place an error becomes an HTTP status.
//!
//! Owns: [`status_of`] (error kind → status) and [`ApiError`], the JSON error
//! body every route returns: `{"error": message, "kind": code}`. The message
//! is the library error's own text, which names the problem and the fix.
//! Must not: invent messages for library errors or leak internals beyond
//! what the error's `Display` already says.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::error_kind::ErrorKind;

/// Cancelled work: nginx's "client closed request", the closest there is.
pub const STOPPED: u16 = 499;

/// User 400, NotFound 404, Conflict 409, Unavailable 503, Cancelled 499,
/// Internal 500.
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::User => StatusCode::BAD_REQUEST,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Cancelled => StatusCode::from_u16(STOPPED).unwrap_or(StatusCode::BAD_REQUEST),
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        #[allow(unreachable_patterns)]
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error response: a status, a short machine code, and the message.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Extra JSON fields (e.g. the LaTeX log of a 422).
    pub extra: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            extra: None,
        }
    }

    /// From any library error with a kind.
    pub fn from_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(status_of(kind), kind.as_str(), message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::from_kind(ErrorKind::User, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::from_kind(ErrorKind::NotFound, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::from_kind(ErrorKind::Conflict, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::from_kind(ErrorKind::Internal, message)
    }
    /// 422 with a log to show (a failed compile).
    pub fn unprocessable(message: impl Into<String>, log: String) -> Self {
        let mut e = Self::new(StatusCode::UNPROCESSABLE_ENTITY, "unprocessable", message);
        e.extra = Some(serde_json::json!({ "log": log }));
        e
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(status = %self.status, code = self.code, error = %self.message, "request failed");
        }
        let mut body = serde_json::json!({ "error": self.message, "kind": self.code });
        if let (Some(serde_json::Value::Object(extra)), Some(obj)) = (self.extra, body.as_object_mut()) {
            obj.extend(extra);
        }
        (self.status, Json(body)).into_response()
    }
}

/// Anything with a `kind()` converts (library errors).
#[macro_export]
macro_rules! web_error_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for $crate::web::error::ApiError {
            fn from(e: $t) -> Self {
                $crate::web::error::ApiError::from_kind(e.kind(), e.to_string())
            }
        }
    )*};
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = r.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, format!("bad request body: {}", r.body_text()))
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError::bad_request(format!("bad path: {}", r.body_text()))
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::bad_request(format!("bad query string: {}", r.body_text()))
    }
}

/// A JSON body extractor whose rejections are [`ApiError`]s.
#[derive(Debug, Clone, Copy, Default, axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Body<T>(pub T);

/// A query extractor whose rejections are [`ApiError`]s.
#[derive(Debug, Clone, Copy, Default, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

pub type ApiResult<T> = Result<T, ApiError>;

crate::web_error_from!(
    crate::config::ConfigError,
    crate::app::AppError,
    crate::paths::PathsError,
    crate::kb::KbError,
);

impl From<crate::chat::ChatError> for ApiError {
    fn from(e: crate::chat::ChatError) -> Self {
        use crate::chat::{ChatError, SwitchError};
        let kind = match &e {
            // A private session moving to the cloud collides with its state.
            ChatError::Switch(SwitchError::PrivateToCloud { .. }) => ErrorKind::Conflict,
            _ => e.kind(),
        };
        ApiError::from_kind(kind, e.to_string())
    }
}

impl From<crate::chat::SessionError> for ApiError {
    fn from(e: crate::chat::SessionError) -> Self {
        crate::chat::ChatError::from(e).into()
    }
}

impl From<crate::prompts::PromptError> for ApiError {
    fn from(e: crate::prompts::PromptError) -> Self {
        use crate::prompts::PromptError;
        let kind = match &e {
            PromptError::Unknown(..) => ErrorKind::NotFound,
            PromptError::Empty => ErrorKind::User,
            PromptError::Paths(p) => p.kind(),
        };
        ApiError::from_kind(kind, e.to_string())
    }
}
