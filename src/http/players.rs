//! Players as others see them: the public profile, following and unfollowing, and the list
//! of players the caller follows.

use std::collections::{BTreeSet, HashMap};

use axum::extract::State;
use axum::http::StatusCode;
use floor_entities::enums::UserStatus;
use floor_entities::users;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json, MaybeAuthUser, Path};
use super::views::{ItemList, PublicPlayerView, public_player_views};
use crate::domain::accounts::hold_account;
use crate::domain::players::follows;
use crate::http::state::AppState;
use crate::infra::db::{self, IDS_PER_STATEMENT};
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_player))
        .routes(routes!(follow_player, unfollow_player))
        .routes(routes!(list_my_follows))
}

/// A player's public profile. With a token, `followedByMe` tells whether the caller follows
/// them. Never a phone.
#[utoipa::path(get, path = "/players/{userId}", tag = "players", security((), ("bearer" = [])),
    params(("userId" = Uuid, Path, description = "The player's user id")),
    responses(
        (status = 200, body = PublicPlayerView),
        (status = 400, description = "VALIDATION_ERROR: userId is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: a token was sent and is invalid", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such player", body = ErrorBody),
    ))]
async fn get_player(
    State(app): State<AppState>,
    MaybeAuthUser(viewer): MaybeAuthUser,
    Path(user_id): Path<Uuid>,
) -> AppResult<Json<PublicPlayerView>> {
    let player = find_player(&app.reads, user_id).await?;
    Ok(Json(public_player(&app.reads, player, viewer.map(|viewer| viewer.id())).await?))
}

/// Follows a player; following them already changes nothing. Answers the player's card.
#[utoipa::path(put, path = "/players/{userId}/follow", tag = "players", security(("bearer" = [])),
    params(("userId" = Uuid, Path, description = "The player to follow")),
    responses(
        (status = 200, body = PublicPlayerView),
        (status = 400, description = "VALIDATION_ERROR: userId is not a UUID, or is the caller", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such player", body = ErrorBody),
    ))]
async fn follow_player(
    State(app): State<AppState>,
    user: AuthUser,
    Path(user_id): Path<Uuid>,
) -> AppResult<Json<PublicPlayerView>> {
    let player = followable(&app, &user, user_id).await?;
    let tx = db::begin_write(&app.db).await?;
    // Neither end may be deleted meanwhile: taken in id order, as every writer of two does.
    for id in BTreeSet::from([user.id(), player.id]) {
        hold_account(&tx, id).await?;
    }
    follows::follow(&tx, user.id(), player.id).await?;
    tx.commit().await?;
    Ok(Json(public_player(&app.db, player, Some(user.id())).await?))
}

/// Stops following a player; not following them already is fine.
#[utoipa::path(delete, path = "/players/{userId}/follow", tag = "players", security(("bearer" = [])),
    params(("userId" = Uuid, Path, description = "The player to stop following")),
    responses(
        (status = 204, description = "Not following (any more)"),
        (status = 400, description = "VALIDATION_ERROR: userId is not a UUID, or is the caller", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such player", body = ErrorBody),
    ))]
async fn unfollow_player(
    State(app): State<AppState>,
    user: AuthUser,
    Path(user_id): Path<Uuid>,
) -> AppResult<StatusCode> {
    let player = followable(&app, &user, user_id).await?;
    follows::unfollow(&app.db, user.id(), player.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The players the caller follows, most recently followed first, as public cards.
#[utoipa::path(get, path = "/me/follows", tag = "players", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<PublicPlayerView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn list_my_follows(State(app): State<AppState>, user: AuthUser) -> AppResult<Json<ItemList<PublicPlayerView>>> {
    let ids = follows::followees_of(&app.reads, user.id()).await?;
    let mut found = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let rows = users::Entity::find().filter(users::Column::Id.is_in(chunk.iter().copied())).all(&app.reads).await?;
        found.extend(rows.into_iter().map(|player| (player.id, player)));
    }
    // Back into the order of following.
    let players: Vec<users::Model> = ids.iter().filter_map(|id| found.remove(id)).collect();
    Ok(Json(ItemList::new(public_player_views(&app.reads, &players, Some(user.id())).await?)))
}

/// A player's account; a deleted one is gone from here on (`NOT_FOUND`): its card is no more,
/// and nobody follows it.
async fn find_player(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<users::Model> {
    users::Entity::find_by_id(user_id)
        .filter(users::Column::Status.ne(UserStatus::Deleted))
        .one(conn)
        .await?
        .ok_or_else(|| AppError::not_found("player"))
}

/// The player the caller may follow or unfollow: anyone but themselves.
async fn followable(app: &AppState, user: &AuthUser, user_id: Uuid) -> AppResult<users::Model> {
    if user_id == user.id() {
        return Err(AppError::invalid_field("userId", "you cannot follow yourself"));
    }
    find_player(&app.db, user_id).await
}

async fn public_player(
    conn: &impl ConnectionTrait,
    player: users::Model,
    viewer: Option<Uuid>,
) -> AppResult<PublicPlayerView> {
    public_player_views(conn, std::slice::from_ref(&player), viewer)
        .await?
        .pop()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("no card for an existing player")))
}
