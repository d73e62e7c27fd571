//! The caller's devices: registering and removing push tokens.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::PushPlatform;
use floor_entities::push_tokens;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json, Path};
use super::validate::Problems;
use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorBody};

/// FCM tokens are about 160 characters; this leaves room for other formats.
const MAX_TOKEN_LEN: usize = 4096;

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
    /// When the caller registered it (last time).
    pub registered_at: DateTime<Utc>,
}

/// Registers the caller's device. The token is the key: a token registered before (by this
/// caller or by someone else on the same device) now belongs to the caller.
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
    let row = push_tokens::ActiveModel {
        token: Set(token.clone()),
        user_id: Set(user.id()),
        platform: Set(body.platform),
        created_at: Set(now),
        updated_at: Set(now),
    };
    push_tokens::Entity::insert(row)
        .on_conflict(
            OnConflict::column(push_tokens::Column::Token)
                .update_columns([
                    push_tokens::Column::UserId,
                    push_tokens::Column::Platform,
                    push_tokens::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec_without_returning(&app.db)
        .await?;
    Ok((StatusCode::CREATED, Json(PushTokenView { token, platform: body.platform, registered_at: now })))
}

/// Removes one of the caller's push tokens (at sign-out). A token that is not the caller's,
/// whether unknown or another user's, is `404`: nobody learns about others' devices.
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
    let removed = push_tokens::Entity::delete_many()
        .filter(push_tokens::Column::Token.eq(token))
        .filter(push_tokens::Column::UserId.eq(user.id()))
        .exec(&app.db)
        .await?;
    if removed.rows_affected == 0 {
        return Err(AppError::not_found("push token"));
    }
    Ok(StatusCode::NO_CONTENT)
}
