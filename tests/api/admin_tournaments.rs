//! The admin app's tournaments: every club's list for `content.manage`, and presentation
//! edits (texts, banner, prizes) in any status that leave everything else alone.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{Backend, Reply, on_both_databases, spawn_app};

on_both_databases!(
    content_admins_list_every_clubs_tournaments_latest_start_first_with_a_status_filter,
    a_presentation_edit_changes_only_texts_banner_and_prizes_in_any_status,
    a_bad_presentation_is_refused_with_details_and_changes_nothing,
);

fn ids(reply: &Reply) -> Vec<Value> {
    reply.assert_ok()["items"].as_array().expect("items").iter().map(|t| t["id"].clone()).collect()
}

async fn content_admins_list_every_clubs_tournaments_latest_start_first_with_a_status_filter(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let aces = app.create_club("Aces", "+79990710001").await;
    let kings = app.create_club("Kings", "+79990710002").await;
    let soon = app.create_tournament(&aces, 10, Duration::days(1)).await;
    let latest = app.create_tournament(&kings, 10, Duration::days(3)).await;
    let middle = app.create_tournament(&aces, 10, Duration::days(2)).await;
    app.post(&format!("/tournaments/{soon}/cancel"), Some(&aces.owner.access_token), json!({})).await.assert_ok();
    let marketing = app.sign_in_as_admin("+79990710003", "marketing").await;
    let token = Some(marketing.access_token.as_str());

    let all = app.get("/admin/tournaments", token).await;
    assert_eq!(ids(&all), [latest, middle, soon].map(|id| json!(id)));
    assert_eq!(all.body["items"][0]["organizerName"], "Kings", "the Tournament card of the public API");
    let cancelled = app.get("/admin/tournaments?status=cancelled", token).await;
    assert_eq!(ids(&cancelled), [json!(soon)]);
    let open = app.get("/admin/tournaments?status=registration", token).await;
    assert_eq!(ids(&open), [json!(latest), json!(middle)]);
    app.get("/admin/tournaments?status=paused", token).await.assert_error(400, "VALIDATION_ERROR");

    app.get("/admin/tournaments", Some(&aces.owner.access_token)).await.assert_error(403, "FORBIDDEN");
    let support = app.sign_in_as_admin("+79990710004", "support").await;
    app.get("/admin/tournaments", Some(&support.access_token)).await.assert_error(403, "FORBIDDEN");
    app.patch(&format!("/admin/tournaments/{latest}"), Some(&support.access_token), json!({"prizes": "Cup"}))
        .await
        .assert_error(403, "FORBIDDEN");
    app.get("/admin/tournaments", None).await.assert_error(401, "UNAUTHORIZED");
}

async fn a_presentation_edit_changes_only_texts_banner_and_prizes_in_any_status(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990710011").await;
    let id = app.create_tournament(&club, 20, Duration::days(2)).await;
    app.post(&format!("/tournaments/{id}/cancel"), Some(&club.owner.access_token), json!({})).await.assert_ok();
    app.patch(&format!("/tournaments/{id}"), Some(&club.owner.access_token), json!({"prizes": "Cup"}))
        .await
        .assert_error(409, "INVALID_STATUS");
    let before = app.get(&format!("/tournaments/{id}"), None).await.assert_ok().clone();

    let marketing = app.sign_in_as_admin("+79990710012", "marketing").await;
    let token = Some(marketing.access_token.as_str());
    let path = format!("/admin/tournaments/{id}");
    let body = json!({
        "translations": {"en": {"title": " Spring final ", "subtitle": "Day 2"}},
        "bannerUrl": "https://cdn.example.org/banner.png",
        "prizes": "A cup and a trophy",
        "capacity": 99,
        "startsAt": (Utc::now() + Duration::days(30)).to_rfc3339(),
        "status": "registration",
        "chatLink": "https://t.me/aces",
    });
    let edited = app.patch(&path, token, body).await;
    let edited = edited.assert_ok();
    assert_eq!(edited["translations"]["en"], json!({"title": "Spring final", "subtitle": "Day 2"}));
    assert_eq!(edited["translations"]["ru"], before["translations"]["ru"], "only the locale given is replaced");
    assert_eq!(edited["bannerUrl"], "https://cdn.example.org/banner.png");
    assert_eq!(edited["prizes"], "A cup and a trophy");

    let card = app.get(&format!("/tournaments/{id}"), None).await;
    let card = card.assert_ok();
    assert_eq!(card["translations"]["en"]["title"], "Spring final", "the public card shows it");
    assert_eq!(card["capacity"], 20, "capacity is not presentation");
    let starts = |v: &Value| v["startsAt"].as_str().and_then(|t| t.parse::<DateTime<Utc>>().ok()).expect("a time");
    assert_eq!(starts(card), starts(&before), "the start is not presentation");
    assert_eq!(card["status"], "cancelled");
    assert_eq!(card["chatLink"], Value::Null);

    let cleared = app.patch(&path, token, json!({"bannerUrl": null})).await;
    assert_eq!(cleared.assert_ok()["bannerUrl"], Value::Null);
    assert_eq!(cleared.body["prizes"], "A cup and a trophy", "an absent field stays");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'admin.tournament.update'").await, 2);
}

async fn a_bad_presentation_is_refused_with_details_and_changes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990710021").await;
    let id = app.create_tournament(&club, 20, Duration::days(2)).await;
    let root = app.platform_admin().await;
    let token = Some(root.access_token.as_str());
    let before = app.get(&format!("/tournaments/{id}"), None).await.assert_ok().clone();

    let body = json!({"bannerUrl": "banner.png", "prizes": "x".repeat(2001), "translations": {"en": {"title": ""}}});
    let reply = app.patch(&format!("/admin/tournaments/{id}"), token, body).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<&str> = reply.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["field"].as_str())
        .collect();
    assert_eq!(fields, ["prizes", "bannerUrl", "translations.en.title"]);
    let after = app.get(&format!("/tournaments/{id}"), None).await;
    assert_eq!(after.assert_ok()["translations"], before["translations"]);
    assert_eq!(after.body["prizes"], before["prizes"]);

    app.patch(&format!("/admin/tournaments/{}", Uuid::new_v4()), token, json!({"prizes": "Cup"}))
        .await
        .assert_error(404, "NOT_FOUND");
    app.patch(&format!("/admin/tournaments/{id}"), token, json!({"prizes": 5}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'admin.tournament.update'").await, 0);
}
