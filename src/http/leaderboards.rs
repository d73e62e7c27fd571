//! Leaderboards: a season's standings (whole, or the caller's summary) and the level board.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::{DateTime, Utc};
use floor_actors::rules::rating::tier_for_level;
use floor_entities::{level_tiers, seasons};
use sea_orm::EntityTrait;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::cached;
use super::extract::{AuthUser, Json, Query};
use super::views::ItemList;
use crate::domain::leaderboards::{LevelStanding, Player, SeasonStanding, level_board, season_board};
use crate::domain::seasons::{current_season_for_read, quarter_of};
use crate::http::read_cache::Answer;
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_season_leaderboard))
        .routes(routes!(get_season_summary))
        .routes(routes!(get_level_leaderboard))
}

/// A player's place in a season.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeasonRow {
    /// Equal points share a place (1, 2, 2, 4).
    pub place: i64,
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    /// Points of the season's confirmed results.
    pub season_points: i64,
    /// Confirmed results within the season.
    pub games_played: i64,
    /// First places within the season.
    pub wins: i64,
}

impl From<(i64, SeasonStanding)> for SeasonRow {
    fn from((place, standing): (i64, SeasonStanding)) -> Self {
        let Player { user_id, name, nickname, avatar_url } = standing.player;
        Self {
            place,
            user_id,
            name,
            nickname,
            avatar_url,
            season_points: standing.season_points,
            games_played: standing.games_played,
            wins: standing.wins,
        }
    }
}

/// A player's place by xp.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelRow {
    /// Equal xp share a place (1, 2, 2, 4).
    pub place: i64,
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub xp: i64,
    pub level: i32,
    /// Key of the level tier (`fish` … `legend`).
    pub tier: Option<String>,
}

/// The top of the current season and where the caller stands.
#[derive(Serialize, ToSchema)]
pub struct SeasonSummary {
    /// The first three rows of the season's leaderboard (fewer when fewer played).
    pub top: Vec<SeasonRow>,
    /// The caller's row with their real place; `null` without a result this season.
    pub me: Option<SeasonRow>,
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct SeasonChoice {
    /// The season to show; the current one when left out.
    #[param(value_type = Option<Uuid>)]
    pub season_id: Option<String>,
}

/// A season's leaderboard, whole: every account with a result in the season's tournaments,
/// by season points, highest first. Guests and banned accounts are not listed.
#[utoipa::path(get, path = "/leaderboards/season", tag = "rating", params(SeasonChoice),
    responses(
        (status = 200, body = ItemList<SeasonRow>),
        (status = 400, description = "VALIDATION_ERROR: seasonId is not a UUID", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such season", body = ErrorBody),
    ))]
async fn get_season_leaderboard(
    State(app): State<AppState>,
    Query(choice): Query<SeasonChoice>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let chosen = match choice.season_id.as_deref().map(str::trim) {
        Some(raw) => Some(Uuid::parse_str(raw).map_err(|_| AppError::invalid_field("seasonId", "must be a UUID"))?),
        None => None,
    };
    let key = match chosen {
        Some(id) => format!("GET /leaderboards/season {id}"),
        None => "GET /leaderboards/season current".to_owned(),
    };
    cached::answer_naming_people(&app, &headers, key, async {
        let (season, holds_for) = match chosen {
            Some(id) => {
                let season = seasons::Entity::find_by_id(id)
                    .one(&app.reads)
                    .await?
                    .ok_or_else(|| AppError::not_found("season"))?;
                (season, None)
            }
            // "Current" names another season from the next quarter on.
            None => (current_season_for_read(&app.reads, &app.db).await?, until_next_quarter(Utc::now())),
        };
        let rows = season_board(&app.reads, season.id).await?;
        Answer::json_holding_for(&ItemList::new(rows.into_iter().map(SeasonRow::from).collect()), holds_for)
    })
    .await
}

/// How long until the next calendar quarter (UTC) begins.
fn until_next_quarter(now: DateTime<Utc>) -> Option<std::time::Duration> {
    let (_, last_day) = quarter_of(now.date_naive());
    let next_start = last_day.succ_opt()?.and_hms_opt(0, 0, 0)?.and_utc();
    (next_start - now).to_std().ok()
}

/// How many rows the summary's top shows.
const SUMMARY_TOP: usize = 3;

/// The current season's top three and the caller's own row.
#[utoipa::path(get, path = "/leaderboards/season/summary", tag = "rating", security(("bearer" = [])),
    responses(
        (status = 200, body = SeasonSummary),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn get_season_summary(State(app): State<AppState>, user: AuthUser) -> AppResult<Json<SeasonSummary>> {
    let season = current_season_for_read(&app.reads, &app.db).await?;
    let rows = season_board(&app.reads, season.id).await?;
    let me = rows.iter().find(|(_, standing)| standing.player.user_id == user.id()).cloned().map(SeasonRow::from);
    let top = rows.into_iter().take(SUMMARY_TOP).map(SeasonRow::from).collect();
    Ok(Json(SeasonSummary { top, me }))
}

/// The top 100 players by xp among those who have played; equal xp share a place.
#[utoipa::path(get, path = "/leaderboards/level", tag = "rating",
    responses(
        (status = 200, body = ItemList<LevelRow>),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn get_level_leaderboard(State(app): State<AppState>, headers: HeaderMap) -> AppResult<Response> {
    cached::answer_naming_people(&app, &headers, "GET /leaderboards/level".to_owned(), async {
        let rows = level_board(&app.reads).await?;
        let tiers = level_tiers::Entity::find().all(&app.reads).await?;
        let items: Vec<LevelRow> = rows
            .into_iter()
            .map(|(place, LevelStanding { player, xp, level, .. })| LevelRow {
                place,
                user_id: player.user_id,
                name: player.name,
                nickname: player.nickname,
                avatar_url: player.avatar_url,
                xp,
                level,
                tier: tier_for_level(tiers.iter().map(|tier| (tier.key.as_str(), tier.min_level)), level)
                    .map(str::to_owned),
            })
            .collect();
        Answer::json(&ItemList::new(items))
    })
    .await
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_current_season_holds_until_the_next_quarter_begins() {
        let at = |y, m, d, h| Utc.with_ymd_and_hms(y, m, d, h, 0, 0).single().expect("a time");
        let hours = |n: u64| Some(std::time::Duration::from_secs(n * 3600));
        assert_eq!(until_next_quarter(at(2026, 12, 31, 23)), hours(1));
        assert_eq!(until_next_quarter(at(2026, 3, 31, 0)), hours(24));
        assert_eq!(until_next_quarter(at(2026, 4, 1, 0)), hours(91 * 24), "from the first moment of a quarter");
    }
}
