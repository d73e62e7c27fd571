//! The nodes' own door (`/internal/live/{id}`): the key before anything else, and no door at
//! all on a single node.

use reqwest::StatusCode;

use crate::helpers::{Backend, TEST_JWT_SECRET, TestApp, spawn_app, spawn_app_with, test_redis_url};

async fn knock(app: &TestApp, key: Option<&str>, body: &str) -> (StatusCode, String) {
    knock_at(app, uuid::Uuid::nil(), key, body).await
}

async fn knock_at(app: &TestApp, tournament: uuid::Uuid, key: Option<&str>, body: &str) -> (StatusCode, String) {
    let path = format!("{}/internal/live/{tournament}", app.url("").trim_end_matches("/api/v1"));
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
    let key = floor::infra::node_key::node_key(TEST_JWT_SECRET);
    let (status, _) = knock(&app, Some(&key), "not json at all").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "with the key, the body is read");
}

/// The key lets a node hand a command over, not act as anyone: the owner checks the acting
/// account as the HTTP guard did.
#[tokio::test]
async fn with_the_key_a_command_runs_only_for_an_account_that_may_run_it() {
    use floor::domain::live::forward::Handed;
    use floor_actors::live::Command;

    let Some(redis) = test_redis_url().await else { return };
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", redis)]).await else { return };
    let club = app.create_club("Door", "+79990007400").await;
    let tournament = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    let outsider = app.sign_in("+79990007401").await;
    let key = floor::infra::node_key::node_key(TEST_JWT_SECRET);
    let pause_by = |by| {
        serde_json::to_string(&Handed::Command { command: Command::Pause, by, occurred_at: None, key: None })
            .expect("json")
    };

    let (status, text) = knock_at(&app, tournament, Some(&key), &pause_by(outsider.user_id)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let answered: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(
        (answered["kind"].as_str(), answered["refusal"].as_str()),
        (Some("refused"), Some("Forbidden")),
        "{text}"
    );
    let (_, text) = knock_at(&app, tournament, Some(&key), &pause_by(uuid::Uuid::new_v4())).await;
    assert!(text.contains("Forbidden"), "an account that does not exist: {text}");

    // The owner passes the check; the rules then answer (the tournament has not started).
    let (_, text) = knock_at(&app, tournament, Some(&key), &pause_by(club.owner.user_id)).await;
    assert!(text.contains("TournamentNotRunning"), "{text}");
}
