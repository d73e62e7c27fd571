//! The caller's own profile: `PATCH /me`.

use axum::extract::State;
use chrono::Utc;
use floor_entities::users;
use sea_orm::{ActiveModelTrait, Set};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json, double_option};
use super::validate::{Problems, active_city, optional_text, url};
use super::views::{PlayerProfileView, player_profile_view};
use crate::app::AppState;
use crate::db;
use crate::error::{AppResult, ErrorBody};
use crate::players::consent;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(update_me))
}

/// Fields to change; an absent field stays, `null` clears it (name excepted).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileUpdate {
    /// 1 to 80 characters.
    #[schema(max_length = 80, pattern = "[^\\t\\n\\v\\f\\r ]")]
    pub name: Option<String>,
    /// 2 to 32 characters; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 32, pattern = "[^\\t\\n\\v\\f\\r ][\\s\\S]*[^\\t\\n\\v\\f\\r ]")]
    pub nickname: Option<Option<String>>,
    /// An http(s) address, usually from `POST /uploads`; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub avatar_url: Option<Option<String>>,
    /// Slug of an active city from `GET /cities`; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub city_slug: Option<Option<String>>,
    /// Consent to personal data processing, to the text of `CONSENT_VERSION`; `false`
    /// withdraws it.
    pub consent_accepted: Option<bool>,
}

/// Edits the caller's name, nickname, avatar, city and consent.
#[utoipa::path(patch, path = "/me", tag = "profile", security(("bearer" = [])), request_body = ProfileUpdate,
    responses(
        (status = 200, body = PlayerProfileView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn update_me(
    State(app): State<AppState>,
    AuthUser(user): AuthUser,
    Json(body): Json<ProfileUpdate>,
) -> AppResult<Json<PlayerProfileView>> {
    let mut problems = Problems::default();
    let name = body.name.map(|name| problems.text("name", &name, 1, 80));
    let nickname = body.nickname.map(|nickname| optional_text(&mut problems, "nickname", nickname, 2, 32));
    let avatar_url = body.avatar_url.map(|avatar| avatar.map(|link| url(&mut problems, "avatarUrl", &link)));
    if let Some(Some(slug)) = &body.city_slug {
        active_city(&app.db, &mut problems, "citySlug", slug).await?;
    }
    problems.into_result()?;

    let now = Utc::now();
    let tx = db::begin_write(&app.db).await?;
    let mut active: users::ActiveModel = user.clone().into();
    if let Some(name) = name {
        active.name = Set(Some(name));
    }
    if let Some(nickname) = nickname {
        active.nickname = Set(nickname);
    }
    if let Some(avatar_url) = avatar_url {
        active.avatar_url = Set(avatar_url);
    }
    if let Some(city_slug) = body.city_slug {
        active.city_slug = Set(city_slug);
    }
    if let Some(change) =
        body.consent_accepted.and_then(|accepted| consent::change_of(&user, accepted, &app.config.consent_version))
    {
        consent::apply(&tx, &mut active, user.id, change, now).await?;
    }
    active.updated_at = Set(now);
    let user = active.update(&tx).await?;
    tx.commit().await?;
    Ok(Json(player_profile_view(&app.db, &user).await?))
}
