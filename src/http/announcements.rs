//! `POST /tournaments/{id}/announcements` (beyond the specification): a club's short message
//! to the tournament's players (a push) and its room (a Socket.IO `announcement`, also shown
//! on the venue screen), at most one a minute per tournament.

use axum::extract::State;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, TournamentAccess, club};
use super::validate::Problems;
use crate::domain::live::events::AnnouncementMade;
use crate::domain::tournaments::announcements::{Announced, MAX_ANNOUNCEMENT_CHARS, announce};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(make_announcement))
}

#[derive(Deserialize, ToSchema)]
struct AnnouncementRequest {
    /// 1 to 280 characters, trimmed; it may run over lines (tab, LF and CR are the only control
    /// characters it keeps).
    #[schema(
        max_length = 280,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    text: String,
}

/// An announcement's text: trimmed of blanks, 1 to [`MAX_ANNOUNCEMENT_CHARS`] characters as
/// sent; a message of a few lines, so tabs and line breaks are the only controls it keeps.
fn announcement_text(input: &str) -> AppResult<String> {
    let mut problems = Problems::default();
    let text = problems.multiline_text("text", input, 1, MAX_ANNOUNCEMENT_CHARS);
    problems.into_result()?;
    Ok(text)
}

/// A sent announcement.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnnouncementView {
    id: Uuid,
    tournament_id: Uuid,
    text: String,
    created_at: DateTime<Utc>,
}

/// Sends a short message to the tournament's players with accounts (push
/// `tournament.announcement`) and to everyone watching it (Socket.IO `announcement`
/// `{tournamentId, text, createdAt}`, and the venue screen). While registration is open or
/// the game runs; at most one a minute per tournament.
#[utoipa::path(post, path = "/tournaments/{id}/announcements", tags = ["tournaments", "extension"],
    security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    request_body = AnnouncementRequest,
    responses(
        (status = 201, body = AnnouncementView),
        (status = 400, description = "VALIDATION_ERROR: text blank or longer than 280 characters", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an owner or td of the club", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the tournament is finished or cancelled", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED: the last announcement is less than a minute old; `Retry-After` says when", body = ErrorBody),
    ))]
async fn make_announcement(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<AnnouncementRequest>,
) -> AppResult<Response> {
    let text = announcement_text(&body.text)?;
    let tournament_id = access.tournament.id;
    match announce(&app.db, &app.notifier, tournament_id, access.user.id(), text).await? {
        Announced::Sent(announcement) => {
            app.live_sockets
                .announce(AnnouncementMade {
                    tournament_id,
                    text: announcement.text.clone(),
                    created_at: announcement.created_at,
                })
                .await;
            let view = AnnouncementView {
                id: announcement.id,
                tournament_id,
                text: announcement.text,
                created_at: announcement.created_at,
            };
            Ok((StatusCode::CREATED, axum::Json(view)).into_response())
        }
        Announced::TooSoon { wait } => {
            // Whole seconds, rounded up: a client waiting that long may announce again.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let message = format!("one announcement a minute: try again in {seconds} seconds");
            let mut response = AppError::new(ErrorCode::RateLimited, message).into_response();
            response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(seconds));
            Ok(response)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_trimmed_and_bounded_in_characters_not_bytes() {
        assert_eq!(announcement_text("  Перерыв 10 минут  ").ok().as_deref(), Some("Перерыв 10 минут"));
        assert!(announcement_text("   ").is_err());
        assert!(announcement_text("").is_err());
        assert!(announcement_text(&"я".repeat(MAX_ANNOUNCEMENT_CHARS)).is_ok(), "280 Cyrillic letters are 560 bytes");
        assert!(announcement_text(&"я".repeat(MAX_ANNOUNCEMENT_CHARS + 1)).is_err());
    }

    #[test]
    fn a_text_keeps_its_line_breaks_and_no_other_control() {
        assert_eq!(announcement_text("Перерыв\r\nДалее 200/400").ok().as_deref(), Some("Перерыв\r\nДалее 200/400"));
        assert!(announcement_text("Перерыв\u{7}").is_err());
    }
}
