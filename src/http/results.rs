//! Results: a tournament's protocol, a player's history, and the platform's recount.

use axum::extract::State;
use floor_entities::{tournaments, users};
use sea_orm::EntityTrait;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Admin, AuthUser, Json, Path, perm};
use super::views::ItemList;
use crate::domain::tournaments::results::{ResultView, player_results, recount, tournament_results};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tournament_results))
        .routes(routes!(list_player_results))
        .routes(routes!(recount_results))
}

/// The protocol of a tournament by place (empty until confirmed). A guest's row has no
/// `userId` until the guest signs up.
#[utoipa::path(get, path = "/tournaments/{id}/results", tag = "results", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = ItemList<ResultView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_tournament_results(
    State(app): State<AppState>,
    _user: AuthUser,
    Path(id): Path<Uuid>,
) -> AppResult<Json<ItemList<ResultView>>> {
    tournaments::Entity::find_by_id(id).one(&app.reads).await?.ok_or_else(|| AppError::not_found("tournament"))?;
    Ok(Json(ItemList { items: tournament_results(&app.reads, id).await? }))
}

/// A player's results, newest first.
#[utoipa::path(get, path = "/players/{userId}/results", tag = "results", security(("bearer" = [])),
    params(("userId" = Uuid, Path)),
    responses(
        (status = 200, body = ItemList<ResultView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_player_results(
    State(app): State<AppState>,
    _user: AuthUser,
    Path(user_id): Path<Uuid>,
) -> AppResult<Json<ItemList<ResultView>>> {
    users::Entity::find_by_id(user_id).one(&app.reads).await?.ok_or_else(|| AppError::not_found("player"))?;
    Ok(Json(ItemList { items: player_results(&app.reads, user_id).await? }))
}

/// Recounts a finished tournament: the results are written anew with today's settings
/// (counting guests who signed up since), keeping each row's `createdAt`, and every affected
/// profile is rebuilt chronologically.
#[utoipa::path(post, path = "/admin/tournaments/{id}/recount", tag = "results", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = ItemList<ResultView>, description = "the new protocol, by place"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs tournaments.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "TOURNAMENT_NOT_FINISHED", body = ErrorBody),
    ))]
async fn recount_results(
    State(app): State<AppState>,
    admin: Admin<perm::TournamentsManage>,
    Path(id): Path<Uuid>,
) -> AppResult<Json<ItemList<ResultView>>> {
    recount(&app.db, id, admin.user.id()).await?;
    Ok(Json(ItemList { items: tournament_results(&app.db, id).await? }))
}
