//! Clubs as the platform makes them: `POST/GET /admin/organizers`.

use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    creating_a_club_makes_the_phone_its_owner,
    creating_clubs_needs_organizers_manage,
    a_club_needs_a_name_and_a_valid_owner_phone,
);

async fn creating_a_club_makes_the_phone_its_owner(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000101").await;

    let me = app.get("/auth/me", Some(&club.owner.access_token)).await;
    let memberships = me.assert_ok()["memberships"].clone();
    assert_eq!(memberships, json!([{"organizerId": club.id, "organizerName": "River Club", "role": "owner"}]));

    let admin = app.platform_admin().await;
    let list = app.get("/admin/organizers", Some(&admin.access_token)).await;
    let items = list.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["cancelDeadlineHours"], 3);
    assert_eq!(items[0]["status"], "active");
    let audited = app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'organizer.create'").await;
    assert_eq!(audited, 1);
}

async fn creating_clubs_needs_organizers_manage(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let body = json!({"name": "X", "ownerPhone": "+79990000102"});
    app.post("/admin/organizers", None, body.clone()).await.assert_error(401, "UNAUTHORIZED");
    for role in ["moderator", "support", "marketing"] {
        let admin = app.sign_in_as_admin("+79990000103", role).await;
        app.post("/admin/organizers", Some(&admin.access_token), body.clone()).await.assert_error(403, "FORBIDDEN");
        app.get("/admin/organizers", Some(&admin.access_token)).await.assert_error(403, "FORBIDDEN");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM organizers").await, 0);
}

async fn a_club_needs_a_name_and_a_valid_owner_phone(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.platform_admin().await;
    let reply = app
        .post("/admin/organizers", Some(&admin.access_token), json!({"name": "  ", "ownerPhone": "12345"}))
        .await;
    reply.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<_> = reply.body["error"]["details"].as_array().expect("details").iter().map(|d| d["field"].clone()).collect();
    assert_eq!(fields, [json!("name"), json!("ownerPhone")]);
}
