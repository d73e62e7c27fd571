//! The club's exports (beyond the specification): `registrations.csv` and `results.csv`,
//! UTF-8 with a byte-order mark so spreadsheet programs open Cyrillic names correctly, times
//! in the venue's zone. The printable pages (`/print/…`) read the same roster.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use floor_actors::live::Seat;
use floor_entities::enums::{RegistrationSource, RegistrationStatus};
use floor_entities::{locations, table_seats};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{TournamentAccess, club};
use super::registrations::club_roster;
use crate::domain::tournaments::results::tournament_results;
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(registrations_csv)).routes(routes!(results_csv))
}

/// What spreadsheet programs read as "this file is UTF-8".
const BOM: &[u8] = "\u{feff}".as_bytes();

/// A CSV document: the byte-order mark, `header`, then `rows`, quoted where needed.
pub fn csv_document(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> AppResult<Vec<u8>> {
    let internal = |err: csv::Error| AppError::Internal(err.into());
    let mut writer = csv::Writer::from_writer(BOM.to_vec());
    writer.write_record(header).map_err(internal)?;
    for row in rows {
        writer.write_record(&row).map_err(internal)?;
    }
    writer.into_inner().map_err(|err| AppError::Internal(anyhow::anyhow!("could not finish a CSV: {err}")))
}

/// A cell of text a player typed (a name): one that a spreadsheet would run as a formula
/// (`=`, `+`, `-`, `@`, a tab or a carriage return first) is kept as text by a leading `'`.
pub fn typed_text(text: String) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{text}") } else { text }
}

/// A CSV answer the browser saves as `name`.
fn attachment(name: &str, body: Vec<u8>) -> AppResult<Response> {
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
        .map_err(|err| AppError::Internal(err.into()))?;
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8")),
        (CONTENT_DISPOSITION, disposition),
        // Phones of players: never kept by a shared cache.
        (CACHE_CONTROL, HeaderValue::from_static("private, no-store")),
    ];
    Ok((headers, body).into_response())
}

/// A registration's status as the club reads it.
pub fn status_name(status: RegistrationStatus) -> &'static str {
    match status {
        RegistrationStatus::Registered => "Зарегистрирован",
        RegistrationStatus::Waitlist => "Лист ожидания",
        RegistrationStatus::CheckedIn => "Отмечен",
        RegistrationStatus::NoShow => "Неявка",
        RegistrationStatus::Cancelled => "Отменён",
    }
}

fn source_name(source: RegistrationSource) -> &'static str {
    match source {
        RegistrationSource::App => "Приложение",
        RegistrationSource::WalkIn => "На месте",
    }
}

/// The venue's zone of a tournament, when it names a real one.
pub async fn venue_zone(conn: &impl ConnectionTrait, location_id: Uuid) -> AppResult<Option<chrono_tz::Tz>> {
    let venue = locations::Entity::find_by_id(location_id).one(conn).await?;
    Ok(venue.and_then(|venue| venue.timezone.parse().ok()))
}

/// `2026-11-25 19:00` in the venue's zone (UTC, said so, when it has none): sortable in a sheet.
fn local(at: DateTime<Utc>, zone: Option<chrono_tz::Tz>) -> String {
    match zone {
        Some(zone) => at.with_timezone(&zone).format("%Y-%m-%d %H:%M").to_string(),
        None => at.format("%Y-%m-%d %H:%M UTC").to_string(),
    }
}

/// Where each registration of the tournament sits (or sat last, once out).
pub async fn seats_of(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<HashMap<Uuid, Seat>> {
    Ok(table_seats::Entity::find()
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .all(conn)
        .await?
        .into_iter()
        .map(|seat| (seat.registration_id, Seat { table_no: seat.table_no, seat_no: seat.seat_no }))
        .collect())
}

/// Every registration of the tournament in queue order, with names, phones, statuses and
/// seats, as a spreadsheet.
#[utoipa::path(get, path = "/tournaments/{id}/registrations.csv", tags = ["registration", "extension"],
    security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, content_type = "text/csv", body = String,
            description = "UTF-8 with BOM: №, Имя, Никнейм, Телефон, Статус, Источник, Зарегистрирован, Очередь, Стол, Место, Выбыл"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn registrations_csv(State(app): State<AppState>, access: TournamentAccess<club::Staff>) -> AppResult<Response> {
    let tournament = &access.tournament;
    let roster = club_roster(&app.reads, tournament.id).await?;
    let seats = seats_of(&app.reads, tournament.id).await?;
    let zone = venue_zone(&app.reads, tournament.location_id).await?;
    let rows = roster.into_iter().enumerate().map(|(index, person)| {
        let registration = person.registration;
        let seat = seats.get(&registration.id);
        vec![
            (index + 1).to_string(),
            typed_text(person.name.unwrap_or_default()),
            typed_text(person.nickname.unwrap_or_default()),
            person.phone,
            status_name(registration.status).to_owned(),
            source_name(registration.source).to_owned(),
            local(registration.created_at, zone),
            registration.waitlist_position.map(|n| n.to_string()).unwrap_or_default(),
            seat.map(|seat| seat.table_no.to_string()).unwrap_or_default(),
            seat.map(|seat| seat.seat_no.to_string()).unwrap_or_default(),
            registration.eliminated_at.map(|at| local(at, zone)).unwrap_or_default(),
        ]
    });
    let header = [
        "№",
        "Имя",
        "Никнейм",
        "Телефон",
        "Статус",
        "Источник",
        "Зарегистрирован",
        "Очередь",
        "Стол",
        "Место",
        "Выбыл",
    ];
    attachment(&format!("registrations-{}.csv", tournament.id), csv_document(&header, rows)?)
}

/// The confirmed results by place, as a spreadsheet; only the header until the results are
/// confirmed.
#[utoipa::path(get, path = "/tournaments/{id}/results.csv", tags = ["results", "extension"],
    security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, content_type = "text/csv", body = String,
            description = "UTF-8 with BOM: Место, Имя, Очки сезона, Опыт, Скилл до, Скилл после"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn results_csv(State(app): State<AppState>, access: TournamentAccess<club::Staff>) -> AppResult<Response> {
    let results = tournament_results(&app.reads, access.tournament.id).await?;
    let skill = |value: Option<f64>| value.map(|skill| format!("{skill:.1}")).unwrap_or_default();
    let rows = results.into_iter().map(|result| {
        vec![
            result.place.to_string(),
            typed_text(result.name),
            result.season_points.to_string(),
            result.xp.to_string(),
            skill(result.skill_before),
            skill(result.skill_after),
        ]
    });
    let header = ["Место", "Имя", "Очки сезона", "Опыт", "Скилл до", "Скилл после"];
    attachment(&format!("results-{}.csv", access.tournament.id), csv_document(&header, rows)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_starts_with_the_bom_and_quotes_what_needs_it() {
        let rows = vec![vec!["Анна \"Ас\"".to_owned(), "1,5".to_owned()]];
        let body = csv_document(&["Имя", "Число"], rows).expect("written");
        assert!(body.starts_with(BOM));
        let text = std::str::from_utf8(&body[BOM.len()..]).expect("UTF-8");
        assert_eq!(text, "Имя,Число\n\"Анна \"\"Ас\"\"\",\"1,5\"\n");
    }

    #[test]
    fn a_line_break_inside_a_cell_is_quoted_so_it_starts_no_row() {
        // Names stored before the checks refused controls may hold a bare CR: a reader ends a
        // row there unless the cell is quoted, which the writer does for CR and LF alike.
        let rows = vec![vec!["Анна\rБорис".to_owned(), "a\nb".to_owned()]];
        let body = csv_document(&["Имя", "Заметка"], rows).expect("written");
        let text = std::str::from_utf8(&body[BOM.len()..]).expect("UTF-8");
        assert_eq!(text, "Имя,Заметка\n\"Анна\rБорис\",\"a\nb\"\n");
    }

    #[test]
    fn a_name_a_spreadsheet_would_run_stays_text() {
        assert_eq!(typed_text("=HYPERLINK(\"http://x\")".to_owned()), "'=HYPERLINK(\"http://x\")");
        for risky in ["+1", "-1", "@SUM(A1)", "\tx", "\rx"] {
            assert!(typed_text(risky.to_owned()).starts_with('\''), "{risky:?}");
        }
        assert_eq!(typed_text("Анна".to_owned()), "Анна");
        assert_eq!(typed_text(String::new()), "");
    }

    #[test]
    fn times_read_in_the_venues_zone() {
        let at = DateTime::parse_from_rfc3339("2026-11-25T16:00:00Z").expect("a time").with_timezone(&Utc);
        assert_eq!(local(at, "Europe/Moscow".parse().ok()), "2026-11-25 19:00");
        assert_eq!(local(at, None), "2026-11-25 16:00 UTC");
    }
}
