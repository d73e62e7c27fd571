//! Venues and blind templates: who may make and edit them, the public catalogue, the
//! contract's level rules.

use serde_json::json;

use crate::helpers::{Backend, PLATFORM_TEMPLATE_ID, on_both_databases, spawn_app};

on_both_databases!(
    an_owner_adds_a_venue_that_everyone_can_find_by_city,
    only_the_owner_edits_a_venue_and_tds_only_read,
    a_venue_needs_a_known_city_a_zone_and_real_coordinates,
    a_club_sees_its_templates_and_the_platform_ones,
    bad_levels_of_any_kind_are_invalid_levels,
    a_club_cannot_touch_another_clubs_venues_or_templates,
);

fn venue() -> serde_json::Value {
    json!({"name": "Hall", "citySlug": "kazan", "address": "Bauman 5", "timezone": "Europe/Moscow", "lat": 55.79, "lng": 49.12, "description": "2nd floor"})
}

async fn an_owner_adds_a_venue_that_everyone_can_find_by_city(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990100001").await;
    let created =
        app.post(&format!("/organizers/{}/locations", club.id), Some(&club.owner.access_token), venue()).await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.body["id"].as_str().expect("id").to_owned();
    app.create_location(&club).await;

    let one = app.get(&format!("/locations/{id}"), None).await;
    assert_eq!(one.assert_ok()["citySlug"], "kazan");
    assert_eq!(one.body["description"], "2nd floor");
    let kazan = app.get("/locations?city=kazan", None).await;
    let items = kazan.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], id.as_str());
    let all = app.get("/locations", None).await;
    assert_eq!(all.assert_ok()["items"].as_array().map(Vec::len), Some(2));
    app.get(&format!("/locations/{}", uuid::Uuid::new_v4()), None).await.assert_error(404, "NOT_FOUND");
}

async fn only_the_owner_edits_a_venue_and_tds_only_read(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990100011").await;
    let td = app.add_td(&club, "+79990100012").await;
    let id = app.create_location(&club).await;

    let edit = app
        .patch(
            &format!("/locations/{id}"),
            Some(&club.owner.access_token),
            json!({"name": "New hall", "description": null}),
        )
        .await;
    assert_eq!(edit.assert_ok()["name"], "New hall");
    assert_eq!(edit.body["address"], "Tverskaya 1");

    app.patch(&format!("/locations/{id}"), Some(&td.access_token), json!({"name": "X"}))
        .await
        .assert_error(403, "FORBIDDEN");
    app.post(&format!("/organizers/{}/locations", club.id), Some(&td.access_token), venue())
        .await
        .assert_error(403, "FORBIDDEN");
    let list = app.get(&format!("/organizers/{}/locations", club.id), Some(&td.access_token)).await;
    assert_eq!(list.assert_ok()["items"].as_array().map(Vec::len), Some(1));
    app.patch(&format!("/locations/{id}"), None, json!({"name": "X"})).await.assert_error(401, "UNAUTHORIZED");
}

async fn a_venue_needs_a_known_city_a_zone_and_real_coordinates(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990100021").await;
    let bad = json!({"name": "", "citySlug": "atlantis", "address": "x", "timezone": "Moscow time", "lat": 91.0, "lng": -181.0, "photoUrl": "ftp://x"});
    let reply = app.post(&format!("/organizers/{}/locations", club.id), Some(&club.owner.access_token), bad).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<_> = reply.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(fields, ["name", "citySlug", "timezone", "lat", "lng", "photoUrl"]);
    assert_eq!(app.count("SELECT COUNT(*) FROM locations").await, 0);
}

async fn a_club_sees_its_templates_and_the_platform_ones(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990100031").await;
    let td = app.add_td(&club, "+79990100032").await;
    let levels = json!([
        {"kind": "level", "durationMin": 20, "smallBlind": 100, "bigBlind": 200, "ante": 0},
        {"kind": "break", "durationMin": 10, "note": "Снимаем фишки по 25"},
        {"kind": "level", "durationMin": 20, "smallBlind": 200, "bigBlind": 400},
    ]);
    let created = app
        .post(
            &format!("/organizers/{}/blind-templates", club.id),
            Some(&club.owner.access_token),
            json!({"name": "Turbo", "levels": levels, "startingStack": 10000, "lateRegLevel": 2}),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["levels"], levels);
    assert_eq!(created.body["lateRegLevel"], 2);

    let list = app.get(&format!("/organizers/{}/blind-templates", club.id), Some(&td.access_token)).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["name"], "Turbo");
    assert_eq!(items[1]["id"], PLATFORM_TEMPLATE_ID);
    assert!(items[1]["organizerId"].is_null());

    let by_td = app
        .post(
            &format!("/organizers/{}/blind-templates", club.id),
            Some(&td.access_token),
            json!({"name": "T", "levels": levels, "startingStack": 1}),
        )
        .await;
    by_td.assert_error(403, "FORBIDDEN");
}

async fn bad_levels_of_any_kind_are_invalid_levels(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990100041").await;
    let path = format!("/organizers/{}/blind-templates", club.id);
    let token = Some(club.owner.access_token.as_str());
    let cases = [
        (json!("levels"), "levels"),
        (json!([]), "levels"),
        (json!([{"kind": "break", "durationMin": 5}]), "levels"),
        (json!([{"kind": "level", "durationMin": 0, "smallBlind": 1, "bigBlind": 2}]), "levels[0].durationMin"),
        (json!([{"kind": "level", "durationMin": 10, "smallBlind": 3, "bigBlind": 2}]), "levels[0].smallBlind"),
        (json!([{"kind": "level", "durationMin": 10, "smallBlind": 0, "bigBlind": 2}]), "levels[0].smallBlind"),
        (
            json!([
                {"kind": "level", "durationMin": 10, "smallBlind": 2, "bigBlind": 4},
                {"kind": "level", "durationMin": 10, "smallBlind": 1, "bigBlind": 2},
            ]),
            "levels[1]",
        ),
        (
            json!([{"kind": "level", "durationMin": 10, "smallBlind": 1, "bigBlind": 2}, {"kind": "break", "durationMin": 10, "smallBlind": 1}]),
            "levels[1].smallBlind",
        ),
        (json!([{"kind": "ante", "durationMin": 10}]), "levels[0].kind"),
    ];
    for (levels, field) in cases {
        let reply = app.post(&path, token, json!({"name": "Bad", "levels": levels, "startingStack": 1000})).await;
        reply.assert_error(400, "INVALID_LEVELS");
        assert_eq!(reply.body["error"]["details"][0]["field"], field, "{levels}");
    }
    let missing = app.post(&path, token, json!({"name": "Bad", "startingStack": 1000})).await;
    missing.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.count("SELECT COUNT(*) FROM blind_templates WHERE organizer_id IS NOT NULL").await, 0);
}

async fn a_club_cannot_touch_another_clubs_venues_or_templates(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let mine = app.create_club("Mine", "+79990100051").await;
    let theirs = app.create_club("Theirs", "+79990100052").await;
    let their_venue = app.create_location(&theirs).await;
    let token = Some(mine.owner.access_token.as_str());
    app.post(&format!("/organizers/{}/locations", theirs.id), token, venue()).await.assert_error(403, "FORBIDDEN");
    app.get(&format!("/organizers/{}/locations", theirs.id), token).await.assert_error(403, "FORBIDDEN");
    app.patch(&format!("/locations/{their_venue}"), token, json!({"name": "Mine now"}))
        .await
        .assert_error(403, "FORBIDDEN");
    app.get(&format!("/organizers/{}/blind-templates", theirs.id), token).await.assert_error(403, "FORBIDDEN");
    let admin = app.platform_admin().await;
    // Platform roles give no club rights where the contract lists no permission.
    app.get(&format!("/organizers/{}/locations", theirs.id), Some(&admin.access_token))
        .await
        .assert_error(403, "FORBIDDEN");
}
