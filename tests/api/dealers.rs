//! Dealers: the public catalogue (`GET /dealers`, `GET /dealers/{userId}`) and the dealer's
//! own showcase profile (`PATCH /dealers/me`); assignments are in `tournament_dealers.rs`.

use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    the_dealer_catalogue_shows_profiles_and_clubs_but_never_a_phone,
    only_dealers_are_in_the_catalogue,
    a_dealer_edits_the_showcase_profile,
    only_a_dealer_has_a_showcase_profile_to_edit,
    showcase_profile_fields_are_validated,
    a_dealer_removed_from_every_club_leaves_the_catalogue,
    assignments_are_for_signed_in_users_and_start_empty,
);

async fn the_dealer_catalogue_shows_profiles_and_clubs_but_never_a_phone(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let river = app.create_club("River Club", "+79990000401").await;
    let hill = app.create_club("Hill Club", "+79990000402").await;
    let dealer = app.make_dealer(&river, "+79990000403").await;
    app.make_dealer(&hill, "+79990000403").await;
    app.patch("/me", Some(&dealer.access_token), json!({"name": "Anna", "nickname": "Ace"})).await.assert_ok();
    let profile =
        json!({"photoUrl": "https://cdn.example.org/anna.png", "bio": "Ten years on the felt", "experienceYears": 10});
    app.patch("/dealers/me", Some(&dealer.access_token), profile).await.assert_ok();
    app.make_dealer(&hill, "+79990000404").await;

    let catalogue = app.get("/dealers", None).await;
    let items = catalogue.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[0],
        json!({
            "userId": dealer.user_id, "name": "Anna", "nickname": "Ace",
            "photoUrl": "https://cdn.example.org/anna.png", "bio": "Ten years on the felt",
            "experienceYears": 10, "gamesDealt": 0,
            "clubs": [
                {"organizerId": river.id, "organizerName": "River Club"},
                {"organizerId": hill.id, "organizerName": "Hill Club"},
            ],
        })
    );
    assert!(items[1]["name"].is_null(), "a dealer without a name comes last");
    assert_eq!(items[1]["gamesDealt"], 0);
    for item in &items {
        assert!(item.get("phone").is_none(), "{item}");
    }
    let text = catalogue.body.to_string();
    assert!(!text.contains("+79990000403") && !text.contains("79990000404"), "{text}");

    let one = app.get(&format!("/dealers/{}", dealer.user_id), None).await;
    assert_eq!(one.assert_ok(), &items[0]);
    assert!(!one.body.to_string().contains("79990000403"));
}

async fn only_dealers_are_in_the_catalogue(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000411").await;
    let (td, _) = app.add_member(&club, "+79990000412", "td").await;
    assert_eq!(app.get("/dealers", None).await.assert_ok(), &json!({"items": []}));
    for user_id in [club.owner.user_id, td.user_id, Uuid::new_v4()] {
        app.get(&format!("/dealers/{user_id}"), None).await.assert_error(404, "NOT_FOUND");
    }
    app.get("/dealers/not-a-uuid", None).await.assert_error(400, "VALIDATION_ERROR");
}

async fn a_dealer_edits_the_showcase_profile(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000421").await;
    let dealer = app.make_dealer(&club, "+79990000422").await;
    let token = Some(dealer.access_token.as_str());

    let edited = app
        .patch(
            "/dealers/me",
            token,
            json!({"photoUrl": "https://cdn.example.org/d.webp", "bio": "  Calm hands  ", "experienceYears": 0}),
        )
        .await;
    let view = edited.assert_ok().clone();
    assert_eq!(view["userId"], json!(dealer.user_id));
    assert_eq!(view["photoUrl"], "https://cdn.example.org/d.webp");
    assert_eq!(view["bio"], "Calm hands");
    assert_eq!(view["experienceYears"], 0);
    assert_eq!(view["clubs"][0]["organizerName"], "River Club");

    let cleared = app.patch("/dealers/me", token, json!({"photoUrl": null, "experienceYears": 4})).await;
    assert!(cleared.assert_ok()["photoUrl"].is_null(), "null clears");
    assert_eq!(cleared.body["bio"], "Calm hands", "absent stays");
    assert_eq!(cleared.body["experienceYears"], 4);
    assert_eq!(app.get(&format!("/dealers/{}", dealer.user_id), None).await.assert_ok(), &cleared.body);
}

async fn only_a_dealer_has_a_showcase_profile_to_edit(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000431").await;
    let (td, _) = app.add_member(&club, "+79990000432", "td").await;
    let player = app.sign_in("+79990000433").await;
    let body = json!({"bio": "I deal too"});
    for caller in [&club.owner, &td, &player] {
        app.patch("/dealers/me", Some(&caller.access_token), body.clone()).await.assert_error(403, "FORBIDDEN");
    }
    app.patch("/dealers/me", None, body).await.assert_error(401, "UNAUTHORIZED");
    assert_eq!(app.count("SELECT COUNT(*) FROM dealer_profiles").await, 0);
}

async fn showcase_profile_fields_are_validated(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000441").await;
    let dealer = app.make_dealer(&club, "+79990000442").await;
    let token = Some(dealer.access_token.as_str());
    let long_bio = "a".repeat(2001);
    for years in [-1, 71] {
        let reply = app
            .patch(
                "/dealers/me",
                token,
                json!({"photoUrl": "javascript:alert(1)", "bio": long_bio, "experienceYears": years}),
            )
            .await;
        reply.assert_error(400, "VALIDATION_ERROR");
        let fields: Vec<_> =
            reply.body["error"]["details"].as_array().expect("details").iter().map(|d| d["field"].clone()).collect();
        assert_eq!(fields, [json!("photoUrl"), json!("bio"), json!("experienceYears")]);
    }
    app.patch("/dealers/me", token, json!({"bio": " "})).await.assert_error(400, "VALIDATION_ERROR");
    app.patch("/dealers/me", token, json!({"experienceYears": "many"})).await.assert_error(400, "VALIDATION_ERROR");
    let view = app.get(&format!("/dealers/{}", dealer.user_id), None).await;
    assert!(
        view.assert_ok()["bio"].is_null() && view.body["experienceYears"].is_null() && view.body["photoUrl"].is_null()
    );
}

async fn a_dealer_removed_from_every_club_leaves_the_catalogue(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000451").await;
    let dealer = app.make_dealer(&club, "+79990000452").await;
    let members = format!("/organizers/{}/members", club.id);
    let items = app.get(&members, Some(&club.owner.access_token)).await.assert_ok()["items"].clone();
    let member_id = items[1]["id"].as_str().expect("the dealer's membership").to_owned();

    let removed = app.delete(&format!("{members}/{member_id}"), Some(&club.owner.access_token)).await;
    assert_eq!(removed.status, 204, "{removed:?}");
    app.get(&format!("/dealers/{}", dealer.user_id), None).await.assert_error(404, "NOT_FOUND");
    app.patch("/dealers/me", Some(&dealer.access_token), json!({"bio": "still here"}))
        .await
        .assert_error(403, "FORBIDDEN");
}

async fn assignments_are_for_signed_in_users_and_start_empty(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000461").await;
    let dealer = app.make_dealer(&club, "+79990000462").await;
    let assignments = app.get("/me/dealer-assignments", Some(&dealer.access_token)).await;
    assert_eq!(assignments.assert_ok(), &json!({"items": []}));
    app.get("/me/dealer-assignments", None).await.assert_error(401, "UNAUTHORIZED");
}
