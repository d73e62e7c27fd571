//! Seasons: the public list and the current one (made on demand), and their administration:
//! adding a quarter ahead or behind, archiving one early or reopening it.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{Datelike, NaiveDate, Utc};
use floor_entities::enums::SeasonStatus;
use floor_entities::seasons;
use sea_orm::{ActiveModelTrait, EntityTrait, QuerySelect, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Admin, Json, Path, perm};
use super::validate::Problems;
use super::views::ItemList;
use crate::domain::{audit, seasons as season_rules};
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_current_season))
        .routes(routes!(list_seasons))
        .routes(routes!(list_admin_seasons, create_season))
        .routes(routes!(update_season))
}

/// A rating season: one calendar quarter.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeasonView {
    pub id: Uuid,
    /// First day of the quarter, `YYYY-MM-DD`.
    pub starts_on: NaiveDate,
    /// Last day of the quarter (inclusive), `YYYY-MM-DD`.
    pub ends_on: NaiveDate,
    /// `current` until the quarter has ended (also for a quarter still to come), then
    /// `archived`; an admin may archive one early.
    pub status: SeasonStatus,
}

impl From<seasons::Model> for SeasonView {
    fn from(season: seasons::Model) -> Self {
        Self { id: season.id, starts_on: season.starts_on, ends_on: season.ends_on, status: season.status }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSeason {
    /// The first day of a calendar quarter (`YYYY-MM-DD`); the season ends with the quarter.
    #[schema(pattern = "^[0-9]{4}-(01|04|07|10)-01$")]
    pub starts_on: NaiveDate,
}

#[derive(Deserialize, ToSchema)]
pub struct SeasonChange {
    /// `archived` closes the season early; `current` reopens one whose quarter has not ended.
    pub status: SeasonStatus,
}

/// The season of today's quarter (UTC), created when missing. Its status is `archived`
/// only when an admin closed it early.
#[utoipa::path(get, path = "/seasons/current", tag = "seasons",
    responses(
        (status = 200, body = SeasonView),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn get_current_season(State(app): State<AppState>) -> AppResult<Json<SeasonView>> {
    Ok(Json(season_rules::current_season_for_read(&app.reads, &app.db).await?.into()))
}

/// Every season, newest first; today's quarter is always among them.
#[utoipa::path(get, path = "/seasons", tag = "seasons",
    responses(
        (status = 200, body = ItemList<SeasonView>),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn list_seasons(State(app): State<AppState>) -> AppResult<Json<ItemList<SeasonView>>> {
    season_list(&app).await
}

/// Every season, newest first, for the admin app; today's quarter is always among them.
#[utoipa::path(get, path = "/admin/seasons", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<SeasonView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs seasons.manage", body = ErrorBody),
    ))]
async fn list_admin_seasons(
    State(app): State<AppState>,
    _admin: Admin<perm::SeasonsManage>,
) -> AppResult<Json<ItemList<SeasonView>>> {
    season_list(&app).await
}

async fn season_list(app: &AppState) -> AppResult<Json<ItemList<SeasonView>>> {
    season_rules::current_season_for_read(&app.reads, &app.db).await?;
    let seasons = season_rules::all_seasons(&app.reads).await?;
    Ok(Json(ItemList::new(seasons.into_iter().map(SeasonView::from).collect())))
}

/// How far from today a season may be added: a quarter decades away is a typo.
const SEASON_YEARS_AROUND_TODAY: i32 = 10;

/// Adds the season of a quarter, ahead of time or after the fact; one that has already ended
/// is created `archived`.
#[utoipa::path(post, path = "/admin/seasons", tag = "admin", security(("bearer" = [])), request_body = NewSeason,
    responses(
        (status = 201, body = SeasonView),
        (status = 400, description = "VALIDATION_ERROR: startsOn is not the first day of a quarter within ten years of today", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs seasons.manage", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: that quarter already has its season", body = ErrorBody),
    ))]
async fn create_season(
    State(app): State<AppState>,
    admin: Admin<perm::SeasonsManage>,
    Json(body): Json<NewSeason>,
) -> AppResult<(StatusCode, Json<SeasonView>)> {
    let today = Utc::now().date_naive();
    let mut problems = Problems::default();
    if !season_rules::starts_a_quarter(body.starts_on) {
        problems.add("startsOn", "must be the first day of a calendar quarter (01-01, 04-01, 07-01 or 10-01)");
    }
    if (body.starts_on.year() - today.year()).abs() > SEASON_YEARS_AROUND_TODAY {
        problems.add("startsOn", format!("must be within {SEASON_YEARS_AROUND_TODAY} years of today"));
    }
    problems.into_result()?;

    let tx = db::begin_write(&app.db).await?;
    let season = season_rules::create_season(&tx, body.starts_on, today)
        .await?
        .ok_or_else(|| AppError::new(ErrorCode::InvalidStatus, "that quarter already has its season"))?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "season.create",
        ("season", season.id.to_string()),
        json!({"startsOn": season.starts_on, "endsOn": season.ends_on, "status": season.status}),
    )
    .await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(season.into())))
}

/// Archives a season early or reopens it. Reopening a quarter that has ended is refused: the
/// daily rollover would archive it again. The same status again changes nothing.
#[utoipa::path(patch, path = "/admin/seasons/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = SeasonChange,
    responses(
        (status = 200, body = SeasonView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs seasons.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the season's quarter has ended, it cannot be current again", body = ErrorBody),
    ))]
async fn update_season(
    State(app): State<AppState>,
    admin: Admin<perm::SeasonsManage>,
    Path(id): Path<Uuid>,
    Json(body): Json<SeasonChange>,
) -> AppResult<Json<SeasonView>> {
    let tx = db::begin_write(&app.db).await?;
    let season = seasons::Entity::find_by_id(id)
        .lock_exclusive()
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::not_found("season"))?;
    if season.status == body.status {
        return Ok(Json(season.into()));
    }
    if body.status == SeasonStatus::Current && !season_rules::may_reopen(&season, Utc::now().date_naive()) {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "the season's quarter has ended; it cannot be current again",
        ));
    }
    let before = season.status;
    let mut active: seasons::ActiveModel = season.into();
    active.status = Set(body.status);
    let season = active.update(&tx).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "season.status_change",
        ("season", season.id.to_string()),
        json!({"from": before, "to": season.status}),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(season.into()))
}
