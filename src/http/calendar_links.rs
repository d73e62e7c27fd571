//! The caller's calendar feed address: `POST /me/calendar-link` makes one (replacing the
//! previous), `DELETE /me/calendar-link` revokes it. The feed itself is served at the bare
//! origin (`pages::calendar`).

use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json};
use crate::domain::accounts::hold_account;
use crate::domain::players::calendar;
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create_calendar_link, revoke_calendar_link))
}

/// The caller's calendar feed address.
#[derive(Serialize, ToSchema)]
pub struct CalendarLinkView {
    /// `<PUBLIC_URL>/calendar/<secret>.ics`: an iCalendar feed of the caller's tournaments for
    /// a calendar app to subscribe to. Anyone with the address can read the feed; shown only
    /// in this answer.
    #[schema(
        example = "https://floor.example/calendar/0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0.ics"
    )]
    pub url: String,
}

/// Makes a secret address of an iCalendar feed of the caller's tournaments (live places, the
/// waitlist as tentative, places cancelled in the last 30 days as cancelled). A new address
/// replaces the previous one, which stops working.
#[utoipa::path(post, path = "/me/calendar-link", tags = ["profile", "extension"], security(("bearer" = [])),
    responses(
        (status = 200, body = CalendarLinkView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
    ))]
async fn create_calendar_link(State(app): State<AppState>, user: AuthUser) -> AppResult<Json<CalendarLinkView>> {
    let tx = db::begin_write(&app.db).await?;
    hold_account(&tx, user.id()).await?;
    let secret = calendar::replace_link(&tx, user.id(), Utc::now()).await?;
    tx.commit().await?;
    Ok(Json(CalendarLinkView { url: format!("{}{}", app.config.public_url, calendar::feed_path(&secret)) }))
}

/// Revokes the caller's calendar feed address; done as well when there was none.
#[utoipa::path(delete, path = "/me/calendar-link", tags = ["profile", "extension"], security(("bearer" = [])),
    responses(
        (status = 204, description = "Revoked: the address finds nothing now"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "USER_BANNED", body = ErrorBody),
    ))]
async fn revoke_calendar_link(State(app): State<AppState>, user: AuthUser) -> AppResult<StatusCode> {
    calendar::revoke_link(&app.db, user.id()).await?;
    Ok(StatusCode::NO_CONTENT)
}
