//! `POST /admin/push`: who each target reaches, the journal it writes, the pushes devices
//! accept, and the input it refuses.

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fake_fcm::FakeFcm;
use crate::helpers::{Backend, Session, TestApp, on_both_databases, spawn_app, spawn_app_with};

on_both_databases!(
    each_target_reaches_its_active_accounts_and_journals_them,
    pushed_counts_the_accounts_whose_devices_accepted,
    a_broadcast_with_bad_input_changes_nothing,
);

async fn broadcast(app: &TestApp, sender: &Session, body: Value) -> (i64, i64) {
    let reply = app.post("/admin/push", Some(&sender.access_token), body).await;
    let body = reply.assert_ok();
    (body["targeted"].as_i64().expect("targeted"), body["pushed"].as_i64().expect("pushed"))
}

async fn journal_rows(app: &TestApp, user: &Session) -> i64 {
    app.count(&format!(
        "SELECT COUNT(*) FROM notifications WHERE kind = 'admin_custom' AND user_id = {}",
        app.uuid_literal(user.user_id)
    ))
    .await
}

fn text(target: &str) -> Value {
    json!({"target": target, "title": "Новости клуба", "body": "Финал сезона в субботу"})
}

async fn each_target_reaches_its_active_accounts_and_journals_them(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79996990001").await;
    let sender = app.sign_in_as_admin("+79996990002", "marketing").await;
    let players = app.sign_in_players(690, 5).await;
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(2)).await;
    let register_path = format!("/tournaments/{tournament}/register");
    for (n, city) in [(0, "moscow"), (1, "moscow"), (2, "kazan"), (4, "moscow")] {
        app.patch("/me", Some(&players[n].access_token), json!({"citySlug": city})).await.assert_ok();
    }
    for n in [0, 2, 3, 4] {
        app.post(&register_path, Some(&players[n].access_token), json!({})).await.assert_ok();
    }
    app.post(&format!("/tournaments/{tournament}/cancel-registration"), Some(&players[3].access_token), json!({}))
        .await
        .assert_ok();
    // Player 4 is banned: registered, in Moscow, listed, and never reached.
    app.exec(&format!("UPDATE users SET status = 'banned' WHERE id = {}", app.uuid_literal(players[4].user_id))).await;

    // Everyone active: the platform admin, the owner, the sender and players 0 to 3.
    assert_eq!(broadcast(&app, &sender, text("all")).await, (7, 0));
    let mut by_tournament = text("tournament");
    by_tournament["tournamentId"] = json!(tournament);
    assert_eq!(broadcast(&app, &sender, by_tournament).await, (2, 0), "players 0 and 2; 3 cancelled");
    let mut by_city = text("city");
    by_city["citySlug"] = json!("moscow");
    assert_eq!(broadcast(&app, &sender, by_city).await, (2, 0), "players 0 and 1");
    let mut listed = text("users");
    listed["userIds"] = json!([players[1].user_id, players[4].user_id, Uuid::now_v7()]);
    listed["phones"] = json!(["+7 999 690-00-02", "+7 (999) 690-0001", "+79998887766"]);
    assert_eq!(broadcast(&app, &sender, listed).await, (2, 0), "players 1 and 2, once each; unknown ones skipped");

    let rows = [journal_rows(&app, &players[0]).await, journal_rows(&app, &players[1]).await];
    assert_eq!(rows, [3, 3], "all, tournament, city; all, city, users");
    assert_eq!(journal_rows(&app, &players[2]).await, 3, "all, tournament, users");
    assert_eq!(journal_rows(&app, &players[3]).await, 1, "all only");
    assert_eq!(journal_rows(&app, &players[4]).await, 0, "a banned account is never targeted");
    app.exec(&format!("UPDATE users SET status = 'active' WHERE id = {}", app.uuid_literal(players[4].user_id))).await;
    let items = app.get("/me/notifications", Some(&players[3].access_token)).await.assert_ok()["items"].clone();
    assert_eq!(items[0]["kind"], "admin_custom");
    assert_eq!(
        items[0]["payload"],
        json!({"title": "Новости клуба", "body": "Финал сезона в субботу", "target": "all"})
    );

    let audited = app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'push.send'").await;
    assert_eq!(audited, 4, "one audit record per broadcast");
    let last =
        app.scalar("SELECT target_id FROM audit_log WHERE action = 'push.send' ORDER BY created_at DESC LIMIT 1").await;
    assert_eq!(last.as_deref(), Some("users"));
}

async fn pushed_counts_the_accounts_whose_devices_accepted(backend: Backend) {
    let fcm = FakeFcm::start().await;
    let env = fcm.env();
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let Some(app) = spawn_app_with(backend, &vars).await else { return };
    let sender = app.sign_in_as_admin("+79996990003", "moderator").await;
    let players = app.sign_in_players(691, 3).await;
    for (player, device) in [(&players[0], "phone-0"), (&players[0], "tablet-0"), (&players[1], "broken-1")] {
        let reply = app
            .post("/me/push-tokens", Some(&player.access_token), json!({"token": device, "platform": "android"}))
            .await;
        assert_eq!(reply.status.as_u16(), 201, "{reply:?}");
    }
    fcm.answer_broken("broken-1");

    let mut listed = text("users");
    listed["userIds"] = json!([players[0].user_id, players[1].user_id, players[2].user_id]);
    assert_eq!(broadcast(&app, &sender, listed).await, (3, 1), "three journaled, only player 0's devices accepted");
    let messages = fcm.messages();
    assert_eq!(messages.len(), 3, "every device was tried");
    let message = messages.iter().find(|m| m["token"] == "phone-0").expect("player 0's phone");
    assert_eq!(message["notification"], json!({"title": "Новости клуба", "body": "Финал сезона в субботу"}));
    assert_eq!(message["data"]["kind"], "admin_custom");

    // The audit record was written with the journal; the push count completed it after commit.
    let audited = floor_entities::audit_log::Entity::find()
        .filter(floor_entities::audit_log::Column::Action.eq("push.send"))
        .all(app.db())
        .await
        .expect("the audit log reads");
    assert_eq!(audited.len(), 1);
    assert_eq!((audited[0].details["targeted"].clone(), audited[0].details["pushed"].clone()), (json!(3), json!(1)));
    assert_eq!(audited[0].details["target"], "users");
}

async fn a_broadcast_with_bad_input_changes_nothing(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let sender = app.sign_in_as_admin("+79996920001", "marketing").await;
    let token = Some(sender.access_token.as_str());
    let refused = |body: Value| app.post("/admin/push", token, body);

    let reply = refused(text("tournament")).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "tournamentId");
    let mut unknown = text("tournament");
    unknown["tournamentId"] = json!(Uuid::now_v7());
    refused(unknown).await.assert_error(404, "NOT_FOUND");
    let mut city = text("city");
    city["citySlug"] = json!("atlantis");
    let reply = refused(city).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "citySlug");
    refused(text("city")).await.assert_error(400, "VALIDATION_ERROR");
    refused(text("users")).await.assert_error(400, "VALIDATION_ERROR");
    let mut phones = text("users");
    phones["phones"] = json!(["+79996920001", "not a phone"]);
    let reply = refused(phones).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "phones[1]");
    refused(json!({"target": "everyone", "title": "t", "body": "b"})).await.assert_error(400, "VALIDATION_ERROR");
    refused(json!({"target": "all", "title": "  ", "body": "b"})).await.assert_error(400, "VALIDATION_ERROR");

    let support = app.sign_in_as_admin("+79996920002", "support").await;
    app.post("/admin/push", Some(&support.access_token), text("all")).await.assert_error(403, "FORBIDDEN");
    app.post("/admin/push", None, text("all")).await.assert_error(401, "UNAUTHORIZED");

    assert_eq!(app.count("SELECT COUNT(*) FROM notifications").await, 0, "nothing was journaled");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'push.send'").await, 0);
}
