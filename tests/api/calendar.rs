//! Players' calendar feeds: the secret address under `/me/calendar-link` and the iCalendar
//! document at `/calendar/<secret>.ics`, parsed back with the `icalendar` crate.

use std::str::FromStr;

use chrono::{DateTime, Duration, DurationRound, Utc};
use icalendar::{Calendar, CalendarDateTime, Component, DatePerhapsTime, EventLike, EventStatus};
use reqwest::StatusCode;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, Club, Session, TestApp, on_both_databases, spawn_app, spawn_app_with};

on_both_databases!(
    a_players_feed_has_their_tournaments_and_parses_back,
    cancelled_places_show_as_cancelled_for_30_days_and_finished_tournaments_leave,
    a_new_link_replaces_the_old_and_revoking_ends_it,
    a_players_feed_holds_only_their_own_tournaments,
    the_link_is_for_signed_in_users_only,
    unknown_secrets_are_a_plain_404_and_spend_the_public_read_budget,
    a_title_stored_with_a_bare_cr_is_one_event_with_the_cr_stripped,
);

/// The origin the test apps announce, so the feed's links and UIDs are checked against it.
const ORIGIN: &str = "https://floor.example";

async fn app_with_origin(backend: Backend) -> Option<TestApp> {
    spawn_app_with(backend, &[("PUBLIC_URL", ORIGIN)]).await
}

/// A start on a whole minute, `days` from now: the feed writes whole seconds.
fn start_in(days: i64) -> DateTime<Utc> {
    (Utc::now() + Duration::days(days)).duration_trunc(Duration::minutes(1)).expect("a whole minute")
}

/// A tournament of the club at a venue of its own, starting at `starts_at`.
async fn tournament_at(app: &TestApp, club: &Club, capacity: i32, starts_at: DateTime<Utc>) -> Uuid {
    let location = app.create_location(club).await;
    let mut body = app.tournament_body(location, capacity, Duration::days(1));
    body["startsAt"] = json!(starts_at.to_rfc3339());
    let reply = app.post(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token), body).await;
    id_of(&reply.assert_ok()["id"])
}

fn id_of(value: &serde_json::Value) -> Uuid {
    value.as_str().and_then(|id| id.parse().ok()).expect("an id")
}

/// Registers `player`; the registration's id.
async fn register(app: &TestApp, tournament: Uuid, player: &Session) -> Uuid {
    let reply = app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await;
    id_of(&reply.assert_ok()["id"])
}

/// Asks for the player's feed address: its path at the bare origin.
async fn new_link(app: &TestApp, player: &Session) -> String {
    let reply = app.post("/me/calendar-link", Some(&player.access_token), json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let url = reply.body["url"].as_str().expect("a url");
    let path = url.strip_prefix(ORIGIN).unwrap_or_else(|| panic!("{url} is at the public origin"));
    let secret = path
        .strip_prefix("/calendar/")
        .and_then(|file| file.strip_suffix(".ics"))
        .unwrap_or_else(|| panic!("{url} is a calendar feed"));
    assert!(secret.len() >= 32 && secret.bytes().all(|b| b.is_ascii_alphanumeric()), "{secret} is long and URL-safe");
    path.to_owned()
}

/// Fetches a feed path at the bare origin: the status, the response and its text.
async fn fetch(app: &TestApp, path: &str) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let response = app.client.get(format!("{}{path}", app.base)).send().await.expect("the server answers");
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.text().await.expect("a body"))
}

/// The feed at `path`, parsed back.
async fn feed(app: &TestApp, path: &str) -> Calendar {
    let (status, headers, text) = fetch(app, path).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(headers["content-type"], "text/calendar; charset=utf-8");
    let cache = headers["cache-control"].to_str().expect("text");
    assert!(cache.contains("private") && cache.contains("max-age"), "{cache}");
    Calendar::from_str(&text).unwrap_or_else(|err| panic!("the feed parses: {err}\n{text}"))
}

/// The feed's events by tournament (from their UIDs), with their statuses.
fn events_by_tournament(calendar: &Calendar) -> Vec<(Uuid, Option<EventStatus>)> {
    let mut events: Vec<(Uuid, Option<EventStatus>)> = calendar
        .events()
        .map(|event| {
            let uid = event.get_uid().expect("a UID");
            let id = uid.strip_suffix("@floor.example").unwrap_or_else(|| panic!("{uid} names the host"));
            (id.parse().expect("a tournament id"), event.get_status())
        })
        .collect();
    events.sort_by_key(|(id, _)| *id);
    events
}

fn sorted(mut events: Vec<(Uuid, Option<EventStatus>)>) -> Vec<(Uuid, Option<EventStatus>)> {
    events.sort_by_key(|(id, _)| *id);
    events
}

async fn a_players_feed_has_their_tournaments_and_parses_back(backend: Backend) {
    let Some(app) = app_with_origin(backend).await else { return };
    let club = app.create_club("River", "+79995810001").await;
    let [player, other] = <[Session; 2]>::try_from(app.sign_in_players(581, 2).await).expect("two players");
    let (first_start, second_start, third_start) = (start_in(2), start_in(3), start_in(4));
    let first = tournament_at(&app, &club, 10, first_start).await;
    let second = tournament_at(&app, &club, 10, second_start).await;
    let full = tournament_at(&app, &club, 2, third_start).await;
    let elsewhere = tournament_at(&app, &club, 10, start_in(5)).await;
    // One seat: the other player takes it, so the player waits.
    app.exec(&format!("UPDATE tournaments SET capacity = 1 WHERE id = {}", app.uuid_literal(full))).await;
    register(&app, full, &other).await;
    register(&app, elsewhere, &other).await;

    register(&app, first, &player).await;
    let seat = register(&app, second, &player).await;
    app.post(
        &format!("/tournaments/{second}/check-in"),
        Some(&club.owner.access_token),
        json!({"registrationId": seat}),
    )
    .await
    .assert_ok();
    let waiting = app.post(&format!("/tournaments/{full}/register"), Some(&player.access_token), json!({})).await;
    assert_eq!(waiting.assert_ok()["status"], "waitlist");

    let path = new_link(&app, &player).await;
    let calendar = feed(&app, &path).await;
    assert_eq!(calendar.get_name(), Some("Floor — мои турниры"));
    assert_eq!(
        events_by_tournament(&calendar),
        sorted(vec![
            (first, Some(EventStatus::Confirmed)),
            (second, Some(EventStatus::Confirmed)),
            (full, Some(EventStatus::Tentative)),
        ]),
        "the tournament the player is not in is absent"
    );
    for (id, starts_at) in [(first, first_start), (second, second_start), (full, third_start)] {
        let uid = format!("{id}@floor.example");
        let event = calendar.events().find(|event| event.get_uid() == Some(uid.as_str())).expect("the event");
        assert_eq!(event.get_start(), Some(DatePerhapsTime::DateTime(CalendarDateTime::Utc(starts_at))));
        // The platform structure: 12 levels of 20 minutes and a 15-minute break.
        let ends_at = starts_at + Duration::minutes(255);
        assert_eq!(event.get_end(), Some(DatePerhapsTime::DateTime(CalendarDateTime::Utc(ends_at))));
        assert_eq!(event.get_summary(), Some("Турнир выходного дня"));
        assert_eq!(event.get_location(), Some("Main hall, Tverskaya 1"));
        let page = format!("{ORIGIN}/t/{id}");
        assert_eq!(event.get_url(), Some(page.as_str()));
        let description = event.get_description().expect("a description");
        assert!(description.contains("River") && description.contains(&page), "{description}");
        assert!(event.get_timestamp().is_some(), "a DTSTAMP");
    }
}

async fn cancelled_places_show_as_cancelled_for_30_days_and_finished_tournaments_leave(backend: Backend) {
    let Some(app) = app_with_origin(backend).await else { return };
    let club = app.create_club("River", "+79995820001").await;
    let player = app.sign_in("+79995820002").await;
    let left = tournament_at(&app, &club, 10, start_in(2)).await;
    let called_off = tournament_at(&app, &club, 10, start_in(3)).await;
    let long_ago = tournament_at(&app, &club, 10, start_in(4)).await;
    let played = tournament_at(&app, &club, 10, start_in(5)).await;
    for id in [left, called_off, long_ago, played] {
        register(&app, id, &player).await;
    }
    for id in [left, long_ago] {
        app.post(&format!("/tournaments/{id}/cancel-registration"), Some(&player.access_token), json!({}))
            .await
            .assert_ok();
    }
    app.post(&format!("/tournaments/{called_off}/cancel"), Some(&club.owner.access_token), json!({})).await.assert_ok();
    let month_ago = (Utc::now() - Duration::days(31)).to_rfc3339();
    app.exec(&format!(
        "UPDATE registrations SET cancelled_at = '{month_ago}' WHERE tournament_id = {}",
        app.uuid_literal(long_ago)
    ))
    .await;
    // Finished (as confirmed results leave it): history, no longer in the calendar.
    app.exec(&format!("UPDATE tournaments SET status = 'finished' WHERE id = {}", app.uuid_literal(played))).await;

    let path = new_link(&app, &player).await;
    let calendar = feed(&app, &path).await;
    assert_eq!(
        events_by_tournament(&calendar),
        sorted(vec![(left, Some(EventStatus::Cancelled)), (called_off, Some(EventStatus::Cancelled))])
    );
}

async fn a_new_link_replaces_the_old_and_revoking_ends_it(backend: Backend) {
    let Some(app) = app_with_origin(backend).await else { return };
    let player = app.sign_in("+79995830001").await;
    let first = new_link(&app, &player).await;
    assert_eq!(fetch(&app, &first).await.0, StatusCode::OK);
    let second = new_link(&app, &player).await;
    assert_ne!(first, second);
    assert_eq!(fetch(&app, &first).await.0, StatusCode::NOT_FOUND, "the old address is dead");
    assert_eq!(fetch(&app, &second).await.0, StatusCode::OK);
    // Only a hash is kept, one row per player.
    assert_eq!(app.count("SELECT COUNT(*) FROM calendar_links").await, 1);
    let stored = app.scalar("SELECT secret_hash FROM calendar_links").await.expect("a row");
    assert!(!second.contains(&stored) && !stored.is_empty());

    let reply = app.delete("/me/calendar-link", Some(&player.access_token)).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert_eq!(fetch(&app, &second).await.0, StatusCode::NOT_FOUND);
    // Revoking again changes nothing and is still done.
    let again = app.delete("/me/calendar-link", Some(&player.access_token)).await;
    assert_eq!(again.status, StatusCode::NO_CONTENT);
    assert_eq!(app.count("SELECT COUNT(*) FROM calendar_links").await, 0);
}

async fn a_players_feed_holds_only_their_own_tournaments(backend: Backend) {
    let Some(app) = app_with_origin(backend).await else { return };
    let club = app.create_club("River", "+79995840001").await;
    let [anna, boris] = <[Session; 2]>::try_from(app.sign_in_players(584, 2).await).expect("two players");
    let annas = tournament_at(&app, &club, 10, start_in(2)).await;
    let boriss = tournament_at(&app, &club, 10, start_in(3)).await;
    register(&app, annas, &anna).await;
    register(&app, boriss, &boris).await;
    let (annas_feed, boriss_feed) = (new_link(&app, &anna).await, new_link(&app, &boris).await);
    assert_eq!(events_by_tournament(&feed(&app, &annas_feed).await), vec![(annas, Some(EventStatus::Confirmed))]);
    assert_eq!(events_by_tournament(&feed(&app, &boriss_feed).await), vec![(boriss, Some(EventStatus::Confirmed))]);
    // A new address for one leaves the other's alone.
    new_link(&app, &anna).await;
    assert_eq!(fetch(&app, &boriss_feed).await.0, StatusCode::OK);
}

async fn the_link_is_for_signed_in_users_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    app.post("/me/calendar-link", None, json!({})).await.assert_error(401, "UNAUTHORIZED");
    app.delete("/me/calendar-link", None).await.assert_error(401, "UNAUTHORIZED");
    app.post("/me/calendar-link", Some("not-a-token"), json!({})).await.assert_error(401, "UNAUTHORIZED");
    assert_eq!(app.count("SELECT COUNT(*) FROM calendar_links").await, 0);
}

async fn unknown_secrets_are_a_plain_404_and_spend_the_public_read_budget(backend: Backend) {
    let Some(app) = spawn_app_with(backend, &[("PUBLIC_URL", ORIGIN), ("RATE_LIMIT_PUBLIC_READS", "4/1m")]).await
    else {
        return;
    };
    let unknown = format!("/calendar/{}.ics", "0".repeat(64));
    for path in [unknown.as_str(), "/calendar/guess.ics", "/calendar/guess"] {
        let (status, headers, text) = fetch(&app, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(headers["content-type"].to_str().is_ok_and(|kind| kind.starts_with("text/plain")), "{path}");
        assert!(!text.contains('{'), "a plain answer: {text}");
    }
    let (status, _, _) = fetch(&app, &unknown).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the fourth fetch is within the budget");
    let (status, headers, _) = fetch(&app, &unknown).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "guessing secrets is limited like any public read");
    assert!(headers.contains_key("retry-after"));
}

async fn a_title_stored_with_a_bare_cr_is_one_event_with_the_cr_stripped(backend: Backend) {
    use floor_entities::{locations, tournament_translations, tournaments};
    let Some(app) = app_with_origin(backend).await else { return };
    let club = app.create_club("River", "+79995840001").await;
    let player = app.sign_in("+79995840002").await;
    let forged = tournament_at(&app, &club, 10, start_in(2)).await;
    let plain = tournament_at(&app, &club, 10, start_in(3)).await;
    for id in [forged, plain] {
        register(&app, id, &player).await;
    }
    // Rows stored before the checks refused such texts, written behind the API's back.
    tournament_translations::Entity::update_many()
        .col_expr(tournament_translations::Column::Title, Expr::value("Final\rEND:VEVENT\rBEGIN:VEVENT\rUID:forged"))
        .filter(tournament_translations::Column::TournamentId.eq(forged))
        .filter(tournament_translations::Column::Locale.eq("ru"))
        .exec(app.db())
        .await
        .expect("the title is written");
    let venue = tournaments::Entity::find_by_id(forged).one(app.db()).await.expect("a query").expect("the tournament");
    locations::Entity::update_many()
        .col_expr(locations::Column::Name, Expr::value("Main\rhall\u{7f}"))
        .filter(locations::Column::Id.eq(venue.location_id))
        .exec(app.db())
        .await
        .expect("the venue is written");
    app.state.reads_changed();

    let path = new_link(&app, &player).await;
    let (status, _, text) = fetch(&app, &path).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.match_indices('\r').all(|(at, _)| text[at + 1..].starts_with('\n')), "no bare CR: {text:?}");
    assert!(!text.contains('\u{7f}'), "no DEL: {text:?}");
    let calendar = Calendar::from_str(&text).unwrap_or_else(|err| panic!("the feed parses: {err}\n{text}"));
    assert_eq!(calendar.events().count(), 2, "one event a tournament, none forged: {text}");
    assert_eq!(
        events_by_tournament(&calendar),
        sorted(vec![(forged, Some(EventStatus::Confirmed)), (plain, Some(EventStatus::Confirmed))])
    );
    let uid = format!("{forged}@floor.example");
    let event = calendar.events().find(|event| event.get_uid() == Some(uid.as_str())).expect("the event");
    assert_eq!(event.get_summary(), Some("FinalEND:VEVENTBEGIN:VEVENTUID:forged"));
    assert_eq!(event.get_location(), Some("Mainhall, Tverskaya 1"));
}
