//! `POST /me/push-tokens` and `DELETE /me/push-tokens/{token}`.

use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(
    registering_a_device_again_under_another_account_moves_it_to_the_new_owner,
    only_the_owner_removes_a_token_and_removing_it_twice_is_not_found,
    a_token_needs_text_and_a_known_platform,
);

async fn registering_a_device_again_under_another_account_moves_it_to_the_new_owner(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;

    let reply = app
        .post("/me/push-tokens", Some(&anna.access_token), json!({"token": "device-1", "platform": "android"}))
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{reply:?}");
    assert_eq!(reply.body["token"], "device-1");
    assert_eq!(reply.body["platform"], "android");
    let again = app
        .post("/me/push-tokens", Some(&anna.access_token), json!({"token": "device-1", "platform": "android"}))
        .await;
    assert_eq!(again.status.as_u16(), 201, "registering twice is fine");

    let moved =
        app.post("/me/push-tokens", Some(&boris.access_token), json!({"token": "device-1", "platform": "ios"})).await;
    assert_eq!(moved.status.as_u16(), 201, "{moved:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 1, "one row per device");
    let owner = app.scalar("SELECT platform FROM push_tokens WHERE token = 'device-1'").await;
    assert_eq!(owner.as_deref(), Some("ios"));
    let boris_rows = app
        .count(&format!("SELECT COUNT(*) FROM push_tokens WHERE user_id = {}", app.uuid_literal(boris.user_id)))
        .await;
    assert_eq!(boris_rows, 1, "the device now belongs to Boris");
}

async fn only_the_owner_removes_a_token_and_removing_it_twice_is_not_found(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let anna = app.sign_in("+79990001001").await;
    let boris = app.sign_in("+79990001002").await;
    let token = "fcm:APA91b-x_y";
    app.post("/me/push-tokens", Some(&anna.access_token), json!({"token": token, "platform": "web"})).await.assert_ok();

    let path = format!("/me/push-tokens/{token}");
    app.delete(&path, Some(&boris.access_token)).await.assert_error(404, "NOT_FOUND");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 1, "someone else's token stays");
    let removed = app.delete(&path, Some(&anna.access_token)).await;
    assert_eq!(removed.status.as_u16(), 204, "{removed:?}");
    assert_eq!(app.count("SELECT COUNT(*) FROM push_tokens").await, 0);
    app.delete(&path, Some(&anna.access_token)).await.assert_error(404, "NOT_FOUND");
    app.delete(&path, None).await.assert_error(401, "UNAUTHORIZED");
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
