//! What Floor keeps about the caller: `GET /me/export`, one JSON document streamed as it is
//! read (`players::export`).

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::AuthUser;
use crate::domain::players::export::{self, ExportDocument};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export_my_data))
}

/// Everything Floor keeps about the caller, as one JSON document to save.
///
/// The account and its rating, consent and each change of it, registrations, results,
/// strikes, follows (other players as ids), devices and sessions (never a token),
/// notifications, the calendar link (never its address), club roles, dealing, guest places
/// taken over, the audit records by or about the account, what it did as club staff or admin,
/// and merges. Read in one snapshot and streamed: a failure after the answer began ends the
/// body cut short, never a valid document.
#[utoipa::path(get, path = "/me/export", tags = ["profile", "extension"], security(("bearer" = [])),
    responses(
        (status = 200, body = ExportDocument,
            description = "The document, streamed as it is read (no `Content-Length`)",
            headers(
                ("Content-Disposition" = String, description = "`attachment; filename=\"floor-export-<userId>.json\"`"),
                ("Cache-Control" = String, description = "`no-store`: personal data, never kept by a cache"),
            )),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED: the caller's last export is still being written, or as many as a node writes at once are", body = ErrorBody),
    ))]
async fn export_my_data(State(app): State<AppState>, user: AuthUser) -> AppResult<Response> {
    let body = export::export(&app.reads, user.id(), Utc::now()).await?;
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"floor-export-{}.json\"", user.id()))
        .map_err(|err| AppError::Internal(err.into()))?;
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (CONTENT_DISPOSITION, disposition),
        (CACHE_CONTROL, HeaderValue::from_static("no-store")),
    ];
    Ok((headers, Body::from_stream(body)).into_response())
}
