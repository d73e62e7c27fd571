//! The platform's rating and sanction settings: reading them and replacing them whole.

use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_actors::rules::rating::RatingConfig;
use floor_entities::rating_config;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ConnectionTrait, EntityTrait, QuerySelect, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::domain::seed::DEFAULT_RATING_CONFIG_ID;
use crate::domain::{audit, rating, strikes};
use crate::http::extract::{Admin, Json, perm};
use crate::http::state::AppState;
use crate::http::validate::Problems;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_rating_config, replace_rating_config))
}

/// The nine settings, as the admin app edits them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RatingSettings {
    /// Multiplier of the season points formula; 0 < pointsBase <= 1000.
    #[schema(exclusive_minimum = 0, maximum = 1000)]
    pub points_base: f64,
    /// Points for mere participation; 0..=1000.
    #[schema(minimum = 0, maximum = 1000)]
    pub min_points: i32,
    /// Base of the level threshold `round(xpLevelBase * (L - 1) ^ xpLevelExponent)`; 0 < x <= 10000.
    #[schema(exclusive_minimum = 0, maximum = 10000)]
    pub xp_level_base: f64,
    /// Exponent of the level threshold; 0 < x <= 5.
    #[schema(exclusive_minimum = 0, maximum = 5)]
    pub xp_level_exponent: f64,
    /// Skill smoothing; 0 < skillAlpha <= 1.
    #[schema(exclusive_minimum = 0, maximum = 1)]
    pub skill_alpha: f64,
    /// Raw starting skill of a new player, 0..=1 (0.4444 is displayed as 5.0).
    #[schema(minimum = 0, maximum = 1)]
    pub skill_initial: f64,
    /// Unforgiven strikes within the window that cause a registration ban; 1..=100.
    #[schema(minimum = 1, maximum = 100)]
    pub strikes_to_ban: i32,
    /// Days over which strikes count; 1..=365.
    #[schema(minimum = 1, maximum = 365)]
    pub strike_window_days: i32,
    /// Length of a registration ban in days; 1..=365.
    #[schema(minimum = 1, maximum = 365)]
    pub ban_days: i32,
}

/// The settings in force and who changed them last.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RatingConfigView {
    #[serde(flatten)]
    pub settings: RatingSettings,
    /// `null` only when the settings row was lost: the spec's defaults are in force.
    pub updated_at: Option<DateTime<Utc>>,
    /// `null` for the seeded defaults.
    pub updated_by_user_id: Option<Uuid>,
}

impl RatingSettings {
    /// The rating settings with the three sanction settings.
    fn new(rating: RatingConfig, strikes_to_ban: i32, strike_window_days: i32, ban_days: i32) -> Self {
        Self {
            points_base: rating.points_base,
            min_points: rating.min_points,
            xp_level_base: rating.xp_level_base,
            xp_level_exponent: rating.xp_level_exponent,
            skill_alpha: rating.skill_alpha,
            skill_initial: rating.skill_initial,
            strikes_to_ban,
            strike_window_days,
            ban_days,
        }
    }
}

impl From<rating_config::Model> for RatingConfigView {
    fn from(row: rating_config::Model) -> Self {
        Self {
            settings: RatingSettings::new(
                rating::config_of(&row),
                row.strikes_to_ban,
                row.strike_window_days,
                row.ban_days,
            ),
            updated_at: Some(row.updated_at),
            updated_by_user_id: row.updated_by_user_id,
        }
    }
}

/// The settings in force: the row, or the defaults the service falls back on without it.
async fn settings_in_force(conn: &impl ConnectionTrait) -> AppResult<RatingConfigView> {
    if let Some(row) = rating_config::Entity::find_by_id(DEFAULT_RATING_CONFIG_ID).one(conn).await? {
        return Ok(row.into());
    }
    let sanctions = strikes::sanction_rules(conn).await?;
    let whole = |value: i64| i32::try_from(value).unwrap_or(i32::MAX);
    Ok(RatingConfigView {
        settings: RatingSettings::new(
            rating::rating_config(conn).await?,
            whole(i64::from(sanctions.strikes_to_ban)),
            whole(sanctions.strike_window_days),
            whole(sanctions.ban_days),
        ),
        updated_at: None,
        updated_by_user_id: None,
    })
}

/// The rating and sanction settings in force.
#[utoipa::path(get, path = "/admin/rating-config", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = RatingConfigView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs rating_config.manage", body = ErrorBody),
    ))]
async fn get_rating_config(
    State(app): State<AppState>,
    _admin: Admin<perm::RatingConfigManage>,
) -> AppResult<Json<RatingConfigView>> {
    Ok(Json(settings_in_force(&app.reads).await?))
}

/// Replaces all nine settings. They apply to new awards only: results already confirmed keep
/// their points, xp and skill. Levels follow new level thresholds at once for every player,
/// since a level is a function of xp, not an award.
#[utoipa::path(put, path = "/admin/rating-config", tag = "admin", security(("bearer" = [])), request_body = RatingSettings,
    responses(
        (status = 200, body = RatingConfigView),
        (status = 400, description = "VALIDATION_ERROR: a setting is missing or out of its range (details name each)", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs rating_config.manage", body = ErrorBody),
    ))]
async fn replace_rating_config(
    State(app): State<AppState>,
    admin: Admin<perm::RatingConfigManage>,
    Json(body): Json<RatingSettings>,
) -> AppResult<Json<RatingConfigView>> {
    check_settings(&body).into_result()?;

    let tx = db::begin_write(&app.db).await?;
    // Two admins saving at once take turns, so each audit record's "before" is what it replaced.
    let before = rating_config::Entity::find_by_id(DEFAULT_RATING_CONFIG_ID).lock_exclusive().one(&tx).await?;
    let before = match before {
        Some(row) => RatingConfigView::from(row).settings,
        None => settings_in_force(&tx).await?.settings,
    };
    let row = rating_config::ActiveModel {
        id: Set(DEFAULT_RATING_CONFIG_ID),
        points_base: Set(body.points_base),
        min_points: Set(body.min_points),
        xp_level_base: Set(body.xp_level_base),
        xp_level_exponent: Set(body.xp_level_exponent),
        skill_alpha: Set(body.skill_alpha),
        skill_initial: Set(body.skill_initial),
        strikes_to_ban: Set(body.strikes_to_ban),
        strike_window_days: Set(body.strike_window_days),
        ban_days: Set(body.ban_days),
        updated_at: Set(Utc::now()),
        updated_by_user_id: Set(Some(admin.user.id())),
    };
    let every_setting = [
        rating_config::Column::PointsBase,
        rating_config::Column::MinPoints,
        rating_config::Column::XpLevelBase,
        rating_config::Column::XpLevelExponent,
        rating_config::Column::SkillAlpha,
        rating_config::Column::SkillInitial,
        rating_config::Column::StrikesToBan,
        rating_config::Column::StrikeWindowDays,
        rating_config::Column::BanDays,
        rating_config::Column::UpdatedAt,
        rating_config::Column::UpdatedByUserId,
    ];
    rating_config::Entity::insert(row)
        .on_conflict(OnConflict::column(rating_config::Column::Id).update_columns(every_setting).to_owned())
        .exec_without_returning(&tx)
        .await?;
    let relevelled = if (before.xp_level_base, before.xp_level_exponent) != (body.xp_level_base, body.xp_level_exponent)
    {
        rating::relevel_profiles(&tx, &RatingConfig::from(&body)).await?
    } else {
        0
    };
    audit::record(
        &tx,
        Some(admin.user.id()),
        "rating_config.update",
        ("rating_config", DEFAULT_RATING_CONFIG_ID.to_string()),
        json!({"before": before, "after": body, "relevelledProfiles": relevelled}),
    )
    .await?;
    let saved = rating_config::Entity::find_by_id(DEFAULT_RATING_CONFIG_ID)
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("the rating configuration row vanished while saved")))?;
    tx.commit().await?;
    Ok(Json(saved.into()))
}

impl From<&RatingSettings> for RatingConfig {
    fn from(settings: &RatingSettings) -> Self {
        Self {
            points_base: settings.points_base,
            min_points: settings.min_points,
            xp_level_base: settings.xp_level_base,
            xp_level_exponent: settings.xp_level_exponent,
            skill_alpha: settings.skill_alpha,
            skill_initial: settings.skill_initial,
        }
    }
}

/// Every setting outside its range, each with its field.
fn check_settings(settings: &RatingSettings) -> Problems {
    let mut problems = Problems::default();
    let mut real = |field: &str, value: f64, low: Bound, high: f64| {
        let above_low = match low {
            Bound::Above(low) => value > low,
            Bound::AtLeast(low) => value >= low,
        };
        if !value.is_finite() || !above_low || value > high {
            let low = match low {
                Bound::Above(low) => format!("greater than {low}"),
                Bound::AtLeast(low) => format!("at least {low}"),
            };
            problems.add(field, format!("must be {low} and at most {high}"));
        }
    };
    real("pointsBase", settings.points_base, Bound::Above(0.0), 1000.0);
    real("xpLevelBase", settings.xp_level_base, Bound::Above(0.0), 10_000.0);
    real("xpLevelExponent", settings.xp_level_exponent, Bound::Above(0.0), 5.0);
    real("skillAlpha", settings.skill_alpha, Bound::Above(0.0), 1.0);
    real("skillInitial", settings.skill_initial, Bound::AtLeast(0.0), 1.0);
    let mut whole = |field: &str, value: i32, low: i32, high: i32| {
        if !(low..=high).contains(&value) {
            problems.add(field, format!("must be a whole number from {low} to {high}"));
        }
    };
    whole("minPoints", settings.min_points, 0, 1000);
    whole("strikesToBan", settings.strikes_to_ban, 1, 100);
    whole("strikeWindowDays", settings.strike_window_days, 1, 365);
    whole("banDays", settings.ban_days, 1, 365);
    problems
}

/// The lower end of a real setting's range.
#[derive(Clone, Copy)]
enum Bound {
    /// The value must exceed it.
    Above(f64),
    /// The value may equal it.
    AtLeast(f64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::error::ErrorCode;

    const DEFAULTS: RatingSettings = RatingSettings {
        points_base: 10.0,
        min_points: 1,
        xp_level_base: 50.0,
        xp_level_exponent: 1.5,
        skill_alpha: 0.1,
        skill_initial: 0.4444,
        strikes_to_ban: 2,
        strike_window_days: 30,
        ban_days: 14,
    };

    fn problem_fields(settings: &RatingSettings) -> Vec<String> {
        match check_settings(settings).into_result() {
            Ok(()) => Vec::new(),
            Err(AppError::Api {
                code: ErrorCode::ValidationError,
                details: Some(crate::infra::error::ErrorDetails::Fields(details)),
                ..
            }) => details.into_iter().map(|d| d.field).collect(),
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn the_spec_defaults_are_valid() {
        assert!(problem_fields(&DEFAULTS).is_empty());
    }

    #[test]
    fn the_edges_of_each_range_are_allowed() {
        let edges = RatingSettings {
            points_base: 1000.0,
            min_points: 0,
            xp_level_base: 10_000.0,
            xp_level_exponent: 5.0,
            skill_alpha: 1.0,
            skill_initial: 0.0,
            strikes_to_ban: 1,
            strike_window_days: 365,
            ban_days: 1,
        };
        assert!(problem_fields(&edges).is_empty());
        assert!(problem_fields(&RatingSettings { skill_initial: 1.0, ..DEFAULTS }).is_empty());
    }

    #[test]
    fn each_setting_out_of_range_is_named() {
        let bad = RatingSettings {
            points_base: 0.0,
            min_points: -1,
            xp_level_base: -5.0,
            xp_level_exponent: 0.0,
            skill_alpha: 0.0,
            skill_initial: 1.5,
            strikes_to_ban: 0,
            strike_window_days: 366,
            ban_days: 0,
        };
        assert_eq!(
            problem_fields(&bad),
            [
                "pointsBase",
                "xpLevelBase",
                "xpLevelExponent",
                "skillAlpha",
                "skillInitial",
                "minPoints",
                "strikesToBan",
                "strikeWindowDays",
                "banDays",
            ]
        );
    }

    #[test]
    fn values_that_are_not_finite_or_too_large_are_refused() {
        assert_eq!(problem_fields(&RatingSettings { points_base: f64::NAN, ..DEFAULTS }), ["pointsBase"]);
        assert_eq!(problem_fields(&RatingSettings { points_base: f64::INFINITY, ..DEFAULTS }), ["pointsBase"]);
        assert_eq!(problem_fields(&RatingSettings { points_base: 1000.5, ..DEFAULTS }), ["pointsBase"]);
        assert_eq!(problem_fields(&RatingSettings { skill_alpha: 1.01, ..DEFAULTS }), ["skillAlpha"]);
        assert_eq!(problem_fields(&RatingSettings { ban_days: 366, ..DEFAULTS }), ["banDays"]);
    }
}
