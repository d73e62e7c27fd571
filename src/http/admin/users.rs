//! Player moderation by platform staff: searching accounts, banning and unbanning them, and
//! merging a duplicate account into the main one (the merge itself is `crate::domain::players::merge`).

use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_entities::enums::{AdminRole, UserStatus};
use floor_entities::{refresh_tokens, users};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::domain::accounts::shown_phone;
use crate::domain::audit;
use crate::domain::auth::permissions::{Permission, has_permission};
use crate::domain::players::merge;
use crate::http::extract::{Admin, AuthUser, Json, Path, Query, perm};
use crate::http::state::AppState;
use crate::http::views::{ItemList, PlayerProfileView, player_profile_views};
use crate::infra::db::{self, find_where_in};
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_users)).routes(routes!(set_user_status)).routes(routes!(merge_users))
}

/// An account as moderators see it, with its rating and registration ban.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminUserView {
    pub id: Uuid,
    /// Null once the account is deleted: the phone was erased.
    pub phone: Option<String>,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub city_slug: Option<String>,
    pub admin_role: Option<AdminRole>,
    /// `banned`: the account cannot sign in; `deleted`: its owner deleted it (its person is
    /// erased, its played places stay under «Удалённый игрок»).
    pub status: UserStatus,
    /// The account this one was merged into; such an account stays banned for good.
    pub merged_into_user_id: Option<Uuid>,
    /// When its owner deleted the account; null for every other account.
    pub deleted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub profile: RatingView,
}

/// The rating part of a player's profile. `skill` is the displayed value (1.0 to 10.0).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RatingView {
    pub xp: i64,
    pub level: i32,
    /// Key of the level tier (`fish` … `legend`).
    pub tier: Option<String>,
    pub skill: f64,
    pub games_played: i32,
    pub wins: i32,
    /// Registration is closed to the player until then (strikes).
    pub ban_until: Option<DateTime<Utc>>,
}

impl From<PlayerProfileView> for RatingView {
    fn from(profile: PlayerProfileView) -> Self {
        Self {
            xp: profile.xp,
            level: profile.level,
            tier: profile.tier,
            skill: profile.skill,
            games_played: profile.games_played,
            wins: profile.wins,
            ban_until: profile.ban_until,
        }
    }
}

/// The rows of `users`, in their order.
async fn admin_user_views(conn: &impl ConnectionTrait, users: Vec<users::Model>) -> AppResult<Vec<AdminUserView>> {
    let profiles = player_profile_views(conn, &users).await?;
    Ok(users
        .into_iter()
        .zip(profiles)
        .map(|(user, profile)| AdminUserView {
            id: user.id,
            phone: shown_phone(&user.phone).map(str::to_owned),
            name: user.name,
            nickname: user.nickname,
            avatar_url: user.avatar_url,
            city_slug: user.city_slug,
            admin_role: user.admin_role,
            status: user.status,
            merged_into_user_id: user.merged_into_user_id,
            deleted_at: user.deleted_at,
            created_at: user.created_at,
            profile: profile.into(),
        })
        .collect())
}

async fn admin_user_view(conn: &impl ConnectionTrait, user: users::Model) -> AppResult<AdminUserView> {
    admin_user_views(conn, vec![user])
        .await?
        .pop()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a view for one user came back empty")))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserSearch {
    /// At most 100 characters. Matches a name or nickname containing it (any case), or,
    /// when it is written like a phone (digits with `+`, spaces, dashes, brackets), a phone
    /// containing its digits. Absent or blank: every account.
    #[param(max_length = 100)]
    pub q: Option<String>,
}

/// Longest search text accepted.
const MAX_QUERY_CHARS: usize = 100;

/// Whether an account matches the search text `query` (already trimmed, not empty).
pub fn matches_search(query: &str, phone: &str, name: Option<&str>, nickname: Option<&str>) -> bool {
    let lowered = query.to_lowercase();
    let contains = |text: Option<&str>| text.is_some_and(|text| text.to_lowercase().contains(&lowered));
    let digits: String = query.chars().filter(char::is_ascii_digit).collect();
    let phone_like =
        !digits.is_empty() && query.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '(' | ')'));
    (phone_like && phone.contains(&digits)) || contains(name) || contains(nickname)
}

/// The ids of the accounts matching `query`. Case folding happens here rather than in SQL
/// because SQLite's `lower()` folds ASCII only and names are mostly Cyrillic; only the four
/// columns compared are read.
async fn matching_user_ids(conn: &impl ConnectionTrait, query: &str) -> AppResult<Vec<Uuid>> {
    let candidates: Vec<(Uuid, String, Option<String>, Option<String>)> = users::Entity::find()
        .select_only()
        .columns([users::Column::Id, users::Column::Phone, users::Column::Name, users::Column::Nickname])
        .into_tuple()
        .all(conn)
        .await?;
    Ok(candidates
        .into_iter()
        .filter(|(_, phone, name, nickname)| {
            matches_search(query, shown_phone(phone).unwrap_or_default(), name.as_deref(), nickname.as_deref())
        })
        .map(|(id, ..)| id)
        .collect())
}

/// Accounts by phone, name or nickname, newest first; every account without `q`.
#[utoipa::path(get, path = "/admin/users", tag = "admin", security(("bearer" = [])), params(UserSearch),
    responses(
        (status = 200, body = ItemList<AdminUserView>),
        (status = 400, description = "VALIDATION_ERROR: q is longer than 100 characters", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs moderation", body = ErrorBody),
    ))]
async fn list_users(
    State(app): State<AppState>,
    _admin: Admin<perm::Moderation>,
    Query(search): Query<UserSearch>,
) -> AppResult<Json<ItemList<AdminUserView>>> {
    // The length as sent, as the schema's `maxLength` counts it.
    if search.q.as_deref().is_some_and(|q| q.chars().count() > MAX_QUERY_CHARS) {
        return Err(AppError::invalid_field("q", format!("must be at most {MAX_QUERY_CHARS} characters")));
    }
    let query = search.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let mut found = match query {
        None => users::Entity::find().all(&app.reads).await?,
        Some(query) => {
            let ids = matching_user_ids(&app.reads, query).await?;
            find_where_in::<users::Entity, _>(&app.reads, users::Column::Id, &ids).await?
        }
    };
    found.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    Ok(Json(ItemList::new(admin_user_views(&app.reads, found).await?)))
}

#[derive(Deserialize, ToSchema)]
pub struct StatusChange {
    pub status: ModeratedStatus,
}

/// The statuses a moderator sets; only its owner deletes an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModeratedStatus {
    Active,
    Banned,
}

impl From<ModeratedStatus> for UserStatus {
    fn from(status: ModeratedStatus) -> Self {
        match status {
            ModeratedStatus::Active => Self::Active,
            ModeratedStatus::Banned => Self::Banned,
        }
    }
}

/// Refuses to ban `target` on behalf of `caller`: nobody bans themselves, and an account
/// with a platform role is banned only by someone who may manage admins.
fn ensure_may_ban(caller: &AuthUser, target: &users::Model) -> AppResult<()> {
    if caller.id() == target.id {
        return Err(AppError::new(ErrorCode::InvalidStatus, "you cannot ban your own account"));
    }
    if target.admin_role.is_some() && !has_permission(caller.0.admin_role, Permission::AdminsManage) {
        return Err(AppError::new(ErrorCode::Forbidden, "banning a platform admin needs admins.manage"));
    }
    Ok(())
}

/// Bans or unbans an account. A ban signs all its apps out (its refresh tokens are
/// revoked; its access tokens stop working at once, since every request reads the account;
/// its live Socket.IO connections are closed). A merged duplicate stays banned.
/// The same status again changes nothing.
#[utoipa::path(patch, path = "/admin/users/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = StatusChange,
    responses(
        (status = 200, body = AdminUserView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs moderation; banning an account with a platform role needs admins.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: banning yourself, unbanning a merged duplicate, a deleted account, or the status changed meanwhile", body = ErrorBody),
    ))]
async fn set_user_status(
    State(app): State<AppState>,
    admin: Admin<perm::Moderation>,
    Path(user_id): Path<Uuid>,
    Json(body): Json<StatusChange>,
) -> AppResult<Json<AdminUserView>> {
    let tx = db::begin_write(&app.db).await?;
    let status = UserStatus::from(body.status);
    let user = users::Entity::find_by_id(user_id).one(&tx).await?.ok_or_else(|| AppError::not_found("user"))?;
    if user.status == UserStatus::Deleted {
        return Err(AppError::new(ErrorCode::InvalidStatus, "this account was deleted by its owner"));
    }
    if user.status == status {
        return Ok(Json(admin_user_view(&tx, user).await?));
    }
    if status == UserStatus::Banned {
        ensure_may_ban(&admin.user, &user)?;
    }
    if let Some(main) = user.merged_into_user_id {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            format!("this account was merged into {main}: its history moved there, and it stays banned"),
        ));
    }
    let now = Utc::now();
    // Guarded by the status read: of two moderators acting at once, the second gets 409.
    let changed = users::Entity::update_many()
        .col_expr(users::Column::Status, Expr::value(status))
        .col_expr(users::Column::UpdatedAt, Expr::value(now))
        .filter(users::Column::Id.eq(user.id))
        .filter(users::Column::Status.eq(user.status))
        .exec(&tx)
        .await?;
    if changed.rows_affected == 0 {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the account's status changed meanwhile"));
    }
    let sessions_revoked = if status == UserStatus::Banned {
        refresh_tokens::Entity::update_many()
            .col_expr(refresh_tokens::Column::RevokedAt, Expr::value(Some(now)))
            .filter(refresh_tokens::Column::UserId.eq(user.id))
            .filter(refresh_tokens::Column::RevokedAt.is_null())
            .exec(&tx)
            .await?
            .rows_affected
    } else {
        0
    };
    let action = if status == UserStatus::Banned { "user.ban" } else { "user.unban" };
    audit::record(
        &tx,
        Some(admin.user.id()),
        action,
        ("user", user.id.to_string()),
        json!({"from": user.status, "to": status, "refreshTokensRevoked": sessions_revoked}),
    )
    .await?;
    let user = users::Entity::find_by_id(user.id).one(&tx).await?.ok_or_else(|| AppError::not_found("user"))?;
    let view = admin_user_view(&tx, user).await?;
    tx.commit().await?;
    if status == UserStatus::Banned {
        app.live_sockets.disconnect_user(user_id).await;
    }
    Ok(Json(view))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeRequest {
    /// The account to fold into the one in the path; it is left banned.
    pub duplicate_user_id: Uuid,
}

/// Merges a duplicate account into the main one `{id}`, in one transaction. Registrations
/// move except in tournaments where the main account is registered too: those stay with the
/// duplicate, and where the tournament is still open for registration a live one is
/// cancelled (no strike) and its seat goes to the waitlist. Results move except in
/// tournaments where the main account has one; strikes, follows (no self-follow, no
/// repeats), devices, notifications, club memberships (where both are staff, the main
/// account keeps the stronger role), dealer assignments and profile, and claimed guests
/// follow. The duplicate's sessions are revoked, not moved. Both profiles are rebuilt
/// chronologically and the ban recomputed. The duplicate keeps its phone and is banned, so
/// it cannot sign in again. Neither account may be banned already.
#[utoipa::path(post, path = "/admin/users/{id}/merge", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The main account")), request_body = MergeRequest,
    responses(
        (status = 200, description = "The main account after the merge", body = AdminUserView),
        (status = 400, description = "VALIDATION_ERROR: duplicateUserId missing, malformed or equal to {id}", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs moderation; a duplicate with a platform role needs admins.manage; a duplicate who is a club owner or td needs organizers.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: either account", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: either account is your own, or either account is banned (a merged duplicate is) or deleted", body = ErrorBody),
    ))]
async fn merge_users(
    State(app): State<AppState>,
    admin: Admin<perm::Moderation>,
    Path(main_id): Path<Uuid>,
    Json(body): Json<MergeRequest>,
) -> AppResult<Json<AdminUserView>> {
    if body.duplicate_user_id == main_id {
        return Err(AppError::invalid_field("duplicateUserId", "must be another account than the main one"));
    }
    let tx = db::begin_write(&app.db).await?;
    let (main, duplicate) = merge::lock_accounts(&tx, main_id, body.duplicate_user_id).await?;
    ensure_may_ban(&admin.user, &duplicate)?;
    merge::ensure_may_merge(&tx, &admin.user.0, &main, &duplicate).await?;
    merge::ensure_mergeable(&main, &duplicate)?;
    let merged = merge::merge_accounts(&tx, &app.notifier, main.id, duplicate.id, Utc::now()).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "user.merge",
        ("user", main.id.to_string()),
        json!({"duplicateUserId": duplicate.id, "moved": merged.report}),
    )
    .await?;
    let view = admin_user_view(&tx, main).await?;
    tx.commit().await?;
    app.live_sockets.disconnect_user(duplicate.id).await;
    app.notifier.push_in_background(&app.db, merged.promotions);
    Ok(Json(view))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_nicknames_match_in_any_case_and_alphabet() {
        assert!(matches_search("анна", "+79990000001", Some("Анна Петрова"), None));
        assert!(matches_search("ACE", "+79990000001", None, Some("the_ace")));
        assert!(!matches_search("boris", "+79990000001", Some("Анна"), Some("ace")));
    }

    #[test]
    fn a_phone_matches_by_its_digits_when_the_query_looks_like_one() {
        assert!(matches_search("+7 (999) 000", "+79990001234", None, None));
        assert!(matches_search("1234", "+79990001234", None, None));
        assert!(!matches_search("4321", "+79990001234", None, None));
        // Letters make it a name search: a nickname's digits do not reach the phone.
        assert!(!matches_search("ace1", "+79990001234", None, Some("joker")));
        assert!(matches_search("ace1", "+79990001234", None, Some("Ace17")));
    }
}
