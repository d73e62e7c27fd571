//! Printable pages for the club's staff (owner or td, by `Authorization: Bearer`, as the
//! organizer app loads them): `/print/{id}/seats`, the seat list for the wall (every table,
//! and every player by name with their table and seat), and `/print/{id}/sign-in`, the
//! sign-in sheet for the door. Laid out for A4; rendered on the server with maud.

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use floor_actors::live::LiveState;
use floor_entities::enums::RegistrationStatus;
use floor_entities::tournaments;
use maud::{DOCTYPE, Markup, html};

use crate::domain::tournaments::display_title;
use crate::domain::tournaments::registrations::LIVE;
use crate::http::club_exports::{status_name, venue_zone};
use crate::http::extract::{TournamentAccess, club};
use crate::http::registrations::club_roster;
use crate::http::state::AppState;
use crate::infra::error::AppResult;
use crate::values::local_time;

pub fn print_router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route("/print/{id}/seats", get(seat_list))
        .route("/print/{id}/sign-in", get(sign_in_sheet))
        .with_state(state)
}

/// Names and phones of players: never kept by a cache; nothing from another host.
const PRINT_HEADERS: [(HeaderName, &str); 4] = [
    (CONTENT_TYPE, "text/html; charset=utf-8"),
    (CACHE_CONTROL, "private, no-store"),
    (
        CONTENT_SECURITY_POLICY,
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (X_CONTENT_TYPE_OPTIONS, "nosniff"),
];

fn page(html: Markup) -> Response {
    let headers = PRINT_HEADERS.map(|(name, value)| (name, HeaderValue::from_static(value)));
    (headers, html.into_string()).into_response()
}

const STYLE: &str = "
@page { size: A4; margin: 12mm; }
body { font-family: 'DejaVu Sans', Arial, sans-serif; font-size: 11pt; color: #000; margin: 0; }
h1 { font-size: 18pt; margin: 0 0 2mm; }
h2 { font-size: 13pt; margin: 6mm 0 2mm; }
.meta { margin: 0 0 4mm; color: #333; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 0.3mm solid #000; padding: 1.2mm 2mm; text-align: left; vertical-align: top; }
th { background: #eee; }
tr { break-inside: avoid; }
.tables { display: grid; grid-template-columns: 1fr 1fr; gap: 4mm; }
.tables section { break-inside: avoid; }
.sign { width: 45mm; }
.num { width: 10mm; }
.empty { color: #777; }
";

/// The head of a printed page: title, tournament, club, start.
async fn heading(app: &AppState, tournament: &tournaments::Model, what: &str) -> AppResult<Markup> {
    let title = display_title(&app.reads, tournament.id).await?;
    let zone = venue_zone(&app.reads, tournament.location_id).await?;
    let starts = local_time::russian(tournament.starts_at, zone.map(|zone| zone.name()));
    Ok(html! {
        h1 { (what) }
        p.meta { "«" (title) "» · " (starts) }
    })
}

fn document(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="ru" {
            head {
                meta charset="utf-8";
                meta name="robots" content="noindex";
                title { (title) }
                style { (STYLE) }
            }
            body { (body) }
        }
    }
}

/// The seat list: each table with its nine seats, then every player still in by name.
async fn seat_list(State(app): State<AppState>, access: TournamentAccess<club::Staff>) -> AppResult<Response> {
    let head = heading(&app, &access.tournament, "Рассадка").await?;
    let live = app.live.snapshot(access.tournament.id).await?;
    Ok(page(document("Рассадка", html! { (head) (seats(&live)) })))
}

fn seats(live: &LiveState) -> Markup {
    let seated = live.seated();
    if seated.is_empty() {
        return html! { p { "Рассадка появится после старта турнира." } };
    }
    let mut by_name: Vec<(&str, i32, i32)> = live
        .tables
        .iter()
        .flat_map(|table| table.seats.iter().map(|seat| (seat.name.as_str(), table.table_no, seat.seat_no)))
        .collect();
    by_name.sort_by_key(|(name, table, seat)| (name.to_lowercase(), *table, *seat));
    html! {
        div.tables {
            @for table in live.tables.iter().filter(|table| !table.seats.is_empty()) {
                section {
                    h2 { "Стол " (table.table_no) }
                    table {
                        tr { th.num { "Место" } th { "Игрок" } }
                        @for seat_no in 1..=floor_actors::rules::seating::SEATS_PER_TABLE as i32 {
                            tr {
                                td.num { (seat_no) }
                                @match table.seats.iter().find(|seat| seat.seat_no == seat_no) {
                                    Some(seat) => td { (seat.name) },
                                    None => td.empty { "—" },
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Игроки по имени" }
        table {
            tr { th { "Игрок" } th.num { "Стол" } th.num { "Место" } }
            @for (name, table_no, seat_no) in &by_name {
                tr { td { (name) } td.num { (table_no) } td.num { (seat_no) } }
            }
        }
    }
}

/// The last four digits of a phone: enough at the door to tell two namesakes apart, not a
/// list of phones on paper.
fn phone_tail(phone: &str) -> String {
    let digits: Vec<char> = phone.chars().filter(char::is_ascii_digit).collect();
    let tail: String = digits[digits.len().saturating_sub(4)..].iter().collect();
    if tail.is_empty() { String::new() } else { format!("…{tail}") }
}

/// The sign-in sheet: everyone holding a place, by name, with a column to sign.
async fn sign_in_sheet(State(app): State<AppState>, access: TournamentAccess<club::Staff>) -> AppResult<Response> {
    let head = heading(&app, &access.tournament, "Лист регистрации").await?;
    let mut people: Vec<(String, String, RegistrationStatus)> = club_roster(&app.reads, access.tournament.id)
        .await?
        .into_iter()
        .filter(|person| LIVE.contains(&person.registration.status))
        .map(|person| {
            let name = person.name.or(person.nickname).unwrap_or_default();
            (name, phone_tail(&person.phone), person.registration.status)
        })
        .collect();
    people.sort_by_key(|(name, ..)| name.to_lowercase());
    let sheet = html! {
        (head)
        table {
            tr { th.num { "№" } th { "Игрок" } th { "Телефон" } th { "Статус" } th.sign { "Подпись" } }
            @for (index, (name, phone, status)) in people.iter().enumerate() {
                tr {
                    td.num { (index + 1) }
                    td { (name) }
                    td { (phone) }
                    td { (status_name(*status)) }
                    td.sign {}
                }
            }
        }
    };
    Ok(page(document("Лист регистрации", sheet)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_printed_phone_shows_its_last_four_digits_only() {
        assert_eq!(phone_tail("+79991234567"), "…4567");
        assert_eq!(phone_tail("+12"), "…12");
        assert_eq!(phone_tail(""), "");
    }
}
