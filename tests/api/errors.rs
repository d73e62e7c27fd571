//! The error shape at the edges: unknown paths, wrong methods, bad bodies and parameters.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, PLATFORM_ADMIN_PHONE, Reply, on_both_databases, spawn_app};

on_both_databases!(
    a_nul_or_a_byte_that_is_not_utf8_in_any_parameter_or_body_text_is_a_400_naming_the_field,
    a_parameter_of_the_wrong_kind_is_named_in_words_never_a_parser_s,
    a_join_that_cannot_be_read_names_the_field_at_fault,
);

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
    assert_eq!(
        create.body["error"]["details"],
        json!([{"field": "translations.en", "problem": "must be an object"}]),
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

/// The one refusal `reply` carries: `400 VALIDATION_ERROR` on `field`, saying `problem`, with
/// nothing of a parser's wording in its message.
#[track_caller]
fn assert_refused(reply: &Reply, field: &str, problem: &str) {
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"], json!([{"field": field, "problem": problem}]), "{reply:?}");
    assert_eq!(reply.body["error"]["message"], format!("{field}: {problem}"), "{reply:?}");
}

const HOLDS_NUL: &str = "must not contain the NUL character (U+0000)";
const NOT_UTF8: &str = "must be UTF-8 text once percent-decoded";

/// Issue 48: PostgreSQL cannot hold U+0000 in a text, and a NUL reaching a query there was a
/// `500` with an ERROR and a backtrace in the log, for anyone, signed in or not. Every text a
/// request carries is refused before any work: in a query, in a path, in a body.
async fn a_nul_or_a_byte_that_is_not_utf8_in_any_parameter_or_body_text_is_a_400_naming_the_field(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Nul club", "+79990004801").await;
    let owner = Some(club.owner.access_token.as_str());
    let player = app.sign_in("+79990004802").await;
    let me = Some(player.access_token.as_str());
    let admin = app.platform_admin().await;
    let admin = Some(admin.access_token.as_str());
    app.post("/me/push-tokens", me, json!({"token": "device-1", "platform": "android"})).await.assert_ok();

    let parameters: [(Method, &str, Option<&str>, &str, &str); 12] = [
        (Method::GET, "/search?q=ab%00", None, "q", HOLDS_NUL),
        (Method::GET, "/search?q=ab%00", me, "q", HOLDS_NUL),
        (Method::GET, "/tournaments?city=mo%00", None, "city", HOLDS_NUL),
        (Method::GET, "/locations?city=%00moscow", None, "city", HOLDS_NUL),
        (Method::GET, "/leaderboards/season?seasonId=%00", None, "seasonId", HOLDS_NUL),
        (Method::GET, "/admin/users?q=ann%00", admin, "q", HOLDS_NUL),
        (Method::DELETE, "/me/push-tokens/%00", me, "token", HOLDS_NUL),
        (Method::DELETE, "/me/push-tokens/device-1%00", me, "token", HOLDS_NUL),
        (Method::GET, "/players/%00", None, "userId", HOLDS_NUL),
        (Method::GET, "/search?q=ab%FF%FE", None, "q", NOT_UTF8),
        (Method::DELETE, "/me/push-tokens/%C3", me, "token", NOT_UTF8),
        (Method::GET, "/organizers/%FF/members", owner, "id", NOT_UTF8),
    ];
    for (method, path, token, field, problem) in parameters {
        let reply = app.call(method.clone(), path, token, None).await;
        assert_refused(&reply, field, problem);
    }

    let name_before = app.get("/auth/me", me).await.assert_ok()["name"].clone();
    let bodies: [(Method, String, Option<&str>, Value, &str); 4] = [
        (Method::PATCH, "/me".to_owned(), me, json!({"name": "Ann\u{0}a"}), "name"),
        (Method::PATCH, format!("/organizers/{}", club.id), owner, json!({"name": "Nul\u{0} club"}), "name"),
        (Method::POST, "/me/push-tokens".to_owned(), me, json!({"token": "device\u{0}2", "platform": "ios"}), "token"),
        (
            Method::POST,
            "/organizers/{}/locations".replace("{}", &club.id.to_string()),
            owner,
            json!({"name": "Hall", "citySlug": "moscow\u{0}", "address": "Tverskaya 1", "timezone": "Europe/Moscow",
                "lat": 55.75, "lng": 37.61}),
            "citySlug",
        ),
    ];
    for (method, path, token, body, field) in bodies {
        assert_refused(&app.call(method, &path, token, Some(body)).await, field, HOLDS_NUL);
    }

    // Nothing of it was stored or removed, and the same requests without the bytes work.
    let tokens = app.count("SELECT COUNT(*) FROM push_tokens").await;
    assert_eq!(tokens, 1, "the one device stays registered, no other was");
    assert_eq!(app.get("/auth/me", me).await.assert_ok()["name"], name_before, "the name stays");
    assert_eq!(app.get(&format!("/organizers/{}", club.id), owner).await.assert_ok()["name"], "Nul club");
    assert_eq!(app.count("SELECT COUNT(*) FROM locations").await, 0, "no venue was made");
    app.get("/search?q=ab", None).await.assert_ok();
    app.get("/tournaments?city=moscow", None).await.assert_ok();
    assert_eq!(app.delete("/me/push-tokens/device-1", me).await.status, 204);
}

/// A parameter that does not read into its type is named, and its problem said as the
/// contract says it: the kind of value the field takes, never a Rust type or a parser's words.
async fn a_parameter_of_the_wrong_kind_is_named_in_words_never_a_parser_s(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.platform_admin().await;
    let admin = Some(admin.access_token.as_str());
    let statuses = "must be one of: announced, registration, running, finished, cancelled";
    let cases: [(&str, Option<&str>, &str, &str); 7] = [
        ("/search", None, "q", "is required"),
        ("/search?q=ab&q=cd", None, "q", "is given more than once"),
        ("/tournaments?status=paused", None, "status", statuses),
        ("/admin/tournaments?status=paused", admin, "status", statuses),
        ("/tournaments?organizerId=42", None, "organizerId", "must be a UUID"),
        ("/players/42", None, "userId", "must be a UUID"),
        ("/leaderboards/season?seasonId=42", None, "seasonId", "must be a UUID"),
    ];
    for (path, token, field, problem) in cases {
        assert_refused(&app.get(path, token).await, field, problem);
    }
    let late = app.get("/tournaments?from=yesterday", None).await;
    late.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(late.body["error"]["details"][0]["field"], "from", "{late:?}");
    let message = late.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("from: is not a date or time as RFC 3339 writes them"), "{late:?}");
    for internal in ["Failed to deserialize", "Invalid URL", "Cannot parse", "expected", "`"] {
        assert!(!message.contains(internal), "{internal:?} in {late:?}");
    }
}

/// A `join` refused as an HTTP request would be: the message names the field it could not read
/// (a `version` that is no whole number was blamed on `tournamentId`).
async fn a_join_that_cannot_be_read_names_the_field_at_fault(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Join club", "+79990004811").await;
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(1)).await;
    let watcher = app.watcher(&club.owner.access_token).await;
    let whole = "must be a whole number from -9223372036854775808 to 9223372036854775807";
    let cases = [
        (json!({"tournamentId": tournament, "version": "41"}), format!("version: {whole}")),
        (json!({"tournamentId": tournament, "version": 4.5}), format!("version: {whole}")),
        (json!({"tournamentId": tournament, "compact": "yes"}), "compact: must be true or false".to_owned()),
        (json!({"tournamentId": "nope", "version": 3}), "tournamentId: must be a UUID".to_owned()),
        (json!({"version": 3}), "tournamentId: is required".to_owned()),
        (json!([tournament, false]), "payload: must be an object: {tournamentId, compact?, version?}".to_owned()),
    ];
    for (payload, message) in cases {
        let ack = watcher.join_with(payload.clone()).await;
        assert_eq!(ack, json!({"ok": false, "error": {"code": "VALIDATION_ERROR", "message": message}}), "{payload}");
    }
    let joined = watcher.join_with(json!({"tournamentId": tournament, "version": 41})).await;
    assert_eq!(joined["ok"], true, "{joined}");
    watcher.close().await;
}
