//! Clubs as the platform makes them (`POST/GET /admin/organizers`), as members find them
//! (`GET /organizers/mine`) and as owners edit them (`GET/PATCH /organizers/{id}`).

use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    creating_a_club_makes_the_phone_its_owner,
    creating_clubs_needs_organizers_manage,
    a_club_needs_a_name_and_a_valid_owner_phone,
    my_clubs_list_every_membership_with_its_club,
    an_owner_reads_and_edits_the_club_settings,
    club_settings_are_for_owners_and_organizers_manage_only,
    club_settings_are_validated,
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
    let reply =
        app.post("/admin/organizers", Some(&admin.access_token), json!({"name": "  ", "ownerPhone": "12345"})).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<_> =
        reply.body["error"]["details"].as_array().expect("details").iter().map(|d| d["field"].clone()).collect();
    assert_eq!(fields, [json!("name"), json!("ownerPhone")]);
}

async fn my_clubs_list_every_membership_with_its_club(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let river = app.create_club("River Club", "+79990000111").await;
    let hill = app.create_club("Hill Club", "+79990000112").await;
    let (td, td_member_id) = app.add_member(&hill, "+79990000111", "td").await;
    assert_eq!(td.user_id, river.owner.user_id, "the same person in two clubs");

    let mine = app.get("/organizers/mine", Some(&river.owner.access_token)).await;
    let items = mine.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["role"], "owner");
    assert_eq!(items[0]["organizer"]["id"], json!(river.id));
    assert_eq!(items[0]["organizer"]["name"], "River Club");
    assert_eq!(items[0]["organizer"]["cancelDeadlineHours"], 3);
    assert_eq!(items[1]["role"], "td");
    assert_eq!(items[1]["id"], json!(td_member_id));
    assert_eq!(items[1]["organizer"]["name"], "Hill Club");

    let nobody = app.sign_in("+79990000113").await;
    let mine = app.get("/organizers/mine", Some(&nobody.access_token)).await;
    assert_eq!(mine.assert_ok(), &json!({"items": []}));
    app.get("/organizers/mine", None).await.assert_error(401, "UNAUTHORIZED");
}

async fn an_owner_reads_and_edits_the_club_settings(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000121").await;
    let path = format!("/organizers/{}", club.id);
    let token = Some(club.owner.access_token.as_str());

    let read = app.get(&path, token).await;
    assert_eq!(read.assert_ok()["name"], "River Club");
    assert_eq!(read.body["cancelDeadlineHours"], 3);

    let renamed = app.patch(&path, token, json!({"name": "  Delta Club  "})).await;
    assert_eq!(renamed.assert_ok()["name"], "Delta Club");
    assert_eq!(renamed.body["cancelDeadlineHours"], 3, "an absent field stays");

    let changed = app.patch(&path, token, json!({"cancelDeadlineHours": 24})).await;
    assert_eq!(changed.assert_ok()["cancelDeadlineHours"], 24);
    assert_eq!(changed.body["name"], "Delta Club");
    for hours in [0, 168] {
        app.patch(&path, token, json!({"cancelDeadlineHours": hours})).await.assert_ok();
    }
    assert_eq!(app.get(&path, token).await.assert_ok()["cancelDeadlineHours"], 168);
    let audited = app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'organizer.update'").await;
    assert_eq!(audited, 4);
}

async fn club_settings_are_for_owners_and_organizers_manage_only(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000131").await;
    let other = app.create_club("Hill Club", "+79990000132").await;
    let (td, _) = app.add_member(&club, "+79990000133", "td").await;
    let dealer = app.make_dealer(&club, "+79990000134").await;
    let marketing = app.sign_in_as_admin("+79990000135", "marketing").await;
    let path = format!("/organizers/{}", club.id);
    let change = json!({"name": "Taken Over"});

    app.get(&path, None).await.assert_error(401, "UNAUTHORIZED");
    app.patch(&path, None, change.clone()).await.assert_error(401, "UNAUTHORIZED");
    for outsider in [&td, &dealer, &other.owner, &marketing] {
        let token = Some(outsider.access_token.as_str());
        app.get(&path, token).await.assert_error(403, "FORBIDDEN");
        app.patch(&path, token, change.clone()).await.assert_error(403, "FORBIDDEN");
    }

    let admin = app.platform_admin().await;
    let token = Some(admin.access_token.as_str());
    assert_eq!(app.get(&path, token).await.assert_ok()["name"], "River Club");
    let edited = app.patch(&path, token, json!({"cancelDeadlineHours": 6})).await;
    assert_eq!(edited.assert_ok()["cancelDeadlineHours"], 6);

    let unknown = format!("/organizers/{}", uuid::Uuid::new_v4());
    app.get(&unknown, token).await.assert_error(404, "NOT_FOUND");
    app.get("/organizers/not-a-uuid", token).await.assert_error(400, "VALIDATION_ERROR");
}

async fn club_settings_are_validated(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("River Club", "+79990000141").await;
    let path = format!("/organizers/{}", club.id);
    let token = Some(club.owner.access_token.as_str());
    for hours in [-1, 169] {
        let reply = app.patch(&path, token, json!({"name": " ", "cancelDeadlineHours": hours})).await;
        reply.assert_error(400, "VALIDATION_ERROR");
        let fields: Vec<_> =
            reply.body["error"]["details"].as_array().expect("details").iter().map(|d| d["field"].clone()).collect();
        assert_eq!(fields, [json!("name"), json!("cancelDeadlineHours")]);
    }
    app.patch(&path, token, json!({"cancelDeadlineHours": "soon"})).await.assert_error(400, "VALIDATION_ERROR");
    app.put(&path, token, json!({"cancelDeadlineHours": 5})).await.assert_error(405, "METHOD_NOT_ALLOWED");
    let unchanged = app.get(&path, token).await;
    assert_eq!(unchanged.assert_ok()["name"], "River Club");
    assert_eq!(unchanged.body["cancelDeadlineHours"], 3);
}
