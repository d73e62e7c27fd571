//! Search across the platform: tournaments by title, players by name or nickname, clubs by
//! name; at most 20 of each, never a phone.

use axum::extract::State;
use floor_entities::enums::UserStatus;
use floor_entities::{organizers, tournament_translations, tournaments, users};
use sea_orm::sea_query::{Condition, Expr, ExprTrait, Func, LikeExpr, Query as SqlQuery, SimpleExpr};
use sea_orm::{ColumnTrait, EntityTrait, IntoSimpleExpr, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, MaybeAuthUser, Query};
use super::organizers::OrganizerView;
use super::tournaments::{TournamentView, tournament_views};
use super::views::{PublicPlayerView, public_player_views};
use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorBody};

/// Each kind of result is cut at this many.
pub const SEARCH_LIMIT: u64 = 20;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// 2 to 100 characters; matched anywhere in a title, a name or a nickname.
    pub q: String,
}

#[derive(Serialize, ToSchema)]
pub struct SearchResults {
    pub tournaments: Vec<TournamentView>,
    pub players: Vec<PublicPlayerView>,
    pub clubs: Vec<OrganizerView>,
}

/// `LOWER(column) LIKE '%needle%'`, with the needle's wildcards escaped. PostgreSQL folds
/// every alphabet; SQLite's `lower` folds ASCII only, so Cyrillic matches case-sensitively
/// there.
fn contains(column: impl IntoSimpleExpr, needle: &str) -> SimpleExpr {
    let escaped: String = needle
        .to_lowercase()
        .chars()
        .flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] })
        .collect();
    Expr::expr(Func::lower(column.into_simple_expr())).like(LikeExpr::new(format!("%{escaped}%")).escape('\\'))
}

/// Tournaments, players and clubs matching `q`.
#[utoipa::path(get, path = "/search", tag = "tournaments", params(SearchQuery),
    responses(
        (status = 200, body = SearchResults),
        (status = 400, description = "VALIDATION_ERROR: q too short or too long", body = ErrorBody),
    ))]
async fn search(
    State(app): State<AppState>,
    MaybeAuthUser(caller): MaybeAuthUser,
    Query(query): Query<SearchQuery>,
) -> AppResult<Json<SearchResults>> {
    let needle = query.q.trim();
    if !(2..=100).contains(&needle.chars().count()) {
        return Err(AppError::invalid_field("q", "must be 2 to 100 characters"));
    }
    let found = tournaments::Entity::find()
        .filter(
            tournaments::Column::Id.in_subquery(
                SqlQuery::select()
                    .column(tournament_translations::Column::TournamentId)
                    .from(tournament_translations::Entity)
                    .and_where(contains(tournament_translations::Column::Title, needle))
                    .to_owned(),
            ),
        )
        .order_by_desc(tournaments::Column::StartsAt)
        .limit(SEARCH_LIMIT)
        .all(&app.db)
        .await?;
    let people = users::Entity::find()
        .filter(users::Column::Status.eq(UserStatus::Active))
        .filter(
            Condition::any().add(contains(users::Column::Name, needle)).add(contains(users::Column::Nickname, needle)),
        )
        .order_by_asc(users::Column::Nickname)
        .limit(SEARCH_LIMIT)
        .all(&app.db)
        .await?;
    let players = public_player_views(&app.db, &people, caller.map(|user| user.id())).await?;
    let clubs = organizers::Entity::find()
        .filter(contains(organizers::Column::Name, needle))
        .order_by_asc(organizers::Column::Name)
        .limit(SEARCH_LIMIT)
        .all(&app.db)
        .await?;
    Ok(Json(SearchResults {
        tournaments: tournament_views(&app.db, found).await?,
        players,
        clubs: clubs.into_iter().map(OrganizerView::from).collect(),
    }))
}
