//! Search across the platform: tournaments by title, players by name or nickname, clubs by
//! name; at most 20 of each, never a phone.

use axum::extract::State;
use floor_actors::rules::rating::tier_for_level;
use floor_entities::enums::UserStatus;
use floor_entities::{level_tiers, organizers, player_profiles, tournament_translations, tournaments, users};
use sea_orm::sea_query::{Condition, Expr, ExprTrait, Func, LikeExpr, SimpleExpr};
use sea_orm::{ColumnTrait, EntityTrait, IntoSimpleExpr, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, Query};
use super::organizers::OrganizerView;
use super::tournaments::{TournamentView, tournament_views};
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

/// A player as anyone may see them.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlayerCard {
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub level: i32,
    pub tier: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SearchResults {
    pub tournaments: Vec<TournamentView>,
    pub players: Vec<PlayerCard>,
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
async fn search(State(app): State<AppState>, Query(query): Query<SearchQuery>) -> AppResult<Json<SearchResults>> {
    let needle = query.q.trim();
    if !(2..=100).contains(&needle.chars().count()) {
        return Err(AppError::invalid_field("q", "must be 2 to 100 characters"));
    }
    let tournament_ids: Vec<Uuid> = tournament_translations::Entity::find()
        .select_only()
        .column(tournament_translations::Column::TournamentId)
        .distinct()
        .filter(contains(tournament_translations::Column::Title, needle))
        .into_tuple()
        .all(&app.db)
        .await?;
    let found = tournaments::Entity::find()
        .filter(tournaments::Column::Id.is_in(tournament_ids))
        .order_by_desc(tournaments::Column::StartsAt)
        .limit(SEARCH_LIMIT)
        .all(&app.db)
        .await?;
    let people = users::Entity::find()
        .filter(users::Column::Status.eq(UserStatus::Active))
        .filter(Condition::any().add(contains(users::Column::Name, needle)).add(contains(users::Column::Nickname, needle)))
        .find_also_related(player_profiles::Entity)
        .order_by_asc(users::Column::Nickname)
        .limit(SEARCH_LIMIT)
        .all(&app.db)
        .await?;
    let tiers = level_tiers::Entity::find().all(&app.db).await?;
    let players = people
        .into_iter()
        .map(|(user, profile)| {
            let level = profile.map_or(1, |p| p.level);
            PlayerCard {
                user_id: user.id,
                name: user.name,
                nickname: user.nickname,
                avatar_url: user.avatar_url,
                level,
                tier: tier_for_level(tiers.iter().map(|t| (t.key.as_str(), t.min_level)), level).map(str::to_owned),
            }
        })
        .collect();
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
