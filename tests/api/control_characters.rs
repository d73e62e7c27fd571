//! Issue 29: texts end up in line-based formats (a calendar feed, a CSV export), so a one-line
//! text (a title, a name, an address, a nickname) holding a control character is refused at
//! input, and nothing of the request is stored; a text of several lines (a description, the
//! prizes) keeps its line breaks.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(a_control_character_in_a_one_line_text_is_refused_and_nothing_is_stored);
on_both_databases!(line_breaks_stay_in_texts_of_several_lines);

/// The title that split one calendar event in two for readers that end lines at a bare CR.
const FORGED_TITLE: &str = "Final\rEND:VEVENT\rBEGIN:VEVENT\rUID:x";

/// The fields a refusal names, and that each says why.
fn refused_fields(reply: &crate::helpers::Reply) -> Vec<String> {
    reply.assert_error(400, "VALIDATION_ERROR");
    let details = reply.body["error"]["details"].as_array().cloned().unwrap_or_default();
    for detail in &details {
        let problem = detail["problem"].as_str().unwrap_or_default();
        assert!(problem.contains("control characters"), "the problem says why: {reply:?}");
    }
    details.iter().map(|detail| detail["field"].as_str().unwrap_or_default().to_owned()).collect()
}

async fn a_control_character_in_a_one_line_text_is_refused_and_nothing_is_stored(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River", "+79995820001").await;
    let owner = Some(club.owner.access_token.as_str());
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(2)).await;
    let location = app.get(&format!("/tournaments/{tournament}"), None).await.assert_ok()["locationId"].clone();
    let location = location.as_str().expect("a venue id").to_owned();
    let player = app.sign_in("+79995820002").await;
    let me = Some(player.access_token.as_str());
    app.call(Method::PATCH, "/me", me, Some(json!({"nickname": "ace"}))).await.assert_ok();

    let mut new_tournament = app.tournament_body(location.parse().expect("a uuid"), 10, chrono::Duration::days(3));
    new_tournament["translations"]["ru"]["title"] = json!(FORGED_TITLE);
    let venue = json!({"name": "Main hall", "citySlug": "moscow", "address": "Tverskaya 1\n2nd floor",
        "timezone": "Europe/Moscow", "lat": 55.75, "lng": 37.61});
    let cases: [(Method, String, Option<&str>, Value, &str); 7] = [
        (Method::POST, format!("/organizers/{}/tournaments", club.id), owner, new_tournament, "translations.ru.title"),
        (
            Method::PATCH,
            format!("/tournaments/{tournament}"),
            owner,
            json!({"translations": {"en": {"title": FORGED_TITLE}}}),
            "translations.en.title",
        ),
        (
            Method::PATCH,
            format!("/tournaments/{tournament}"),
            owner,
            json!({"translations": {"ru": {"title": "Final", "subtitle": "Day\u{c}2"}}}),
            "translations.ru.subtitle",
        ),
        (Method::PATCH, "/me".to_owned(), me, json!({"nickname": "ace\u{b}high"}), "nickname"),
        (Method::PATCH, format!("/locations/{location}"), owner, json!({"name": "Main\u{7f}hall"}), "name"),
        (Method::POST, format!("/organizers/{}/locations", club.id), owner, venue, "address"),
        (Method::PATCH, format!("/organizers/{}", club.id), owner, json!({"name": "River\r\nClub"}), "name"),
    ];
    for (method, path, token, body, field) in cases {
        let reply = app.call(method.clone(), &path, token, Some(body)).await;
        assert_eq!(refused_fields(&reply), [field], "{method} {path}");
    }

    let stored = app.get(&format!("/tournaments/{tournament}"), None).await;
    let stored = stored.assert_ok();
    assert_eq!(stored["translations"]["ru"]["title"], "Турнир выходного дня", "the title stays");
    assert_eq!(stored["translations"]["en"]["title"], "Weekend tournament", "the title stays");
    assert_eq!(stored["locationName"], "Main hall", "the venue's name stays");
    assert_eq!(stored["organizerName"], "River", "the club's name stays");
    let club_tournaments = app.get(&format!("/organizers/{}/tournaments", club.id), owner).await;
    assert_eq!(club_tournaments.assert_ok()["items"].as_array().map(Vec::len), Some(1), "no tournament was made");
    let venues =
        app.count(&format!("SELECT COUNT(*) FROM locations WHERE organizer_id = {}", app.uuid_literal(club.id))).await;
    assert_eq!(venues, 1, "no venue was made");
    assert_eq!(app.get("/auth/me", me).await.assert_ok()["nickname"], "ace", "the nickname stays");
}

async fn line_breaks_stay_in_texts_of_several_lines(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River", "+79995830001").await;
    let owner = Some(club.owner.access_token.as_str());
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(2)).await;
    let location = app.get(&format!("/tournaments/{tournament}"), None).await.assert_ok()["locationId"].clone();
    let location = location.as_str().expect("a venue id").to_owned();

    let description = "Entrance from the yard.\r\n\tSecond floor.";
    let reply =
        app.patch(&format!("/locations/{location}"), owner, json!({"description": format!("{description}\r\n")})).await;
    assert_eq!(reply.assert_ok()["description"], description, "kept with its breaks, trimmed at the end");
    let prizes = "1st: 50%\r\n2nd: 30%\r\n3rd: 20%";
    let reply = app.patch(&format!("/tournaments/{tournament}"), owner, json!({"prizes": prizes})).await;
    assert_eq!(reply.assert_ok()["prizes"], prizes);

    // Other controls stay out of them too.
    let reply = app.patch(&format!("/locations/{location}"), owner, json!({"description": "Bell\u{7}"})).await;
    assert_eq!(refused_fields(&reply), ["description"]);
    let stored = app.get(&format!("/locations/{location}"), None).await;
    assert_eq!(stored.assert_ok()["description"], description, "the refused one changed nothing");
}
