//! The nodes' own door (`/internal/live/{id}`): the key before anything else, and no door at
//! all on a single node.

use reqwest::StatusCode;

use crate::helpers::{Backend, TEST_JWT_SECRET, TestApp, spawn_app, spawn_app_with, test_redis_url};

async fn knock(app: &TestApp, key: Option<&str>, body: &str) -> (StatusCode, String) {
    let path = format!("{}/internal/live/{}", app.url("").trim_end_matches("/api/v1"), uuid::Uuid::nil());
    let mut request = app.client.post(path).header("content-type", "application/json").body(body.to_owned());
    if let Some(key) = key {
        request = request.header("x-floor-node-key", key);
    }
    let answer = request.send().await.expect("an answer");
    (answer.status(), answer.text().await.unwrap_or_default())
}

#[tokio::test]
async fn a_single_node_has_no_door_for_other_nodes() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let (status, _) = knock(&app, None, r#"{"kind":"nonsense"}"#).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_key_is_checked_before_the_body_is_read() {
    let Some(redis) = test_redis_url().await else { return };
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", redis)]).await else { return };
    for (key, body) in [(None, r#"{"kind":"nonsense"}"#), (Some("guess"), "not json at all"), (Some(""), "{}")] {
        let (status, text) = knock(&app, key, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{key:?} {body}");
        assert!(text.contains("FORBIDDEN") && !text.contains("expected"), "nothing of the protocol: {text}");
    }
    let key = floor::live::forward::node_key(TEST_JWT_SECRET);
    let (status, _) = knock(&app, Some(&key), "not json at all").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "with the key, the body is read");
}
