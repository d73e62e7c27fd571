//! The caller's own account: `PATCH /me` edits the profile, `POST /me/delete` deletes it.

use axum::extract::State;
use axum::http::StatusCode;
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
use crate::domain::accounts::lock_account;
use crate::domain::auth::otp;
use crate::domain::players::consent;
use crate::domain::players::deletion::{self, Asked, Deleted};
use crate::domain::uploads::{FILES_PATH, parse_key};
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody};
use crate::values::Phone;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(update_me)).routes(routes!(delete_me))
}

/// Fields to change; an absent field stays, `null` clears it (name excepted).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileUpdate {
    /// 1 to 80 characters.
    #[schema(
        max_length = 80,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: Option<String>,
    /// 2 to 32 characters; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 32, pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[^\\x00-\\x20\\x7F][\\t\\n\\v\\f\\r ]*$")]
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
    // The row as it stands under its lock: a deletion that committed meanwhile refuses the
    // change (nothing lands on an anonymised row), and a consent change reads the latest.
    let user = lock_account(&tx, user.id).await?;
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

/// The code that allows a deletion.
#[derive(Deserialize, ToSchema)]
pub struct DeletionRequest {
    /// A fresh six-digit code for the caller's own phone, from `POST /auth/otp/request`.
    #[schema(pattern = "^\\s*[0-9]{6}\\s*$")]
    pub code: String,
}

/// Deletes the caller's account, allowed by a fresh code for their own phone (so a token
/// alone cannot erase a person). In one transaction: sessions, devices, calendar feed,
/// follows, dealer profile and invitations, club memberships, notifications, consent
/// records and strikes go; places in tournaments not yet started are given back with no
/// strike (the waitlist moves up); the phone, names, nickname, avatar and city are erased.
/// Results and eliminations of played tournaments keep their places under the name
/// «Удалённый игрок». The account's tokens answer `401` from then on, and the same phone may
/// sign up again as a new person, which starts under the registration ban the account was
/// under, until it ends. A refusal (`USER_BANNED`, `SOLE_OWNER`, `PLAYING_NOW`) changes
/// nothing and leaves the code usable. Every live picture (`GET …/live`, the share page, the
/// venue screen, a `join`) that showed the person shows «Удалённый игрок» at once, as a new
/// version.
#[utoipa::path(post, path = "/me/delete", tags = ["profile", "extension"], security(("bearer" = [])),
    request_body = DeletionRequest,
    responses(
        (status = 204, description = "The account is deleted."),
        (status = 400, description = "VALIDATION_ERROR, INVALID_OTP: the code is wrong, expired or used up (the attempt counts)", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "USER_BANNED: a banned account is erased through the platform's support", body = ErrorBody),
        (status = 409, description = "SOLE_OWNER: the only owner of a club; PLAYING_NOW: seated in a running tournament and not eliminated (a player already out may delete)", body = ErrorBody),
    ))]
async fn delete_me(
    State(app): State<AppState>,
    AuthUser(user): AuthUser,
    Json(body): Json<DeletionRequest>,
) -> AppResult<StatusCode> {
    let code = otp::parse_code(&body.code)?;
    let phone = Phone::parse(&user.phone)
        .map_err(|err| AppError::Internal(anyhow::anyhow!("account {} has an unreadable phone: {err}", user.id)))?;
    let deleted =
        deletion::delete_account(&app.db, &app.erasures, &app.notifier, &phone, code, Asked::InTheApp).await?;
    after_deletion(&app, deleted).await;
    Ok(StatusCode::NO_CONTENT)
}

/// What follows a committed deletion, outside its transaction: the freed seats' notices are
/// pushed, uploaded avatars leave storage, and the account's live connections close.
pub async fn after_deletion(app: &AppState, deleted: Deleted) {
    app.notifier.push_in_background(&app.db, deleted.promoted);
    let uploaded = deleted
        .avatar_urls
        .iter()
        .filter_map(|url| url.strip_prefix(FILES_PATH))
        .filter(|key| parse_key(key).is_some());
    for key in uploaded {
        if let Err(err) = app.storage.delete(key).await {
            tracing::warn!(user_id = %deleted.user_id, error = %err, "could not remove a deleted account's avatar file");
        }
    }
    app.restated(&deleted.restated).await;
    app.live_sockets.disconnect_user(deleted.user_id).await;
}
