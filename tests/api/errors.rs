//! The error shape at the edges: unknown paths, wrong methods, bad bodies and parameters.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, PLATFORM_ADMIN_PHONE, spawn_app};

#[tokio::test]
async fn unknown_paths_give_not_found_with_or_without_a_token() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let session = app.sign_in("+79990001122").await;
    for token in [None, Some(session.access_token.as_str())] {
        app.get("/no/such/path", token).await.assert_error(404, "NOT_FOUND");
        app.call(Method::DELETE, "/nothing-here", token, None).await.assert_error(404, "NOT_FOUND");
    }
    let outside = app.client.get(format!("{}/outside/the/api", app.base)).send().await.expect("answer");
    assert_eq!(outside.status(), 404);
    let body: serde_json::Value = outside.json().await.expect("json");
    assert_eq!(body["error"]["code"], "NOT_FOUND");
}

#[tokio::test]
async fn a_wrong_method_gives_405_in_the_error_shape() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    app.call(Method::DELETE, "/health", None, None).await.assert_error(405, "METHOD_NOT_ALLOWED");
    app.get("/auth/otp/request", None).await.assert_error(405, "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn bad_json_gives_a_validation_error_with_details() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let malformed = app
        .client
        .post(app.url("/auth/otp/request"))
        .header("content-type", "application/json")
        .body("{\"phone\": ")
        .send()
        .await
        .expect("answer");
    assert_eq!(malformed.status(), 400);
    let body: serde_json::Value = malformed.json().await.expect("json");
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(body["error"]["details"][0]["field"], "body");

    let missing = app.post("/auth/otp/verify", None, json!({"phone": "+79990001122"})).await;
    missing.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(missing.body["error"]["details"], json!([{"field": "code", "problem": "is required"}]));

    let mistyped = app.post("/auth/otp/request", None, json!({"phone": 79990001122u64})).await;
    mistyped.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(mistyped.body["error"]["details"][0]["field"], "phone");

    let extra = app.post("/auth/otp/request", None, json!({"phone": "+79990001122", "unknown": 1})).await;
    extra.assert_ok();
}

#[tokio::test]
async fn an_array_where_the_contract_says_object_is_refused_and_changes_nothing() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let club = app.create_club("Objects only", "+79990001133").await;
    let owner = Some(club.owner.access_token.as_str());
    let path = format!("/organizers/{}", club.id);

    // serde alone would read it as a patch of two absent fields, and answer 200.
    let patch = app.patch(&path, owner, json!([null, null])).await;
    patch.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(patch.body["error"]["details"][0]["field"], "body", "{patch:?}");
    assert_eq!(app.get(&path, owner).await.assert_ok()["name"], "Objects only");

    let location = app.create_location(&club).await;
    let mut tournament = app.tournament_body(location, 20, chrono::Duration::days(2));
    tournament["translations"]["en"] = json!(["Weekend tournament", null]);
    let create = app.post(&format!("{path}/tournaments"), owner, tournament).await;
    create.assert_error(400, "VALIDATION_ERROR");
    let problem = &create.body["error"]["details"][0];
    assert_eq!(problem["field"], "translations", "{create:?}");
    assert!(
        problem["problem"].as_str().is_some_and(|text| text.starts_with("en: invalid type: sequence")),
        "{create:?}"
    );
    let listed = app.get(&format!("{path}/tournaments"), owner).await;
    assert_eq!(listed.assert_ok()["items"], json!([]), "nothing was created");
}

#[tokio::test]
async fn a_body_that_is_not_json_gives_415() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let reply = app
        .client
        .post(app.url("/auth/otp/request"))
        .header("content-type", "text/plain")
        .body("phone=+79990001122")
        .send()
        .await
        .expect("answer");
    assert_eq!(reply.status(), 415);
    let body: serde_json::Value = reply.json().await.expect("json");
    assert_eq!(body["error"]["code"], "UNSUPPORTED_MEDIA_TYPE");
}

#[tokio::test]
async fn a_bad_path_parameter_gives_a_validation_error() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let admin = app.sign_in(PLATFORM_ADMIN_PHONE).await;
    let reply = app
        .call(Method::PUT, "/admin/admins/not-a-uuid/role", Some(&admin.access_token), Some(json!({"role": null})))
        .await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "userId");
}

#[tokio::test]
async fn every_answer_carries_a_request_id() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let reply = app.client.get(app.url("/health")).send().await.expect("answer");
    let id = reply.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(id.len(), 36, "a UUID request id, got {id:?}");
    // A client's own id is kept when it is a UUID (any other is replaced: security_headers.rs).
    let own = uuid::Uuid::now_v7().to_string();
    let given = app.client.get(app.url("/health")).header("x-request-id", &own).send().await.expect("answer");
    assert_eq!(given.headers().get("x-request-id").and_then(|v| v.to_str().ok()), Some(own.as_str()));
}

#[tokio::test]
async fn an_oversized_body_gives_413_in_the_error_shape() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let huge = json!({"phone": "+79990001122", "padding": "x".repeat(3 * 1024 * 1024)});
    let reply = app.post("/auth/otp/request", None, huge).await;
    reply.assert_error(413, "PAYLOAD_TOO_LARGE");
}
