//! The admin dashboard's figures: `GET /admin/metrics` (the arithmetic is `crate::domain::dashboard`).

use axum::extract::State;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::dashboard::{self, Figures, Span};
use crate::http::extract::{Admin, Json, perm};
use crate::http::state::AppState;
use crate::infra::error::{AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(show_metrics))
}

/// The platform's activity over the last 30 days and the last 8 weeks. A new player is an
/// account created in the period; an active player an account with a result in a
/// tournament that finished (moved to `finished`, its `finishedAt`) in the period; a
/// finished tournament one whose `finishedAt` falls in the period.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsView {
    /// Accounts created in the last 30 days.
    pub new_players_30d: i64,
    /// Distinct accounts with a result in a tournament finished in the last 30 days.
    pub active_players_30d: i64,
    /// Share (0 to 1) of `activePlayers30d` who played two or more tournaments finished in
    /// those 30 days; 0 when nobody played.
    pub retention_30d: f64,
    /// Tournaments whose results were confirmed (status `finished`) in the last 30 days.
    pub finished_tournaments_30d: i64,
    /// Exactly 8 weeks, oldest first; each starts on Monday 00:00 UTC and the last one is
    /// the current week, counted up to now.
    pub weeks: Vec<WeekView>,
}

/// One week of the breakdown, with the same definitions as the 30-day figures.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WeekView {
    /// The Monday the week starts on (UTC), `YYYY-MM-DD`.
    #[schema(value_type = String, format = Date)]
    pub week_start: chrono::NaiveDate,
    pub new_players: i64,
    pub active_players: i64,
    pub finished_tournaments: i64,
}

impl From<(Span, Figures)> for WeekView {
    fn from((span, figures): (Span, Figures)) -> Self {
        Self {
            week_start: span.start.date_naive(),
            new_players: figures.new_players,
            active_players: figures.active_players,
            finished_tournaments: figures.finished_tournaments,
        }
    }
}

/// New and active players, retention and finished tournaments: the last 30 days and a
/// breakdown by the last 8 weeks (Monday to Monday, UTC).
#[utoipa::path(get, path = "/admin/metrics", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = MetricsView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs metrics.view", body = ErrorBody),
    ))]
async fn show_metrics(State(app): State<AppState>, _admin: Admin<perm::MetricsView>) -> AppResult<Json<MetricsView>> {
    let dashboard = dashboard::dashboard(&app.reads, Utc::now()).await?;
    Ok(Json(MetricsView {
        new_players_30d: dashboard.period.new_players,
        active_players_30d: dashboard.period.active_players,
        retention_30d: dashboard.retention,
        finished_tournaments_30d: dashboard.period.finished_tournaments,
        weeks: dashboard.weeks.into_iter().map(WeekView::from).collect(),
    }))
}
