//! The caller's devices: registering and removing push tokens ([`crate::domain::players::devices`]).

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::PushPlatform;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json, Path};
use super::validate::Problems;
use crate::domain::accounts::hold_account;
use crate::domain::players::devices;
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody};

/// FCM tokens are about 160 characters; this leaves room for other formats.
const MAX_TOKEN_LEN: usize = 4096;

// The descriptions below (the contract) name the cap as a number.
const _: () = assert!(devices::DEVICES_PER_ACCOUNT == 20, "POST /me/push-tokens says an account keeps 20 devices");

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(register_push_token)).routes(routes!(remove_push_token))
}

#[derive(Deserialize, ToSchema)]
pub struct NewPushToken {
    /// The device's FCM registration token.
    #[schema(
        max_length = 4096,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub token: String,
    pub platform: PushPlatform,
}

/// A device registered for pushes.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushTokenView {
    pub token: String,
    pub platform: PushPlatform,
    /// When the caller registered it (last time); the least recent goes first past 20 devices.
    pub registered_at: DateTime<Utc>,
}

/// Registers the caller's device for pushes.
///
/// Tokens are kept per account: registering a token that another account holds (a shared
/// device, or someone who learnt the token) gives the caller a row of its own and leaves the
/// other account's row, and its pushes, alone; the same token again only renews the caller's
/// row. A device signed into two accounts gets both accounts' pushes until the app removes its
/// token at sign-out. An account keeps at most 20 devices: registering a 21st forgets the
/// account's least recently registered one.
#[utoipa::path(post, path = "/me/push-tokens", tag = "devices", security(("bearer" = [])), request_body = NewPushToken,
    responses(
        (status = 201, body = PushTokenView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn register_push_token(
    State(app): State<AppState>,
    user: AuthUser,
    Json(body): Json<NewPushToken>,
) -> AppResult<(StatusCode, Json<PushTokenView>)> {
    let mut problems = Problems::default();
    let token = problems.text("token", &body.token, 1, MAX_TOKEN_LEN);
    if token.contains(char::is_whitespace) {
        problems.add("token", "must not contain spaces");
    }
    problems.into_result()?;

    let now = Utc::now();
    let tx = db::begin_write(&app.db).await?;
    hold_account(&tx, user.id()).await?;
    devices::register(&tx, user.id(), &token, body.platform, now).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(PushTokenView { token, platform: body.platform, registered_at: now })))
}

/// Removes the caller's registration of a push token (the app does at sign-out).
///
/// Only the caller's: another account that registered the same token keeps its own. A token
/// the caller has not registered, whether unknown or only another account's, is `404`: nobody
/// learns about others' devices, and nobody can remove them.
#[utoipa::path(delete, path = "/me/push-tokens/{token}", tag = "devices", security(("bearer" = [])),
    params(("token" = String, Path, description = "The token as registered, URL-encoded")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: the caller has no such token", body = ErrorBody),
    ))]
async fn remove_push_token(
    State(app): State<AppState>,
    user: AuthUser,
    Path(token): Path<String>,
) -> AppResult<StatusCode> {
    if !devices::remove(&app.db, user.id(), &token).await? {
        return Err(AppError::not_found("push token"));
    }
    Ok(StatusCode::NO_CONTENT)
}
