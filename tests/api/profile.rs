//! The caller's own account: `/auth/me` and `PATCH /me`.

use chrono::Utc;
use reqwest::Method;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, on_both_databases, spawn_app, spawn_app_with};

on_both_databases!(
    filling_name_nickname_city_and_consent_completes_the_profile,
    bad_profile_fields_are_all_reported_and_nothing_changes,
    me_lists_the_clubs_the_user_belongs_to,
    consent_is_kept_with_its_time_and_the_version_of_its_text,
);

async fn filling_name_nickname_city_and_consent_completes_the_profile(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in("+79990001122").await;
    let token = Some(session.access_token.as_str());
    let body = json!({"name": " Anna ", "nickname": "ace", "citySlug": "kazan", "consentAccepted": true,
        "avatarUrl": "https://cdn.example.org/a.png"});
    let reply = app.call(Method::PATCH, "/me", token, Some(body)).await;
    let profile = reply.assert_ok();
    assert_eq!(profile["name"], "Anna");
    assert_eq!(profile["nickname"], "ace");
    assert_eq!(profile["citySlug"], "kazan");
    assert_eq!(profile["userId"], session.user_id.to_string());
    assert!(profile.get("phone").is_none(), "a profile never shows a phone");
    let me = app.get("/auth/me", token).await;
    assert_eq!(me.assert_ok()["profileComplete"], true);
    assert_eq!(me.body["consentAccepted"], true);

    // null clears a clearable field; an absent one stays.
    let cleared = app.call(Method::PATCH, "/me", token, Some(json!({"avatarUrl": null}))).await;
    assert_eq!(cleared.assert_ok()["avatarUrl"], serde_json::Value::Null);
    assert_eq!(cleared.body["nickname"], "ace");
    let withdrawn = app.call(Method::PATCH, "/me", token, Some(json!({"consentAccepted": false}))).await;
    withdrawn.assert_ok();
    assert_eq!(app.get("/auth/me", token).await.body["profileComplete"], false);
}

async fn bad_profile_fields_are_all_reported_and_nothing_changes(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in("+79990001122").await;
    let token = Some(session.access_token.as_str());
    let body = json!({"name": "Anna", "nickname": "a", "citySlug": "atlantis", "avatarUrl": "ftp://x"});
    let reply = app.call(Method::PATCH, "/me", token, Some(body)).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    let mut fields: Vec<String> = reply.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["field"].as_str().unwrap_or_default().to_owned())
        .collect();
    fields.sort();
    assert_eq!(fields, ["avatarUrl", "citySlug", "nickname"]);
    let me = app.get("/auth/me", token).await;
    assert_eq!(me.assert_ok()["name"], serde_json::Value::Null, "a refused update changes nothing");
    app.call(Method::PATCH, "/me", None, Some(json!({"name": "X"}))).await.assert_error(401, "UNAUTHORIZED");
}

async fn me_lists_the_clubs_the_user_belongs_to(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let session = app.sign_in("+79990001122").await;
    let club = Uuid::new_v4();
    let now = Utc::now().to_rfc3339();
    app.exec(&format!(
        "INSERT INTO organizers (id, name, status, cancel_deadline_hours, created_at, updated_at) \
         VALUES ({}, 'Royal Flush', 'active', 3, '{now}', '{now}')",
        app.uuid_literal(club)
    ))
    .await;
    app.exec(&format!(
        "INSERT INTO organizer_members (id, organizer_id, user_id, role, created_at) VALUES ({}, {}, {}, 'td', '{now}')",
        app.uuid_literal(Uuid::new_v4()),
        app.uuid_literal(club),
        app.uuid_literal(session.user_id)
    ))
    .await;
    let me = app.get("/auth/me", Some(&session.access_token)).await;
    assert_eq!(
        me.assert_ok()["memberships"],
        json!([{"organizerId": club.to_string(), "organizerName": "Royal Flush", "role": "td"}])
    );
}

async fn consent_is_kept_with_its_time_and_the_version_of_its_text(backend: Backend) {
    let Some(app) = spawn_app_with(backend, &[("CONSENT_VERSION", "2026-11")]).await else { return };
    let session = app.sign_in("+79990001123").await;
    let token = Some(session.access_token.as_str());
    let fresh = app.get("/auth/me", token).await;
    assert_eq!(fresh.assert_ok()["profile"]["consentAcceptedAt"], serde_json::Value::Null);
    assert_eq!(fresh.body["profile"]["consentVersion"], serde_json::Value::Null);

    let before = Utc::now();
    let given = app.call(Method::PATCH, "/me", token, Some(json!({"consentAccepted": true}))).await;
    let profile = given.assert_ok();
    assert_eq!(profile["consentVersion"], "2026-11");
    let at: chrono::DateTime<Utc> = profile["consentAcceptedAt"].as_str().expect("a time").parse().expect("RFC 3339");
    assert!(at >= before - chrono::Duration::seconds(1) && at <= Utc::now());
    // Giving it again to the same text keeps the first time.
    let again = app.call(Method::PATCH, "/me", token, Some(json!({"consentAccepted": true}))).await;
    assert_eq!(again.assert_ok()["consentAcceptedAt"], profile["consentAcceptedAt"]);
    let me = app.get("/auth/me", token).await;
    assert_eq!(me.assert_ok()["consentAccepted"], true);
    assert_eq!(me.body["profile"]["consentVersion"], "2026-11");

    let withdrawn = app.call(Method::PATCH, "/me", token, Some(json!({"consentAccepted": false}))).await;
    assert_eq!(withdrawn.assert_ok()["consentAcceptedAt"], serde_json::Value::Null);
    assert_eq!(withdrawn.body["consentVersion"], serde_json::Value::Null);
    assert_eq!(app.get("/auth/me", token).await.body["consentAccepted"], false);

    let changes = floor_entities::consent_changes::Entity::find()
        .filter(floor_entities::consent_changes::Column::UserId.eq(session.user_id))
        .order_by_asc(floor_entities::consent_changes::Column::ChangedAt)
        .all(app.db())
        .await
        .expect("a query");
    let kept: Vec<(bool, Option<&str>)> = changes.iter().map(|c| (c.accepted, c.version.as_deref())).collect();
    assert_eq!(kept, [(true, Some("2026-11")), (false, None)], "one record a change, none for a repeat");
}
