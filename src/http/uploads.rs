//! Uploads: `POST /uploads` takes one image through the server into object storage, and
//! `/files/{key}` (at the bare origin, outside the API) serves it back.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::multipart::{Field, MultipartError, MultipartRejection};
use axum::extract::rejection::PathRejection;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use floor_entities::enums::MemberRole;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json};
use crate::domain::audit;
use crate::domain::auth::permissions::{Permission, has_permission};
use crate::domain::clubs::memberships_of;
use crate::domain::uploads::{FILES_PATH, ImageKind, MAX_UPLOAD_BYTES, SNIFF_LEN, new_key, parse_key};
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

/// Room for the multipart framing around a file of the largest size, so that the request
/// limit never cuts a file the file limit accepts.
const MULTIPART_OVERHEAD_BYTES: usize = 64 * 1024;

/// Served files never change under their key.
const IMMUTABLE: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_upload))
        // This route only: the app keeps axum's 2 MB default everywhere else.
        .layer(DefaultBodyLimit::max(MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES))
}

/// `/files/{key}`, merged at the bare origin.
pub fn files_router(state: AppState) -> Router {
    Router::new().route("/files/{key}", get(serve_file)).with_state(state)
}

/// The multipart form of an upload: one `file` part.
// Only the contract reads this type (the handler streams the part instead of building it);
// `allow`, not `expect`: rustc 1.95's incremental build panics on an `expect` here.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// A PNG, JPEG or WebP image of at most 5 MiB, recognised by its content.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// A stored file.
#[derive(Serialize, ToSchema)]
pub struct UploadView {
    /// Where the file is served, relative to the bare origin: `/files/<key>`.
    pub url: String,
    /// `<uuid>.<png|jpg|webp>`.
    pub key: String,
}

/// Stores one image and answers where it is served.
#[utoipa::path(post, path = "/uploads", tag = "uploads", security(("bearer" = [])),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, body = UploadView),
        (status = 400, description = "VALIDATION_ERROR: no `file` field, or an empty or malformed one", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage or tournaments.manage, or to be an owner or td of a club", body = ErrorBody),
        (status = 413, description = "PAYLOAD_TOO_LARGE: the file is over 5 MiB", body = ErrorBody),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE: not a PNG, JPEG or WebP image, or the body is not multipart/form-data", body = ErrorBody),
    ))]
async fn create_upload(
    State(app): State<AppState>,
    user: AuthUser,
    multipart: Result<Multipart, MultipartRejection>,
) -> AppResult<(StatusCode, Json<UploadView>)> {
    ensure_may_upload(&app, &user).await?;
    let mut multipart = multipart.map_err(|_| {
        AppError::new(ErrorCode::UnsupportedMediaType, "the body must be multipart/form-data with a `file` field")
    })?;
    let (kind, bytes) = loop {
        let field = multipart.next_field().await.map_err(multipart_error)?;
        match field {
            Some(field) if field.name() == Some("file") => break read_image(field).await?,
            Some(_) => continue,
            None => return Err(AppError::invalid_field("file", "is required")),
        }
    };

    let key = new_key(kind);
    let size = bytes.len();
    app.storage.put(&key, bytes).await?;
    if let Err(err) = record_upload(&app, &user, &key, size, kind).await {
        // An upload nobody can trace is not kept.
        if let Err(cleanup) = app.storage.delete(&key).await {
            tracing::warn!(%key, error = ?cleanup, "an unaudited upload could not be removed");
        }
        return Err(err);
    }
    let url = format!("{FILES_PATH}{key}");
    Ok((StatusCode::CREATED, Json(UploadView { url, key })))
}

/// Platform admins with `content.manage` or `tournaments.manage`, and owners and tds of any
/// club, may upload; everyone else is `403`.
async fn ensure_may_upload(app: &AppState, user: &AuthUser) -> AppResult<()> {
    let role = user.0.admin_role;
    if has_permission(role, Permission::ContentManage) || has_permission(role, Permission::TournamentsManage) {
        return Ok(());
    }
    let memberships = memberships_of(&app.db, user.id()).await?;
    if memberships.iter().any(|(member, _)| matches!(member.role, MemberRole::Owner | MemberRole::Td)) {
        return Ok(());
    }
    Err(AppError::forbidden())
}

/// Reads the `file` field, refusing it as soon as its first bytes are not an accepted image
/// or it grows past the limit: nothing beyond 5 MiB is ever held.
async fn read_image(mut field: Field<'_>) -> AppResult<(ImageKind, Bytes)> {
    let mut buffer = Vec::new();
    let mut kind = None;
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        if buffer.len() + chunk.len() > MAX_UPLOAD_BYTES {
            return Err(AppError::new(ErrorCode::PayloadTooLarge, "the file is over 5 MiB"));
        }
        buffer.extend_from_slice(&chunk);
        if kind.is_none() && buffer.len() >= SNIFF_LEN {
            kind = Some(detect(&buffer)?);
        }
    }
    if buffer.is_empty() {
        return Err(AppError::invalid_field("file", "is empty"));
    }
    let kind = match kind {
        Some(kind) => kind,
        None => detect(&buffer)?,
    };
    Ok((kind, Bytes::from(buffer)))
}

fn detect(bytes: &[u8]) -> AppResult<ImageKind> {
    ImageKind::detect(bytes)
        .ok_or_else(|| AppError::new(ErrorCode::UnsupportedMediaType, "the file is not a PNG, JPEG or WebP image"))
}

/// A body over the route's limit is `413`; a malformed one names the body.
fn multipart_error(err: MultipartError) -> AppError {
    if super::paced_body::came_too_slowly(&err) {
        super::paced_body::request_timeout()
    } else if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        AppError::new(ErrorCode::PayloadTooLarge, "the request body is too large")
    } else {
        AppError::invalid_field("body", err.body_text())
    }
}

/// The audit row of an upload; its actor is the uploader.
async fn record_upload(app: &AppState, user: &AuthUser, key: &str, size: usize, kind: ImageKind) -> AppResult<()> {
    let tx = db::begin_write(&app.db).await?;
    audit::record(
        &tx,
        Some(user.id()),
        "upload.create",
        ("upload", key.to_owned()),
        json!({"key": key, "size": size, "contentType": kind.content_type(), "uploaderId": user.id()}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Serves a stored file. A key outside the served shape (undecodable ones included) is `404`
/// without asking the store.
async fn serve_file(State(app): State<AppState>, key: Result<Path<String>, PathRejection>) -> AppResult<Response> {
    let Ok(Path(key)) = key else { return Err(AppError::not_found("file")) };
    let kind = parse_key(&key).ok_or_else(|| AppError::not_found("file"))?;
    let file = app.storage.get(&key).await?.ok_or_else(|| AppError::not_found("file"))?;
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static(kind.content_type())),
        (CONTENT_LENGTH, HeaderValue::from(file.size)),
        (CACHE_CONTROL, IMMUTABLE),
        (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ];
    Ok((headers, Body::from_stream(file.body)).into_response())
}
