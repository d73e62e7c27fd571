//! `POST /me/push-tokens` and `DELETE /me/push-tokens/{token}`: a row per account and token,
//! at most `DEVICES_PER_ACCOUNT` of them per account.

use floor::domain::players::devices::DEVICES_PER_ACCOUNT;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app};
use crate::notifications::register_device;

on_both_databases!(
    a_token_another_account_registers_gets_a_row_of_its_own_and_each_removes_only_theirs,
    nobody_removes_a_token_they_never_registered_and_removing_it_twice_is_not_found,
    the_twenty_first_device_of_an_account_forgets_its_least_recently_registered,
    a_merge_carries_the_duplicates_devices_over_once_each,
    a_token_needs_text_and_a_known_platform,
);

/// How many rows `user` holds, of `token` or of any token.
async fn rows_of(app: &TestApp, user: Uuid, token: Option<&str>) -> i64 {
    let of_token = token.map(|token| format!(" AND token = '{token}'")).unwrap_or_default();
    app.count(&format!("SELECT COUNT(*) FROM push_tokens WHERE user_id = {}{of_token}", app.uuid_literal(user))).await
}

async fn a_token_another_account_registers_gets_a_row_of_its_own_and_each_removes_only_theirs(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;

    let reply = app
        .post("/me/push-tokens", Some(&anna.access_token), json!({"token": "device-1", "platform": "android"}))
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{reply:?}");
    assert_eq!(reply.body["token"], "device-1");
    assert_eq!(reply.body["platform"], "android");
    let again =
        app.post("/me/push-tokens", Some(&anna.access_token), json!({"token": "device-1", "platform": "ios"})).await;
    assert_eq!(again.status.as_u16(), 201, "registering twice is fine");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 1, "the same account's row, renewed");
    assert_eq!(app.scalar("SELECT platform FROM push_tokens").await.as_deref(), Some("ios"));

    // Boris learns Anna's token and registers it: he gets a row, hers stays.
    let taken =
        app.post("/me/push-tokens", Some(&boris.access_token), json!({"token": "device-1", "platform": "web"})).await;
    assert_eq!(taken.status.as_u16(), 201, "{taken:?}");
    assert_eq!(rows_of(&app, anna.user_id, Some("device-1")).await, 1, "Anna's row is untouched");
    assert_eq!(rows_of(&app, boris.user_id, Some("device-1")).await, 1, "Boris has a row of his own");

    let path = "/me/push-tokens/device-1";
    let annas = app.delete(path, Some(&anna.access_token)).await;
    assert_eq!(annas.status.as_u16(), 204, "Anna still removes her token: {annas:?}");
    assert_eq!(rows_of(&app, boris.user_id, Some("device-1")).await, 1, "only Anna's row went");
    let boriss = app.delete(path, Some(&boris.access_token)).await;
    assert_eq!(boriss.status.as_u16(), 204, "{boriss:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 0);
}

async fn nobody_removes_a_token_they_never_registered_and_removing_it_twice_is_not_found(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    let token = "fcm:APA91b-x_y";
    app.post("/me/push-tokens", Some(&anna.access_token), json!({"token": token, "platform": "web"})).await.assert_ok();

    let path = format!("/me/push-tokens/{token}");
    app.delete(&path, Some(&boris.access_token)).await.assert_error(404, "NOT_FOUND");
    assert_eq!(rows_of(&app, anna.user_id, Some(token)).await, 1, "someone else's token stays");
    let removed = app.delete(&path, Some(&anna.access_token)).await;
    assert_eq!(removed.status.as_u16(), 204, "{removed:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 0);
    app.delete(&path, Some(&anna.access_token)).await.assert_error(404, "NOT_FOUND");
    app.delete(&path, None).await.assert_error(401, "UNAUTHORIZED");
}

async fn the_twenty_first_device_of_an_account_forgets_its_least_recently_registered(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    assert_eq!(DEVICES_PER_ACCOUNT, 20);
    for n in 0..DEVICES_PER_ACCOUNT {
        register_device(&app, &anna.access_token, &format!("anna-{n}"), "android").await;
    }
    // Boris holds one of Anna's tokens too: her cap is hers alone.
    register_device(&app, &boris.access_token, "anna-1", "android").await;
    // Registering `anna-0` again makes `anna-1` her least recently registered.
    register_device(&app, &anna.access_token, "anna-0", "android").await;
    assert_eq!(rows_of(&app, anna.user_id, None).await, 20, "re-registering adds nothing");

    register_device(&app, &anna.access_token, "anna-new", "ios").await;
    assert_eq!(rows_of(&app, anna.user_id, None).await, 20, "still twenty");
    assert_eq!(rows_of(&app, anna.user_id, Some("anna-1")).await, 0, "the least recently registered went");
    assert_eq!(rows_of(&app, anna.user_id, Some("anna-0")).await, 1, "renewed, so kept");
    assert_eq!(rows_of(&app, anna.user_id, Some("anna-new")).await, 1);
    assert_eq!(rows_of(&app, boris.user_id, Some("anna-1")).await, 1, "Boris's row of the token stays");
}

async fn a_merge_carries_the_duplicates_devices_over_once_each(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let moderator = app.sign_in_as_admin("+79997000001", "moderator").await;
    let main = app.sign_in("+79990001001").await;
    let duplicate = app.sign_in("+79990001002").await;
    let zoe = app.sign_in("+79990001003").await;
    register_device(&app, &main.access_token, "main-phone", "ios").await;
    register_device(&app, &main.access_token, "shared-tablet", "android").await;
    register_device(&app, &duplicate.access_token, "shared-tablet", "android").await;
    register_device(&app, &duplicate.access_token, "old-phone", "android").await;
    register_device(&app, &zoe.access_token, "shared-tablet", "android").await;

    let merged = app
        .post(
            &format!("/admin/users/{}/merge", main.user_id),
            Some(&moderator.access_token),
            json!({"duplicateUserId": duplicate.user_id}),
        )
        .await;
    merged.assert_ok();
    assert_eq!(rows_of(&app, main.user_id, None).await, 3, "each device once");
    for token in ["main-phone", "shared-tablet", "old-phone"] {
        assert_eq!(rows_of(&app, main.user_id, Some(token)).await, 1, "{token}");
    }
    assert_eq!(rows_of(&app, duplicate.user_id, None).await, 0, "nothing left with the duplicate");
    assert_eq!(rows_of(&app, zoe.user_id, Some("shared-tablet")).await, 1, "another account's row stays");
}

async fn a_token_needs_text_and_a_known_platform(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let token = Some(anna.access_token.as_str());
    let reply = app.post("/me/push-tokens", token, json!({"token": "device-1", "platform": "symbian"})).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "platform");
    app.post("/me/push-tokens", token, json!({"platform": "ios"})).await.assert_error(400, "VALIDATION_ERROR");
    app.post("/me/push-tokens", token, json!({"token": "  ", "platform": "ios"}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post("/me/push-tokens", None, json!({"token": "d", "platform": "ios"})).await.assert_error(401, "UNAUTHORIZED");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 0);
}
